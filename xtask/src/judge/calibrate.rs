//! Judge stage, calibration: the trials of an A/A run (one build in both arms) -> this
//! host's noise and how sensitive a gate on it can be. Pure.
//!
//! The noise that matters for a paired gate is the standard deviation s of the per-pair
//! log ratios d_i = ln(TPS_B,i / TPS_A,i); with n pairs the minimum detectable effect is
//! MDE(n) = lambda(n - 1) s / sqrt(n), lambda the noncentrality at which REGRESSION has the
//! promised power at the level a gated metric is tested at (`stats::mde_log`). Every
//! figure is planned on the 80% upper bound of s, as the judge's own MDE is on the bound
//! of its run's noise: a few A/A pairs estimate s loosely, and planning on the estimate
//! itself falls short of the promised power in half the calibrations or more.

use std::fmt::Write as _;

use serde::Serialize;
use statrs::statistics::Statistics;

use fdb::Engine;

use super::{
    covariate,
    samples::Sample,
    sizing::{Candidate, NoiseSplit, Sizing, TrialCost},
    stats::{self, Comparison},
};
use crate::{
    config::{Arm, Metric, MetricSet},
    judge,
    results::{noise::PriorNoise, trial::Outcome},
};

/// Pair counts the MDE table shows.
const TABLE_PAIRS: [usize; 9] = [2, 3, 4, 5, 6, 8, 10, 15, 20];
/// Largest pair count `pairs_needed` looks at.
const MAX_PAIRS: usize = 200;
/// The pairs a calibration is advised to run: enough for an estimate of the noise to plan
/// on (the example in docs/calibration.md), where 2 are the least that give one.
pub const ADVISED_PAIRS: u32 = 6;

/// `calibration.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// The tolerance the recommendation is for (`--max-regression`), percent.
    pub tolerance_pct: f64,
    /// What a trial cost and the budget the sizing is for; `None` without measured trials.
    pub cost: Option<TrialCost>,
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
    /// Gated comparisons the MDEs are for (the gated metrics the trials measured, times
    /// the engines): a Holm family, whose first member is tested at ALPHA / 2 / this.
    pub gated_comparisons: usize,
    /// (pairs, MDE percent) for a gate with this noise at its 80% upper bound: the true
    /// loss REGRESSION catches in 80% of runs of that many pairs.
    pub mde_pct_by_pairs: Vec<(usize, f64)>,
    /// Pairs for the MDE, at the upper bound of the noise, to reach the tolerance: then a
    /// change that does nothing is MEASURED about 80% of the time (one engine, a fixed
    /// number of trials; `--engine all` and `--trials auto` need more). `None` beyond 200.
    pub pairs_needed: Option<usize>,
    /// The same figures for every metric the trials measured (TPS first), to choose what
    /// to gate on: the metric with the smallest pair sd resolves the smallest change.
    pub metrics: Vec<MetricNoise>,
    /// Warmup, window and pairs with the smallest MDE in the budget, for the gated metric
    /// that resolves the smallest change; `None` without per-second series or budget.
    pub sizing: Option<Sizing>,
}

/// Noise of one metric of one engine on this host (the fields as in [`EngineNoise`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricNoise {
    pub metric: Metric,
    /// Complete A/A pairs with the metric measured in both trials.
    pub pairs: usize,
    /// Coefficient of variation over all measured trials, percent.
    pub cv_pct: Option<f64>,
    pub pair_log_ratio_sd: Option<f64>,
    pub pair_log_ratio_sd_upper80: Option<f64>,
    /// MDE percent at 3 and at 10 pairs (at the 80% upper bound, as in [`EngineNoise`]).
    pub mde_pct_3_pairs: Option<f64>,
    pub mde_pct_10_pairs: Option<f64>,
    pub pairs_needed: Option<usize>,
    /// Where the noise comes from: within a trial's window or between trials; `None`
    /// without per-second series of the metric (p99 latency, records without them).
    pub split: Option<NoiseSplit>,
    /// The pairs' log ratio sd with the host's drift removed: the residual sd of their
    /// regression on the host-speed probe's log ratios, and its slope
    /// (`covariate::adjusted`); `None` unless every pair was probed, 3 pairs or more. The
    /// MDEs and pairs needed stay on the plain sd: the judge removes the drift only from
    /// `covariate::MIN_PAIRS` pairs on, and with a probe that explains nothing the
    /// slope's lost degree of freedom makes the adjusted test the weaker one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_adjusted: Option<HostAdjusted>,
}

