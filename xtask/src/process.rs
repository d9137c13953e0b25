//! Supervision, below every stage: child processes that cannot outlive their trial or the gate,
//! and bounded waits that notice timeouts and Ctrl-C.
//!
//! Each child runs in its own process group (mako forks worker processes; the group takes
//! them all down), joins the run's cgroup when there is one (`contain`: it holds what
//! leaves the group too), gets `PR_SET_PDEATHSIG(SIGKILL)` so it dies even if the gate is
//! SIGKILLed, and has core dumps off (mako aborts in `_dl_fini` at every exit). A
//! [`Child`] stops its group when dropped. The parent-death signal does not reach what a
//! child forks (mako's workers), so a reaper process (`run::reaper`) outlives the gate to end
//! those.

use std::{
    fs::File,
    os::fd::OwnedFd,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Stdio},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
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

/// Signals this close after the first (seconds) are the same interrupt delivered again, not
/// a second one: GNU `timeout` sends its SIGTERM to the gate and then to the gate's process
/// group, and a terminal's Ctrl-C reaches every process of the foreground group.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(1);

/// What the first interrupt prints: the gate is silent while a trial's cluster stops.
const FIRST_SIGNAL_MESSAGE: &[u8] = b"perfgate: interrupted: stopping what runs now and what it \
started (a build, a probe of the cluster, or a trial and its cluster within \
--timeout-teardown), then writing the results (the JUnit file; summary.json once trials \
began); another signal exits at once without them\n";

/// What a second interrupt prints before the gate exits.
const SECOND_SIGNAL_MESSAGE: &[u8] = b"perfgate: second signal: exiting now; no summary.json or \
JUnit file is written (the servers die with the gate, the reaper ends the rest)\n";

/// When the first interrupt arrived: `CLOCK_MONOTONIC` in nanoseconds, plus 1 (0: none yet).
static FIRST_SIGNAL_NS: AtomicU64 = AtomicU64::new(0);

/// Makes SIGINT, SIGTERM and SIGHUP set a flag that every bounded wait checks, so a
/// Ctrl-C, a `kill` or a dropped SSH session ends the current phase as interrupted, tears
/// the cluster down and keeps the results (summary.json, JUnit). A second signal at least
/// [`REPEAT_WINDOW`] after the first exits at once with status 2 (the servers still die:
/// parent-death signal); one sooner is the same interrupt delivered twice and is ignored.
pub fn install_interrupt_handler() -> Result<()> {
    let flag = Arc::clone(INTERRUPTED.get_or_init(Default::default));
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let flag = Arc::clone(&flag);
        let on_signal = move || {
            // Only async-signal-safe calls here: clock_gettime, atomics, _exit.
            let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
                .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64 + 1)
                .unwrap_or(1);
            // write(2) on stderr is async-signal-safe; a closed stderr is ignored.
            let say = |msg: &[u8]| {
                // SAFETY: a valid buffer of `msg.len()` bytes, written to fd 2.
                let _ = unsafe { nix::libc::write(2, msg.as_ptr().cast(), msg.len()) };
            };
            match FIRST_SIGNAL_NS.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => say(FIRST_SIGNAL_MESSAGE),
                Err(first) if now.saturating_sub(first) >= REPEAT_WINDOW.as_nanos() as u64 => {
                    say(SECOND_SIGNAL_MESSAGE);
                    signal_hook::low_level::exit(2)
                }
                Err(_) => {}
            }
            flag.store(true, Ordering::SeqCst);
        };
        // SAFETY: the action only reads the monotonic clock, touches atomics and calls
        // `_exit`, all async-signal-safe.
        unsafe { signal_hook::low_level::register(sig, on_signal) }
            .context("cannot install the SIGINT/SIGTERM/SIGHUP handler")?;
    }
    Ok(())
}

/// Whether SIGINT, SIGTERM or SIGHUP arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// A gap this long between two ticks of [`watch_stalls`]' thread means the gate itself did
/// not run: it was stopped (SIGSTOP, a debugger, a frozen cgroup) or starved of CPU. Its
/// bounded waits then see a child's exit or a deadline only late, so phase timings across
/// the gap are not the phase's.
pub const STALL: Duration = Duration::from_secs(5);

