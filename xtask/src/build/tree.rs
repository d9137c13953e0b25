//! Build stage, the stage's product: an FDB build tree, checked (every file the gate runs
//! is there), with its version and its cmake record read.
//!
//! A tree from `cmake -G Ninja -DBUILD_MAKO=ON` + `ninja fdbserver fdbcli mako fdb_c`
//! has `bin/fdbserver`, `bin/fdbcli`, `bin/mako` and `lib/libfdb_c.so`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use nix::unistd::{access, AccessFlags};
use serde::Serialize;

use fdb::{
    cmake::{compiler_id_version, BuildConfig},
    FdbVersion, MakoCaps, Release,
};

use crate::error::UsageError;

/// Bound on `fdbserver --version`: it prints three lines and exits at once; a binary that
/// takes longer is not one the gate can run.
pub const VERSION_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

/// The arguments every fdbserver the gate starts carries, naming its machine and zone
/// locality `machine`. Without both, fdbserver takes its machine id from the POSIX shared
/// memory `/dev/shm/fdbserver_shared_memory_id`, which it opens without `O_EXCL` for any
/// user (`getSharedMemoryMachineId`, fdbserver/fdbserver.cpp; simulation and multitest
/// runs too): another user who plants that name makes every fdbserver on the host fail
/// or hang. Shape: `--locality-machineid M --locality-zoneid M`.
pub fn locality_args(machine: &str) -> [String; 4] {
    [
        "--locality-machineid".to_string(),
        machine.to_string(),
        "--locality-zoneid".to_string(),
        machine.to_string(),
    ]
}

/// Paths of the programs of one FDB build tree, all checked to exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FdbTree {
    /// The build directory itself (absolute).
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub root: PathBuf,
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub fdbserver: PathBuf,
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub fdbcli: PathBuf,
    /// `None` in a tree opened for the multitest driver that has no mako
    /// ([`FdbTree::open_for`]).
    #[serde(serialize_with = "crate::config::path_json::lossy_opt")]
    pub mako: Option<PathBuf>,
    /// Directory holding `libfdb_c.so`: mako's `LD_LIBRARY_PATH` (mako has no rpath).
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub lib_dir: PathBuf,
}

impl FdbTree {
    /// Checks that `root` holds every file the gate runs, mako included. A missing file is
    /// an error that names it and how to build it.
    pub fn open(root: &Path) -> Result<FdbTree> {
        FdbTree::open_for(root, true)
    }

