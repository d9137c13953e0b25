//! Results stage: the noise of an earlier A/A calibration as a run uses it
//! (`bench --noise-from DIR`). Recorded in the run's `meta.json` (`plan.noise_prior`), so
//! `compare` re-judges with the same figures even after the calibration's dir is gone.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use fdb::Engine;

use crate::config::{Metric, MAX_TRIALS};

/// A calibration's noise, per engine and metric, with where and when it was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoisePrior {
    /// The calibration's results dir, as given to `--noise-from`.
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub source: PathBuf,
    /// When the calibration started (its `meta.json`), RFC 3339 UTC.
    pub calibrated_at: String,
    /// Its age when this run was planned, seconds.
    pub age_s: u64,
    /// The host class it was measured on (the same as this run's, or it is refused).
    pub host_class: String,
    pub noise: Vec<PriorNoise>,
}

/// One engine's and metric's noise from the calibration's A/A pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriorNoise {
    pub engine: Engine,
    pub metric: Metric,
    /// Complete A/A pairs with the metric measured in both trials (at least 2).
    pub pairs: usize,
    /// Standard deviation of their log ratios ln(B / A).
    pub sd_log: f64,
}

impl NoisePrior {
    /// The calibration's noise of `metric` on `engine`, if it measured it.
    pub fn get(&self, engine: Engine, metric: Metric) -> Option<PriorNoise> {
        self.noise
            .iter()
            .find(|n| n.engine == engine && n.metric == metric)
            .copied()
    }

    /// Checks figures read back from a results dir's `meta.json` (`origin`): each sd a
    /// positive fraction of at most 1 (100%), 2 to [`MAX_TRIALS`] pairs, one entry per
    /// engine and metric. Errors: the first that is not, naming it.
    pub fn check(&self, origin: &str) -> anyhow::Result<()> {
        for (i, n) in self.noise.iter().enumerate() {
            let field = format!("{origin}: plan.noise_prior.noise[{i}]");
            if !(n.sd_log.is_finite() && n.sd_log > 0.0 && n.sd_log <= 1.0) {
                anyhow::bail!(
                    "{field}.sd_log is {}, not a noise between 0 and 1",
                    n.sd_log
                );
            }
            if !(2..=MAX_TRIALS as usize).contains(&n.pairs) {
                anyhow::bail!(
                    "{field}.pairs is {}, not 2 to {MAX_TRIALS} (what a calibration can run)",
                    n.pairs
                );
            }
            if self.noise[..i]
                .iter()
                .any(|o| o.engine == n.engine && o.metric == n.metric)
            {
                anyhow::bail!("{field} repeats {} {}", n.engine, n.metric.name());
            }
        }
        Ok(())
    }

    /// The calibration of `n` for a verdict's note: e.g. `calibration /runs/cal (6 A/A
    /// pairs, sd 3.76%, 2days old)`.
    pub fn describe(&self, n: PriorNoise) -> String {
        let age = age_text(self.age_s);
        format!(
            "calibration {} ({} A/A pairs, sd {:.2}%, {age} old)",
            self.source.display(),
            n.pairs,
            100.0 * n.sd_log,
        )
    }
}

/// An age for people: minutes under a day, days and hours beyond (`42m`, `3days 4h`,
/// `20800days 16h`: humantime's months and years are fractional days, which would print
/// minutes and seconds again).
pub fn age_text(age_s: u64) -> String {
    if age_s < 60 {
        return "less than a minute".to_string();
    }
    if age_s < 24 * 3600 {
        return humantime::format_duration(std::time::Duration::from_secs(age_s / 60 * 60))
            .to_string();
    }
    let (days, hours) = (age_s / 86_400, age_s % 86_400 / 3600);
    match hours {
        0 => format!("{days}days"),
        h => format!("{days}days {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_back_are_checked_and_ages_read_well() {
        let entry = |sd_log: f64, pairs: usize| PriorNoise {
            engine: Engine::Redwood,
            metric: Metric::Tps,
            pairs,
            sd_log,
        };
        let prior = |noise: Vec<PriorNoise>| NoisePrior {
            source: "/cal".into(),
            calibrated_at: "2026-12-01T10:00:00Z".into(),
            age_s: 60,
            host_class: "x".into(),
            noise,
        };
        assert!(prior(vec![entry(0.05, 6)]).check("m").is_ok());
        for (noise, want) in [
            (vec![entry(0.0, 6)], "sd_log is 0, not a noise"),
            (vec![entry(-0.05, 6)], "sd_log is -0.05"),
            (vec![entry(f64::NAN, 6)], "sd_log is NaN"),
            (vec![entry(1e6, 6)], "sd_log is 1000000"),
            (vec![entry(0.05, 1)], "pairs is 1, not 2 to 1000"),
            (
                vec![entry(0.05, 1_000_000_000_000)],
                "pairs is 1000000000000",
            ),
            (
                vec![entry(0.05, 6), entry(0.04, 6)],
                "noise[1] repeats redwood tps",
            ),
        ] {
            let err = prior(noise).check("m").unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        assert_eq!(age_text(20), "less than a minute");
        assert_eq!(age_text(21 * 60 + 5), "21m");
        assert_eq!(age_text(3 * 86_400 + 4 * 3600 + 59), "3days 4h");
        assert_eq!(age_text(2 * 86_400 + 59), "2days");
        // Past a month humantime would print fractional months as hours, minutes, seconds.
        assert_eq!(age_text(1_796_119_200), "20788days 10h");
    }
}
