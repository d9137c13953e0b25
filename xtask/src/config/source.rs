//! Config stage: where the arms are built from (`--fdb-src`, revisions, cmake arguments,
//! jobs, time bound), validated before anything is built.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use crate::{
    cli::SourceArgs,
    config::{Arm, MAX_SECONDS},
    error::UsageError,
};

/// The most parallel build jobs `--build-jobs` takes: far more than any host's cores, and
/// within the C `int` ninja reads `-j` into (4294967295 wraps to -1 there, refused after a
/// configure of minutes).
pub const MAX_BUILD_JOBS: usize = 4096;

/// How to build the arms that have no prebuilt tree, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceConfig {
    /// The FDB git checkout (absolute when it resolves).
    pub fdb_src: PathBuf,
    /// `--baseline REV`; `None`: the merge base of HEAD with the upstream main branch.
    pub baseline_rev: Option<String>,
    /// `--experiment REV`; `None`: the working tree, uncommitted changes included.
    pub experiment_rev: Option<String>,
    /// Extra cmake arguments for both arms, in order.
    pub cmake_args: Vec<String>,
    /// Parallel build jobs (at least 1).
    pub jobs: usize,
    /// Bound of one arm's configure + build, seconds (1 to one week).
    pub timeout_s: u64,
}

impl SourceConfig {
    /// Validates the source flags. `prebuilt`: the arms to build that the command could
    /// take as prebuilt trees instead (`bench`: those without `--*-build`; `build`: none),
    /// which the error for a missing checkout then mentions.
    ///
    /// Errors ([`UsageError`]): `--build-jobs` 0 or above [`MAX_BUILD_JOBS`], `--timeout-build` out of range, no git
    /// checkout at `--fdb-src` (the message says where it looked and how to point at one).
    /// The source settings of `args`; `default_src` is the checkout to use when neither
    /// `--fdb-src` nor `FDB_SRC` names one (`foundationdb` beside the gate's workspace).
    pub fn new(
        args: &SourceArgs,
        prebuilt: &[Arm],
        default_src: Option<PathBuf>,
    ) -> Result<SourceConfig, UsageError> {
        if let Some(jobs) = args.build_jobs {
            if !(1..=MAX_BUILD_JOBS).contains(&jobs) {
                return Err(UsageError(format!(
                    "--build-jobs {jobs}: give at least 1 and at most {MAX_BUILD_JOBS} (ninja \
                     reads its -j as a C int, and refuses more only after configure)"
                )));
            }
        }
        if args.timeout_build == 0 || args.timeout_build > MAX_SECONDS {
            return Err(UsageError(format!(
                "--timeout-build must be at least 1 second and at most {MAX_SECONDS} (one week)"
            )));
        }
        Ok(SourceConfig {
            fdb_src: fdb_src(args, prebuilt, default_src)?,
            baseline_rev: args.baseline.clone(),
            experiment_rev: args.experiment.clone(),
            cmake_args: args.cmake_args.clone(),
            jobs: args
                .build_jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
            timeout_s: args.timeout_build,
        })
    }
}

/// Where the FDB checkout's path came from, for the error when it is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--fdb-src`.
    Flag,
    /// The `FDB_SRC` variable.
    Env,
    /// The default: `foundationdb` beside the gate's workspace.
    BesideWorkspace,
    /// The default when the gate's workspace is not known: `../foundationdb`.
    CurrentDir,
}

/// `--fdb-src`/`FDB_SRC` (without either, `foundationdb` beside the gate's workspace),
/// which must be a git checkout; the error says where it looked and the ways to point at
/// one.
/// `prebuilt`: the arms that could be given as prebuilt trees instead.
fn fdb_src(
    args: &SourceArgs,
    prebuilt: &[Arm],
    default_src: Option<PathBuf>,
) -> Result<PathBuf, UsageError> {
    let given = args.fdb_src.clone().map(|given| {
        let origin = named_by(&given, std::env::var_os("FDB_SRC"), fdb_src_typed());
        (given, origin)
    });
    find_checkout(given, default_src, prebuilt)
        .map_err(|(problem, advice)| UsageError(format!("no FDB checkout: {problem}; {advice}")))
}

