//! Build stage (prebuilt trees): check an FDB build tree and read its source version.
//!
//! A tree from `cmake -G Ninja -DBUILD_MAKO=ON` + `ninja fdbserver fdbcli mako fdb_c`
//! has `bin/fdbserver`, `bin/fdbcli`, `bin/mako` and `lib/libfdb_c.so`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use nix::unistd::{access, AccessFlags};
use serde::Serialize;
use xshell::{cmd, Shell};

use crate::config::UsageError;

/// Paths of the programs of one FDB build tree, all checked to exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FdbTree {
    /// The build directory itself (absolute).
    pub root: PathBuf,
    pub fdbserver: PathBuf,
    pub fdbcli: PathBuf,
    pub mako: PathBuf,
    /// Directory holding `libfdb_c.so`: mako's `LD_LIBRARY_PATH` (mako has no rpath).
    pub lib_dir: PathBuf,
}

impl FdbTree {
    /// Checks that `root` holds every file the gate runs. A missing file is an error that
    /// names it and how to build it.
    pub fn open(root: &Path) -> Result<FdbTree> {
        if !root.is_dir() {
            let what = if root.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return Err(UsageError(format!(
                "FDB build tree {} {what}: give the cmake build directory (the one holding \
                 bin/fdbserver)",
                root.display()
            ))
            .into());
        }
        let root = std::fs::canonicalize(root)
            .with_context(|| format!("cannot resolve FDB build tree {}", root.display()))?;
        let need = |rel: &str, target: &str, extra: &str| -> Result<PathBuf> {
            let path = root.join(rel);
            if !path.is_file() {
                bail!(
                    "{} is missing from FDB build tree {}: build it with \
                     `ninja -C {} {target}`{extra}",
                    rel,
                    root.display(),
                    root.display()
                )
            }
            if rel.starts_with("bin/") && access(&path, AccessFlags::X_OK).is_err() {
                bail!(
                    "{} is not executable (chmod +x, or rebuild it)",
                    path.display()
                );
            }
            Ok(path)
        };
        Ok(FdbTree {
            fdbserver: need("bin/fdbserver", "fdbserver", "")?,
            fdbcli: need("bin/fdbcli", "fdbcli", "")?,
            mako: need(
                "bin/mako",
                "mako",
                " after configuring with -DBUILD_MAKO=ON (mako is not built by default)",
            )?,
            lib_dir: need("lib/libfdb_c.so", "fdb_c", "")?
                .parent()
                .expect("lib/libfdb_c.so has a parent")
                .to_path_buf(),
            root,
        })
    }

    /// Runs `fdbserver --version` and parses it.
    pub fn version(&self, sh: &Shell) -> Result<FdbVersion> {
        let fdbserver = &self.fdbserver;
        let text = cmd!(sh, "{fdbserver} --version")
            .read()
            .with_context(|| format!("cannot run `{} --version`", fdbserver.display()))?;
        FdbVersion::parse(&text)
            .with_context(|| format!("unexpected `{} --version` output", fdbserver.display()))
    }
}

/// What a build tree's `CMakeCache.txt` says about how it was configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BuildConfig {
    /// `CMAKE_BUILD_TYPE`.
    pub build_type: String,
    /// `BUILD_MAKO`.
    pub build_mako: bool,
    /// `CMAKE_CXX_COMPILER`.
    pub cxx_compiler: String,
    /// The compiler as cmake identified it, `<CMAKE_CXX_COMPILER_ID> <..._VERSION>`, e.g.
    /// `Clang 19.1.7`, from [`compiler_file`]; empty when the tree lacks that file.
    #[serde(default)]
    pub cxx_compiler_version: String,
    /// `CMAKE_CXX_FLAGS`.
    pub cxx_flags: String,
    /// `CMAKE_C_COMPILER`.
    #[serde(default)]
    pub c_compiler: String,
    /// The C compiler as cmake identified it, as [`BuildConfig::cxx_compiler_version`].
    #[serde(default)]
    pub c_compiler_version: String,
    /// Instrumentation that is on: sanitizers, coverage, profile generation, valgrind.
    pub instrumentation: Vec<String>,
    /// The other cache entries that change the binaries (`CODEGEN_ENTRIES`) that the cache
    /// has, by name; values as written there.
    #[serde(default)]
    pub codegen: BTreeMap<String, String>,
}

