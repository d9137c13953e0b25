//! Run stage: low-rate samples of a running trial: the work dir filesystem's usage
//! (peak growth, so a filling RAM disk shows) and the CPU of every role over the
//! measurement window (per-role work per transaction, and whether the single-threaded
//! storage server was near one core).
//!
//! One `statfs` a second and, in the measurement window, a read of each role's
//! `/proc/<pid>/stat` four times a second (about six small files): the gate's own
//! overhead stays far below 0.5% of a core.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use nix::sys::statfs::statfs;

use crate::{
    config::HARDWARE_PMU,
    results::trial::{CpuRole, RoleCpu},
};

const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The event counted per role besides CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkEvent {
    /// Instructions retired in user space (`PERF_COUNT_HW_INSTRUCTIONS`): needs a PMU.
    Instructions,
    /// CPU time in nanoseconds (`PERF_COUNT_SW_TASK_CLOCK`), which every Linux kernel
    /// counts: the same code path on a host without a PMU, for tests.
    TaskClock,
}
const CPU_SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Samples of one trial.
#[derive(Debug)]
pub struct Monitor {
    workdir: PathBuf,
    used_at_start: Option<u64>,
    /// Largest growth of the work dir filesystem's used bytes since the trial started.
    pub peak_growth_bytes: u64,
    last_sample: Option<Instant>,
    cpu: Option<CpuWindow>,
    event: WorkEvent,
    /// Why the last CPU sample failed (the process that could not be read), for a trial
    /// whose window then has no figures.
    cpu_missed: Option<String>,
}

/// The processes of each role and their CPU at the window's start and latest sample.
#[derive(Debug)]
struct CpuWindow {
    pids: Vec<(CpuRole, u32)>,
    /// The client's root process, whose reaped children's CPU (`cutime`, `cstime`) counts.
    client_root: Option<u32>,
    /// One counter of `Monitor::event` per thread of each role's processes, or why there
    /// are none.
    counters: Result<Vec<(CpuRole, perf_event::Counter)>, String>,
    start: CpuSample,
    last: CpuSample,
    /// The first sample at or after each whole second of the window (1 s, 2 s, ...): the
    /// per-second series within the window.
    marks: Vec<CpuSample>,
    /// No more samples: the window ended ([`Monitor::close_cpu_window`]).
    closed: bool,
}

#[derive(Debug, Clone)]
struct CpuSample {
    at: Instant,
    seconds: BTreeMap<CpuRole, f64>,
    /// Events counted so far per role (empty without counters).
    events: BTreeMap<CpuRole, f64>,
}

impl Monitor {
    pub fn new(workdir: &Path) -> Monitor {
        Monitor {
            workdir: workdir.to_path_buf(),
            used_at_start: used_bytes(workdir),
            peak_growth_bytes: 0,
            last_sample: None,
            cpu: None,
            event: WorkEvent::Instructions,
            cpu_missed: None,
        }
    }

    /// This monitor counting `event` instead of instructions.
    pub fn counting(self, event: WorkEvent) -> Monitor {
        Monitor { event, ..self }
    }

    /// Takes a usage sample if the last one is a second old, and a CPU sample if the CPU
    /// window is open and its last sample is a quarter second old; call it often.
    pub fn tick(&mut self) {
        if let Some(w) = &mut self.cpu {
            if !w.closed && w.last.at.elapsed() >= CPU_SAMPLE_EVERY {
                // A process that is gone ends the window at the previous sample.
                let sample = w.sample();
                if let Err(why) = &sample {
                    self.cpu_missed = Some(why.clone());
                }
                if let Ok(s) = sample {
                    let second = Duration::from_secs(w.marks.len() as u64 + 1);
                    if s.at.duration_since(w.start.at) >= second {
                        w.marks.push(s.clone());
                    }
                    w.last = s;
                }
            }
        }
        if self.last_sample.is_some_and(|t| t.elapsed() < SAMPLE_EVERY) {
            return;
        }
        self.last_sample = Some(Instant::now());
        if let (Some(start), Some(now)) = (self.used_at_start, used_bytes(&self.workdir)) {
            self.peak_growth_bytes = self.peak_growth_bytes.max(now.saturating_sub(start));
        }
    }

