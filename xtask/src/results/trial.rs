//! What a trial left, as every later stage reads it: the [`TrialRecord`] the run stage
//! writes after each trial (`trials.json`), with its [`Outcome`] and [`Phase`] timings.

use std::{collections::BTreeMap, path::PathBuf};

use fdb::{mako::MakoReport, multitest::ReadWriteResult, Engine, Knob};
use serde::{Deserialize, Serialize};

pub use crate::config::CpuRole;
use crate::config::{
    readwrite::{FOLLOWED_SHARE, OVERDRIVEN_RETRY_SHARE},
    Arm,
};

/// Below this many cores over the measurement window, the storage server was not the
/// bottleneck (the upstream practice checks for ~85% of a core), so the TPS measures
/// something else: the client, the disk, the host.
pub const CPU_BOUND_MIN_CORES: f64 = 0.85;

/// More cores than any host the gate runs on has (Linux's NR_CPUS is at most 8192).
pub const MAX_CORES: f64 = 8192.0;
/// More instructions per second than [`MAX_CORES`] cores retire (10^10 a core is beyond
/// any CPU's clock times its width).
pub const MAX_INSTRUCTIONS_PER_S: f64 = MAX_CORES * 1e10;

/// CPU (user + system, from `/proc/<pid>/stat`) each role used over one wall-clock window
/// inside the measurement window: from the end of the warmup to the last moment every
/// client process was still running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleCpu {
    /// Length of the window, seconds.
    pub window_s: f64,
    /// CPU seconds per wall-clock second, per role (1.0 = one core busy).
    pub cores: BTreeMap<CpuRole, f64>,
    /// The same per second of the window, per role: cores over the k-th interval between
    /// the first CPU samples at or after k - 1 and k seconds (samples come every 0.25 s,
    /// so an interval is 0.75-1.25 s). A CPU clock tick is 10 ms, so one value is good to
    /// about 0.01 cores. Empty in records that predate it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_second: BTreeMap<CpuRole, Vec<f64>>,
    /// Instructions retired per wall-clock second over the window, per role, from the
    /// hardware PMU (`perf_event_open`, user space as rustc-perf's `instructions:u`, every thread of the role's
    /// processes); empty where the host cannot count them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub instructions_per_s: BTreeMap<CpuRole, f64>,
    /// Why no instructions were counted (no PMU, not permitted), when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_unavailable: Option<String>,
}

/// A phase of a trial, each with its own time bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// The cluster's fdbservers listening on their ports.
    ClusterStart,
    /// `configure new single <engine>`.
    Configure,
    /// `status json` says the database is available.
    Available,
    /// `mako --mode build` (loads `rows` rows).
    MakoBuild,
    /// `mako --mode run` (warmup + measurement window).
    MakoRun,
    /// The multitest driver's test: tester processes start and join, then `fdbserver -r
    /// multitest` loads the rows and runs the test.
    Multitest,
    /// Stopping every process of the trial.
    Teardown,
    /// The simulation driver's run: `fdbserver -r simulation` of one seed under Valgrind.
    Simulation,
}

impl Phase {
    /// Every phase, in the order a trial runs them.
    pub const ALL: [Phase; 8] = [
        Phase::ClusterStart,
        Phase::Configure,
        Phase::Available,
        Phase::MakoBuild,
        Phase::MakoRun,
        Phase::Multitest,
        Phase::Simulation,
        Phase::Teardown,
    ];
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = serde_json::to_value(self).expect("phase serializes");
        f.write_str(s.as_str().expect("phase is a string"))
    }
}

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A complete, valid report (mako's or multitest's).
    Measured,
    /// A phase passed its bound.
    Timeout,
    /// A crash, a failed command, or an incomplete or invalid report.
    Error,
    /// SIGINT/SIGTERM arrived.
    Interrupted,
}

/// Duration of one phase, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseTiming {
    pub phase: Phase,
    pub duration_s: f64,
}

