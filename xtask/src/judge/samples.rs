//! Judge stage, its input: one [`Sample`] per trial, from a trial record of this run or
//! from a recorded baseline. The judge reads nothing else of a trial. Pure.

use std::collections::BTreeMap;

use fdb::Engine;

use super::drift::{drift, Drift};
use crate::{
    config::{Arm, CpuRole, Metric},
    results::{
        baseline::Baseline,
        trial::{Outcome, SimulationReport, TrialRecord},
    },
};
use fdb::simulation::SimRole;

/// One trial as the judge sees it: its place in the run, how it ended, and the values
/// of the metrics it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Position in the run order, from 1 (0 for a recorded trial).
    pub index: usize,
    pub engine: Engine,
    pub arm: Arm,
    /// Repetition of this arm and engine, from 1: equal repetitions of the two arms pair.
    pub repetition: u32,
    /// Which run of a recorded baseline the trial is from (0: `trials`, k: `more_runs[k -
    /// 1]`): the day it was measured on; `None` for a trial of this run.
    pub recorded_run: Option<usize>,
    pub outcome: Outcome,
    /// What went wrong, when the outcome is not `measured`.
    pub error: Option<String>,
    /// Committed transactions per second over the measurement window, TPS; `None` when
    /// there was no report.
    pub tps: Option<f64>,
    /// p99 transaction latency, microseconds (warmup included, as mako reports it).
    pub txn_latency_us_p99: Option<f64>,
    /// Storage server CPU over the measurement window, cores.
    pub storage_cpu_cores: Option<f64>,
    /// CPU microseconds per committed transaction, per role: the role's cores over the
    /// measurement window x 10^6 / TPS. Roles that were not measured are absent.
    pub cpu_us_per_txn: BTreeMap<CpuRole, f64>,
    /// Instructions retired per committed transaction, per role, where the host counted
    /// them (a hardware PMU): instructions per second over the window / TPS.
    pub instructions_per_txn: BTreeMap<CpuRole, f64>,
    /// Instructions per committed transaction of the whole run (the simulation driver's):
    /// every role and the shared code.
    pub total_instructions_per_txn: Option<f64>,
    /// Why instructions were not counted in this trial (no PMU, `perf_event_open`
    /// refused), when the record says.
    pub instructions_unavailable: Option<String>,
    /// Whether the storage server was CPU-bound; `None` when unknown.
    pub cpu_bound: Option<bool>,
    /// Peak growth of the work dir's used bytes during the trial.
    pub workdir_peak_bytes: Option<u64>,
    /// The trend of TPS within the measurement window, when there were enough samples.
    pub drift: Option<Drift>,
    /// Stalls of the gate itself during the trial, seconds each (empty for a recorded
    /// trial).
    pub gate_stalls_s: Vec<f64>,
    /// When the measured run started, Unix seconds ([`TrialRecord::run_started_unix_s`]);
    /// `None` for a recorded trial.
    pub run_started_unix_s: Option<f64>,
    /// Whether the measured run started together with its duet partner's
    /// ([`TrialRecord::run_with_partner`]); false outside a duet.
    pub run_with_partner: bool,
    /// mako's per-second TPS from the run's start, warmup included (empty for a recorded
    /// trial).
    pub per_second_tps: Vec<f64>,
    /// mako's warmup, seconds: the window's samples start at `per_second_tps[warmup_s]`.
    pub warmup_s: f64,
    /// Cores each role used per second of the window ([`RoleCpu::per_second`](crate::results::trial::RoleCpu::per_second)).
    pub per_second_cores: BTreeMap<CpuRole, Vec<f64>>,
    /// The multitest driver's target TPS when the trial met it (within 10%): its TPS is
    /// then the target's, not the build's capacity. `None` under mako and when the
    /// cluster saturated.
    pub target_met: Option<f64>,
    /// The host's speed around the trial, probe rounds per second
    /// ([`HostSpeed::speed`](crate::results::trial::HostSpeed::speed)): the covariate the
    /// paired test removes from each pair ([`super::stats::adjusted`]). `None` when the
    /// trial was not probed.
    pub host_speed: Option<f64>,
}

impl Sample {
    /// The value of `m` in this trial, if it was measured: every metric is a positive
    /// quantity compared on a log scale, so a missing (NaN), infinite, zero or negative one
    /// counts as not measured (a gated metric then is an ERROR naming the trial, not "too
    /// few pairs").
    pub fn value(&self, m: Metric) -> Option<f64> {
        self.raw_value(m).filter(|v| v.is_finite() && *v > 0.0)
    }