/// Cache entries besides the build type, compilers and `CMAKE_CXX_FLAGS` that change what
/// the compiler and linker make: cmake's other compile and link flags and toolchain file,
/// and FDB's options for the allocator, linker, C++ library, profile-guided optimization,
/// LTO and vector instructions (`cmake/ConfigureCompiler.cmake`).
const CODEGEN_ENTRIES: [&str; 18] = [
    "CMAKE_CXX_FLAGS_RELEASE",
    "CMAKE_C_FLAGS",
    "CMAKE_C_FLAGS_RELEASE",
    "CMAKE_EXE_LINKER_FLAGS",
    "CMAKE_SHARED_LINKER_FLAGS",
    "CMAKE_TOOLCHAIN_FILE",
    "USE_JEMALLOC",
    "USE_CUSTOM_JEMALLOC",
    "USE_LD",
    "USE_LIBCXX",
    "STATIC_LINK_LIBCXX",
    "PROFILE_INSTR_USE",
    "USE_GPERFTOOLS",
    "USE_DTRACE",
    "USE_LTO",
    "CLANG_LTO_STRATEGY",
    "USE_AVX",
    "USE_AVX512F",
];

/// Cache options that instrument the binaries (FDB's `cmake/ConfigureCompiler.cmake`,
/// `CMakeLists.txt`): any of them makes TPS meaningless for a gate.
const INSTRUMENTING_OPTIONS: [&str; 9] = [
    "ALLOC_INSTRUMENTATION",
    "PROFILE_INSTR_GENERATE",
    "USE_ASAN",
    "USE_MSAN",
    "USE_TSAN",
    "USE_UBSAN",
    "USE_GCOV",
    "USE_VALGRIND",
    "USE_SANITIZER",
];
const INSTRUMENTING_FLAGS: [&str; 4] = [
    "-fprofile-instr-generate",
    "-fprofile-generate",
    "--coverage",
    "-fsanitize",
];

impl BuildConfig {
    /// Reads `<root>/CMakeCache.txt`.
    pub fn read(root: &Path) -> Result<BuildConfig> {
        let path = root.join("CMakeCache.txt");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{} is not a cmake build directory (no readable CMakeCache.txt)",
                root.display()
            )
        })?;
        let mut config = BuildConfig::parse(&text);
        let detected = |lang| {
            compiler_file(root, lang)
                .and_then(|f| std::fs::read_to_string(f).ok())
                .map(|text| compiler_id_version(&text, lang))
                .unwrap_or_default()
        };
        config.cxx_compiler_version = detected("CXX");
        config.c_compiler_version = detected("C");
        Ok(config)
    }

    /// Parses `NAME:TYPE=VALUE` lines.
    pub fn parse(text: &str) -> BuildConfig {
        let entry = |key: &str| -> Option<String> {
            text.lines().find_map(|l| {
                let (name, value) = l.split_once('=')?;
                (name.split(':').next()? == key).then(|| value.trim().to_string())
            })
        };
        let get = |key: &str| entry(key).unwrap_or_default();
        let on = |v: &str| matches!(v.to_ascii_uppercase().as_str(), "ON" | "TRUE" | "1" | "YES");
        let cxx_flags = get("CMAKE_CXX_FLAGS");
        let mut instrumentation: Vec<String> = INSTRUMENTING_OPTIONS
            .iter()
            .filter(|o| on(&get(o)))
            .map(|o| o.to_string())
            .collect();
        instrumentation.extend(
            INSTRUMENTING_FLAGS
                .iter()
                .filter(|f| cxx_flags.contains(*f))
                .map(|f| f.to_string()),
        );
        BuildConfig {
            build_type: get("CMAKE_BUILD_TYPE"),
            build_mako: on(&get("BUILD_MAKO")),
            cxx_compiler: get("CMAKE_CXX_COMPILER"),
            cxx_compiler_version: String::new(),
            c_compiler: get("CMAKE_C_COMPILER"),
            c_compiler_version: String::new(),
            cxx_flags,
            instrumentation,
            codegen: CODEGEN_ENTRIES
                .iter()
                .filter_map(|k| Some((k.to_string(), entry(k)?)))
                .collect(),
        }
    }

    /// How `other` (the experiment's) was configured differently from this (the
    /// baseline's), one `what: this vs other` each: beside the code change, each changes
    /// TPS by itself.
    pub fn differences(&self, other: &BuildConfig) -> Vec<String> {
        let mut d = Vec::new();
        let mut compare = |what: &str, a: &str, b: &str| {
            if a != b {
                let show = |v: &str| {
                    if v.is_empty() {
                        "(unset)".to_string()
                    } else {
                        format!("'{v}'")
                    }
                };
                d.push(format!("{what}: {} vs {}", show(a), show(b)));
            }
        };
        compare("CMAKE_BUILD_TYPE", &self.build_type, &other.build_type);
        // A compiler by what cmake identified (another host's path to the same compiler
        // is the same compiler); by its cache entry, the path, when that is unknown.
        for (what, entry, a, b) in [
            (
                "C++ compiler",
                "CMAKE_CXX_COMPILER",
                (&self.cxx_compiler_version, &self.cxx_compiler),
                (&other.cxx_compiler_version, &other.cxx_compiler),
            ),
            (
                "C compiler",
                "CMAKE_C_COMPILER",
                (&self.c_compiler_version, &self.c_compiler),
                (&other.c_compiler_version, &other.c_compiler),
            ),
        ] {
            if a.0.is_empty() || b.0.is_empty() {
                compare(entry, a.1, b.1);
            } else {
                compare(what, a.0, b.0);
            }
        }
        compare("CMAKE_CXX_FLAGS", &self.cxx_flags, &other.cxx_flags);
        let none = String::new();
        for key in CODEGEN_ENTRIES {
            compare(
                key,
                self.codegen.get(key).unwrap_or(&none),
                other.codegen.get(key).unwrap_or(&none),
            );
        }
        d
    }

    /// Why numbers from this build would not be valid, one sentence each.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.build_type != "Release" {
            p.push(format!(
                "CMAKE_BUILD_TYPE is '{}', not Release: an unoptimized or debug build measures the \
                 compiler settings, not the change",
                self.build_type
            ));
        }
        if !self.build_mako {
            p.push("BUILD_MAKO is not ON: configure with -DBUILD_MAKO=ON".to_string());
        }
        if !self.instrumentation.is_empty() {
            p.push(format!(
                "instrumented build ({}): instrumentation costs far more CPU than the changes a gate \
                 looks for",
                self.instrumentation.join(", ")
            ));
        }
        p
    }
}

