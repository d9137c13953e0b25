//! The run's schedule: how many trials each arm and engine gets and when the run stops,
//! decided once from `--trials`, `--time-budget` and `--sweep`.

use std::time::Duration;

use serde::{ser::SerializeMap as _, Serialize, Serializer};

use super::MIN_PAIRS;

/// How the two trials of an A/B pair share the host (`--pairing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pairing {
    /// One after the other (blocks A B B A or B A A B), each on the whole host.
    Sequential,
    /// Both at once, each on half of the allowed CPUs with a cluster, work dir and ports
    /// of its own; the halves swap from pair to pair.
    Duet,
}

impl Pairing {
    /// Its name in meta.json and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pairing::Sequential => "sequential",
            Pairing::Duet => "duet",
        }
    }

    /// Pairs a run has when `--trials` is not given: 4 in a duet, whose halves of the CPUs
    /// cancel over an even count, else 3.
    pub fn default_pairs(self) -> u32 {
        match self {
            Pairing::Sequential => 3,
            Pairing::Duet => 4,
        }
    }

    /// Trials of the run on the host at once: a duet's pair, else one.
    pub fn trials_at_once(self) -> u32 {
        match self {
            Pairing::Sequential => 1,
            Pairing::Duet => 2,
        }
    }
}

/// The run's pairing and why it is the one: named by `--pairing`, or chosen by `--pairing
/// auto` (the default) from what the run allows. In meta.json as `pairing` and
/// `pairing_reason`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairingChoice {
    pub pairing: Pairing,
    /// Why, in a phrase the plan prints: the flag, or what auto found.
    #[serde(rename = "pairing_reason")]
    pub reason: String,
    /// Chosen by `--pairing auto`: a duet that the room check finds too big for two trials
    /// at once falls back to sequential instead of failing.
    #[serde(skip)]
    pub auto: bool,
}

impl PairingChoice {
    /// The pairing `arg` asks for, given `obstacle`, what keeps a duet from this run
    /// (`None`: nothing). Errors: `--pairing duet` with an obstacle, naming it.
    pub fn of(
        arg: crate::cli::PairingArg,
        obstacle: Option<String>,
    ) -> Result<PairingChoice, String> {
        use crate::cli::PairingArg;
        let (pairing, reason, auto) = match (arg, obstacle) {
            (PairingArg::Sequential, _) => {
                (Pairing::Sequential, "--pairing sequential".into(), false)
            }
            (PairingArg::Duet, None) => (Pairing::Duet, "--pairing duet".into(), false),
            (PairingArg::Duet, Some(why)) => {
                return Err(format!("--pairing duet does not go with {why}"))
            }
            (PairingArg::Auto, None) => (
                Pairing::Duet,
                "the default (--pairing auto): the run allows a duet".into(),
                true,
            ),
            (PairingArg::Auto, Some(why)) => (
                Pairing::Sequential,
                format!("the default (--pairing auto) cannot run a duet with {why}"),
                true,
            ),
        };
        Ok(PairingChoice {
            pairing,
            reason,
            auto,
        })
    }

    /// Whether the pairs' trials run at once.
    pub fn is_duet(&self) -> bool {
        self.pairing == Pairing::Duet
    }

    /// A duet that `--pairing auto` chose turned sequential because `why`.
    pub fn fall_back(&mut self, why: &str) {
        debug_assert!(self.auto && self.is_duet());
        self.pairing = Pairing::Sequential;
        self.reason = format!("the default (--pairing auto) cannot run a duet: {why}");
    }
}

