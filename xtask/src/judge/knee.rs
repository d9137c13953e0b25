//! Judge stage: a saturation sweep's steps and knee (`--sweep`). Each step runs the
//! multitest driver at one target TPS; an arm *follows* a step when a strict majority of its
//! trials there measured at least [`FOLLOWED_SHARE`] of the target and were not overdriven.
//! The knee of an arm is the highest target it followed, as the FDB 7.3 qualification
//! report reads its rows; a lower knee of the experiment is a REGRESSION: below
//! the baseline arm's, or without a control arm below a recorded baseline's. A step the
//! arms split on is run again up to [`CONFIRM_TRIALS`] trials per arm
//! ([`confirmations`]): one slow trial alone does not move a knee. Pure.

use fdb::Engine;
use serde::Serialize;

use super::{Criteria, Judgement, Reference, Verdict};
use crate::{
    config::{readwrite::FOLLOWED_SHARE, Arm, Metric},
    results::{
        baseline::Baseline,
        trial::{Outcome, TrialRecord},
    },
};

impl Reference<'_> {
    /// The knee the experiment's is judged against, TPS, among `steps`: the baseline
    /// arm's, or the lowest of the record's days; `None` below the ladder's first step.
    fn baseline_knee(self, steps: &[Step]) -> Option<u64> {
        match self {
            Reference::Record(r) => r.knees().into_iter().min(),
            _ => knee(steps, Arm::Baseline),
        }
    }
}

/// Trials per arm that a step the arms split on is run up to ([`confirmations`]): a
/// majority of 3 needs 2 slow trials to lose a step. On real FDB 8.0, 1 trial in 8 of an
/// A/A point-read sweep measured under half of its neighbours (docs/multitest.md, "Sweeps
/// measured on a 2-vCPU VM"), and with one trial per step such a trial alone gave a false REGRESSION.
pub const CONFIRM_TRIALS: usize = 3;

/// One arm at one step: what the reference report's row holds, as means over the arm's
/// trials at that step (one trial per step with `--trials 1`, more after a confirmation).
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
    /// Trials that measured within [`FOLLOWED_SHARE`] of the target and were not
    /// overdriven (`MultitestReport::overdriven`).
    pub followed_trials: usize,
    /// A strict majority of the arm's trials here followed (a failed trial does not).
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
    let followed_trials = reports
        .iter()
        .filter(|m| !m.overdriven() && m.result.tps >= FOLLOWED_SHARE * target as f64)
        .count();
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
        followed_trials,
        followed: follows(followed_trials, of.len()),
    }
}

/// Whether an arm follows a step where `followed` of its `trials` did: a strict majority.
pub fn follows(followed: usize, trials: usize) -> bool {
    2 * followed > trials
}

