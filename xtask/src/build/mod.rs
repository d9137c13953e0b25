//! Build stage: an FDB checkout and a revision (or its working tree) -> a build tree with
//! `bin/fdbserver`, `bin/fdbcli`, `bin/mako`, `lib/libfdb_c.so`.
//!
//! `cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_MAKO=ON` (plus `--cmake-arg`s and a
//! compiler launcher, ccache or sccache, when found), then `ninja fdbserver fdbcli mako
//! fdb_c` (the FDB targets the gate needs, nothing else), in a cache under the cargo target
//! dir (`<target>/perfgate/fdb`):
//!
//! - `slot-<flags>/`: one per set of configure flags; `src/` is a `git clone --shared` of the
//!   checkout and `build/` its build dir. Commits are built here one after another: a
//!   checkout changes only the files that differ, so the second arm of an A/B rebuilds only
//!   what its diff touches (minutes, not the hours of a cold FDB build on a small host).
//!   The working tree (the experiment by default: uncommitted changes included) is built
//!   as a snapshot commit of it (`snapshot`).
//! - `<commit>-<flags>/`: a commit's tree, the files the gate runs copied out of the slot,
//!   with `build.log` and `stamp.json`; a second run with the same commit and flags builds
//!   nothing.
//!
//! Every build is bounded in time; its output goes to `build.log`, and a failure shows the
//! log's tail.

use std::{
    collections::{BTreeMap, BTreeSet},
    ffi::OsStr,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant, SystemTime},
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::Digest;

pub mod tree;

use crate::{
    config::{source::SourceConfig, Arm},
    error::UsageError,
    process::{read_output, run_bounded, tail, Child, PhaseError},
    results::fs::{json, write},
};

/// How the build cache (`<cargo target dir>/perfgate/fdb`) is named when the files layer
/// refuses a directory of it.
const BUILD_CACHE: &str = "build cache";

/// A build passed its time bound: a TIMEOUT, in JUnit too.
#[derive(Debug, thiserror::Error)]
#[error("TIMEOUT: {0}")]
pub struct BuildTimeout(pub String);

/// The targets the gate needs (FDB's CMake target names).
pub const TARGETS: [&str; 4] = ["fdbserver", "fdbcli", "mako", "fdb_c"];

/// What to build one arm from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A commit (any git rev syntax, resolved).
    Revision(String),
    /// The checkout's working tree, uncommitted changes included.
    WorkingTree,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Revision(rev) => write!(f, "revision {rev}"),
            Source::WorkingTree => f.write_str("the working tree"),
        }
    }
}

/// Configure and build settings shared by both arms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildSettings {
    /// Extra `cmake` arguments (`--cmake-arg`).
    pub cmake_args: Vec<String>,
    /// Parallel jobs for ninja.
    pub jobs: usize,
    /// Bound of one build (configure + ninja), seconds.
    pub timeout_s: u64,
}

/// How an arm's build tree came to be; recorded in `meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The arm it was built for (set by the caller).
    pub arm: String,
    /// The revision asked for (`HEAD~1`, `origin/main`, `working tree`).
    pub asked: String,
    /// The commit it resolved to (for the working tree: its HEAD).
    pub commit: String,
    /// Uncommitted changes were built (working tree).
    pub dirty: bool,
    /// When dirty: the first 12 hex digits of the git tree of the working tree as built
    /// (tracked changes and untracked, not ignored files); the same changes, the same hash.
    pub diff_hash: Option<String>,
    /// The full cmake command line's arguments.
    pub cmake_args: Vec<String>,
    /// The environment a configure in a new cache reads that was set and not empty, by
    /// name (`configure_env`): part of what a cached build is keyed on.
    #[serde(default)]
    pub configure_env: BTreeMap<String, String>,
    /// The compilers cmake was to find, by language (`C`, `CXX`): `<real path>: <first line
    /// of its --version>` (`compiler_identity`); and under `toolchain file`, the one
    /// given with its contents' hash (`toolchain_file`). Part of the key too. What cmake
    /// did use is in the tree's `CMakeCache.txt` (`plan.<arm>.build_config` in `meta.json`).
    #[serde(default)]
    pub compilers: BTreeMap<String, String>,
    /// Variables of the gate's environment not passed to git, cmake and ninja
    /// ([`tool_command`]), names only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_removed: Vec<String>,
    /// Wall time of the configure + build that made this tree, seconds; on a cache hit,
    /// the earlier build's (0 for entries from before this was recorded).
    pub build_s: f64,
    /// Whether an earlier build was reused unchanged.
    pub cache_hit: bool,
    /// The build tree.
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub build_dir: PathBuf,
    /// The build's log.
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub log: PathBuf,
}

/// The cmake on PATH, when it predates what generates FDB main's build: FDB's
/// `CMakeLists.txt` asks for 3.24.2, but Debian 12's 3.25.1 fails its generate step
/// ("Impossible to link target 'flow_test' because the link item 'flow' ... has already
/// occurred with the feature 'WHOLE_ARCHIVE'"), where 4.4.5 from PyPI works (both
/// verified here). Older releases' trees may still generate with it: a note, not a refusal.
pub fn cmake_too_old() -> Option<String> {
    let mut cmd = Command::new("cmake");
    cmd.arg("--version");
    let out = run_bounded("cmake --version", cmd, Duration::from_secs(30)).ok()?;
    let version = cmake_version(&out.stdout)?;
    (version < (3, 26)).then(|| {
        format!(
            "cmake {}.{} is on PATH: FDB main's generate step fails with cmake 3.25.1 (Debian \
             12's) and works with 4.4.5 (`pip install cmake`)",
            version.0, version.1
        )
    })
}