/// How a run's trials are scheduled. Every stage that depends on it matches on it (the
/// plan's trial list, the pipeline's loop, the judge's completeness, the reports), so a
/// new schedule is one more variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// `--trials N`: N pairs per engine, all planned up front.
    Fixed {
        /// Pairs per engine, 1 to [`super::MAX_TRIALS`].
        pairs: u32,
    },
    /// `--trials auto --time-budget D`: [`MIN_PAIRS`] pairs per engine planned, then one
    /// pair at a time until the verdict is decided or the engine's share of `budget` is
    /// spent (`judge::sequential`).
    Sequential {
        /// The whole run's budget of wall time, shared equally by the engines.
        budget: Duration,
    },
    /// `--sweep`: `pairs` pairs at each step of `ladder`, climbed in order until one step
    /// past the knee (the multitest driver's target TPS; `judge::knee`).
    Sweep {
        /// Target TPS per step, increasing.
        ladder: Vec<u64>,
        /// Pairs per step.
        pairs: u32,
    },
}

impl Schedule {
    /// Pairs per engine (per step of a sweep) planned before the run starts: with
    /// `--trials auto` the minimum before its first look.
    pub fn planned_pairs(&self) -> u32 {
        match self {
            Schedule::Fixed { pairs } | Schedule::Sweep { pairs, .. } => *pairs,
            Schedule::Sequential { .. } => MIN_PAIRS,
        }
    }

    /// Trials per arm a complete run must have: the planned pairs, or 1 with `--trials
    /// auto`, whose planned pairs are a minimum the time budget may cut short.
    pub fn complete_at(&self) -> u32 {
        match self {
            Schedule::Sequential { .. } => 1,
            _ => self.planned_pairs(),
        }
    }

    /// The time budget of `--trials auto`.
    pub fn budget(&self) -> Option<Duration> {
        match self {
            Schedule::Sequential { budget } => Some(*budget),
            _ => None,
        }
    }

    /// The ladder of `--sweep`, target TPS per step.
    pub fn ladder(&self) -> Option<&[u64]> {
        match self {
            Schedule::Sweep { ladder, .. } => Some(ladder),
            _ => None,
        }
    }

    /// Whether the run may hold more or fewer trials than the plan lists: `--trials auto`
    /// adds pairs, a sweep stops past its knee and reruns the steps the arms split on.
    pub fn open_ended(&self) -> bool {
        !matches!(self, Schedule::Fixed { .. })
    }
}

/// As `meta.json` has always held it, in `plan.config`: `trials` (the planned pairs),
/// `time_budget` (a serde `Duration` or null) and, for a sweep only, `sweep` (the ladder),
/// which `results::saved::SavedConfig` reads back.
impl Serialize for Schedule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("trials", &self.planned_pairs())?;
        map.serialize_entry("time_budget", &self.budget())?;
        if let Some(ladder) = self.ladder() {
            map.serialize_entry("sweep", ladder)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_schedule_serializes_as_the_fields_meta_json_has_held() {
        let json = |s: &Schedule| serde_json::to_value(s).unwrap();
        assert_eq!(
            json(&Schedule::Fixed { pairs: 4 }),
            serde_json::json!({"trials": 4, "time_budget": null})
        );
        assert_eq!(
            json(&Schedule::Sequential {
                budget: Duration::from_secs(90)
            }),
            serde_json::json!({"trials": MIN_PAIRS, "time_budget": {"secs": 90, "nanos": 0}})
        );
        assert_eq!(
            json(&Schedule::Sweep {
                ladder: vec![400, 600],
                pairs: 2
            }),
            serde_json::json!({"trials": 2, "time_budget": null, "sweep": [400, 600]})
        );
    }

    #[test]
    fn only_a_fixed_schedule_is_complete_at_its_planned_pairs_and_closed() {
        let fixed = Schedule::Fixed { pairs: 5 };
        let auto = Schedule::Sequential {
            budget: Duration::from_secs(60),
        };
        let sweep = Schedule::Sweep {
            ladder: vec![1, 2],
            pairs: 3,
        };
        assert_eq!(
            [fixed.complete_at(), auto.complete_at(), sweep.complete_at()],
            [5, 1, 3]
        );
        assert_eq!(
            [fixed.open_ended(), auto.open_ended(), sweep.open_ended()],
            [false, true, true]
        );
    }
}