    /// Opens the CPU window over the servers (`servers`: role and pid) and the client
    /// process `client` with every process it has forked by now; only the first call
    /// counts. Nothing is measured if a process cannot be read.
    pub fn start_cpu_window(&mut self, servers: &[(CpuRole, u32)], client: Option<u32>) {
        if self.cpu.is_some() {
            return;
        }
        let mut pids = servers.to_vec();
        if let Some(root) = client {
            pids.extend(
                std::iter::once(root)
                    .chain(descendants(root))
                    .map(|p| (CpuRole::Client, p)),
            );
        }
        let empty = CpuSample {
            at: Instant::now(),
            seconds: BTreeMap::new(),
            events: BTreeMap::new(),
        };
        let mut w = CpuWindow {
            counters: open_counters(self.event, &pids),
            pids,
            client_root: client,
            start: empty.clone(),
            last: empty,
            marks: Vec::new(),
            closed: false,
        };
        match w.sample() {
            Ok(s) => {
                (w.start, w.last) = (s.clone(), s);
                self.cpu = Some(w);
            }
            Err(why) => self.cpu_missed = Some(format!("the window could not open: {why}")),
        }
    }

    /// Why the CPU window has no figures, when a sample failed: the process that could
    /// not be read (gone, or its `/proc` entry unreadable).
    pub fn cpu_missed(&self) -> Option<&str> {
        self.cpu_missed.as_deref()
    }

    /// [`Monitor::role_cpu`] of trial `index`, with a warning that says why when there
    /// is none although a sample was tried.
    pub fn trial_cpu(&self, index: usize) -> Option<RoleCpu> {
        let cpu = self.role_cpu();
        if let (None, Some(why)) = (&cpu, self.cpu_missed()) {
            tracing::warn!("trial {index}: no CPU figures: {why}");
        }
        cpu
    }

    /// Ends the CPU window now, with a last sample, for a client that outlives its
    /// measurement window (the multitest driver's testers); later ticks sample no CPU.
    pub fn close_cpu_window(&mut self) {
        if let Some(w) = &mut self.cpu {
            if !w.closed {
                if let Ok(s) = w.sample() {
                    w.last = s;
                }
                w.closed = true;
            }
        }
    }

    /// CPU of each role from the window's start to its last sample; `None` if the window
    /// never opened or no sample followed its start.
    pub fn role_cpu(&self) -> Option<RoleCpu> {
        let w = self.cpu.as_ref()?;
        let wall = w.last.at.duration_since(w.start.at).as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        let cores = w
            .last
            .seconds
            .iter()
            .map(|(role, s)| (*role, (s - w.start.seconds[role]).max(0.0) / wall))
            .collect();
        let mut per_second: BTreeMap<CpuRole, Vec<f64>> = BTreeMap::new();
        for (a, b) in std::iter::once(&w.start).chain(&w.marks).zip(&w.marks) {
            let dt = b.at.duration_since(a.at).as_secs_f64();
            for (role, s) in &b.seconds {
                let used = (s - a.seconds.get(role).copied().unwrap_or(*s)).max(0.0);
                per_second.entry(*role).or_default().push(used / dt);
            }
        }
        let (instructions_per_s, instructions_unavailable) = match &w.counters {
            Ok(_) => (
                w.last
                    .events
                    .iter()
                    .map(|(role, n)| (*role, (n - w.start.events[role]).max(0.0) / wall))
                    .collect(),
                None,
            ),
            Err(why) => (BTreeMap::new(), Some(why.clone())),
        };
        Some(RoleCpu {
            window_s: wall,
            cores,
            per_second,
            instructions_per_s,
            instructions_unavailable,
        })
    }
}