/// (major, minor) of `cmake --version`'s first line, `cmake version 3.25.1`.
fn cmake_version(text: &str) -> Option<(u32, u32)> {
    let v = text.lines().next()?.strip_prefix("cmake version ")?;
    let mut parts = v.trim().split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The tools a build runs, in the order they are needed: the names any one of which will
/// do, and the Debian/Ubuntu package that installs one. `doctor` lists the same.
pub const BUILD_TOOLS: [(&[&str], &str); 4] = [
    (&["git"], "git"),
    (
        &["cmake"],
        "cmake, or `pip install cmake` (4.4.5 generates FDB main's build; Debian 12's 3.25.1 \
         does not)",
    ),
    (&["ninja"], "ninja-build"),
    (&["clang++", "clang++-19", "g++", "c++"], "clang (or g++)"),
];

/// Checks that every [`BUILD_TOOLS`] entry is on PATH. Errors ([`UsageError`]): each
/// missing one with its package, all of them at once.
pub fn check_tools() -> Result<()> {
    let missing: Vec<String> = BUILD_TOOLS
        .iter()
        .filter(|(names, _)| !names.iter().any(|t| which::which(t).is_ok()))
        .map(|(names, package)| {
            format!(
                "{} is not installed: apt-get install {package}",
                names.join(" / ")
            )
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(UsageError(missing.join("; ")).into())
}

/// Errors ([`UsageError`]) when git is not on PATH, naming its package: before any git
/// call, whose failure would otherwise read as a missing revision or branch, and before
/// the checkout is looked for, whose absence would otherwise be answered with `git clone`.
pub fn need_git() -> Result<()> {
    if which::which("git").is_ok() {
        return Ok(());
    }
    Err(UsageError("git is not installed: apt-get install git".into()).into())
}

/// The default baseline: the merge base of HEAD with the upstream main branch (the first
/// of `origin/main`, `upstream/main`, `origin/master`, `main` that exists).
pub fn default_baseline(src: &Path) -> Result<String> {
    // A failed `git merge-base` below reads as "no such branch": git itself must be there.
    need_git()?;
    for upstream in ["origin/main", "upstream/main", "origin/master", "main"] {
        if let Ok(base) = git(src, ["merge-base", "HEAD", upstream], &[]) {
            return Ok(base);
        }
    }
    Err(UsageError(format!(
        "cannot find the merge base of HEAD in {} with origin/main, upstream/main, origin/master \
         or main: give --baseline REV{}",
        src.display(),
        shallow_hint(src)
    ))
    .into())
}

/// For errors about missing commits: a note when the checkout is shallow, else "".
fn shallow_hint(src: &Path) -> &'static str {
    let shallow =
        git(src, ["rev-parse", "--is-shallow-repository"], &[]).is_ok_and(|v| v == "true");
    if shallow {
        " (the checkout is shallow: fetch more history, e.g. `git fetch --deepen 1000` or \
         `git fetch --unshallow`)"
    } else {
        ""
    }
}

/// Builds `source` of the checkout `src` under `cache`, or reuses an earlier build.
pub fn build(
    src: &Path,
    source: &Source,
    settings: &BuildSettings,
    cache: &Path,
) -> Result<Provenance> {
    let cmake_args = cmake_args(settings);
    let Resolved {
        asked,
        commit,
        built,
        dirty,
        diff_hash,
    } = resolve(src, source, cache)?;
    let Key {
        configure_env,
        compilers,
        flags,
    } = Key::of(src, &built, &cmake_args);
    // Built one after another in one slot per set of configure flags (a clone of the
    // checkout and its build dir, at a fixed path); the tree's files are then copied into
    // an entry per commit.
    let slot = cache.join(format!("slot-{flags}"));
    let tree = cache.join(format!("{}-{flags}", &built[..12]));
    let log = tree.join("build.log");
    let stamp = tree.join("stamp.json");
    let mut provenance = Provenance {
        arm: String::new(),
        asked,
        commit,
        dirty,
        diff_hash,
        cmake_args,
        configure_env,
        compilers,
        env_removed: tool_env_removed(std::env::vars_os().map(|(n, _)| n)),
        build_s: 0.0,
        cache_hit: false,
        build_dir: tree.clone(),
        log: log.clone(),
    };
    // The stamp is written last and removed before a rebuild: with it, the entry is whole.
    let built_already = || stamp.is_file() && TREE_FILES.iter().all(|f| tree.join(f).is_file());
    if built_already() {
        return Ok(cache_hit(provenance, &stamp));
    }
    for dir in [&slot.join("build"), &tree] {
        crate::files::create_dir_all(BUILD_CACHE, dir)?;
    }
    let _lock = lock_slot(&slot)?;
    if built_already() {
        return Ok(cache_hit(provenance, &stamp));
    }
    clear_slot(&slot, &tree);
    let started = Instant::now();
    compile(src, &built, &slot, &provenance.cmake_args, settings, &log)?;
    copy_tree(&slot.join("build"), &tree)?;
    check_source_version(&tree, &built, &slot)?;
    provenance.build_s = started.elapsed().as_secs_f64();
    let when = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    write(&stamp, &json(&(&provenance, &built, when)))?;
    Ok(provenance)
}

/// `cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_MAKO=ON`'s arguments, a compiler
/// launcher (ccache or sccache) when one is installed, then the user's.
fn cmake_args(settings: &BuildSettings) -> Vec<String> {
    let mut cmake_args = vec![
        "-G".to_string(),
        "Ninja".into(),
        "-DCMAKE_BUILD_TYPE=Release".into(),
        "-DBUILD_MAKO=ON".into(),
    ];
    let launcher = ["ccache", "sccache"]
        .into_iter()
        .find(|l| which::which(l).is_ok());
    if let Some(launcher) = launcher {
        cmake_args.push(format!("-DCMAKE_C_COMPILER_LAUNCHER={launcher}"));
        cmake_args.push(format!("-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}"));
    }
    cmake_args.extend(settings.cmake_args.iter().cloned());
    cmake_args
}

/// What a source resolves to.
struct Resolved {
    /// The revision asked for, or `working tree`.
    asked: String,
    /// The commit it resolved to (for the working tree: HEAD).
    commit: String,
    /// The commit to build: `commit`, or the working tree's snapshot commit.
    built: String,
    /// Uncommitted changes are built.
    dirty: bool,
    /// The first 12 hex digits of the snapshot's git tree, when dirty.
    diff_hash: Option<String>,
}

/// Resolves `source` in the checkout `src` to the commit to build; the working tree
/// becomes a snapshot commit of it (`snapshot`), like a revision. Errors: a revision that
/// is not one (with a hint for shallow clones), a partial clone.
fn resolve(src: &Path, source: &Source, cache: &Path) -> Result<Resolved> {
    // Every build and every commit the gate names goes through here first. cmake runs the
    // checkout's CMakeLists.txt, and git its hooks and config, as this user: a checkout
    // another user can change would run their code (git's own ownership check is off where
    // `safe.directory` is `*`, as in many CI images).
    crate::files::check_private("--fdb-src", src)?;
    // A failed `git rev-parse` below reads as "not a revision": git itself must be there.
    need_git()?;
    let head = |rev: &str| -> Result<String> {
        let spec = format!("{rev}^{{commit}}");
        let out = git(src, ["rev-parse", "--verify", &spec], &[]).map_err(|_| {
            UsageError(format!(
                "'{rev}' is not a revision of {}{}",
                src.display(),
                shallow_hint(src)
            ))
        })?;
        Ok(out)
    };
    let (asked, commit) = match source {
        Source::Revision(rev) => (rev.clone(), head(rev)?),
        Source::WorkingTree => ("working tree".to_string(), head("HEAD")?),
    };
    if is_partial_clone(src) {
        return Err(UsageError(format!(
            "{} is a partial clone (git clone --filter): the gate checks out revisions from its \
             objects and some are missing; fetch them (`git -C {0} config --unset \
             remote.origin.partialclonefilter && git -C {0} fetch --refetch origin`) or use a \
             full clone",
            src.display()
        ))
        .into());
    }
    let (built, dirty, diff_hash) = match source {
        Source::Revision(_) => (commit.clone(), false, None),
        Source::WorkingTree => match snapshot(src, &commit, cache)? {
            None => (commit.clone(), false, None),
            Some((snap, tree)) => (snap, true, Some(tree[..12].to_string())),
        },
    };
    Ok(Resolved {
        asked,
        commit,
        built,
        dirty,
        diff_hash,
    })
}

/// Takes the slot's lock: one build per slot at a time. Two gates on one host may want the
/// same commit; the second waits (and says so), then finds it built.
fn lock_slot(slot: &Path) -> Result<nix::fcntl::Flock<std::fs::File>> {
    let lock = crate::files::create(BUILD_CACHE, &slot.join("lock"))?;
    match nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => Ok(l),
        Err((lock, _)) => {
            say!(
                "waiting for another gate's build in {} (one build per slot at a time) ...",
                slot.display()
            );
            nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", slot.display()))
        }
    }
}

/// Before a build in the (locked) slot: ends what a killed gate's build left running and
/// removes the entry's stamp and log, so a half-made entry never reads as built.
fn clear_slot(slot: &Path, tree: &Path) {
    // A gate killed mid-build (SIGKILL) leaves ninja's compile jobs running, each in its
    // own process group: they would write the old revision's objects into this build.
    for (pid, command) in crate::process::kill_mentioning(slot, None) {
        say!("killed {pid}, left from an earlier build in the slot: {command}");
    }
    let _ = crate::files::remove_file(BUILD_CACHE, &tree.join("stamp.json"));
    let _ = crate::files::remove_file(BUILD_CACHE, &tree.join("build.log"));
    // An entry from before slots held a whole source and build tree.
    for old in ["src", "build"] {
        let _ = crate::files::remove_dir_all(BUILD_CACHE, &tree.join(old));
    }
}

/// Checks out `commit` into the slot, configures and builds the gate's targets with
/// ninja, output to `log`, all within the build's time bound.
fn compile(
    src: &Path,
    commit: &str,
    slot: &Path,
    cmake_args: &[String],
    settings: &BuildSettings,
    log: &Path,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(settings.timeout_s);
    let (source_dir, build_dir) = (slot.join("src"), slot.join("build"));
    checkout(src, commit, &source_dir)?;
    // Every build configures, without the cache the commit before left: FDB's configure
    // writes the source version (the commit) into the build, and cache defaults
    // (`option()`, `set(... CACHE)`) must be this commit's. Only `CMakeCache.txt` goes, not
    // `cmake --fresh`, which also deletes `CMakeFiles/` and with it the objects of targets
    // in the top directory. Files configure regenerates unchanged keep their times, so
    // this rebuilds nothing by itself.
    let _ = crate::files::remove_file(BUILD_CACHE, &build_dir.join("CMakeCache.txt"));
    let mut configure = tool_command("cmake");
    configure
        .arg("-S")
        .arg(&source_dir)
        .arg("-B")
        .arg(&build_dir)
        .args(cmake_args);
    step(
        "cmake configure",
        configure,
        log,
        deadline,
        settings.timeout_s,
        |_| {},
    )
    .map_err(|e| match cmake_too_old() {
        Some(why) => e.context(why),
        None => e,
    })?;
    let mut ninja = tool_command("ninja");
    ninja
        .arg("-C")
        .arg(&build_dir)
        .arg(format!("-j{}", settings.jobs))
        .args(TARGETS);
    let mut progress = NinjaProgress::new();
    step("ninja", ninja, log, deadline, settings.timeout_s, |out| {
        progress.update(out)
    })?;
    progress.bar.finish_and_clear();
    Ok(())
}

/// FDB's configure puts the checked-out commit into the binaries (`fdbserver --version`,
/// "source version"): any other commit than `built` means a file this build did not
/// replace.
fn check_source_version(tree: &Path, built: &str, slot: &Path) -> Result<()> {
    let version = tree::FdbTree::open(tree)?.version()?;
    if version.source_version != built {
        bail!(
            "{} reports source version {}, but commit {built} was built: the build left an \
             older file in place (delete {} and run again), or this tree does not take its \
             source version from git as FDB's configure does",
            tree.join("bin/fdbserver").display(),
            version.source_version,
            slot.display()
        );
    }
    Ok(())
}

/// The files of a build tree the gate uses: what a revision's cache entry keeps.
const TREE_FILES: [&str; 5] = [
    "bin/fdbserver",
    "bin/fdbcli",
    "bin/mako",
    "lib/libfdb_c.so",
    "CMakeCache.txt",
];

/// Whether the checkout is a partial clone (`git clone --filter`), whose missing objects
/// a clone of it cannot read.
fn is_partial_clone(src: &Path) -> bool {
    // Older git marks it with `extensions.partialClone`, newer with the remote's filter
    // (`remote.<r>.partialclonefilter`, unset by the fix the error gives).
    let pattern = r"^(extensions\.partialclone|remote\..*\.partialclonefilter)$";
    git(src, ["config", "--get-regexp", pattern], &[])
        .is_ok_and(|v| v.lines().any(|l| !l.trim_end().ends_with(" false")))
}

/// The working tree of `src` as a commit on top of `head`, when it differs from `head`:
/// `(commit, tree)`. Tracked changes and untracked files that are not ignored go into a
/// tree through a temporary copy of the index (`git add -A`, `git write-tree`), then a
/// commit with fixed author and date, so the same changes give the same commit and a
/// second run finds them built. Writes only objects into the checkout's repository: no
/// ref, its index and files untouched.
fn snapshot(src: &Path, head: &str, cache: &Path) -> Result<Option<(String, String)>> {
    let index = git(
        src,
        ["rev-parse", "--path-format=absolute", "--git-path", "index"],
        &[],
    )
    .context("cannot find the checkout's git index")?;
    crate::files::create_dir_all(BUILD_CACHE, cache)?;
    let tmp = tempfile::Builder::new()
        .prefix("index-")
        .tempfile_in(cache)
        .context("cannot create a temporary git index")?;
    // A copy keeps the index's file times: only changed files are hashed again.
    if Path::new(&index).is_file() {
        crate::files::copy(BUILD_CACHE, Path::new(&index), tmp.path())
            .context("cannot copy the git index")?;
    }
    let on_tmp_index = [("GIT_INDEX_FILE", tmp.path().as_os_str())];
    git(src, ["add", "--all"], &on_tmp_index)
        .context("cannot snapshot the working tree (git add --all on a temporary index)")?;
    let tree = git(src, ["write-tree"], &on_tmp_index)?;
    let head_tree = git(src, ["rev-parse", &format!("{head}^{{tree}}")], &[])?;
    if tree == head_tree {
        return Ok(None);
    }
    let fixed = OsStr::new("perfgate");
    let (email, date) = (
        OsStr::new("perfgate@localhost"),
        OsStr::new("1700000000 +0000"),
    );
    let identity = [
        ("GIT_AUTHOR_NAME", fixed),
        ("GIT_AUTHOR_EMAIL", email),
        ("GIT_AUTHOR_DATE", date),
        ("GIT_COMMITTER_NAME", fixed),
        ("GIT_COMMITTER_EMAIL", email),
        ("GIT_COMMITTER_DATE", date),
    ];
    let message = "perfgate: the working tree";
    let commit = git(
        src,
        ["commit-tree", &tree, "-p", head, "-m", message],
        &identity,
    )
    .context("cannot snapshot the working tree (git commit-tree)")?;
    Ok(Some((commit, tree)))
}

/// Puts `commit` of the checkout `src` into `dest`, a `git clone --shared` of it (objects
/// are read from the checkout; nothing is written there). `git checkout` rewrites only the
/// files that differ from the commit built before, so ninja rebuilds only what changed, and
/// every path stays the same: FDB compiles each file with its absolute path in a macro
/// (`-DCOMPILATION_UNIT=<path>`, `cmake/FlowCommands.cmake`) and its actor compiler writes
/// absolute paths into the files it generates (`#line`, `flow/actorcompiler`), so at
/// another path no compiler-cache entry would match.
fn checkout(src: &Path, commit: &str, dest: &Path) -> Result<()> {
    let update = || -> Result<()> {
        let _ = crate::files::remove_file(BUILD_CACHE, &dest.join(".git/index.lock"));
        git(
            dest,
            ["checkout", "--quiet", "--force", "--detach", commit],
            &[],
        )?;
        git(dest, ["clean", "--quiet", "-ffdx"], &[]).map(drop)
    };
    let clone = || -> Result<()> {
        let _ = crate::files::remove_dir_all(BUILD_CACHE, dest);
        let mut args: Vec<&OsStr> = ["-c", "init.defaultBranch=perfgate", "clone", "--quiet"]
            .into_iter()
            .chain(["--shared", "--no-checkout"])
            .map(OsStr::new)
            .collect();
        args.extend([src.as_os_str(), dest.as_os_str()]);
        git(src, args, &[]).map(drop)
    };
    // git ignores --shared for a shallow checkout and copies it; the clone reads the
    // checkout's objects anyway (alternates), so that later commits and the working-tree
    // snapshot, which no ref names, can be checked out.
    let share = || -> Result<()> {
        let args = [
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "objects",
        ];
        let Ok(objects) = git(src, args, &[]) else {
            return Ok(());
        };
        let alternates = dest.join(".git/objects/info/alternates");
        let listed = std::fs::read_to_string(&alternates).unwrap_or_default();
        if listed.lines().any(|l| l.trim() == objects) {
            return Ok(());
        }
        crate::files::create_dir_all(BUILD_CACHE, &dest.join(".git/objects/info")).and_then(|_| {
            crate::files::write(BUILD_CACHE, &alternates, format!("{listed}{objects}\n"))
        })
    };
    if !dest.join(".git").exists() {
        clone().with_context(|| format!("cannot clone {}", src.display()))?;
    }
    share()?;
    // A clone that still cannot see the commit: fetch the checkout's refs; a clone broken
    // otherwise: clone again (everything rebuilds).
    update()
        .or_else(|_| {
            let mut args: Vec<&OsStr> = vec![OsStr::new("fetch"), OsStr::new("--quiet")];
            args.push(src.as_os_str());
            args.extend(
                ["+HEAD:refs/perfgate/head", "+refs/*:refs/perfgate/all/*"].map(OsStr::new),
            );
            git(dest, args, &[])?;
            update()
        })
        .or_else(|_| clone().and_then(|()| share()).and_then(|()| update()))
        .with_context(|| {
            format!(
                "cannot check out {commit} of {} in {}",
                src.display(),
                dest.display()
            )
        })
}

/// Whether a variable of the gate's environment is kept from git, cmake and ninja: git's
/// `GIT_*` (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`,
/// `GIT_CONFIG_*`... point git at another repository, index or configuration than the
/// checkout's: an arm built from the wrong sources) and ninja's `NINJA_STATUS` (its status
/// line, which the progress reads). What configure reads (compilers, flags, `CMAKE_*`,
/// FDB's options) is passed: it is keyed and recorded by the build cache.
fn kept_from_tools(name: &OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.starts_with(b"GIT_") || name == b"NINJA_STATUS"
}

/// A build tool's command without the variables [`kept_from_tools`] keeps from it; the
/// gate adds its own (`GIT_INDEX_FILE` of a snapshot) afterwards.
fn tool_command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    for (name, _) in std::env::vars_os() {
        if kept_from_tools(&name) {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// The names of `vars` that [`tool_command`] removes, sorted, for the record.
fn tool_env_removed(vars: impl Iterator<Item = std::ffi::OsString>) -> Vec<String> {
    let mut removed: Vec<String> = vars
        .filter(|n| kept_from_tools(n))
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    removed.sort();
    removed
}

/// Bound on one git command on the local checkout: generous (a shared clone or a checkout
/// of FDB's ~10k files takes seconds to a minute); it only ends a git that hangs (a lock
/// held by another process, a filesystem that stopped answering).
const GIT_BOUND: Duration = Duration::from_secs(600);

/// `git -C <dir> <args>` with `env` added, within [`GIT_BOUND`]: its stdout (trimmed), or
/// an error with the command, its exit status and the end of its stderr.
fn git<A: AsRef<OsStr>>(
    dir: &Path,
    args: impl IntoIterator<Item = A>,
    env: &[(&str, &OsStr)],
) -> Result<String> {
    need_git()?;
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let what = format!(
        "`git -C {} {}`",
        dir.display(),
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut cmd = tool_command("git");
    cmd.arg("-C").arg(dir).args(&args);
    for (name, value) in env {
        cmd.env(name, value);
    }
    run_bounded("git", cmd, GIT_BOUND)
        .with_context(|| format!("cannot run {what}"))?
        .stdout_if_success(&what)
}

/// Copies [`TREE_FILES`] and cmake's record of the compiler from the build dir into a
/// revision's entry (following symlinks: the entry must not change when the slot builds
/// the next revision).
fn copy_tree(build_dir: &Path, tree: &Path) -> Result<()> {
    let compilers = ["C", "CXX"].into_iter().filter_map(|lang| {
        let f = tree::compiler_file(build_dir, lang)?;
        Some(f.strip_prefix(build_dir).ok()?.to_path_buf())
    });
    for f in TREE_FILES.iter().map(PathBuf::from).chain(compilers) {
        let (from, to) = (build_dir.join(&f), tree.join(&f));
        if let Some(parent) = to.parent() {
            crate::files::create_dir_all(BUILD_CACHE, parent)?;
        }
        // Removed first: a running gate may still execute the old file (ETXTBSY).
        let _ = crate::files::remove_file(BUILD_CACHE, &to);
        crate::files::copy(BUILD_CACHE, &from, &to)
            .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    }
    Ok(())
}

/// Runs one build step bounded by `deadline`, appending its output to `log`; a failure
/// names the step and shows the log's tail.
/// Runs one build step with its output in a file beside `log` (appended to `log` at the
/// end); `watch` gets that file's path every poll, e.g. for progress.
fn step(
    name: &str,
    cmd: Command,
    log: &Path,
    deadline: Instant,
    bound_s: u64,
    mut watch: impl FnMut(&Path),
) -> Result<()> {
    let out = log.with_extension(format!("{}.log", name.replace(' ', "-")));
    let mut child = Child::spawn(name, cmd, &out, &out.with_extension("err"))?;
    let status = child.wait_until(deadline, Duration::from_secs(bound_s), || {
        watch(&out);
        Ok(())
    });
    // One log: each step's stdout then stderr, appended.
    // The first step has no log yet; any other failed read is an error.
    let mut text = match std::fs::metadata(log) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        _ => read_output(log)?,
    };
    for f in [&out, &out.with_extension("err")] {
        text += &read_output(f)?;
        let _ = crate::files::remove_file(BUILD_CACHE, f);
    }
    crate::files::write(BUILD_CACHE, log, &text)?;
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => bail!(
            "{name} failed ({s}); the end of {}:\n{}",
            log.display(),
            tail(log, 25)
        ),
        Err(PhaseError::Timeout(..)) => Err(BuildTimeout(format!(
            "{name} did not finish within {bound_s} s (--timeout-build); see {}",
            log.display()
        ))
        .into()),
        Err(e) => bail!("{name}: {e}; see {}", log.display()),
    }
}

/// Build progress from ninja's status lines (`[166/572] Building CXX object ...`): a bar
/// on a terminal, else a line every [`NinjaProgress::EVERY`] for CI logs.
struct NinjaProgress {
    bar: indicatif::ProgressBar,
    started: Instant,
    read: Instant,
    printed: Instant,
}

impl NinjaProgress {
    /// Interval of the plain progress lines when stderr is not a terminal.
    const EVERY: Duration = Duration::from_secs(300);

    fn new() -> NinjaProgress {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "  ninja {bar:30} {pos}/{len} steps, {elapsed} so far, ~{eta} left",
            )
            .expect("valid template"),
        );
        let now = Instant::now();
        NinjaProgress {
            bar,
            started: now,
            read: now,
            printed: now,
        }
    }

    /// Reads the end of ninja's output `out` (at most once a second).
    fn update(&mut self, out: &Path) {
        if self.read.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.read = Instant::now();
        let Some((done, total)) = ninja_progress(&tail(out, 50)) else {
            return;
        };
        self.bar.set_length(total);
        self.bar.set_position(done);
        if self.bar.is_hidden() && self.printed.elapsed() >= Self::EVERY {
            self.printed = Instant::now();
            say!(
                "  ninja: {done}/{total} steps after {} min",
                self.started.elapsed().as_secs() / 60
            );
        }
    }
}

