//! Shared parts of the FDB test double: its behaviour file and the tiny line protocol its
//! fake fdbserver (coordinator) speaks with the fake fdbcli and mako.
//!
//! A fake build tree is `<root>/bin/{fdbserver,fdbcli,mako}` (symlinks to these binaries),
//! `<root>/lib/libfdb_c.so` (empty) and `<root>/double.json` (a [`Behaviour`]). The
//! programs find the root from `argv[0]`, so two trees behave independently. A tree the
//! gate built from a fixture source has no `double.json` (the gate copies only the files
//! FDB's own trees have): there the fake `libfdb_c.so` holds the behaviour.

#![allow(dead_code)] // each binary uses part of this module

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;

/// What a fake build tree does; every field has a default so tests set only what matters.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Behaviour {
    /// Mean TPS that `mako --mode run` reports.
    pub tps: f64,
    /// p99 transaction latency mako reports, microseconds.
    pub p99_us: f64,
    /// Trial-to-trial TPS noise, percent (deterministic sequence, see [`noise_factor`]).
    pub noise_pct: f64,
    /// mako's seconds are multiplied by this (0.01: a 10 s run takes 0.1 s).
    pub time_scale: f64,
    /// `fdbserver --version`'s source version line.
    pub source_version: String,
    /// Delay before fdbserver listens, milliseconds (slow start).
    pub server_start_delay_ms: u64,
    /// `fdbcli configure` never returns.
    pub configure_hang: bool,
    /// fdbserver exits like the real one fails when its data dir is tmpfs and
    /// `--knob_disable_posix_kernel_aio=1` is missing (O_DIRECT is refused by tmpfs).
    pub refuse_tmpfs_without_aio: bool,
    /// The storage server dies this long after starting, milliseconds.
    pub storage_crash_after_ms: Option<u64>,
    /// `mako --mode run` never finishes (for interrupt tests).
    pub mako_run_hang: bool,
    /// `mako --mode run` freezes the coordinator (it stops itself with SIGSTOP, as a
    /// frozen cluster) and then waits for it without end, as the real mako does.
    pub cluster_freezes_on_run: bool,
    /// mako aborts after writing its report, like the real one in `_dl_fini`.
    pub mako_abort_at_exit: bool,
    /// `totalTimeouts` the run reports (above 0: not a valid measurement).
    pub mako_timeouts: u64,
    /// fdbserver ignores SIGTERM (a server that does not shut down).
    pub server_ignores_sigterm: bool,
    /// `mako --mode run` starts a worker process that outlives it when it is killed (the
    /// real mako's forked workers do not get the gate's parent-death signal).
    pub mako_forks_worker: bool,
    /// `mako --mode run` starts a worker in a process group of its own (as after `setsid`)
    /// that outlives a mako that ends normally.
    pub mako_detached_worker: bool,
    /// `mako --mode run` starts a worker that calls `setsid()` (a session and group of its
    /// own; its command line names the cluster file): it outlives a SIGKILLed gate unless
    /// something holds every process of the run, whatever its group.
    pub mako_setsid_worker: bool,
    /// `mako --mode run` starts a worker through `setsid -f` (a double fork: its parent
    /// exits at once) whose command line does not name the run dir.
    pub mako_escaped_worker: bool,
    /// The coordinator (stateless fdbserver) exits when asked to configure.
    pub coordinator_exits_on_configure: bool,
    /// `mako --mode run` writes half its JSON report and stops (a killed run).
    pub mako_truncates_report: bool,
    /// CPU each role burns while it runs, percent of a core, by role: `stateless`, `log`,
    /// `storage` (fdbserver `-c`) and `client` (`mako --mode run`). Absent: idle.
    pub cpu_pct: std::collections::BTreeMap<String, f64>,
    /// fdbserver's stderr and trace file and mako's text report each hold a byte that is
    /// not UTF-8 (0xff), as a stray byte from a library or a terminal can make them.
    pub stray_bytes: bool,
    /// "Total Errors" mako's text report counts while its JSON report counts none.
    pub text_errors: u64,
    /// mako measures this window, seconds, with no warmup, whatever it was asked (a mako
    /// that stopped early or ignores `--warmup_seconds`).
    pub measured_window_s: Option<f64>,
    /// `fdbcli configure new` fails like on a database that exists: its reason on stderr,
    /// nothing on stdout, exit 1 (`fdbcli/ConfigureCommand.cpp`).
    pub configure_says_exists: bool,
    /// `mako --mode run` writes to stderr what no reader takes: U+FFFE, U+FFFF, ESC and
    /// a 12 MB line (none of it may reach junit.xml or a terminal as it is).
    pub mako_stderr_garbage: bool,
    /// The FDB release the tree is ("7.1" ... "8.0"): its `--version` lines, mako's
    /// `--help` (the release's real usage text), options and report fields, and the
    /// engine names fdbcli takes, as in `fdb/testdata/releases/`.
    pub release: String,
    /// `Retries` the multitest's ReadWrite test counts in all (above 0: overdriven).
    pub multitest_retries: u64,
    /// The multitest's test fails: `0 tests passed; 1 tests failed.`, exit 0.
    pub multitest_test_fails: bool,
    /// The tree's multitest runs (counted from 0) whose test fails, as
    /// `multitest_test_fails` makes every run's.
    pub multitest_fail_runs: Vec<u64>,
    /// Testers beyond those that joined report metrics (a stray tester of the cluster).
    pub multitest_extra_testers: u32,
    /// The tree's `mako --mode run` runs (counted from 0) whose reports count 64 failed
    /// transactions, as a storage server blocked for seconds makes the real mako's in
    /// flight fail.
    pub mako_error_runs: Vec<u64>,
    /// Seconds of a `SlowTask` event the storage server's trace holds (0: none), as a real
    /// storage server logs when its run loop blocks.
    pub storage_slow_task_s: f64,
    /// The tree's storage-server starts (counted from 0) that find their port taken, as
    /// when another program binds it between the gate's choice and the server's bind.
    pub address_in_use_starts: Vec<u64>,
    /// The tree's multitest runs (counted from 0, as mako's) that measure half their TPS:
    /// slow trials, as a busy host gives one now and then.
    pub multitest_slow_runs: Vec<u64>,
    /// Keys the database holds, as `fdbcli getrangekeys` prints them (a cluster with a
    /// user's data).
    pub database_keys: Vec<String>,
    /// How long the coordinator keeps listing a tester that stopped listening, ms (the
    /// real cluster controller's failure detection takes seconds).
    pub tester_linger_ms: u64,
    /// The multitest's runs (counted from 0) during which the cluster recovers: its
    /// generation (`status json` `cluster.generation`) grows by 2, as a killed and
    /// restarted server's did on real 8.0.
    pub multitest_recovery_runs: Vec<u64>,
    /// The multitest's runs (counted from 0) during which the cluster is reconfigured to
    /// the `memory` engine (`fdbcli configure memory`), which recovers it as well.
    pub multitest_reconfigure_runs: Vec<u64>,
    /// How many `status json` answers, from the start, say the cluster is available but
    /// still recovering (`recovery_state` "all_logs_recruited", as a real 8.0 cluster's
    /// did for about 3 s after a restart); the rest say "fully_recovered".
    pub recovering_status_answers: u64,
    /// Before a database is created, `status json` answers after this many seconds (a
    /// real 8.0 cluster's after about 15 s) with FDB's never-created status
    /// (`fdb/testdata/status-json-never-configured-8.0.json`): the double answers
    /// so when given at least that `--timeout`, else prints nothing, as the real one
    /// does cut short. 0: it never answers.
    pub never_configured_answer_s: u64,
    /// `mako --mode run` ends only once the tree's `double-go` file exists (waited for
    /// at most 120 s): a test lets a trial finish when it has done what must come first.
    pub mako_run_waits_for_go: bool,
    /// `fdbserver -r simulation`: instructions (cachegrind's Ir) a committed transaction
    /// costs in the storage server's `getValueQ` (the only storage function it reports).
    pub sim_storage_ir_per_txn: u64,
    /// Added to every seed's unseed: a build whose change alters the simulated path.
    pub sim_unseed_offset: u64,
    /// The simulation waits up to this long for another simulation of the same tree to
    /// have started, and fails (exit 1, "ran alone") if none did: a pair whose trials run
    /// at once meets, one run after the other does not.
    pub sim_meet_peer_ms: Option<u64>,
    /// Instructions a committed transaction costs in flow's `N2::Net2::run` (shared code,
    /// no role's).
    pub sim_shared_ir_per_txn: u64,
    /// Under the double's valgrind, the cachegrind output file is a FIFO nobody writes (a
    /// reader that opens it blocking waits forever).
    pub sim_cachegrind_fifo: bool,
    /// The unseed differs from run to run (it includes the process id): a simulation that
    /// does not replay its seed.
    pub sim_not_deterministic: bool,
    /// The simulation fails: a SevError trace event, `0 tests passed; 1 tests failed.`,
    /// exit 1.
    pub sim_fails: bool,
    /// How much each seed's work per transaction differs from another's, percent (seed k
    /// costs 1 + k x this / 100 times the tree's figures): seeds are replicates, not copies.
    pub sim_seed_spread_pct: f64,
    /// The host's speed moves by up to this much, percent, from one moment to the next,
    /// alike for every tree of the sandbox (a VM whose speed drifts): a mako run that
    /// starts while another runs shares its moment ([`host_moment`]), one that starts
    /// alone has a new one. Within a moment it also moves from second to second, by up
    /// to half as much, the same for every run in the moment. 0: the host's speed never
    /// moves.
    pub host_speed_pct: f64,
}