/// One counter of `event` on every thread of every process in `pids` (threads started
/// later are counted through `inherit`, once they end); or why none could be opened: no
/// PMU, or `perf_event_open` refused (`kernel.perf_event_paranoid`, a seccomp filter).
fn open_counters(
    event: WorkEvent,
    pids: &[(CpuRole, u32)],
) -> Result<Vec<(CpuRole, perf_event::Counter)>, String> {
    use perf_event::events::{Hardware, Software};
    if event == WorkEvent::Instructions && !Path::new(HARDWARE_PMU).exists() {
        return Err(format!(
            "this host has no hardware PMU ({HARDWARE_PMU} is absent, as on VMs without PMU \
             passthrough): instructions are not counted"
        ));
    }
    let mut counters = Vec::new();
    for &(role, pid) in pids {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map_err(|e| format!("cannot list the threads of pid {pid}: {e}"))?;
        for tid in tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse::<i32>().ok())
        {
            let mut b = perf_event::Builder::new();
            b = match event {
                WorkEvent::Instructions => b.kind(Hardware::INSTRUCTIONS),
                WorkEvent::TaskClock => b.kind(Software::TASK_CLOCK),
            };
            let mut b = b.observe_pid(tid).any_cpu();
            b.inherit(true);
            let mut c = match b.build() {
                Ok(c) => c,
                // The thread ended since the listing: nothing of it to count.
                Err(e) if e.raw_os_error() == Some(nix::libc::ESRCH) => continue,
                Err(e) => {
                    return Err(format!(
                        "perf_event_open of {event:?} refused for thread {tid} of pid {pid}: \
                         {e} (kernel.perf_event_paranoid is {}; containers often filter the \
                         call)",
                        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                            .map_or("unknown".to_string(), |s| s.trim().to_string())
                    ))
                }
            };
            c.enable()
                .map_err(|e| format!("cannot enable the {event:?} counter of thread {tid}: {e}"))?;
            counters.push((role, c));
        }
    }
    Ok(counters)
}

/// Events counted so far per role, scaled up when the kernel multiplexed a counter
/// (running less than enabled); `None` if one cannot be read or never ran.
fn read_counters(
    counters: &mut [(CpuRole, perf_event::Counter)],
) -> Option<BTreeMap<CpuRole, f64>> {
    let mut per_role = BTreeMap::new();
    for (role, c) in counters {
        let t = c.read_count_and_time().ok()?;
        let scaled = if t.time_running == 0 {
            0.0
        } else {
            t.count as f64 * t.time_enabled as f64 / t.time_running as f64
        };
        *per_role.entry(*role).or_insert(0.0) += scaled;
    }
    Some(per_role)
}

impl CpuWindow {
    /// CPU seconds of each role now; `Err` naming the process that is gone (or the
    /// counters that cannot be read).
    fn sample(&mut self) -> Result<CpuSample, String> {
        let mut seconds = BTreeMap::new();
        for &(role, pid) in &self.pids {
            let t =
                cpu_times(pid).ok_or_else(|| format!("pid {pid} ({role}) could not be read"))?;
            let own = t.user + t.system;
            let reaped = if Some(pid) == self.client_root {
                t.children_user + t.children_system
            } else {
                0.0
            };
            *seconds.entry(role).or_insert(0.0) += own + reaped;
        }
        let events = match &mut self.counters {
            Ok(c) => read_counters(c).ok_or("the event counters could not be read")?,
            Err(_) => BTreeMap::new(),
        };
        Ok(CpuSample {
            at: Instant::now(),
            seconds,
            events,
        })
    }
}

/// Every live descendant of `root` (children, their children, ...), from `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((pid, cpu_times(pid)?.ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Used bytes of the filesystem holding `path` (total minus free).
fn used_bytes(path: &Path) -> Option<u64> {
    let st = statfs(path).ok()?;
    let block = st.block_size() as u64;
    Some((st.blocks() as u64).saturating_sub(st.blocks_free() as u64) * block)
}

/// What `/proc/<pid>/stat` says of a process's CPU, seconds.
#[derive(Debug, Clone, Copy)]
struct CpuTimes {
    ppid: u32,
    user: f64,
    system: f64,
    /// Of its children that it has waited for.
    children_user: f64,
    children_system: f64,
}

