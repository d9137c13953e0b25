//! Execute stage, supervision: child processes that cannot outlive their trial or the gate,
//! and bounded waits that notice timeouts and Ctrl-C.
//!
//! Each child runs in its own process group (mako forks worker processes; the group takes
//! them all down), gets `PR_SET_PDEATHSIG(SIGKILL)` so it dies even if the gate is
//! SIGKILLed, and has core dumps off (mako aborts in `_dl_fini` at every exit). A
//! [`Child`] stops its group when dropped. The parent-death signal does not reach what a
//! child forks (mako's workers), so a [`Reaper`] process outlives the gate to end those.

use std::{
    fs::File,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Stdio},
    sync::atomic::{AtomicBool, Ordering},
    sync::Arc,
    sync::OnceLock,
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
pub use nix::sys::signal::Signal;
use nix::{sys::signal::killpg, unistd::Pid};

/// How often bounded waits look at their child, the clock and the interrupt flag.
pub const POLL: Duration = Duration::from_millis(50);

static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Makes SIGINT and SIGTERM set a flag that every bounded wait checks, so a Ctrl-C ends
/// the current phase as interrupted, tears the cluster down and keeps the results. A
/// second signal exits at once with status 2 (the servers still die: parent-death signal).
pub fn install_interrupt_handler() -> Result<()> {
    let flag = INTERRUPTED.get_or_init(Default::default);
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it sees the flag as it was before this signal.
        signal_hook::flag::register_conditional_shutdown(sig, 2, Arc::clone(flag))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(flag)))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// Why a phase of a trial ended without success.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    /// The phase's time bound passed; the text says what was still running, or is empty.
    #[error("did not finish within its bound of {}{}", humantime::format_duration(*.0), if .1.is_empty() { String::new() } else { format!(": {}", .1) })]
    Timeout(Duration, String),
    /// SIGINT or SIGTERM arrived.
    #[error("interrupted by a signal")]
    Interrupted,
    /// Anything else: a crash, a bad exit status, an unreadable report.
    #[error("{0:#}")]
    Failed(#[from] anyhow::Error),
}

/// A supervised child process with its stdout and stderr in files.
#[derive(Debug)]
pub struct Child {
    /// Short name for messages, e.g. `fdbserver storage :4503`.
    pub name: String,
    inner: std::process::Child,
    /// File the child's stderr goes to.
    pub stderr: PathBuf,
    exited: Option<ExitStatus>,
}

impl Child {
    /// Starts `cmd` with stdin closed and stdout/stderr written to the given files.
    pub fn spawn(name: &str, mut cmd: Command, stdout: &Path, stderr: &Path) -> Result<Child> {
        let out =
            File::create(stdout).with_context(|| format!("cannot create {}", stdout.display()))?;
        let err =
            File::create(stderr).with_context(|| format!("cannot create {}", stderr.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        // SAFETY: the closure only makes async-signal-safe system calls (prctl, setrlimit).
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0)?;
                Ok(())
            });
        }
        let inner = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}: {cmd:?}"))?;
        Ok(Child {
            name: name.to_string(),
            inner,
            stderr: stderr.to_path_buf(),
            exited: None,
        })
    }

    pub fn pid(&self) -> u32 {
        self.inner.id()
    }

    /// The exit status if the child has exited (reaped), without blocking.
    pub fn try_exit(&mut self) -> Result<Option<ExitStatus>> {
        if self.exited.is_none() {
            self.exited = self
                .inner
                .try_wait()
                .with_context(|| format!("cannot wait for {}", self.name))?;
        }
        Ok(self.exited)
    }

    /// Waits for the child to exit until `deadline`, calling `tick` every [`POLL`] (to check
    /// other processes or sample them). The child is stopped on timeout or interrupt.
    pub fn wait_until(
        &mut self,
        deadline: Instant,
        bound: Duration,
        mut tick: impl FnMut() -> Result<(), PhaseError>,
    ) -> Result<ExitStatus, PhaseError> {
        loop {
            if let Some(status) = self.try_exit()? {
                return Ok(status);
            }
            let stop = if interrupted() {
                Some(PhaseError::Interrupted)
            } else if Instant::now() >= deadline {
                Some(PhaseError::Timeout(bound, String::new()))
            } else {
                tick().err()
            };
            if let Some(e) = stop {
                self.stop(Duration::from_secs(2));
                return Err(e);
            }
            thread::sleep(POLL);
        }
    }

    /// Sends `sig` to the child's whole process group. The group may hold workers of an
    /// already exited leader (mako -p N), so it is signalled even when the leader is gone;
    /// ESRCH just means nothing is left.
    pub fn signal(&self, sig: Signal) {
        let _ = killpg(self.pgid(), sig);
    }

    /// Whether the child has exited and no process of its group is left.
    pub fn finished(&mut self) -> bool {
        matches!(self.try_exit(), Ok(Some(_))) && !group_alive(self.pgid())
    }

    fn pgid(&self) -> Pid {
        Pid::from_raw(self.inner.id() as i32)
    }

    /// Stops the whole process group: SIGTERM, then SIGKILL after `grace`. Returns whether
    /// SIGKILL was needed.
    pub fn stop(&mut self, grace: Duration) -> bool {
        self.signal(Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.finished() {
                return false;
            }
            thread::sleep(POLL);
        }
        self.signal(Signal::SIGKILL);
        if self.exited.is_none() {
            self.exited = self.inner.wait().ok();
        }
        true
    }

    /// Last `n` lines of the child's stderr, for error messages.
    pub fn stderr_tail(&self, n: usize) -> String {
        tail(&self.stderr, n)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.finished() {
            self.stop(Duration::from_secs(2));
        }
    }
}

