//! Judge stage, statistics: the experiment arm against the baseline arm on log TPS. Pure.
//!
//! The unit of replication is one fresh-cluster trial, never mako's per-second samples
//! (they are autocorrelated). Work on the log scale: ratios become differences, and a
//! relative tolerance becomes a fixed margin.
//!
//! - Paired (interleaved A/B pairs): d_i = ln(B_i / A_i), a one-sample t test of the d_i,
//!   t = mean(d) / se, n - 1 degrees of freedom, two-sided p = 2 sf(|t|) (the survival
//!   function keeps p > 0 where 2 (1 - cdf) underflows).
//! - Unpaired (against recorded trials): Welch's t on ln TPS, Welch-Satterthwaite degrees
//!   of freedom: df = (va/na + vb/nb)^2 / ((va/na)^2/(na-1) + (vb/nb)^2/(nb-1)).
//! - Confidence interval: d ± t(1 - alpha/2, df) se, reported as percent, exp(x) - 1.
//! - Minimum detectable effect (MDE) at power 1 - beta ([`Rule`], [`detectable_loss`]): the
//!   true log loss delta that REGRESSION finds with probability 1 - beta, where REGRESSION
//!   is the one-sided test of "no loss" at the level the metric is really tested at (alpha
//!   / 2 alone, alpha / 2 / m first in a Holm family of m) and an estimate beyond the
//!   margin. With d ~ N(-delta, sigma^2) and s = sigma W / sqrt(df), W chi with df degrees
//!   of freedom, independent: power = P(d < min(margin, -c s)) = E_W[Phi(lambda -
//!   max(mu, c W / sqrt(df)))], lambda = delta / sigma, mu = -margin / sigma, c the
//!   test's t quantile (without a margin, the noncentral t's P(T > c), T ~ t(df,
//!   lambda)). A run knows only its estimate se of sigma, low half the time and loosely
//!   with few pairs, and power is not linear in it: the MDE of se itself at the two-sided
//!   5% level had 64% power at 3 pairs and 74% at 7 averaged over runs (45% and 62% with
//!   two gated metrics). So sigma is taken at the [`NOISE_BOUND`] upper confidence bound
//!   of se, se sqrt(df / chi2(1 - NOISE_BOUND; df)): at least 80% power whenever the true
//!   noise is below that bound (in 80% of runs), 88-91% averaged over runs (`judge::tests::
//!   a_change_of_the_printed_mde_is_regression_at_its_power`). (A bound of 57-66%
//!   confidence, by df, makes the average exactly 80%, but promises nothing of one run;
//!   `calibrate` plans on the 80% bound too.) Reported as the smallest
//!   loss, 1 - exp(-delta). (The normal formula with t quantiles, (t(1 - alpha/2) +
//!   t(1 - beta)) se, promises 80% but has 73.1% power at 2 pairs, 76.6% at 3, 78.4% at 4.)
//! - Zero variance (identical ratios, e.g. a deterministic test double) makes se = 0: the
//!   interval is the point, p is 0 or 1, and no t quantile is computed (statrs would get a
//!   0/0 and `inverse_cdf` is only defined inside (0, 1)).
//!
//! Reference values: `xtask/testdata/stats-reference.json`, computed with scipy by
//! `xtask/testdata/stats_reference.py`; the tests agree to 1e-9.

use schemars::JsonSchema;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided significance level of every interval and test: 95% intervals.
pub const ALPHA: f64 = 0.05;
/// Power the MDE is computed for.
pub const POWER: f64 = 0.80;
/// Confidence of the upper bound of the noise every MDE is computed at (`calibrate` plans
/// on the same bound).
pub const NOISE_BOUND: f64 = 0.80;

/// How the two arms were compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// One-sample t on per-pair log ratios.
    Paired,
    /// Welch's unequal-variance t on log TPS.
    Welch,
    /// Today's trials against a record's runs from several days, the host's day-to-day
    /// variance in the error ([`between_days`]).
    BetweenDays,
    /// Today's trials against one recorded run, the trials of each run allowed to move
    /// together ([`two_runs`]).
    TwoRuns,
}

/// Experiment vs baseline on the log scale, with the numbers a reader needs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Comparison {
    pub method: Method,
    /// Observations: pairs (paired), trials per arm (Welch), or recorded days and today's
    /// trials (between days).
    pub n_baseline: usize,
    pub n_experiment: usize,
    /// Estimated ln(experiment / baseline).
    pub log_delta: f64,
    /// Standard error of `log_delta`; 0 when every observation agrees.
    pub se: f64,
    /// Degrees of freedom of the t distribution.
    pub df: f64,
    /// exp(log_delta) - 1, percent.
    pub delta_pct: f64,
    /// Lower bound of the (1 - ALPHA) interval of the change, percent.
    pub ci_low_pct: f64,
    /// Upper bound of the (1 - ALPHA) interval of the change, percent.
    pub ci_high_pct: f64,
    /// Two-sided p-value of "no difference".
    pub p_value: f64,
    /// Smallest true loss, percent, that the verdict's REGRESSION rule finds with
    /// probability POWER in runs like this one, the noise at its NOISE_BOUND upper bound
    /// ([`Comparison::with_mde`]); set by the judge, which knows the rule (`None` for a
    /// comparison no verdict is decided on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mde_pct: Option<f64>,
    /// The host-speed covariate removed from the pairs, when it was
    /// (`covariate::adjusted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covariate: Option<Covariate>,
}

fn pct(log: f64) -> f64 {
    100.0 * log.exp_m1()
}

pub(super) fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// ln(b[i] / a[i]) for every pair, or `None` when one is not finite (a value that is not
/// positive, or not a number).
pub(super) fn log_ratios(a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    let v: Vec<f64> = a.iter().zip(b).map(|(a, b)| (b / a).ln()).collect();
    v.iter().all(|x| x.is_finite()).then_some(v)
}

/// Sample variance (n - 1 denominator); needs n >= 2.
fn variance(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64
}

pub(super) fn t_dist(df: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, df).expect("df > 0 is checked by the callers")
}

/// Paired comparison of `baseline[i]` and `experiment[i]` (TPS, positive). `None` with
/// fewer than two pairs: one pair carries no estimate of the noise.
pub fn paired(baseline: &[f64], experiment: &[f64]) -> Option<Comparison> {
    assert_eq!(baseline.len(), experiment.len(), "pairs come in twos");
    let d = log_ratios(baseline, experiment)?;
    let n = d.len();
    if n < 2 {
        return None;
    }
    let se = (variance(&d) / n as f64).sqrt();
    let df = (n - 1) as f64;
    // Two-sided p from the survival function, 2 sf(|t|): statrs' t test computes
    // 2 (1 - cdf), which underflows to 0 below about 1e-16.
    let p = if se > 0.0 {
        2.0 * t_dist(df).sf((mean(&d) / se).abs())
    } else {
        degenerate_p(mean(&d))
    };
    Some(finish(Method::Paired, n, n, mean(&d), se, df, p))
}