    /// Checks that `root` is a directory that is an FDB build tree: it holds bin/fdbserver
    /// or cmake's build.ninja. Cheap, so that a given tree is checked before hours of
    /// building the other arm. Errors: a [`UsageError`] saying which, and what to give.
    pub fn check_root(root: &Path) -> Result<(), UsageError> {
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
            )));
        }
        // A link that points nowhere is said as such, not as "no build tree".
        let server = root.join("bin/fdbserver");
        if let Some(link) = broken_link(&server) {
            return Err(UsageError(format!(
                "bin/fdbserver in FDB build tree {} is {link}: point it at a built fdbserver, \
                 or build it with `ninja -C {} fdbserver`",
                root.display(),
                root.display()
            )));
        }
        // Not a build dir at all: `ninja -C` there (the advice for a missing file) would
        // not work.
        if !server.exists() && !root.join("build.ninja").exists() {
            return Err(UsageError(format!(
                "{} is no FDB build tree (neither bin/fdbserver nor build.ninja): give the \
                 directory cmake configured FDB into, the one holding bin/fdbserver",
                root.display()
            )));
        }
        Ok(())
    }

    /// The tree `root` without links, once it and the files the gate runs from it
    /// (`bin/fdbserver`, `bin/fdbcli`, `bin/mako`, `lib/libfdb_c.so`, through their links)
    /// are ones no other user can change: the gate runs them as its user, root on CI
    /// ([`crate::files::check_private`] for the tree, [`crate::files::check_trusted`] for
    /// each file there). `what` names the tree in errors. Errors: a [`UsageError`] saying
    /// which is another user's, or writable by others.
    pub fn trusted(root: &Path, what: &str) -> Result<PathBuf> {
        let real = crate::files::check_private(what, root)?;
        // mako runs with `lib/` as LD_LIBRARY_PATH, where any library another user added
        // would be loaded: `bin/` and `lib/` are private too, not merely trusted.
        for dir in ["bin", "lib"].map(|d| real.join(d)) {
            if dir.exists() {
                crate::files::check_private(what, &dir)?;
            }
        }
        let files = ["bin/fdbserver", "bin/fdbcli", "bin/mako", "lib/libfdb_c.so"];
        // A missing file, or a link to nothing, is said by the check of what is there.
        for path in files.iter().map(|f| real.join(f)) {
            if path.exists() {
                crate::files::check_trusted(what, &path)?;
            }
        }
        Ok(real)
    }

    /// [`FdbTree::open`], with mako required only when `mako` (the multitest driver runs
    /// fdbserver alone; a mako that is there is still checked).
    pub fn open_for(root: &Path, mako: bool) -> Result<FdbTree> {
        FdbTree::check_root(root)?;
        let root = FdbTree::trusted(root, "FDB build tree")?;
        let need = |rel: &str, target: &str, extra: &str| -> Result<PathBuf> {
            let path = root.join(rel);
            if let Some(link) = broken_link(&path) {
                bail!(
                    "{rel} in FDB build tree {} is {link}: point it at the built file, or build \
                     it with `ninja -C {} {target}`{extra}",
                    root.display(),
                    root.display()
                );
            }
            // Something that is there but not a file is named as what it is, not "missing".
            if let Ok(meta) = std::fs::metadata(&path).or_else(|_| path.symlink_metadata()) {
                if !meta.is_file() {
                    bail!(
                        "{rel} in FDB build tree {} is {}, not the file ninja builds: remove it \
                         and build it with `ninja -C {} {target}`{extra}",
                        root.display(),
                        crate::input::kind_of(meta.file_type()),
                        root.display()
                    );
                }
            }
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
            mako: if mako || root.join("bin/mako").symlink_metadata().is_ok() {
                Some(need(
                    "bin/mako",
                    "mako",
                    " after configuring with -DBUILD_MAKO=ON (mako is not built by default)",
                )?)
            } else {
                None
            },
            lib_dir: need("lib/libfdb_c.so", "fdb_c", "")?
                .parent()
                .expect("lib/libfdb_c.so has a parent")
                .to_path_buf(),
            root,
        })
    }

    /// Runs `fdbserver --version` (within [`VERSION_BOUND`]) and parses it. Errors: it
    /// cannot start, fails, hangs, or prints something else.
    pub fn version(&self) -> Result<FdbVersion> {
        let fdbserver = &self.fdbserver;
        let mut cmd = std::process::Command::new(fdbserver);
        cmd.arg("--version");
        let what = format!("`{} --version`", fdbserver.display());
        let text = crate::process::run_bounded("fdbserver --version", cmd, VERSION_BOUND)
            .and_then(|o| o.stdout_if_success(&what))
            .with_context(|| format!("cannot run {what}"))?;
        FdbVersion::parse(&text)
            .with_context(|| format!("unexpected `{} --version` output", fdbserver.display()))
    }
}

