//! cmake's record of an FDB build: `CMakeCache.txt` entries (`NAME:TYPE=VALUE`) and the
//! compiler cmake detected. Which entries matter comes from FDB's
//! `cmake/ConfigureCompiler.cmake` and `CMakeLists.txt`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a build tree's `CMakeCache.txt` says about how it was configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildConfig {
    /// `CMAKE_BUILD_TYPE`.
    pub build_type: String,
    /// `BUILD_MAKO`.
    pub build_mako: bool,
    /// `CMAKE_CXX_COMPILER`.
    pub cxx_compiler: String,
    /// The compiler as cmake identified it, `<CMAKE_CXX_COMPILER_ID> <..._VERSION>`, e.g.
    /// `Clang 19.1.7`, from cmake's `CMakeFiles/<version>/CMakeCXXCompiler.cmake`
    /// ([`compiler_id_version`]); empty when the tree lacks that file.
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
    /// Entries the gate reads that the cache gives more than once with different values,
    /// as `NAME: 'first' then 'second'` (cmake writes each entry once: an edited cache).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
}

/// Cache entries besides the build type, compilers and `CMAKE_CXX_FLAGS` that change what
/// the compiler and linker make: cmake's other compile and link flags and toolchain file,
/// and FDB's options for the allocator, linker, C++ library, profile-guided optimization,
/// LTO and vector instructions (`cmake/ConfigureCompiler.cmake`), and for the storage
/// engines linked in (`cmake/FDBComponents.cmake`: `WITH_ROCKSDB` from 7.3,
/// `SSD_ROCKSDB_EXPERIMENTAL` before; `WITH_LIBURING`).
const CODEGEN_ENTRIES: [&str; 21] = [
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
    "WITH_ROCKSDB",
    "SSD_ROCKSDB_EXPERIMENTAL",
    "WITH_LIBURING",
];

/// [`CODEGEN_ENTRIES`] that older build summaries (and baselines recorded from them) do
/// not hold: compared only when both caches have them (every 7.3 and 8.0 cache has its
/// release's).
const LATER_ENTRIES: [&str; 3] = ["WITH_ROCKSDB", "SSD_ROCKSDB_EXPERIMENTAL", "WITH_LIBURING"];

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
/// Compiler and linker options that instrument what they build (sanitizers, coverage,
/// profile generation, gprof, XRay, function hooks), looked for in every flags entry of
/// [`FLAGS_ENTRIES`] as whole options or their prefixes (`-fsanitize=address`).
const INSTRUMENTING_FLAGS: [&str; 9] = [
    "-fprofile-instr-generate",
    "-fprofile-generate",
    "--coverage",
    "-fsanitize",
    "-fprofile-arcs",
    "-ftest-coverage",
    "-pg",
    "-fxray-instrument",
    "-finstrument-functions",
];

/// The cache entries whose options reach the compiler or linker of a Release build.
const FLAGS_ENTRIES: [&str; 7] = [
    "CMAKE_CXX_FLAGS",
    "CMAKE_CXX_FLAGS_RELEASE",
    "CMAKE_C_FLAGS",
    "CMAKE_C_FLAGS_RELEASE",
    "CMAKE_EXE_LINKER_FLAGS",
    "CMAKE_SHARED_LINKER_FLAGS",
    "CMAKE_MODULE_LINKER_FLAGS",
];

/// cmake's truth of a value as `if(<variable>)` reads it: false for its false constants
/// (`0`, `OFF`, `NO`, `FALSE`, `N`, `IGNORE`, `NOTFOUND`, the empty string and
/// `*-NOTFOUND`, any case), true for anything else (`ON`, `Y`, `2`, ...). A cache holding
/// `USE_ASAN:BOOL=Y` builds with ASan.
pub fn cmake_true(value: &str) -> bool {
    let v = value.trim().to_ascii_uppercase();
    !(matches!(
        v.as_str(),
        "" | "0" | "OFF" | "NO" | "FALSE" | "N" | "IGNORE" | "NOTFOUND"
    ) || v.ends_with("-NOTFOUND"))
}

/// The instrumenting options among whitespace-separated `flags`.
fn instrumenting(flags: &str) -> impl Iterator<Item = &'static str> + '_ {
    INSTRUMENTING_FLAGS.into_iter().filter(move |f| {
        flags.split_whitespace().any(|o| {
            o == *f
                || o.strip_prefix(f)
                    .is_some_and(|rest| rest.starts_with(['=', '-']))
        })
    })
}

