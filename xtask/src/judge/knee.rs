//! Judge stage: a saturation sweep's steps and knee (`--sweep`). Each step runs the
//! multitest driver at one target TPS; an arm *follows* a step when every one of its
//! trials there measured at least [`FOLLOWED_SHARE`] of the target with no retries. The
//! knee of an arm is the highest target it followed, as the reference qualification report
//! of issue 17 reads its rows; a lower knee of the experiment is a REGRESSION: below the
//! baseline arm's, or without a control arm below a recorded baseline's. Pure.

use fdb::Engine;
use serde::Serialize;

use super::{Criteria, Judgement, Verdict};
use crate::{
    config::{readwrite::FOLLOWED_SHARE, Arm, Metric},
    results::{
        baseline::Baseline,
        trial::{Outcome, TrialRecord},
    },
};

/// What the experiment's knee is judged against.
#[derive(Debug, Clone, Copy)]
pub enum Against<'a> {
    /// The run's baseline arm (an A/B).
    Arm,
    /// The run's baseline arm as the control of a sweep's record (the recorded build run
    /// today): judged as [`Against::Arm`], with remedies that keep the record's ladder.
    Control(&'a Baseline),
    /// A sweep's record without a control arm (`--no-control`): the lowest of its days'
    /// knees, so a host that is slow today costs no false REGRESSION the record's own days
    /// would not also have shown.
    Record(&'a Baseline),
}

impl<'a> Against<'a> {
    /// What a sweep judged against `record` (if any) compares with: the record's days
    /// without a control arm (`control` false), else the run's baseline arm.
    pub fn of(record: Option<&'a Baseline>, control: bool) -> Against<'a> {
        match (record, control) {
            (Some(r), false) => Against::Record(r),
            (Some(r), true) => Against::Control(r),
            (None, _) => Against::Arm,
        }
    }

    /// The knee the experiment's is judged against, TPS, among `steps`: the baseline
    /// arm's, or the lowest of the record's days; `None` below the ladder's first step.
    fn baseline_knee(self, steps: &[Step]) -> Option<u64> {
        match self {
            Against::Record(r) => r.knees().into_iter().min(),
            _ => knee(steps, Arm::Baseline),
        }
    }
}

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

/// The knees a sweep's judgement compares, TPS: `None` for a knee below the ladder's first
/// step. The baseline's is the baseline arm's, or a record's lowest day's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Knees {
    pub baseline_tps: Option<u64>,
    pub experiment_tps: Option<u64>,
    /// The ladder's first and top steps, TPS (a knee below the first is shown as
    /// "< first", one at the top as "≥ top": the knee is at least that).
    pub first_step_tps: u64,
    pub top_step_tps: u64,
}

/// The highest target `arm` followed among `steps`; `None` when it followed none.
pub fn knee(steps: &[Step], arm: Arm) -> Option<u64> {
    steps
        .iter()
        .filter(|s| s.arm == arm && s.followed)
        .map(|s| s.target_tps)
        .max()
}

/// The knee judgement of each engine of a sweep over `ladder`, against the baseline arm
/// or a record (`against`): ERROR or TIMEOUT when a trial failed (or the run was
/// interrupted), INCONCLUSIVE when every arm followed the ladder's top (the knee is above
/// it), REGRESSION when the experiment's knee is below the baseline's, else MEASURED.
pub fn judge(
    trials: &[TrialRecord],
    engines: &[Engine],
    ladder: &[u64],
    criteria: Criteria,
    interrupted: bool,
    against: Against,
) -> Vec<Judgement> {
    engines
        .iter()
        .map(|&engine| {
            let (verdict, reason, knees) = decide(trials, engine, ladder, interrupted, against);
            let steps = steps(trials, engine);
            let shown = Knees {
                baseline_tps: against.baseline_knee(&steps),
                experiment_tps: knee(&steps, Arm::Experiment),
                first_step_tps: ladder[0],
                top_step_tps: ladder[ladder.len() - 1],
            };
            // A sweep that stopped early has no knees to show, only steps so far.
            let finished = stopped(trials, engine, interrupted).is_none();
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
                notes: knee_notes(trials, engine, ladder, against),
                noise_from: None,
                knees: (finished && !steps.is_empty()).then_some(shown),
            }
        })
        .collect()
}

/// The knees by arm (and the record's), for scripts (summary.json), not only in the
/// reason.
fn knee_notes(
    trials: &[TrialRecord],
    engine: Engine,
    ladder: &[u64],
    against: Against,
) -> Vec<String> {
    let steps = steps(trials, engine);
    let mut notes: Vec<String> = [Arm::Baseline, Arm::Experiment]
        .into_iter()
        .filter(|arm| steps.iter().any(|s| s.arm == *arm))
        .map(|arm| match knee(&steps, arm) {
            Some(k) => format!("{arm} knee: {k} TPS"),
            None => format!("{arm} knee: below the first step, {} TPS", ladder[0]),
        })
        .collect();
    if let Against::Record(b) = against {
        notes.push(format!("{}: {}", b.name, recorded_knees(b)));
    }
    notes
}