impl Behaviour {
    /// The release as (major, minor), for comparisons.
    pub fn release(&self) -> (u32, u32) {
        let (a, b) = self.release.split_once('.').expect("release like 7.3");
        (a.parse().expect("major"), b.parse().expect("minor"))
    }
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            tps: 1000.0,
            p99_us: 4000.0,
            // Real trials never agree exactly, and the judge calls identical ones
            // INCONCLUSIVE: a little deterministic noise unless a test asks for none.
            noise_pct: 0.05,
            time_scale: 0.01,
            source_version: "0000000000000000000000000000000000000001".into(),
            server_start_delay_ms: 0,
            configure_hang: false,
            never_configured_answer_s: 0,
            mako_run_waits_for_go: false,
            refuse_tmpfs_without_aio: true,
            storage_crash_after_ms: None,
            mako_run_hang: false,
            cluster_freezes_on_run: false,
            mako_abort_at_exit: true,
            mako_timeouts: 0,
            server_ignores_sigterm: false,
            mako_forks_worker: false,
            mako_setsid_worker: false,
            mako_escaped_worker: false,
            mako_detached_worker: false,
            coordinator_exits_on_configure: false,
            mako_truncates_report: false,
            cpu_pct: Default::default(),
            stray_bytes: false,
            text_errors: 0,
            measured_window_s: None,
            configure_says_exists: false,
            mako_stderr_garbage: false,
            release: "8.0".into(),
            multitest_retries: 0,
            multitest_test_fails: false,
            multitest_fail_runs: Vec::new(),
            multitest_extra_testers: 0,
            multitest_slow_runs: Vec::new(),
            mako_error_runs: Vec::new(),
            storage_slow_task_s: 0.0,
            address_in_use_starts: Vec::new(),
            database_keys: Vec::new(),
            tester_linger_ms: 0,
            multitest_recovery_runs: Vec::new(),
            multitest_reconfigure_runs: Vec::new(),
            recovering_status_answers: 0,
            sim_storage_ir_per_txn: 50_000,
            sim_unseed_offset: 0,
            sim_fails: false,
            sim_not_deterministic: false,
            sim_meet_peer_ms: None,
            sim_cachegrind_fifo: false,
            sim_shared_ir_per_txn: 400_000,
            sim_seed_spread_pct: 2.0,
            host_speed_pct: 0.0,
        }
    }
}