/// `CMakeFiles/<cmake version>/CMake<lang>Compiler.cmake` of a cmake build dir (`lang`:
/// `C`, `CXX`): where cmake records the compiler it detected (the newest such file, if
/// cmake was upgraded).
pub fn compiler_file(root: &Path, lang: &str) -> Option<PathBuf> {
    std::fs::read_dir(root.join("CMakeFiles"))
        .ok()?
        .flatten()
        .map(|e| e.path().join(format!("CMake{lang}Compiler.cmake")))
        .filter(|f| f.is_file())
        .max_by_key(|f| f.metadata().and_then(|m| m.modified()).ok())
}

/// `Clang 19.1.7` from `set(CMAKE_<lang>_COMPILER_ID "Clang")` and
/// `set(CMAKE_<lang>_COMPILER_VERSION "19.1.7")`; empty when either is missing.
fn compiler_id_version(text: &str, lang: &str) -> String {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("set(")?.strip_prefix(key)?;
            let value = rest.trim().strip_suffix(')')?.trim().trim_matches('"');
            (!value.is_empty()).then(|| value.to_string())
        })
    };
    match (
        get(&format!("CMAKE_{lang}_COMPILER_ID ")),
        get(&format!("CMAKE_{lang}_COMPILER_VERSION ")),
    ) {
        (Some(id), Some(version)) => format!("{id} {version}"),
        _ => String::new(),
    }
}

/// Whether two trees hold byte-identical `fdbserver`, `mako` and `libfdb_c.so` (the same
/// tree twice, or a copy). Two trees built from the same commit with different uncommitted
/// changes have the same source version but different binaries: a real A/B.
pub fn same_binaries(a: &FdbTree, b: &FdbTree) -> Result<bool> {
    for (x, y) in [
        (&a.fdbserver, &b.fdbserver),
        (&a.mako, &b.mako),
        (
            &a.lib_dir.join("libfdb_c.so"),
            &b.lib_dir.join("libfdb_c.so"),
        ),
    ] {
        if !same_file_contents(x, y)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn same_file_contents(x: &Path, y: &Path) -> Result<bool> {
    use std::io::Read;
    let open =
        |p: &Path| std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()));
    let (mut fx, mut fy) = (open(x)?, open(y)?);
    if fx.metadata()?.len() != fy.metadata()?.len() {
        return Ok(false);
    }
    let (mut bx, mut by) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fx.read(&mut bx)?;
        if n == 0 {
            return Ok(true);
        }
        fy.read_exact(&mut by[..n])?;
        if bx[..n] != by[..n] {
            return Ok(false);
        }
    }
}

