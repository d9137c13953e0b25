//! Judge stage: a saturation sweep's steps and knee (`--sweep`). Each step runs the
//! multitest driver at one target TPS; an arm *follows* a step when a strict majority of its
//! trials there measured at least [`FOLLOWED_SHARE`] of the target and were not overdriven.
//! The knee of an arm is the highest target it followed, as the FDB 7.3 qualification
//! report reads its rows. A step the arms split on is run again up to [`CONFIRM_TRIALS`]
//! trials per arm ([`confirmations`]): one slow trial alone does not move a knee.
//!
//! A knee is not a test: a step lower is a fall of the ladder's factor (29-50% on ladders of
//! x1.4-x2), and on an A/A sweep whose capacity sits near a step's threshold the arms' knees
//! differ by chance (in up to a quarter of such sweeps with 3 pairs per step). So a lower
//! knee of the experiment than the baseline arm's is a REGRESSION only when the TPS show the
//! loss: a paired test ([`stats::paired_in_order`], log ratios, the AR(1) order correction)
//! of the pairs at the steps above the lower of the two knees, where at least one arm no
//! longer follows and the TPS measure what the arms can take. The one-sided p of "no loss",
//! Holm-adjusted over the engines, must be below ALPHA / 2 and the estimated loss beyond
//! `--max-regression`; else the fall is INCONCLUSIVE. Against a record without a control
//! there are no pairs: a knee below the lowest recorded day's is a REGRESSION. Pure.

use fdb::Engine;
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    stats::{self, Comparison, ALPHA},
    Criteria, Judgement, Reference, Verdict,
};
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
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
/// it) or neither its first step; when the experiment's knee is below the baseline's,
/// REGRESSION if the pairs past the lower knee show the loss ([`FallTest`]), else
/// INCONCLUSIVE; else MEASURED.
pub fn judge(
    trials: &[TrialRecord],
    engines: &[Engine],
    ladder: &[u64],
    criteria: Criteria,
    interrupted: bool,
    against: Reference,
) -> Vec<Judgement> {
    let tests = fall_tests(trials, engines, against, criteria.max_regression_pct);
    engines
        .iter()
        .zip(&tests)
        .map(|(&engine, test)| {
            let sweep = Sweep {
                trials,
                engine,
                ladder,
                interrupted,
                against,
            };
            let (verdict, reason, knees) = decide(&sweep, test.as_ref());
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
                mean_change_pct: knees
                    .map(|(b, e)| (e as f64 / b as f64 - 1.0) * 100.0)
                    .filter(|d| d.is_finite()),
                comparison: None,
                p_not_worse_adjusted: None,
                p_slower_adjusted: test.as_ref().and_then(|t| t.p_slower_adjusted),
                family_size: test.as_ref().map_or(1, |t| t.family),
                looks: 1,
                criteria,
                notes: knee_notes(trials, engine, ladder, against),
                noise_from: None,
                knees: (finished && !steps.is_empty()).then_some(shown),
                per_second: None,
            }
        })
        .collect()
}

/// One engine's sweep as [`decide`] reads it.
struct Sweep<'a> {
    trials: &'a [TrialRecord],
    engine: Engine,
    ladder: &'a [u64],
    interrupted: bool,
    against: Reference<'a>,
}

/// The paired test a knee's fall is judged on: the pairs (same step, same repetition) at
/// the steps above the lower of the two knees. There at least one arm stopped following,
/// so the trials measure what the arms take rather than the target; below, both arms
/// measured the target and the ratio says nothing of the knee. The steps are chosen the
/// same way whichever arm is the slower, so on an A/A sweep the log ratios stay symmetric
/// about 0 and the t test keeps its level (A/A figures: the tests of this module).
#[derive(Debug, Clone)]
struct FallTest {
    /// The lower knee, TPS (`None`: below the first step); the pairs are above it.
    above_tps: Option<u64>,
    /// The pairs' comparison; `None` with fewer than 2 pairs.
    comparison: Option<Comparison>,
    /// One-sided p of "no loss", Holm-adjusted over the engines tested.
    p_slower_adjusted: Option<f64>,
    /// Engines in the Holm family (those with a comparison).
    family: usize,
    /// `--max-regression`, percent.
    tolerance_pct: f64,
}

