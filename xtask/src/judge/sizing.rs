//! Judge stage, calibration: trials sized for the host. From an A/A run's per-second
//! series, where each metric's noise comes from (within a trial, because a window is a
//! finite stretch of a fluctuating rate; between trials, because every fresh cluster and
//! the host's speed of the moment differ), and the warmup, window and pairs that resolve
//! the smallest change in a time budget. Pure.
//!
//! The model, per metric and in log units (relative changes): a trial's value is the
//! trial's level plus the mean of its per-second fluctuation over the window, so
//! `var(trial) = s_b^2 + s_w^2(W)` with `s_w^2(W) = s_w^2(W0) W0 / W` (the mean of a
//! stationary series over W seconds, W longer than its correlation time), and a pair's log
//! ratio has variance `2 var(trial)`. `s_w^2(W0)` comes from non-overlapping batch means of
//! [`BATCH_S`] seconds, `s_b^2` is what the pairs' sd leaves beyond it.

use serde::Serialize;
use statrs::statistics::Statistics;

use super::{samples::Sample, stats};
use crate::config::Metric;

/// Batch length of the batch-means estimate, seconds. Per-second TPS of FDB 8.0 on a 2-core
/// VM had lag-1 autocorrelation 0.2-0.76 (a correlation time of at most ~7 s), so 10 s
/// batches are close to independent.
pub const BATCH_S: usize = 10;

/// Most pairs the sizing recommends (as `calibrate`'s pairs-needed bound).
const MAX_PAIRS: usize = 200;

/// Windows the sizing chooses from, seconds.
pub const WINDOWS_S: [u64; 10] = [30, 45, 60, 90, 120, 180, 240, 300, 450, 600];

/// The shortest warmup the sizing recommends, seconds: right after `configure new` the
/// cluster is still recruiting and data distribution is starting.
pub const MIN_WARMUP_S: u64 = 10;

/// Seconds that `pairs` A/B pairs of the shortest sized trials take at least (warmup and
/// window of both arms, without the per-trial overhead): the smallest budget sizing can
/// fill.
pub fn shortest_pairs_s(pairs: u64) -> u64 {
    pairs * 2 * (MIN_WARMUP_S + WINDOWS_S[0])
}

/// TPS is settled when every later batch is within this many percent of the final level
/// (or within twice the batches' own spread there, if that is wider).
const SETTLED_PCT: f64 = 2.5;

/// Where one metric's noise comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseSplit {
    /// Trials whose per-second series had at least 3 batches.
    pub trials: usize,
    /// Their mean window, seconds.
    pub window_s: f64,
    /// Relative sd of one trial's value from the fluctuation within its window, percent;
    /// at most the pairs' sd / sqrt 2 (one trial's share of a pair's noise).
    pub within_pct: f64,
    /// Relative sd between trials beyond that, percent: each fresh cluster's and the
    /// host's level. 0 when the pairs vary no more than the within part explains.
    pub between_pct: f64,
}

impl NoiseSplit {
    /// The split of a metric whose pairs' log ratios have sd `pair_sd`, from the trials'
    /// per-second series ([`Sample::per_second`]); `None` without such series.
    pub fn of(metric: Metric, pair_sd: f64, trials: &[&Sample]) -> Option<NoiseSplit> {
        let per_trial: Vec<(f64, usize)> = trials
            .iter()
            .filter_map(|t| {
                let y = t.per_second(metric)?;
                Some((within_rel_var(&y)?, y.len()))
            })
            .collect();
        if per_trial.is_empty() {
            return None;
        }
        let window_s = per_trial.iter().map(|(_, n)| *n as f64).mean();
        let trial = pair_sd * pair_sd / 2.0;
        // A few trials can put the batch-means estimate above what the pairs vary: the
        // pairs' sd is the measured total, so the within part is capped at it (and the
        // sizing's pair sd at the calibrated window is then the measured one).
        let within = per_trial.iter().map(|(v, _)| *v).mean().min(trial);
        Some(NoiseSplit {
            trials: per_trial.len(),
            window_s,
            within_pct: 100.0 * within.sqrt(),
            between_pct: 100.0 * (trial - within).max(0.0).sqrt(),
        })
    }

    /// sd of a pair's log ratio with a window of `window_s` seconds.
    fn pair_sd(&self, window_s: f64) -> f64 {
        let (w, b) = (self.within_pct / 100.0, self.between_pct / 100.0);
        (2.0 * (b * b + w * w * self.window_s / window_s)).sqrt()
    }
}

