//! Judge stage, adaptive trials (`--trials auto --time-budget D`): when to stop adding
//! A/B pairs, and the level each look tests at. Pure: the caller passes elapsed times.
//!
//! Design: looks start after [`MIN_PAIRS`] pairs and follow every further pair. At the
//! first look the number of looks the budget allows is fixed, K = 1 + (budget left) /
//! (time per pair so far), from timing alone (not from the data). A run stops at the
//! first decided verdict, after K looks, or when another pair would not fit in the
//! budget, so it never exceeds its budget by more than the pair that was already running.
//!
//! Each one-sided test of a look is a group-sequential test (Jennison & Turnbull 2000,
//! ch. 7): the error `level` is spent over the looks by the Hwang-Shih-DeCani function
//! with gamma = -4, alpha(t) = level (1 - e^(4t)) / (1 - e^4), t = n / n_K the fraction of
//! the pairs of look K (the information of a paired t test grows with n). The boundary
//! z_k of look k is the one at which the chance of first crossing at look k, given no
//! crossing before, is alpha(t_k) - alpha(t_k-1), for the correlated statistics
//! Z_k = S_k / sqrt(n_k) of a sum S with independent increments (recursive numerical
//! integration, Armitage, McPherson & Rowe 1969). The t statistic of look k then rejects
//! when its one-sided p is below the boundary's nominal level 1 - Phi(z_k) (the nominal
//! p-value approach for an unknown variance). Gamma = -4 spends little early, like
//! O'Brien-Fleming (a large change still stops a run early), and leaves the last look
//! near the level of a single test: with K = 17 and level 0.0125 the last look tests at
//! about 0.0086, where a Bonferroni split over the looks tested at 0.0125 / 17 = 0.00074
//! (figures from `nominal_level`; see the tests). The budget ending before look K leaves
//! the rest unspent, which is conservative.

use std::time::Duration;

/// Pairs run before the first look.
pub const MIN_PAIRS: u32 = 3;

/// Looks possible at most: one per pair from [`MIN_PAIRS`] to the largest trial count.
pub const MAX_LOOKS: u32 = crate::config::MAX_TRIALS - MIN_PAIRS + 1;

/// The stopping rule of one engine's adaptive run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sequential {
    budget: Duration,
    looks_planned: Option<u32>,
    looks: u32,
}

impl Sequential {
    pub fn new(budget: Duration) -> Sequential {
        Sequential {
            budget,
            looks_planned: None,
            looks: 0,
        }
    }

    /// Whether another pair fits in the budget, judging by the mean time of the `pairs`
    /// done in `elapsed` (the first pair always runs).
    pub fn another_pair_fits(&self, elapsed: Duration, pairs: u32) -> bool {
        if pairs == 0 {
            return true;
        }
        if self.looks_planned.is_some_and(|k| self.looks >= k) {
            return false;
        }
        elapsed + elapsed / pairs <= self.budget
    }

    /// Registers a look after `pairs` pairs in `elapsed`; returns K, the looks planned
    /// (this look tests at [`nominal_level`] of K). `None` before [`MIN_PAIRS`] pairs: no
    /// look yet.
    pub fn look(&mut self, elapsed: Duration, pairs: u32) -> Option<u32> {
        if pairs < MIN_PAIRS {
            return None;
        }
        let k = *self.looks_planned.get_or_insert_with(|| {
            let per_pair = elapsed.as_secs_f64() / f64::from(pairs);
            let left = self.budget.saturating_sub(elapsed).as_secs_f64();
            let more = if per_pair > 0.0 { left / per_pair } else { 0.0 };
            // No more looks than pairs can ever run.
            (1.0 + more.floor()).min(f64::from(MAX_LOOKS)) as u32
        });
        self.looks += 1;
        Some(k)
    }

    /// Looks fixed at the first look, if it happened.
    pub fn looks_planned(&self) -> Option<u32> {
        self.looks_planned
    }
}

