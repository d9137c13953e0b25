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

/// The file in every run dir of a run with a cgroup ([`crate::contain::RunCgroup`]): its
/// path, which the reaper or the next gate ends and removes after the gate's death.
pub const RUN_CGROUP: &str = ".perfgate-cgroup";

/// The file in every run dir where the gate writes the pid of every mako it starts, one
/// a line: after its death, only those makos' files are removed ([`remove_mako_leftovers`]).
pub const RUN_MAKOS: &str = ".perfgate-makos";

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

impl RunDir {
    /// Writes the path of the run's cgroup into the run dir ([`RUN_CGROUP`]). Errors: the
    /// file cannot be written.
    pub fn record_cgroup(&self, cgroup: &Path) -> Result<()> {
        let path = self.path.join(RUN_CGROUP);
        crate::files::create_new("run dir", &path, cgroup.as_os_str().as_encoded_bytes())
    }
}

/// Adds `pid`, a mako this gate started, to the run dir's [`RUN_MAKOS`]. A failed write
/// is ignored: that mako's files are then left after a killed gate, never another's taken.
pub fn record_mako(run_dir: &Path, pid: u32) {
    use std::io::Write as _;
    if let Ok(mut f) = crate::files::append("run dir", &run_dir.join(RUN_MAKOS)) {
        let _ = writeln!(f, "{pid}");
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let Some(name) = self.path.file_name() else {
            return;
        };
        if let Ok(run) = self.work.dir(name) {
            for file in [RUN_CGROUP, RUN_MAKOS, RUN_GROUPS, RUN_LOCK] {
                let _ = run.remove_file(file);
            }
        }
        self.work.remove_dir(name);
    }
}

/// Run dirs of gates alive now anywhere on this host (in this PID namespace), whatever
/// their work dir, as `pid <pid> (<dir>)`: each exclusive `flock` the kernel lists
/// (`/proc/locks`) whose holder, by the kernel's pid, is a gate ([`is_gate`]) that holds a
/// [`RUN_LOCK`] open in a run dir of its own user. A lock anyone else holds, on a file
/// anyone planted, whatever its dir's name says, is no gate. Gates on nested or different
/// work dirs share the CPUs all the same; [`live_runs`] finds those of other namespaces
/// that share the work dir.
pub fn live_runs_on_host() -> Vec<String> {
    let own = std::process::id();
    // Each holder once, and the cheap question first: any user may hold thousands of
    // locks in a process with thousands of files open, and a scan of its descriptors per
    // lock would hold every gate off for minutes.
    let mut holders: std::collections::BTreeMap<u32, Vec<FileId>> = Default::default();
    for (file, pid) in flock_holders() {
        holders.entry(pid).or_default().push(file);
    }
    let mut seen: Vec<(PathBuf, u32)> = Vec::new();
    for (pid, files) in holders {
        if pid == own || !is_gate(pid) {
            continue;
        }
        if let Some(dir) = run_lock_held_open(pid, &files) {
            if owned_like(&dir, pid) {
                seen.push((dir, pid));
            }
        }
    }
    seen.sort();
    seen.iter()
        .map(|(dir, pid)| format!("pid {pid} ({})", dir.display()))
        .collect()
}

/// A file as the kernel names it in `/proc/locks`: device major, minor and inode.
type FileId = (u64, u64, u64);

/// The [`FileId`] of an open file's metadata.
fn file_id(meta: &std::fs::Metadata) -> FileId {
    let dev = meta.dev();
    (
        nix::sys::stat::major(dev),
        nix::sys::stat::minor(dev),
        meta.ino(),
    )
}

/// Every exclusive `flock` the kernel lists, as the locked file and the holder's pid in
/// this PID namespace (0: a holder this namespace cannot see).
fn flock_holders() -> Vec<(FileId, u32)> {
    use procfs::{LockKind, LockType};
    procfs::locks()
        .unwrap_or_default()
        .into_iter()
        .filter(|l| matches!(l.lock_type, LockType::FLock) && matches!(l.kind, LockKind::Write))
        .filter_map(|l| {
            let pid = u32::try_from(l.pid?).ok()?;
            Some(((u64::from(l.devmaj), u64::from(l.devmin), l.inode), pid))
        })
        .collect()
}