/// How often the stall watch ticks.
const STALL_TICK: Duration = Duration::from_millis(500);

/// The stall watch's last tick and the stalls seen since the last [`take_stalls`] (each
/// gap's length beyond one tick).
static STALLS: std::sync::Mutex<Option<(Instant, Vec<Duration>)>> = std::sync::Mutex::new(None);

/// Ticks the stall watch at `now`: a gap since the last tick longer than [`STALL`] (beyond
/// one tick) is recorded. Both the watch thread and [`take_stalls`] tick, so a stall that
/// just ended is counted once, by whichever sees it first.
fn tick_stalls(now: Instant) {
    if let Ok(mut guard) = STALLS.lock() {
        if let Some((last, stalls)) = guard.as_mut() {
            let gap = now
                .saturating_duration_since(*last)
                .saturating_sub(STALL_TICK);
            if gap >= STALL {
                stalls.push(gap);
            }
            *last = now;
        }
    }
}

/// Starts (once per process) a thread that ticks every half second on the monotonic clock
/// and records every gap longer than [`STALL`] for [`take_stalls`]. A gate that was stopped
/// for ten minutes in a trial's configure phase otherwise took the child's exit, seen on
/// waking, as success within the phase's bound.
pub fn watch_stalls() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        if let Ok(mut guard) = STALLS.lock() {
            *guard = Some((Instant::now(), Vec::new()));
        }
        let spawned = thread::Builder::new()
            .name("stall-watch".into())
            .spawn(|| loop {
                thread::sleep(STALL_TICK);
                tick_stalls(Instant::now());
            });
        if let Err(e) = spawned {
            tracing::warn!(
                "cannot start the stall watch thread: {e}; a stopped gate goes unnoticed"
            );
        }
    });
}

/// The stalls [`watch_stalls`] recorded since the last call, oldest first, including one
/// that is ending now (the watch thread may not have woken yet); empty before
/// [`watch_stalls`].
pub fn take_stalls() -> Vec<Duration> {
    tick_stalls(Instant::now());
    STALLS
        .lock()
        .ok()
        .and_then(|mut g| g.as_mut().map(|(_, s)| std::mem::take(s)))
        .unwrap_or_default()
}

/// A CPU set of the given CPU numbers (as `sched_getaffinity` lists them); numbers beyond
/// The CPUs this process may run on (its affinity), ascending.
pub fn allowed_cpus() -> nix::Result<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(Pid::from_raw(0))?;
    Ok((0..nix::sched::CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .collect())
}

/// what a set holds are left out.
pub fn cpu_set(cpus: &[usize]) -> nix::sched::CpuSet {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        let _ = set.set(c);
    }
    set
}

/// Runs `f` with the calling thread on `cpus` (when given), then puts the thread back on
/// the CPUs it had: the gate's own thread keeps off the storage server's CPU during a
/// trial. Threads started by `f` inherit the set.
pub fn on_cpus<T>(cpus: Option<&[usize]>, f: impl FnOnce() -> T) -> T {
    let me = Pid::from_raw(0);
    let before = cpus.and_then(|c| {
        let before = nix::sched::sched_getaffinity(me).ok()?;
        nix::sched::sched_setaffinity(me, &cpu_set(c)).ok()?;
        Some(before)
    });
    let result = f();
    if let Some(b) = before {
        let _ = nix::sched::sched_setaffinity(me, &b);
    }
    result
}

