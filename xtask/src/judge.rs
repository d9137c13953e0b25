//! Judge stage: trial records -> one verdict per engine and gated metric. Pure.
//!
//! Rule (first version): the experiment's mean TPS is compared with the baseline's mean
//! TPS over the measured trials of each engine. Verdict precedence, as in DESIGN.md:
//! TIMEOUT > ERROR > SLO-VIOLATION > REGRESSION > MEASURED. A run that could not be
//! measured is never a pass.

use std::fmt;

use serde::Serialize;
use statrs::statistics::Statistics;

use crate::{
    config::{Arm, Engine},
    execute::{Outcome, TrialRecord},
};

/// The gate's answer for one engine and metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    /// Clean run, above the SLO, no regression beyond the tolerance.
    #[serde(rename = "MEASURED")]
    Measured,
    /// Materially below the baseline: for now, mean TPS below it by more than
    /// `--max-regression` percent (no significance test yet).
    #[serde(rename = "REGRESSION")]
    Regression,
    /// Below the absolute floor (`--slo-tps`).
    #[serde(rename = "SLO-VIOLATION")]
    SloViolation,
    /// Not measured: a crash, an invalid report, a missing trial, an interrupt.
    #[serde(rename = "ERROR")]
    Error,
    /// A phase passed its time bound.
    #[serde(rename = "TIMEOUT")]
    Timeout,
}

impl Verdict {
    /// Exit status contribution: 0 MEASURED, 1 REGRESSION/SLO-VIOLATION, 2 otherwise.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Measured => 0,
            Verdict::Regression | Verdict::SloViolation => 1,
            Verdict::Error | Verdict::Timeout => 2,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Measured => "MEASURED",
            Verdict::Regression => "REGRESSION",
            Verdict::SloViolation => "SLO-VIOLATION",
            Verdict::Error => "ERROR",
            Verdict::Timeout => "TIMEOUT",
        })
    }
}

/// Thresholds the verdicts are decided by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Criteria {
    /// Trials planned per arm and engine.
    pub trials: u32,
    /// Largest tolerated TPS loss, percent.
    pub max_regression_pct: f64,
    /// Absolute TPS floor of the experiment.
    pub slo_tps: Option<f64>,
}

/// TPS of one arm's measured trials of one engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmStats {
    /// Per-trial TPS (mako `results.tps`), in run order.
    pub tps: Vec<f64>,
    /// Mean TPS.
    pub tps_mean: f64,
    /// Sample standard deviation of TPS; `None` with one trial.
    pub tps_stddev: Option<f64>,
    /// Coefficient of variation (stddev / mean), percent; `None` with one trial.
    pub tps_cv_pct: Option<f64>,
    /// Mean of the per-trial p99 transaction latency (warmup included, as mako reports
    /// it), microseconds.
    pub txn_latency_us_p99_mean: Option<f64>,
    /// Mean storage server CPU over the measurement windows, cores.
    pub storage_cpu_cores_mean: Option<f64>,
    /// Trials whose storage server was measured below 0.85 cores (not CPU-bound).
    pub trials_not_cpu_bound: usize,
    /// Largest growth of the work dir's used bytes in a trial.
    pub workdir_peak_bytes_max: Option<u64>,
}

impl ArmStats {
    fn of(trials: &[&TrialRecord]) -> Option<ArmStats> {
        let tps: Vec<f64> = trials
            .iter()
            .filter_map(|t| t.report.as_ref().map(|r| r.tps))
            .collect();
        if tps.is_empty() {
            return None;
        }
        let mean = tps.iter().mean();
        let stddev = (tps.len() > 1).then(|| tps.iter().std_dev());
        let mean_of = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().mean());
        Some(ArmStats {
            tps_mean: mean,
            tps_stddev: stddev,
            tps_cv_pct: stddev.map(|s| 100.0 * s / mean),
            txn_latency_us_p99_mean: mean_of(
                trials
                    .iter()
                    .filter_map(|t| Some(t.report.as_ref()?.latency_us.get("TRANSACTION")?.p99))
                    .collect(),
            ),
            trials_not_cpu_bound: trials.iter().filter(|t| t.cpu_bound == Some(false)).count(),
            workdir_peak_bytes_max: trials.iter().filter_map(|t| t.workdir_peak_bytes).max(),
            storage_cpu_cores_mean: mean_of(
                trials.iter().filter_map(|t| t.storage_cpu_cores).collect(),
            ),
            tps,
        })
    }
}

/// The verdict on one engine's TPS, with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub engine: Engine,
    /// Gated metric; `tps` for now.
    pub metric: &'static str,
    pub verdict: Verdict,
    /// One sentence with the numbers that decided the verdict.
    pub reason: String,
    pub baseline: Option<ArmStats>,
    pub experiment: Option<ArmStats>,
    /// (experiment mean / baseline mean - 1) x 100, percent.
    pub tps_delta_pct: Option<f64>,
    pub criteria: Criteria,
    /// Things that make the numbers less trustworthy without deciding the verdict.
    pub notes: Vec<String>,
}