/// Gamma of the Hwang-Shih-DeCani spending function (-4: close to O'Brien-Fleming).
const SPENDING_GAMMA: f64 = -4.0;

/// Error spent by information fraction `t` (0..=1) of a one-sided test at `level`:
/// level (1 - e^(-gamma t)) / (1 - e^(-gamma)).
fn spent(level: f64, t: f64) -> f64 {
    level * (-(-SPENDING_GAMMA * t).exp_m1()) / (-(-SPENDING_GAMMA).exp_m1())
}

/// The one-sided nominal level (a p-value threshold, 0..=level) of a test at overall
/// one-sided `level` judged with `pairs` pairs at a look of an adaptive run that planned
/// `looks` looks (K; looks at [`MIN_PAIRS`], [`MIN_PAIRS`] + 1, ... pairs). `looks` 1 (a
/// fixed number of trials) gives `level` itself. Pairs outside the planned looks are
/// clamped to the first or last look. Memoized per (K, level), and computed only up to
/// the look asked for (a look's boundary depends on the looks before it alone), so an
/// early look of a long budget costs little.
pub fn nominal_level(looks: u32, pairs: usize, level: f64) -> f64 {
    use std::{
        collections::HashMap,
        sync::{Mutex, OnceLock},
    };
    if looks <= 1 {
        return level;
    }
    static MEMO: OnceLock<Mutex<HashMap<(u32, u64), Boundary>>> = OnceLock::new();
    let look = pairs
        .saturating_sub(MIN_PAIRS as usize)
        .min(looks as usize - 1);
    let mut memo = MEMO
        .get_or_init(Default::default)
        .lock()
        .expect("not poisoned");
    let boundary = memo.entry((looks, level.to_bits())).or_insert_with(|| {
        Boundary::new(
            (0..looks).map(|k| f64::from(MIN_PAIRS + k)).collect(),
            level,
        )
    });
    normal_sf(boundary.z(look))
}

fn normal_sf(z: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(z / std::f64::consts::SQRT_2)
}

fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The upper boundaries z_1..z_K (standard normal scale) of a one-sided group-sequential
/// test at `level` with looks at the increasing informations `info` (any unit), spending
/// by [`spent`], computed look by look as they are asked for. The sub-density of
/// S_k = Z_k sqrt(I_k) on the continuation region is carried from look to look on a grid
/// (Simpson's rule) from -6 sd to the boundary, fine enough that the sd of the smallest
/// increment spans 5 grid steps, each point summing the survivors within 9 sd of the
/// increment; each z_k is found by bisection to 1e-9.
struct Boundary {
    info: Vec<f64>,
    level: f64,
    /// The sd of the smallest increment after the first: the narrowest kernel to resolve.
    finest: f64,
    z: Vec<f64>,
    /// (grid point, Simpson weight times sub-density) of the survivors of the last look.
    survivors: Vec<(f64, f64)>,
}

impl Boundary {
    fn new(info: Vec<f64>, level: f64) -> Boundary {
        let finest = info
            .windows(2)
            .map(|w| (w[1] - w[0]).sqrt())
            .fold(f64::INFINITY, f64::min);
        Boundary {
            info,
            level,
            finest,
            z: Vec::new(),
            survivors: Vec::new(),
        }
    }

    /// z of look `k` (0-based), computing the looks up to it.
    fn z(&mut self, k: usize) -> f64 {
        while self.z.len() <= k {
            self.next_look();
        }
        self.z[k]
    }