/// The host-speed probe of one trial (`run::probe`): the same fixed CPU work timed just
/// before the trial's cluster started and just after it was torn down, with the host's
/// steal time and CPU clock over the trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSpeed {
    /// Rounds of the probe's loop (the same in every probe of a gate version).
    pub probe_rounds: u64,
    /// Seconds the probe took before the trial.
    pub before_s: f64,
    /// Seconds the probe took after the trial.
    pub after_s: f64,
    /// Share of the host's CPU time stolen by the hypervisor between the probes, percent
    /// (`/proc/stat`); `None` where the kernel reports no steal time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
    /// Mean CPU clock of the host's cores at the two probes, MHz (`/proc/cpuinfo`); `None`
    /// where the kernel reports none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_mhz: Option<f64>,
}

impl HostSpeed {
    /// Whether it is what a probe measures: rounds above 0, each probe's seconds finite,
    /// above 0 and at most an hour, steal a percentage, the clock above 0 and at most
    /// 100 GHz. Errors: the first field that is not, for people.
    pub fn validity(&self) -> Result<(), String> {
        let seconds = |v: f64| v.is_finite() && v > 0.0 && v <= 3600.0;
        if self.probe_rounds == 0 {
            return Err("a host-speed probe of 0 rounds".into());
        }
        for (field, v) in [("before_s", self.before_s), ("after_s", self.after_s)] {
            if !seconds(v) {
                return Err(format!(
                    "a host-speed probe whose {field} is {} (seconds above 0, at most an hour)",
                    fdb::compact(v)
                ));
            }
        }
        if let Some(v) = self
            .steal_pct
            .filter(|v| !(v.is_finite() && (0.0..=100.0).contains(v)))
        {
            return Err(format!("a steal time of {}%", fdb::compact(v)));
        }
        if let Some(v) = self
            .cpu_mhz
            .filter(|v| !(v.is_finite() && *v > 0.0 && *v <= 1e5))
        {
            return Err(format!("a CPU clock of {} MHz", fdb::compact(v)));
        }
        Ok(())
    }

    /// The host's speed over the trial: probe rounds per second of the two probes' mean
    /// time (rounds/s; only ratios of it mean anything).
    pub fn speed(&self) -> f64 {
        self.probe_rounds as f64 / ((self.before_s + self.after_s) / 2.0)
    }
}

/// Everything known about one finished trial; saved as soon as the trial ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Position in the run order, from 1.
    pub index: usize,
    pub engine: Engine,
    pub arm: Arm,
    /// Repetition of this arm and engine, from 1.
    pub repetition: u32,
    pub knobs: Vec<Knob>,
    /// The step's target TPS of a saturation sweep (`--sweep`); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_tps: Option<u64>,
    pub outcome: Outcome,
    /// The phase that failed or timed out.
    pub failed_phase: Option<Phase>,
    /// What went wrong, when the outcome is not `measured`.
    pub error: Option<String>,
    /// Phases in the order they ran, with their durations.
    pub phases: Vec<PhaseTiming>,
    /// Health when the database became available.
    pub availability: Option<Availability>,
    /// The run's mako report (also for a complete but invalid one).
    pub report: Option<MakoReport>,
    /// The multitest driver's results (also for complete but invalid ones); `None` under
    /// mako.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multitest: Option<MultitestReport>,
    /// The simulation driver's results; `None` under the other drivers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<SimulationReport>,
    /// CPU used by the storage server over the measurement window, in cores (1.0 = one
    /// core busy). A CPU-bound run is near 1.0: the storage server is single-threaded.
    pub storage_cpu_cores: Option<f64>,
    /// Whether the storage server used at least [`CPU_BOUND_MIN_CORES`] cores; `None`
    /// when it could not be measured.
    pub cpu_bound: Option<bool>,
    /// CPU of every role over the measurement window; `None` when it could not be
    /// measured (the run ended before its warmup did) or the record predates it.
    #[serde(default)]
    pub cpu: Option<RoleCpu>,
    /// Peak growth of the work dir filesystem's used bytes during mako build and run (or
    /// the multitest), bytes. The filesystem's, not the trial's alone: anything else
    /// writing to it counts too, such as a local cluster's data on the same tmpfs.
    pub workdir_peak_bytes: Option<u64>,
    /// What `status json` said of a cluster the gate did not start (`--cluster-file`)
    /// when the trial began: its versions, shape and health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<fdb::status::ClusterStatus>,
    /// Stalls of the gate itself during the trial, seconds each ([`crate::process::STALL`]
    /// or longer): its phase timings include them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate_stalls_s: Vec<f64>,
    /// When the driver's measured run started (mako's `--mode run`), seconds since the
    /// Unix epoch, by the host's clock: the two trials of a duet pair start together, and
    /// their per-second series align on it (`judge::duet`). `None` for other drivers and
    /// trials recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_started_unix_s: Option<f64>,
    /// In a duet, whether the measured run started together with its partner's (both
    /// trials came to their meeting; `false`: the partner failed or was late). Absent
    /// outside a duet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_with_partner: Option<bool>,
    /// The host's speed around the trial (`run::probe`): what the judge removes from each
    /// pair's ratio. `None` for the simulation driver (counts need none) and trials recorded
    /// before the probe existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSpeed>,
    /// Artifacts of this trial, relative to the results dir.
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub artifacts: PathBuf,
}