impl FallTest {
    /// Whether the pairs show a loss beyond the tolerance: significant at ALPHA / 2
    /// (one-sided, adjusted) and estimated beyond it. Pairs that agree exactly carry no
    /// estimate of the noise and show nothing.
    fn shown(&self) -> bool {
        let margin = (1.0 - self.tolerance_pct / 100.0).ln();
        match (&self.comparison, self.p_slower_adjusted) {
            (Some(c), Some(p)) => c.se > 0.0 && p < ALPHA / 2.0 && c.log_delta < margin,
            _ => false,
        }
    }

    /// The test's figures for a verdict's reason.
    fn figures(&self, ladder: &[u64]) -> String {
        let steps = match self.above_tps {
            Some(k) => format!("the steps above {k} TPS"),
            None => format!("every step from {} TPS", ladder[0]),
        };
        let holm = if self.family > 1 {
            format!(", Holm-adjusted over {} engines", self.family)
        } else {
            String::new()
        };
        match (&self.comparison, self.p_slower_adjusted) {
            (Some(c), _) if c.se == 0.0 => format!(
                "the {} pairs at {steps} all measured {:+.2}%, which carries no estimate of \
                 the noise",
                c.n_experiment, c.delta_pct
            ),
            (Some(c), Some(p)) => format!(
                "the {} pairs at {steps} measured {:+.2}% [95% CI {:+.2}, {:+.2}], one-sided p \
                 {p:.4} of no loss{holm}",
                c.n_experiment, c.delta_pct, c.ci_low_pct, c.ci_high_pct
            ),
            _ => format!("fewer than 2 pairs ran at {steps}"),
        }
    }
}

/// The [`FallTest`] of each engine (`None` without a baseline arm to pair with: against a
/// record, or one arm), its p Holm-adjusted over the engines that have a comparison.
fn fall_tests(
    trials: &[TrialRecord],
    engines: &[Engine],
    against: Reference,
    tolerance_pct: f64,
) -> Vec<Option<FallTest>> {
    if !matches!(against, Reference::Arm | Reference::Control(_)) {
        return vec![None; engines.len()];
    }
    let mut tests: Vec<Option<FallTest>> = engines
        .iter()
        .map(|&engine| {
            let steps = steps(trials, engine);
            if !steps.iter().any(|s| s.arm == Arm::Baseline) {
                return None;
            }
            // `None` (below the first step) is the lowest knee: every step is above it.
            let above = knee(&steps, Arm::Baseline).min(knee(&steps, Arm::Experiment));
            let (b, e, order) = pairs_above(trials, engine, above);
            Some(FallTest {
                above_tps: above,
                comparison: stats::paired_in_order(&b, &e, &order),
                p_slower_adjusted: None,
                family: 0,
                tolerance_pct,
            })
        })
        .collect();
    let tested: Vec<&mut FallTest> = tests
        .iter_mut()
        .flatten()
        .filter(|t| t.comparison.is_some())
        .collect();
    let p: Vec<f64> = tested
        .iter()
        .map(|t| t.comparison.as_ref().expect("tested").p_slower())
        .collect();
    let family = tested.len();
    for (t, p) in tested.into_iter().zip(stats::holm(&p)) {
        t.p_slower_adjusted = Some(p);
        t.family = family;
    }
    tests
}