/// Fields 4 (ppid) and 14-17 (utime, stime, cutime, cstime) of `/proc/<pid>/stat`
/// (proc(5)); `None` if the process is gone or the file is not in that format.
fn cpu_times(pid: u32) -> Option<CpuTimes> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ") ".
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    // After the command name, field 3 (state) is index 0, so field N is index N - 3.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()?? as f64;
    Some(CpuTimes {
        ppid: u32::try_from(field(4)?).ok()?,
        user: field(14)? as f64 / hz,
        system: field(15)? as f64 / hz,
        children_user: field(16)? as f64 / hz,
        children_system: field(17)? as f64 / hz,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_seconds(pid: u32) -> f64 {
        let t = cpu_times(pid).expect("a live process");
        t.user + t.system
    }

    /// `sh -c script`; a script that is one command `exec`s it, so that killing the
    /// child kills it (dash forks a lone command, which outlived the tests as orphans).
    fn busy(script: &str) -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap()
    }

    #[test]
    fn each_role_gets_its_own_cpu_and_the_client_counts_its_forks() {
        let mut server = busy("while :; do :; done");
        let idle = busy("exec sleep 600");
        // A client that forks a busy worker, like mako -p 1, and waits for it.
        let mut client = busy("(while :; do :; done) & wait");
        // The fork may take a moment to appear; the window must see it.
        while descendants(client.id()).is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut m = Monitor::new(Path::new("/"));
        m.start_cpu_window(
            &[(CpuRole::Storage, server.id()), (CpuRole::Log, idle.id())],
            Some(client.id()),
        );
        let worker = descendants(client.id())[0];
        // CPU time, not wall time, is awaited: any host gives a busy loop some CPU.
        let (s0, w0) = (cpu_seconds(server.id()), cpu_seconds(worker));
        while cpu_seconds(server.id()) < s0 + 0.2 || cpu_seconds(worker) < w0 + 0.2 {
            std::thread::sleep(Duration::from_millis(20));
            m.tick();
        }
        std::thread::sleep(CPU_SAMPLE_EVERY);
        m.tick();
        let cpu = m.role_cpu().expect("a window");
        for c in [&mut server, &mut client] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(worker as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let mut idle = idle;
        idle.kill().unwrap();
        idle.wait().unwrap();
        let (storage, log, client) = (
            cpu.cores[&CpuRole::Storage],
            cpu.cores[&CpuRole::Log],
            cpu.cores[&CpuRole::Client],
        );
        assert!(storage > 0.0 && storage <= 1.05, "{cpu:?}");
        assert!(client > 0.0 && client <= 1.05, "{cpu:?}");
        assert!(log < 0.05, "a sleeping process used CPU: {cpu:?}");
        assert!(cpu.window_s > 0.0, "{cpu:?}");
    }

    /// Stops (`SIGSTOP`) or continues (`SIGCONT`) every process of `pids`, and waits until
    /// each stopped one is seen stopped in `/proc` (state `T`).
    fn freeze(pids: &[u32], stop: bool) {
        use nix::sys::signal::{kill, Signal};
        let sig = if stop {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        for &p in pids {
            kill(nix::unistd::Pid::from_raw(p as i32), sig).unwrap();
        }
        while stop
            && pids.iter().any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| Some(s.rsplit_once(") ")?.1.starts_with('T')))
                    != Some(true)
            })
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The per-thread counter path, with the software event every kernel has: the task
    /// clock it counts agrees with the CPU time `/proc` reports, role by role. The
    /// processes are stopped while the window's first and last samples are taken, so the
    /// two sources are read at the same point of each process's work whatever else the
    /// host runs (a loaded host once delayed the counter read behind the `/proc` read by
    /// enough to differ by 40%).
    #[test]
    fn counted_events_follow_each_role_through_every_thread() {
        // Two busy threads in one process (a multi-threaded client) and one busy server.
        let mut server = busy("while :; do :; done");
        let mut client = busy("(while :; do :; done) & (while :; do :; done) & wait");
        while descendants(client.id()).len() < 2 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let all: Vec<u32> = [server.id(), client.id()]
            .into_iter()
            .chain(descendants(client.id()))
            .collect();
        let mut m = Monitor::new(Path::new("/")).counting(WorkEvent::TaskClock);
        freeze(&all, true);
        m.start_cpu_window(&[(CpuRole::Storage, server.id())], Some(client.id()));
        freeze(&all, false);
        // A second of CPU in each role, however little of the host they get (see below).
        let client_seconds = || {
            descendants(client.id())
                .into_iter()
                .map(cpu_seconds)
                .sum::<f64>()
        };
        let (s0, c0) = (cpu_seconds(server.id()), client_seconds());
        while cpu_seconds(server.id()) < s0 + 1.0 || client_seconds() < c0 + 1.0 {
            std::thread::sleep(Duration::from_millis(20));
            m.tick();
        }
        freeze(&all, true);
        std::thread::sleep(CPU_SAMPLE_EVERY);
        m.tick();
        let cpu = m.role_cpu().expect("a window");
        for &p in &all {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        for c in [&mut server, &mut client] {
            c.wait().unwrap();
        }
        if let Some(why) = &cpu.instructions_unavailable {
            // A host that forbids perf_event_open altogether (a seccomp filter): the reason
            // is recorded instead, naming the call.
            assert!(why.contains("perf_event_open"), "{why}");
            return;
        }
        for role in [CpuRole::Storage, CpuRole::Client] {
            // Task clock: nanoseconds of CPU per wall-clock second = cores x 10^9. /proc
            // charges a whole 10 ms tick to the task running when it fires: exact for a
            // loop with a CPU to itself, but on a host busy with other work (short slices)
            // its count of half a second's CPU was seen 21% off. A counter missing from one
            // of the client's two threads would be 50% off.
            let counted = cpu.instructions_per_s[&role] / 1e9;
            let proc = cpu.cores[&role];
            assert!(
                proc > 0.0 && (counted / proc - 1.0).abs() < 0.3,
                "{role}: counted {counted} cores, /proc {proc}: {cpu:?}"
            );
        }
    }

    #[test]
    fn a_host_without_a_pmu_says_so_instead_of_counting_instructions() {
        let mut idle = busy("exec sleep 600");
        let mut m = Monitor::new(Path::new("/"));
        m.start_cpu_window(&[(CpuRole::Storage, idle.id())], None);
        std::thread::sleep(CPU_SAMPLE_EVERY);
        m.tick();
        let cpu = m.role_cpu().expect("a window");
        idle.kill().unwrap();
        idle.wait().unwrap();
        if Path::new(HARDWARE_PMU).exists() {
            assert!(
                cpu.instructions_per_s.contains_key(&CpuRole::Storage)
                    || cpu.instructions_unavailable.is_some(),
                "{cpu:?}"
            );
        } else {
            assert!(cpu.instructions_per_s.is_empty(), "{cpu:?}");
            let why = cpu.instructions_unavailable.expect("a reason");
            assert!(why.contains("no hardware PMU"), "{why}");
        }
    }

    #[test]
    fn a_process_that_ends_closes_the_window_at_its_last_sample() {
        let mut short = busy("exec sleep 600");
        let mut m = Monitor::new(Path::new("/"));
        m.start_cpu_window(&[(CpuRole::Storage, short.id())], None);
        short.kill().unwrap();
        short.wait().unwrap();
        std::thread::sleep(CPU_SAMPLE_EVERY);
        m.tick();
        // Only the start sample exists: no window to report, and why.
        assert_eq!(m.role_cpu(), None);
        let why = format!("pid {} (storage) could not be read", short.id());
        assert_eq!(m.cpu_missed(), Some(why.as_str()));
    }

    #[test]
    fn growth_of_the_work_dir_is_tracked() {
        let dir = if Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let mut m = Monitor::new(dir.path());
        std::fs::write(dir.path().join("data"), vec![1u8; 8 << 20]).unwrap();
        m.tick();
        // Other programs may write or delete at the same time; 8 MiB dominates.
        assert!(m.peak_growth_bytes >= 4 << 20, "{}", m.peak_growth_bytes);
    }
}
