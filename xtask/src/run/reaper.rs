//! Run stage: the run's own directory on the work dir and the cleanup after a gate that
//! died without tearing down: a [`Reaper`] process beside the gate, and the next gate's
//! cleanup of stale run dirs. Only what a lock proves to be a gate's run dir is touched.

use std::{
    fs::File,
    os::unix::{
        fs::{MetadataExt as _, OpenOptionsExt as _},
        process::CommandExt,
    },
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, Result};

use crate::process::{kill_mentioning, process_running};

/// Prefix of a run's directory on the work dir, `perfgate-<gate pid>-<nonce>`.
pub const RUN_DIR_PREFIX: &str = "perfgate-";

/// The lock file in every run dir. The gate holds an exclusive `flock` on it for its
/// whole life, so a run dir whose lock can be taken belongs to a gate that is gone (in
/// any PID namespace: the lock lives on the file, not on a pid), and a `perfgate-*`
/// directory without one is not a gate's and is left alone.
pub const RUN_LOCK: &str = ".perfgate-run.lock";

/// The file in every run dir where the gate writes the process group of every child it
/// starts (`process::record_groups_in`): after its death, only processes of those groups
/// are the run's.
pub const RUN_GROUPS: &str = ".perfgate-groups";

/// A run's own directory on the work dir, created exclusively (two gates never share
/// one, even with equal pids in different PID namespaces) and locked while the gate
/// lives. Dropping it removes the lock and the directory if it is empty.
pub struct RunDir {
    pub path: PathBuf,
    work: crate::files::Root,
    _lock: nix::fcntl::Flock<File>,
}

impl RunDir {
    /// Creates `perfgate-<pid>-<nonce>` under `workdir` and takes its lock. Errors: the
    /// work dir is not writable.
    pub fn create(workdir: &Path) -> Result<RunDir> {
        let work = crate::files::Root::open("work dir", workdir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for attempt in 0..100u32 {
            let path = workdir.join(format!(
                "{RUN_DIR_PREFIX}{}-{:08x}",
                std::process::id(),
                nanos.wrapping_add(attempt)
            ));
            // 0700 and created here (`mkdirat` fails on anything planted at the name):
            // nobody else can plant anything in it.
            let name = path.file_name().expect("a run dir has a name");
            let Some(run) = work.create_dir_new(name, 0o700)? else {
                continue;
            };
            let file = run
                .create_new(RUN_LOCK)
                .with_context(|| format!("cannot create the lock in {}", path.display()))?;
            let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
                .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", path.display()))?;
            let groups = run
                .create_new(RUN_GROUPS)
                .with_context(|| format!("cannot create {RUN_GROUPS} in {}", path.display()))?;
            crate::process::record_groups_in(groups);
            return Ok(RunDir {
                path: run.path().to_path_buf(),
                work,
                _lock: lock,
            });
        }
        anyhow::bail!(
            "cannot find a free run dir name under {}",
            workdir.display()
        )
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let Some(name) = self.path.file_name() else {
            return;
        };
        if let Ok(run) = self.work.dir(name) {
            let _ = run.remove_file(RUN_GROUPS);
            let _ = run.remove_file(RUN_LOCK);
        }
        self.work.remove_dir(name);
    }
}

/// Run dirs of gates alive now anywhere on this host (in this PID namespace), whatever
/// their work dir, as `pid <pid> (<dir>)`: the processes that hold a [`RUN_LOCK`] open (a
/// gate keeps its lock open all its life, its reaper too). Gates on nested or different
/// work dirs share the CPUs all the same; [`live_runs`] finds those of other namespaces
/// that share the work dir. Processes whose descriptors cannot be read are not seen.
pub fn live_runs_on_host() -> Vec<String> {
    let own = std::process::id();
    let mut seen: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        let fds = std::fs::read_dir(entry.path().join("fd"))
            .into_iter()
            .flatten();
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let run_dir = target.parent().filter(|d| {
                d.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(RUN_DIR_PREFIX))
            });
            if let (Some(dir), true) = (run_dir, target.file_name() == Some(RUN_LOCK.as_ref())) {
                // An open descriptor is not a gate (`sleep 3< lock` has one); a held lock is.
                if !seen.iter().any(|d| d == dir) && lock_held(dir) {
                    seen.push(dir.to_path_buf());
                }
            }
        }
    }
    seen.sort();
    // The gate's pid is in its run dir's name (its reaper holds the lock too).
    seen.iter().map(|dir| live_label(dir)).collect()
}