/// The run dir whose [`RUN_LOCK`] process `pid` holds open as one of the locked `files`, if
/// it does (its descriptors read once).
fn run_lock_held_open(pid: u32, files: &[FileId]) -> Option<PathBuf> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    fds.flatten().find_map(|fd| {
        let target = std::fs::read_link(fd.path()).ok()?;
        let dir = target.parent()?;
        let named = target.file_name() == Some(RUN_LOCK.as_ref())
            && dir
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(RUN_DIR_PREFIX));
        // The descriptor's own file, whatever its path now names.
        let same =
            named && std::fs::metadata(fd.path()).is_ok_and(|m| files.contains(&file_id(&m)));
        (named && same).then(|| dir.to_path_buf())
    })
}

/// The effective uid of process `pid` (`/proc/<pid>/status`; the owner of `/proc/<pid>`
/// is root for any process that made itself non-dumpable, so it is not asked).
fn euid_of(pid: u32) -> Option<u32> {
    let status = procfs::process::Process::new(pid as i32)
        .ok()?
        .status()
        .ok()?;
    Some(status.euid)
}

/// Whether run dir `dir` and its [`RUN_LOCK`] belong to the user process `pid` runs as, as
/// a gate's own run dir does (it makes both).
fn owned_like(dir: &Path, pid: u32) -> bool {
    let (Some(uid), Ok(meta)) = (euid_of(pid), std::fs::symlink_metadata(dir)) else {
        return false;
    };
    let lock = std::fs::symlink_metadata(dir.join(RUN_LOCK));
    meta.is_dir() && meta.uid() == uid && lock.is_ok_and(|l| l.is_file() && l.uid() == uid)
}

/// Whether process `pid` counts as a gate: it runs as root or as this gate's user, whom no
/// other user can impersonate. Another user's process holding a lock is not one, whatever
/// it is named or runs: anyone may run the gate's executable and stop it (SIGSTOP), which
/// would hold every gate of the host off for as long as it likes.
fn is_gate(pid: u32) -> bool {
    euid_of(pid).is_some_and(crate::input::trusted_owner)
}

/// `pid <gate pid> (<dir>)` for a live gate's run dir, the pid as the kernel names the
/// lock's holder, or the dir alone for a holder in another PID namespace.
fn live_label(dir: &Path, pid: u32) -> String {
    if pid == 0 {
        format!("a gate in another PID namespace ({})", dir.display())
    } else {
        format!("pid {pid} ({})", dir.display())
    }
}

/// The gate pid a run dir's name holds, `?` when it holds none (for messages about a dead
/// gate's run dir only: a name is anyone's to choose).
fn gate_pid(dir: &Path) -> String {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let rest = name.strip_prefix(RUN_DIR_PREFIX).unwrap_or(&name);
    rest.split('-').next().unwrap_or("?").to_string()
}

/// The holder of the [`RUN_LOCK`] of run dir `dir` if it is held by a live gate: the lock
/// is a regular file of the dir's owner, root or this user (whom no other user can
/// impersonate), opened like [`stale_run_lock`] opens it (no link followed, no FIFO
/// waited on), and cannot be taken (one that can is released at once); the holder is the
/// kernel's pid (`/proc/locks`), 0 in another PID namespace, and when visible a gate
/// ([`is_gate`]).
fn lock_holder(dir: &Path) -> Option<u32> {
    let me = nix::unistd::geteuid().as_raw();
    let meta = std::fs::symlink_metadata(dir).ok()?;
    let (file, owner) = open_run_lock(dir)?;
    if !meta.is_dir() || owner != meta.uid() || (owner != 0 && owner != me) {
        return None;
    }
    let id = file_id(&file.metadata().ok()?);
    let held = matches!(
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock),
        Err((_, nix::errno::Errno::EWOULDBLOCK))
    );
    if !held {
        return None;
    }
    let pid = flock_holders()
        .into_iter()
        .find_map(|(f, pid)| (f == id).then_some(pid))?;
    (pid == 0 || is_gate(pid)).then_some(pid)
}

/// The run dirs under `workdir` of gates alive now ([`lock_holder`]), as `pid <pid>
/// (<dir>)`: two gates on one host measure each other. A run dir this process cannot
/// open (another user's, 0700) is not seen; a dead gate's is [`clean_stale_runs`]'
/// business.
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
        if let Some(pid) = lock_holder(&dir) {
            live.push(live_label(&dir, pid));
        }
    }
    live
}