    fn next_look(&mut self) {
        let k = self.z.len();
        let last = *self.info.last().expect("at least one look");
        let i = self.info[k];
        let previous = if k == 0 { 0.0 } else { self.info[k - 1] };
        let increment = spent(self.level, i / last) - spent(self.level, previous / last);
        let step_sd = (i - previous).sqrt();
        let survivors = &self.survivors;
        // P(first crossing at this look) for an upper bound c (z scale), decreasing in c.
        // Survivors more than 9 increment sds below the bound cannot reach it (< 1e-19).
        let crossing = |c: f64| -> f64 {
            if k == 0 {
                return normal_sf(c);
            }
            let from = c * i.sqrt() - 9.0 * step_sd;
            let start = survivors.partition_point(|&(s, _)| s < from);
            survivors[start..]
                .iter()
                .map(|&(s, w)| w * normal_sf((c * i.sqrt() - s) / step_sd))
                .sum()
        };
        let c = if increment <= 0.0 {
            f64::INFINITY
        } else {
            let (mut lo, mut hi) = (-10.0, 40.0);
            while hi - lo > 1e-9 {
                let mid = 0.5 * (lo + hi);
                if crossing(mid) > increment {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        };
        self.z.push(c);
        if k + 1 == self.info.len() {
            self.survivors = Vec::new();
            return;
        }
        // The survivors' sub-density at this look, on a new grid.
        let sd = i.sqrt();
        let (low, high) = (-6.0 * sd, c.min(12.0) * sd);
        let intervals = (((high - low) / (self.finest / 5.0)).ceil() as usize).max(60) & !1;
        let h = (high - low) / intervals as f64;
        // The survivors are sorted: only those within 9 kernel sds of x count (the rest
        // weigh less than 1e-17 of the kernel's peak).
        let reach = 9.0 * step_sd;
        let index = |x: f64| self.survivors.partition_point(|&(s, _)| s < x);
        let next: Vec<(f64, f64)> = (0..=intervals)
            .map(|g| {
                let x = low + g as f64 * h;
                let density = if k == 0 {
                    normal_pdf(x / sd) / sd
                } else {
                    let near = index(x - reach)..index(x + reach);
                    self.survivors[near]
                        .iter()
                        .map(|&(s, w)| w * normal_pdf((x - s) / step_sd) / step_sd)
                        .sum()
                };
                let simpson = match g {
                    0 => 1.0,
                    g if g == intervals => 1.0,
                    g if g % 2 == 1 => 4.0,
                    _ => 2.0,
                };
                (x, simpson * h / 3.0 * density)
            })
            .collect();
        self.survivors = next;
    }
}

/// Every boundary of a test with looks at `info` (see [`Boundary`]).
#[cfg(test)]
fn boundary(info: &[f64], level: f64) -> Vec<f64> {
    let mut b = Boundary::new(info.to_vec(), level);
    (0..info.len()).map(|k| b.z(k)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAIR: Duration = Duration::from_secs(360);

    #[test]
    fn looks_start_after_the_minimum_and_split_alpha_over_the_looks_the_budget_allows() {
        let mut s = Sequential::new(PAIR * 10);
        assert_eq!(s.look(PAIR * 2, 2), None);
        // After 3 pairs, 7 more fit: K = 8.
        assert_eq!(s.look(PAIR * 3, 3), Some(8));
        assert_eq!(s.looks_planned(), Some(8));
        // K stays fixed even if pairs get faster.
        assert_eq!(s.look(PAIR * 3 + PAIR / 2, 4), Some(8));
        // Never more looks than pairs can run, whatever the budget.
        let mut fast = Sequential::new(Duration::from_secs(u64::MAX / 4));
        assert_eq!(fast.look(Duration::from_millis(3), 3), Some(MAX_LOOKS));
    }

    #[test]
    fn never_starts_a_pair_that_does_not_fit() {
        let s = Sequential::new(PAIR * 4);
        assert!(s.another_pair_fits(Duration::ZERO, 0));
        assert!(s.another_pair_fits(PAIR * 3, 3));
        assert!(!s.another_pair_fits(PAIR * 3 + Duration::from_secs(1), 3));
        // Simulated run: the total never exceeds the budget.
        for budget_pairs in 1..30u32 {
            let budget = PAIR * budget_pairs;
            let mut s = Sequential::new(budget);
            let (mut elapsed, mut pairs) = (Duration::ZERO, 0);
            while s.another_pair_fits(elapsed, pairs) {
                elapsed += PAIR;
                pairs += 1;
                s.look(elapsed, pairs);
            }
            assert!(elapsed <= budget.max(PAIR), "{budget_pairs}: {elapsed:?}");
            assert_eq!(pairs, budget_pairs.max(1));
        }
    }

    #[test]
    fn stops_after_the_planned_looks() {
        let mut s = Sequential::new(PAIR * 4);
        s.look(PAIR * 3, 3); // K = 2
        assert!(s.another_pair_fits(PAIR * 3, 3));
        s.look(PAIR * 4, 4);
        assert!(!s.another_pair_fits(PAIR * 4, 4));
    }

    #[test]
    fn the_boundary_matches_published_hwang_shih_decani_values() {
        // gsDesign 3.x, gsDesign(k = 3, test.type = 1, alpha = 0.025, sfu = sfHSD,
        // sfupar = -4): efficacy bounds 3.0107, 2.5465, 1.9992 at equal spacing.
        let z = boundary(&[1.0, 2.0, 3.0], 0.025);
        for (got, want) in z.iter().zip([3.0107, 2.5465, 1.9992]) {
            assert!((got - want).abs() < 2e-3, "{z:?}");
        }
        // One look is a plain test at the level.
        assert_eq!(nominal_level(1, 7, 0.0125), 0.0125);
        let z1 = boundary(&[5.0], 0.025);
        assert!((normal_sf(z1[0]) - 0.025).abs() < 1e-8);
    }

    #[test]
    fn the_boundary_spends_its_level_on_simulated_paths() {
        // Brownian paths observed at 3..=19 pairs (K = 17), no effect: the share that
        // crosses the boundary by look k must be alpha(t_k), within the simulation's
        // error (20,000 paths: sd of the total 0.0008 at 0.0125).
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let (looks, level) = (17u32, 0.0125);
        let nominal: Vec<f64> = (0..looks)
            .map(|k| nominal_level(looks, (MIN_PAIRS + k) as usize, level))
            .collect();
        let z: Vec<f64> = nominal
            .iter()
            .map(|&p| {
                let (mut lo, mut hi) = (-10.0, 40.0);
                while hi - lo > 1e-10 {
                    let mid = 0.5 * (lo + hi);
                    (lo, hi) = if normal_sf(mid) > p {
                        (mid, hi)
                    } else {
                        (lo, mid)
                    };
                }
                lo
            })
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let runs = 20_000;
        let mut crossed = vec![0u32; looks as usize];
        for _ in 0..runs {
            let mut sum = 0.0;
            for n in 1..=(MIN_PAIRS + looks - 1) {
                let x: f64 = StandardNormal.sample(&mut rng);
                sum += x;
                if n < MIN_PAIRS {
                    continue;
                }
                let k = (n - MIN_PAIRS) as usize;
                if sum / f64::from(n).sqrt() >= z[k] {
                    crossed[k] += 1;
                    break;
                }
            }
        }
        let total = f64::from(crossed.iter().sum::<u32>()) / f64::from(runs);
        assert!(
            (total - level).abs() < 0.0035,
            "crossed {total}: {crossed:?}"
        );
        // The last look tests near the single test's level (0.0086), far above
        // Bonferroni's share (0.00074), and above every earlier look.
        let last = nominal[looks as usize - 1];
        assert!(last > 0.008 && last < level, "{nominal:?}");
        assert!(last > 10.0 * level / f64::from(looks));
        assert!(nominal[..looks as usize - 1].iter().all(|&p| p < last));
    }

    #[test]
    fn the_longest_run_of_looks_ends_near_the_single_tests_level() {
        // K = MAX_LOOKS (a long budget and fast pairs): the last look still tests far
        // above a Bonferroni share and below the level; the first far below both.
        let (k, level) = (MAX_LOOKS, 0.025);
        let last = nominal_level(k, (MIN_PAIRS + k - 1) as usize, level);
        let first = nominal_level(k, MIN_PAIRS as usize, level);
        assert!(last > 0.3 * level && last < level, "{last}");
        assert!(first < level / f64::from(k), "{first}");
    }
}
