//! What the experiment is compared with, decided once from `--against-recorded`,
//! `--no-control` and `--cluster-file`.

use serde::{ser::SerializeMap as _, Serialize, Serializer};

/// What the experiment is compared with. The stages match on it where they differ by it:
/// which arms are built and planned (`cmd::bench`, `plan::resolve`), and, once resolved
/// into the plan, how the trials are judged (`judge::Reference`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Against {
    /// The baseline arm (a build tree or revision), run in pairs with the experiment.
    BaselineArm,
    /// A recorded baseline (`--against-recorded NAME`). With `control`, the recorded build
    /// runs today as the baseline arm, paired with the experiment; without (`--no-control`,
    /// or a cluster the gate did not start, which is the one cluster there is), the
    /// experiment is compared unpaired with the record's runs.
    Record {
        /// The record's name or path, as given.
        name: String,
        control: bool,
    },
    /// Nothing: a cluster the gate did not start with no record is measured, one arm.
    Nothing,
}

impl Against {
    /// What `--against-recorded` (`record`), `--no-control` and `--cluster-file`
    /// (`existing`) ask for. clap lets `--no-control` come only with a record.
    pub fn of(record: Option<&str>, no_control: bool, existing: bool) -> Against {
        match record {
            Some(name) => Against::Record {
                name: name.to_string(),
                control: !(no_control || existing),
            },
            None if existing => Against::Nothing,
            None => Against::BaselineArm,
        }
    }

    /// Whether a baseline arm runs: the A/B's, or the record's control.
    pub fn baseline_arm(&self) -> bool {
        matches!(
            self,
            Against::BaselineArm | Against::Record { control: true, .. }
        )
    }

    /// The recorded baseline's name or path, when judged against one.
    pub fn record(&self) -> Option<&str> {
        match self {
            Against::Record { name, .. } => Some(name),
            Against::BaselineArm | Against::Nothing => None,
        }
    }
}

/// As `meta.json` has always held it, in `plan.config`: `against_recorded` (the record's
/// name or null) and `no_control` (true when no baseline arm runs beside a record or a
/// cluster the gate did not start).
impl Serialize for Against {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("against_recorded", &self.record())?;
        map.serialize_entry(
            "no_control",
            &matches!(
                self,
                Against::Nothing | Against::Record { control: false, .. }
            ),
        )?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_decide_the_reference_and_it_saves_as_it_always_has() {
        let cases = [
            (None, false, false, Against::BaselineArm, true),
            (None, false, true, Against::Nothing, false),
            (
                Some("rel"),
                false,
                false,
                Against::Record {
                    name: "rel".into(),
                    control: true,
                },
                true,
            ),
            (
                Some("rel"),
                true,
                false,
                Against::Record {
                    name: "rel".into(),
                    control: false,
                },
                false,
            ),
            (
                Some("rel"),
                false,
                true,
                Against::Record {
                    name: "rel".into(),
                    control: false,
                },
                false,
            ),
        ];
        for (record, no_control, existing, want, arm) in cases {
            let got = Against::of(record, no_control, existing);
            assert_eq!(got, want);
            assert_eq!(got.baseline_arm(), arm, "{got:?}");
            assert_eq!(
                serde_json::to_value(&got).unwrap(),
                serde_json::json!({"against_recorded": record, "no_control": !arm}),
                "{got:?}"
            );
        }
    }
}