    fn raw_value(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Tps => self.tps,
            Metric::TxnLatencyP99 => self.txn_latency_us_p99,
            Metric::CpuPerTxn(role) => self.cpu_us_per_txn.get(&role).copied(),
            Metric::StorageCpuRatio => Some(
                self.cpu_us_per_txn.get(&CpuRole::Storage)?
                    / self.cpu_us_per_txn.get(&CpuRole::Client)?,
            ),
            Metric::InstructionsPerTxn(role) => self.instructions_per_txn.get(&role).copied(),
            Metric::TotalInstructionsPerTxn => self.total_instructions_per_txn,
            // A run's value, not a trial's (`judge::knee`).
            Metric::KneeTps => None,
        }
    }

    /// The sample of one trial of this run.
    pub fn of_trial(t: &TrialRecord) -> Sample {
        let (r, tps) = (t.report.as_ref(), t.tps());
        Sample {
            index: t.index,
            engine: t.engine,
            arm: t.arm,
            repetition: t.repetition,
            recorded_run: None,
            outcome: t.outcome,
            error: t.error.clone(),
            tps,
            txn_latency_us_p99: t.txn_latency_us_p99(),
            storage_cpu_cores: t.storage_cpu_cores,
            cpu_us_per_txn: per_txn(
                tps,
                t.cpu
                    .iter()
                    .flat_map(|c| c.cores.iter().map(|(r, c)| (*r, *c))),
            ),
            instructions_per_txn: match &t.simulation {
                Some(s) => simulated_per_txn(s),
                // per_txn's arithmetic is the same for any per-second rate: x / TPS (x 10^6
                // for CPU seconds), so instructions per second / TPS comes out x 10^6.
                None => per_txn(
                    tps,
                    t.cpu
                        .iter()
                        .flat_map(|c| c.instructions_per_s.iter().map(|(r, n)| (*r, *n / 1e6))),
                ),
            },
            total_instructions_per_txn: t
                .simulation
                .as_ref()
                .map(|s| s.instructions as f64 / s.result.transactions),
            instructions_unavailable: match &t.simulation {
                Some(s) => unattributed(s),
                None => t
                    .cpu
                    .as_ref()
                    .and_then(|c| c.instructions_unavailable.clone()),
            },
            cpu_bound: t.cpu_bound,
            workdir_peak_bytes: t.workdir_peak_bytes,
            gate_stalls_s: t.gate_stalls_s.clone(),
            run_started_unix_s: t.run_started_unix_s,
            run_with_partner: t.run_with_partner == Some(true),
            drift: r.and_then(|r| drift(&r.samples_tps, r.warmup_duration_s)),
            per_second_tps: r.map(|r| r.samples_tps.clone()).unwrap_or_default(),
            warmup_s: r.map_or(0.0, |r| r.warmup_duration_s),
            per_second_cores: t
                .cpu
                .as_ref()
                .map(|c| c.per_second.clone())
                .unwrap_or_default(),
            target_met: t
                .multitest
                .as_ref()
                .filter(|m| m.followed())
                .map(|m| m.target_tps),
            host_speed: t.host.as_ref().map(|h| h.speed()),
        }
    }

    /// The value of `m` per second of the measurement window, when the trial kept such a
    /// series: TPS from mako's samples; CPU per transaction as each second's cores over
    /// the same second's TPS (the gate's CPU seconds start at the end of the warmup as the
    /// gate saw it, so they align with mako's within a fraction of a second); the
    /// storage/client ratio from the cores alone. `None` for p99 latency (mako reports it
    /// once per run) and for seconds a value is undefined in (no TPS, an idle client).
    pub fn per_second(&self, m: Metric) -> Option<Vec<f64>> {
        let window = self
            .per_second_tps
            .get(self.warmup_s.round() as usize..)
            .unwrap_or_default();
        let cores = |r: CpuRole| self.per_second_cores.get(&r).filter(|v| !v.is_empty());
        let series: Vec<f64> = match m {
            Metric::Tps => window.to_vec(),
            Metric::TxnLatencyP99
            | Metric::InstructionsPerTxn(_)
            | Metric::TotalInstructionsPerTxn
            | Metric::KneeTps => return None,
            Metric::CpuPerTxn(role) => cores(role)?
                .iter()
                .zip(window)
                .map(|(c, tps)| c * 1e6 / tps)
                .collect(),
            Metric::StorageCpuRatio => cores(CpuRole::Storage)?
                .iter()
                .zip(cores(CpuRole::Client)?)
                .map(|(s, c)| s / c)
                .collect(),
        };
        let series: Vec<f64> = series.into_iter().filter(|v| v.is_finite()).collect();
        (!series.is_empty()).then_some(series)
    }

    /// The samples of a run's trials, in order.
    pub fn of_trials(trials: &[TrialRecord]) -> Vec<Sample> {
        trials.iter().map(Sample::of_trial).collect()
    }

    /// The samples a run is judged on: a recorded baseline's (when judged against one) as
    /// its baseline arm, then the run's own trials.
    pub fn of_run(recorded: Option<&Baseline>, trials: &[TrialRecord]) -> Vec<Sample> {
        let mut samples = recorded.map(Sample::of_recorded).unwrap_or_default();
        samples.extend(Sample::of_trials(trials));
        samples
    }

    /// A recorded baseline's trials, every run's, as baseline-arm samples, repetitions 1,
    /// 2, ... over all runs: all measured, without drift (a record keeps no per-second
    /// samples).
    pub fn of_recorded(b: &Baseline) -> Vec<Sample> {
        b.runs()
            .into_iter()
            .enumerate()
            .flat_map(|(run, (_, trials))| trials.iter().map(move |t| (run, t)))
            .enumerate()
            .map(|(i, (run, t))| Sample {
                index: 0,
                engine: b.engine,
                arm: Arm::Baseline,
                repetition: i as u32 + 1,
                recorded_run: Some(run),
                outcome: Outcome::Measured,
                error: None,
                tps: Some(t.tps),
                txn_latency_us_p99: t.txn_latency_us_p99,
                storage_cpu_cores: t.storage_cpu_cores,
                cpu_us_per_txn: per_txn(
                    Some(t.tps),
                    t.storage_cpu_cores.map(|c| (CpuRole::Storage, c)),
                ),
                instructions_per_txn: BTreeMap::new(),
                total_instructions_per_txn: None,
                instructions_unavailable: None,
                cpu_bound: None,
                workdir_peak_bytes: None,
                gate_stalls_s: Vec::new(),
                run_started_unix_s: None,
                run_with_partner: false,
                host_speed: None,
                drift: None,
                per_second_tps: Vec::new(),
                warmup_s: 0.0,
                per_second_cores: BTreeMap::new(),
                target_met: None,
            })
            .collect()
    }
}