impl BuildConfig {
    /// Parses `NAME:TYPE=VALUE` lines.
    pub fn parse(text: &str) -> BuildConfig {
        let values = |key: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| {
                    let (name, value) = l.split_once('=')?;
                    (name.split(':').next()? == key).then(|| value.trim().to_string())
                })
                .collect()
        };
        let conflicts = std::cell::RefCell::new(Vec::new());
        let entry = |key: &str| -> Option<String> {
            let all = values(key);
            if let Some(other) = all.iter().find(|v| **v != all[0]) {
                let line = format!("{key}: '{}' then '{other}'", all[0]);
                let mut c = conflicts.borrow_mut();
                if !c.contains(&line) {
                    c.push(line);
                }
            }
            all.into_iter().next()
        };
        let get = |key: &str| entry(key).unwrap_or_default();
        let on = |v: &str| cmake_true(v);
        let cxx_flags = get("CMAKE_CXX_FLAGS");
        let mut instrumentation: Vec<String> = INSTRUMENTING_OPTIONS
            .iter()
            .filter(|o| on(&get(o)))
            .map(|o| o.to_string())
            .collect();
        for entry in FLAGS_ENTRIES {
            for f in instrumenting(&get(entry)) {
                let found = format!("{f} in {entry}");
                if !instrumentation.contains(&found) {
                    instrumentation.push(found);
                }
            }
        }
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
            conflicts: conflicts.take(),
        }
    }

    /// The optimization level a Release build compiles C++ with: the last `-O` option of
    /// `CMAKE_CXX_FLAGS` followed by `CMAKE_CXX_FLAGS_RELEASE` (cmake puts them on the
    /// compile line in that order, and the compiler takes the last), e.g. `-O3`; `None`
    /// when neither has one (the compiler's default, `-O0`).
    pub fn release_optimization(&self) -> Option<String> {
        let release = self
            .codegen
            .get("CMAKE_CXX_FLAGS_RELEASE")
            .map_or("", String::as_str);
        format!("{} {release}", self.cxx_flags)
            .split_whitespace()
            .rfind(|f| f.starts_with("-O"))
            .map(str::to_string)
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
            // Records made before the gate read these have none: not a difference.
            let later = LATER_ENTRIES.contains(&key);
            if later && !(self.codegen.contains_key(key) && other.codegen.contains_key(key)) {
                continue;
            }
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
        // cmake picks a configuration's flags by its name in any case (release gets
        // CMAKE_CXX_FLAGS_RELEASE), and FDB's cmake files compare only "Debug".
        let release = self.build_type.eq_ignore_ascii_case("Release");
        if !release {
            p.push(format!(
                "CMAKE_BUILD_TYPE is '{}', not Release: an unoptimized or debug build measures the \
                 compiler settings, not the change",
                self.build_type
            ));
        }
        // Only where the cache has the release flags (cmake always writes them; a
        // hand-made cache may not, and then nothing is known).
        let release_flags = self.codegen.contains_key("CMAKE_CXX_FLAGS_RELEASE");
        if release && release_flags {
            match self.release_optimization().as_deref() {
                Some("-O0" | "-Og") | None => p.push(format!(
                    "CMAKE_CXX_FLAGS and CMAKE_CXX_FLAGS_RELEASE compile without optimization \
                     ({}): an unoptimized build measures the compiler settings, not the change",
                    self.release_optimization()
                        .unwrap_or_else(|| "no -O option: the compiler's -O0".to_string())
                )),
                Some(_) => {}
            }
        }
        if !self.conflicts.is_empty() {
            p.push(format!(
                "CMakeCache.txt gives entries more than once with different values ({}); cmake \
                 writes each once: reconfigure the tree",
                self.conflicts.join("; ")
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

/// Why a build configured with these cmake arguments would be refused, from the
/// arguments alone, before hours of building: the `-DNAME[:TYPE]=VALUE` (or `-D`
/// `NAME=VALUE`) entries read as [`BuildConfig::parse`] reads a cache, and only what they
/// set is judged: a build type other than Release, `BUILD_MAKO` off, instrumentation on.
/// The built tree's `CMakeCache.txt` is checked in full afterwards.
pub fn arg_problems(args: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-D" => lines.extend(it.next().cloned()),
            _ => lines.extend(a.strip_prefix("-D").map(str::to_string)),
        }
    }
    // cmake keeps the last of an entry given twice.
    lines.reverse();
    let text = lines.join("\n");
    let c = BuildConfig::parse(&text);
    let given = |key: &str| {
        lines
            .iter()
            .any(|l| l.split(['=', ':']).next() == Some(key))
    };
    let mut p = Vec::new();
    if given("CMAKE_BUILD_TYPE") && !c.build_type.eq_ignore_ascii_case("Release") {
        p.push(format!(
            "-DCMAKE_BUILD_TYPE={} is not Release: an unoptimized or debug build measures the \
             compiler settings, not the change",
            c.build_type
        ));
    }
    if given("CMAKE_CXX_FLAGS_RELEASE") {
        if let Some("-O0" | "-Og") | None = c.release_optimization().as_deref() {
            p.push(format!(
                "-DCMAKE_CXX_FLAGS_RELEASE={} compiles without optimization: an unoptimized \
                 build measures the compiler settings, not the change",
                c.codegen
                    .get("CMAKE_CXX_FLAGS_RELEASE")
                    .map_or("", String::as_str)
            ));
        }
    }
    if given("BUILD_MAKO") && !c.build_mako {
        p.push("-DBUILD_MAKO is not ON: the gate runs mako".to_string());
    }
    if !c.instrumentation.is_empty() {
        p.push(format!(
            "they instrument the build ({}): instrumentation costs far more CPU than the \
             changes a gate looks for",
            c.instrumentation.join(", ")
        ));
    }
    p
}

/// The compiler cmake detected, e.g. `Clang 19.1.7`, from a
/// `CMakeFiles/<cmake version>/CMake<lang>Compiler.cmake` file's `set(CMAKE_<lang>_COMPILER_ID "Clang")` and
/// `set(CMAKE_<lang>_COMPILER_VERSION "19.1.7")`; empty when either is missing.
pub fn compiler_id_version(text: &str, lang: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_unoptimized_release_or_an_edited_cache_is_a_problem() {
        // A real FDB 8.0 tree's release flags (cmake's default) are fine.
        let real = "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\n\
            CMAKE_CXX_FLAGS:STRING=\nCMAKE_CXX_FLAGS_RELEASE:STRING=-O3 -DNDEBUG\n";
        let c = BuildConfig::parse(real);
        assert_eq!(c.release_optimization().as_deref(), Some("-O3"));
        assert!(c.problems().is_empty(), "{c:?}");
        // CMAKE_BUILD_TYPE=Release is not enough: the flags set the optimization level, and
        // -O0, -Og or no -O option at all compiles unoptimized.
        for (flags, release, level) in [
            ("-O0 -g", "-O0", "(-O0)"),
            ("", "-Og", "(-Og)"),
            ("-O0", "-O3 -DNDEBUG", ""),
            ("", "-DNDEBUG", "(no -O option: the compiler's -O0)"),
        ] {
            let c = BuildConfig::parse(&format!(
                "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\n\
                 CMAKE_CXX_FLAGS:STRING={flags}\nCMAKE_CXX_FLAGS_RELEASE:STRING={release}\n"
            ));
            let p = c.problems();
            if level.is_empty() {
                // The release flags come last on the compile line: -O3 wins.
                assert!(p.is_empty(), "{flags} {release}: {p:?}");
            } else {
                assert_eq!(p.len(), 1, "{flags} {release}: {p:?}");
                assert!(
                    p[0].contains(&format!("without optimization {level}")),
                    "{p:?}"
                );
            }
        }
        // An entry given twice: before, the first one won (Release), whatever followed.
        let twice = BuildConfig::parse(&format!("{real}CMAKE_BUILD_TYPE:STRING=Debug\n"));
        assert_eq!(twice.build_type, "Release");
        assert!(
            twice
                .problems()
                .iter()
                .any(|p| p.contains("CMAKE_BUILD_TYPE: 'Release' then 'Debug'")),
            "{:?}",
            twice.problems()
        );
    }

    #[test]
    fn a_tree_with_rocksdb_linked_in_differs_from_one_without() {
        // Fresh-user finding: an 8.0 tree built -DWITH_ROCKSDB=ON (12 MB more fdbserver)
        // against one without it gave no warning.
        let cache = |rocksdb: &str| {
            BuildConfig::parse(&format!(
                "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\nWITH_ROCKSDB:BOOL={rocksdb}\n\
                 WITH_LIBURING:BOOL=OFF\n"
            ))
        };
        assert_eq!(
            cache("OFF").differences(&cache("ON")),
            ["WITH_ROCKSDB: 'OFF' vs 'ON'"]
        );
        assert!(cache("ON").differences(&cache("ON")).is_empty());
        // A record's summary made before these entries were read has none of them.
        let mut old = cache("OFF");
        old.codegen
            .retain(|k, _| !LATER_ENTRIES.contains(&k.as_str()));
        assert!(old.differences(&cache("ON")).is_empty());
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
    fn compiler_id_and_version_need_both_lines() {
        assert_eq!(
            compiler_id_version("set(CMAKE_CXX_COMPILER_ID \"GNU\")", "CXX"),
            ""
        );
        assert_eq!(
            compiler_id_version(
                "set(CMAKE_CXX_COMPILER_ID \"Clang\")\nset(CMAKE_CXX_COMPILER_VERSION \"19.1.7\")\n",
                "CXX"
            ),
            "Clang 19.1.7"
        );
    }

    #[test]
    fn cmake_arguments_that_make_a_tree_unfit_are_known_before_building() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Known from the arguments alone, so refused before hours of building both arms.
        let p = arg_problems(&args(&["-DCMAKE_BUILD_TYPE=Debug"]));
        assert!(
            p[0].contains("-DCMAKE_BUILD_TYPE=Debug is not Release"),
            "{p:?}"
        );
        let p = arg_problems(&args(&["-D", "CMAKE_BUILD_TYPE:STRING=RelWithDebInfo"]));
        assert!(p[0].contains("RelWithDebInfo"), "{p:?}");
        let p = arg_problems(&args(&[
            "-DUSE_ASAN=ON",
            "-DCMAKE_CXX_FLAGS=-fsanitize=thread",
        ]));
        assert!(p[0].contains("USE_ASAN, -fsanitize"), "{p:?}");
        assert!(!arg_problems(&args(&["-DBUILD_MAKO=OFF"])).is_empty());
        // cmake's other true values (Y, 2), flags entries other than CMAKE_CXX_FLAGS, and
        // -O0 in the release flags make a tree unfit too.
        assert!(!arg_problems(&args(&["-DUSE_ASAN=Y"])).is_empty());
        assert!(!arg_problems(&args(&["-DUSE_ASAN=2"])).is_empty());
        let p = arg_problems(&args(&["-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address"]));
        assert!(
            p[0].contains("-fsanitize in CMAKE_EXE_LINKER_FLAGS"),
            "{p:?}"
        );
        let p = arg_problems(&args(&["-DCMAKE_CXX_FLAGS_RELEASE=-O0"]));
        assert!(p[0].contains("compiles without optimization"), "{p:?}");
        assert!(arg_problems(&args(&["-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"])).is_empty());
        assert!(arg_problems(&args(&["-DCMAKE_BUILD_TYPE=release"])).is_empty());
        assert!(arg_problems(&args(&["-DBUILD_MAKO=Y"])).is_empty());
        // The last of an entry given twice is cmake's.
        assert!(arg_problems(&args(&[
            "-DCMAKE_BUILD_TYPE=Debug",
            "-DCMAKE_BUILD_TYPE=Release"
        ]))
        .is_empty());
        for fine in [
            &["-DCMAKE_BUILD_TYPE=Release", "-DUSE_LTO=ON", "-G", "Ninja"][..],
            &["-DUSE_ASAN=OFF"][..],
            &[][..],
        ] {
            assert_eq!(arg_problems(&args(fine)), Vec::<String>::new(), "{fine:?}");
        }
    }

    #[test]
    fn truth_and_instrumentation_as_cmake_and_the_compiler_read_them() {
        for t in ["ON", "on", "Y", "yes", "TRUE", "1", "2", "-1", "anything"] {
            assert!(cmake_true(t), "{t}");
        }
        for f in [
            "",
            "0",
            "OFF",
            "no",
            "N",
            "false",
            "IGNORE",
            "NOTFOUND",
            "X-NOTFOUND",
        ] {
            assert!(!cmake_true(f), "{f}");
        }
        let cache = "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=Y\nUSE_ASAN:BOOL=Y\n\
                     CMAKE_CXX_FLAGS_RELEASE:STRING=-O3 -DNDEBUG -fsanitize=address\n\
                     CMAKE_C_FLAGS:STRING=-pg\nCMAKE_CXX_FLAGS:STRING=-fprofile-arcs -ftest-coverage\n\
                     CMAKE_SHARED_LINKER_FLAGS:STRING=-fxray-instrument\n";
        let c = BuildConfig::parse(cache);
        assert!(c.build_mako);
        assert_eq!(
            c.instrumentation,
            [
                "USE_ASAN",
                "-fprofile-arcs in CMAKE_CXX_FLAGS",
                "-ftest-coverage in CMAKE_CXX_FLAGS",
                "-fsanitize in CMAKE_CXX_FLAGS_RELEASE",
                "-pg in CMAKE_C_FLAGS",
                "-fxray-instrument in CMAKE_SHARED_LINKER_FLAGS",
            ]
        );
        // Options that only start like one are not it.
        let c = BuildConfig::parse("CMAKE_CXX_FLAGS:STRING=-pgo-thing -fsanitizer_x -pthread\n");
        assert!(c.instrumentation.is_empty(), "{:?}", c.instrumentation);
    }
}