/// How many more pairs (or experiment trials, against a record without a control) the step
/// at `target` needs before its result counts, given the `steps` so far: none unless the
/// step splits the arms (one followed it and the other did not; against a record, the
/// experiment did not follow a target at or below the record's lowest knee). A split step
/// is run up to [`CONFIRM_TRIALS`] trials per arm, and to an odd count beyond that, so a
/// majority decides it. A step runs its confirmations once: the count it reaches is odd.
pub fn confirmations(steps: &[Step], target: u64, against: Reference) -> usize {
    let at = |arm| {
        steps
            .iter()
            .find(|s| s.arm == arm && s.target_tps == target)
    };
    let Some(e) = at(Arm::Experiment) else {
        return 0;
    };
    let (split, trials) = match (against, at(Arm::Baseline)) {
        (Reference::Record(r), _) => (
            !e.followed && r.knees().into_iter().min().is_some_and(|k| target <= k),
            e.trials,
        ),
        (_, Some(b)) => (b.followed != e.followed, b.trials.min(e.trials)),
        (_, None) => return 0,
    };
    match (split, trials) {
        (false, _) => 0,
        (true, n) if n < CONFIRM_TRIALS => CONFIRM_TRIALS - n,
        (true, n) => usize::from(n % 2 == 0),
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
    /// Whether a baseline knee exists at all: false for a sweep of one arm (a cluster the
    /// gate did not start), whose `baseline_tps` is then no knee, not one below the ladder.
    pub has_baseline: bool,
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
    against: Reference,
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
                has_baseline: matches!(against, Reference::Record(_))
                    || steps.iter().any(|s| s.arm == Arm::Baseline),
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
    against: Reference,
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
    if let Reference::Record(b) = against {
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
        "the knee is the highest target followed: a majority of the arm's trials there \
         measured within {:.0}% of it, not overdriven; a step the arms split on is run to {} \
         trials per arm before the sweep goes on",
        (1.0 - FOLLOWED_SHARE) * 100.0,
        CONFIRM_TRIALS
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

/// What to change when the knee is outside the ladder: `ours` for an A/B; against a record
/// the ladder is the record's, so a new record on a ladder with `change`.
fn remedy(against: Reference, ours: &str, change: &str) -> String {
    match against {
        Reference::Arm => ours.to_string(),
        _ => format!(
            "record the release again on a ladder with {change} (a record's knee compares \
             only on its own ladder)"
        ),
    }
}

/// A knee for the verdict's reason: at the ladder's top it is a lower bound, `None` is
/// below the first step.
fn show_knee(k: Option<u64>, ladder: &[u64]) -> String {
    match k {
        Some(k) if Some(&k) == ladder.last() => format!("{k} TPS or more (the ladder's top)"),
        Some(k) => format!("{k} TPS"),
        None => format!("below the first step ({} TPS)", ladder[0]),
    }
}

/// The verdict, its reason, and the two knees when both arms have one.
fn decide(
    trials: &[TrialRecord],
    engine: Engine,
    ladder: &[u64],
    interrupted: bool,
    against: Reference,
) -> (Verdict, String, Option<(u64, u64)>) {
    if let Some((verdict, why)) = stopped(trials, engine, interrupted) {
        return (verdict, why, None);
    }
    let steps = steps(trials, engine);
    let top = *ladder.last().expect("a ladder has 2 steps or more");
    let show = |k: Option<u64>| show_knee(k, ladder);
    let e = knee(&steps, Arm::Experiment);
    // A record's knee lies below the ladder's top (results::baseline checks it).
    let b = against.baseline_knee(&steps);
    let b_name = match against {
        Reference::Record(_) => " (the lowest of the record's days)",
        _ => "",
    };
    let rule = rule();
    // A knee at the top is a lower bound: no change in percent.
    let knees = b.zip(e).filter(|(b, e)| *b < top && *e < top);
    let remedy = |ours: &str, change: &str| remedy(against, ours, change);
    // One arm (a cluster the gate did not start): its knee is the result.
    if matches!(against, Reference::Arm | Reference::Nothing)
        && !steps.iter().any(|s| s.arm == Arm::Baseline)
    {
        return (
            Verdict::Measured,
            format!(
                "knee {}; one arm, no baseline to compare with ({rule})",
                show(e)
            ),
            None,
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of `arm` where `followed` of `trials` followed the target.
    fn step(arm: Arm, target_tps: u64, followed: usize, trials: usize) -> Step {
        Step {
            engine: Engine::Redwood,
            arm,
            target_tps,
            trials,
            measured: trials,
            tps: None,
            p50_ms: None,
            p98_ms: None,
            retries: 0.0,
            followed_trials: followed,
            followed: follows(followed, trials),
        }
    }

    #[test]
    fn only_a_step_the_arms_split_on_runs_again_to_an_odd_majority() {
        let at = |b: (usize, usize), e: (usize, usize)| {
            let steps = [
                step(Arm::Baseline, 100, b.0, b.1),
                step(Arm::Experiment, 100, e.0, e.1),
            ];
            confirmations(&steps, 100, Reference::Arm)
        };
        assert_eq!(at((1, 1), (1, 1)), 0, "both followed");
        assert_eq!(at((0, 1), (0, 1)), 0, "neither followed");
        assert_eq!(at((1, 1), (0, 1)), 2, "split at 1 trial: to 3");
        assert_eq!(at((0, 1), (1, 1)), 2, "a split either way");
        assert_eq!(at((2, 2), (1, 2)), 1, "1 of 2 is no majority: to 3");
        assert_eq!(at((3, 3), (1, 3)), 0, "3 trials decide");
        assert_eq!(at((4, 4), (2, 4)), 1, "a tie of 4: to 5");
        // The step's trials so far are counted, not the plan's.
        let alone = [step(Arm::Experiment, 100, 0, 1)];
        assert_eq!(
            confirmations(&alone, 100, Reference::Arm),
            0,
            "no baseline arm"
        );
        assert_eq!(
            confirmations(&alone, 200, Reference::Arm),
            0,
            "another step"
        );
    }

    /// xorshift64*: a seeded, dependency-free source for the Monte Carlo below.
    fn uniform(state: &mut u64) -> f64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One simulated A/A sweep over 5 steps whose true knee is the third: there each trial
    /// follows unless it is slow (probability `slow`), above it none does. Runs steps as
    /// `cmd::pipeline::run_sweep` does (confirmations when `confirm`) and returns whether
    /// the experiment's knee came out below the baseline's: a false REGRESSION.
    fn false_regression(state: &mut u64, slow: f64, confirm: bool) -> bool {
        let mut steps = Vec::new();
        for (i, target) in [100u64, 200, 400, 800, 1600].into_iter().enumerate() {
            let draw = |n: usize, state: &mut u64| {
                (0..n).filter(|_| i <= 2 && uniform(state) >= slow).count()
            };
            let (b, e) = (draw(1, state), draw(1, state));
            steps.push(step(Arm::Baseline, target, b, 1));
            steps.push(step(Arm::Experiment, target, e, 1));
            let extra = if confirm {
                confirmations(&steps, target, Reference::Arm)
            } else {
                0
            };
            if extra > 0 {
                let n = 1 + extra;
                let (b, e) = (b + draw(extra, state), e + draw(extra, state));
                let len = steps.len();
                steps[len - 2] = step(Arm::Baseline, target, b, n);
                steps[len - 1] = step(Arm::Experiment, target, e, n);
            }
            if !steps.iter().any(|s| s.target_tps == target && s.followed) {
                break;
            }
        }
        knee(&steps, Arm::Experiment).unwrap_or(0) < knee(&steps, Arm::Baseline).unwrap_or(0)
    }

    #[test]
    fn confirming_split_steps_cuts_a_slow_trials_false_regressions() {
        // 1 trial in 8 slow, as in the real A/A point-read sweep (docs/multitest.md).
        let (runs, slow) = (20_000, 0.125);
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let rate = |confirm: bool, state: &mut u64| {
            (0..runs)
                .filter(|_| false_regression(state, slow, confirm))
                .count() as f64
                / runs as f64
        };
        let (before, after) = (rate(false, &mut state), rate(true, &mut state));
        // Without confirmation a lone slow trial at the knee (or any step below, when
        // the sweep then stops) decides: about slow x (1 - slow) per followed step.
        assert!(before > 0.08, "{before}");
        // With it, 2 slow trials of 3 are needed: about 3 slow^2 of the split cases.
        assert!(after < before / 3.0, "{after} against {before}");
        assert!(after < 0.05, "{after}");
    }
}