impl FdbTree {
    /// What this tree's mako takes and prints: `version`'s release and the options its
    /// `mako --help` lists (run within [`VERSION_BOUND`], with `libfdb_c.so` on its
    /// library path; mako prints its usage on stdout and exits 0). Errors: it cannot start,
    /// fails or hangs, or prints no mako usage.
    pub fn mako_caps(&self, version: &FdbVersion) -> Result<MakoCaps> {
        let release = Release::of(version).with_context(|| {
            format!("unexpected `{} --version` output", self.fdbserver.display())
        })?;
        // Without mako (the multitest driver), the release's own options: none of mako's.
        let Some(mako) = &self.mako else {
            return Ok(MakoCaps::read(release, ""));
        };
        let mut cmd = std::process::Command::new(mako);
        cmd.arg("--help").env("LD_LIBRARY_PATH", &self.lib_dir);
        let what = format!("`{} --help`", mako.display());
        let out = crate::process::run_bounded("mako --help", cmd, VERSION_BOUND)
            .with_context(|| format!("cannot run {what}"))?;
        if !out.status.success() {
            // Its stdout says more than an empty stderr (a usage text, or a loader error).
            bail!(
                "{what} failed ({}): stderr: {}; stdout: {}",
                out.status,
                crate::process::excerpt(out.stderr.trim(), 5),
                crate::process::excerpt(out.stdout.trim(), 5)
            );
        }
        let help = out.stdout;
        MakoCaps::check_help(&help).with_context(|| format!("{what} is not mako's"))?;
        Ok(MakoCaps::read(release, &help))
    }
}