/// The measured pairs of `engine` at the steps above `above` (all with `None`): baseline
/// and experiment TPS, and each pair's positions in the run order (baseline, experiment).
fn pairs_above(
    trials: &[TrialRecord],
    engine: Engine,
    above: Option<u64>,
) -> (Vec<f64>, Vec<f64>, Vec<(u64, u64)>) {
    let of = |arm| {
        trials.iter().filter(move |t| {
            t.engine == engine
                && t.arm == arm
                && t.outcome == Outcome::Measured
                && t.target_tps.is_some_and(|x| Some(x) > above)
        })
    };
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for b in of(Arm::Baseline) {
        let e = of(Arm::Experiment)
            .find(|e| e.target_tps == b.target_tps && e.repetition == b.repetition);
        if let (Some(e), Some(tb)) = (e, b.tps()) {
            if let Some(te) = e.tps() {
                out.0.push(tb);
                out.1.push(te);
                out.2.push((b.index as u64, e.index as u64));
            }
        }
    }
    out
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

/// The verdict, its reason, and the two knees when both arms have one; `test`, the
/// engine's [`FallTest`] when it has a baseline arm to pair with.
fn decide(sweep: &Sweep, test: Option<&FallTest>) -> (Verdict, String, Option<(u64, u64)>) {
    let (against, ladder) = (sweep.against, sweep.ladder);
    if let Some((verdict, why)) = stopped(sweep.trials, sweep.engine, sweep.interrupted) {
        return (verdict, why, None);
    }
    let steps = steps(sweep.trials, sweep.engine);
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
        let fell = format!("the knee fell from {}{b_name} to {}", show(b), show(e));
        let (verdict, reason) = fall(fell, test, ladder);
        return (verdict, format!("{reason} ({rule})"), knees);
    }
    (
        Verdict::Measured,
        format!("knee {} (baseline {}{b_name}; {rule})", show(e), show(b)),
        knees,
    )
}

