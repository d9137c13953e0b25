//! Config stage: where the arms are built from (`--fdb-src`, revisions, cmake arguments,
//! jobs, time bound), validated before anything is built.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use crate::{cli::SourceArgs, config::MAX_SECONDS, error::UsageError};

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
    /// Validates the source flags. `for_bench`: the command also takes prebuilt trees,
    /// which the error for a missing checkout then mentions.
    ///
    /// Errors ([`UsageError`]): `--build-jobs 0`, `--timeout-build` out of range, no git
    /// checkout at `--fdb-src` (the message says where it looked and how to point at one).
    /// The source settings of `args`; `default_src` is the checkout to use when neither
    /// `--fdb-src` nor `FDB_SRC` names one (`foundationdb` beside the gate's workspace).
    pub fn new(
        args: &SourceArgs,
        for_bench: bool,
        default_src: Option<PathBuf>,
    ) -> Result<SourceConfig, UsageError> {
        if args.build_jobs == Some(0) {
            return Err(UsageError("--build-jobs must be at least 1".into()));
        }
        if args.timeout_build == 0 || args.timeout_build > MAX_SECONDS {
            return Err(UsageError(format!(
                "--timeout-build must be at least 1 second and at most {MAX_SECONDS} (one week)"
            )));
        }
        Ok(SourceConfig {
            fdb_src: fdb_src(args, for_bench, default_src)?,
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

/// `--fdb-src`/`FDB_SRC` (without either, `foundationdb` beside the gate's workspace),
/// which must be a git checkout; the error says where it looked and the ways to point at
/// one.
/// `bench` also takes prebuilt trees (`for_bench`); `build` does not.
fn fdb_src(
    args: &SourceArgs,
    for_bench: bool,
    default_src: Option<PathBuf>,
) -> Result<PathBuf, UsageError> {
    // Without either, the checkout beside the gate's own workspace, from wherever the
    // gate was started.
    let src = args
        .fdb_src
        .clone()
        .or(default_src)
        .unwrap_or_else(|| PathBuf::from("../foundationdb"));
    if src.join(".git").exists() {
        return Ok(std::fs::canonicalize(&src).unwrap_or(src));
    }
    let (problem, advice) = no_checkout(
        &src,
        args.fdb_src
            .as_ref()
            .map(|given| named_by(given, std::env::var_os("FDB_SRC"))),
        for_bench,
    );
    Err(UsageError(format!("no FDB checkout: {problem}; {advice}")))
}

/// Which of `--fdb-src` and `FDB_SRC` gave the path `given`: clap takes the flag over the
/// variable, so the variable only when it holds the same path (then either did).
fn named_by(given: &Path, env: Option<OsString>) -> &'static str {
    match env {
        Some(v) if Path::new(&v) == given => "FDB_SRC",
        _ => "--fdb-src",
    }
}

/// Why `src` is no git checkout and what to do, as `(problem, advice)`: what is there,
/// where the path came from (`named_by`: the flag or variable; `None`: the default), what
/// a relative path is relative to; then how to point at a checkout, with prebuilt trees
/// when the command takes them (`for_bench`). `git clone` into `src` is suggested only
/// where it would work: nothing there, or an empty directory.
pub fn no_checkout(src: &Path, named_by: Option<&str>, for_bench: bool) -> (String, String) {
    let from = match named_by {
        None => "from the default: foundationdb beside the gate's workspace".to_string(),
        Some(name) if src.is_relative() => match std::env::current_dir() {
            Ok(cwd) => format!("from {name}, relative to the current dir {}", cwd.display()),
            Err(_) => format!("from {name}, relative to the current dir"),
        },
        Some(name) => format!("from {name}"),
    };
    let empty_dir = std::fs::read_dir(src).is_ok_and(|mut d| d.next().is_none());
    let what = if src.is_dir() && !empty_dir {
        "is not the top of a git checkout (no .git)"
    } else if src.is_dir() {
        "is an empty directory"
    } else if src.exists() {
        "is a file, not a directory"
    } else {
        "does not exist"
    };
    const CLONE: &str = "git clone https://github.com/apple/foundationdb";
    let how = if empty_dir || !src.exists() {
        format!("clone one there ({CLONE} {}), ", src.display())
    } else {
        format!("clone one elsewhere ({CLONE} DIR) and ")
    };
    let prebuilt = if for_bench {
        ", or give prebuilt trees with --baseline-build and --experiment-build"
    } else {
        ""
    };
    (
        format!("{} {what} ({from})", src.display()),
        format!("{how}give --fdb-src PATH or set FDB_SRC{prebuilt}"),
    )
}

#[cfg(test)]
mod tests {
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
    fn said(src: &Path, named_by: Option<&str>, for_bench: bool) -> String {
        let (problem, advice) = no_checkout(src, named_by, for_bench);
        format!("{problem}; {advice}")
    }

    #[test]
    fn a_missing_checkout_names_where_the_path_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let nowhere = dir.path().join("foundationdb");
        // Fresh user: the default came from FDB_SRC in .cargo/config.toml, which also put
        // `--fdb-src` in every usage line; it is now the gate's own default.
        let e = fdb_src(&args(None), true, Some(nowhere.clone())).unwrap_err();
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
        // Breaker: the message said "--fdb-src/FDB_SRC", not which; a relative path was
        // not said to be relative; `git clone` was suggested onto a file or a full dir.
        assert_eq!(named_by(&nowhere, None), "--fdb-src");
        assert_eq!(named_by(&nowhere, Some("/elsewhere".into())), "--fdb-src");
        assert_eq!(named_by(&nowhere, Some(nowhere.clone().into())), "FDB_SRC");
        let e = said(&nowhere, Some("--fdb-src"), false);
        assert!(e.contains("does not exist (from --fdb-src);"), "{e}");
        assert!(!e.contains("--baseline-build"), "{e}");
        let e = said(Path::new("no/such/dir"), Some("FDB_SRC"), true);
        let cwd = std::env::current_dir().unwrap();
        assert!(
            e.contains(&format!(
                "no/such/dir does not exist (from FDB_SRC, relative to the current dir {})",
                cwd.display()
            )),
            "{e}"
        );
        std::fs::create_dir(&nowhere).unwrap();
        let e = said(&nowhere, Some("--fdb-src"), true);
        assert!(
            e.contains("is an empty directory") && e.contains("clone one there"),
            "{e}"
        );
        std::fs::write(nowhere.join("README"), "").unwrap();
        let elsewhere = "clone one elsewhere (git clone https://github.com/apple/foundationdb \
                         DIR) and give --fdb-src PATH";
        let e = fdb_src(&args(Some(nowhere.clone())), true, None).unwrap_err();
        assert!(e.0.contains("is not the top of a git checkout"), "{}", e.0);
        assert!(e.0.contains(elsewhere), "{}", e.0);
        let file = nowhere.join("README");
        let e = said(&file, Some("--fdb-src"), true);
        assert!(
            e.contains("is a file, not a directory") && e.contains(elsewhere),
            "{e}"
        );
        std::fs::create_dir(nowhere.join(".git")).unwrap();
        assert_eq!(
            fdb_src(&args(None), true, Some(nowhere.clone())).unwrap(),
            nowhere.canonicalize().unwrap()
        );
    }
}
