//! Judge stage, its input: one [`Sample`] per trial, from a trial record of this run or
//! from a recorded baseline. The judge reads nothing else of a trial. Pure.

use fdb::Engine;

use super::drift::{drift, Drift};
use crate::{
    config::Arm,
    results::{
        baseline::Baseline,
        trial::{Outcome, TrialRecord},
    },
};

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
    /// Whether the storage server was CPU-bound; `None` when unknown.
    pub cpu_bound: Option<bool>,
    /// Peak growth of the work dir's used bytes during the trial.
    pub workdir_peak_bytes: Option<u64>,
    /// The trend of TPS within the measurement window, when there were enough samples.
    pub drift: Option<Drift>,
}

impl Sample {
    /// The sample of one trial of this run.
    pub fn of_trial(t: &TrialRecord) -> Sample {
        let r = t.report.as_ref();
        Sample {
            index: t.index,
            engine: t.engine,
            arm: t.arm,
            repetition: t.repetition,
            outcome: t.outcome,
            error: t.error.clone(),
            tps: r.map(|r| r.tps),
            txn_latency_us_p99: r.and_then(|r| r.transaction_latency()).map(|l| l.p99),
            storage_cpu_cores: t.storage_cpu_cores,
            cpu_bound: t.cpu_bound,
            workdir_peak_bytes: t.workdir_peak_bytes,
            drift: r.and_then(|r| drift(&r.samples_tps, r.warmup_duration_s)),
        }
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

    /// A recorded baseline's trials as baseline-arm samples, repetitions 1, 2, ...: all
    /// measured, without drift (a record keeps no per-second samples).
    pub fn of_recorded(b: &Baseline) -> Vec<Sample> {
        b.trials
            .iter()
            .enumerate()
            .map(|(i, t)| Sample {
                index: 0,
                engine: b.engine,
                arm: Arm::Baseline,
                repetition: i as u32 + 1,
                outcome: Outcome::Measured,
                error: None,
                tps: Some(t.tps),
                txn_latency_us_p99: t.txn_latency_us_p99,
                storage_cpu_cores: t.storage_cpu_cores,
                cpu_bound: None,
                workdir_peak_bytes: None,
                drift: None,
            })
            .collect()
    }
}