/// The noise a metric has left once the host-speed covariate is removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostAdjusted {
    /// Residual sd of the pairs' log ratios (about the relative noise).
    pub pair_log_ratio_sd: f64,
    /// Slope of the pairs' log ratios on the probe's log speed ratios.
    pub slope: f64,
    /// Two-sided p of "the probe explains none of the pairs' variance".
    pub slope_p: f64,
}

impl MetricNoise {
    /// The noise of `metric` over `pairs` (and `all` the measured trials, for the CV and
    /// the split), its MDEs for REGRESSION by `rule`, its pairs needed for a tolerance of
    /// `tol` percent.
    fn of(
        metric: Metric,
        pairs: &[(&Sample, &Sample)],
        all: &[&Sample],
        tol: f64,
        rule: stats::Rule,
    ) -> MetricNoise {
        let d: Vec<f64> = pairs
            .iter()
            .filter_map(|(a, b)| Some((b.value(metric)? / a.value(metric)?).ln()))
            .collect();
        let values: Vec<f64> = all.iter().filter_map(|t| t.value(metric)).collect();
        let sd = (d.len() > 1).then(|| d.iter().std_dev());
        let upper = sd.and_then(|sd| sd_upper80(sd, d.len()));
        let mde = |n: usize| upper.map(|u| -100.0 * (-stats::mde_log(u, n, rule)).exp_m1());
        MetricNoise {
            metric,
            pairs: d.len(),
            cv_pct: (values.len() > 1)
                .then(|| 100.0 * values.iter().std_dev() / values.iter().mean()),
            pair_log_ratio_sd: sd,
            pair_log_ratio_sd_upper80: upper,
            mde_pct_3_pairs: mde(3),
            mde_pct_10_pairs: mde(10),
            pairs_needed: upper.and_then(|u| stats::pairs_needed(u, tol, MAX_PAIRS)),
            split: sd.and_then(|sd| NoiseSplit::of(metric, sd, all)),
            host_adjusted: covariate::of_pairs(pairs, metric)
                .and_then(|c| c.covariate)
                .map(|k| HostAdjusted {
                    pair_log_ratio_sd: k.adjusted_sd_pct / 100.0,
                    slope: k.slope,
                    slope_p: k.slope_p,
                }),
        }
    }
}

/// The complete A/A pairs of `engine` among `trials`.
fn engine_pairs(trials: &[Sample], engine: Engine) -> Vec<(&Sample, &Sample)> {
    let of = |arm: Arm| -> Vec<&Sample> {
        trials
            .iter()
            .filter(|t| t.engine == engine && t.arm == arm)
            .collect()
    };
    judge::pairs(&of(Arm::Baseline), &of(Arm::Experiment))
}

/// The per-pair noise of every engine and metric that an A/A run's `trials` measured in at
/// least two complete pairs, for `--noise-from` ([`NoisePrior`]'s entries).
///
/// [`NoisePrior`]: crate::results::noise::NoisePrior
pub fn prior_noise(trials: &[Sample], engines: &[Engine]) -> Vec<PriorNoise> {
    let mut out = Vec::new();
    for &engine in engines {
        let pairs = engine_pairs(trials, engine);
        for metric in Metric::ALL {
            let n = MetricNoise::of(metric, &pairs, &[], 2.0, stats::Rule::holm(2.0, 1));
            if let Some(sd_log) = n.pair_log_ratio_sd.filter(|_| n.pairs >= 2) {
                out.push(PriorNoise {
                    engine,
                    metric,
                    pairs: n.pairs,
                    sd_log,
                });
            }
        }
    }
    out
}