/// Squared relative standard error of a series' mean, from its [`BATCH_S`]-second batch
/// means; `None` with fewer than 3 batches or a mean that is not positive.
fn within_rel_var(y: &[f64]) -> Option<f64> {
    let means: Vec<f64> = y.chunks_exact(BATCH_S).map(|c| c.iter().mean()).collect();
    let m = means.iter().mean();
    (means.len() >= 3 && m > 0.0).then(|| means.iter().variance() / means.len() as f64 / (m * m))
}

/// What a trial costs on this host, and the time a gate run may take.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialCost {
    /// Seconds of a trial besides mako's run (cluster start, configure, mako build,
    /// teardown and every gap between), the mean over the calibration's trials.
    pub overhead_s: f64,
    /// The calibration's warmup and window, seconds.
    pub warmup_s: u64,
    pub window_s: u64,
    /// The time a gate run may take, seconds (`--budget`).
    pub budget_s: f64,
    /// Trials that run at once: 2 in a duet, whose pair takes one trial's time; else 1.
    pub trials_at_once: u32,
}

impl TrialCost {
    /// Pairs (two trials each, one after the other or at once) that fit the budget with
    /// this warmup and window.
    fn pairs(&self, warmup_s: u64, window_s: u64) -> usize {
        let trial = self.overhead_s + (warmup_s + window_s) as f64;
        let pair = trial * 2.0 / f64::from(self.trials_at_once.max(1));
        // Bounded: a budget of years must not make the sizing evaluate millions of pairs.
        ((self.budget_s / pair).floor() as usize).min(MAX_PAIRS)
    }
}

/// Trials sized for this host: the warmup, window and pairs with the smallest MDE in the
/// budget, for the metric that resolves the smallest change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizing {
    /// The metric it is sized for.
    pub metric: Metric,
    /// Recommended warmup, seconds.
    pub warmup_seconds: u64,
    /// How the warmup was chosen.
    pub warmup_reason: String,
    /// Recommended measurement window, seconds (mako `--seconds` = warmup + window).
    pub window_seconds: u64,
    /// Pairs that fit the budget (`--trials`).
    pub pairs: usize,
    /// The MDE at those pairs (REGRESSION with 80% power at the level of the calibration's
    /// gated comparisons, a fixed `--trials`), planned on the 80% upper bound of the noise,
    /// percent.
    pub mde_pct: f64,
    /// The same budget with the calibration's own warmup and window: pairs and MDE.
    pub current_pairs: usize,
    pub current_mde_pct: Option<f64>,
}

/// A metric's candidate for sizing: its split and the factor from its pairs' sd estimate
/// to the estimate's 80% upper bound.
pub struct Candidate<'a> {
    pub metric: Metric,
    pub split: &'a NoiseSplit,
    pub upper_factor: f64,
}

impl Sizing {
    /// The best sizing over `candidates` for `cost`, with the warmup from the trials' TPS
    /// ([`settled_after`]) and the MDE for REGRESSION by `rule`; `None` when no window fits
    /// two pairs in the budget.
    pub fn choose(
        candidates: &[Candidate],
        cost: &TrialCost,
        trials: &[&Sample],
        rule: stats::Rule,
    ) -> Option<Sizing> {
        let (warmup, warmup_reason) = match settled_after(trials) {
            Some(s) => {
                let w = s.max(MIN_WARMUP_S);
                (w, format!("mako's TPS, pooled over {} trials, stayed within its final level's noise from {s} s on (at least {MIN_WARMUP_S} s)", trials.len()))
            }
            None => (
                cost.warmup_s,
                format!(
                    "kept at {} s: TPS did not settle within the calibration's run, so the data \
                     cannot say; calibrate with a longer --seconds to find out",
                    cost.warmup_s
                ),
            ),
        };
        let mde = |c: &Candidate, window: u64, pairs: usize| {
            (pairs >= 2).then(|| {
                let sd = c.split.pair_sd(window as f64) * c.upper_factor;
                -100.0 * (-stats::mde_log(sd, pairs, rule)).exp_m1()
            })
        };
        let best = candidates
            .iter()
            .flat_map(|c| {
                WINDOWS_S.iter().filter_map(move |&w| {
                    let pairs = cost.pairs(warmup, w);
                    Some((c, w, pairs, mde(c, w, pairs)?))
                })
            })
            .min_by(|x, y| x.3.total_cmp(&y.3))?;
        let (c, window, pairs, mde_pct) = best;
        let current_pairs = cost.pairs(cost.warmup_s, cost.window_s);
        Some(Sizing {
            metric: c.metric,
            warmup_seconds: warmup,
            warmup_reason,
            window_seconds: window,
            pairs,
            mde_pct,
            current_pairs,
            current_mde_pct: mde(c, cost.window_s, current_pairs),
        })
    }
}