/// Why a simulation trial has no instructions for some role: none of its functions were
/// found in that role's source files, which happens when the fdbserver has no symbols or
/// debug information (cachegrind names functions from the symbol table, files from the
/// debug information).
fn unattributed(s: &SimulationReport) -> Option<String> {
    let none: Vec<&str> = s
        .instructions_by_role
        .iter()
        .filter(|(r, ir)| **r != SimRole::Shared && **ir == 0)
        .map(|(r, _)| r.as_str())
        .collect();
    (!none.is_empty()).then(|| {
        format!(
            "no instruction of seed {} was attributed to the {} code: the fdbserver has no \
             symbols or debug information (a stripped binary; FDB's Release build keeps \
             them), or its sources are not where FDB keeps them (see the trial's profile.tsv)",
            s.seed,
            none.join(", ")
        )
    })
}

/// Instructions per committed transaction of each role of a simulation trial (its shared
/// work, flow's and the libraries', is no role's).
fn simulated_per_txn(s: &SimulationReport) -> BTreeMap<CpuRole, f64> {
    [
        (SimRole::Storage, CpuRole::Storage),
        (SimRole::Log, CpuRole::Log),
        (SimRole::Stateless, CpuRole::Stateless),
        (SimRole::Client, CpuRole::Client),
    ]
    .into_iter()
    .filter_map(|(sim, role)| Some((role, s.per_transaction(sim)?)))
    .filter(|(_, v)| v.is_finite() && *v > 0.0)
    .collect()
}

/// CPU microseconds per transaction from cores over the window and the window's TPS:
/// empty without a positive TPS. A role measured at 0 cores is left out: the CPU clock
/// counts in ticks of 10 ms, so 0 says the window was too short to see its work, not
/// that there was none.
fn per_txn(
    tps: Option<f64>,
    cores: impl IntoIterator<Item = (CpuRole, f64)>,
) -> BTreeMap<CpuRole, f64> {
    match tps.filter(|t| *t > 0.0) {
        Some(tps) => cores
            .into_iter()
            .filter(|(_, c)| c.is_finite() && *c > 0.0)
            .map(|(r, c)| (r, c * 1e6 / tps))
            .collect(),
        None => BTreeMap::new(),
    }
}