/// The last `[done/total]` status line in ninja's output; `None` before the first.
fn ninja_progress(text: &str) -> Option<(u64, u64)> {
    text.lines().rev().find_map(|line| {
        let (counts, _) = line.strip_prefix('[')?.split_once(']')?;
        let (done, total) = counts.split_once('/')?;
        Some((done.trim().parse().ok()?, total.trim().parse().ok()?))
    })
}

/// What a build of a commit is cached under, and the inputs it was made from.
struct Key {
    /// [`Provenance::configure_env`].
    configure_env: BTreeMap<String, String>,
    /// [`Provenance::compilers`].
    compilers: BTreeMap<String, String>,
    /// The 8 hex digits naming the slot and the commit's entry ([`flags_key`]).
    flags: String,
}

impl Key {
    /// The key of `commit` of `src` configured with `cmake_args` in this process's
    /// environment: what the configure reads, but compiler launchers (they change how
    /// objects are made, not what they are: hosts with and without ccache share builds).
    fn of(src: &Path, commit: &str, cmake_args: &[String]) -> Key {
        let vars = std::env::vars_os().filter_map(|(name, value)| {
            // A value that is not UTF-8 keeps its bytes, escaped (`\xff`).
            let value = value.into_string().unwrap_or_else(|v| format!("{v:?}"));
            Some((name.into_string().ok()?, value))
        });
        let configure_env = configure_env(vars, &env_options(src, commit));
        let path = std::env::var_os("PATH");
        let mut compilers: BTreeMap<String, String> = [
            ("C", "CC", &["cc", "gcc", "clang"][..]),
            ("CXX", "CXX", &["CC", "c++", "g++", "clang++"][..]),
        ]
        .into_iter()
        .map(|(lang, var, defaults)| {
            let identity = compiler_identity(
                cmake_args,
                lang,
                configure_env.get(var),
                defaults,
                path.as_deref(),
            );
            (lang.to_string(), identity)
        })
        .collect();
        if let Some(toolchain) = toolchain_file(cmake_args, &configure_env) {
            compilers.insert("toolchain file".into(), toolchain);
        }
        let keyed_args: Vec<&String> = cmake_args.iter().filter(|a| !is_launcher_arg(a)).collect();
        let mut keyed_env = configure_env.clone();
        for name in ["CC", "CXX"] {
            match keyed_env.get(name).and_then(|v| compiler_env_args(v)) {
                Some(args) => keyed_env.insert(name.to_string(), args),
                None => keyed_env.remove(name),
            };
        }
        let flags = flags_key(&keyed_args, &keyed_env, &compilers);
        Key {
            configure_env,
            compilers,
            flags,
        }
    }
}