/// The paired comparison of deterministic counts (the simulation driver's instructions
/// per transaction, one pair per seed): the ratio of the arms' means, mean(experiment) /
/// mean(baseline) = 1 + mean(d) / mean(baseline) with d the pairs' differences, its standard
/// error se(mean d) / mean(baseline) (the delta method; the baseline mean's own spread adds
/// a term of order change^2, negligible for the changes a gate decides), on the log scale.
/// Why not the mean of per-pair log ratios ([`paired`]): a seed's work per transaction
/// differs from another's by up to 60% (FDB 8.0's simulator, how many reads reach the
/// storage engine), while a change's cost per transaction is the same in every seed; the
/// per-pair ratios then scatter with the base, and the differences do not. `None` with
/// fewer than 2 pairs, or values that are not finite and positive.
pub fn paired_counts(baseline: &[f64], experiment: &[f64]) -> Option<Comparison> {
    assert_eq!(baseline.len(), experiment.len(), "pairs come in twos");
    let n = baseline.len();
    let positive = |v: &[f64]| v.iter().all(|x| x.is_finite() && *x > 0.0);
    if n < 2 || !positive(baseline) || !positive(experiment) {
        return None;
    }
    let d: Vec<f64> = baseline
        .iter()
        .zip(experiment)
        .map(|(a, b)| b - a)
        .collect();
    let base = mean(baseline);
    let ratio = 1.0 + mean(&d) / base;
    if !(ratio.is_finite() && ratio > 0.0) {
        return None;
    }
    let log_delta = ratio.ln();
    let se = (variance(&d) / n as f64).sqrt() / base / ratio;
    let df = (n - 1) as f64;
    let p = if se > 0.0 {
        2.0 * t_dist(df).sf((log_delta / se).abs())
    } else {
        degenerate_p(log_delta)
    };
    Some(finish(Method::Paired, n, n, log_delta, se, df, p))
}

/// The largest correlation an AR(1) host (any coefficient phi, plus any independent noise
/// per trial) puts between the two pairs of one balanced block: the pairs' log ratios are
/// x2 - x1 and x3 - x4 of four trials in a row (A B B A, or their negatives for B A A B), whose
/// covariance phi (1 - phi)^2 sigma^2 over the variance 2 (1 - phi) sigma^2 of each gives
/// phi (1 - phi) / 2, at most 1/8 (phi = 1/2). Used to plan (the MDE of n pairs); a run is
/// judged on its own order ([`paired_in_order`]).
pub const BLOCK_CORRELATION: f64 = 0.125;

/// AR(1) coefficients [`paired_in_order`] takes the worst of: 0, 0.05, ..., 0.95.
const PHI_GRID: usize = 20;

/// [`paired`] for pairs whose trials ran at the positions `order[i]` = (baseline trial,
/// experiment trial) of the run order (trial indices). On a host whose level drifts as an
/// AR(1) process, pairs close in time have correlated log ratios (the two pairs
/// of a balanced block A B B A have correlation phi (1 - phi) / 2, and neighbouring blocks
/// plus or minus that, by their orientation), which a paired t test ignores: at a true loss
/// equal to the margin it called MEASURED 3.3% of the time at 10 pairs (phi 0.5) instead of
/// 2.5%. Given the order, the covariance matrix C of the log ratios is known up to phi
/// (cov(x_a - x_b, x_c - x_d) = c(a - c) - c(a - d) - c(b - c) + c(b - d), c(k) = phi^|k|),
/// and so are the mean's true variance (S / n^2, S the sum of C) and the sample variance's
/// expectation (tr(A) / (n - 1), A = (I - J / n) C) and degrees of freedom (Satterthwaite:
/// tr(A)^2 / tr(A^2)). The standard error is multiplied by sqrt((n - 1) (S / n) / tr(A)) and
/// the degrees of freedom are Satterthwaite's, at the phi in [0, 0.95] that widens the
/// interval most (white noise per trial only brings both nearer the i.i.d. values).
pub fn paired_in_order(
    baseline: &[f64],
    experiment: &[f64],
    order: &[(u64, u64)],
) -> Option<Comparison> {
    let c = paired(baseline, experiment)?;
    if c.se == 0.0 {
        return Some(c);
    }
    let (factor, df) = order_factor(order);
    if factor <= 1.0 && df >= c.df {
        return Some(c);
    }
    let se = c.se * factor;
    let p = 2.0 * t_dist(df).sf((c.log_delta / se).abs());
    Some(finish(
        Method::Paired,
        c.n_baseline,
        c.n_experiment,
        c.log_delta,
        se,
        df,
        p,
    ))
}

/// Whether a calibration's per-pair noise (`sd`, from `m` pairs) is consistent with the
/// pairs of `run`, their plain comparison ([`paired`]: se x sqrt(n) is their sd, n - 1
/// degrees of freedom): the calibration measured some noise (sd > 0), and the run's
/// variance is not significantly larger than the calibration's (one-sided F test at
/// [`NOISE_F_LEVEL`]). `Ok`: the F test's p. Consistent is not the same as shown equal: with
/// 2 to 6 degrees of freedom of its own a run passes this test against a calibration of a
/// day half as noisy most of the time, which is why the judge does not pool the two
/// (`judge::paired_with_prior`); a failure does show a host noisier than calibrated.
pub fn noise_agrees(run: &Comparison, sd: f64, m: usize) -> Result<f64, String> {
    use statrs::distribution::FisherSnedecor;
    if !(sd.is_finite() && sd > 0.0) {
        return Err(format!(
            "the calibration's pairs show no noise (sd {:.2}%), which no host has",
            100.0 * sd
        ));
    }
    let n = run.n_baseline as f64;
    let run_var = run.se * run.se * n;
    if m < 2 || run.n_baseline < 2 {
        return Err("too few pairs to compare the noise".into());
    }
    let f = run_var / (sd * sd);
    let p = FisherSnedecor::new(n - 1.0, (m - 1) as f64).map_or(1.0, |d| d.sf(f));
    if p < NOISE_F_LEVEL {
        return Err(format!(
            "this run's pairs vary far more (sd {:.2}%) than the calibration's ({:.2}%; F test \
             p={p:.4}), so the host is noisier than when it was calibrated: calibrate it again \
             (cargo xtask calibrate) before sizing runs from it",
            100.0 * run_var.sqrt(),
            100.0 * sd
        ));
    }
    Ok(p)
}

/// Level of [`noise_agrees`]' F test.
pub const NOISE_F_LEVEL: f64 = 0.01;