/// The fake tree's root: `argv[0]` is `<root>/bin/<program>`.
pub fn tree_root() -> PathBuf {
    let argv0 = PathBuf::from(std::env::args().next().expect("argv[0]"));
    argv0
        .parent()
        .and_then(Path::parent)
        .expect("argv[0] is <root>/bin/<program>")
        .to_path_buf()
}

pub fn behaviour() -> Behaviour {
    let mut path = tree_root().join("double.json");
    if !path.is_file() {
        path = tree_root().join("lib/libfdb_c.so");
    }
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        }
        _ => Behaviour::default(),
    }
}

/// `--version` text, in the real format (fixture `fdbserver-version.txt`).
pub fn version_text(program: &str, b: &Behaviour) -> String {
    let (major, minor) = b.release();
    format!(
        "FoundationDB {program} {major}.{minor} (v{major}.{minor}.0)\nsource version {}\n\
         protocol fdb00b0{major}{minor}000000\n",
        b.source_version
    )
    .replace("FoundationDB fdbserver ", "FoundationDB ")
}

/// The value of `--name=VALUE` among `args` as an OS string, its bytes kept (for paths).
pub fn flag_os(args: &[std::ffi::OsString], name: &str) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    let prefix = format!("{name}=");
    args.iter().find_map(|a| {
        a.as_bytes()
            .strip_prefix(prefix.as_bytes())
            .map(|v| std::ffi::OsString::from_vec(v.to_vec()))
    })
}