/// What `fdbserver --version` prints (`fdbserver/fdbserver.actor.cpp`, `printVersion`):
///
/// ```text
/// FoundationDB 8.0 (v8.0.0)
/// source version c0c44752df676e4a2d532b5cdb4bf96728a30b78
/// protocol fdb00b080000000
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FdbVersion {
    /// First line, e.g. `FoundationDB 8.0 (v8.0.0)`.
    pub release: String,
    /// Git commit the binary was built from: two arms with the same one (and the same
    /// knobs) are not an A/B.
    pub source_version: String,
    /// Protocol version, e.g. `fdb00b080000000`.
    pub protocol: String,
}

impl FdbVersion {
    pub fn parse(text: &str) -> Result<FdbVersion> {
        let release = text.lines().next().unwrap_or("").trim().to_string();
        let field = |key: &str| -> Result<String> {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(key))
                .map(|v| v.trim().to_string())
                .with_context(|| format!("no '{key}' line in:\n{text}"))
        };
        if !release.starts_with("FoundationDB") {
            bail!("first line is not 'FoundationDB <version>' in:\n{text}");
        }
        Ok(FdbVersion {
            release,
            source_version: field("source version ")?,
            protocol: field("protocol ")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../testdata/fdbserver-version.txt");

    #[test]
    fn parses_real_fdbserver_version() {
        let v = FdbVersion::parse(FIXTURE).unwrap();
        assert_eq!(v.release, "FoundationDB 8.0 (v8.0.0)");
        assert_eq!(v.source_version, "c0c44752df676e4a2d532b5cdb4bf96728a30b78");
        assert_eq!(v.protocol, "fdb00b080000000");
    }

    #[test]
    fn rejects_other_programs_output() {
        assert!(FdbVersion::parse("mako 1.0\n").is_err());
        assert!(FdbVersion::parse("FoundationDB 8.0\nprotocol x\n").is_err());
    }

    #[test]
    fn missing_mako_names_the_file_and_the_cmake_flag() {
        let dir = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let make = |f: &str, mode: u32| {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        for f in ["bin/fdbserver", "bin/fdbcli", "lib/libfdb_c.so"] {
            make(f, 0o755);
        }
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/mako is missing"), "{err}");
        assert!(err.contains("-DBUILD_MAKO=ON"), "{err}");
        make("bin/mako", 0o644);
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/mako is not executable"), "{err}");
        make("bin/mako", 0o755);
        assert!(FdbTree::open(dir.path()).is_ok());
    }

    #[test]
    fn same_binaries_compares_contents() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let tree = |d: &Path, server: &str| {
            let t = FdbTree {
                root: d.to_path_buf(),
                fdbserver: d.join("fdbserver"),
                fdbcli: d.join("fdbcli"),
                mako: d.join("mako"),
                lib_dir: d.to_path_buf(),
            };
            std::fs::write(&t.fdbserver, server).unwrap();
            std::fs::write(&t.mako, "mako").unwrap();
            std::fs::write(d.join("libfdb_c.so"), "lib").unwrap();
            t
        };
        let a = tree(dirs[0].path(), "server v1");
        assert!(same_binaries(&a, &tree(dirs[1].path(), "server v1")).unwrap());
        assert!(!same_binaries(&a, &tree(dirs[1].path(), "server v2")).unwrap());
        assert!(!same_binaries(&a, &tree(dirs[1].path(), "server v1 longer")).unwrap());
    }

    #[test]
    fn cmake_cache_checks_build_type_mako_and_instrumentation() {
        let release = BuildConfig::parse("# comment\nCMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\nUSE_ASAN:BOOL=OFF\nCMAKE_CXX_FLAGS:STRING=\n");
        assert!(release.problems().is_empty(), "{release:?}");
        let debug = BuildConfig::parse("CMAKE_BUILD_TYPE:STRING=Debug\nBUILD_MAKO:BOOL=OFF\nUSE_ASAN:BOOL=ON\nCMAKE_CXX_FLAGS:STRING=-O2 -fprofile-instr-generate\n");
        let p = debug.problems();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("'Debug'") && p[1].contains("-DBUILD_MAKO=ON"));
        assert!(p[2].contains("USE_ASAN, -fprofile-instr-generate"), "{p:?}");
    }

    #[test]
    fn arms_configured_differently_are_named_by_cache_entry() {
        // Entries as a real FDB 8.0 build's CMakeCache.txt has them (clang 19, lld).
        let real = "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\n\
            CMAKE_CXX_COMPILER:STRING=/usr/bin/clang++-19\nCMAKE_CXX_FLAGS:STRING=\n\
            CMAKE_C_COMPILER:STRING=/usr/bin/clang-19\nUSE_JEMALLOC:BOOL=OFF\n\
            USE_LD:STRING=LLD\nALLOC_INSTRUMENTATION:BOOL=OFF\n";
        let a = BuildConfig::parse(real);
        assert!(a.problems().is_empty(), "{a:?}");
        assert!(a.differences(&a.clone()).is_empty());
        let b = BuildConfig::parse(
            &real
                .replace("USE_JEMALLOC:BOOL=OFF", "USE_JEMALLOC:BOOL=ON")
                .replace("/usr/bin/clang++-19", "/usr/bin/g++")
                .replace("USE_LD:STRING=LLD\n", ""),
        );
        assert_eq!(
            a.differences(&b),
            [
                "CMAKE_CXX_COMPILER: '/usr/bin/clang++-19' vs '/usr/bin/g++'",
                "USE_JEMALLOC: 'OFF' vs 'ON'",
                "USE_LD: 'LLD' vs (unset)"
            ]
        );
        // Another host's path to the same compiler is the same compiler.
        let mut x = a.clone();
        x.cxx_compiler_version = "GNU 12.2.0".into();
        x.c_compiler_version = "Clang 19.1.7".into();
        let mut y = x.clone();
        y.cxx_compiler = "/usr/bin/g++-12".into();
        assert!(x.differences(&y).is_empty(), "{:?}", x.differences(&y));
        y.c_compiler_version = "GNU 12.2.0".into();
        y.codegen
            .insert("CMAKE_CXX_FLAGS_RELEASE".into(), "-O0".into());
        y.codegen.insert("USE_LTO".into(), "ON".into());
        assert_eq!(
            x.differences(&y),
            [
                "C compiler: 'Clang 19.1.7' vs 'GNU 12.2.0'",
                "CMAKE_CXX_FLAGS_RELEASE: (unset) vs '-O0'",
                "USE_LTO: (unset) vs 'ON'"
            ]
        );
        let instrumented = BuildConfig::parse(&real.replace(
            "ALLOC_INSTRUMENTATION:BOOL=OFF",
            "ALLOC_INSTRUMENTATION:BOOL=ON",
        ));
        assert!(
            instrumented.problems()[0].contains("ALLOC_INSTRUMENTATION"),
            "{instrumented:?}"
        );
    }

    #[test]
    fn compiler_version_comes_from_cmake_detection_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("CMakeCache.txt"),
            "CMAKE_BUILD_TYPE:STRING=Release\n",
        )
        .unwrap();
        assert_eq!(
            BuildConfig::read(dir.path()).unwrap().cxx_compiler_version,
            ""
        );
        let detected = dir.path().join("CMakeFiles/4.4.5");
        std::fs::create_dir_all(&detected).unwrap();
        // As cmake 4.4 writes it for clang-19.
        std::fs::write(
            detected.join("CMakeCXXCompiler.cmake"),
            "set(CMAKE_CXX_COMPILER \"/usr/bin/clang++-19\")\n\
             set(CMAKE_CXX_COMPILER_ARG1 \"\")\n\
             set(CMAKE_CXX_COMPILER_ID \"Clang\")\n\
             set(CMAKE_CXX_COMPILER_VERSION \"19.1.7\")\n\
             set(CMAKE_CXX_COMPILER_VERSION_INTERNAL \"\")\n",
        )
        .unwrap();
        assert_eq!(
            BuildConfig::read(dir.path()).unwrap().cxx_compiler_version,
            "Clang 19.1.7"
        );
        assert_eq!(
            BuildConfig::read(dir.path()).unwrap().c_compiler_version,
            ""
        );
        std::fs::write(
            detected.join("CMakeCCompiler.cmake"),
            "set(CMAKE_C_COMPILER \"/usr/bin/gcc-12\")\n\
             set(CMAKE_C_COMPILER_ID \"GNU\")\n\
             set(CMAKE_C_COMPILER_VERSION \"12.2.0\")\n",
        )
        .unwrap();
        assert_eq!(
            BuildConfig::read(dir.path()).unwrap().c_compiler_version,
            "GNU 12.2.0"
        );
        assert_eq!(
            compiler_id_version("set(CMAKE_CXX_COMPILER_ID \"GNU\")", "CXX"),
            ""
        );
    }

    #[test]
    fn missing_tree_is_named() {
        let err = format!(
            "{:#}",
            FdbTree::open(Path::new("/nonexistent/fdb")).unwrap_err()
        );
        assert!(err.contains("/nonexistent/fdb does not exist"), "{err}");
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = FdbTree::open(file.path()).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        assert!(err.downcast_ref::<UsageError>().is_some());
    }
}