/// Judges every engine of the run. `trials` may be partial: missing trials make the
/// verdict ERROR, and so does `interrupted` (a signal cut the run short), whatever the
/// numbers say, unless a TIMEOUT came first.
pub fn judge(
    trials: &[TrialRecord],
    engines: &[Engine],
    criteria: Criteria,
    interrupted: bool,
) -> Vec<Judgement> {
    let mut judgements: Vec<Judgement> = engines
        .iter()
        .map(|&e| judge_engine(trials, e, criteria))
        .collect();
    for j in judgements
        .iter_mut()
        .filter(|j| interrupted && j.verdict < Verdict::Error)
    {
        j.reason = format!(
            "the run was interrupted by a signal (numbers so far: {})",
            j.reason
        );
        j.verdict = Verdict::Error;
    }
    judgements
}

fn judge_engine(all: &[TrialRecord], engine: Engine, criteria: Criteria) -> Judgement {
    let of = |arm: Arm| -> Vec<&TrialRecord> {
        all.iter()
            .filter(|t| t.engine == engine && t.arm == arm)
            .collect()
    };
    let (base, exp) = (of(Arm::Baseline), of(Arm::Experiment));
    let baseline = ArmStats::of(&measured(&base));
    let experiment = ArmStats::of(&measured(&exp));
    let tps_delta_pct = match (&baseline, &experiment) {
        (Some(b), Some(e)) => Some(100.0 * (e.tps_mean / b.tps_mean - 1.0)),
        _ => None,
    };
    let (verdict, reason) = decide(&base, &exp, &baseline, &experiment, tps_delta_pct, criteria);
    let mut notes = Vec::new();
    for (arm, stats) in [(Arm::Baseline, &baseline), (Arm::Experiment, &experiment)] {
        if let Some(s) = stats.as_ref().filter(|s| s.trials_not_cpu_bound > 0) {
            notes.push(format!(
                "{} of {} {arm} trials not CPU-bound (storage server below {} cores): their \
                 TPS may measure the client or the host, not the storage server",
                s.trials_not_cpu_bound,
                s.tps.len(),
                crate::monitor::CPU_BOUND_MIN_CORES
            ));
        }
    }
    Judgement {
        engine,
        metric: "tps",
        verdict,
        reason,
        baseline,
        experiment,
        tps_delta_pct,
        criteria,
        notes,
    }
}

fn measured<'a>(trials: &[&'a TrialRecord]) -> Vec<&'a TrialRecord> {
    trials
        .iter()
        .copied()
        .filter(|t| t.outcome == Outcome::Measured)
        .collect()
}

fn decide(
    base: &[&TrialRecord],
    exp: &[&TrialRecord],
    baseline: &Option<ArmStats>,
    experiment: &Option<ArmStats>,
    delta_pct: Option<f64>,
    c: Criteria,
) -> (Verdict, String) {
    let all = || base.iter().chain(exp);
    let describe = |t: &TrialRecord| {
        format!(
            "trial {} ({} #{}): {}",
            t.index,
            t.arm,
            t.repetition,
            t.error.as_deref().unwrap_or("?")
        )
    };
    if let Some(t) = all().find(|t| t.outcome == Outcome::Timeout) {
        return (Verdict::Timeout, describe(t));
    }
    if let Some(t) = all().find(|t| t.outcome != Outcome::Measured) {
        return (Verdict::Error, describe(t));
    }
    let planned = c.trials as usize;
    if base.len() < planned || exp.len() < planned {
        return (
            Verdict::Error,
            format!(
                "only {} baseline and {} experiment trials of {planned} each ran",
                base.len(),
                exp.len()
            ),
        );
    }
    let (Some(b), Some(e), Some(delta)) = (baseline, experiment, delta_pct) else {
        return (Verdict::Error, "no measured trial".to_string());
    };
    let numbers = format!(
        "experiment {:.1} TPS vs baseline {:.1} TPS ({delta:+.2}%)",
        e.tps_mean, b.tps_mean
    );
    if let Some(slo) = c.slo_tps {
        if e.tps_mean < slo {
            return (
                Verdict::SloViolation,
                format!("{numbers}: below the SLO of {slo:.1} TPS"),
            );
        }
    }
    if delta < -c.max_regression_pct {
        return (
            Verdict::Regression,
            format!(
                "{numbers}: more than the tolerated {:.2}% below",
                c.max_regression_pct
            ),
        );
    }
    (
        Verdict::Measured,
        format!(
            "{numbers}: within the tolerated {:.2}%",
            c.max_regression_pct
        ),
    )
}

