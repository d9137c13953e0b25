//! Judge stage, adaptive trials (`--trials auto --time-budget D`): when to stop adding
//! A/B pairs. Pure: the caller passes elapsed times.
//!
//! Design: looks start after [`MIN_PAIRS`] pairs and follow every further pair. At the
//! first look the number of looks the budget allows is fixed, K = 1 + (budget left) /
//! (time per pair so far), from timing alone (not from the data), and every look tests
//! at alpha / K (Bonferroni over looks: the chance of any false decision over all looks
//! stays at most alpha; conservative next to an O'Brien-Fleming spending function, and
//! valid without knowing how many looks will really happen). A run stops at the first
//! decided verdict, after K looks, or when another pair would not fit in the budget, so
//! it never exceeds its budget by more than the pair that was already running.

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

    /// Registers a look after `pairs` pairs in `elapsed`; returns K, the looks planned:
    /// this look tests at alpha / K. `None` before [`MIN_PAIRS`] pairs: no look yet.
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
}