impl EngineNoise {
    /// The noise of `engine` in `trials` (an A/A run), one of `engines` calibrated at once,
    /// for a tolerance of `tolerance_pct` percent and the metrics of `gated`; with `cost`,
    /// the trials sized for the budget.
    fn of(
        trials: &[Sample],
        engine: Engine,
        engines: usize,
        tolerance_pct: f64,
        gated: MetricSet,
        cost: &Option<TrialCost>,
    ) -> EngineNoise {
        let pairs = engine_pairs(trials, engine);
        let tps = |t: &Sample| t.tps.unwrap_or(f64::NAN);
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().map(|(x, y)| (tps(x), tps(y))).unzip();
        let measured: Vec<&Sample> = trials
            .iter()
            .filter(|t| t.engine == engine && t.outcome == Outcome::Measured)
            .collect();
        // A gated metric is in the Holm family when the trials measure it.
        let gated_measured = Metric::ALL
            .into_iter()
            .filter(|&m| gated.contains(m))
            .filter(|&m| {
                pairs
                    .iter()
                    .any(|(x, y)| x.value(m).and(y.value(m)).is_some())
            })
            .count();
        let family = (gated_measured * engines).max(1);
        let rule = stats::Rule::holm(tolerance_pct, family);
        let metrics: Vec<MetricNoise> = Metric::ALL
            .into_iter()
            .map(|m| MetricNoise::of(m, &pairs, &measured, tolerance_pct, rule))
            .filter(|m| m.pairs > 0)
            .collect();
        // TPS's own figures, kept at the top level of calibration.json.
        let of_tps = MetricNoise::of(Metric::Tps, &pairs, &measured, tolerance_pct, rule);
        let candidates: Vec<Candidate> = metrics
            .iter()
            .filter(|m| gated.contains(m.metric))
            .filter_map(|m| {
                Some(Candidate {
                    metric: m.metric,
                    split: m.split.as_ref()?,
                    upper_factor: m.pair_log_ratio_sd_upper80?
                        / m.pair_log_ratio_sd.filter(|v| *v > 0.0)?,
                })
            })
            .collect();
        let sizing = cost
            .as_ref()
            .and_then(|c| Sizing::choose(&candidates, c, &measured, rule));
        let upper = of_tps.pair_log_ratio_sd_upper80;
        EngineNoise {
            engine,
            pairs: pairs.len(),
            tps_cv_pct: of_tps.cv_pct,
            pair_log_ratio_sd: of_tps.pair_log_ratio_sd,
            pair_log_ratio_sd_upper80: upper,
            aa_change: stats::paired_in_order(&a, &b, &judge::run_order(&pairs)),
            gated_comparisons: family,
            mde_pct_by_pairs: upper.map_or_else(Vec::new, |u| {
                TABLE_PAIRS
                    .iter()
                    .map(|&n| (n, -100.0 * (-stats::mde_log(u, n, rule)).exp_m1()))
                    .collect()
            }),
            // Planned on the upper bound, as documented: on the estimate itself a no-change
            // run would be MEASURED only about two times in three.
            pairs_needed: of_tps.pairs_needed,
            metrics,
            sizing,
        }
    }
}

impl Calibration {
    /// The noise of `trials` (an A/A run) per engine and metric, and with `cost` the trials
    /// sized for the host, on the metrics of `gated` (a metric's pairs' sd planned on its
    /// 80% upper bound).
    pub fn new(
        trials: &[Sample],
        engines: &[Engine],
        tolerance_pct: f64,
        gated: MetricSet,
        cost: Option<TrialCost>,
    ) -> Calibration {
        let engines = engines
            .iter()
            .map(|&engine| {
                EngineNoise::of(trials, engine, engines.len(), tolerance_pct, gated, &cost)
            })
            .collect();
        Calibration {
            tolerance_pct,
            cost,
            engines,
        }
    }