/// The environment variables cmake reads when it makes a new cache, besides its own
/// `CMAKE_*` ones: the compilers and the flags it starts `CMAKE_<LANG>_FLAGS` and the linker
/// flags from (cmake-env-variables(7), "Environment Variables for Languages", `LDFLAGS`).
/// The gate deletes the slot's cache before each configure, so these matter on every build.
const COMPILER_ENV: [&str; 7] = [
    "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "ASM", "ASMFLAGS",
];

/// cmake's own environment variables that do not change what is built: parallelism,
/// output, the launcher, and those the gate's arguments override (`-G`, the build type).
const CMAKE_ENV_NOT_BUILT: [&str; 8] = [
    "CMAKE_BUILD_PARALLEL_LEVEL",
    "CMAKE_COLOR_DIAGNOSTICS",
    "CMAKE_EXPORT_COMPILE_COMMANDS",
    "CMAKE_NO_VERBOSE",
    "CMAKE_C_COMPILER_LAUNCHER",
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "CMAKE_GENERATOR",
    "CMAKE_BUILD_TYPE",
];

/// Variables FDB's cmake files name that do not change what is built: the dynamic
/// loader's path, which FDB only extends for its own test runs
/// (`cmake/ConfigureCompiler.cmake`) and which `cargo run` sets for the gate itself (its
/// target dir and toolchain), the user's name (`documentation/CMakeLists.txt`), and
/// `USE_CCACHE`, a compiler launcher.
const FDB_ENV_NOT_BUILT: [&str; 5] = [
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "USER",
    "USERNAME",
    "USE_CCACHE",
];

