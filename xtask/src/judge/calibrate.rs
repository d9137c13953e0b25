//! Judge stage, calibration: the trials of an A/A run (one build in both arms) -> this
//! host's noise and how sensitive a gate on it can be. Pure.
//!
//! The noise that matters for a paired gate is the standard deviation s of the per-pair
//! log ratios d_i = ln(TPS_B,i / TPS_A,i); with n pairs the minimum detectable effect is
//! MDE(n) = lambda(n - 1) s / sqrt(n), lambda the noncentrality at which the t test has the
//! promised power (`stats::mde_log`).

use std::fmt::Write as _;

use serde::Serialize;
use statrs::statistics::Statistics;

use fdb::Engine;

use super::{
    samples::Sample,
    stats::{self, Comparison},
};
use crate::{config::Arm, judge, results::trial::Outcome};

/// Pair counts the MDE table shows.
const TABLE_PAIRS: [usize; 9] = [2, 3, 4, 5, 6, 8, 10, 15, 20];
/// Largest pair count `pairs_needed` looks at.
const MAX_PAIRS: usize = 200;

/// `calibration.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// The tolerance the recommendation is for (`--max-regression`), percent.
    pub tolerance_pct: f64,
    pub engines: Vec<EngineNoise>,
}

/// Noise of one engine on this host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineNoise {
    pub engine: Engine,
    /// Complete A/A pairs measured.
    pub pairs: usize,
    /// Coefficient of variation of TPS over all measured trials (both arms run the same
    /// build), percent.
    pub tps_cv_pct: Option<f64>,
    /// Standard deviation of the per-pair log ratios (about the pair's relative noise).
    pub pair_log_ratio_sd: Option<f64>,
    /// 80% upper confidence bound of that sd (chi-square): a few A/A pairs estimate it
    /// loosely, and planning on the estimate itself would fall short half the time.
    pub pair_log_ratio_sd_upper80: Option<f64>,
    /// The A/A change with its interval: a healthy host's interval contains 0.
    pub aa_change: Option<Comparison>,
    /// (pairs, MDE percent) for a gate with this noise (the estimate).
    pub mde_pct_by_pairs: Vec<(usize, f64)>,
    /// Pairs for the MDE, at the upper bound of the noise, to reach the tolerance: then a
    /// change that does nothing is MEASURED about 80% of the time (one engine, a fixed
    /// number of trials; `--engine all` and `--trials auto` need more). `None` beyond 200.
    pub pairs_needed: Option<usize>,
}

impl Calibration {
    pub fn new(trials: &[Sample], engines: &[Engine], tolerance_pct: f64) -> Calibration {
        let engines = engines
            .iter()
            .map(|&engine| {
                let of = |arm: Arm| -> Vec<&Sample> {
                    trials
                        .iter()
                        .filter(|t| t.engine == engine && t.arm == arm)
                        .collect()
                };
                let pairs = judge::pairs(&of(Arm::Baseline), &of(Arm::Experiment));
                let tps = |t: &Sample| t.tps.unwrap_or(f64::NAN);
                let (a, b): (Vec<f64>, Vec<f64>) =
                    pairs.iter().map(|(x, y)| (tps(x), tps(y))).unzip();
                let all: Vec<f64> = trials
                    .iter()
                    .filter(|t| t.engine == engine && t.outcome == Outcome::Measured)
                    .filter_map(|t| t.tps)
                    .collect();
                let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| (y / x).ln()).collect();
                let sd = (d.len() > 1).then(|| d.iter().std_dev());
                let upper = sd.and_then(|sd| sd_upper80(sd, d.len()));
                EngineNoise {
                    engine,
                    pairs: pairs.len(),
                    tps_cv_pct: (all.len() > 1)
                        .then(|| 100.0 * all.iter().std_dev() / all.iter().mean()),
                    pair_log_ratio_sd: sd,
                    pair_log_ratio_sd_upper80: upper,
                    aa_change: stats::paired(&a, &b),
                    mde_pct_by_pairs: sd.map_or_else(Vec::new, |sd| {
                        TABLE_PAIRS
                            .iter()
                            .map(|&n| (n, -100.0 * (-stats::mde_log(sd, n)).exp_m1()))
                            .collect()
                    }),
                    // Planned on the upper bound, as documented: on the estimate itself
                    // a no-change run would be MEASURED only about two times in three.
                    pairs_needed: upper
                        .and_then(|u| stats::pairs_needed(u, tolerance_pct, MAX_PAIRS)),
                }
            })
            .collect();
        Calibration {
            tolerance_pct,
            engines,
        }
    }

    /// Text for the terminal.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for e in &self.engines {
            let _ = writeln!(s, "calibration of {} over {} A/A pairs:", e.engine, e.pairs);
            let Some(sd) = e.pair_log_ratio_sd else {
                let _ = writeln!(s, "  fewer than 2 complete pairs: no estimate of the noise (run --trials 6 or more)");
                continue;
            };
            if let Some(cv) = e.tps_cv_pct {
                let _ = writeln!(s, "  TPS coefficient of variation: {cv:.2}%");
            }
            let _ = writeln!(
                s,
                "  sd of per-pair log ratios:     {:.2}% (80% upper bound {:.2}%)",
                100.0 * sd,
                100.0 * e.pair_log_ratio_sd_upper80.unwrap_or(f64::NAN)
            );
            if let Some(c) = &e.aa_change {
                let _ = writeln!(
                    s,
                    "  A/A change: {:+.2}% [{:+.2}%, {:+.2}%] (should contain 0), p={:.3}",
                    c.delta_pct, c.ci_low_pct, c.ci_high_pct, c.p_value
                );
            }
            let row: Vec<String> = e
                .mde_pct_by_pairs
                .iter()
                .map(|(n, m)| format!("{n}: {m:.1}%"))
                .collect();
            let _ = writeln!(s, "  MDE (80% power) by pairs: {}", row.join(", "));
            match e.pairs_needed {
                Some(n) => {
                    let _ = writeln!(
                        s,
                        "  a {:.1}% tolerance needs --trials {n}",
                        self.tolerance_pct
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  a {:.1}% tolerance needs more than {MAX_PAIRS} pairs on this host: reduce the noise or widen --max-regression",
                        self.tolerance_pct
                    );
                }
            }
        }
        s
    }
}