/// The FDB checkout at `given` (a path and where it came from), else at `default`
/// (`foundationdb` beside the gate's workspace), else at `../foundationdb`: its absolute
/// path, or why it is none and what to do ([`no_checkout`]). `bench` and `doctor` agree
/// through it.
pub fn find_checkout(
    given: Option<(PathBuf, Origin)>,
    default: Option<PathBuf>,
    prebuilt: &[Arm],
) -> Result<PathBuf, (String, String)> {
    let (src, origin) = match (given, default) {
        (Some(given), _) => given,
        (None, Some(default)) => (default, Origin::BesideWorkspace),
        (None, None) => (PathBuf::from("../foundationdb"), Origin::CurrentDir),
    };
    if src.join(".git").try_exists().unwrap_or(false) {
        return Ok(std::fs::canonicalize(&src).unwrap_or(src));
    }
    Err(no_checkout(&src, origin, prebuilt))
}

/// Whether `--fdb-src` is on the gate's command line (clap also fills it from `FDB_SRC`).
pub fn fdb_src_typed() -> bool {
    std::env::args_os().any(|a| a == "--fdb-src" || a.as_encoded_bytes().starts_with(b"--fdb-src="))
}

/// Which of `--fdb-src` and `FDB_SRC` gave the path `given`: clap takes the flag over the
/// variable, so the flag when it was `typed` on the command line or the variable holds
/// another path.
fn named_by(given: &Path, env: Option<OsString>, typed: bool) -> Origin {
    match env {
        Some(v) if !typed && Path::new(&v) == given => Origin::Env,
        _ => Origin::Flag,
    }
}

/// Why `src` is no git checkout and what to do, as `(problem, advice)`: what is there,
/// where the path came from (`origin`) and what a relative path is relative to; then how
/// to point at a checkout, or at prebuilt trees of the arms in `prebuilt`.
/// `git clone` into `src` is suggested only where it would work: nothing there (not even
/// a dangling link) under a directory, or an empty directory; and quoted for a shell.
fn no_checkout(src: &Path, origin: Origin, prebuilt: &[Arm]) -> (String, String) {
    let mut from = match origin {
        Origin::Flag => "from --fdb-src".to_string(),
        Origin::Env => "from FDB_SRC".to_string(),
        Origin::BesideWorkspace => {
            "from the default: foundationdb beside the gate's workspace".to_string()
        }
        Origin::CurrentDir => "from the default; the gate's workspace is not known".to_string(),
    };
    if src.is_relative() {
        from += &match std::env::current_dir() {
            Ok(cwd) => format!(", relative to the current dir {}", cwd.display()),
            Err(_) => ", relative to the current dir".to_string(),
        };
    }
    let (what, clone_there) = what_is_there(src);
    const CLONE: &str = "git clone https://github.com/apple/foundationdb";
    let quoted = src.to_str().and_then(|p| shlex::try_quote(p).ok());
    let how = match quoted {
        Some(path) if clone_there => format!("clone one there ({CLONE} {path}), "),
        _ => format!("clone one elsewhere ({CLONE} DIR) and "),
    };
    // Where FDB_SRC named the path, "set FDB_SRC" would tell someone what they just did.
    let point = match origin {
        Origin::Env => "point FDB_SRC at it (or give --fdb-src PATH)",
        Origin::Flag => "give it with --fdb-src PATH",
        _ => "give --fdb-src PATH or set FDB_SRC",
    };
    let prebuilt = match prebuilt {
        [] => String::new(),
        [arm] => format!(", or give a prebuilt tree with --{arm}-build"),
        _ => ", or give prebuilt trees with --baseline-build and --experiment-build".into(),
    };
    (
        format!("{} {what} ({from})", src.display()),
        format!("{how}{point}{prebuilt}"),
    )
}