/// Why a phase of a trial ended without success.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    /// The phase's time bound passed; the text says what was still running, or is empty.
    #[error("did not finish within its bound of {}{}", humantime::format_duration(*.0), if .1.is_empty() { String::new() } else { format!(": {}", .1) })]
    Timeout(Duration, String),
    /// SIGINT, SIGTERM or SIGHUP arrived.
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
    pub fn spawn(name: &str, cmd: Command, stdout: &Path, stderr: &Path) -> Result<Child> {
        Child::spawn_on(name, cmd, stdout, stderr, None)
    }

    /// [`Child::spawn`] on the CPUs `cpus` (CPU numbers; every thread and process the
    /// child starts inherits them), or wherever the scheduler likes with `None`.
    pub fn spawn_on(
        name: &str,
        mut cmd: Command,
        stdout: &Path,
        stderr: &Path,
        cpus: Option<&[usize]>,
    ) -> Result<Child> {
        let cpus = cpus.map(cpu_set);
        let out = crate::files::create("trial dir", stdout)?;
        let err = crate::files::create("trial dir", stderr)?;
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        // SAFETY: the closure only makes async-signal-safe system calls (prctl, setrlimit,
        // open, write, sched_setaffinity) and allocates nothing (the CPU set is built
        // before the fork, the path is a C string literal).
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0)?;
                raise_oom_score();
                if let Some(set) = &cpus {
                    nix::sched::sched_setaffinity(Pid::from_raw(0), set)?;
                }
                Ok(())
            });
        }
        if let Some(procs) = CGROUP.lock().ok().and_then(|c| c.clone()) {
            join_cgroup(&mut cmd, procs);
        }
        let inner = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}: {cmd:?}"))?;
        record_group(inner.id());
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

    /// SIGTERM to the child's process group, then SIGCONT: a stopped process (SIGSTOP, a
    /// frozen cluster) acts on SIGTERM only once it runs again.
    pub fn terminate(&self) {
        self.signal(Signal::SIGTERM);
        self.signal(Signal::SIGCONT);
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
        self.terminate();
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

    /// The last `n` lines of the child's stderr and the file, for error messages
    /// ([`output_note`]).
    pub fn stderr_note(&self, n: usize) -> String {
        output_note("stderr", &self.stderr, n)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.finished() {
            self.stop(Duration::from_secs(2));
        }
    }
}

/// `oom_score_adj` of every child: under memory pressure the OOM killer takes a server,
/// mako or compile job (the trial or build then fails with its cause named) before the
/// gate, which tears down and writes its verdict, or its reaper. Raising a score needs no
/// privilege. As written to `/proc/self/oom_score_adj`.
pub const CHILD_OOM_SCORE_ADJ: &str = "500";

/// Sets [`CHILD_OOM_SCORE_ADJ`] for the calling process; between fork and exec, so
/// allocation-free. Best effort: without /proc the child keeps the gate's score.
fn raise_oom_score() {
    use nix::{fcntl::OFlag, sys::stat::Mode};
    if let Ok(fd) = nix::fcntl::open(
        c"/proc/self/oom_score_adj",
        OFlag::O_WRONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        let _ = nix::unistd::write(&fd, CHILD_OOM_SCORE_ADJ.as_bytes());
    }
}

/// The `cgroup.procs` of the run's cgroup, once it has one ([`contain_children_in`]).
static CGROUP: std::sync::Mutex<Option<Arc<OwnedFd>>> = std::sync::Mutex::new(None);

/// From now on (`Some`), every child [`Child::spawn`] starts joins the cgroup whose
/// `cgroup.procs` is `procs` before it runs anything, so that what it forks is in it too;
/// `None` ends that.
pub fn contain_children_in(procs: Option<Arc<OwnedFd>>) {
    if let Ok(mut c) = CGROUP.lock() {
        *c = procs;
    }
}

/// Makes `cmd`'s process join the cgroup whose `cgroup.procs` is `procs` between fork and
/// exec (it writes `0`, itself, there); a child that cannot join does not start (its
/// spawn fails with the reason), so no process of a run is ever left outside.
pub fn join_cgroup(cmd: &mut Command, procs: Arc<OwnedFd>) {
    // SAFETY: write(2) is async-signal-safe; the descriptor is kept open by the Arc the
    // closure owns, and nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::write(&*procs, b"0")?;
            Ok(())
        });
    }
}

/// The command line of `pid`, its arguments joined by spaces ("" when it cannot be read).
pub fn command_line_of(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw)
        .replace('\0', " ")
        .trim_end()
        .to_string()
}

/// Whether any process of group `pgid` is alive (signal 0 probes without sending).
fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok()
}

/// Where every supervised child's process group is written, one number a line, once a
/// run has its run dir ([`record_groups_in`]).
static GROUP_LOG: std::sync::Mutex<Option<File>> = std::sync::Mutex::new(None);