/// Whether any process of group `pgid` is alive (signal 0 probes without sending).
fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok()
}

/// Whether `pid` is a live (not zombie) process.
pub fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses: `pid (comm) S ...`.
        Ok(stat) => !matches!(
            stat.rsplit_once(") ").map(|(_, r)| r.as_bytes()[0]),
            Some(b'Z' | b'X')
        ),
        Err(_) => false,
    }
}

/// Live processes whose command line mentions `needle` (e.g. a run's directory, which
/// every fdbserver, fdbcli and mako of the run gets as an argument): `(pid, command)`.
pub fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own && process_running(pid))
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            cmd.contains(needle)
                .then(|| (pid, cmd.trim_end().to_string()))
        })
        .collect()
}

/// Prefix of a run's directory on the work dir, `perfgate-<gate pid>-<nonce>`.
pub const RUN_DIR_PREFIX: &str = "perfgate-";

/// The lock file in every run dir. The gate holds an exclusive `flock` on it for its
/// whole life, so a run dir whose lock can be taken belongs to a gate that is gone (in
/// any PID namespace: the lock lives on the file, not on a pid), and a `perfgate-*`
/// directory without one is not a gate's and is left alone.
pub const RUN_LOCK: &str = ".perfgate-run.lock";

/// A run's own directory on the work dir, created exclusively (two gates never share
/// one, even with equal pids in different PID namespaces) and locked while the gate
/// lives. Dropping it removes the lock and the directory if it is empty.
pub struct RunDir {
    pub path: PathBuf,
    _lock: nix::fcntl::Flock<File>,
}

impl RunDir {
    /// Creates `perfgate-<pid>-<nonce>` under `workdir` and takes its lock. Errors: the
    /// work dir is not writable.
    pub fn create(workdir: &Path) -> Result<RunDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for attempt in 0..100u32 {
            let path = workdir.join(format!(
                "{RUN_DIR_PREFIX}{}-{:08x}",
                std::process::id(),
                nanos.wrapping_add(attempt)
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()))
                }
            }
            let file = File::create(path.join(RUN_LOCK))
                .with_context(|| format!("cannot create the lock in {}", path.display()))?;
            let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
                .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", path.display()))?;
            return Ok(RunDir { path, _lock: lock });
        }
        anyhow::bail!(
            "cannot find a free run dir name under {}",
            workdir.display()
        )
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.path.join(RUN_LOCK));
        let _ = std::fs::remove_dir(&self.path);
    }
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
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(RUN_DIR_PREFIX) else {
            continue;
        };
        let dir = entry.path();
        // Not a gate's run dir (no lock file), or its gate is alive (lock held).
        let Ok(file) = File::open(dir.join(RUN_LOCK)) else {
            continue;
        };
        let Ok(_stale) = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("?");
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