/// The environment, of `vars` (name, value), that a configure in a new cache reads:
/// [`COMPILER_ENV`], cmake's `CMAKE_*` variables (e.g. `CMAKE_TOOLCHAIN_FILE`) but
/// [`CMAKE_ENV_NOT_BUILT`], set and not empty; and `fdb_options`, the names FDB's
/// configure reads ([`env_options`]) but [`FDB_ENV_NOT_BUILT`], when set (empty too:
/// `env_set` takes it).
fn configure_env(
    vars: impl IntoIterator<Item = (String, String)>,
    fdb_options: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(name, value)| {
            // FDB's `env_set` takes a defined variable's value, empty too.
            (fdb_options.contains(name) && !FDB_ENV_NOT_BUILT.contains(&name.as_str()))
                || (!value.is_empty()
                    && (COMPILER_ENV.contains(&name.as_str())
                        || (name.starts_with("CMAKE_")
                            && !CMAKE_ENV_NOT_BUILT.contains(&name.as_str()))))
        })
        .collect()
}

/// The environment variables the cmake files of `commit` read: those FDB's
/// `env_set(NAME default type doc)` reads (`cmake/CompilerChecks.cmake`; `USE_JEMALLOC`,
/// `USE_LD`, `USE_LIBCXX`, `PROFILE_INSTR_USE`, ...), which change the build as a `-D`
/// does, and those named `$ENV{NAME}` (`jemalloc_ROOT` and the like in its `Find*.cmake`).
/// Empty for a tree without them.
fn env_options(src: &Path, commit: &str) -> BTreeSet<String> {
    let pattern = r"env_set\([A-Za-z0-9_]+|ENV\{[A-Za-z0-9_]+\}";
    let args = [
        "grep",
        "-h",
        "-o",
        "-E",
        pattern,
        commit,
        "--",
        "*.cmake",
        "*CMakeLists.txt",
    ];
    // `git grep` exits 1 when nothing matches: a tree without such options.
    let out = git(src, args, &[]).unwrap_or_default();
    out.lines()
        .filter_map(|l| {
            let name = l
                .strip_prefix("env_set(")
                .or_else(|| l.strip_prefix("ENV{")?.strip_suffix('}'))?;
            Some(name.to_string())
        })
        .collect()
}

/// Compiler launchers: `ccache`'s and `sccache`'s own binaries, also when a compiler's
/// name links to them (Debian's `/usr/lib/ccache` directory on PATH).
const LAUNCHERS: [&str; 2] = ["ccache", "sccache"];