/// From now on, writes the process group of every child [`Child::spawn`] starts into
/// `file` (append, one a line): after the gate's death, the reaper or the next gate then
/// ends only processes of those groups ([`kill_mentioning`]), never a user's viewer of
/// the run's files.
pub fn record_groups_in(file: File) {
    if let Ok(mut log) = GROUP_LOG.lock() {
        *log = Some(file);
    }
}

/// Appends `pgid` to the group log, if there is one. A failed write is ignored: the
/// cleanup then falls back to a command line naming the run dir.
fn record_group(pgid: u32) {
    use std::io::Write as _;
    if let Ok(mut log) = GROUP_LOG.lock() {
        if let Some(f) = log.as_mut() {
            let _ = writeln!(f, "{pgid}");
        }
    }
}

/// The process group of `pid` (`/proc/<pid>/stat`, the field after the parent).
pub fn process_group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(2)?.parse().ok()
}

/// How a child of this process that has exited ended, e.g. `exit status 1` or `killed by
/// SIGSEGV`, read without reaping it (`waitid` with `WNOWAIT`: its owner still waits for
/// it); `None` while it runs or when it is not this process's child.
pub fn exit_of(pid: u32) -> Option<String> {
    use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(Pid::from_raw(pid as i32)), flags).ok()? {
        WaitStatus::Exited(_, code) => Some(format!("exit status {code}")),
        WaitStatus::Signaled(_, sig, _) => Some(format!("killed by {sig}")),
        _ => None,
    }
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

/// Makes the gate the subreaper of everything it starts (`PR_SET_CHILD_SUBREAPER`): a
/// descendant that leaves its process group (`setsid`) and loses its parent comes to the
/// gate instead of init, so [`end_orphans`] can prove it is the gate's and end it.
/// Errors: the kernel refuses (Linux before 3.4).
pub fn adopt_orphans() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
        .context("cannot make the gate the subreaper of its children (PR_SET_CHILD_SUBREAPER)")
}

/// The gate's live children, as `(pid, command)`: what it started, what it adopted
/// ([`adopt_orphans`]), and what it inherited from the process it replaced (`exec`).
pub fn children() -> Vec<(u32, String)> {
    let own = std::process::id();
    live_processes(|pid| parent_of(pid) == Some(own))
}

/// Live (not zombie) processes other than the gate that `keep` accepts by pid, as `(pid,
/// command line with spaces between the arguments)`.
fn live_processes(keep: impl Fn(u32) -> bool) -> Vec<(u32, String)> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own && process_running(pid) && keep(pid))
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            Some((pid, cmd.trim_end().to_string()))
        })
        .collect()
}

/// Kills (SIGKILL) and reaps the children of the gate not in `keep` (pids: the reaper,
/// and what the gate inherited before it ran a trial). After a trial's teardown every
/// process the trial started is gone, so a live child of the gate is a descendant that
/// left the trial's process groups and lost its parent, and was adopted
/// ([`adopt_orphans`]): e.g. a worker that called `setsid` and outlived its mako, whatever
/// its command line names. (An orphan of an inherited child would be adopted too; such a
/// child's own children are rare, and a cgroup, where the host has one, tells them apart.)
/// Waits at most a second for each to die. Returns them as `(pid, command)`.
pub fn end_orphans(keep: &[u32]) -> Vec<(u32, String)> {
    let children = |_: ()| -> Vec<(u32, String)> {
        children()
            .into_iter()
            .filter(|(pid, _)| !keep.contains(pid))
            .collect()
    };
    let mut ended: Vec<(u32, String)> = Vec::new();
    // A few rounds: an orphan may fork while it is being killed, and its children come here.
    for _ in 0..5 {
        let found = children(());
        if found.is_empty() {
            break;
        }
        for (pid, cmd) in found {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            reap(&[pid]);
            if !ended.iter().any(|(q, _)| *q == pid) {
                ended.push((pid, cmd));
            }
        }
    }
    ended
}

/// Reaps those of `pids` that are children of the gate and were killed, waiting at most
/// a second for each (no `std::process::Child` owns them: adopted orphans, escapees a
/// cgroup kill ended); the others are left alone.
pub fn reap(pids: &[u32]) {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    for &pid in pids {
        let p = Pid::from_raw(pid as i32);
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            match waitpid(p, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
    }
}

/// The parent pid of `pid` (`/proc/<pid>/stat`, the field after the state).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
}

