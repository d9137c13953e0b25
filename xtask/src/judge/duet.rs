//! Judge stage: the finer pairing of duet pairs. The two trials of a duet pair measure
//! over the same seconds, so their per-second series pair second by second: how much
//! the arms moved together, and how much of a pair's ratio is the window's own
//! fluctuation rather than what differs between pairs (each pair's fresh clusters and
//! CPUs). A description of the noise beside the verdict, never a verdict. Pure.
//!
//! The model is `judge::sizing`'s, on the per-second log ratio `r_t = ln(B_t / A_t)` of
//! a pair's shared window: its mean over the window is (to first order) the pair's log
//! ratio, so the squared standard error of that mean, from non-overlapping batch means of
//! [`BATCH_S`] seconds, is the part of the pair's variance the window explains.

use schemars::JsonSchema;
use serde::Serialize;
use statrs::statistics::Statistics;

use super::{samples::Sample, sizing::BATCH_S, stats};
use crate::config::Metric;

/// Runs whose measured runs started more than this many seconds apart did not share
/// their window (the duet's meeting starts both within milliseconds).
pub const MAX_SKEW_S: f64 = 1.0;

/// Fewest whole [`BATCH_S`]-second batches a pair's shared window needs to count: one
/// pair's two give its within-window variance one degree of freedom, and the pairs pool
/// them (mako's 40 s run with a 10 s warmup reports 29 or 30 seconds of window).
pub const MIN_BATCHES: usize = 2;

/// A metric's duet pairs, second by second over their shared windows.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SecondPairing {
    /// Pairs whose runs started together (within [`MAX_SKEW_S`]) with at least
    /// [`MIN_BATCHES`] batches of shared seconds.
    pub pairs: usize,
    /// Their mean shared window, seconds.
    pub window_s: f64,
    /// The mean over pairs of the Pearson correlation of the two arms' per-second values:
    /// near 1 when the host's speed moved both arms together, near 0 when each arm's
    /// seconds varied on their own, negative when the arms took speed from each other.
    /// Absent when no pair had both arms' seconds vary (a correlation is not defined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm_correlation: Option<f64>,
    /// sd of the pairs' log ratios, percent (100 x the sd of ln(experiment / baseline)):
    /// what `within_pct` and `between_pct` split.
    pub pair_sd_pct: f64,
    /// sd of a pair's log ratio that the fluctuation within its window accounts for,
    /// percent (100 x the log ratio's sd, about): the pooled standard error of the mean
    /// per-second log ratio, at most `pair_sd_pct`.
    pub within_pct: f64,
    /// sd of the pairs' log ratios beyond that, percent: what differs from pair to pair
    /// (the squares add: `within_pct`^2 + `between_pct`^2 is the pairs' variance). 0 when
    /// the pairs vary no more than their windows explain.
    pub between_pct: f64,
    /// Whether the halves of the CPUs differ; absent with fewer than 2 such pairs of each
    /// placement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

/// The pairs' ratio (experiment / baseline) with the baseline on the second half of the
/// CPUs (even repetitions; the first half is the lower-numbered CPUs) against with it on
/// the first (odd repetitions): about twice the halves' own difference of speed, which
/// the swap cancels from the mean when there are as many pairs of each; 0 when the halves
/// are alike (Welch's test on the log ratios). For TPS a positive value means a slower
/// second half; for a metric that falls when it improves, a faster one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Placement {
    /// Estimated difference, percent.
    pub pct: f64,
    /// Lower bound of its 95% interval, percent.
    pub ci95_low_pct: f64,
    /// Upper bound of its 95% interval, percent.
    pub ci95_high_pct: f64,
    /// Two-sided p of "the halves are alike".
    pub p_value: f64,
    /// The metric on the second half of the CPUs against the first, percent: the halves'
    /// own difference, from `pct` (the square root of its ratio, inverted). What TPS's
    /// note says.
    pub second_half_pct: f64,
    /// Lower bound of its 95% interval, percent (from `ci95_high_pct`).
    pub second_half_ci95_low_pct: f64,
    /// Upper bound of its 95% interval, percent (from `ci95_low_pct`).
    pub second_half_ci95_high_pct: f64,
}