/// The value the last `-D<name>=` or `-D<name>:<TYPE>=` of `cmake_args` gives `name` (the
/// one cmake keeps).
fn last_define(cmake_args: &[String], name: &str) -> Option<String> {
    cmake_args.iter().rev().find_map(|a| {
        let (given, value) = a.strip_prefix("-D")?.split_once('=')?;
        (given.split(':').next() == Some(name)).then(|| value.to_string())
    })
}

/// Whether `arg` sets a compiler launcher (`-DCMAKE_<LANG>_COMPILER_LAUNCHER[:TYPE]=`).
fn is_launcher_arg(arg: &str) -> bool {
    arg.split_once('=').is_some_and(|(name, _)| {
        let name = name.split(':').next().unwrap_or(name);
        name.starts_with("-DCMAKE_") && name.ends_with("_COMPILER_LAUNCHER")
    })
}

/// The first executable `name` resolves to (on `search_path`, PATH's value, when it has no
/// `/`), by real path,
/// that is not a launcher: behind Debian's ccache links, the compiler ccache runs (the
/// next of that name on PATH). `None` when there is none.
fn real_compiler(name: &str, search_path: Option<&OsStr>) -> Option<PathBuf> {
    let launcher = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| LAUNCHERS.contains(&n))
    };
    which::which_in_all(name, search_path, std::env::current_dir().ok()?)
        .ok()?
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .find(|p| !launcher(p))
}