impl TrialRecord {
    /// Whether the trial failed only because mako counted failed or timed-out transactions
    /// in an otherwise complete run: what a storage server blocked for seconds does to
    /// mako's transactions in flight (seen on busy 2-vCPU hosts), and what running the
    /// trial again can tell apart from a change that breaks every run.
    pub fn transient_failure(&self) -> bool {
        self.outcome == Outcome::Error
            && self.failed_phase == Some(Phase::MakoRun)
            && self
                .report
                .as_ref()
                .is_some_and(|r| r.total_errors > 0 || r.total_timeouts > 0)
    }

    /// What the run's results say of this trial, a transient failure, once `set_aside`
    /// (e.g. "the trial is", "its 2 trials, which ran at once, are") was set aside and run
    /// again.
    pub fn rerun_warning(&self, set_aside: &str) -> String {
        format!(
            "trial {}: {}: a transient failure, as a storage server blocked for seconds \
             makes; {set_aside} set aside (kept in trials.json's set_aside, not judged) and \
             run again",
            self.index,
            self.error.as_deref().unwrap_or("?")
        )
    }

    /// The trial's TPS, from whichever driver's report it has (the simulation driver's:
    /// transactions per simulated second).
    pub fn tps(&self) -> Option<f64> {
        match (&self.report, &self.multitest, &self.simulation) {
            (Some(r), _, _) => Some(r.tps),
            (None, Some(m), _) => Some(m.result.tps),
            (None, None, Some(s)) => Some(s.simulated_tps),
            (None, None, None) => None,
        }
    }

    /// Median transaction latency, microseconds.
    pub fn txn_latency_us_p50(&self) -> Option<f64> {
        match (&self.report, &self.multitest) {
            (Some(r), _) => r.transaction_latency().map(|l| l.p50),
            (None, Some(m)) => Some(m.result.latency.p50_ms * 1000.0),
            (None, None) => None,
        }
    }

    /// p99 transaction latency, microseconds: mako's. ReadWrite reports no p99 (its
    /// highest percentile is p98, `MultitestReport`), so a multitest trial has none.
    pub fn txn_latency_us_p99(&self) -> Option<f64> {
        self.report
            .as_ref()
            .and_then(|r| r.transaction_latency())
            .map(|l| l.p99)
    }

    /// The highest transaction latency percentile the driver reports, microseconds, and
    /// its name: mako's p99, ReadWrite's p98 ("98% Latency (ms, averaged)"; it prints no
    /// p99, `fdbserver/workloads/ReadWrite.cpp`).
    pub fn txn_latency_us_tail(&self) -> Option<(f64, &'static str)> {
        match (&self.report, &self.multitest) {
            (Some(_), _) => self.txn_latency_us_p99().map(|v| (v, "p99")),
            (None, Some(m)) => Some((m.result.latency.p98_ms * 1000.0, "p98")),
            (None, None) => None,
        }
    }
}