/// `pid <gate pid> (<dir>)` for a live gate's run dir, the pid from the dir's name
/// (`perfgate-<pid>-<nonce>`).
fn live_label(dir: &Path) -> String {
    format!("pid {} ({})", gate_pid(dir), dir.display())
}

/// The gate pid a run dir's name holds, `?` when it holds none.
fn gate_pid(dir: &Path) -> String {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let rest = name.strip_prefix(RUN_DIR_PREFIX).unwrap_or(&name);
    rest.split('-').next().unwrap_or("?").to_string()
}

/// Whether the [`RUN_LOCK`] of run dir `dir` is held (by a live gate): opened like
/// [`stale_run_lock`] opens it (no link followed, no FIFO waited on); a lock that can be
/// taken is released at once.
fn lock_held(dir: &Path) -> bool {
    let Some((file, _)) = open_run_lock(dir) else {
        return false;
    };
    matches!(
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock),
        Err((_, nix::errno::Errno::EWOULDBLOCK))
    )
}

/// The run dirs under `workdir` of gates alive now (their [`RUN_LOCK`] is held), as
/// `pid <pid> (<dir>)`: two gates on one host measure each other. A run dir this process
/// cannot open (another user's, 0700) is not seen. The lock is opened like
/// [`stale_run_lock`] opens it (no link followed, no FIFO waited on); one that can be taken
/// is released at once (a dead gate's dir, [`clean_stale_runs`]' business).
pub fn live_runs(workdir: &Path) -> Vec<String> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir(workdir).into_iter().flatten().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(RUN_DIR_PREFIX)
        {
            continue;
        }
        let dir = entry.path();
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir()) {
            continue;
        }
        if lock_held(&dir) {
            live.push(live_label(&dir));
        }
    }
    live
}

/// Cleans up after earlier gates that were killed (SIGKILL, a crash) and could not tear
/// down, and whose reaper did not either: for every run dir under `workdir` whose lock
/// ([`RUN_LOCK`]) is free, kills the processes still naming it (e.g. mako workers, which
/// do not get the parent-death signal) and removes it; removes the sample directories
/// and shared memory of mako processes that are gone. Returns one line per run directory
/// cleaned.
pub fn clean_stale_runs(workdir: &Path) -> Vec<String> {
    let mut cleaned = Vec::new();
    remove_dead_makos_leftovers();
    let Ok(entries) = std::fs::read_dir(workdir) else {
        return cleaned;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(RUN_DIR_PREFIX)
        {
            continue;
        }
        let dir = entry.path();
        // Not a gate's run dir of this user, or its gate is alive (lock held).
        let Some(_stale) = stale_run_lock(&dir) else {
            continue;
        };
        let pid = gate_pid(&dir);
        let ended = end_run(&dir);
        cleaned.push(format!(
            "an earlier gate (pid {pid}) died without cleaning up: killed {} leftover \
             process(es){}{}",
            ended.killed.len(),
            ended.process_lines(),
            if ended.removed {
                format!("\n  removed {}", dir.display())
            } else {
                String::new()
            }
        ));
    }
    cleaned
}

/// The lock of `dir` if `dir` is provably the run dir of a gate of this user that is gone:
/// a real directory (not a symlink) named [`RUN_DIR_PREFIX`]`*`, owned by this user, whose
/// [`RUN_LOCK`] is a regular file of this user that nobody holds. The lock is opened with
/// `O_NOFOLLOW | O_NONBLOCK` (a FIFO or link planted in a shared work dir neither blocks
/// nor redirects the open) and taken without waiting. `None`: not provably a stale run
/// dir of ours; leave it alone.
fn stale_run_lock(dir: &Path) -> Option<nix::fcntl::Flock<File>> {
    let me = nix::unistd::geteuid().as_raw();
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(RUN_DIR_PREFIX));
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if !named || !meta.file_type().is_dir() || meta.uid() != me {
        return None;
    }
    let (file, owner) = open_run_lock(dir)?;
    if owner != me {
        return None;
    }
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()
}