/// The standard-error factor and degrees of freedom for pairs at positions `order` on the
/// AR(1) host that widens the interval most ([`paired_in_order`]); (1, n - 1) for i.i.d.
/// trials, which phi = 0 is.
pub fn order_factor(order: &[(u64, u64)]) -> (f64, f64) {
    let n = order.len();
    let nf = n as f64;
    let iid = (1.0, nf - 1.0);
    if n < 2 {
        return iid;
    }
    let width = |(factor, df): (f64, f64)| factor * t_dist(df).inverse_cdf(1.0 - ALPHA / 2.0);
    (1..PHI_GRID)
        .filter_map(|i| {
            let phi = i as f64 / PHI_GRID as f64;
            let c = |a: u64, b: u64| phi.powi(a.abs_diff(b).min(i32::MAX as u64) as i32);
            // d_i = x_experiment - x_baseline.
            let cov = |(a1, b1): (u64, u64), (a2, b2): (u64, u64)| {
                c(b1, b2) - c(b1, a2) - c(a1, b2) + c(a1, a2)
            };
            let m: Vec<Vec<f64>> = order
                .iter()
                .map(|&p| order.iter().map(|&q| cov(p, q)).collect())
                .collect();
            let (sum, trace, trace_sq) = centred_moments(&m);
            if trace <= 0.0 || trace_sq <= 0.0 {
                return None;
            }
            let factor = ((nf - 1.0) * (sum / nf) / trace).sqrt();
            let df = (trace * trace / trace_sq).clamp(1.0, nf - 1.0);
            Some((factor.max(1.0), df))
        })
        .fold(
            iid,
            |worst, x| if width(x) > width(worst) { x } else { worst },
        )
}

/// For a covariance matrix C of n observations: (S, tr(A), tr(A^2)), S the sum of C's
/// entries (n^2 times the mean's variance), A = (I - J/n) C (tr(A) the sum of squares'
/// expectation, 2 tr(A^2) its variance for normal observations).
fn centred_moments(c: &[Vec<f64>]) -> (f64, f64, f64) {
    let n = c.len();
    let col_mean: Vec<f64> = (0..n)
        .map(|j| c.iter().map(|r| r[j]).sum::<f64>() / n as f64)
        .collect();
    // A = (I - J/n) C: each column less its mean.
    let a: Vec<Vec<f64>> = c
        .iter()
        .map(|r| r.iter().zip(&col_mean).map(|(v, mu)| v - mu).collect())
        .collect();
    let sum: f64 = c.iter().flatten().sum();
    let trace: f64 = (0..n).map(|i| a[i][i]).sum();
    let trace_sq: f64 = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| a[i][j] * a[j][i])
        .sum();
    (sum, trace, trace_sq)
}

/// Today's trials (`today`: position in today's run order, TPS) against the trials of one
/// recorded run (`record`, TPS, in run order) on log TPS, for a host whose level drifts as
/// an AR(1) process within a run and whose runs are far apart. The trials of one run
/// move together, so their spread says little of how far two runs' levels differ (on a
/// 2-vCPU VM, phi 0.77: a pooled t test called two runs of one build different in 27-32%
/// of cases at 95%). With correlations c(k) = phi^|k| in each run (the record's trials
/// taken as consecutive, the most correlated they can be), the difference of the means
/// has variance sigma^2 (S_r / n_r^2 + S_t / n_t^2), the runs' sums of squares have
/// expectation sigma^2 (tr(A_r) + tr(A_t)) ([`centred_moments`]), which estimates
/// sigma^2, and Satterthwaite's degrees of freedom; the interval is the widest over phi in
/// [0, 0.95] (phi 0 is the pooled two-sample t test). `None` unless both have 2 trials,
/// all positive.
pub fn two_runs(record: &[f64], today: &[(u64, f64)]) -> Option<Comparison> {
    let lr: Vec<f64> = record.iter().map(|x| x.ln()).collect();
    let lt: Vec<f64> = today.iter().map(|(_, x)| x.ln()).collect();
    let (nr, nt) = (lr.len(), lt.len());
    if nr < 2 || nt < 2 || lr.iter().chain(&lt).any(|x| !x.is_finite()) {
        return None;
    }
    let squares = |x: &[f64]| variance(x) * (x.len() - 1) as f64;
    let ss = squares(&lr) + squares(&lt);
    let d = mean(&lt) - mean(&lr);
    let positions: [Vec<u64>; 2] = [
        (0..nr as u64).collect(),
        today.iter().map(|(p, _)| *p).collect(),
    ];
    let at = |phi: f64| -> Option<(f64, f64)> {
        let [r, t] = positions.each_ref().map(|pos| {
            let c = |a: u64, b: u64| phi.powi(a.abs_diff(b).min(i32::MAX as u64) as i32);
            let m: Vec<Vec<f64>> = pos
                .iter()
                .map(|&a| pos.iter().map(|&b| c(a, b)).collect())
                .collect();
            centred_moments(&m)
        });
        let (trace, trace_sq) = (r.1 + t.1, r.2 + t.2);
        if trace <= 0.0 || trace_sq <= 0.0 {
            return None;
        }
        let var = ss / trace * (r.0 / (nr * nr) as f64 + t.0 / (nt * nt) as f64);
        let df = (trace * trace / trace_sq).clamp(1.0, (nr + nt - 2) as f64);
        Some((var.sqrt(), df))
    };
    let width = |(se, df): (f64, f64)| se * t_dist(df).inverse_cdf(1.0 - ALPHA / 2.0);
    let (se, df) = (0..PHI_GRID)
        .filter_map(|i| at(i as f64 / PHI_GRID as f64))
        .max_by(|x, y| width(*x).total_cmp(&width(*y)))?;
    let p = if se > 0.0 {
        2.0 * t_dist(df).sf((d / se).abs())
    } else {
        degenerate_p(d)
    };
    Some(finish(Method::TwoRuns, nr, nt, d, se, df, p))
}

/// What the standard error of `n` pairs, `shared_blocks` of whose blocks have both their
/// pairs, is multiplied by for [`BLOCK_CORRELATION`]: sqrt(D (n - 1) / (n - D)),
/// D = 1 + 2 r B / n, the sum of the correlations over n being D, r = [`BLOCK_CORRELATION`]
/// for the two pairs of a block (neighbouring blocks' correlations cancel on average over
/// the plan's random orientations); 1 without shared blocks.
pub fn block_factor(n: usize, shared_blocks: usize) -> f64 {
    let b = shared_blocks.min(n / 2);
    if b == 0 {
        return 1.0;
    }
    let n = n as f64;
    let d = 1.0 + 2.0 * BLOCK_CORRELATION * b as f64 / n;
    (d * (n - 1.0) / (n - d)).sqrt()
}