/// Cleans up after earlier gates that were killed (SIGKILL, a crash) and could not tear
/// down, and whose reaper did not either: for every run dir under `workdir` whose lock
/// ([`RUN_LOCK`]) is free, ends its cgroup and the processes of its groups still naming
/// it (e.g. mako workers, which do not get the parent-death signal), removes the files of
/// the makos it started ([`RUN_MAKOS`]) and removes it. Returns one line per run
/// directory cleaned.
pub fn clean_stale_runs(workdir: &Path) -> Vec<String> {
    let mut cleaned = Vec::new();
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

/// A watchdog process beside the gate that ends the run's processes when the gate dies,
/// however it dies: SIGKILL, OOM killer, a crash. The parent-death signal takes down the
/// servers and mako's main process, but not what they fork: mako's worker processes
/// would otherwise run on (seen on a real FDB run after `kill -9` of the gate) until the
/// next gate on the work dir cleaned them up.
///
/// The reaper is this executable (`xtask __reap`) in its own session (a Ctrl-C to the
/// terminal does not reach it), reading a pipe whose only writer is the gate: the write
/// end is close-on-exec, so no server or mako holds it. When the gate exits, the kernel
/// closes it, the reaper reads end-of-file, ends the run ([`end_run`]: its cgroup, its
/// process groups, its makos' files, the run dir) and appends what it did to the run's
/// log. Dropping the `Reaper` (the gate's normal end) removes the run dir, writes
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

/// Ends a dead gate's run: kills every process of its cgroup ([`RUN_CGROUP`]) and of the
/// run's recorded process groups ([`RUN_GROUPS`]) whose command line names the run dir
/// `dir`, in a few rounds (a process may fork while it is being killed), removes the
/// files of the makos the gate started ([`RUN_MAKOS`]), then removes the directory. Shared by the reaper and the next gate's stale-run cleanup.
fn end_run(dir: &Path) -> Ended {
    let numbers = |file: &str| -> Option<Vec<u32>> {
        crate::input::read_text(&dir.join(file))
            .ok()
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
    };
    // The run's cgroup holds every process of the run, whatever it did to leave its group.
    let mut killed = crate::input::read_text(&dir.join(RUN_CGROUP))
        .map(|path| crate::contain::end_dead_runs_cgroup(Path::new(path.trim_end())))
        .unwrap_or_default();
    // Only the run's own process groups when the gate recorded them (every gate since the
    // file exists); a run dir of an older gate has only the command lines to go by.
    for p in kill_mentioning(dir, numbers(RUN_GROUPS).as_deref()) {
        if !killed.iter().any(|(k, _)| *k == p.0) {
            killed.push(p);
        }
    }
    // Only the files of makos this gate started, and only once they are gone.
    for pid in numbers(RUN_MAKOS).unwrap_or_default() {
        if !process_running(pid) {
            remove_mako_leftovers(pid);
        }
    }
    // Through the layer: a run dir replaced by a link is unlinked, never followed.
    let removed =
        dir.symlink_metadata().is_ok() && crate::files::remove_dir_all("run dir", dir).is_ok();
    Ended { killed, removed }
}

/// Removes what a killed mako main process `pid`, which this gate started, leaves behind:
/// its sample directory `/tmp/makoTemp<pid>` and POSIX shared memory `/dev/shm/mako<pid>`
/// (mako.cpp, `TEMP_DATA_STORE` and `shm_open("mako<pid>")`; a clean exit removes them
/// itself), each only when it is a real one (not a link) of this user: the same name in
/// a shared directory may be another user's, or another PID namespace's mako's.
pub fn remove_mako_leftovers(pid: u32) {
    // Through the layer: in these sticky directories only a real file or directory of
    // this user's is removed, never what another user planted at the name.
    let _ = crate::files::remove_dir_all("/tmp", Path::new(&format!("/tmp/makoTemp{pid}")));
    let _ = crate::files::remove_file("/dev/shm", Path::new(&format!("/dev/shm/mako{pid}")));
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    /// `flock -x LOCK sleep 300` run as `user` (`None`: this test's), holding the lock
    /// once this returns; the flock process is the lock's holder.
    fn hold_lock(lock: &Path, user: Option<u32>) -> std::process::Child {
        let mut cmd = match user {
            Some(uid) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .arg("--clear-groups")
                    .arg("flock");
                c
            }
            None => Command::new("flock"),
        };
        let child = cmd
            .arg("-x")
            .arg(lock)
            .args(["sleep", "300"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !lock_taken(lock) {
            assert!(
                std::time::Instant::now() < deadline,
                "flock never took the lock"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child
    }

    /// Whether someone holds an exclusive lock on `lock` (a file that may not exist yet).
    fn lock_taken(lock: &Path) -> bool {
        File::open(lock).is_ok_and(|file| {
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
        })
    }

    /// A directory anyone may write to (sticky, as /dev/shm and /tmp are), and in it a
    /// `perfgate-<name>` run dir with its lock, made by `user` (`None`: this test's).
    fn planted_run(base: &Path, name: &str, user: Option<u32>) -> PathBuf {
        let run = base.join(format!("{RUN_DIR_PREFIX}{name}"));
        std::fs::create_dir(&run).unwrap();
        std::fs::write(run.join(RUN_LOCK), "").unwrap();
        if let Some(uid) = user {
            let id = Some(nix::unistd::Uid::from_raw(uid));
            let gid = Some(nix::unistd::Gid::from_raw(uid));
            for p in [run.join(RUN_LOCK), run.clone()] {
                nix::unistd::chown(&p, id, gid).unwrap();
            }
        }
        run
    }

    fn kill(mut child: std::process::Child) {
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Not a test: what another user runs in
    /// [`another_users_run_of_the_gates_own_executable_is_not_a_gate`], this very
    /// executable, alive until killed.
    #[test]
    #[ignore = "a stand-in process, run by another test"]
    fn stand_in_for_another_users_gate() {
        std::thread::sleep(std::time::Duration::from_secs(300));
    }

    #[test]
    fn another_users_run_of_the_gates_own_executable_is_not_a_gate() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root: no other user to play");
            return;
        }
        // Anyone may run the gate's executable (and stop it while it holds a lock): that
        // must not hold every gate of the host off.
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let theirs = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .args([
                "--ignored",
                "--exact",
                "run::reaper::tests::stand_in_for_another_users_gate",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = theirs.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .as_deref()
            != Some(&exe)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the stand-in never ran"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let (theirs_is_gate, ours_is_gate) = (is_gate(pid), is_gate(std::process::id()));
        kill(theirs);
        assert!(
            !theirs_is_gate,
            "another user's run of the gate's executable"
        );
        assert!(ours_is_gate);
    }

    #[test]
    fn a_gate_on_the_host_is_a_held_lock_not_an_open_one() {
        let dir = tempfile::tempdir().unwrap();
        let run = planted_run(dir.path(), "4242-deadbeef", None);
        let listed = || {
            live_runs_on_host()
                .iter()
                .any(|l| l.contains("perfgate-4242-deadbeef"))
        };
        // A process holding the lock file open, unlocked, is not a gate.
        let open_only = Command::new("sleep")
            .arg("300")
            .stdin(File::open(run.join(RUN_LOCK)).unwrap())
            .spawn()
            .unwrap();
        assert!(!listed(), "{:?}", live_runs_on_host());
        assert!(live_runs(dir.path()).is_empty());
        kill(open_only);
        // Held by a process of this user: named by the kernel's pid, not by the dir's name.
        let gate = hold_lock(&run.join(RUN_LOCK), None);
        let (found, here) = (live_runs_on_host(), live_runs(dir.path()));
        let label = format!("pid {} ({})", gate.id(), run.display());
        kill(gate);
        assert!(found.contains(&label), "{found:?}");
        assert_eq!(here, [label]);
    }

    #[test]
    fn another_users_lock_on_a_planted_run_dir_stops_no_gate() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root: no other user to play");
            return;
        }
        let nobody = 65534;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        // Another user plants a run dir named after a pid, and one named after the very
        // process that holds its lock, and holds both locks.
        let fake = planted_run(dir.path(), "999-cafe", Some(nobody));
        let holder = hold_lock(&fake.join(RUN_LOCK), Some(nobody));
        let second = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c"])
            .arg(r#"d="$0/perfgate-$$-cafe"; mkdir "$d" && : > "$d/.perfgate-run.lock" && exec flock -x "$d/.perfgate-run.lock" sleep 300"#)
            .arg(dir.path())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let named = dir.path().join(format!("perfgate-{}-cafe", second.id()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !lock_taken(&named.join(RUN_LOCK)) {
            assert!(
                std::time::Instant::now() < deadline,
                "flock never took the lock"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let (found, here) = (live_runs_on_host(), live_runs(dir.path()));
        kill(holder);
        kill(second);
        let planted = |l: &String| l.contains(&*dir.path().to_string_lossy());
        assert!(!found.iter().any(planted), "{found:?}");
        assert!(here.is_empty(), "{here:?}");
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
