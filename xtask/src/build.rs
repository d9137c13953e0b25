//! Build stage: an FDB checkout and a revision (or its working tree) -> a build tree with
//! `bin/fdbserver`, `bin/fdbcli`, `bin/mako`, `lib/libfdb_c.so`.
//!
//! `cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_MAKO=ON` (plus `--cmake-arg`s and a
//! compiler launcher, ccache or sccache, when found), then `ninja fdbserver fdbcli mako
//! fdb_c` (the FDB targets the gate needs, nothing else), in a cache under the cargo target
//! dir (`<target>/perfgate/fdb`):
//!
//! - `slot-<flags>/`: one per set of configure flags; `src/` is a `git clone --shared` of the
//!   checkout and `build/` its build dir. Revisions are built here one after another: a
//!   checkout changes only the files that differ, so the second arm of an A/B rebuilds only
//!   what its diff touches (minutes, not the hours of a cold FDB build on a small host).
//! - `<commit>-<flags>/`: a revision's tree, the files the gate runs copied out of the
//!   slot, with `build.log` and `stamp.json`; a second run with the same revision and
//!   flags builds nothing.
//! - `worktree-<checkout>-<flags>/build/`: the working tree (the experiment by default:
//!   uncommitted changes included), built from the checkout itself, incrementally.
//!
//! Every build is bounded in time; its output goes to `build.log`, and a failure shows the
//! log's tail.

use std::{
    hash::{Hash, Hasher},
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant, SystemTime},
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xshell::{cmd, Shell};

use crate::{
    config::UsageError,
    supervise::{tail, Child, PhaseError},
};

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
    /// Hash of `git diff HEAD` and the untracked files' names, when dirty.
    pub diff_hash: Option<String>,
    /// The full cmake command line's arguments.
    pub cmake_args: Vec<String>,
    /// Wall time of this invocation's configure + build, seconds (0 on a cache hit).
    pub build_s: f64,
    /// Whether an earlier build was reused unchanged.
    pub cache_hit: bool,
    /// The build tree.
    pub build_dir: PathBuf,
    /// The build's log.
    pub log: PathBuf,
}

/// Checks that cmake, ninja and a C++ compiler are installed, naming the Debian/Ubuntu
/// package when one is not.
pub fn check_tools() -> Result<()> {
    for (tool, package) in [
        (
            "cmake",
            "cmake (FDB needs 3.30 or newer: `pip install cmake` has it)",
        ),
        ("ninja", "ninja-build"),
        ("git", "git"),
    ] {
        if which::which(tool).is_err() {
            return Err(UsageError(format!(
                "{tool} is not installed: apt-get install {package}"
            ))
            .into());
        }
    }
    if ["c++", "clang++", "g++"]
        .iter()
        .all(|c| which::which(c).is_err())
    {
        return Err(
            UsageError("no C++ compiler found: apt-get install clang (or g++)".into()).into(),
        );
    }
    Ok(())
}

/// The default baseline: the merge base of HEAD with the upstream main branch (the first
/// of `origin/main`, `upstream/main`, `origin/master`, `main` that exists).
pub fn default_baseline(sh: &Shell, src: &Path) -> Result<String> {
    for upstream in ["origin/main", "upstream/main", "origin/master", "main"] {
        if let Ok(base) = cmd!(sh, "git -C {src} merge-base HEAD {upstream}")
            .quiet()
            .ignore_stderr()
            .read()
        {
            return Ok(base.trim().to_string());
        }
    }
    bail!(
        "cannot find the merge base of HEAD in {} with origin/main, upstream/main, origin/master \
         or main: give --baseline REV",
        src.display()
    )
}

