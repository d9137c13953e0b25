//! Judge stage, release qualification's host check: today's control arm (the recorded
//! build, run fresh and paired with the candidate) against the record's trials. The
//! candidate's verdict comes from the pairs; this says whether the host still runs the
//! recorded build as it did on the recording day, and by how much it differs. Pure.

use fdb::Engine;

use super::{
    samples::Sample,
    stats::{self, Comparison},
};
use crate::{config::Arm, results::baseline::Baseline, results::trial::Outcome};

/// Today's control against the record, for one engine.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCheck {
    pub engine: Engine,
    /// The record as the baseline, today's control trials as the experiment (a change of
    /// +2% means the host runs the recorded build 2% faster): Welch's t on log TPS for a
    /// record of one run, [`stats::between_days`] for one of several days (a day within
    /// the host's usual day-to-day movement is no change).
    pub comparison: Comparison,
}

impl HostCheck {
    /// Whether the host differs from the recording day: the 95% interval of the control's
    /// change excludes 0.
    pub fn changed(&self) -> bool {
        let c = &self.comparison;
        c.ci_low_pct > 0.0 || c.ci_high_pct < 0.0
    }

    /// One line for the log, or the warning when [`HostCheck::changed`].
    pub fn line(&self, record: &Baseline) -> String {
        let c = &self.comparison;
        let figures = format!(
            "today's control (the recorded build) ran {:+.2}% [{:+.2}%, {:+.2}%] from \
             baseline {} recorded {} ({})",
            c.delta_pct,
            c.ci_low_pct,
            c.ci_high_pct,
            record.name,
            record.recorded_at,
            match c.method {
                stats::Method::BetweenDays => format!(
                    "{} recorded days vs {} control trials, the day-to-day variance included",
                    c.n_baseline, c.n_experiment
                ),
                _ => format!(
                    "{} recorded vs {} control trials, Welch",
                    c.n_baseline, c.n_experiment
                ),
            }
        );
        if self.changed() {
            format!(
                "HOST CHANGED ({}): {figures}; the verdict pairs the candidate with today's \
                 control and stands, but the record's numbers no longer describe this host",
                self.engine
            )
        } else {
            format!("host check ({}): {figures}: consistent", self.engine)
        }
    }
}

/// The host check of `engine`: the record's TPS against the measured control (baseline
/// arm) trials among `samples` (the run's own, not the record's). `None` with fewer than
/// two measured control trials.
pub fn host_check(record: &Baseline, samples: &[Sample], engine: Engine) -> Option<HostCheck> {
    let runs: Vec<Vec<f64>> = record
        .runs()
        .iter()
        .map(|(_, ts)| ts.iter().map(|t| t.tps).collect())
        .collect();
    let control: Vec<f64> = samples
        .iter()
        .filter(|s| s.engine == engine && s.arm == Arm::Baseline && s.index > 0)
        .filter(|s| s.outcome == Outcome::Measured)
        .filter_map(|s| s.tps)
        .collect();
    let comparison = if runs.len() >= 2 {
        stats::between_days(&runs, &control)?
    } else {
        stats::welch(&runs.concat(), &control)?
    };
    Some(HostCheck { engine, comparison })
}

/// The host check of every engine with enough control trials, as `(changed, line)`.
pub fn host_lines(
    record: &Baseline,
    samples: &[Sample],
    engines: &[Engine],
) -> Vec<(bool, String)> {
    engines
        .iter()
        .filter_map(|&e| host_check(record, samples, e))
        .map(|h| (h.changed(), h.line(record)))
        .collect()
}