    /// Text for the terminal.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for e in &self.engines {
            let _ = writeln!(s, "calibration of {} over {} A/A pairs:", e.engine, e.pairs);
            let Some(sd) = e.pair_log_ratio_sd else {
                let _ = writeln!(
                    s,
                    "  fewer than 2 complete pairs: no estimate of the noise (run --trials \
                     {ADVISED_PAIRS} or more)"
                );
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
            s += &e.render_host_adjusted();
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
            let _ = writeln!(
                s,
                "  MDE by pairs (caught as REGRESSION 4 times in 5, as one of {} gated \
                 comparisons, at the noise's 80% upper bound): {}",
                e.gated_comparisons,
                row.join(", ")
            );
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
        for e in self.engines.iter().filter(|e| e.metrics.len() > 1) {
            let _ = write!(s, "{}", e.render_metrics(self.tolerance_pct));
        }
        s += &self.render_sizing();
        s
    }
}

impl Calibration {
    /// The trials sized for the budget per engine, or why none could be.
    fn render_sizing(&self) -> String {
        let mut s = String::new();
        for e in &self.engines {
            let (Some(z), Some(cost)) = (&e.sizing, &self.cost) else {
                if self.cost.is_some() && e.pair_log_ratio_sd.is_some() {
                    let split = e.metrics.iter().any(|m| m.split.is_some());
                    let _ = writeln!(
                        s,
                        "{}: no trials sized for the budget: {}",
                        e.engine,
                        if split {
                            "no gated metric has its noise split into within and between trials"
                        } else {
                            "the noise split needs a measurement window of at least three 10 s \
                             batches (30 s: --seconds minus --warmup-seconds); calibrate with a \
                             longer window"
                        }
                    );
                }
                continue;
            };
            let _ = writeln!(
                s,
                "{} trials sized for a {} budget ({:.0} s of each trial is cluster start, \
                 load and teardown), on {}:\n  --warmup-seconds {} --seconds {} --trials {}: \
                 MDE {:.1}% (on the 80% upper bound of the noise; {} s + {} s as calibrated: \
                 {} pairs, MDE {})\n  warmup: {}",
                e.engine,
                humantime::format_duration(std::time::Duration::from_secs(cost.budget_s as u64)),
                cost.overhead_s,
                z.metric,
                z.warmup_seconds,
                z.warmup_seconds + z.window_seconds,
                z.pairs,
                z.mde_pct,
                cost.warmup_s,
                cost.window_s,
                z.current_pairs,
                z.current_mde_pct
                    .map_or("-".to_string(), |m| format!("{m:.1}%")),
                z.warmup_reason
            );
        }
        s
    }
}

impl EngineNoise {
    /// TPS's pair sd with the host's drift removed, one line, or nothing without a probe.
    fn render_host_adjusted(&self) -> String {
        let tps = self.metrics.iter().find(|m| m.metric == Metric::Tps);
        let Some(h) = tps.and_then(|m| m.host_adjusted.as_ref()) else {
            return String::new();
        };
        format!(
            "  with the host's speed removed: {:.2}% (probe slope {:.2}, p={:.3}; the judge \
             removes it from {} pairs on, the MDEs below do not)\n",
            100.0 * h.pair_log_ratio_sd,
            h.slope,
            h.slope_p,
            covariate::MIN_PAIRS
        )
    }