/// Welch's comparison of two independent samples of TPS (for trials judged against
/// recorded baseline trials, which cannot be paired). `None` unless both arms have at
/// least two trials.
pub fn welch(baseline: &[f64], experiment: &[f64]) -> Option<Comparison> {
    let (la, lb): (Vec<f64>, Vec<f64>) = (
        baseline.iter().map(|x| x.ln()).collect(),
        experiment.iter().map(|x| x.ln()).collect(),
    );
    let (na, nb) = (la.len(), lb.len());
    if na < 2 || nb < 2 || la.iter().chain(&lb).any(|x| !x.is_finite()) {
        return None;
    }
    let (qa, qb) = (variance(&la) / na as f64, variance(&lb) / nb as f64);
    let se = (qa + qb).sqrt();
    let d = mean(&lb) - mean(&la);
    let (df, p) = if se > 0.0 {
        let df = (qa + qb).powi(2) / (qa.powi(2) / (na - 1) as f64 + qb.powi(2) / (nb - 1) as f64);
        (df, 2.0 * t_dist(df).sf((d / se).abs()))
    } else {
        ((na + nb - 2) as f64, degenerate_p(d))
    };
    Some(finish(Method::Welch, na, nb, d, se, df, p))
}

/// Today's trials (`today`, TPS) against a record's runs from `runs.len()` = k >= 2 days
/// (each at least 2 trials, TPS), on log TPS, with the host's day-to-day variance in the
/// error. Model: ln TPS = mu + day + trial noise. The record's day means m_i
/// vary by s_m^2 (k - 1 degrees of freedom), which estimates sigma_day^2 + sigma^2 / n_i;
/// today's mean carries one more day and sigma^2 / n_0. So var(today's mean - mean of the
/// m_i) = sigma_day^2 (1 + 1/k) + sigma^2 (1/n_0 + 1/(k n_h)), estimated by the sum of
/// s_m^2 (1 + 1/k) and s_w^2 (1/n_0 - 1/n_h) (n_h the harmonic mean of the runs' sizes, s_w^2 the within-day
/// variance pooled over every run and today's), and never below s_w^2 (1/n_0 + 1/(k n_h)),
/// the variance with no day effect at all. Degrees of freedom k - 1: the day means are the
/// scarce part, so 2 days give a wide interval and a large MDE, as they must. `None` with
/// fewer than 2 runs, a run or today with fewer than 2 trials, or a TPS that is not
/// positive.
pub fn between_days(runs: &[Vec<f64>], today: &[f64]) -> Option<Comparison> {
    let k = runs.len();
    let logs = |v: &[f64]| -> Option<Vec<f64>> {
        let l: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        (l.len() >= 2 && l.iter().all(|x| x.is_finite())).then_some(l)
    };
    let days: Vec<Vec<f64>> = runs.iter().map(|r| logs(r)).collect::<Option<_>>()?;
    let now = logs(today)?;
    if k < 2 {
        return None;
    }
    let means: Vec<f64> = days.iter().map(|d| mean(d)).collect();
    let s_m2 = variance(&means);
    let (ss, df_w) = days
        .iter()
        .chain(std::iter::once(&now))
        .fold((0.0, 0.0), |(ss, df), d| {
            (
                ss + variance(d) * (d.len() - 1) as f64,
                df + (d.len() - 1) as f64,
            )
        });
    let s_w2 = ss / df_w;
    let (kf, n0) = (k as f64, now.len() as f64);
    let n_h = kf / days.iter().map(|d| 1.0 / d.len() as f64).sum::<f64>();
    let floor = s_w2 * (1.0 / n0 + 1.0 / (kf * n_h));
    let var = (s_m2 * (1.0 + 1.0 / kf) + s_w2 * (1.0 / n0 - 1.0 / n_h)).max(floor);
    let se = var.sqrt();
    let d = mean(&now) - mean(&means);
    let df = (k - 1) as f64;
    let p = if se > 0.0 {
        2.0 * t_dist(df).sf((d / se).abs())
    } else {
        degenerate_p(d)
    };
    Some(finish(Method::BetweenDays, k, now.len(), d, se, df, p))
}

/// p of "no difference" when every observation agrees exactly.
fn degenerate_p(d: f64) -> f64 {
    if d == 0.0 {
        1.0
    } else {
        0.0
    }
}

pub(super) fn finish(
    method: Method,
    na: usize,
    nb: usize,
    d: f64,
    se: f64,
    df: f64,
    p: f64,
) -> Comparison {
    let half = if se > 0.0 {
        t_dist(df).inverse_cdf(1.0 - ALPHA / 2.0) * se
    } else {
        0.0
    };
    Comparison {
        method,
        n_baseline: na,
        n_experiment: nb,
        log_delta: d,
        se,
        df,
        delta_pct: pct(d),
        ci_low_pct: pct(d - half),
        ci_high_pct: pct(d + half),
        p_value: p,
        mde_pct: None,
        covariate: None,
    }
}

/// What REGRESSION takes of a comparison, for its MDE: a one-sided test of "no loss" at
/// `level`, and an estimated log change below `margin`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// One-sided level: ALPHA / 2 for one gated metric with a fixed number of trials,
    /// ALPHA / 2 / m for the first of a Holm family of m (the level a loss must reach
    /// whatever the other members show), a look's nominal level for a sequential test.
    pub level: f64,
    /// ln(1 - tolerance), negative; 0 for the test alone (its rejection is below 0).
    pub margin: f64,
}

impl Rule {
    /// The rule of one of `family` gated metrics, a fixed number of trials, a tolerance
    /// of `tolerance_pct` percent.
    pub fn holm(tolerance_pct: f64, family: usize) -> Rule {
        Rule {
            level: ALPHA / 2.0 / family.max(1) as f64,
            margin: (1.0 - tolerance_pct / 100.0).ln(),
        }
    }
}

impl Comparison {
    /// The comparison with its MDE for `rule` (`mde_pct`): [`detectable_loss`] at the
    /// NOISE_BOUND upper bound of its standard error; `None` when the standard error is 0
    /// (every pair agrees exactly: no estimate of the noise).
    pub fn with_mde(self, rule: Rule) -> Comparison {
        let sigma = self.se * upper_bound_factor(self.df);
        // Trials that agree exactly give no estimate of the noise, so no MDE either.
        let loss = (sigma > 0.0).then(|| detectable_loss(sigma, self.df, rule));
        Comparison {
            mde_pct: loss.map(|l| -pct(-l)),
            ..self
        }
    }

    /// The same comparison of 1/x: for a lower-is-better metric (latency) judged by the
    /// higher-is-better rule. Log delta and interval change sign; p, se, df, MDE stay.
    pub fn inverted(&self) -> Comparison {
        let d = -self.log_delta;
        let half = (self.ci_high_pct / 100.0).ln_1p() - self.log_delta;
        Comparison {
            log_delta: d,
            delta_pct: pct(d),
            ci_low_pct: pct(d - half),
            ci_high_pct: pct(d + half),
            ..self.clone()
        }
    }

    /// One-sided p of "the experiment is worse than `margin` (a log ratio, e.g.
    /// ln(0.98))": small when the data rule out a loss beyond the tolerance.
    pub fn p_not_worse_than(&self, margin: f64) -> f64 {
        self.one_sided_above(margin)
    }

    /// One-sided p of "the experiment is not slower" (H0: true log delta >= 0): small
    /// when the data show a loss.
    pub fn p_slower(&self) -> f64 {
        if self.se == 0.0 {
            return if self.log_delta < 0.0 { 0.0 } else { 1.0 };
        }
        t_dist(self.df).cdf(self.log_delta / self.se)
    }