/// The compiler cmake will find for `lang` (`C`, `CXX`), as `<real path>: <first line of
/// its --version>`: the last `-DCMAKE_<lang>_COMPILER` in `cmake_args`, else `env`
/// (`CC`/`CXX`; its first word that is not a launcher, as in `CXX="ccache g++"`), else the
/// first of `defaults` (cmake's own search order, `CMakeDetermine<lang>Compiler.cmake`) on
/// PATH; launchers are seen through ([`real_compiler`]). The real path sees through
/// `update-alternatives` and `c++` links, the version line through an upgrade in place.
/// The name as given when it is not found (cmake will say so). A toolchain file may choose
/// another ([`toolchain_file`] keys it; the tree's `CMakeCache.txt` has what cmake used).
fn compiler_identity(
    cmake_args: &[String],
    lang: &str,
    env: Option<&String>,
    defaults: &[&str],
    search_path: Option<&OsStr>,
) -> String {
    let asked: Vec<String> = match last_define(cmake_args, &format!("CMAKE_{lang}_COMPILER")) {
        Some(value) => vec![value],
        None => env
            .map(|e| e.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
    };
    let names: Vec<String> = if asked.is_empty() {
        defaults.iter().map(|d| d.to_string()).collect()
    } else {
        asked.clone()
    };
    let Some(path) = names.iter().find_map(|n| real_compiler(n, search_path)) else {
        return asked
            .first()
            .cloned()
            .unwrap_or_else(|| "(none found)".to_string());
    };
    let version = version_line(&path, Duration::from_secs(10));
    format!("{}: {version}", path.display())
}

/// The first line `compiler --version` prints (stdout, else stderr), within `bound` (a
/// wrapper that hangs must not hang the gate before its build's bound applies); empty when
/// it fails or takes longer.
fn version_line(compiler: &Path, bound: Duration) -> String {
    let mut cmd = Command::new(compiler);
    cmd.arg("--version");
    let Ok(o) = run_bounded("compiler --version", cmd, bound) else {
        return String::new();
    };
    let text = if o.stdout.trim().is_empty() {
        o.stderr
    } else {
        o.stdout
    };
    crate::process::excerpt(text.lines().next().unwrap_or_default(), 1)
}

/// `CC`/`CXX` as keyed: the words after the compiler and any launcher before it (`-m32` of
/// `CXX="ccache g++ -m32"`), since the compiler itself is keyed by what it is
/// ([`compiler_identity`]): `g++`, `/usr/bin/g++` and `ccache g++` are one build. `None`
/// when nothing follows.
fn compiler_env_args(value: &str) -> Option<String> {
    let launcher = |w: &&str| {
        Path::new(w)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| LAUNCHERS.contains(&n))
    };
    let args: Vec<&str> = value
        .split_whitespace()
        .skip_while(launcher)
        .skip(1)
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

/// The toolchain file a configure reads (the last `-DCMAKE_TOOLCHAIN_FILE` argument, else
/// the `CMAKE_TOOLCHAIN_FILE` environment variable), as `<path>: sha256 <first 16 hex>` of
/// its contents, since it can choose the compilers and flags; `unreadable` when it cannot
/// be read here (cmake will say why). `None` without one.
fn toolchain_file(cmake_args: &[String], env: &BTreeMap<String, String>) -> Option<String> {
    let path = last_define(cmake_args, "CMAKE_TOOLCHAIN_FILE")
        .or_else(|| env.get("CMAKE_TOOLCHAIN_FILE").cloned())?;
    let contents = match crate::input::read(Path::new(&path)) {
        Ok(bytes) => {
            let digest = sha2::Sha256::digest(&bytes);
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256 {hex}")
        }
        Err(_) => "unreadable".to_string(),
    };
    Some(format!("{path}: {contents}"))
}

/// The 8 hex digits naming a slot and its entries: the first of the SHA-256 of the cmake
/// arguments, the configure environment and the compilers' identities, the same with every
/// Rust toolchain (std's `DefaultHasher` may change between releases).
fn flags_key(
    cmake_args: &[&String],
    env: &BTreeMap<String, String>,
    compilers: &BTreeMap<String, String>,
) -> String {
    let text = serde_json::json!({"cmake_args": cmake_args, "compilers": compilers, "env": env})
        .to_string();
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// `provenance` for an entry built earlier: its build time is the one its stamp records.
fn cache_hit(mut provenance: Provenance, stamp: &Path) -> Provenance {
    provenance.cache_hit = true;
    provenance.build_s = crate::input::read_text(stamp)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v[0]["build_s"].as_f64())
        .unwrap_or(0.0);
    provenance
}

/// What `arm` is built from: `--baseline`/`--experiment`, else the merge base with upstream
/// main (baseline) or the working tree (experiment).
fn source_of(config: &SourceConfig, arm: Arm) -> Result<Source> {
    Ok(match (arm, &config.baseline_rev, &config.experiment_rev) {
        (Arm::Baseline, Some(rev), _) | (Arm::Experiment, _, Some(rev)) => {
            Source::Revision(rev.clone())
        }
        (Arm::Baseline, None, _) => Source::Revision(default_baseline(&config.fdb_src)?),
        (Arm::Experiment, _, None) => Source::WorkingTree,
    })
}

/// The commit each arm would be built from, without building: a revision resolved, the
/// working tree as its snapshot commit (the same one the build makes). For checks that
/// must come before hours of building. Errors: as the build's for a bad revision.
pub fn commits(config: &SourceConfig, arms: &[Arm]) -> Result<Vec<(Arm, String)>> {
    let cache = crate::results::fs::target_dir()?
        .join("perfgate")
        .join("fdb");
    arms.iter()
        .map(|&arm| {
            let source = source_of(config, arm)?;
            Ok((arm, resolve(&config.fdb_src, &source, &cache)?.built))
        })
        .collect()
}

/// Of knob `names`, those that no C++ source of `commit` in `src` defines: FDB defines a
/// knob as `init( PAGE_CACHE_4K, ... )` (`flow/Knobs.cpp`, `fdbclient/ServerKnobs.cpp`,
/// `ClientKnobs.cpp`; any case, as fdbserver takes it as `--knob_page_cache_4k`). Such a knob
/// would be refused by the built fdbserver at the first trial, after the build. Names are
/// letters, digits and `_` (`Knob::parse_user`), so they go into the pattern as they are.
/// Errors: git fails or hangs (bounded).
pub fn knobs_unknown_at(src: &Path, commit: &str, names: &[&str]) -> Result<Vec<String>> {
    let mut unknown = Vec::new();
    for name in names {
        let mut cmd = tool_command("git");
        cmd.arg("-C")
            .arg(src)
            .args(["grep", "-q", "-i", "-E", "-e"])
            .arg(format!(r"init\(\s*{name}\s*,"))
            .args([commit, "--", "*.cpp", "*.h"]);
        let out = run_bounded("git grep", cmd, Duration::from_secs(120))?;
        match out.status.code() {
            Some(0) => {}
            Some(1) => unknown.push(name.to_string()),
            _ => bail!(
                "`git grep {name} {commit}` in {} failed ({}): {}",
                src.display(),
                out.status,
                crate::process::excerpt(&out.stderr, 5)
            ),
        }
    }
    Ok(unknown)
}

/// Builds `arms` from `--fdb-src`, in order: the baseline at `--baseline` (default: the
/// merge base with upstream main), the experiment at `--experiment` (default: the working
/// tree). Prints a line per arm to stderr as it starts and ends.
pub fn build_arms(config: &SourceConfig, arms: &[Arm]) -> Result<Vec<(Arm, Provenance)>> {
    check_tools()?;
    let src = &config.fdb_src;
    let settings = BuildSettings {
        cmake_args: config.cmake_args.clone(),
        jobs: config.jobs,
        timeout_s: config.timeout_s,
    };
    let cache = crate::results::fs::target_dir()?
        .join("perfgate")
        .join("fdb");
    let mut built = Vec::new();
    let removed = tool_env_removed(std::env::vars_os().map(|(n, _)| n));
    if !removed.is_empty() {
        say!(
            "not passed to git, cmake and ninja: {} (they would point git elsewhere or change \
             ninja's status line)",
            removed.join(", ")
        );
    }
    for &arm in arms {
        let source = source_of(config, arm)?;
        say!(
            "building the {arm} arm ({source}) from {} ...",
            src.display()
        );
        let mut p = build(src, &source, &settings, &cache)
            .with_context(|| format!("cannot build the {arm} arm from {}", src.display()))?;
        p.arm = arm.to_string();
        say!(
            "{arm}: {} ({}), {}",
            p.build_dir.display(),
            &p.commit[..p.commit.len().min(12)],
            if p.cache_hit && p.build_s > 0.0 {
                format!("cached (built in {:.0} s by an earlier run)", p.build_s)
            } else if p.cache_hit {
                "cached".to_string()
            } else {
                format!("built in {:.0} s", p.build_s)
            }
        );
        built.push((arm, p));
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_and_ninja_variables_are_kept_from_the_build_tools() {
        // GIT_DIR exported would build another repository's sources.
        let vars = [
            "PATH",
            "GIT_DIR",
            "CC",
            "NINJA_STATUS",
            "GIT_WORK_TREE",
            "CMAKE_PREFIX_PATH",
        ]
        .map(std::ffi::OsString::from);
        assert_eq!(
            tool_env_removed(vars.into_iter()),
            ["GIT_DIR", "GIT_WORK_TREE", "NINJA_STATUS"]
        );
        assert!(!kept_from_tools(OsStr::new("CXX")));
    }

    #[test]
    fn cmake_versions_are_read_from_the_first_line() {
        // Debian 12's (3.25.1, too old for FDB main's generate step), and the PyPI wheel's.
        let debian = "cmake version 3.25.1\n\nCMake suite maintained and supported by Kitware.\n";
        assert_eq!(cmake_version(debian), Some((3, 25)));
        assert_eq!(cmake_version("cmake version 4.4.5\n"), Some((4, 4)));
        assert!(cmake_version(debian).unwrap() < (3, 26));
        assert!(cmake_version("cmake version 4.4.5").unwrap() >= (3, 26));
        for bad in ["", "cmake version x.y", "ninja 1.11"] {
            assert_eq!(cmake_version(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_flags_key_is_sha256_of_args_env_and_compilers() {
        let args = ["-G".to_string(), "Ninja".into()];
        let env = BTreeMap::from([("CXX".to_string(), "clang++-19".to_string())]);
        let compilers = BTreeMap::from([("CXX".to_string(), "/c: v1".to_string())]);
        // printf '%s' '{"cmake_args":["-G","Ninja"],"compilers":{"CXX":"/c: v1"},"env":{"CXX":"clang++-19"}}' | sha256sum
        let key = flags_key(&args.iter().collect::<Vec<_>>(), &env, &compilers);
        assert_eq!(key, "bbc88c90");
        assert_ne!(flags_key(&[&args[0]], &env, &compilers), key);
        assert_ne!(
            flags_key(&[&args[0], &args[1]], &BTreeMap::new(), &compilers),
            key
        );
        assert_ne!(
            flags_key(&[&args[0], &args[1]], &env, &BTreeMap::new()),
            key
        );
    }

    #[test]
    fn the_configure_env_is_compilers_flags_cmake_vars_and_fdb_options() {
        let vars = [
            ("CXX", "clang++-19"),
            ("CFLAGS", ""),
            ("CMAKE_TOOLCHAIN_FILE", "/tc.cmake"),
            ("CMAKE_BUILD_PARALLEL_LEVEL", "8"),
            ("CMAKE_CXX_COMPILER_LAUNCHER", "ccache"),
            ("USE_JEMALLOC", "OFF"),
            ("USE_LD", ""),
            ("USE_OTHER", "ON"),
            ("LD_LIBRARY_PATH", "/build/target/debug/deps"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let fdb = BTreeSet::from(["USE_JEMALLOC", "USE_LD", "LD_LIBRARY_PATH"].map(String::from));
        let env = configure_env(vars, &fdb);
        assert_eq!(
            env.keys().collect::<Vec<_>>(),
            ["CMAKE_TOOLCHAIN_FILE", "CXX", "USE_JEMALLOC", "USE_LD"],
            "an empty CFLAGS is unset, an empty FDB option is set (env_set reads it); \
             parallelism, the launcher and names nothing reads are not keyed"
        );
    }

    #[test]
    fn fdb_env_options_are_read_from_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::create_dir(repo.join("cmake")).unwrap();
        // As FDB's cmake/ConfigureCompiler.cmake calls it.
        std::fs::write(
            repo.join("cmake/ConfigureCompiler.cmake"),
            "env_set(USE_JEMALLOC ON BOOL \"Link against jemalloc\")\n\
             env_set(USE_LD \"${default_linker}\" STRING \"The linker to use\")\n\
             find_path(JEMALLOC_INCLUDE_DIR jemalloc.h HINTS $ENV{jemalloc_ROOT})\n",
        )
        .unwrap();
        std::fs::write(repo.join("notes.txt"), "env_set(NOT_CMAKE x)\n").unwrap();
        for args in [
            &["init", "-q"][..],
            &["add", "."],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "commit",
                "-q",
                "-m",
                "c",
            ],
        ] {
            git(repo, args, &[]).unwrap();
        }
        // The commit, not the files: a later edit does not count.
        std::fs::write(repo.join("cmake/ConfigureCompiler.cmake"), "").unwrap();
        assert_eq!(
            env_options(repo, "HEAD"),
            BTreeSet::from(["USE_JEMALLOC", "USE_LD", "jemalloc_ROOT"].map(String::from))
        );
        assert!(env_options(repo, "no-such-rev").is_empty());
    }

    /// An executable script at `dir/name` that prints `version` for `--version`.
    fn fake_compiler(dir: &Path, name: &str, version: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\necho more\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        path
    }

    #[test]
    fn a_compiler_is_identified_by_its_real_path_and_version_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = fake_compiler(dir.path(), "cxx-a", "fake c++ 1.0");
        let b = fake_compiler(dir.path(), "cxx-b", "fake c++ 2.0");
        let link = dir.path().join("c++");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let arg = |p: &Path| vec![format!("-DCMAKE_CXX_COMPILER={}", p.display())];
        let id = |args: &[String], lang, env: Option<&str>, defaults: &[&str]| {
            compiler_identity(args, lang, env.map(str::to_string).as_ref(), defaults, None)
        };
        let real_a = std::fs::canonicalize(&a).unwrap();
        let id_a = format!("{}: fake c++ 1.0", real_a.display());
        assert_eq!(id(&arg(&a), "CXX", None, &[]), id_a);
        // Through a link (update-alternatives), the compiler it points at.
        assert_eq!(id(&arg(&link), "CXX", None, &[]), id_a);
        // The argument wins over the environment; the last argument wins; a typed one counts.
        let env = b.display().to_string();
        assert_eq!(id(&arg(&a), "CXX", Some(&env), &[]), id_a);
        let typed = vec![
            format!("-DCMAKE_CXX_COMPILER={}", b.display()),
            format!("-DCMAKE_CXX_COMPILER:FILEPATH={}", a.display()),
        ];
        assert_eq!(id(&typed, "CXX", None, &[]), id_a);
        assert!(id(&[], "CXX", Some(&format!("{env} -m64")), &[]).ends_with("fake c++ 2.0"));
        assert!(id(&arg(&b), "C", Some(&env), &[]).ends_with("fake c++ 2.0"));
        assert_eq!(
            id(&[], "CXX", None, &["no-such-compiler-xyz"]),
            "(none found)"
        );
        assert_eq!(id(&[], "CXX", Some("no-such-cc -m64"), &[]), "no-such-cc");
    }

    #[test]
    fn a_compiler_behind_ccache_is_the_one_ccache_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (launchers, gcc, clang) = (
            dir.path().join("lib-ccache"),
            dir.path().join("gcc"),
            dir.path().join("clang"),
        );
        for d in [&launchers, &gcc, &clang] {
            std::fs::create_dir(d).unwrap();
        }
        let ccache = fake_compiler(dir.path(), "ccache", "ccache version 4.7.5");
        // Debian's ccache setup: /usr/lib/ccache/c++ -> ../../bin/ccache first on PATH.
        std::os::unix::fs::symlink(&ccache, launchers.join("c++")).unwrap();
        fake_compiler(&gcc, "c++", "g++ (Debian 12.2.0-14) 12.2.0");
        fake_compiler(&clang, "c++", "Debian clang version 19.1.7");
        let search = |dirs: &[&PathBuf]| std::env::join_paths(dirs).unwrap();
        let id = |env: Option<&str>, dirs: &[&PathBuf]| {
            compiler_identity(
                &[],
                "CXX",
                env.map(str::to_string).as_ref(),
                &["c++"],
                Some(&search(dirs)),
            )
        };
        let with_gcc = id(None, &[&launchers, &gcc]);
        assert!(
            with_gcc.ends_with(": g++ (Debian 12.2.0-14) 12.2.0"),
            "{with_gcc}"
        );
        assert!(id(None, &[&launchers, &clang]).ends_with(": Debian clang version 19.1.7"));
        // CXX="ccache c++": the compiler is the word after the launcher.
        let prefixed = format!("{} c++", ccache.display());
        assert_eq!(id(Some(&prefixed), &[&gcc]), with_gcc);
        assert!(id(Some(&prefixed), &[&clang]).ends_with("clang version 19.1.7"));
        // Launcher arguments, the gate's or the user's, are not part of the key.
        for arg in [
            "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
            "-DCMAKE_C_COMPILER_LAUNCHER:FILEPATH=/usr/bin/sccache",
        ] {
            assert!(is_launcher_arg(arg), "{arg}");
        }
        assert!(!is_launcher_arg("-DCMAKE_CXX_COMPILER=clang++-19"));
    }

    #[test]
    fn cc_and_cxx_are_keyed_by_what_follows_the_compiler() {
        assert_eq!(compiler_env_args("g++"), None);
        assert_eq!(compiler_env_args("/usr/bin/g++"), None);
        assert_eq!(compiler_env_args("ccache g++"), None);
        assert_eq!(
            compiler_env_args("/usr/bin/ccache g++ -m32"),
            Some("-m32".to_string())
        );
        assert_eq!(
            compiler_env_args("clang++ -stdlib=libc++ -m64").as_deref(),
            Some("-stdlib=libc++ -m64")
        );
    }

    #[test]
    fn a_compiler_version_that_hangs_is_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let slow = dir.path().join("slow-cc");
        std::fs::write(&slow, "#!/bin/sh\nsleep 30\necho late\n").unwrap();
        std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert_eq!(version_line(&slow, Duration::from_millis(300)), "");
        let quick = fake_compiler(dir.path(), "cc", "cc 1.0");
        assert_eq!(version_line(&quick, Duration::from_secs(30)), "cc 1.0");
    }

    #[test]
    fn a_toolchain_file_is_keyed_by_its_contents() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tc.cmake");
        std::fs::write(&file, "set(CMAKE_CXX_COMPILER g++-12)\n").unwrap();
        let arg = vec![format!("-DCMAKE_TOOLCHAIN_FILE={}", file.display())];
        let none = BTreeMap::new();
        let first = toolchain_file(&arg, &none).unwrap();
        assert!(
            first.starts_with(&format!("{}: sha256 ", file.display())),
            "{first}"
        );
        std::fs::write(&file, "set(CMAKE_CXX_COMPILER clang++-19)\n").unwrap();
        assert_ne!(toolchain_file(&arg, &none).unwrap(), first);
        let env = BTreeMap::from([(
            "CMAKE_TOOLCHAIN_FILE".to_string(),
            file.display().to_string(),
        )]);
        assert_eq!(toolchain_file(&[], &env), toolchain_file(&arg, &none));
        assert_eq!(toolchain_file(&[], &none), None);
        let missing = vec!["-DCMAKE_TOOLCHAIN_FILE:FILEPATH=/no/such.cmake".to_string()];
        assert_eq!(
            toolchain_file(&missing, &none).unwrap(),
            "/no/such.cmake: unreadable"
        );
    }

    #[test]
    fn ninja_progress_is_the_last_status_line() {
        let out = "ninja: Entering directory `build'\n\
                   [1/572] Building CXX object flow/CMakeFiles/flow.dir/Arena.cpp.o\n\
                   [166/572] Building CXX object fdbclient/CMakeFiles/x.cpp.o\n\
                   clang++: warning: argument unused [-Wunused]\n";
        assert_eq!(ninja_progress(out), Some((166, 572)));
        assert_eq!(ninja_progress("ninja: Entering directory `build'\n"), None);
        assert_eq!(ninja_progress("[x/572] odd\n[-1/2] odd"), None);
        assert_eq!(ninja_progress(""), None);
    }
}