/// Reads `<root>/CMakeCache.txt` and the compiler cmake detected (`CMakeFiles`).
pub fn read_build_config(root: &Path) -> Result<BuildConfig> {
    let path = root.join("CMakeCache.txt");
    let text = crate::process::read_output(&path).with_context(|| {
        format!(
            "{} is not a cmake build directory (no readable CMakeCache.txt)",
            root.display()
        )
    })?;
    let mut config = BuildConfig::parse(&text);
    // A tree without cmake's record has no detected compiler; one it cannot read is an error.
    let detected = |lang| -> Result<String> {
        Ok(match compiler_file(root, lang) {
            Some(f) => compiler_id_version(&crate::process::read_output(&f)?, lang),
            None => String::new(),
        })
    };
    config.cxx_compiler_version = detected("CXX")?;
    config.c_compiler_version = detected("C")?;
    Ok(config)
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

/// Whether two trees hold byte-identical `fdbserver`, `mako` (where both have one) and
/// `libfdb_c.so` (the same tree twice, or a copy). Two trees built from the same commit
/// with different uncommitted changes have the same source version but different
/// binaries: a real A/B.
pub fn same_binaries(a: &FdbTree, b: &FdbTree) -> Result<bool> {
    let makos = a.mako.as_ref().zip(b.mako.as_ref());
    for (x, y) in [
        (&a.fdbserver, &b.fdbserver),
        (
            &a.lib_dir.join("libfdb_c.so"),
            &b.lib_dir.join("libfdb_c.so"),
        ),
    ]
    .into_iter()
    .chain(makos)
    {
        if !same_file_contents(x, y)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn same_file_contents(x: &Path, y: &Path) -> Result<bool> {
    use std::io::Read;
    let open =
        |p: &Path| crate::input::open(p).with_context(|| format!("cannot read {}", p.display()));
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

/// `Some("a broken link (to T)")` when `path` is a symbolic link whose target does not
/// exist: `exists()` follows the link and would call it missing.
fn broken_link(path: &Path) -> Option<String> {
    let meta = path.symlink_metadata().ok()?;
    if !meta.file_type().is_symlink() || path.exists() {
        return None;
    }
    let to = std::fs::read_link(path)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    Some(format!("a broken link{to}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_mako_names_the_file_and_the_cmake_flag() {
        let dir = tempfile::tempdir().unwrap();
        // An empty dir is no build tree: `ninja -C` in it would find no build.ninja.
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(
            err.contains("is no FDB build tree (neither bin/fdbserver nor build.ninja)"),
            "{err}"
        );
        std::fs::write(dir.path().join("build.ninja"), "").unwrap();
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/fdbserver is missing"), "{err}");
        assert!(err.contains("build it with `ninja -C"), "{err}");
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
        // The multitest driver needs no mako.
        assert_eq!(FdbTree::open_for(dir.path(), false).unwrap().mako, None);
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/mako is missing"), "{err}");
        assert!(err.contains("-DBUILD_MAKO=ON"), "{err}");
        make("bin/mako", 0o644);
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/mako is not executable"), "{err}");
        make("bin/mako", 0o755);
        assert!(FdbTree::open(dir.path()).is_ok());
        // Something there that is not a file is named for what it is, not "missing".
        std::fs::remove_file(dir.path().join("bin/mako")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("bin/mako"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/mako in FDB build tree"), "{err}");
        assert!(
            err.contains("is a FIFO (named pipe), not the file ninja builds"),
            "{err}"
        );
        make("bin/mako2", 0o755);
        std::fs::remove_file(dir.path().join("bin/mako")).unwrap();
        std::fs::remove_file(dir.path().join("lib/libfdb_c.so")).unwrap();
        std::fs::create_dir(dir.path().join("lib/libfdb_c.so")).unwrap();
        std::fs::rename(dir.path().join("bin/mako2"), dir.path().join("bin/mako")).unwrap();
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("lib/libfdb_c.so in FDB build tree"), "{err}");
        assert!(err.contains("is a directory"), "{err}");
    }

    #[test]
    fn a_broken_link_in_the_tree_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // A bin/fdbserver that points nowhere is a broken link, not "no FDB build tree".
        std::os::unix::fs::symlink("/nonexistent/fdbserver", bin.join("fdbserver")).unwrap();
        let err = FdbTree::check_root(dir.path()).unwrap_err().0;
        assert!(
            err.contains("bin/fdbserver in FDB build tree")
                && err.contains("is a broken link (to /nonexistent/fdbserver)"),
            "{err}"
        );
        std::fs::remove_file(bin.join("fdbserver")).unwrap();
        std::fs::write(bin.join("fdbserver"), "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let exec = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(bin.join("fdbserver"), exec).unwrap();
        std::os::unix::fs::symlink("gone", bin.join("fdbcli")).unwrap();
        let err = format!("{:#}", FdbTree::open(dir.path()).unwrap_err());
        assert!(err.contains("bin/fdbcli in FDB build tree"), "{err}");
        assert!(err.contains("is a broken link (to gone)"), "{err}");
    }

    #[test]
    fn same_binaries_compares_contents() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let tree = |d: &Path, server: &str| {
            let t = FdbTree {
                root: d.to_path_buf(),
                fdbserver: d.join("fdbserver"),
                fdbcli: d.join("fdbcli"),
                mako: Some(d.join("mako")),
                lib_dir: d.to_path_buf(),
            };
            std::fs::write(&t.fdbserver, server).unwrap();
            std::fs::write(d.join("mako"), "mako").unwrap();
            std::fs::write(d.join("libfdb_c.so"), "lib").unwrap();
            t
        };
        let a = tree(dirs[0].path(), "server v1");
        assert!(same_binaries(&a, &tree(dirs[1].path(), "server v1")).unwrap());
        assert!(!same_binaries(&a, &tree(dirs[1].path(), "server v2")).unwrap());
        assert!(!same_binaries(&a, &tree(dirs[1].path(), "server v1 longer")).unwrap());
        // A tree without mako (the multitest driver's) compares what both have.
        let mut b = tree(dirs[1].path(), "server v1");
        std::fs::write(dirs[1].path().join("mako"), "another mako").unwrap();
        assert!(!same_binaries(&a, &b).unwrap());
        b.mako = None;
        assert!(same_binaries(&a, &b).unwrap());
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
            read_build_config(dir.path()).unwrap().cxx_compiler_version,
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
            read_build_config(dir.path()).unwrap().cxx_compiler_version,
            "Clang 19.1.7"
        );
        assert_eq!(
            read_build_config(dir.path()).unwrap().c_compiler_version,
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
            read_build_config(dir.path()).unwrap().c_compiler_version,
            "GNU 12.2.0"
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
