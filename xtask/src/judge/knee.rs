//! Judge stage: a saturation sweep's steps and knee (`--sweep`). Each step runs the
//! multitest driver at one target TPS; an arm *follows* a step when every one of its
//! trials there measured at least [`FOLLOWED_SHARE`] of the target with no retries. The
//! knee of an arm is the highest target it followed, as the reference qualification report
//! of issue 17 reads its rows; a lower knee of the experiment is a REGRESSION. Pure.

use fdb::Engine;
use serde::Serialize;

use super::{Criteria, Judgement, Verdict};
use crate::{
    config::{readwrite::FOLLOWED_SHARE, Arm, Metric},
    results::trial::{Outcome, TrialRecord},
};

/// One arm at one step: what the reference report's row holds, as means over the arm's
/// trials at that step (one trial per step with `--trials 1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub engine: Engine,
    pub arm: Arm,
    /// The step's target, TPS (transactionsPerSecond).
    pub target_tps: u64,
    /// Trials of the arm at this step, and how many were measured.
    pub trials: usize,
    pub measured: usize,
    /// Mean measured TPS, and transaction p50 / p98 latency, ms, of the measured trials.
    pub tps: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p98_ms: Option<f64>,
    /// Retries over the arm's trials at this step.
    pub retries: f64,
    /// Every trial measured, within [`FOLLOWED_SHARE`] of the target, not overdriven
    /// (`MultitestReport::overdriven`).
    pub followed: bool,
}

/// The steps of `engine`'s sweep that ran, by target then arm (baseline first).
pub fn steps(trials: &[TrialRecord], engine: Engine) -> Vec<Step> {
    let mut targets: Vec<u64> = trials
        .iter()
        .filter(|t| t.engine == engine)
        .filter_map(|t| t.target_tps)
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let mut out = Vec::new();
    for target in targets {
        for arm in [Arm::Baseline, Arm::Experiment] {
            let of: Vec<&TrialRecord> = trials
                .iter()
                .filter(|t| t.engine == engine && t.arm == arm && t.target_tps == Some(target))
                .collect();
            if !of.is_empty() {
                out.push(step(engine, arm, target, &of));
            }
        }
    }
    out
}

fn step(engine: Engine, arm: Arm, target: u64, of: &[&TrialRecord]) -> Step {
    let reports: Vec<_> = of
        .iter()
        .filter(|t| t.outcome == Outcome::Measured)
        .filter_map(|t| t.multitest.as_ref())
        .collect();
    let results: Vec<_> = reports.iter().map(|m| &m.result).collect();
    let mean = |f: &dyn Fn(&fdb::multitest::ReadWriteResult) -> f64| {
        (!results.is_empty())
            .then(|| results.iter().map(|r| f(r)).sum::<f64>() / results.len() as f64)
    };
    let followed = results.len() == of.len()
        && reports
            .iter()
            .all(|m| !m.overdriven() && m.result.tps >= FOLLOWED_SHARE * target as f64);
    Step {
        engine,
        arm,
        target_tps: target,
        trials: of.len(),
        measured: results.len(),
        tps: mean(&|r| r.tps),
        p50_ms: mean(&|r| r.latency.p50_ms),
        p98_ms: mean(&|r| r.latency.p98_ms),
        retries: results.iter().map(|r| r.retries).sum(),
        followed,
    }
}

/// The highest target `arm` followed among `steps`; `None` when it followed none.
pub fn knee(steps: &[Step], arm: Arm) -> Option<u64> {
    steps
        .iter()
        .filter(|s| s.arm == arm && s.followed)
        .map(|s| s.target_tps)
        .max()
}