/// What is at `src`, which is no git checkout, and whether `git clone` could create it.
fn what_is_there(src: &Path) -> (String, bool) {
    let link = match std::fs::symlink_metadata(src) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // git creates missing parents, but not under a file.
            let parent_ok = src
                .ancestors()
                .skip(1)
                .find(|a| a.as_os_str().is_empty() || a.exists())
                .is_some_and(|a| a.as_os_str().is_empty() || a.is_dir());
            return ("does not exist".into(), parent_ok);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return ("does not exist: a parent of it is a file".into(), false);
        }
        Err(e) => return (format!("cannot be looked at ({e})"), false),
        Ok(m) => m,
    };
    let Ok(meta) = std::fs::metadata(src) else {
        return ("is a link to nothing".into(), false);
    };
    if !meta.is_dir() {
        return ("is a file, not a directory".into(), false);
    }
    let named = if link.is_symlink() {
        " (through a link)"
    } else {
        ""
    };
    match std::fs::read_dir(src).map(|mut d| d.next().is_none()) {
        Err(e) => (format!("cannot be read ({e}){named}"), false),
        Ok(true) => (format!("is an empty directory{named}"), true),
        Ok(false) => (
            format!("is not the top of a git checkout (no .git){named}"),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt as _;

    use super::*;

    fn args(fdb_src: Option<PathBuf>) -> SourceArgs {
        SourceArgs {
            fdb_src,
            baseline: None,
            experiment: None,
            cmake_args: Vec::new(),
            build_jobs: None,
            timeout_build: 3600,
        }
    }

    /// The missing-checkout message as `fdb_src` words it.
    fn said(src: &Path, origin: Origin, prebuilt: &[Arm]) -> String {
        let (problem, advice) = no_checkout(src, origin, prebuilt);
        format!("{problem}; {advice}")
    }

    const BOTH: &[Arm] = &[Arm::Baseline, Arm::Experiment];

    const ELSEWHERE: &str =
        "clone one elsewhere (git clone https://github.com/apple/foundationdb DIR) and give it \
         with --fdb-src PATH";

    #[test]
    fn build_jobs_ninja_cannot_take_are_refused_before_any_build() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let with = |jobs| SourceArgs {
            build_jobs: Some(jobs),
            ..args(Some(dir.path().to_path_buf()))
        };
        for bad in [0, MAX_BUILD_JOBS + 1, 4_294_967_295, usize::MAX] {
            let e = SourceConfig::new(&with(bad), &[], None).unwrap_err();
            assert!(
                e.0.starts_with(&format!(
                    "--build-jobs {bad}: give at least 1 and at most 4096"
                )),
                "{}",
                e.0
            );
        }
        for good in [1, MAX_BUILD_JOBS] {
            assert_eq!(
                SourceConfig::new(&with(good), &[], None).unwrap().jobs,
                good
            );
        }
    }

    #[test]
    fn a_missing_checkout_names_where_the_path_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let nowhere = dir.path().join("foundationdb");
        // The default is the gate's own, not an FDB_SRC in .cargo/config.toml (which would
        // also put `--fdb-src` in every usage line), and is named as the default.
        let e = fdb_src(&args(None), BOTH, Some(nowhere.clone())).unwrap_err();
        assert!(
            e.0.contains(&format!(
                "{} does not exist (from the default: foundationdb beside the gate's workspace)",
                nowhere.display()
            )),
            "{}",
            e.0
        );
        assert!(
            e.0.contains(&format!(
                "clone one there (git clone https://github.com/apple/foundationdb {}), give \
                 --fdb-src PATH or set FDB_SRC, or give prebuilt trees",
                nowhere.display()
            )),
            "{}",
            e.0
        );
        // The message names which of --fdb-src and FDB_SRC gave the path, and says when a
        // path is relative.
        assert_eq!(named_by(&nowhere, None, false), Origin::Flag);
        assert_eq!(
            named_by(&nowhere, Some("/elsewhere".into()), false),
            Origin::Flag
        );
        let same = Some(nowhere.clone().into());
        assert_eq!(named_by(&nowhere, same.clone(), false), Origin::Env);
        assert_eq!(named_by(&nowhere, same, true), Origin::Flag);
        let e = said(&nowhere, Origin::Flag, &[]);
        assert!(e.contains("does not exist (from --fdb-src);"), "{e}");
        assert!(!e.contains("--baseline-build"), "{e}");
        // With --baseline-build given, only the other arm's flag is suggested.
        let e = said(&nowhere, Origin::Flag, &[Arm::Experiment]);
        assert!(
            e.ends_with("or give a prebuilt tree with --experiment-build"),
            "{e}"
        );
        let cwd = std::env::current_dir().unwrap().display().to_string();
        let e = said(Path::new("no/such/dir"), Origin::Env, BOTH);
        assert!(
            e.contains(&format!(
                "no/such/dir does not exist (from FDB_SRC, relative to the current dir {cwd})"
            )),
            "{e}"
        );
        // FDB_SRC named the path: the advice is to point it elsewhere, not to set it.
        assert!(
            e.contains(
                "clone one there (git clone https://github.com/apple/foundationdb \
                        no/such/dir), point FDB_SRC at it (or give --fdb-src PATH)"
            ),
            "{e}"
        );
        // Without a known workspace the default is relative to the current dir.
        let e = said(Path::new("../foundationdb"), Origin::CurrentDir, BOTH);
        assert!(
            e.contains(&format!(
                "(from the default; the gate's workspace is not known, relative to the current \
                 dir {cwd})"
            )),
            "{e}"
        );
    }

    #[test]
    fn git_clone_is_suggested_only_where_it_would_work() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("foundationdb");
        std::fs::create_dir(&src).unwrap();
        let e = said(&src, Origin::Flag, BOTH);
        assert!(
            e.contains("is an empty directory") && e.contains("clone one there"),
            "{e}"
        );
        // `git clone` is never suggested onto a file, a full dir, a dangling link or a
        // path under a file (it would fail there), and a path with a space is quoted.
        std::fs::write(src.join("README"), "").unwrap();
        let e = fdb_src(&args(Some(src.clone())), BOTH, None).unwrap_err().0;
        assert!(
            e.contains("is not the top of a git checkout") && e.contains(ELSEWHERE),
            "{e}"
        );
        let file = src.join("README");
        let e = said(&file, Origin::Flag, BOTH);
        assert!(
            e.contains("is a file, not a directory") && e.contains(ELSEWHERE),
            "{e}"
        );
        let e = said(&file.join("sub"), Origin::Flag, BOTH);
        assert!(
            e.contains("does not exist: a parent of it is a file") && e.contains(ELSEWHERE),
            "{e}"
        );
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
        let e = said(&dangling, Origin::Flag, BOTH);
        assert!(
            e.contains("is a link to nothing") && e.contains(ELSEWHERE),
            "{e}"
        );
        let spaced = dir.path().join("with space");
        let e = said(&spaced, Origin::Flag, BOTH);
        assert!(
            e.contains(&format!(
                "(git clone https://github.com/apple/foundationdb '{}')",
                spaced.display()
            )),
            "{e}"
        );
        let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"bad\xffname"));
        let e = said(&odd, Origin::Flag, BOTH);
        assert!(e.contains(ELSEWHERE), "{e}");
        std::fs::create_dir(src.join(".git")).unwrap();
        assert_eq!(
            fdb_src(&args(None), BOTH, Some(src.clone())).unwrap(),
            src.canonicalize().unwrap()
        );
    }
}