/// A mako killed with its gate leaves files named after its dead pid: removes those of
/// every mako that is gone.
fn remove_dead_makos_leftovers() {
    for (dir, prefix) in [("/dev/shm", "mako"), ("/tmp", "makoTemp")] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name
                .strip_prefix(prefix)
                .and_then(|p| p.parse::<u32>().ok())
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

/// What the gate writes to the reaper's pipe when it ends normally.
const REAPER_DONE: &[u8] = b"done";

/// The reaper's side (`xtask __reap RUN_DIR LOG`): waits until stdin, the gate's pipe,
/// reaches end-of-file, then cleans up after the gate (see [`Reaper`]). Returns 0.
pub fn reap(run_dir: &Path, log: &Path) -> Result<i32> {
    use std::io::{Read as _, Write as _};
    let mut stdin = std::io::stdin().lock();
    let mut got = Vec::new();
    // Until end-of-file (the gate gone); an error reads as end-of-file too.
    let _ = stdin.read_to_end(&mut got);
    if got.starts_with(REAPER_DONE) {
        return Ok(0);
    }
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
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
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

/// Ends a dead gate's run: kills every process whose command line names the run dir
/// `dir`, in a few rounds (a process may fork while it is being killed), then removes
/// the directory. Shared by the reaper and the next gate's stale-run cleanup.
fn end_run(dir: &Path) -> Ended {
    let killed = kill_mentioning(dir);
    let removed = dir.exists() && std::fs::remove_dir_all(dir).is_ok();
    Ended { killed, removed }
}

/// Kills (SIGKILL) every process whose command line names a path under `dir`, in a few
/// rounds (a process may fork while it is being killed): what a dead gate's run, or its
/// build's compile jobs (ninja starts each in its own process group, out of reach of the
/// parent-death signal), left running. Returns them as `(pid, command)`.
pub fn kill_mentioning(dir: &Path) -> Vec<(u32, String)> {
    // The trailing slash keeps `perfgate-12` from matching `perfgate-123`.
    let needle = format!("{}/", dir.display());
    let mut killed: Vec<(u32, String)> = Vec::new();
    for _ in 0..20 {
        let left = processes_mentioning(&needle);
        if left.is_empty() {
            break;
        }
        for (pid, cmd) in left {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            if !killed.iter().any(|(p, _)| *p == pid) {
                killed.push((pid, cmd));
            }
        }
        thread::sleep(POLL);
    }
    killed
}

/// Removes what a killed mako main process `pid` leaves behind: its sample directory
/// `/tmp/makoTemp<pid>` and POSIX shared memory `/dev/shm/mako<pid>` (mako.cpp,
/// `TEMP_DATA_STORE` and `shm_open("mako<pid>")`; a clean exit removes them itself).
pub fn remove_mako_leftovers(pid: u32) {
    let _ = std::fs::remove_dir_all(format!("/tmp/makoTemp{pid}"));
    let _ = std::fs::remove_file(format!("/dev/shm/mako{pid}"));
}

/// Last `n` lines of a text file ("" when unreadable).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned());
    let text = text.unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a short command to completion within `bound`, stdout and stderr to files.
    /// Returns the exit status; the caller reads the files.
    fn run_bounded(
        name: &str,
        cmd: Command,
        stdout: &Path,
        stderr: &Path,
        bound: Duration,
    ) -> Result<ExitStatus, PhaseError> {
        let mut child = Child::spawn(name, cmd, stdout, stderr)?;
        child.wait_until(Instant::now() + bound, bound, || Ok(()))
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn bounded_run_reports_timeout_and_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild.pid");
        let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let out = dir.path().join("out");
        let err = dir.path().join("err");
        let r = run_bounded(
            "sleeper",
            sh(&script),
            &out,
            &err,
            Duration::from_millis(300),
        );
        assert!(matches!(r, Err(PhaseError::Timeout(..))), "{r:?}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild was in the group: it is gone (or a zombie reaped by init soon).
        let alive = nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true);
        assert!(!alive, "grandchild {pid} survived");
    }

    #[test]
    fn exit_status_and_output_files_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let status = run_bounded(
            "echo",
            sh("echo hi; echo oops >&2; exit 3"),
            &out,
            &err,
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(status.code(), Some(3));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "hi\n");
        assert_eq!(tail(&err, 5), "oops");
    }

    #[test]
    fn tick_error_stops_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Child::spawn(
            "sleeper",
            sh("sleep 300"),
            &dir.path().join("o"),
            &dir.path().join("e"),
        )
        .unwrap();
        let bound = Duration::from_secs(300);
        let r = child.wait_until(Instant::now() + bound, bound, || {
            Err(PhaseError::Failed(anyhow::anyhow!("storage server died")))
        });
        assert!(
            matches!(r, Err(PhaseError::Failed(ref e)) if e.to_string() == "storage server died")
        );
        assert!(child.try_exit().unwrap().is_some());
    }
}