/// 80% upper confidence bound of a standard deviation estimated from `n` values:
/// sd x sqrt((n - 1) / chi2(0.2; n - 1)).
fn sd_upper80(sd: f64, n: usize) -> Option<f64> {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    let df = (n - 1) as f64;
    let q = ChiSquared::new(df).ok()?.inverse_cdf(0.2);
    (q > 0.0).then(|| sd * (df / q).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::tests::interleaved;

    #[test]
    fn a_quiet_host_needs_few_pairs_and_a_noisy_one_many() {
        let quiet = interleaved(
            &[1000.0, 1003.0, 998.0, 1001.0],
            &[1001.0, 1002.0, 999.0, 1000.0],
        );
        let noisy = interleaved(
            &[1000.0, 1080.0, 930.0, 1050.0],
            &[1060.0, 990.0, 1010.0, 940.0],
        );
        let q = &Calibration::new(&Sample::of_trials(&quiet), &[Engine::Redwood], 2.0).engines[0];
        let n = &Calibration::new(&Sample::of_trials(&noisy), &[Engine::Redwood], 2.0).engines[0];
        assert_eq!((q.pairs, n.pairs), (4, 4));
        let (qn, nn) = (
            q.pairs_needed.unwrap(),
            n.pairs_needed.unwrap_or(usize::MAX),
        );
        assert!(qn < nn, "{qn} {nn}");
        assert!(qn <= 3, "{qn}");
        // Planned on the 80% upper bound of the noise, not on the estimate itself.
        let upper = n.pair_log_ratio_sd_upper80.unwrap();
        let on_estimate = stats::pairs_needed(n.pair_log_ratio_sd.unwrap(), 2.0, MAX_PAIRS);
        assert_eq!(n.pairs_needed, stats::pairs_needed(upper, 2.0, MAX_PAIRS));
        // The noisy host: 190 pairs on the estimate, more than 200 on the bound.
        assert_eq!(on_estimate, Some(190));
        assert_eq!(n.pairs_needed, None);
        // The MDE table falls with more pairs.
        let mdes: Vec<f64> = n.mde_pct_by_pairs.iter().map(|(_, m)| *m).collect();
        assert!(mdes.windows(2).all(|w| w[0] > w[1]), "{mdes:?}");
        let text = Calibration::new(&Sample::of_trials(&quiet), &[Engine::Redwood], 2.0).render();
        assert!(text.contains(&format!("needs --trials {qn}")), "{text}");
    }

    #[test]
    fn the_upper_bound_of_the_noise_matches_scipy() {
        // sd * sqrt(df / scipy.stats.chi2.ppf(0.2, df)) for df = 5: 0.02 * sqrt(5 / 2.342534)
        let got = sd_upper80(0.02, 6).unwrap();
        assert!(
            (got - 0.02 * (5.0f64 / 2.342_534_3).sqrt()).abs() < 1e-7,
            "{got}"
        );
        assert!(
            sd_upper80(0.02, 2).unwrap() > got,
            "fewer pairs, a looser bound"
        );
    }

    #[test]
    fn one_pair_gives_no_estimate() {
        let c = Calibration::new(
            &Sample::of_trials(&interleaved(&[1000.0], &[1001.0])),
            &[Engine::Redwood],
            2.0,
        );
        assert_eq!(c.engines[0].pair_log_ratio_sd, None);
        assert!(c.render().contains("no estimate of the noise"));
    }
}