/// `dir`'s [`RUN_LOCK`] opened for reading with `O_NOFOLLOW | O_NONBLOCK` (a FIFO or link
/// planted in a shared work dir neither blocks nor redirects the open), and its owner's
/// uid; `None` when it cannot be opened or is not a regular file.
fn open_run_lock(dir: &Path) -> Option<(File, u32)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags())
        .open(dir.join(RUN_LOCK))
        .ok()?;
    let meta = file.metadata().ok()?;
    meta.file_type().is_file().then_some((file, meta.uid()))
}

/// `O_NOFOLLOW | O_NONBLOCK`, for opening what someone else may have planted.
fn libc_flags() -> i32 {
    (nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits()
}

/// A mako killed with its gate leaves files named after its dead pid: removes those of
/// every mako of this user that is gone.
fn remove_dead_makos_leftovers() {
    for (dir, prefix) in [("/dev/shm", "mako"), ("/tmp", "makoTemp")] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Only this user's: a mako of another user on a shared host is not ours.
            let mine = entry
                .metadata()
                .is_ok_and(|m| m.uid() == nix::unistd::geteuid().as_raw());
            if let Some(pid) = name
                .strip_prefix(prefix)
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|_| mine)
            {
                if !process_running(pid) {
                    remove_mako_leftovers(pid);
                }
            }
        }
    }
}

/// A watchdog process beside the gate that ends the run's processes when the gate dies,
/// however it dies: SIGKILL, OOM killer, a crash. The parent-death signal takes down the
/// servers and mako's main process, but not what they fork: mako's worker processes
/// would otherwise run on (seen on a real FDB run after `kill -9` of the gate) until the
/// next gate on the work dir cleaned them up.
///
/// The reaper is this executable (`xtask __reap`) in its own session (a Ctrl-C to the
/// terminal does not reach it), reading a pipe whose only writer is the gate: the write
/// end is close-on-exec, so no server or mako holds it. When the gate exits, the kernel
/// closes it, the reaper reads end-of-file, kills every process whose command line names
/// the run dir, removes dead makos' files and the run dir, and appends what it did to the
/// run's log. Dropping the `Reaper` (the gate's normal end) removes the run dir, writes
/// "done" into the pipe and waits for the reaper, which then touches nothing.
pub struct Reaper {
    /// Removed before the reaper is released, so that on a normal end it finds nothing.
    run_dir: Option<RunDir>,
    pipe: Option<std::io::PipeWriter>,
    child: std::process::Child,
}

impl Reaper {
    /// The reaper's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts the reaper of `run_dir` (which it keeps until dropped); it appends to `log`.
    /// Errors: the pipe or the process cannot be created.
    pub fn start(run_dir: RunDir, log: &Path) -> Result<Reaper> {
        let (reader, writer) = std::io::pipe().context("cannot create the reaper's pipe")?;
        // /proc/self/exe, not the path: a rebuild of xtask during an hours-long FDB build
        // replaces the file, while this names the running binary's own inode.
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg("__reap")
            .arg(&run_dir.path)
            .arg(log)
            .stdin(reader)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid()
                    .map(drop)
                    .map_err(std::io::Error::from)
            });
        }
        let child = cmd
            .spawn()
            .context("cannot start the reaper (xtask __reap)")?;
        Ok(Reaper {
            run_dir: Some(run_dir),
            pipe: Some(writer),
            child,
        })
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        drop(self.run_dir.take());
        // The gate ended on its own feet: tell the reaper so that it touches nothing (a
        // user's `tail -f` of a trial log, say). Only a silent end-of-file means death.
        if let Some(mut pipe) = self.pipe.take() {
            use std::io::Write as _;
            let _ = pipe.write_all(REAPER_DONE);
        }
        let _ = self.child.wait();
    }
}