/// The shortest multiple of [`BATCH_S`] seconds after which mako's TPS, pooled over the
/// trials (each divided by the mean of the last half of its run), stays in every batch
/// within [`SETTLED_PCT`] of 1, or within two standard errors of the pooled batch if that
/// is wider (per-second TPS varies 10-20% here, so a few trials cannot pin a batch to
/// 2.5%); `None` without per-second samples, or when that point leaves fewer than 3
/// batches.
pub fn settled_after(trials: &[&Sample]) -> Option<u64> {
    // Each trial's batch means, relative to its own final level.
    let curves: Vec<Vec<f64>> = trials
        .iter()
        .filter_map(|t| {
            let y = &t.per_second_tps;
            let tail = y.get(y.len() / 2..)?;
            let level = tail.iter().mean();
            (tail.len() >= BATCH_S && level > 0.0).then(|| {
                y.chunks_exact(BATCH_S)
                    .map(|c| c.iter().mean() / level)
                    .collect()
            })
        })
        .collect();
    let batches = curves.iter().map(Vec::len).min()?;
    let within = |k: usize| {
        let v: Vec<f64> = curves.iter().map(|c| c[k]).collect();
        let se = if v.len() > 1 {
            v.iter().std_dev() / (v.len() as f64).sqrt()
        } else {
            0.0
        };
        (v.iter().mean() - 1.0).abs() <= (SETTLED_PCT / 100.0).max(2.0 * se)
    };
    let first = (0..batches).find(|&k| (k..batches).all(within))?;
    (batches - first >= 3).then_some((first * BATCH_S) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::tests::interleaved;

    /// A trial whose per-second TPS ramps up over `ramp` seconds, then holds `level` with
    /// a deterministic +-`wiggle` fluctuation.
    fn trial(level: f64, ramp: usize, wiggle: f64, seconds: usize, warmup: f64) -> Sample {
        let mut s = Sample::of_trials(&interleaved(&[level], &[level]))[0].clone();
        s.per_second_tps = (0..seconds)
            .map(|i| {
                let ramped = if i < ramp {
                    level * (0.5 + 0.5 * i as f64 / ramp as f64)
                } else {
                    level
                };
                ramped * (1.0 + wiggle * if (i / 3) % 2 == 0 { 1.0 } else { -1.0 })
            })
            .collect();
        s.warmup_s = warmup;
        s
    }

    #[test]
    fn batch_means_see_a_slow_fluctuation_and_not_a_flat_series() {
        assert_eq!(within_rel_var(&[100.0; 60]), Some(0.0));
        // 20 s up, 20 s down: the 10 s batch means differ, so the window's mean is uncertain.
        let slow: Vec<f64> = (0..60)
            .map(|i| if (i / 20) % 2 == 0 { 110.0 } else { 90.0 })
            .collect();
        let v = within_rel_var(&slow).unwrap();
        assert!(v > 1e-3, "{v}");
        assert_eq!(within_rel_var(&[100.0; 29]), None, "fewer than 3 batches");
    }

    #[test]
    fn noise_within_trials_shrinks_with_the_window_and_the_between_part_does_not() {
        let s = NoiseSplit {
            trials: 4,
            window_s: 60.0,
            within_pct: 4.0,
            between_pct: 3.0,
        };
        let at = |w: f64| s.pair_sd(w);
        assert!((at(60.0) - (2.0f64 * (0.03 * 0.03 + 0.04 * 0.04)).sqrt()).abs() < 1e-12);
        assert!((at(240.0) - (2.0f64 * (0.03 * 0.03 + 0.02 * 0.02)).sqrt()).abs() < 1e-12);
        // However long the window, the between part stays.
        assert!(at(1e9) > 0.03 * 2f64.sqrt() * 0.999);
    }

    #[test]
    fn the_split_takes_the_within_part_from_the_series_and_the_rest_from_the_pairs() {
        let a = trial(1000.0, 0, 0.0, 120, 60.0);
        let flat = NoiseSplit::of(Metric::Tps, 0.04, &[&a, &a]).unwrap();
        // Flat series: all of the pairs' noise is between trials; sd of one trial 0.04/sqrt 2.
        assert_eq!(flat.within_pct, 0.0);
        assert!((flat.between_pct - 100.0 * 0.04 / 2f64.sqrt()).abs() < 1e-9);
        assert_eq!(flat.window_s, 60.0);
        let noisy = {
            let mut t = trial(1000.0, 0, 0.0, 120, 60.0);
            for (i, v) in t.per_second_tps.iter_mut().enumerate().skip(60) {
                *v *= if ((i - 60) / 10) % 2 == 0 { 1.1 } else { 0.9 };
            }
            t
        };
        let s = NoiseSplit::of(Metric::Tps, 0.04, &[&noisy]).unwrap();
        // The batch means see +-10% swings, more than the pairs vary: the within part is
        // capped at one trial's share of the pairs' sd, and nothing is left between.
        assert!(
            (s.within_pct - 100.0 * 0.04 / 2f64.sqrt()).abs() < 1e-9,
            "{s:?}"
        );
        assert_eq!(s.between_pct, 0.0, "{s:?}");
        // No per-second CPU: no split for CPU metrics; latency never has one.
        assert_eq!(NoiseSplit::of(Metric::StorageCpuRatio, 0.04, &[&a]), None);
        assert_eq!(NoiseSplit::of(Metric::TxnLatencyP99, 0.04, &[&a]), None);
    }

    #[test]
    fn the_warmup_is_where_tps_settles() {
        let ramping: Vec<Sample> = (0..4)
            .map(|_| trial(1000.0, 40, 0.005, 120, 20.0))
            .collect();
        let refs: Vec<&Sample> = ramping.iter().collect();
        assert_eq!(settled_after(&refs), Some(40));
        let steady: Vec<Sample> = (0..4).map(|_| trial(1000.0, 0, 0.005, 120, 20.0)).collect();
        let refs: Vec<&Sample> = steady.iter().collect();
        assert_eq!(settled_after(&refs), Some(0));
        // Still ramping at the end of the run: the data cannot say.
        let never: Vec<Sample> = (0..4).map(|_| trial(1000.0, 200, 0.0, 120, 20.0)).collect();
        let refs: Vec<&Sample> = never.iter().collect();
        assert_eq!(settled_after(&refs), None);
    }

    #[test]
    fn between_trial_noise_favours_short_trials_and_within_noise_long_ones() {
        let steady: Vec<Sample> = (0..4).map(|_| trial(1000.0, 0, 0.005, 120, 60.0)).collect();
        let refs: Vec<&Sample> = steady.iter().collect();
        let cost = TrialCost {
            overhead_s: 60.0,
            warmup_s: 60,
            window_s: 60,
            budget_s: 1800.0,
            trials_at_once: 1,
        };
        let size = |within_pct: f64, between_pct: f64| {
            let split = NoiseSplit {
                trials: 4,
                window_s: 60.0,
                within_pct,
                between_pct,
            };
            let c = Candidate {
                metric: Metric::Tps,
                split: &split,
                upper_factor: 1.0,
            };
            Sizing::choose(&[c], &cost, &refs, stats::Rule::holm(2.0, 1)).unwrap()
        };
        let between = size(0.5, 4.0);
        let within = size(6.0, 0.2);
        assert_eq!(between.warmup_seconds, MIN_WARMUP_S);
        assert_eq!(between.window_seconds, 30, "{between:?}");
        assert!(within.window_seconds > 60, "{within:?}");
        // Pairs as the budget allows: 1800 s / (2 x (60 + 10 + 30)).
        assert_eq!(between.pairs, 9);
        // A duet's pair takes one trial's time: twice the pairs.
        let duet = TrialCost {
            trials_at_once: 2,
            ..cost.clone()
        };
        assert_eq!(duet.pairs(10, 30), 18);
        assert_eq!(between.current_pairs, 5);
        assert!(between.mde_pct < between.current_mde_pct.unwrap());
        // No window fits two pairs in a tiny budget.
        let split = NoiseSplit {
            trials: 4,
            window_s: 60.0,
            within_pct: 1.0,
            between_pct: 1.0,
        };
        let c = Candidate {
            metric: Metric::Tps,
            split: &split,
            upper_factor: 1.0,
        };
        let tiny = TrialCost {
            budget_s: 100.0,
            ..cost
        };
        assert_eq!(
            Sizing::choose(&[c], &tiny, &refs, stats::Rule::holm(2.0, 1)),
            None
        );
    }
}