/// The verdict on a knee that `fell` (the sentence saying from where to where): against a
/// record without pairs, REGRESSION; with a baseline arm, REGRESSION when its [`FallTest`]
/// shows the loss, else INCONCLUSIVE.
fn fall(fell: String, test: Option<&FallTest>, ladder: &[u64]) -> (Verdict, String) {
    let Some(test) = test else {
        return (Verdict::Regression, fell);
    };
    let figures = test.figures(ladder);
    let (tol, level) = (test.tolerance_pct, ALPHA / 2.0);
    if test.shown() {
        return (
            Verdict::Regression,
            format!(
                "{fell}, and the TPS show the loss: {figures} (below {level}), beyond the \
                 {tol:.2}% tolerance"
            ),
        );
    }
    (
        Verdict::Inconclusive,
        format!(
            "{fell}, but the TPS do not show a loss beyond the {tol:.2}% tolerance: {figures} \
             (a REGRESSION needs p below {level} and a loss beyond the tolerance); one or two \
             slow trials move a knee by a step on their own: run the sweep again with more \
             --trials per step"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use rand_distr::{Distribution, Normal};

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
    /// the experiment's knee came out below the baseline's by chance.
    fn knee_fell(state: &mut u64, slow: f64, confirm: bool) -> bool {
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
    fn confirming_split_steps_keeps_a_slow_trial_from_moving_a_knee() {
        // 1 trial in 8 slow, as in the real A/A point-read sweep (docs/multitest.md).
        let (runs, slow) = (20_000, 0.125);
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let rate = |confirm: bool, state: &mut u64| {
            (0..runs)
                .filter(|_| knee_fell(state, slow, confirm))
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

    /// A measured trial of `arm` at a sweep's `target`: the multitest driver's report of
    /// `tps` TPS, no retries.
    fn sweep_trial(index: usize, arm: Arm, repetition: u32, target: u64, tps: f64) -> TrialRecord {
        let mut t = crate::judge::tests::trial(index, arm, tps);
        t.repetition = repetition;
        t.target_tps = Some(target);
        t.report = None;
        let latency = fdb::multitest::Latencies {
            mean_ms: 1.0,
            p50_ms: 1.0,
            p90_ms: 2.0,
            p98_ms: 3.0,
            max_ms: 9.0,
        };
        t.multitest = Some(crate::results::trial::MultitestReport {
            target_tps: target as f64,
            testers: 1,
            actors_per_tester: 64,
            result: fdb::multitest::ReadWriteResult {
                tps,
                retries: 0.0,
                measured_s: 15.0,
                latency,
                read_mean_ms: 0.5,
                read_p50_ms: 0.5,
                grv_mean_ms: 0.2,
                grv_p50_ms: 0.2,
                commit_mean_ms: 0.0,
                commit_p50_ms: 0.0,
            },
        });
        t
    }

    /// A sweep of one pair per entry `(target, baseline TPS, experiment TPS)`, in that
    /// order, each pair a repetition of its own.
    fn pairs_run(pairs: &[(u64, f64, f64)]) -> Vec<TrialRecord> {
        let mut out = Vec::new();
        for (rep, &(target, b, e)) in pairs.iter().enumerate() {
            for (arm, tps) in [(Arm::Baseline, b), (Arm::Experiment, e)] {
                out.push(sweep_trial(out.len() + 1, arm, rep as u32 + 1, target, tps));
            }
        }
        out
    }

    #[test]
    fn a_lower_knee_is_a_regression_only_when_the_pairs_past_it_show_the_loss() {
        let ladder = [400, 600, 900, 1200, 2000];
        let judged = |pairs: &[(u64, f64, f64)]| {
            let engines = [Engine::Redwood];
            let criteria = crate::judge::tests::CRITERIA;
            judge(
                &pairs_run(pairs),
                &engines,
                &ladder,
                criteria,
                false,
                Reference::Arm,
            )
            .remove(0)
        };
        // Capacity 1000 against 800: the experiment misses 900 in 3 trials of 3, and
        // measures its capacity there and at 1200.
        let lost = [
            (400, 400.0, 399.0),
            (600, 600.0, 601.0),
            (900, 900.0, 800.0),
            (900, 899.0, 801.0),
            (900, 901.0, 799.0),
            (1200, 1001.0, 800.0),
        ];
        let j = judged(&lost);
        assert_eq!(j.verdict, Verdict::Regression, "{}", j.reason);
        assert!(
            j.reason.starts_with(
                "the knee fell from 900 TPS to 600 TPS, and the TPS show the loss: the 4 pairs \
                 at the steps above 600 TPS measured -13.44% [95% CI -20.50, -5.76], one-sided \
                 p 0.0063 of no loss (below 0.025), beyond the 2.00% tolerance ("
            ),
            "{}",
            j.reason
        );
        assert!(j.p_slower_adjusted.is_some_and(|p| p < 0.025), "{j:?}");
        // The same sweep on two engines: a Holm family of 2, each p doubled.
        let one = pairs_run(&lost);
        let mut two = one.clone();
        two.extend(one.iter().map(|t| TrialRecord {
            engine: Engine::Memory,
            index: t.index + one.len(),
            ..t.clone()
        }));
        let engines = [Engine::Redwood, Engine::Memory];
        let both = judge(
            &two,
            &engines,
            &ladder,
            crate::judge::tests::CRITERIA,
            false,
            Reference::Arm,
        );
        for k in &both {
            assert_eq!(k.family_size, 2);
            assert_eq!(k.p_slower_adjusted, j.p_slower_adjusted.map(|p| 2.0 * p));
            assert!(
                k.reason.contains("Holm-adjusted over 2 engines"),
                "{}",
                k.reason
            );
        }
        // Two trials of the experiment at half speed, the third and the next step as the
        // baseline's: the knee falls as far, but 2 slow trials of 4 pairs show no loss.
        let j = judged(&[
            (400, 400.0, 399.0),
            (600, 600.0, 601.0),
            (900, 900.0, 450.0),
            (900, 899.0, 451.0),
            (900, 901.0, 899.0),
            (1200, 1001.0, 999.0),
        ]);
        assert_eq!(j.verdict, Verdict::Inconclusive, "{}", j.reason);
        assert!(
            j.reason.starts_with(
                "the knee fell from 900 TPS to 600 TPS, but the TPS do not show a loss beyond \
                 the 2.00% tolerance"
            ),
            "{}",
            j.reason
        );
        assert!(j.reason.contains("more --trials per step"), "{}", j.reason);
        // A knee that did not fall is MEASURED, whatever the pairs past it show.
        let j = judged(&[
            (400, 400.0, 399.0),
            (600, 600.0, 601.0),
            (900, 900.0, 850.0),
            (1200, 1001.0, 850.0),
        ]);
        assert_eq!(j.verdict, Verdict::Measured, "{}", j.reason);
    }

    /// The simulated host of a sweep over `ladder` with `pairs` pairs per step: a trial's
    /// capacity is its arm's, TPS, times exp(level), the level an AR(1) process over the
    /// run order (coefficient `phi`, stationary sd `cv`; `phi` 0 is independent trials),
    /// times 0.45 in a share `slow` of the trials. A trial measures the lower of its
    /// capacity and its target, a target met within 0.3% (as ReadWrite meets one).
    struct Host {
        ladder: Vec<u64>,
        pairs: u32,
        cv: f64,
        phi: f64,
        slow: f64,
    }

    impl Host {
        /// `cv` and `phi` over a ladder of 7 steps 1.3x apart from 1000 TPS.
        fn new(pairs: u32, cv: f64, phi: f64) -> Host {
            let ladder = (0..7)
                .map(|i| (1000.0 * 1.3f64.powi(i)).round() as u64)
                .collect();
            Host {
                ladder,
                pairs,
                cv,
                phi,
                slow: 0.0,
            }
        }

        /// One sweep of arms of `capacity` (baseline, experiment) TPS, run as
        /// `cmd::pipeline::run_sweep` runs one: each step's pairs in the plan's order
        /// (`plan::arm_order` of the step), the [`confirmations`] of a split step (rounds of
        /// the step's last repetition), a stop after the first step no arm followed.
        fn sweep(&self, rng: &mut StdRng, capacity: [f64; 2], seed: u64) -> Vec<TrialRecord> {
            let innovation = Normal::new(0.0, self.cv * (1.0 - self.phi * self.phi).sqrt());
            let met = Normal::new(0.0, 0.003).expect("an sd");
            let mut level = Normal::new(0.0, self.cv).expect("an sd").sample(rng);
            let mut trials = Vec::new();
            let mut run = |trials: &mut Vec<_>, arm, repetition, target: u64, rng: &mut StdRng| {
                // No draw when no trial is slow: the other tests' streams stay as documented.
                let slow = if self.slow > 0.0 && rng.random_bool(self.slow) {
                    0.45
                } else {
                    1.0
                };
                let cap = slow * capacity[usize::from(arm == Arm::Experiment)] * f64::exp(level);
                let tps = cap.min(target as f64 * f64::exp(met.sample(rng)));
                trials.push(sweep_trial(trials.len() + 1, arm, repetition, target, tps));
                level = self.phi * level + innovation.expect("an sd").sample(rng);
            };
            let mut next = self.ladder.len() as u32 * self.pairs;
            for (i, &target) in self.ladder.iter().enumerate() {
                let order = crate::plan::arm_order(self.pairs, seed.wrapping_add(i as u64));
                for &(rep, arm) in &order {
                    run(&mut trials, arm, i as u32 * self.pairs + rep, target, rng);
                }
                let steps_so_far = steps(&trials, Engine::Redwood);
                let extra = confirmations(&steps_so_far, target, Reference::Arm);
                let last = order.iter().filter(|(rep, _)| *rep == self.pairs);
                for _ in 0..extra {
                    next += 1;
                    for &(_, arm) in last.clone() {
                        run(&mut trials, arm, next, target, rng);
                    }
                }
                let steps = steps(&trials, Engine::Redwood);
                if !steps.iter().any(|s| s.target_tps == target && s.followed) {
                    break;
                }
            }
            trials
        }

        /// The judgements of `runs` sweeps whose experiment's capacity is the baseline's
        /// times `effect`, the baseline's drawn by `capacity` from the ladder.
        fn judgements(
            &self,
            runs: usize,
            effect: f64,
            capacity: impl Fn(&mut StdRng, &[u64]) -> f64,
            seed: u64,
        ) -> Vec<Judgement> {
            let mut rng = StdRng::seed_from_u64(seed);
            let criteria = Criteria {
                trials: self.pairs,
                slo_tps: None,
                ..crate::judge::tests::CRITERIA
            };
            (0..runs)
                .map(|run| {
                    let c = capacity(&mut rng, &self.ladder);
                    let trials = self.sweep(&mut rng, [c, c * effect], seed ^ run as u64);
                    let engines = [Engine::Redwood];
                    judge(
                        &trials,
                        &engines,
                        &self.ladder,
                        criteria,
                        false,
                        Reference::Arm,
                    )
                    .remove(0)
                })
                .collect()
        }
    }

    /// A capacity anywhere on the ladder: log-uniform from its first step to its top.
    fn anywhere(rng: &mut StdRng, ladder: &[u64]) -> f64 {
        let span = (ladder[ladder.len() - 1] as f64 / ladder[0] as f64).ln();
        ladder[0] as f64 * f64::exp(rng.random::<f64>() * span)
    }

    /// A capacity at 90% of a step below the top, the step drawn at random: a trial follows
    /// that step with probability 1/2, the worst case of the majority rule.
    fn at_a_threshold(rng: &mut StdRng, ladder: &[u64]) -> f64 {
        FOLLOWED_SHARE * ladder[rng.random_range(1..ladder.len() - 1)] as f64
    }

    /// The shares of `judgements` that are REGRESSION, and whose experiment's knee is
    /// below the baseline's (what the knee alone would call a REGRESSION).
    fn shares(judgements: &[Judgement]) -> (f64, f64) {
        let fell = |j: &&Judgement| {
            j.knees
                .is_some_and(|k| k.experiment_tps.unwrap_or(0) < k.baseline_tps.unwrap_or(0))
        };
        let n = judgements.len() as f64;
        let regression = judgements
            .iter()
            .filter(|j| j.verdict == Verdict::Regression)
            .count();
        (
            regression as f64 / n,
            judgements.iter().filter(fell).count() as f64 / n,
        )
    }

    /// A/A sweeps (7 steps 1.3x apart, capacity noise per trial log-normal with sd 5% or
    /// 10%, independent or AR(1) phi 0.77 over the run order, 1 or 3 pairs per step, the
    /// capacity log-uniform over the ladder or at 90% of a step), 4000 sweeps each: false
    /// REGRESSION at most 2.5% + 3 binomial sds (0.25% at 4000 runs), 3.24%. Simulated:
    /// 0.13-0.67% anywhere on the ladder, 0.25-1.77% at a threshold; the knee alone
    /// (REGRESSION whenever it fell, as before the test) gave 1.77-13.7% and 3.4-26.2%,
    /// over the limit in 14 of the 16 models. A fall the test does not confirm is
    /// INCONCLUSIVE.
    #[test]
    fn a_knee_that_falls_by_chance_is_a_false_regression_at_most_at_its_level() {
        let runs = 4000;
        let limit = 0.025 + 3.0 * (0.025f64 * 0.975 / runs as f64).sqrt();
        let mut over = Vec::new();
        let mut seed = 0;
        for (cv, phi, pairs) in [0.05, 0.10]
            .into_iter()
            .flat_map(|cv| [0.0, 0.77].map(|phi| (cv, phi)))
            .flat_map(|(cv, phi)| [1, 3].map(|pairs| (cv, phi, pairs)))
        {
            let host = Host::new(pairs, cv, phi);
            for (place, capacity) in [
                ("anywhere", anywhere as fn(&mut StdRng, &[u64]) -> f64),
                ("at 90% of a step", at_a_threshold),
            ] {
                seed += 1;
                let (regression, fell) = shares(&host.judgements(runs, 1.0, capacity, seed));
                let line = format!(
                    "cv {cv}, phi {phi}, {pairs} pair(s), capacity {place}: false REGRESSION \
                     {regression:.4} (knee fell {fell:.4})"
                );
                eprintln!("{line}");
                if regression > limit {
                    over.push(line);
                }
            }
        }
        assert!(over.is_empty(), "above {limit:.4}:\n{}", over.join("\n"));
    }

    /// The experiment's capacity 30% below the baseline's on a ladder 1.3x apart, the
    /// baseline's log-uniform over it, the noise models of the A/A test, 2000 sweeps each
    /// (binomial sd at most 0.9%): REGRESSION in 98.3-99.9% of the sweeps at 5% noise per
    /// trial and 82.0-95.9% at 10% (the knee alone: 98.6-99.95% and 88.9-96.9%); asserted
    /// 3 sds below the lowest, 97% and 79%.
    #[test]
    fn losing_a_step_is_a_regression_at_the_stated_power() {
        let runs = 2000;
        let mut seed = 100;
        for (cv, phi, pairs) in [0.05, 0.10]
            .into_iter()
            .flat_map(|cv| [0.0, 0.77].map(|phi| (cv, phi)))
            .flat_map(|(cv, phi)| [1, 3].map(|pairs| (cv, phi, pairs)))
        {
            seed += 1;
            let host = Host::new(pairs, cv, phi);
            let (power, fell) = shares(&host.judgements(runs, 0.7, anywhere, seed));
            eprintln!("cv {cv}, phi {phi}, {pairs} pair(s): power {power:.4}, knee fell {fell:.4}");
            let floor = if cv <= 0.05 { 0.97 } else { 0.79 };
            assert!(
                power >= floor,
                "cv {cv}, phi {phi}, {pairs} pair(s): power {power}"
            );
        }
    }

    /// 1 trial in 8 at 45% of its capacity, as on the FDB 8.0 VM (docs/multitest.md), on
    /// the host's model (5% noise per trial, AR(1) phi 0.77), capacity anywhere on a
    /// ladder 1.3x apart, 1 or 3 pairs per step, 4000 sweeps each: a slow trial widens
    /// the interval rather than shifting it, so false REGRESSION stays below its level
    /// (simulated 0.05% and 0.22%; the knee alone fell in 4.2% and 8.6%), and the price is
    /// power: a capacity 30% lower is a REGRESSION in 38.3% and 49.7% of the sweeps (the
    /// knee alone fell in 83.7% and 95.1%). Limits: 3.24% (2.5% + 3 binomial sds) and 36%
    /// (3 sds below 38.3%).
    #[test]
    fn slow_trials_cost_power_not_false_regressions() {
        let runs = 4000;
        let limit = 0.025 + 3.0 * (0.025f64 * 0.975 / runs as f64).sqrt();
        for (pairs, seed) in [(1, 201), (3, 202)] {
            let host = Host {
                slow: 0.125,
                ..Host::new(pairs, 0.05, 0.77)
            };
            let (regression, fell) = shares(&host.judgements(runs, 1.0, anywhere, seed));
            let (power, lost) = shares(&host.judgements(runs, 0.7, anywhere, seed + 10));
            eprintln!(
                "{pairs} pair(s): false REGRESSION {regression:.4} (knee fell {fell:.4}), power \
                 {power:.4} (knee fell {lost:.4})"
            );
            assert!(regression <= limit, "{pairs} pair(s): {regression}");
            assert!(power >= 0.36, "{pairs} pair(s): power {power}");
        }
    }
}