/// The second-by-second pairing of `metric` over `pairs` (baseline, experiment), from
/// the pairs whose runs started together (both trials say so, [`Sample::run_with_partner`]);
/// `None` with fewer than 2 such pairs or no
/// per-second series of the metric ([`Sample::per_second`]).
pub fn pairing(pairs: &[(&Sample, &Sample)], metric: Metric) -> Option<SecondPairing> {
    let per_pair: Vec<(f64, f64, Option<f64>, usize, u32)> = pairs
        .iter()
        .filter_map(|(a, b)| {
            let (ya, yb) = aligned(a, b, metric)?;
            let r: Vec<f64> = ya.iter().zip(&yb).map(|(x, y)| (y / x).ln()).collect();
            let means: Vec<f64> = r.chunks_exact(BATCH_S).map(|c| c.iter().mean()).collect();
            if means.len() < MIN_BATCHES {
                return None;
            }
            // The variance of a batch's mean, scaled to the whole window's seconds (the
            // mean of a stationary series over W seconds, W longer than its correlation
            // time): what the window's fluctuation adds to the pair's log ratio.
            let within = means.iter().variance() * BATCH_S as f64 / r.len() as f64;
            let pair = (b.value(metric)? / a.value(metric)?).ln();
            Some((pair, within, correlation(&ya, &yb), r.len(), a.repetition))
        })
        .collect();
    if per_pair.len() < 2 {
        return None;
    }
    let pair_var = per_pair.iter().map(|p| p.0).variance();
    // A few pairs can put the batch-means estimate above what the pairs vary: the pairs'
    // variance is the measured total, so the within part is capped at it (as
    // `sizing::NoiseSplit` does).
    let within = per_pair.iter().map(|p| p.1).mean().min(pair_var);
    let correlations: Vec<f64> = per_pair.iter().filter_map(|p| p.2).collect();
    let ratios = |first: bool| -> Vec<f64> {
        per_pair
            .iter()
            .filter(|p| (p.4 % 2 == 1) == first)
            .map(|p| p.0.exp())
            .collect()
    };
    // Pairs with the baseline on the second half have ratio 1 / v, the others v, for the
    // metric's value v on the second half against the first: their difference is 1 / v^2.
    let second_half = |pct: f64| 100.0 * ((1.0 + pct / 100.0).powf(-0.5) - 1.0);
    let placement = stats::welch(&ratios(true), &ratios(false)).map(|c| Placement {
        pct: c.delta_pct,
        ci95_low_pct: c.ci_low_pct,
        ci95_high_pct: c.ci_high_pct,
        p_value: c.p_value,
        second_half_pct: second_half(c.delta_pct),
        second_half_ci95_low_pct: second_half(c.ci_high_pct),
        second_half_ci95_high_pct: second_half(c.ci_low_pct),
    });
    Some(SecondPairing {
        pairs: per_pair.len(),
        window_s: per_pair.iter().map(|p| p.3 as f64).mean(),
        arm_correlation: (!correlations.is_empty()).then(|| correlations.iter().mean()),
        pair_sd_pct: 100.0 * pair_var.sqrt(),
        within_pct: 100.0 * within.sqrt(),
        between_pct: 100.0 * (pair_var - within).max(0.0).sqrt(),
        placement,
    })
}

/// The two trials' per-second series of `metric` over the seconds both measured, aligned
/// on their runs' start times, with every second positive in both; `None` unless both
/// ran with their partner and their starts are known and within [`MAX_SKEW_S`].
fn aligned(a: &Sample, b: &Sample, metric: Metric) -> Option<(Vec<f64>, Vec<f64>)> {
    if !(a.run_with_partner && b.run_with_partner) {
        return None;
    }
    let skew = b.run_started_unix_s? - a.run_started_unix_s?;
    if skew.abs() > MAX_SKEW_S {
        return None;
    }
    let (ya, yb) = (a.per_second(metric)?, b.per_second(metric)?);
    // b's second i is a's second i + shift.
    let shift = skew.round() as isize;
    let (ya, yb) = if shift >= 0 {
        (ya.get(shift as usize..)?, &yb[..])
    } else {
        (&ya[..], yb.get(shift.unsigned_abs()..)?)
    };
    Some(
        ya.iter()
            .zip(yb)
            .filter(|(x, y)| **x > 0.0 && **y > 0.0)
            .map(|(x, y)| (*x, *y))
            .unzip(),
    )
}

/// Pearson correlation of two series of equal length; `None` when either is constant.
fn correlation(x: &[f64], y: &[f64]) -> Option<f64> {
    let (sx, sy) = (x.iter().std_dev(), y.iter().std_dev());
    (sx > 0.0 && sy > 0.0).then(|| x.iter().covariance(y.iter()) / (sx * sy))
}