/// A record's knees for people: "knee 16000 TPS" or "knees 16000, 24000 TPS over 2 days".
fn recorded_knees(b: &Baseline) -> String {
    let knees: Vec<String> = b.knees().iter().map(u64::to_string).collect();
    match knees.len() {
        1 => format!("recorded knee {} TPS", knees[0]),
        n => format!("recorded knees {} TPS over {n} days", knees.join(", ")),
    }
}

/// Today's control arm's knee against a sweep's record, per engine: `(changed, line)`,
/// changed (HOST CHANGED) when the control's knee lies outside the recorded days' knees
/// (or past either end of the ladder). The candidate's verdict pairs it with the control
/// and stands; this says whether the record still describes the host.
pub fn host_lines(
    record: &Baseline,
    trials: &[TrialRecord],
    engines: &[Engine],
) -> Vec<(bool, String)> {
    let knees = record.knees();
    let (Some(&low), Some(&high)) = (knees.iter().min(), knees.iter().max()) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for &engine in engines {
        let steps = steps(trials, engine);
        if !steps.iter().any(|s| s.arm == Arm::Baseline) {
            continue;
        }
        let control = knee(&steps, Arm::Baseline);
        let changed = control.is_none_or(|k| k < low || k > high);
        let shown = control.map_or_else(
            || "followed no step: its knee is below the ladder's first".to_string(),
            |k| format!("reached a knee of {k} TPS"),
        );
        let figures = format!(
            "today's control (the recorded build) {shown}; baseline {} {}",
            record.name,
            recorded_knees(record)
        );
        lines.push(if changed {
            (
                true,
                format!(
                    "HOST CHANGED ({engine}): {figures}; the verdict pairs the candidate with \
                     today's control and stands, but the record's knee no longer describes \
                     this host"
                ),
            )
        } else {
            (
                false,
                format!("host check ({engine}): {figures}: consistent"),
            )
        });
    }
    lines
}

/// What a knee is, for the verdict's reason.
fn rule() -> String {
    format!(
        "the knee is the highest target followed: measured within {:.0}% of it, not \
         overdriven",
        (1.0 - FOLLOWED_SHARE) * 100.0
    )
}

/// ERROR or TIMEOUT with its reason when the sweep of `engine` stopped before its knee
/// showed: a trial that failed, or an interrupt.
fn stopped(trials: &[TrialRecord], engine: Engine, interrupted: bool) -> Option<(Verdict, String)> {
    let failed = trials
        .iter()
        .find(|t| t.engine == engine && t.outcome != Outcome::Measured);
    if let Some(t) = failed {
        let verdict = match t.outcome {
            Outcome::Timeout => Verdict::Timeout,
            _ => Verdict::Error,
        };
        let why = t.error.as_deref().unwrap_or("not measured");
        return Some((
            verdict,
            format!("the sweep stopped at trial {}: {why}", t.index),
        ));
    }
    interrupted.then(|| {
        (
            Verdict::Error,
            "the run was interrupted by a signal before the sweep passed its knee".into(),
        )
    })
}

/// The verdict, its reason, and the two knees when both arms have one.
fn decide(
    trials: &[TrialRecord],
    engine: Engine,
    ladder: &[u64],
    interrupted: bool,
    against: Against,
) -> (Verdict, String, Option<(u64, u64)>) {
    if let Some((verdict, why)) = stopped(trials, engine, interrupted) {
        return (verdict, why, None);
    }
    let steps = steps(trials, engine);
    let top = *ladder.last().expect("a ladder has 2 steps or more");
    let show = |k: Option<u64>| match k {
        Some(k) if k == top => format!("{k} TPS or more (the ladder's top)"),
        Some(k) => format!("{k} TPS"),
        None => format!("below the first step ({} TPS)", ladder[0]),
    };
    let e = knee(&steps, Arm::Experiment);
    // A record's knee lies below the ladder's top (results::baseline checks it).
    let b = against.baseline_knee(&steps);
    let b_name = match against {
        Against::Record(_) => " (the lowest of the record's days)",
        _ => "",
    };
    let rule = rule();
    // A knee at the top is a lower bound: no change in percent.
    let knees = b.zip(e).filter(|(b, e)| *b < top && *e < top);
    // Against a record the ladder is the record's: the remedy is a new record.
    let remedy = |ours: &str, change: &str| match against {
        Against::Arm => ours.to_string(),
        _ => format!(
            "record the release again on a ladder with {change} (a record's knee compares \
             only on its own ladder)"
        ),
    };
    if b == Some(top) && e == Some(top) {
        return (
            Verdict::Inconclusive,
            format!(
                "both arms followed every target up to the ladder's top, {top} TPS: the knee \
                 is above it; {}",
                remedy("raise the ladder's top", "a higher top")
            ),
            None,
        );
    }
    if b.is_none() && e.is_none() {
        return (
            Verdict::Inconclusive,
            format!(
                "neither arm followed the first target, {} TPS: the knee is below the \
                 ladder; {}",
                ladder[0],
                remedy("lower its start", "a lower start")
            ),
            None,
        );
    }
    if e.unwrap_or(0) < b.unwrap_or(0) {
        return (
            Verdict::Regression,
            format!(
                "the knee fell from {}{b_name} to {} ({rule})",
                show(b),
                show(e)
            ),
            knees,
        );
    }
    (
        Verdict::Measured,
        format!("knee {} (baseline {}{b_name}; {rule})", show(e), show(b)),
        knees,
    )
}