/// The multitest driver's results of one trial: what ReadWrite measured, and the target
/// and testers it ran with (`fdbserver/workloads/ReadWrite.cpp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultitestReport {
    /// The whole test's target, TPS (`transactionsPerSecond`).
    pub target_tps: f64,
    /// Tester processes that ran the test.
    pub testers: u32,
    /// Concurrent transaction loops of each tester (`actorCountPerTester`).
    pub actors_per_tester: u32,
    /// The whole test's figures, combined over the testers as FDB does.
    pub result: ReadWriteResult,
}

impl MultitestReport {
    /// `Err(reason)` when the trial is not a valid measurement: a TPS that is not
    /// positive, or [`MultitestReport::overdriven`].
    pub fn validity(&self) -> Result<(), String> {
        let r = &self.result;
        self.measured()?;
        if self.overdriven() {
            return Err(format!(
                "not a valid measurement: overdriven, ReadWrite retried {} transactions in \
                 the window, {:.2}% of its {:.0} (conflicts or too-old reads; above {}% the \
                 load is more than the cluster takes without contention: lower --target-tps \
                 or --actors-per-tester, or spread writes over more --rows)",
                r.retries,
                self.retry_share() * 100.0,
                self.transactions(),
                OVERDRIVEN_RETRY_SHARE * 100.0
            ));
        }
        Ok(())
    }

    /// Transactions completed in the window: TPS x the window.
    pub fn transactions(&self) -> f64 {
        self.result.tps * self.result.measured_s
    }

    /// Retries per transaction of the window (0 without transactions).
    pub fn retry_share(&self) -> f64 {
        let n = self.transactions();
        if n > 0.0 {
            self.result.retries / n
        } else {
            0.0
        }
    }

    /// Whether the retries exceed [`OVERDRIVEN_RETRY_SHARE`] of the transactions: the
    /// load was more than the cluster takes without contention.
    pub fn overdriven(&self) -> bool {
        self.retry_share() > OVERDRIVEN_RETRY_SHARE
    }

    /// A note when the trial retried transactions but not enough to be overdriven.
    pub fn contention(&self) -> Option<String> {
        (self.result.retries > 0.0 && !self.overdriven()).then(|| {
            format!(
                "{} retries, {:.3}% of the window's transactions: contention, below the {}% \
                 that makes a trial overdriven",
                self.result.retries,
                self.retry_share() * 100.0,
                OVERDRIVEN_RETRY_SHARE * 100.0
            )
        })
    }

    /// `Err(reason)` when the TPS is not positive. A sweep's step past the knee is
    /// overdriven on purpose, so a sweep checks this alone and reads retries as a target
    /// not followed (`judge::knee`).
    pub fn measured(&self) -> Result<(), String> {
        let (tps, retries) = (self.result.tps, self.result.retries);
        if tps == 0.0 {
            let why = if retries > 0.0 {
                format!(
                    "ReadWrite retried {retries} transactions, so they conflicted or read too \
                     old: spread writes over more --rows, or lower --actors-per-tester"
                )
            } else {
                "no retries either: the testers never got a transaction through; see the \
                 multitest's output and the testers' stderr"
                    .to_string()
            };
            return Err(format!(
                "not a valid measurement: no transaction completed in the measured window \
                 (TPS 0); {why}"
            ));
        }
        if !(tps.is_finite() && tps > 0.0) {
            return Err(format!(
                "not a valid measurement: TPS is {}",
                fdb::compact(tps)
            ));
        }
        // A TPS is counted transactions over the window: fewer than one is no count.
        if self.transactions() < 1.0 {
            return Err(format!(
                "not a valid measurement: TPS {} over the {} s window is less than one \
                 transaction",
                fdb::compact(tps),
                fdb::compact(self.result.measured_s)
            ));
        }
        Ok(())
    }