/// The note on an engine's TPS for its duet pairs: how the arms moved together, how
/// their pairs' noise splits, and (with [`Placement`]) how fast the second half of the
/// CPUs ran against the first.
pub fn note(p: &SecondPairing) -> String {
    let placement = p.placement.map_or(String::new(), |c| {
        format!(
            "; TPS on the second half of the CPUs {:+.1}% [{:+.1}, {:+.1}] (p {:.3}) against \
             the first, a difference the swap of halves cancels from the mean with as many \
             pairs of each",
            c.second_half_pct, c.second_half_ci95_low_pct, c.second_half_ci95_high_pct, c.p_value
        )
    });
    let together = p.arm_correlation.map_or(
        "did not vary, so no correlation is defined".to_string(),
        |r| format!("correlated {r:.2}"),
    );
    format!(
        "duet pairs second by second ({} pairs, {:.0} s shared each): the arms' per-second \
         TPS {together}; of the pairs' TPS log ratio sd of {:.1}%, the windows' own \
         fluctuation makes {:.1}% and what differs from pair to pair (clusters, CPUs) {:.1}% \
         (they add as squares){placement}",
        p.pairs, p.window_s, p.pair_sd_pct, p.within_pct, p.between_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{config::Arm, judge::tests::trial as record};

    /// A trial whose run started at `start` (Unix seconds), with per-second TPS `tps` and
    /// no warmup.
    fn trial(arm: Arm, start: Option<f64>, tps: Vec<f64>) -> Sample {
        let mean = tps.iter().sum::<f64>() / tps.len() as f64;
        let mut s = Sample::of_trial(&record(1, arm, mean));
        s.run_started_unix_s = start;
        s.run_with_partner = true;
        s.warmup_s = 0.0;
        s.per_second_tps = tps;
        s
    }

    /// A deterministic wobble in [-1, 1] from `i` and `seed`.
    fn wobble(i: usize, seed: u64) -> f64 {
        let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed;
        x ^= x >> 29;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 32;
        (x % 2001) as f64 / 1000.0 - 1.0
    }

    /// `pairs` pairs of 60 s, a host speed shared by both arms per second (`shared`, the
    /// amplitude), each arm's own per-second noise (`own`) and a level per pair
    /// (`between`, the experiment's alone).
    fn duet(pairs: usize, shared: f64, own: f64, between: f64) -> Vec<(Sample, Sample)> {
        placed(pairs, shared, own, between, 0.0)
    }

    /// [`duet`] with the second half of the CPUs `slower` (a fraction) than the first.
    fn placed(
        pairs: usize,
        shared: f64,
        own: f64,
        between: f64,
        slower: f64,
    ) -> Vec<(Sample, Sample)> {
        (0..pairs)
            .map(|k| {
                let host: Vec<f64> = (0..60)
                    .map(|i| 1.0 + shared * wobble(i, k as u64))
                    .collect();
                let arm = |seed: u64, level: f64| -> Vec<f64> {
                    host.iter()
                        .enumerate()
                        .map(|(i, h)| 1000.0 * level * h * (1.0 + own * wobble(i, seed)))
                        .collect()
                };
                let level = 1.0 + between * wobble(k, 99);
                let start = 1000.0 + 100.0 * k as f64;
                // Pair k + 1: the baseline on the first half when odd.
                let (on_a, on_b) = if k % 2 == 0 {
                    (1.0, 1.0 - slower)
                } else {
                    (1.0 - slower, 1.0)
                };
                let mut pair = (
                    trial(Arm::Baseline, Some(start), arm(1000 + k as u64, on_a)),
                    trial(
                        Arm::Experiment,
                        Some(start + 0.2),
                        arm(2000 + k as u64, level * on_b),
                    ),
                );
                (pair.0.repetition, pair.1.repetition) = (k as u32 + 1, k as u32 + 1);
                pair
            })
            .collect()
    }

    fn of(pairs: &[(Sample, Sample)]) -> Option<SecondPairing> {
        let refs: Vec<(&Sample, &Sample)> = pairs.iter().map(|(a, b)| (a, b)).collect();
        pairing(&refs, Metric::Tps)
    }

    #[test]
    fn arms_that_share_the_hosts_seconds_correlate_and_their_ratio_keeps_only_their_own_noise() {
        let shared = of(&duet(6, 0.10, 0.01, 0.0)).unwrap();
        let alone = of(&duet(6, 0.0, 0.01, 0.0)).unwrap();
        assert_eq!(shared.pairs, 6);
        assert_eq!(shared.window_s, 60.0);
        assert!(shared.arm_correlation.unwrap() > 0.9, "{shared:?}");
        assert!(alone.arm_correlation.unwrap().abs() < 0.3, "{alone:?}");
        // The host's 10% swings cancel in the ratio: only the arms' own 1% is left.
        assert!(shared.within_pct < 0.5, "{shared:?}");
        assert!(
            (shared.within_pct - alone.within_pct).abs() < 0.05,
            "{shared:?} {alone:?}"
        );
    }

    #[test]
    fn a_level_that_differs_between_pairs_is_between_not_within() {
        let p = of(&duet(8, 0.05, 0.01, 0.05)).unwrap();
        let total = (p.within_pct.powi(2) + p.between_pct.powi(2)).sqrt();
        assert!((total - p.pair_sd_pct).abs() < 1e-9, "{p:?}");
        assert!(p.between_pct > 2.0, "{p:?}");
        assert!(p.between_pct > 5.0 * p.within_pct, "{p:?}");
        let flat = of(&duet(8, 0.05, 0.01, 0.0)).unwrap();
        assert!(flat.between_pct < flat.within_pct, "{flat:?}");
        // Two pairs estimate the pairs' sd poorly; the window's part never exceeds it.
        let two = of(&duet(2, 0.05, 0.05, 0.0)).unwrap();
        assert!(two.within_pct <= two.pair_sd_pct + 1e-9, "{two:?}");
    }

    #[test]
    fn halves_of_unequal_speed_show_as_placement_and_alike_ones_do_not() {
        let slow = of(&placed(8, 0.05, 0.01, 0.0, 0.03)).unwrap();
        let c = slow.placement.unwrap();
        // Baseline on the slower second half: the ratio is 1 / 0.97 there and 0.97 on
        // the first; they differ by 1 / 0.97^2 - 1 = +6.3%.
        let expected = 100.0 * (1.0 / 0.97f64.powi(2) - 1.0);
        assert!((c.pct - expected).abs() < 0.5 && c.p_value < 0.001, "{c:?}");
        let said = note(&slow);
        assert!(said.contains("second half of the CPUs -3.0% ["), "{said}");
        assert!((c.second_half_pct + 3.0).abs() < 0.2, "{c:?}");
        assert!(c.second_half_ci95_low_pct < c.second_half_pct, "{c:?}");
        assert!(c.second_half_pct < c.second_half_ci95_high_pct, "{c:?}");
        let alike = of(&placed(8, 0.05, 0.01, 0.0, 0.0)).unwrap();
        let c = alike.placement.unwrap();
        assert!(c.pct.abs() < 0.5, "{c:?}");
        assert!(c.ci95_low_pct < 0.0 && c.ci95_high_pct > 0.0, "{c:?}");
        let one_even = of(&placed(3, 0.05, 0.01, 0.0, 0.03)).unwrap();
        assert_eq!(one_even.placement, None);
    }

    #[test]
    fn arms_whose_seconds_never_vary_have_no_correlation() {
        let p = of(&duet(3, 0.0, 0.0, 0.02)).unwrap();
        assert_eq!(p.arm_correlation, None);
        let said = note(&p);
        assert!(
            said.contains("did not vary, so no correlation is defined"),
            "{said}"
        );
    }

    #[test]
    fn runs_that_did_not_start_together_or_lack_a_start_are_not_paired_by_second() {
        let mut apart = duet(3, 0.1, 0.01, 0.0);
        apart[0].1.run_started_unix_s = Some(apart[0].0.run_started_unix_s.unwrap() + 5.0);
        assert_eq!(of(&apart).unwrap().pairs, 2);
        apart[1].0.run_started_unix_s = None;
        assert_eq!(of(&apart), None, "one pair left is too few");
        // Runs back to back within a second (a fast host) that did not meet.
        let mut alone = duet(2, 0.1, 0.01, 0.0);
        alone[0].1.run_with_partner = false;
        assert_eq!(of(&alone), None);
        let mut short = duet(2, 0.1, 0.01, 0.0);
        short[0].0.per_second_tps.truncate(19);
        assert_eq!(of(&short), None, "fewer than 2 batches");
    }

    #[test]
    fn a_start_a_second_apart_shifts_the_series_onto_the_same_seconds() {
        // The experiment started 1 s after the baseline: its second i is the baseline's
        // i + 1. With the host's swings alone, aligned seconds cancel exactly.
        let host: Vec<f64> = (0..61)
            .map(|i| 1000.0 * (1.0 + 0.2 * wobble(i, 7)))
            .collect();
        let pairs: Vec<(Sample, Sample)> = (0..3)
            .map(|k| {
                let start = 100.0 * k as f64;
                (
                    trial(Arm::Baseline, Some(start), host[..60].to_vec()),
                    trial(Arm::Experiment, Some(start + 1.0), host[1..].to_vec()),
                )
            })
            .collect();
        let p = of(&pairs).unwrap();
        assert_eq!(p.window_s, 59.0);
        assert!(
            p.within_pct < 1e-9 && (p.arm_correlation.unwrap() - 1.0).abs() < 1e-9,
            "{p:?}"
        );
    }
}