/// Live processes whose command line mentions `needle` (e.g. a run's directory, which
/// every fdbserver, fdbcli and mako of the run gets as an argument): `(pid, command)`.
pub fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let mut found = live_processes(|_| true);
    found.retain(|(_, cmd)| cmd.contains(needle));
    found
}

/// Kills (SIGKILL) every process of this user whose command line names a path under `dir`
/// and, when `groups` is given, whose process group is one of them, in a few rounds (a process may
/// fork while it is being killed): what a dead gate's run (its groups recorded by
/// [`record_groups_in`], so a user's `tail -f` of a trace file is spared), or its build's
/// compile jobs (ninja starts each in its own process group, out of reach of the
/// parent-death signal), left running. Returns them as `(pid, command)`.
pub fn kill_mentioning(dir: &Path, groups: Option<&[u32]>) -> Vec<(u32, String)> {
    // The trailing slash keeps `perfgate-12` from matching `perfgate-123`.
    let needle = format!("{}/", dir.display());
    let in_groups =
        |pid: u32| groups.is_none_or(|g| process_group_of(pid).is_some_and(|pg| g.contains(&pg)));
    // Everything the gate starts runs as the gate's user: another user's process that names
    // the same path (a viewer of a shared work dir) is never the gate's.
    let me = nix::unistd::geteuid().as_raw();
    let mine = |pid: u32| {
        procfs::process::Process::new(pid as i32)
            .and_then(|p| p.status())
            .is_ok_and(|s| s.euid == me)
    };
    let mut killed: Vec<(u32, String)> = Vec::new();
    for _ in 0..20 {
        let mut left = processes_mentioning(&needle);
        left.retain(|(pid, _)| in_groups(*pid) && mine(*pid));
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

/// A child's output file as text: read as bytes and decoded lossily (a byte that is not
/// UTF-8 becomes U+FFFD, so one stray byte in fdbserver's stderr or mako's report cannot
/// hide the lines around it). Errors: the file cannot be read, or is not a regular file of
/// at most [`crate::input::MAX_BYTES`] (named with the cause); never "nothing found".
pub fn read_output(path: &Path) -> Result<String> {
    let bytes =
        crate::input::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// What a short-lived tool printed, each stream decoded like [`read_output`].
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Trimmed stdout when the tool succeeded; else an error naming `what` the tool was
    /// asked, its exit status and the end of its stderr.
    pub fn stdout_if_success(self, what: &str) -> Result<String> {
        if self.status.success() {
            return Ok(self.stdout.trim().to_string());
        }
        let end = excerpt(self.stderr.trim(), 5);
        anyhow::bail!("{what} failed ({}): {end}", self.status)
    }
}

/// Adds group and other write to the process's umask (kept by every child it starts), so
/// that no file or directory the gate or its children create is writable by other users.
pub fn keep_writes_private() {
    use nix::sys::stat::{umask, Mode};
    let old = umask(Mode::empty());
    umask(old | Mode::S_IWGRP | Mode::S_IWOTH);
}

/// Keeps from `PATH` every entry a program found there could be another user's through:
/// a relative one (an empty entry or `.` is the current directory, which may be anyone's)
/// and a directory that another user owns or could change (`files::check_trusted`: the
/// directory and each on its way, sticky ones excepted). Every tool the gate and its
/// children start by name (git, cmake, ninja, the compilers cmake finds, valgrind, cargo)
/// is searched for on the `PATH` this leaves, and runs as the gate's user. Returns each
/// entry kept out, with why, for a warning.
pub fn keep_path_trusted() -> Vec<String> {
    let Some(path) = std::env::var_os("PATH") else {
        return Vec::new();
    };
    let (kept, dropped) = trusted_path(&path);
    if !dropped.is_empty() {
        std::env::set_var("PATH", kept);
    }
    dropped
}

/// [`keep_path_trusted`]'s work on `path`, a `PATH` value: the entries kept, joined
/// again, and why each other one was not.
fn trusted_path(path: &std::ffi::OsStr) -> (std::ffi::OsString, Vec<String>) {
    let mut dropped = Vec::new();
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|dir| {
            let why = if !dir.is_absolute() {
                format!(
                    "PATH entry '{}' is relative (an empty one is the current directory), \
                     whose programs are whoever's directory the gate starts in",
                    dir.display()
                )
            } else if std::fs::symlink_metadata(dir).is_err() {
                // Missing: nothing to find there now, and another user might make it later.
                return false;
            } else {
                match crate::files::check_trusted("PATH entry", dir) {
                    Ok(_) => return true,
                    Err(e) => format!("{e:#}"),
                }
            };
            dropped.push(format!("{why}: it is not searched"));
            false
        })
        .collect();
    let kept = std::env::join_paths(kept).unwrap_or_default();
    (kept, dropped)
}

/// Runs a short-lived tool (git, `fdbserver --version`, a compiler's `--version`) to its
/// end, supervised like every child (own process group, parent-death signal), stdout and
/// stderr in a private temporary directory. Nothing the gate starts waits unbounded: a
/// tool still running after `bound` has its group killed. Errors: it cannot start, it
/// ran longer than `bound` (named with the bound), SIGINT/SIGTERM arrived, its output
/// cannot be read.
pub fn run_bounded(name: &str, cmd: Command, bound: Duration) -> Result<Output> {
    let dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .context("cannot create a temporary directory")?;
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    // Not the gate's own directory, which may be another user's: a tool may read files
    // there (a pyenv shim's `.python-version`, git's or cargo's configuration).
    let mut cmd = cmd;
    if cmd.get_current_dir().is_none() {
        cmd.current_dir(dir.path());
    }
    let mut child = Child::spawn(name, cmd, &out, &err)?;
    let status = child
        .wait_until(Instant::now() + bound, bound, || Ok(()))
        .map_err(|e| anyhow::anyhow!("{name} {e}"))?;
    Ok(Output {
        status,
        stdout: read_output(&out)?,
        stderr: read_output(&err)?,
    })
}

/// Last `n` lines of a text file as an [`excerpt`] ("" when unreadable: for excerpts in
/// messages only; the file keeps the full text).
pub fn tail(path: &Path, n: usize) -> String {
    excerpt(&read_output(path).unwrap_or_default(), n)
}

/// What a failed phase's message says of one of its child's output files: the last `n`
/// lines as an [`excerpt`] and the file that holds all of it, or that the file is empty
/// (or unreadable), e.g. `stderr (…/fdbcli-configure.err): ERROR: Database already exists!`.
pub fn output_note(what: &str, path: &Path, n: usize) -> String {
    let text = tail(path, n);
    if text.trim().is_empty() {
        format!("{what} ({}) is empty", path.display())
    } else if text.contains('\n') {
        format!("{what} ({}) ends with:\n{text}", path.display())
    } else {
        format!("{what} ({}): {text}", path.display())
    }
}

/// Bytes one line of an [`excerpt`] keeps: the start of a longer line, then how much was cut.
pub const EXCERPT_LINE_BYTES: usize = 300;

/// Bytes a whole [`excerpt`] holds at most, its cut markers included.
pub const EXCERPT_BYTES: usize = 2048;

/// The last `n` lines of a child's output as the gate copies them into messages, and so
/// into the terminal, summary.json, junit.xml and report.html: each line at most
/// [`EXCERPT_LINE_BYTES`], the whole at most [`EXCERPT_BYTES`] (its last lines kept), and
/// every character that XML 1.0 or a terminal would take for something else (C0 and C1
/// controls but tab, U+FFFE, U+FFFF) written as `\u{..}`. A 12 MB stderr line from mako
/// becomes 300 bytes and a note of the 12 MB cut, never a 36 MB junit.xml.
pub fn excerpt(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for line in lines[lines.len().saturating_sub(n)..].iter().rev() {
        let line = one_line(line);
        const CUT: &str = "[earlier lines cut]";
        if bytes + line.len() + 1 > EXCERPT_BYTES - CUT.len() {
            kept.push(CUT.into());
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    kept.reverse();
    kept.join("\n")
}

/// Characters no copied text keeps as they are (`fdb::unsafe_in_text`): controls,
/// U+FFFE/U+FFFF, bidirectional overrides and isolates.
pub use fdb::unsafe_in_text;

/// `text` as the gate copies it into a message or file: each character [`unsafe_in_text`]
/// but those in `keep` written as `\u{..}`, and cut after `max_bytes` with how much was
/// cut (never inside a character).
pub fn clean_text(text: &str, max_bytes: usize, keep: &[char]) -> String {
    let mut out = String::new();
    for (i, c) in text.char_indices() {
        if out.len() >= max_bytes {
            out.push_str(&format!(" [{} more bytes cut]", text.len() - i));
            break;
        }
        if !keep.contains(&c) && unsafe_in_text(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as the gate shows it to people (the terminal, `summary.md`, `report.html`, the
/// plan): every character [`unsafe_in_text`] but tab and newline written as `\u{..}`, as
/// [`excerpt`] writes a child's output, and nothing cut. Text read back from files the
/// gate did not just write (a saved run, a record, `CMakeCache.txt`) reaches people through
/// it, so that no such file can clear the screen, move the cursor or retitle the terminal.
pub fn printable(text: &str) -> String {
    clean_text(text, usize::MAX, &['\t', '\n'])
}

/// JSON text (serde_json's) as the gate prints it for scripts on a terminal: every
/// character [`unsafe_in_text`] that serde_json leaves as it is (DEL, C1 controls such as
/// the one-byte CSI, bidirectional overrides) written as a JSON `\uXXXX` escape, so the
/// value read back is the same and the terminal shows it as text. serde_json escapes the
/// C0 controls inside strings already; the newlines and tabs of its layout are kept.
pub fn json_printable(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if unsafe_in_text(c) && !matches!(c, '\n' | '\t' | '\r') {
            // Every such character is in the Basic Multilingual Plane: one escape each.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// One line of an [`excerpt`]: cleaned (tabs kept), then cut to [`EXCERPT_LINE_BYTES`].
fn one_line(line: &str) -> String {
    clean_text(line, EXCERPT_LINE_BYTES, &['\t'])
}

#[cfg(test)]
mod tests {
    /// A short tool starts in a directory of the gate's own, not the caller's.
    #[test]
    fn a_short_tool_runs_in_a_private_directory_unless_given_one() {
        let here = std::env::current_dir().unwrap();
        let o = run_bounded("pwd", Command::new("pwd"), Duration::from_secs(60)).unwrap();
        let dir = PathBuf::from(o.stdout.trim());
        assert_ne!(dir, here);
        assert!(
            dir.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(".tmp"),
            "{dir:?}"
        );
        let mut given = Command::new("pwd");
        given.current_dir("/");
        let o = run_bounded("pwd", given, Duration::from_secs(60)).unwrap();
        assert_eq!(o.stdout.trim(), "/");
    }

    /// A program on PATH runs as the gate's user: only absolute entries of directories no
    /// other user can change are searched.
    #[test]
    fn path_entries_another_user_could_fill_are_not_searched() {
        use std::os::unix::fs::PermissionsExt as _;
        let mine = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        std::os::unix::fs::chown(theirs.path(), Some(65534), Some(65534)).unwrap();
        let open = tempfile::tempdir().unwrap();
        std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let gone = mine.path().join("gone");
        let path = std::env::join_paths([
            Path::new(""),
            Path::new("."),
            Path::new("/usr/bin"),
            mine.path(),
            theirs.path(),
            open.path(),
            &gone,
        ])
        .unwrap();
        let (kept, dropped) = trusted_path(&path);
        let kept: Vec<PathBuf> = std::env::split_paths(&kept).collect();
        assert_eq!(kept, [Path::new("/usr/bin"), mine.path()]);
        assert_eq!(dropped.len(), 4, "{dropped:#?}");
        assert!(dropped[0].starts_with("PATH entry '' is relative"));
        assert!(dropped[1].starts_with("PATH entry '.' is relative"));
        for (said, dir) in dropped[2..].iter().zip([theirs.path(), open.path()]) {
            assert!(said.contains(&dir.display().to_string()), "{said}");
            assert!(said.ends_with("it is not searched"), "{said}");
        }
    }

    use super::*;

    #[test]
    fn a_gap_in_the_gates_ticks_is_a_stall_counted_once() {
        watch_stalls();
        let _ = take_stalls();
        // As if the gate had not run for 7 s past the watch's last tick.
        tick_stalls(Instant::now() + Duration::from_secs(7) + STALL_TICK);
        let stalls = take_stalls();
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert!(stalls[0] >= Duration::from_secs(7) - POLL, "{stalls:?}");
        // Taken once; the clock now behind the last tick is no gap.
        assert!(take_stalls().is_empty());
    }

    /// Runs a short command to completion within `bound`, stdout and stderr to files.
    /// Returns the exit status; the caller reads the files.
    fn run_to_end(
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
        let r = run_to_end(
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
        let status = run_to_end(
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
        // A child that ended is described without being reaped (its owner waits for it).
        let mut c = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while exit_of(c.id()).is_none() {
            assert!(Instant::now() < deadline, "sh -c 'exit 3' never ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(exit_of(c.id()).as_deref(), Some("exit status 3"));
        assert_eq!(
            c.wait().unwrap().code(),
            Some(3),
            "still the owner's to reap"
        );
    }

    #[test]
    fn an_excerpt_is_bounded_and_holds_only_what_xml_and_terminals_take() {
        // U+FFFE/U+FFFF, which XML forbids (maven-surefire 2961), and a 12 MB line from a
        // child.
        let huge = "x".repeat(12 << 20);
        let text =
            format!("first\nbad \u{fffe}\u{ffff} \x1b[31mred\u{9b}\x07\tend\n{huge}\nlast\n");
        let e = excerpt(&text, 5);
        assert!(e.len() <= EXCERPT_BYTES, "{}", e.len());
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines[0], "first");
        assert_eq!(
            lines[1],
            "bad \\u{fffe}\\u{ffff} \\u{1b}[31mred\\u{9b}\\u{7}\tend"
        );
        assert_eq!(
            lines[2],
            format!("{} [{} more bytes cut]", "x".repeat(300), (12 << 20) - 300)
        );
        assert_eq!(lines[3], "last");
        // Many long lines: the last ones are kept, and the cut is said.
        let many = (0..100)
            .map(|i| format!("{i:03}{}", "y".repeat(400)))
            .collect::<Vec<_>>();
        let e = excerpt(&many.join("\n"), 100);
        assert!(e.len() <= EXCERPT_BYTES, "{}", e.len());
        assert!(e.starts_with("[earlier lines cut]\n"), "{e}");
        assert!(e.lines().last().unwrap().starts_with("099"), "{e}");
        // Bidirectional overrides would reorder what a terminal shows.
        assert_eq!(excerpt("a\u{202e}b\u{2066}c", 1), "a\\u{202e}b\\u{2066}c");
        // A cut never splits a character.
        let wide = "é".repeat(400);
        assert!(excerpt(&wide, 1).starts_with(&"é".repeat(150)));
    }

    #[test]
    fn output_is_read_as_bytes_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr");
        std::fs::write(&path, b"WARNING: \xff\nWARNING: Invalid knob option 'x'\n").unwrap();
        let text = read_output(&path).unwrap();
        assert_eq!(
            text,
            "WARNING: \u{fffd}\nWARNING: Invalid knob option 'x'\n"
        );
        let err = read_output(&dir.path().join("gone")).unwrap_err();
        assert!(format!("{err:#}").contains("cannot read"), "{err:#}");
    }

    #[test]
    fn a_short_lived_tool_is_bounded_and_its_output_decoded() {
        let o = run_bounded(
            "printer",
            sh("printf 'a\\377b\\n'; echo oops >&2; exit 4"),
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.status.code(), Some(4));
        assert_eq!(
            (o.stdout.as_str(), o.stderr.as_str()),
            ("a\u{fffd}b\n", "oops\n")
        );
        let err = o.stdout_if_success("`printer`").unwrap_err().to_string();
        assert!(
            err.contains("`printer` failed") && err.ends_with("oops"),
            "{err}"
        );
        // A tool that never ends (a hanging `fdbserver --version`): an error naming the
        // bound, and nothing of it left.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("echo $$ > {}; sleep 300", pidfile.display());
        let err = run_bounded(
            "fdbserver --version",
            sh(&script),
            Duration::from_millis(300),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("fdbserver --version did not finish within its bound of 300ms"),
            "{err}"
        );
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!process_running(pid), "{pid} survived");
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