    /// Whether the measured TPS reached [`FOLLOWED_SHARE`] of the target.
    pub fn followed(&self) -> bool {
        self.result.tps / self.target_tps >= FOLLOWED_SHARE
    }

    /// A note when the measured TPS is below [`FOLLOWED_SHARE`] of the target: the
    /// cluster or the testers' actors saturated, and the TPS is their capacity, not the
    /// target.
    /// No note without a measured TPS: nothing completed is no capacity.
    pub fn saturation(&self) -> Option<String> {
        let share = self.result.tps / self.target_tps;
        (!self.followed() && self.measured().is_ok()).then(|| {
            format!(
                "saturated: measured {:.0} TPS, {:.0}% of the {:.0} TPS target, so the TPS is \
                 what the cluster took from {} tester(s) x {} actors, not the target",
                self.result.tps,
                share * 100.0,
                self.target_tps,
                self.testers,
                self.actors_per_tester
            )
        })
    }
}

/// The simulation driver's results of one trial: one seed of `fdbserver -r simulation`
/// under cachegrind (`fdb::simulation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulationReport {
    /// The simulator's seed (`-s`): a pair's two trials run the same one.
    pub seed: u64,
    /// What the simulator printed: unseed, transactions, retries, clients.
    pub result: fdb::simulation::SimulationResult,
    /// Transactions per simulated second of the test: the simulator's pacing, not the
    /// build's speed (a change of CPU cost does not move it).
    pub simulated_tps: f64,
    /// Instructions the whole run executed (cachegrind's `Ir`).
    pub instructions: u64,
    /// The same per role, by the defining file of each function
    /// (`fdb::simulation::role_of_file`); `shared` is flow, fdbrpc, libraries and code
    /// without symbols.
    pub instructions_by_role: BTreeMap<fdb::simulation::SimRole, u64>,
    /// Instructions per function, relative to the results dir
    /// ([`PROFILE_FILE`](super::profile::PROFILE_FILE) in the
    /// trial's artifacts): what the differential profile reads.
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub profile: PathBuf,
}

impl SimulationReport {
    /// Instructions per committed transaction of `role`.
    pub fn per_transaction(&self, role: fdb::simulation::SimRole) -> Option<f64> {
        let ir = *self.instructions_by_role.get(&role)?;
        Some(ir as f64 / self.result.transactions)
    }
}

/// What `status json` said when the database became available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    /// `client.database_status.healthy`: often still false right after `configure new`
    /// (data distribution is starting); recorded, not waited for.
    pub healthy: bool,
    /// `status json` calls made until available.
    pub polls: u32,
}

/// A measured trial of `arm` at `tps` TPS (redwood, CPU-bound, 5 s window), for the
/// tests of this stage and later ones.
#[cfg(test)]
pub(crate) fn measured_trial(index: usize, arm: Arm, tps: f64) -> TrialRecord {
    TrialRecord {
        index,
        engine: Engine::Redwood,
        arm,
        repetition: index.div_ceil(2) as u32,
        knobs: vec![],
        target_tps: None,
        outcome: Outcome::Measured,
        failed_phase: None,
        error: None,
        phases: vec![],
        availability: None,
        report: Some(MakoReport {
            tps,
            overall_tps: tps as u64,
            run_duration_s: 10.0,
            warmup_duration_s: 5.0,
            measured_duration_s: 5.0,
            total_xacts: (tps * 5.0) as u64,
            total_conflicts: 0,
            total_errors: 0,
            total_timeouts: 0,
            samples_tps: vec![tps; 10],
            latency_us: BTreeMap::new(),
        }),
        multitest: None,
        simulation: None,
        storage_cpu_cores: Some(0.97),
        cpu_bound: Some(true),
        cpu: None,
        workdir_peak_bytes: Some(1 << 20),
        cluster: None,
        gate_stalls_s: Vec::new(),
        run_started_unix_s: None,
        run_with_partner: None,
        host: None,
        artifacts: PathBuf::from(format!("trials/{index:02}")),
    }
}