    /// P(T > (d - x) / se): the one-sided p of H0 "true log delta <= x".
    fn one_sided_above(&self, x: f64) -> f64 {
        if self.se == 0.0 {
            return if self.log_delta > x { 0.0 } else { 1.0 };
        }
        t_dist(self.df).sf((self.log_delta - x) / self.se)
    }
}

/// Holm's step-down adjustment of p-values for a family of tests (Holm 1979): sort
/// ascending, p_(i) * (m - i + 1), running maximum, capped at 1. Same order as `p`.
pub fn holm(p: &[f64]) -> Vec<f64> {
    holm_by(p, |_, left| left as f64)
}

/// Holm's step-down with tests of their own kind: `factor(i, left)` is what test `i`'s p
/// is multiplied by when it is judged at level alpha / `left` (`left` tests still open),
/// so that "adjusted p < alpha" is that test's rejection at alpha / `left`; `left` for
/// plain p-values, more for a look of a sequential test. Tests are taken in the order
/// of their adjusted p at the whole family's level, with a running maximum, capped at 1.
/// Same order as `p`. Valid when each test's rejection region grows with its level.
pub fn holm_by(p: &[f64], factor: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    let m = p.len();
    let first: Vec<f64> = (0..m).map(|i| p[i] * factor(i, m)).collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| first[a].total_cmp(&first[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max((p[i] * factor(i, m - rank)).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Pairs a paired comparison needs for a build that changes nothing to be MEASURED with
/// probability POWER, given the standard deviation `sd_log` of per-pair log ratios: its
/// one-sided test at ALPHA / 2 must find the distance to the margin, ln(1 - tolerance), a
/// change of exactly that size; `None` beyond `max`.
pub fn pairs_needed(sd_log: f64, tolerance_pct: f64, max: usize) -> Option<usize> {
    let test = Rule {
        level: ALPHA / 2.0,
        margin: 0.0,
    };
    let target = -(1.0 - tolerance_pct / 100.0).ln();
    (2..=max).find(|&n| mde_log(sd_log, n, test) <= target)
}

/// MDE on the log scale for `rule` of a paired comparison with `n` pairs run in the plan's
/// balanced blocks (n / 2 of them shared, [`block_factor`]) and per-pair sd `sd_log` (the
/// noise a plan takes as true: `calibrate` passes its upper bound).
pub fn mde_log(sd_log: f64, n: usize, rule: Rule) -> f64 {
    let se = block_factor(n, n / 2) * sd_log / (n as f64).sqrt();
    if se > 0.0 {
        detectable_loss(se, (n - 1) as f64, rule)
    } else {
        0.0
    }
}

/// What a standard error estimated with `df` degrees of freedom is multiplied by for its
/// NOISE_BOUND upper confidence bound: sqrt(df / chi2(1 - NOISE_BOUND; df)).
pub fn upper_bound_factor(df: f64) -> f64 {
    use statrs::distribution::ChiSquared;
    ChiSquared::new(df)
        .map(|chi2| chi2.inverse_cdf(1.0 - NOISE_BOUND))
        .ok()
        .filter(|q| *q > 0.0)
        .map_or(1.0, |q| (df / q).sqrt())
}

/// The true log loss (positive) that `rule`'s REGRESSION finds with probability POWER when
/// the estimate's true standard error is `se` (> 0) and its estimate has `df` degrees of
/// freedom: lambda se with [`RegressionPower`] = POWER, to 1e-10 in lambda (its
/// quadrature of 1000 intervals gives the power to 1e-9 of the 4000 that agree with scipy:
/// tests). Without the margin lambda depends only on (df, level) and is memoized; the
/// margin changes it only when the estimate may fall short of it, which is checked before
/// solving again.
pub fn detectable_loss(se: f64, df: f64, rule: Rule) -> f64 {
    use std::{
        collections::HashMap,
        sync::{Mutex, OnceLock},
    };
    static MEMO: OnceLock<Mutex<HashMap<(u64, u64), f64>>> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    let c = t_dist(df).inverse_cdf(1.0 - rule.level);
    let key = (df.to_bits(), rule.level.to_bits());
    let cached = memo.lock().expect("not poisoned").get(&key).copied();
    let plain = cached.unwrap_or_else(|| {
        let lambda = RegressionPower::new(c, df, 0.0).solve(c);
        memo.lock().expect("not poisoned").insert(key, lambda);
        lambda
    });
    let mu = (-rule.margin / se).max(0.0);
    // The margin lowers the power at `plain` by at most P(c W / sqrt(df) < mu) Phi(mu -
    // lambda): only the estimates that fall short of it can change their verdict.
    let short = chi_squared_cdf(df * (mu / c).powi(2), df) * normal_cdf(mu - plain);
    let lambda = if short < 1e-12 {
        plain
    } else {
        // Both bounds of the power (the test's alone, and the margin's alone) are POWER
        // here or further right, so the root is not to the left.
        let from = plain.max(mu + normal_quantile(POWER));
        RegressionPower::new(c, df, mu).solve(from)
    };
    lambda * se
}

/// P(REGRESSION) as a function of the true log loss lambda in standard errors, when the
/// test's critical value is `c` (t, `df` degrees of freedom) and the margin lies `mu` >= 0
/// standard errors below 0: E_W[Phi(lambda - max(mu, c W / sqrt(df)))] over W chi with `df`
/// degrees of freedom. Below w* = mu sqrt(df) / c the margin is the bar, a constant:
/// Phi(lambda - mu) P(W < w*); above it the Simpson nodes of [`ChiGrid`], computed once
/// for every lambda tried.
struct RegressionPower {
    c: f64,
    df: f64,
    mu: f64,
    /// P(W < w*).
    below: f64,
    grid: ChiGrid,
}

impl RegressionPower {
    fn new(c: f64, df: f64, mu: f64) -> RegressionPower {
        let w_star = mu * df.sqrt() / c;
        RegressionPower {
            c,
            df,
            mu,
            below: chi_squared_cdf(w_star * w_star, df),
            grid: ChiGrid::new(df, w_star, 1000),
        }
    }

    /// The power at `lambda` and its derivative in lambda.
    fn at(&self, lambda: f64) -> (f64, f64) {
        let pdf = |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let scale = self.c / self.df.sqrt();
        let (p, dp) = self
            .grid
            .nodes
            .iter()
            .fold((0.0, 0.0), |(p, dp), &(w, weight)| {
                let z = lambda - scale * w;
                (p + weight * normal_cdf(z), dp + weight * pdf(z))
            });
        let z = lambda - self.mu;
        (p + self.below * normal_cdf(z), dp + self.below * pdf(z))
    }

    /// The lambda where the power is POWER, by Newton steps from `from` (the power must be
    /// at most POWER there), kept inside the bracket found so far (halving when a step
    /// leaves it); to 1e-10.
    fn solve(&self, from: f64) -> f64 {
        let (mut low, mut high) = (from, f64::INFINITY);
        let mut x = from;
        for _ in 0..100 {
            let (p, dp) = self.at(x);
            if p < POWER {
                low = x;
            } else {
                high = x;
            }
            let newton = x + (POWER - p) / dp;
            let next = if newton > low && newton < high && dp > 0.0 {
                newton
            } else if high.is_finite() {
                (low + high) / 2.0
            } else {
                x + 1.0
            };
            if (next - x).abs() < 1e-10 {
                return next;
            }
            x = next;
        }
        x
    }
}

/// The nodes of Simpson's rule for E[f(W) 1(W > from)], W chi with `df` degrees of freedom, density
/// w^(df-1) exp(-w^2/2) / (2^(df/2-1) Gamma(df/2)), smooth at 0 for every df >= 1 (V =
/// W^2's own density is not, at df = 1), for `f` bounded and smooth: over [from, sqrt(df) +
/// 12] (past that W's tail holds less than 1e-30), with their weights, density included.
struct ChiGrid {
    /// (w, weight).
    nodes: Vec<(f64, f64)>,
}

impl ChiGrid {
    fn new(df: f64, from: f64, intervals: usize) -> ChiGrid {
        use statrs::function::gamma::ln_gamma;
        let ln_norm = (df / 2.0 - 1.0) * std::f64::consts::LN_2 + ln_gamma(df / 2.0);
        let chi = |w: f64| {
            if w <= 0.0 {
                return if df == 1.0 { (-ln_norm).exp() } else { 0.0 };
            }
            ((df - 1.0) * w.ln() - w * w / 2.0 - ln_norm).exp()
        };
        let top = df.sqrt() + 12.0;
        if from >= top {
            return ChiGrid { nodes: Vec::new() };
        }
        let h = (top - from) / intervals as f64;
        let nodes = (0..=intervals)
            .map(|i| {
                let simpson = match i {
                    0 => 1.0,
                    _ if i == intervals => 1.0,
                    _ if i % 2 == 1 => 4.0,
                    _ => 2.0,
                };
                let w = from + i as f64 * h;
                (w, chi(w) * simpson * h / 3.0)
            })
            .collect();
        ChiGrid { nodes }
    }
}

/// Standard normal cdf.
fn normal_cdf(z: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2)
}

/// Standard normal quantile.
fn normal_quantile(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}

/// P(V <= x) for V chi-square with `df` degrees of freedom (0 for x <= 0).
fn chi_squared_cdf(x: f64, df: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    statrs::function::gamma::gamma_lr(df / 2.0, x / 2.0)
}

/// P(T <= x) for T = (Z + lambda) / sqrt(V / df), Z standard normal, V chi-square with
/// `df` degrees of freedom: E[Phi(x W / sqrt(df) - lambda)] over W = sqrt(V), on 4000
/// intervals; agrees with scipy's `nct` to 1e-9 on the MDE's noncentralities (tests).
#[cfg(test)]
fn noncentral_t_cdf(x: f64, df: f64, lambda: f64) -> f64 {
    let grid = ChiGrid::new(df, 0.0, 4000);
    grid.nodes
        .iter()
        .map(|&(w, weight)| weight * normal_cdf(x * w / df.sqrt() - lambda))
        .sum()
}

/// What the host-speed covariate (`covariate::adjusted`) did to one comparison.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Covariate {
    /// Slope of the pairs' log metric ratios on their log host-speed ratios (1: the metric
    /// moved with the host's speed one for one; negative for a metric that rises when the
    /// host slows, as CPU per transaction does).
    pub slope: f64,
    /// Two-sided p of "the probe explains none of the pairs' variance" (the slope's t test,
    /// n - 2 degrees of freedom).
    pub slope_p: f64,
    /// Standard deviation of the pairs' log ratios before the adjustment, percent (log x 100).
    pub pair_sd_pct: f64,
    /// The same after the adjustment (the regression's residual sd), percent.
    pub adjusted_sd_pct: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_compare_by_their_differences_not_their_scattered_ratios() {
        // Storage server instructions per transaction of two seeds on FDB 8.0's simulator,
        // without and with 5.25 loop iterations per point read: the bases differ by 60%,
        // the change per transaction by 0.4%.
        let base = [563_036_865.0 / 3802.0, 359_853_516.0 / 3944.0];
        let exp = [565_743_191.0 / 3802.0, 362_650_554.0 / 3944.0];
        let c = paired_counts(&base, &exp).unwrap();
        let change = 100.0 * (c.log_delta.exp() - 1.0);
        assert!((change - 0.593).abs() < 0.001, "{c:?}");
        assert!(c.ci_high_pct - c.ci_low_pct < 0.05, "{c:?}");
        // The mean of the per-pair log ratios scatters with the bases: no decision.
        let ratios = paired(&base, &exp).unwrap();
        assert!(ratios.ci_high_pct - ratios.ci_low_pct > 2.0, "{ratios:?}");
        assert!(paired_counts(&base[..1], &exp[..1]).is_none());
        assert!(paired_counts(&[1.0, 0.0], &[1.0, 1.0]).is_none());
        // Equal counts in every pair: no change, and no spread.
        let same = paired_counts(&base, &base).unwrap();
        assert_eq!((same.log_delta, same.se), (0.0, 0.0));
    }
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Case {
        method: String,
        baseline: Vec<f64>,
        experiment: Vec<f64>,
        log_delta: f64,
        se: f64,
        df: f64,
        p_value: f64,
        ci_low_pct: f64,
        ci_high_pct: f64,
        mde_pct: f64,
        p_not_worse_2pct: f64,
        p_slower: f64,
    }

    #[derive(Deserialize)]
    struct Reference {
        cases: Vec<Case>,
        holm: Vec<(Vec<f64>, Vec<f64>)>,
    }

    fn close(what: &str, got: f64, want: f64) {
        assert!(
            (got - want).abs() <= 1e-9,
            "{what}: got {got}, scipy {want}"
        );
    }

    #[test]
    fn agrees_with_scipy_to_1e_9() {
        let r: Reference =
            serde_json::from_str(include_str!("../../testdata/stats-reference.json")).unwrap();
        assert!(r.cases.len() >= 6);
        for c in &r.cases {
            let got = match c.method.as_str() {
                "paired" => paired(&c.baseline, &c.experiment),
                _ => welch(&c.baseline, &c.experiment),
            }
            .unwrap();
            let what =
                |f: &str| format!("{} {:?} vs {:?}: {f}", c.method, c.baseline, c.experiment);
            close(&what("log_delta"), got.log_delta, c.log_delta);
            close(&what("se"), got.se, c.se);
            close(&what("df"), got.df, c.df);
            close(&what("p_value"), got.p_value, c.p_value);
            close(&what("ci_low_pct"), got.ci_low_pct, c.ci_low_pct);
            close(&what("ci_high_pct"), got.ci_high_pct, c.ci_high_pct);
            // scipy's MDE is the two-sided test's at the estimate: a check of the
            // noncentral t integral every MDE is computed with.
            let two_sided = -pct(-two_sided_noncentrality(got.df) * got.se);
            close(&what("mde_pct"), two_sided, c.mde_pct);
            close(
                &what("p_not_worse"),
                got.p_not_worse_than(0.98f64.ln()),
                c.p_not_worse_2pct,
            );
            close(&what("p_slower"), got.p_slower(), c.p_slower);
        }
        for (p, want) in &r.holm {
            for (g, w) in holm(p).iter().zip(want) {
                close("holm", *g, *w);
            }
        }
    }

    #[test]
    fn zero_variance_gives_a_point_interval_and_a_certain_answer() {
        let c = paired(&[1000.0, 1000.0], &[900.0, 900.0]).unwrap();
        assert_eq!((c.se, c.p_value), (0.0, 0.0));
        // No estimate of the noise, so no MDE; with any noise it lies beyond the tolerance.
        assert_eq!(c.clone().with_mde(Rule::holm(2.0, 1)).mde_pct, None);
        let noisy = paired(&[1000.0, 1001.0], &[900.0, 900.0]).unwrap();
        assert!(noisy.with_mde(Rule::holm(2.0, 1)).mde_pct.unwrap() > 2.0);
        close("delta", c.delta_pct, -10.0);
        close("ci", c.ci_low_pct, -10.0);
        assert_eq!(c.p_slower(), 0.0);
        assert_eq!(c.p_not_worse_than(0.98f64.ln()), 1.0);
        let same = paired(&[1000.0, 1000.0], &[1000.0, 1000.0]).unwrap();
        assert_eq!((same.p_value, same.p_slower()), (1.0, 1.0));
        assert_eq!(same.p_not_worse_than(0.98f64.ln()), 0.0);
        assert_eq!(welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap().p_value, 1.0);
    }

    #[test]
    fn inverting_flips_the_change_and_keeps_the_evidence() {
        let c = paired(&[1000.0, 1010.0, 990.0], &[1100.0, 1120.0, 1085.0]).unwrap();
        let i = c.inverted();
        close("log", i.log_delta, -c.log_delta);
        close(
            "low",
            (i.ci_low_pct / 100.0).ln_1p(),
            -(c.ci_high_pct / 100.0).ln_1p(),
        );
        close(
            "high",
            (i.ci_high_pct / 100.0).ln_1p(),
            -(c.ci_low_pct / 100.0).ln_1p(),
        );
        assert_eq!((i.p_value, i.se, i.mde_pct), (c.p_value, c.se, c.mde_pct));
        close("p_slower", i.p_slower(), 1.0 - c.p_slower());
    }

    #[test]
    fn too_few_observations_give_no_comparison() {
        assert!(paired(&[1000.0], &[900.0]).is_none());
        assert!(welch(&[1000.0], &[900.0, 950.0]).is_none());
        assert!(
            paired(&[0.0, 1.0], &[1.0, 1.0]).is_none(),
            "a zero TPS has no log"
        );
    }

    #[test]
    fn pairs_needed_shrink_with_noise_and_grow_with_precision() {
        let five_pct = 0.05;
        let n2 = pairs_needed(five_pct, 2.0, 1000).unwrap();
        let n5 = pairs_needed(five_pct, 5.0, 1000).unwrap();
        assert!(n2 > n5, "{n2} {n5}");
        // The MEASURED test's MDE (one-sided at 2.5%, no margin) really is below the
        // distance to the margin, and one pair fewer is not.
        let test = Rule {
            level: ALPHA / 2.0,
            margin: 0.0,
        };
        assert!(mde_log(five_pct, n2, test) <= -(0.98f64.ln()));
        assert!(mde_log(five_pct, n2 - 1, test) > -(0.98f64.ln()));
        assert_eq!(pairs_needed(five_pct, 2.0, 5), None);
    }

    #[test]
    fn a_very_clear_change_has_a_tiny_p_not_zero() {
        // Ten pairs, a 10% loss, 0.01% scatter: t is about -3000 with 9 df, two-sided
        // p about 1e-31; 2 (1 - cdf) would give exactly 0.
        let a = [1000.0; 10];
        let b: Vec<f64> = (0..10)
            .map(|i| 900.0 * (1.0 + 1e-4 * (i as f64 - 4.5)))
            .collect();
        let c = paired(&a, &b).unwrap();
        assert!(c.p_value > 0.0 && c.p_value < 1e-15, "{c:?}");
        assert!(c.p_slower() > 0.0 && c.p_slower() < 1e-15, "{c:?}");
    }

    #[test]
    fn a_calibration_agrees_with_a_run_unless_the_run_varies_far_more() {
        // Three pairs with log ratios of sd about 1%.
        let run = paired(&[1000.0, 1000.0, 1000.0], &[990.0, 1000.0, 1010.0]).unwrap();
        assert!(noise_agrees(&run, 0.01, 6).is_ok());
        assert!(
            noise_agrees(&run, 0.05, 6).is_ok(),
            "a noisier calibration is conservative"
        );
        let quiet = noise_agrees(&run, 0.0005, 6).unwrap_err();
        assert!(quiet.contains("vary far more"), "{quiet}");
        let none = noise_agrees(&run, 0.0, 6).unwrap_err();
        assert!(none.contains("show no noise"), "{none}");
    }

    #[test]
    fn between_days_puts_the_day_to_day_variance_in_the_error() {
        // Three recorded days (3, 3 and 4 trials) and today's 3 trials; the figures from the
        // formula in the doc, computed independently in Python (t with 2 df in closed form:
        // sf(t) = (1 - t / sqrt(2 + t^2)) / 2).
        let runs = vec![
            vec![1000.0, 1010.0, 990.0],
            vec![950.0, 960.0, 955.0],
            vec![980.0, 985.0, 975.0, 990.0],
        ];
        let today = [1000.0, 1005.0, 995.0];
        let c = between_days(&runs, &today).unwrap();
        assert_eq!(c.method, Method::BetweenDays);
        assert_eq!((c.n_baseline, c.n_experiment, c.df), (3, 3, 2.0));
        close("d", c.log_delta, 0.021244177577338874);
        close("se", c.se, 0.026834786055969614);
        close("p", c.p_value, 0.5115347191791582);
        close("low", c.ci_low_pct, -8.991437264452454);
        close("high", c.ci_high_pct, 14.648981882920179);
        // All trials as one sample (Welch) take the days' spread for trial noise: a far
        // narrower interval, that calls today's +2% significant.
        let w = welch(&runs.concat(), &today).unwrap();
        assert!(w.se < c.se / 2.0 && w.p_value < 0.05, "{w:?}");
        // One day is no estimate of the days' variance.
        assert!(between_days(&runs[..1], &today).is_none());
        assert!(between_days(&runs, &[1000.0]).is_none());
    }

    #[test]
    fn two_runs_allow_for_trials_that_move_together() {
        let record = [1000.0, 1010.0, 990.0, 1005.0];
        let today = [(1, 950.0), (4, 960.0), (5, 945.0)];
        let c = two_runs(&record, &today).unwrap();
        assert_eq!(
            (c.method, c.n_baseline, c.n_experiment),
            (Method::TwoRuns, 4, 3)
        );
        // The pooled two-sample t test is phi = 0: the same change, a narrower interval
        // that calls these runs different.
        let tps: Vec<f64> = today.iter().map(|(_, t)| *t).collect();
        let w = welch(&record, &tps).unwrap();
        assert!((c.log_delta - w.log_delta).abs() < 1e-12);
        assert!(w.ci_high_pct < 0.0, "{w:?}");
        assert!(c.ci_high_pct > 0.0 && c.p_value > 0.05, "{c:?}");
        assert!(two_runs(&record, &today[..1]).is_none());
        assert!(two_runs(&[1000.0], &today).is_none());
    }

    #[test]
    fn the_run_order_widens_the_interval_for_a_drifting_host() {
        // A B B A | B A: pairs at (1, 2), (4, 3), (6, 5); A B A B ... with the same
        // orientation throughout puts every pair's ratio on the same side of the drift.
        let abba = [(1, 2), (4, 3), (6, 5)];
        let (factor, df) = order_factor(&abba);
        eprintln!("ABBA BA: factor {factor}, df {df}");
        assert!(factor > 1.0 && factor < 1.25, "{factor}");
        assert!((1.0..=2.0).contains(&df), "{df}");
        // Far apart in time (other engines' trials between), the pairs are independent.
        let apart = [(1, 2), (1001, 1002), (2001, 2002)];
        assert_eq!(order_factor(&apart), (1.0, 2.0));
        // The same ratios judged in that order have a wider interval and a larger p.
        let (a, b) = ([1000.0, 1010.0, 990.0], [990.0, 1001.0, 975.0]);
        let plain = paired(&a, &b).unwrap();
        let ordered = paired_in_order(&a, &b, &abba).unwrap();
        assert!(ordered.se > plain.se && ordered.p_value > plain.p_value);
        assert_eq!(ordered.log_delta, plain.log_delta);
        assert_eq!(paired_in_order(&a, &b, &apart).unwrap(), plain);
    }

    /// P(|T| > c) for T noncentral t with `df` degrees of freedom and noncentrality
    /// `lambda`.
    fn two_sided_power(c: f64, df: f64, lambda: f64) -> f64 {
        1.0 - noncentral_t_cdf(c, df, lambda) + noncentral_t_cdf(-c, df, lambda)
    }

    /// The noncentrality at which the two-sided t test at ALPHA has power POWER.
    fn two_sided_noncentrality(df: f64) -> f64 {
        let c = t_dist(df).inverse_cdf(1.0 - ALPHA / 2.0);
        // Bisection: the two-sided power rises with lambda.
        let (mut low, mut high) = (0.0, 100.0);
        while high - low > 1e-12 {
            let mid = (low + high) / 2.0;
            if two_sided_power(c, df, mid) < POWER {
                low = mid;
            } else {
                high = mid;
            }
        }
        (low + high) / 2.0
    }

    #[test]
    fn the_noncentral_t_agrees_with_scipy() {
        // The noncentrality with exactly 80% two-sided power at 5%, from scipy:
        // brentq(lambda d: nct.sf(c, df, d) + nct.cdf(-c, df, d) - 0.8), c = t.ppf(0.975, df).
        for (df, scipy) in [
            (1.0, 16.334008869921025),
            (2.0, 5.653489266197125),
            (3.0, 4.255898686515602),
            (5.0, 3.5139027291710914),
            (9.0, 3.1496328864506196),
            (29.0, 2.898742846324863),
        ] {
            let got = two_sided_noncentrality(df);
            assert!((got - scipy).abs() < 1e-6, "df {df}: {got} vs {scipy}");
        }
        // The old formula, t(0.975) + t(0.8), had 76.6% power at 3 pairs (scipy's nct).
        let (df, c) = (2.0, t_dist(2.0).inverse_cdf(0.975));
        let old = c + t_dist(df).inverse_cdf(0.8);
        assert!((two_sided_power(c, df, old) - 0.766_271).abs() < 1e-5);
        // With no change the test rejects at its level.
        assert!((two_sided_power(c, df, 0.0) - ALPHA).abs() < 1e-9);
    }

    /// The MDE is the loss at which REGRESSION (one-sided test, estimate beyond the
    /// margin) comes with probability POWER: checked by drawing the estimate and its
    /// standard error as the formula's model has them (d normal, s a scaled chi with df
    /// degrees of freedom), 200,000 draws per case, seeded (binomial sd 0.09%, 3 sd
    /// allowed). Cases: the first of a Holm family of 2 at 3 pairs, where the test is
    /// the bar, and 19 pairs of a quiet host, where the margin is.
    #[test]
    fn the_mde_has_the_power_it_promises() {
        use rand::SeedableRng;
        use rand_distr::{ChiSquared, Distribution, Normal};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let draws = 200_000;
        for (df, se, rule) in [
            (2.0, 0.033, Rule::holm(2.0, 2)),
            (18.0, 0.0035, Rule::holm(2.0, 1)),
        ] {
            let loss = detectable_loss(se, df, rule);
            let c = t_dist(df).inverse_cdf(1.0 - rule.level);
            let chi2 = ChiSquared::new(df).unwrap();
            let z = Normal::new(-loss, se).unwrap();
            let caught = (0..draws)
                .filter(|_| {
                    let d = z.sample(&mut rng);
                    let s = se * (chi2.sample(&mut rng) / df).sqrt();
                    d < -c * s && d < rule.margin
                })
                .count();
            let power = caught as f64 / draws as f64;
            eprintln!(
                "df {df}, se {se}: MDE {:.3}%, power {power:.4}",
                100.0 * loss
            );
            assert!((power - POWER).abs() < 3.0 * 0.0009, "df {df}: {power}");
        }
        // With a margin far inside the noise, the test alone decides: the noncentral t's
        // one-sided power, which the 1000 intervals of the MDE's quadrature give to 1e-9
        // of the 4000 that agree with scipy.
        for df in [1.0, 2.0, 5.3, 18.0, 60.0] {
            for family in [1, 2] {
                let rule = Rule::holm(2.0, family);
                let c = t_dist(df).inverse_cdf(1.0 - rule.level);
                let lambda = detectable_loss(1.0, df, rule);
                let power = 1.0 - noncentral_t_cdf(c, df, lambda);
                assert!((power - POWER).abs() < 1e-9, "df {df}: {power}");
            }
        }
        let rule = Rule::holm(2.0, 1);
        // The margin is a floor: the MDE of a quiet host is above the tolerance.
        assert!(detectable_loss(1e-4, 9.0, rule) > -rule.margin);
    }
}