/// The run's exit status: the worst verdict's (0, 1 or 2).
pub fn exit_code(judgements: &[Judgement]) -> i32 {
    judgements
        .iter()
        .map(|j| j.verdict.exit_code())
        .max()
        .unwrap_or(2)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{analyze::MakoReport, execute::Phase};
    use std::{collections::BTreeMap, path::PathBuf};

    pub(crate) fn trial(index: usize, arm: Arm, tps: f64) -> TrialRecord {
        TrialRecord {
            index,
            engine: Engine::Redwood,
            arm,
            repetition: index.div_ceil(2) as u32,
            knobs: vec![],
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
            storage_cpu_cores: Some(0.97),
            cpu_bound: Some(true),
            workdir_peak_bytes: Some(1 << 20),
            artifacts: PathBuf::from(format!("trials/{index:02}")),
        }
    }

    const CRITERIA: Criteria = Criteria {
        trials: 2,
        max_regression_pct: 2.0,
        slo_tps: Some(500.0),
    };

    fn verdict(trials: &[TrialRecord]) -> Judgement {
        judge(trials, &[Engine::Redwood], CRITERIA, false).remove(0)
    }

    fn abba(a: [f64; 2], b: [f64; 2]) -> Vec<TrialRecord> {
        vec![
            trial(1, Arm::Baseline, a[0]),
            trial(2, Arm::Experiment, b[0]),
            trial(3, Arm::Experiment, b[1]),
            trial(4, Arm::Baseline, a[1]),
        ]
    }

    #[test]
    fn small_loss_is_measured_and_large_loss_is_regression() {
        let j = verdict(&abba([1000.0, 1000.0], [990.0, 990.0]));
        assert_eq!(j.verdict, Verdict::Measured, "{}", j.reason);
        assert!((j.tps_delta_pct.unwrap() + 1.0).abs() < 1e-9);
        let j = verdict(&abba([1000.0, 1000.0], [950.0, 970.0]));
        assert_eq!(j.verdict, Verdict::Regression, "{}", j.reason);
        assert!(j.reason.contains("-4.00%"), "{}", j.reason);
    }

    #[test]
    fn an_improvement_never_fails() {
        assert_eq!(
            verdict(&abba([1000.0, 1000.0], [1500.0, 1400.0])).verdict,
            Verdict::Measured
        );
    }

    #[test]
    fn slo_violation_wins_over_regression() {
        let j = verdict(&abba([1000.0, 1000.0], [400.0, 400.0]));
        assert_eq!(j.verdict, Verdict::SloViolation, "{}", j.reason);
        assert!(
            j.reason.contains("below the SLO of 500.0 TPS"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn timeout_wins_over_everything_and_names_the_phase() {
        let mut t = abba([1000.0, 1000.0], [400.0, 400.0]);
        t[2].outcome = Outcome::Error;
        t[2].error = Some("mako-run: crashed".into());
        t[3].outcome = Outcome::Timeout;
        t[3].failed_phase = Some(Phase::Configure);
        t[3].error = Some("configure: did not finish within its bound of 2s".into());
        let j = verdict(&t);
        assert_eq!(j.verdict, Verdict::Timeout);
        assert!(
            j.reason.contains("trial 4 (baseline #2): configure"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn missing_or_failed_trials_are_errors_not_passes() {
        let mut t = abba([1000.0, 1000.0], [1000.0, 1000.0]);
        t.pop();
        let j = verdict(&t);
        assert_eq!(j.verdict, Verdict::Error);
        assert!(
            j.reason.contains("only 1 baseline and 2 experiment"),
            "{}",
            j.reason
        );
        let mut t = abba([1000.0, 1000.0], [1000.0, 1000.0]);
        t[1].outcome = Outcome::Error;
        assert_eq!(verdict(&t).verdict, Verdict::Error);
        assert_eq!(exit_code(&[verdict(&t)]), 2);
    }

    #[test]
    fn an_interrupted_run_is_never_a_pass() {
        let t = abba([1000.0, 1000.0], [1000.0, 1000.0]);
        let j = judge(&t, &[Engine::Redwood], CRITERIA, true).remove(0);
        assert_eq!(j.verdict, Verdict::Error);
        assert!(
            j.reason.starts_with("the run was interrupted"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn stats_give_mean_stddev_and_cv() {
        let j = verdict(&abba([900.0, 1100.0], [1000.0, 1000.0]));
        let b = j.baseline.unwrap();
        assert_eq!(b.tps_mean, 1000.0);
        let sd = (2.0f64 * 100.0 * 100.0).sqrt(); // sample stddev of {900, 1100}
        assert!((b.tps_stddev.unwrap() - sd).abs() < 1e-9);
        assert!((b.tps_cv_pct.unwrap() - sd / 10.0).abs() < 1e-9);
        assert_eq!(j.experiment.unwrap().tps_cv_pct, Some(0.0));
    }
}