/// The knee judgement of each engine of a sweep over `ladder`: ERROR or TIMEOUT when a
/// trial failed (or the run was interrupted), INCONCLUSIVE when every arm followed the
/// ladder's top (the knee is above it), REGRESSION when the experiment's knee is below
/// the baseline's, else MEASURED.
pub fn judge(
    trials: &[TrialRecord],
    engines: &[Engine],
    ladder: &[u64],
    criteria: Criteria,
    interrupted: bool,
) -> Vec<Judgement> {
    engines
        .iter()
        .map(|&engine| {
            let (verdict, reason, knees) = decide(trials, engine, ladder, interrupted);
            // The knees by arm, for scripts (summary.json), not only in the reason.
            let steps = steps(trials, engine);
            let notes = [Arm::Baseline, Arm::Experiment]
                .into_iter()
                .filter(|arm| steps.iter().any(|s| s.arm == *arm))
                .map(|arm| match knee(&steps, arm) {
                    Some(k) => format!("{arm} knee: {k} TPS"),
                    None => format!("{arm} knee: below the first step, {} TPS", ladder[0]),
                })
                .collect();
            Judgement {
                engine,
                metric: Metric::KneeTps,
                gating: true,
                verdict,
                reason,
                baseline: None,
                experiment: None,
                tps_delta_pct: knees
                    .map(|(b, e)| (e as f64 / b as f64 - 1.0) * 100.0)
                    .filter(|d| d.is_finite()),
                comparison: None,
                p_not_worse_adjusted: None,
                p_slower_adjusted: None,
                family_size: 1,
                looks: 1,
                criteria,
                notes,
                noise_from: None,
            }
        })
        .collect()
}

/// The verdict, its reason, and the two knees when both arms have one.
fn decide(
    trials: &[TrialRecord],
    engine: Engine,
    ladder: &[u64],
    interrupted: bool,
) -> (Verdict, String, Option<(u64, u64)>) {
    let failed = trials
        .iter()
        .find(|t| t.engine == engine && t.outcome != Outcome::Measured);
    if let Some(t) = failed {
        let verdict = match t.outcome {
            Outcome::Timeout => Verdict::Timeout,
            _ => Verdict::Error,
        };
        let why = t.error.as_deref().unwrap_or("not measured");
        return (
            verdict,
            format!("the sweep stopped at trial {}: {why}", t.index),
            None,
        );
    }
    if interrupted {
        return (
            Verdict::Error,
            "the run was interrupted by a signal before the sweep passed its knee".into(),
            None,
        );
    }
    let steps = steps(trials, engine);
    let show = |k: Option<u64>| match k {
        Some(k) => format!("{k} TPS"),
        None => format!("below the first step ({} TPS)", ladder[0]),
    };
    let (b, e) = (knee(&steps, Arm::Baseline), knee(&steps, Arm::Experiment));
    let top = *ladder.last().expect("a ladder has 2 steps or more");
    let topped = |arm| {
        steps
            .iter()
            .any(|s| s.arm == arm && s.target_tps == top && s.followed)
    };
    let rule = format!(
        "the knee is the highest target followed: measured within {:.0}% of it, not \
         overdriven",
        (1.0 - FOLLOWED_SHARE) * 100.0
    );
    let knees = b.zip(e);
    if topped(Arm::Baseline) && topped(Arm::Experiment) {
        return (
            Verdict::Inconclusive,
            format!(
                "both arms followed every target up to the ladder's top, {top} TPS: the knee \
                 is above it; raise the ladder's top"
            ),
            knees,
        );
    }
    if b.is_none() && e.is_none() {
        return (
            Verdict::Inconclusive,
            format!(
                "neither arm followed the first target, {} TPS: the knee is below the \
                 ladder; lower its start",
                ladder[0]
            ),
            None,
        );
    }
    if e.unwrap_or(0) < b.unwrap_or(0) {
        return (
            Verdict::Regression,
            format!("the knee fell from {} to {} ({rule})", show(b), show(e)),
            knees,
        );
    }
    (
        Verdict::Measured,
        format!("knee {} (baseline {}; {rule})", show(e), show(b)),
        knees,
    )
}
