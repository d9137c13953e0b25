//! Judge stage: whether a trial's TPS was still trending within its measurement window (no
//! steady state). A note on the verdict, never a verdict. Pure.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A trend of TPS within the measurement window: a run that had not reached steady state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Drift {
    /// Least-squares change of TPS across the window, percent of the window's mean TPS.
    pub pct: f64,
    /// Two-sided p of "no slope" from the regression's t statistic, with the effective
    /// sample size of autocorrelated (AR(1)) residuals: a flag, never a verdict.
    pub p_value: f64,
}

/// Drift beyond this many percent of TPS across the window, with p below
/// [`DRIFT_P_VALUE`], marks a trial as not steady.
pub const DRIFT_MIN_PCT: f64 = 5.0;
pub const DRIFT_P_VALUE: f64 = 0.01;

impl Drift {
    /// Whether the drift is both large and clear.
    pub fn unsteady(&self) -> bool {
        self.pct.abs() >= DRIFT_MIN_PCT && self.p_value < DRIFT_P_VALUE
    }
}

/// The linear trend of mako's per-second TPS samples (`samples_tps`, one a second from
/// the run's start) after the warmup (the first `warmup_s` samples are dropped); `None`
/// with fewer than 5 samples left.
pub fn drift(samples_tps: &[f64], warmup_s: f64) -> Option<Drift> {
    let skip = warmup_s.round() as usize;
    let y = samples_tps.get(skip..)?;
    let n = y.len();
    if n < 5 {
        return None;
    }
    let nf = n as f64;
    let (mx, my) = ((nf - 1.0) / 2.0, y.iter().sum::<f64>() / nf);
    let sxx: f64 = (0..n).map(|i| (i as f64 - mx).powi(2)).sum();
    let sxy: f64 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (i as f64 - mx) * (v - my))
        .sum();
    let slope = sxy / sxx;
    let resid: Vec<f64> = y
        .iter()
        .enumerate()
        .map(|(i, v)| v - my - slope * (i as f64 - mx))
        .collect();
    let sse: f64 = resid.iter().map(|e| e * e).sum();
    // Per-second samples are autocorrelated (a slow oscillation looks like a trend
    // over a short window): the lag-1 autocorrelation r1 of the residuals shrinks the
    // sample size to n (1 - r1) / (1 + r1) for the slope's standard error and degrees
    // of freedom (Santer et al. 2000, J. Geophys. Res. 105(D6), eq. 6).
    let r1 = if sse > 0.0 {
        resid.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / sse
    } else {
        0.0
    };
    let n_eff = if r1 > 0.0 {
        nf * (1.0 - r1) / (1.0 + r1)
    } else {
        nf
    };
    let se = (sse / (n_eff - 2.0) / sxx).sqrt();
    let p_value = if n_eff <= 3.0 {
        1.0 // too autocorrelated to tell a trend from noise
    } else if se > 0.0 {
        2.0 * StudentsT::new(0.0, 1.0, n_eff - 2.0)
            .ok()?
            .sf((slope / se).abs())
    } else if slope == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Drift {
        pct: 100.0 * slope * (nf - 1.0) / my,
        p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_TXT: &str = include_str!("../../../fdb/testdata/mako-run.txt");
    const RUN_JSON: &str = include_str!("../../../fdb/testdata/mako.json");

    #[test]
    fn drift_is_the_trend_of_the_window_after_the_warmup() {
        let r = fdb::mako::MakoReport::parse(RUN_TXT, "t", RUN_JSON, "j").unwrap();
        let (mut samples, mut warmup) = (r.samples_tps.clone(), r.warmup_duration_s);
        // Warmup 3 s: samples 3.. of the real run fall from 782.96 to 646.68 TPS.
        let d = drift(&samples, warmup).unwrap();
        assert!(d.pct < -10.0, "{d:?}");
        samples = vec![100.0; 20];
        assert_eq!(
            drift(&samples, warmup).unwrap(),
            Drift {
                pct: 0.0,
                p_value: 1.0
            }
        );
        samples = (0..20)
            .map(|i| {
                if i < 3 {
                    10.0
                } else {
                    1000.0 + 10.0 * i as f64
                }
            })
            .collect();
        let d = drift(&samples, warmup).unwrap();
        // Samples 3..19 are 1030..1190 TPS: 16 steps of 10 over a mean of 1110; a line.
        assert!((d.pct - 100.0 * 160.0 / 1110.0).abs() < 1e-9, "{d:?}");
        assert!(d.unsteady());
        samples.truncate(7);
        assert_eq!(
            drift(&samples, warmup),
            None,
            "4 samples after the warmup are too few"
        );
        // A trend plus AR(1) noise (coefficient 0.8): the naive slope test gives p 8.8e-5,
        // the effective sample size (r1 0.745, n_eff 5.83 of 40) p 0.2388 (scipy).
        warmup = 0.0;
        samples = vec![
            694.88, 707.63, 703.39, 698.51, 682.61, 684.52, 712.85, 722.07, 741.99, 742.47, 746.07,
            745.06, 707.53, 728.23, 738.11, 746.16, 709.1, 678.71, 671.77, 674.95, 693.27, 701.2,
            719.18, 710.6, 723.05, 735.03, 723.8, 762.69, 770.88, 790.55, 770.23, 751.89, 745.43,
            745.32, 760.3, 764.91, 754.98, 737.14, 731.9, 762.84,
        ];
        let d = drift(&samples, warmup).unwrap();
        assert!((d.pct - 7.920220248).abs() < 1e-6, "{d:?}");
        assert!((d.p_value - 0.238774322).abs() < 1e-6, "{d:?}");
        assert!(!d.unsteady(), "an oscillation is not a trend");
    }
}