    /// The noise of every measured metric, one row each.
    fn render_metrics(&self, tol: f64) -> String {
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}%"));
        let mut s = format!(
            "{} noise by metric ({} tolerance: MDEs and pairs needed on the 80% bound; \
             within: one trial's sd from its window's fluctuation, between: the rest):\n  \
             {:<26} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>7}\n",
            self.engine,
            format_args!("{tol:.1}%"),
            "metric",
            "CV/trial",
            "pair sd",
            "within",
            "between",
            "MDE@3",
            "MDE@10",
            "needs"
        );
        for m in &self.metrics {
            let _ = writeln!(
                s,
                "  {:<26} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>7}",
                m.metric.name(),
                pct(m.cv_pct),
                pct(m.pair_log_ratio_sd.map(|v| 100.0 * v)),
                pct(m.split.as_ref().map(|x| x.within_pct)),
                pct(m.split.as_ref().map(|x| x.between_pct)),
                pct(m.mde_pct_3_pairs),
                pct(m.mde_pct_10_pairs),
                match (m.pairs_needed, m.pair_log_ratio_sd) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(_)) => format!(">{MAX_PAIRS}"),
                    // No estimate of the noise, so no count (">200" would claim one).
                    (None, None) => "-".to_string(),
                }
            );
        }
        if self.metrics.iter().any(|m| m.split.is_none()) {
            s += "  within/between \"-\": no per-second series (p99 latency, the multitest \
                  driver) or a window under three 10 s batches (30 s)\n";
        }
        if self
            .metrics
            .iter()
            .any(|m| m.metric == Metric::TxnLatencyP99)
        {
            s += "  txn_latency_p99: mako's, once per trial from 1 transaction in --sampling \
                  (1000): a short run's few samples can be one value (run.log says so), and \
                  then its noise looks lower than it is\n";
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

    /// The calibration of `trials` (one engine, a 2% tolerance, TPS gating, no sizing).
    fn calibrate(trials: &[crate::results::trial::TrialRecord]) -> Calibration {
        Calibration::new(
            &Sample::of_trials(trials),
            &[Engine::Redwood],
            2.0,
            MetricSet::TPS,
            None,
        )
    }

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
        let q = &calibrate(&quiet).engines[0];
        let n = &calibrate(&noisy).engines[0];
        assert_eq!((q.pairs, n.pairs), (4, 4));
        let (qn, nn) = (
            q.pairs_needed.unwrap(),
            n.pairs_needed.unwrap_or(usize::MAX),
        );
        assert!(qn < nn, "{qn} {nn}");
        assert!(qn <= 3, "{qn}");
        // Planned on the 80% upper bound of the noise, not on the estimate itself.
        let upper = n.pair_log_ratio_sd_upper80.unwrap();
        let on_estimate = stats::pairs_needed(n.pair_log_ratio_sd.unwrap(), 2.0, 1000);
        assert_eq!(n.pairs_needed, stats::pairs_needed(upper, 2.0, MAX_PAIRS));
        // The noisy host: 213 pairs on the estimate (190 were the blocks ignored), more than 200 on
        // the bound.
        assert_eq!(on_estimate, Some(213));
        assert_eq!(n.pairs_needed, None);
        // The MDE table falls with more pairs.
        let mdes: Vec<f64> = n.mde_pct_by_pairs.iter().map(|(_, m)| *m).collect();
        assert!(mdes.windows(2).all(|w| w[0] > w[1]), "{mdes:?}");
        let text = calibrate(&quiet).render();
        assert!(text.contains(&format!("needs --trials {qn}")), "{text}");
    }

    /// Every role's CPU per transaction moves with the host's speed; the storage/client
    /// ratio cancels it, and calibration shows which metric is quieter.
    #[test]
    fn calibration_reports_each_measured_metric_and_the_ratio_cancels_host_speed() {
        use crate::results::trial::{CpuRole, RoleCpu};
        let tps_a = [1000.0, 1080.0, 930.0, 1050.0];
        let tps_b = [1060.0, 990.0, 1010.0, 940.0];
        let mut trials = interleaved(&tps_a, &tps_b);
        for t in &mut trials {
            // Fixed cores: a slower trial used more CPU per transaction, in every role.
            t.cpu = Some(RoleCpu {
                window_s: 60.0,
                cores: [(CpuRole::Storage, 0.5), (CpuRole::Client, 0.6)].into(),
                per_second: Default::default(),
                instructions_per_s: Default::default(),
                instructions_unavailable: None,
            });
        }
        let c = calibrate(&trials);
        let e = &c.engines[0];
        let of = |m: Metric| e.metrics.iter().find(|x| x.metric == m).unwrap();
        assert_eq!(e.metrics[0].metric, Metric::Tps);
        assert_eq!(of(Metric::Tps).pair_log_ratio_sd, e.pair_log_ratio_sd);
        let storage = of(Metric::CpuPerTxn(CpuRole::Storage));
        let ratio = of(Metric::StorageCpuRatio);
        assert_eq!(storage.pairs, 4);
        // CPU per transaction is as noisy as TPS here; the ratio is not noisy at all.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
        assert!(close(
            storage.pair_log_ratio_sd.unwrap(),
            e.pair_log_ratio_sd.unwrap()
        ));
        assert!(ratio.pair_log_ratio_sd.unwrap() < 1e-12, "{ratio:?}");
        assert!(e.metrics.iter().all(|m| m.metric != Metric::TxnLatencyP99));
        let text = c.render();
        assert!(text.contains("storage_to_client_cpu"), "{text}");
    }

    /// A host whose speed moves every trial's TPS one for one: the probe, timed around
    /// each trial, explains the pairs' noise, and the calibration shows what is left.
    #[test]
    fn the_pair_sd_left_once_the_host_speed_is_removed_is_shown() {
        use crate::results::trial::HostSpeed;
        let speed = [
            1.00, 1.08, 0.93, 1.05, 0.97, 1.02, 0.95, 1.06, 0.99, 1.03, 0.96, 1.04,
        ];
        let own = [1.0, 1.003, 0.998, 1.001, 1.002, 0.999];
        let tps = |i: usize| 1000.0 * speed[i] * own[i / 2];
        let a: Vec<f64> = (0..6).map(|i| tps(2 * i)).collect();
        let b: Vec<f64> = (0..6).map(|i| tps(2 * i + 1)).collect();
        let mut trials = interleaved(&a, &b);
        let plain = calibrate(&trials);
        assert_eq!(plain.engines[0].metrics[0].host_adjusted, None);
        assert!(!plain.render().contains("host's speed removed"));
        for t in &mut trials {
            // Pair r: the baseline ran at speed[2r], the experiment at speed[2r + 1].
            let r = t.repetition as usize - 1;
            let i = 2 * r + usize::from(t.arm == Arm::Experiment);
            t.host = Some(HostSpeed {
                probe_rounds: 1,
                before_s: 1.0 / speed[i],
                after_s: 1.0 / speed[i],
                steal_pct: None,
                cpu_mhz: None,
            });
        }
        let c = calibrate(&trials);
        let tps_noise = &c.engines[0].metrics[0];
        let h = tps_noise.host_adjusted.as_ref().unwrap();
        let sd = tps_noise.pair_log_ratio_sd.unwrap();
        assert!(sd > 0.02, "{sd}");
        assert!(h.pair_log_ratio_sd < sd / 5.0, "{sd} {h:?}");
        assert!((h.slope - 1.0).abs() < 0.2, "{h:?}");
        assert!(h.slope_p < 0.01, "{h:?}");
        // The plan stays on the plain noise.
        assert_eq!(c.engines[0].pairs_needed, plain.engines[0].pairs_needed);
        assert!(
            c.render().contains("with the host's speed removed:"),
            "{}",
            c.render()
        );
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
        let c = calibrate(&interleaved(&[1000.0], &[1001.0]));
        assert_eq!(c.engines[0].pair_log_ratio_sd, None);
        assert!(c.render().contains("no estimate of the noise"));
        // Without a noise estimate the by-metric table must not say "needs >200" pairs.
        let table = c.engines[0].render_metrics(2.0);
        assert!(!table.contains(">200"), "{table}");
        let tps_row = table
            .lines()
            .find(|l| l.trim_start().starts_with("tps "))
            .unwrap();
        assert!(tps_row.trim_end().ends_with(" -"), "{table}");
    }
}