/// The reaper's `oom_score_adj`: never the OOM killer's pick (the minimum,
/// `OOM_SCORE_ADJ_MIN` in the kernel's `include/uapi/linux/oom.h`). A memory-cgroup OOM
/// that kills the gate, even every task of the group (`memory.oom.group`, which spares
/// tasks at the minimum), leaves the reaper to empty the RAM disk.
pub const REAPER_OOM_SCORE_ADJ: i32 = -1000;

/// Sets [`REAPER_OOM_SCORE_ADJ`] for this process. Lowering a score needs
/// `CAP_SYS_RESOURCE` (root in a container may lack it); without, the reaper keeps the
/// gate's score, still below every server's and mako's
/// ([`crate::process::CHILD_OOM_SCORE_ADJ`]).
fn spare_from_the_oom_killer() {
    let _ = std::fs::write("/proc/self/oom_score_adj", REAPER_OOM_SCORE_ADJ.to_string());
}

/// How long the reaper waits for a dead gate's lock to be released (the kernel closes a
/// dying process's files one by one; milliseconds in practice).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What the gate writes to the reaper's pipe when it ends normally.
const REAPER_DONE: &[u8] = b"done";

/// The reaper's side (`xtask __reap RUN_DIR LOG`): waits until stdin, the gate's pipe,
/// reaches end-of-file, then cleans up after the gate (see [`Reaper`]). Returns 0.
pub fn reap(run_dir: &Path, log: &Path) -> Result<i32> {
    use std::io::{Read as _, Write as _};
    spare_from_the_oom_killer();
    let mut stdin = std::io::stdin().lock();
    let mut got = Vec::new();
    // Until end-of-file (the gate gone); an error reads as end-of-file too.
    let _ = stdin.read_to_end(&mut got);
    if got.starts_with(REAPER_DONE) {
        return Ok(0);
    }
    // Only a run dir proven to be a dead gate's: `__reap` with any other path (by hand,
    // or a gate that is still alive) touches nothing. The pipe's end-of-file can arrive
    // before the dying gate's other files (the lock) are closed, so the lock is tried for
    // up to LOCK_WAIT.
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let _stale = loop {
        if let Some(lock) = stale_run_lock(run_dir) {
            break lock;
        }
        if std::time::Instant::now() >= deadline {
            return Ok(0);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let ended = end_run(run_dir);
    remove_dead_makos_leftovers();
    if !ended.killed.is_empty() || ended.removed {
        let text = format!(
            "{} reaper: the gate exited without tearing down: killed {} process(es){}{}\n",
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
            ended.killed.len(),
            if ended.removed {
                format!(", removed {}", run_dir.display())
            } else {
                String::new()
            },
            ended.process_lines()
        );
        if let Ok(mut f) = crate::files::append("--out", log) {
            let _ = f.write_all(text.as_bytes());
        }
    }
    Ok(0)
}

/// What [`end_run`] did: the processes it killed (`(pid, command)`) and whether it
/// removed the run dir.
struct Ended {
    killed: Vec<(u32, String)>,
    removed: bool,
}

impl Ended {
    /// One `\n  <pid>: <command>` line per killed process.
    fn process_lines(&self) -> String {
        self.killed
            .iter()
            .map(|(p, c)| format!("\n  {p}: {c}"))
            .collect()
    }
}

/// Ends a dead gate's run: kills every process of the run's recorded process groups
/// ([`RUN_GROUPS`]) whose command line names the run dir `dir`, in a few rounds (a
/// process may fork while it is being killed), then removes the directory. Shared by the reaper and the next gate's stale-run cleanup.
fn end_run(dir: &Path) -> Ended {
    // Only the run's own process groups when the gate recorded them (every gate since the
    // file exists); a run dir of an older gate has only the command lines to go by.
    let groups: Option<Vec<u32>> = crate::input::read_text(&dir.join(RUN_GROUPS))
        .ok()
        .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect());
    let killed = kill_mentioning(dir, groups.as_deref());
    // Through the layer: a run dir replaced by a link is unlinked, never followed.
    let removed =
        dir.symlink_metadata().is_ok() && crate::files::remove_dir_all("run dir", dir).is_ok();
    Ended { killed, removed }
}

/// Removes what a killed mako main process `pid` leaves behind: its sample directory
/// `/tmp/makoTemp<pid>` and POSIX shared memory `/dev/shm/mako<pid>` (mako.cpp,
/// `TEMP_DATA_STORE` and `shm_open("mako<pid>")`; a clean exit removes them itself).
pub fn remove_mako_leftovers(pid: u32) {
    // Through the layer: in these sticky directories only a real file or directory of
    // this user's is removed, never what another user planted at the name.
    let _ = crate::files::remove_dir_all("/tmp", Path::new(&format!("/tmp/makoTemp{pid}")));
    let _ = crate::files::remove_file("/dev/shm", Path::new(&format!("/dev/shm/mako{pid}")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_on_the_host_is_a_held_lock_not_an_open_one() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("perfgate-4242-deadbeef");
        std::fs::create_dir(&run).unwrap();
        let lock = File::create(run.join(RUN_LOCK)).unwrap();
        let hold = |file: &File| {
            std::process::Command::new("sleep")
                .arg("30")
                .stdin(file.try_clone().unwrap())
                .spawn()
                .unwrap()
        };
        let listed = || {
            live_runs_on_host()
                .iter()
                .any(|l| l.contains("perfgate-4242-deadbeef"))
        };
        // A process holding the lock file open, unlocked, is not a gate.
        let mut open_only = hold(&lock);
        assert!(!listed(), "{:?}", live_runs_on_host());
        open_only.kill().unwrap();
        open_only.wait().unwrap();
        // Held by a process (the gate's exclusive flock on the shared file description).
        let locked = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| e)
            .unwrap();
        let mut gate = hold(&locked);
        let found = live_runs_on_host();
        gate.kill().unwrap();
        gate.wait().unwrap();
        assert!(
            found
                .iter()
                .any(|l| l.starts_with("pid 4242 (") && l.contains("perfgate-4242")),
            "{found:?}"
        );
    }

    #[test]
    fn only_a_dead_gates_own_run_dir_is_touched() {
        let work = tempfile::tempdir().unwrap();
        let live = RunDir::create(work.path()).unwrap();
        let mode = std::fs::metadata(&live.path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // A live gate's lock is held.
        assert!(stale_run_lock(&live.path).is_none());
        let dead = work.path().join(format!("{RUN_DIR_PREFIX}1-dead"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(RUN_LOCK), "").unwrap();
        assert!(stale_run_lock(&dead).is_some());
        // Planted by someone else in a shared work dir: a FIFO as the lock (opening it
        // must not block), a link as the lock, a link as the run dir, a dir without a lock.
        let fifo = work.path().join(format!("{RUN_DIR_PREFIX}2-fifo"));
        std::fs::create_dir(&fifo).unwrap();
        nix::unistd::mkfifo(&fifo.join(RUN_LOCK), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let link_lock = work.path().join(format!("{RUN_DIR_PREFIX}3-linklock"));
        std::fs::create_dir(&link_lock).unwrap();
        std::os::unix::fs::symlink(dead.join(RUN_LOCK), link_lock.join(RUN_LOCK)).unwrap();
        let link_dir = work.path().join(format!("{RUN_DIR_PREFIX}4-linkdir"));
        std::os::unix::fs::symlink(&dead, &link_dir).unwrap();
        let bare = work.path().join(format!("{RUN_DIR_PREFIX}5-bare"));
        std::fs::create_dir(&bare).unwrap();
        let other_name = work.path().join("not-a-run");
        std::fs::create_dir(&other_name).unwrap();
        std::fs::write(other_name.join(RUN_LOCK), "").unwrap();
        for d in [&fifo, &link_lock, &link_dir, &bare, &other_name] {
            assert!(stale_run_lock(d).is_none(), "{}", d.display());
        }
        // The next gate's cleanup removes the dead run dir and nothing else.
        let cleaned = clean_stale_runs(work.path());
        assert_eq!(cleaned.len(), 1, "{cleaned:?}");
        assert!(!dead.exists());
        for d in [&fifo, &link_lock, &bare, &other_name, &live.path] {
            assert!(d.exists(), "{}", d.display());
        }
        // `__reap` on a path that is not a dead gate's run dir touches nothing.
        assert!(stale_run_lock(&other_name).is_none());
    }
}