/// Value of `--name VALUE` or `--name=VALUE` (or a short `-n VALUE`).
pub fn flag(args: &[String], names: &[&str]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        for n in names {
            if a == n {
                return args.get(i + 1).cloned();
            }
            if let Some(v) = a.strip_prefix(&format!("{n}=")) {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// The coordinator address from a cluster file `desc:id@127.0.0.1:PORT`, read as bytes
/// as FDB reads it (a comment may hold any).
pub fn coordinator(cluster_file: &Path) -> Option<String> {
    let text = String::from_utf8_lossy(&std::fs::read(cluster_file).ok()?).into_owned();
    Some(
        text.trim()
            .split_once('@')?
            .1
            .split(',')
            .next()?
            .to_string(),
    )
}

/// Sends one request line to the coordinator and returns its answer line.
pub fn ask(cluster_file: &Path, request: &str) -> Option<String> {
    let addr = coordinator(cluster_file)?;
    let mut s = TcpStream::connect(&addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    writeln!(s, "{request}").ok()?;
    let mut line = String::new();
    // No answer (the server closed the connection, e.g. it died) is no answer.
    match BufReader::new(s).read_line(&mut line) {
        Ok(n) if n > 0 => Some(line.trim().to_string()),
        _ => None,
    }
}

/// The index of this run of the tree's workload (mako run or multitest), from 0: each call
/// counts one more, in the tree's `double-mako-runs` file.
pub fn next_run() -> u64 {
    next_count("double-mako-runs")
}

/// The index of this start of the tree's storage server, from 0: each call counts one
/// more, in the tree's `double-storage-starts` file.
pub fn next_storage_start() -> u64 {
    next_count("double-storage-starts")
}

/// The count kept in the tree's file `name` (0 when there is none yet), which it then
/// raises by one.
fn next_count(name: &str) -> u64 {
    let counter = tree_root().join(name);
    let k: u64 = std::fs::read_to_string(&counter)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let _ = std::fs::write(&counter, (k + 1).to_string());
    k
}

/// The tree's noise stream: each source version has its own.
pub fn stream(b: &Behaviour) -> u64 {
    b.source_version
        .bytes()
        .fold(0, |h, c| h.wrapping_mul(31).wrapping_add(u64::from(c)))
}

/// The host's moment of a mako run that starts now, shared by the sandbox's trees (the
/// trees' parent holds `double-host-clock`: the moment's number, the runs running in it
/// and the runs that joined it): a new moment when no run is running, else the running
/// one's. Ended by [`HostMoment::end`].
pub struct HostMoment {
    /// The moment's number, from 1.
    pub number: u64,
    clock: PathBuf,
}

/// The speed factor of the host at moment `number`: 1 + `pct`/100 x u, u in [-1, 1) from
/// the number alone, so every tree's run in one moment gets the same.
pub fn host_speed(pct: f64, number: u64) -> f64 {
    noise_factor(pct, number, 0x5eed)
}

/// Updates the host clock under its lock with `f` on (moment, running, joined).
fn with_clock(clock: &Path, f: impl FnOnce(&mut [u64; 3])) -> [u64; 3] {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(clock)
        .expect("the host clock beside the trees");
    let file = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("lock {}: {e}", clock.display()));
    let text = std::fs::read_to_string(clock).unwrap_or_default();
    let mut v = [0u64; 3];
    for (slot, n) in v.iter_mut().zip(text.split_whitespace()) {
        *slot = n.parse().unwrap_or(0);
    }
    f(&mut v);
    std::fs::write(clock, format!("{} {} {}", v[0], v[1], v[2])).expect("the host clock");
    drop(file);
    v
}

/// Starts a run in the host's moment ([`HostMoment`]).
pub fn host_moment() -> HostMoment {
    let clock = tree_root()
        .parent()
        .expect("a tree in a sandbox")
        .join("double-host-clock");
    let v = with_clock(&clock, |v| {
        if v[1] == 0 {
            *v = [v[0] + 1, 0, 0];
        }
        v[1] += 1;
        v[2] += 1;
    });
    HostMoment {
        number: v[0],
        clock,
    }
}

impl HostMoment {
    /// Ends the run. Pinned to part of the host's CPUs (a duet's arm, whose partner the
    /// gate starts with it), it first waits, at most 60 s, for a second run to have joined
    /// the moment, as it would have in the same seconds on a real host.
    pub fn end(self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while pinned() && std::time::Instant::now() < deadline {
            if with_clock(&self.clock, |_| ())[2] >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        with_clock(&self.clock, |v| v[1] = v[1].saturating_sub(1));
    }
}

/// Whether this process may run on fewer CPUs than are online.
fn pinned() -> bool {
    let allowed = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string())
        });
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    matches!((allowed, online), (Some(a), Some(o)) if a != o.trim())
}

/// Deterministic noise factor for the `k`-th mako run of a tree whose noise stream is
/// `stream`: 1 + noise_pct/100 * u, u in [-1, 1) from a hash of both, so two trees'
/// streams are independent (a pair's ratio is noisy too).
pub fn noise_factor(noise_pct: f64, k: u64, stream: u64) -> f64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (k, stream).hash(&mut h);
    let u = (h.finish() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    1.0 + noise_pct / 100.0 * u
}

/// Starts a thread that burns `pct` percent of a core for as long as the process lives:
/// its own CPU time (CLOCK_THREAD_CPUTIME_ID) is kept at `pct`% of the wall time since it
/// started, spinning to catch up every 10 ms. A busy host delays the spinning but not the
/// CPU burnt per second, so the gate's CPU per transaction does not depend on the host's
/// load (a debt above 100 ms, as after a SIGSTOP, is forgiven rather than burnt at once).
pub fn burn_cpu(pct: f64) {
    if pct <= 0.0 {
        return;
    }
    let share = pct.min(100.0) / 100.0;
    std::thread::spawn(move || {
        use nix::time::{clock_gettime, ClockId};
        use std::time::{Duration, Instant};
        let now = || -> Duration {
            clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
                .map(Duration::from)
                .unwrap_or_default()
        };
        let max_debt = Duration::from_millis(100);
        let (wall, start) = (Instant::now(), now());
        let mut forgiven = Duration::ZERO;
        loop {
            let owed = wall.elapsed().mul_f64(share).saturating_sub(forgiven);
            let used = now().saturating_sub(start);
            if owed > used + max_debt {
                forgiven += owed - used - max_debt;
            }
            let owed = owed.min(used + max_debt);
            while now().saturating_sub(start) < owed {}
            std::thread::sleep(Duration::from_millis(10));
        }
    });
}