/// Builds `source` of the checkout `src` under `cache`, or reuses an earlier build.
pub fn build(
    sh: &Shell,
    src: &Path,
    source: &Source,
    settings: &BuildSettings,
    cache: &Path,
) -> Result<Provenance> {
    let head = |rev: &str| -> Result<String> {
        let spec = format!("{rev}^{{commit}}");
        let out = cmd!(sh, "git -C {src} rev-parse --verify {spec}")
            .quiet()
            .ignore_stderr()
            .read()
            .map_err(|_| UsageError(format!("'{rev}' is not a revision of {}", src.display())))?;
        Ok(out.trim().to_string())
    };
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
    let flags = short_hash(&cmake_args);
    let (asked, commit, dirty, diff_hash) = match source {
        Source::Revision(rev) => (rev.clone(), head(rev)?, false, None),
        Source::WorkingTree => {
            let diff = cmd!(sh, "git -C {src} diff HEAD")
                .quiet()
                .read()
                .unwrap_or_default();
            let untracked = cmd!(sh, "git -C {src} ls-files --others --exclude-standard")
                .quiet()
                .read()
                .unwrap_or_default();
            let dirty = !diff.is_empty() || !untracked.is_empty();
            let diff_hash = dirty.then(|| short_hash(&(diff, untracked)));
            ("working tree".to_string(), head("HEAD")?, dirty, diff_hash)
        }
    };
    // Revisions: built one after another in one slot per set of configure flags (a clone
    // of the checkout and its build dir, at a fixed path), then the tree's files are copied
    // into an entry per commit. The working tree: built in place into its own build dir.
    let (source_dir, work, tree) = match source {
        Source::Revision(_) => {
            let slot = cache.join(format!("slot-{flags}"));
            let entry = cache.join(format!("{}-{flags}", &commit[..12]));
            (slot.join("src"), slot, entry)
        }
        Source::WorkingTree => {
            let dir = cache.join(format!(
                "worktree-{}-{flags}",
                short_hash(&src.canonicalize().unwrap_or(src.to_path_buf()))
            ));
            (src.to_path_buf(), dir.clone(), dir.join("build"))
        }
    };
    let build_dir = work.join("build");
    let is_revision = matches!(source, Source::Revision(_));
    let log = if is_revision { &tree } else { &work }.join("build.log");
    let stamp = tree.join("stamp.json");
    let mut provenance = Provenance {
        arm: String::new(),
        asked,
        commit: commit.clone(),
        dirty,
        diff_hash,
        cmake_args: cmake_args.clone(),
        build_s: 0.0,
        cache_hit: false,
        build_dir: tree.clone(),
        log: log.clone(),
    };
    for dir in [&build_dir, &tree] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // One build per slot (or working-tree build dir) at a time: two gates on one host may
    // want the same commit; the second waits, then finds it built.
    let lock = std::fs::File::create(work.join("lock"))
        .with_context(|| format!("cannot create {}", work.join("lock").display()))?;
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", work.display()))?;
    if is_revision && stamp.is_file() && TREE_FILES.iter().all(|f| tree.join(f).is_file()) {
        provenance.cache_hit = true;
        return Ok(provenance);
    }
    let _ = std::fs::remove_file(&stamp);
    let _ = std::fs::remove_file(&log);
    let started = Instant::now();
    if is_revision {
        checkout(sh, src, &commit, &source_dir)?;
    }
    let deadline = started + Duration::from_secs(settings.timeout_s);
    // Every build configures: FDB's configure step writes the source version (the commit)
    // into the build, and a checkout alone would not redo it.
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(&source_dir)
        .arg("-B")
        .arg(&build_dir)
        .args(&cmake_args);
    step(
        "cmake configure",
        configure,
        &log,
        deadline,
        settings.timeout_s,
        |_| {},
    )?;
    let mut ninja = Command::new("ninja");
    ninja
        .arg("-C")
        .arg(&build_dir)
        .arg(format!("-j{}", settings.jobs))
        .args(TARGETS);
    let mut progress = NinjaProgress::new();
    step("ninja", ninja, &log, deadline, settings.timeout_s, |out| {
        progress.update(out)
    })?;
    progress.bar.finish_and_clear();
    if is_revision {
        copy_tree(&build_dir, &tree)?;
    }
    provenance.build_s = started.elapsed().as_secs_f64();
    let when = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    crate::bench::write(&stamp, &crate::bench::json(&(&provenance, when)))?;
    Ok(provenance)
}

/// The files of a build tree the gate uses: what a revision's cache entry keeps.
const TREE_FILES: [&str; 5] = [
    "bin/fdbserver",
    "bin/fdbcli",
    "bin/mako",
    "lib/libfdb_c.so",
    "CMakeCache.txt",
];

/// Puts `commit` of the checkout `src` into `dest`, a `git clone --shared` of it (objects
/// are read from the checkout; nothing is written there). `git checkout` rewrites only the
/// files that differ from the commit built before, so ninja rebuilds only what changed, and
/// every path stays the same: FDB compiles each file with its absolute path in a macro
/// (`-DCOMPILATION_UNIT=<path>`, `cmake/FlowCommands.cmake`) and its actor compiler writes
/// absolute paths into the files it generates (`#line`, `flow/actorcompiler`), so at
/// another path no compiler-cache entry would match.
fn checkout(sh: &Shell, src: &Path, commit: &str, dest: &Path) -> Result<()> {
    let attempt = |fresh: bool| -> Result<()> {
        if fresh || !dest.join(".git").exists() {
            let _ = std::fs::remove_dir_all(dest);
            cmd!(sh, "git clone --quiet --shared --no-checkout {src} {dest}")
                .quiet()
                .run()?;
        }
        cmd!(
            sh,
            "git -C {dest} checkout --quiet --force --detach {commit}"
        )
        .quiet()
        .run()?;
        cmd!(sh, "git -C {dest} clean --quiet -ffdx")
            .quiet()
            .run()?;
        Ok(())
    };
    // A clone the checkout's `git gc` pulled objects from under: clone it again.
    attempt(false).or_else(|_| attempt(true)).with_context(|| {
        format!(
            "cannot check out {commit} of {} in {}",
            src.display(),
            dest.display()
        )
    })
}

/// Copies [`TREE_FILES`] and cmake's record of the compiler from the build dir into a
/// revision's entry (following symlinks: the entry must not change when the slot builds
/// the next revision).
fn copy_tree(build_dir: &Path, tree: &Path) -> Result<()> {
    let compiler = crate::fdbtree::compiler_file(build_dir)
        .and_then(|f| Some(f.strip_prefix(build_dir).ok()?.to_path_buf()));
    for f in TREE_FILES.iter().map(PathBuf::from).chain(compiler) {
        let (from, to) = (build_dir.join(&f), tree.join(&f));
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // Removed first: a running gate may still execute the old file (ETXTBSY).
        let _ = std::fs::remove_file(&to);
        std::fs::copy(&from, &to)
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
    let mut text = std::fs::read_to_string(log).unwrap_or_default();
    for f in [&out, &out.with_extension("err")] {
        text += &std::fs::read_to_string(f).unwrap_or_default();
        let _ = std::fs::remove_file(f);
    }
    std::fs::write(log, &text).with_context(|| format!("cannot write {}", log.display()))?;
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
            eprintln!(
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

fn short_hash(value: &impl Hash) -> String {
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    format!("{:016x}", h.finish())[..8].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
