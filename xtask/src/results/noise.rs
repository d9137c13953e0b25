//! Results stage: the noise of an earlier A/A calibration as a run uses it
//! (`bench --noise-from DIR`). Recorded in the run's `meta.json` (`plan.noise_prior`), so
//! `compare` re-judges with the same figures even after the calibration's dir is gone.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use fdb::Engine;

use crate::config::Metric;

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

    /// For a verdict: e.g. `noise pooled with calibration /runs/cal (6 A/A pairs, sd
    /// 3.76%, 2 days old)`.
    pub fn describe(&self, n: PriorNoise) -> String {
        let age = if self.age_s < 3600 {
            "less than an hour".to_string()
        } else {
            humantime::format_duration(std::time::Duration::from_secs(self.age_s / 3600 * 3600))
                .to_string()
        };
        format!(
            "noise pooled with calibration {} ({} A/A pairs, sd {:.2}%, {age} old)",
            self.source.display(),
            n.pairs,
            100.0 * n.sd_log,
        )
    }
}
