//! Results stage, recorded baselines: release qualification judges a candidate against numbers recorded
//! earlier on the same class of host, instead of a paired baseline arm.
//!
//! `baselines/<name>.json` holds one record per host class, profile and engine, readable
//! in a diff: the per-trial TPS (and p99 latency, storage CPU), the build's source version,
//! the workload and knobs, the host fingerprint, the gate version and when it was
//! recorded. Files are written atomically; a file that does not parse, or comes from a
//! newer format, is an error naming the file and the field, never a silent pass.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use fdb::{cmake::BuildConfig, knob::KnobSource, Engine, FdbVersion, Knob};

use super::host::Host;
use crate::{
    config::{Workload, MAX_TRIALS},
    error::UsageError,
};

/// TPS a recorded trial may hold: from 0.01 (one transaction in 100 s) to
/// [`fdb::mako::MAX_TPS`].
pub const PLAUSIBLE_TPS: (f64, f64) = (0.01, fdb::mako::MAX_TPS);
/// p99 transaction latency a recorded trial may hold, microseconds: 1 µs to a day.
pub const PLAUSIBLE_P99_US: (f64, f64) = (1.0, 86_400e6);

/// The format version this perfgate writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// One recorded baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Format version ([`SCHEMA_VERSION`]); a newer one is refused.
    pub schema_version: u32,
    pub name: String,
    /// UTC, RFC 3339.
    pub recorded_at: String,
    /// perfgate version that recorded it.
    pub gate_version: String,
    pub engine: Engine,
    pub workload: Workload,
    /// fdbserver knobs of the recorded trials.
    pub knobs: Vec<Knob>,
    pub host: Host,
    /// [`Host::class`] of `host`: what a run is checked against.
    pub host_class: String,
    /// Whether the work dir was a RAM disk.
    pub workdir_tmpfs: bool,
    /// `fdbserver --version` of the recorded build.
    pub build: FdbVersion,
    /// How the recorded build's tree was configured (`CMakeCache.txt`): a control arm must
    /// be configured alike. Absent in records made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_config: Option<BuildConfig>,
    /// Results dir the record came from.
    pub from_results: String,
    /// The measured trials.
    pub trials: Vec<RecordedTrial>,
}

/// One recorded trial.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedTrial {
    /// mako `results.tps`, TPS.
    pub tps: f64,
    /// p99 transaction latency, microseconds.
    pub txn_latency_us_p99: Option<f64>,
    /// Storage server CPU over the measurement window, cores.
    pub storage_cpu_cores: Option<f64>,
}

impl Baseline {
    /// Reads and checks a baseline file.
    ///
    /// Errors: unreadable file, or anything [`Baseline::parse`] refuses.
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = crate::input::read_text(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        let b = Baseline::parse(&text, &path.display().to_string())?;
        // `--against-recorded NAME` finds a record by its file name and every report names
        // it by its `name`: the two must be one.
        let stem = path.file_stem().map(|s| s.to_string_lossy());
        if stem.as_deref() != Some(b.name.as_str()) {
            bail!(
                "baseline {} names itself {:?}: a record's name is its file name; rename the \
                 file to {:?}.json or set its \"name\" to {:?}",
                path.display(),
                b.name,
                b.name,
                stem.unwrap_or_default()
            );
        }
        Ok(b)
    }

    /// Parses and checks a baseline file's text; `origin` (its path) names it in errors.
    ///
    /// Errors: not JSON, `schema_version` missing or newer than [`SCHEMA_VERSION`], a
    /// field missing or of the wrong type, fewer than 2 trials, or a trial's TPS not a
    /// positive number.
    pub fn parse(text: &str, origin: &str) -> Result<Baseline> {
        let raw: serde_json::Value = serde_json::from_str(text)
            .with_context(|| format!("baseline {origin} is not valid JSON"))?;
        match raw
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
        {
            Some(v) if v > u64::from(SCHEMA_VERSION) => bail!(
                "baseline {origin} has schema_version {v}, newer than the {SCHEMA_VERSION} this \
                 perfgate reads: update perfgate"
            ),
            Some(0) => bail!(
                "baseline {origin} has schema_version 0; formats count from 1 (this perfgate \
                 writes {SCHEMA_VERSION})"
            ),
            Some(_) => {}
            None => bail!("baseline {origin}: field `schema_version` is missing or not a number"),
        }
        // From the text, not from `raw`: a field given twice is an error there, while a
        // JSON value keeps the last silently.
        let b: Baseline = serde_json::from_str(text)
            .with_context(|| format!("baseline {origin} does not match the format"))?;
        b.check_trials(origin)?;
        b.check_provenance(origin)?;
        Ok(b)
    }

    /// The trials a run can have measured: 2 to [`MAX_TRIALS`], no two the same, each
    /// value positive and within its plausible range. Errors: the first that is not.
    fn check_trials(&self, origin: &str) -> Result<()> {
        if !(2..=MAX_TRIALS as usize).contains(&self.trials.len()) {
            bail!(
                "baseline {origin}: field `trials` needs 2 to {MAX_TRIALS} trials (what one run \
                 can measure), has {}",
                self.trials.len()
            );
        }
        for (i, t) in self.trials.iter().enumerate() {
            if let Some(k) = self.trials[..i].iter().position(|u| u == t) {
                bail!(
                    "baseline {origin}: trials[{k}] and trials[{i}] are the same figures, which \
                     separate trials never measure: a record holds no copies"
                );
            }
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        for (i, t) in self.trials.iter().enumerate() {
            for (field, value, what) in [
                ("tps", Some(t.tps), "a positive TPS"),
                (
                    "txn_latency_us_p99",
                    t.txn_latency_us_p99,
                    "a positive latency in microseconds (or absent)",
                ),
                (
                    "storage_cpu_cores",
                    t.storage_cpu_cores,
                    "a positive number of cores (or absent)",
                ),
            ] {
                if let Some(v) = value.filter(|v| !positive(*v)) {
                    bail!("baseline {origin}: field `trials[{i}].{field}` is {v}, not {what}");
                }
            }
            for (field, value, range, what) in [
                (
                    "tps",
                    Some(t.tps),
                    PLAUSIBLE_TPS,
                    "TPS (no benchmark commits fewer, no FDB cluster more)",
                ),
                (
                    "txn_latency_us_p99",
                    t.txn_latency_us_p99,
                    PLAUSIBLE_P99_US,
                    "microseconds (1 µs to a day)",
                ),
                (
                    "storage_cpu_cores",
                    t.storage_cpu_cores,
                    (0.0, super::saved::MAX_CORES),
                    "cores",
                ),
            ] {
                if let Some(v) = value.filter(|v| !(range.0..=range.1).contains(v)) {
                    bail!(
                        "baseline {origin}: field `trials[{i}].{field}` is {v:e}, outside {:e} \
                         to {:e} {what}",
                        range.0,
                        range.1
                    );
                }
            }
        }
        Ok(())
    }

    /// Where the record came from, as the gate writes it: a git commit and a UTC time.
    fn check_provenance(&self, origin: &str) -> Result<()> {
        let hex = |s: &str| (7..=64).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit());
        if !hex(&self.build.source_version) {
            bail!(
                "baseline {origin}: field `build.source_version` is {:?}, not a git commit \
                 (7 to 64 hex digits, as `fdbserver --version` prints it)",
                self.build.source_version
            );
        }
        if humantime::parse_rfc3339(&self.recorded_at).is_err() {
            bail!(
                "baseline {origin}: field `recorded_at` is {:?}, not an RFC 3339 UTC time \
                 (e.g. 2026-12-01T10:00:00Z)",
                self.recorded_at
            );
        }
        Ok(())
    }

    /// One line for people: name, trials, source version, host class, when recorded.
    pub fn summary(&self) -> String {
        format!(
            "{} ({} trials, source version {}, host '{}', {})",
            self.name,
            self.trials.len(),
            self.build.source_version,
            self.host_class,
            self.recorded_at
        )
    }

    /// Whether a run set up as `run` may be judged against this record. Refused: another
    /// workload, always; another host class or work dir kind (RAM disk or not) unless
    /// `allowed.host`; other user knobs unless `allowed.knobs`. An allowed difference
    /// comes back as a loud warning (HOST MISMATCH, KNOB MISMATCH) for the report.
    /// Errors: a [`UsageError`] naming the difference and the remedy.
    pub fn check_compatible(&self, run: &RunSetup, allowed: Allowed) -> Result<Vec<String>> {
        if &self.workload != run.workload {
            return Err(UsageError(format!(
                "baseline {} was recorded with another workload ({:?}) than this run's ({:?}): \
                 TPS of different workloads do not compare; use its profile and values",
                self.name, self.workload, run.workload
            ))
            .into());
        }
        let mut warnings = Vec::new();
        let kind = |tmpfs: bool| {
            if tmpfs {
                "a RAM disk (tmpfs)"
            } else {
                "a disk"
            }
        };
        let host_class = run.host.class();
        for (differs, why, remedy) in [
            (
                self.host_class != host_class,
                format!(
                    "baseline {} was recorded on host class '{}', this host is '{host_class}'",
                    self.name, self.host_class
                ),
                "TPS from different machines do not compare; record a baseline on this class \
                 of host, or pass --allow-host-mismatch",
            ),
            (
                self.workdir_tmpfs != run.workdir_tmpfs,
                format!(
                    "baseline {} was recorded with its work dir on {}, this run's is on {}",
                    self.name,
                    kind(self.workdir_tmpfs),
                    kind(run.workdir_tmpfs)
                ),
                "a disk's fsync bounds TPS where a RAM disk's does not; give --workdir on the \
                 record's kind of filesystem, or pass --allow-host-mismatch",
            ),
        ] {
            match (differs, allowed.host) {
                (false, _) => {}
                (true, false) => return Err(UsageError(format!("{why}: {remedy}")).into()),
                (true, true) => warnings.push(format!(
                    "HOST MISMATCH (--allow-host-mismatch): {why}; the verdict compares \
                     different machines"
                )),
            }
        }
        let differences = knob_differences(&self.knobs, run.knobs);
        if !differences.is_empty() {
            let why = format!(
                "baseline {} and this run give fdbserver different knobs ({})",
                self.name,
                differences.join("; ")
            );
            if !allowed.knobs {
                return Err(UsageError(format!(
                    "{why}: the verdict would measure the knobs too; give the record's knobs \
                     (--experiment-knob NAME=VALUE), or pass --allow-knob-mismatch to judge \
                     exactly that"
                ))
                .into());
            }
            warnings.push(format!(
                "KNOB MISMATCH (--allow-knob-mismatch): {why}; the verdict includes the knobs' \
                 effect (--knob and --experiment-knob go to the experiment only: a control arm \
                 runs the recorded build with the record's knobs)"
            ));
        }
        Ok(warnings)
    }
}

/// Where the knobs fdbserver gets differ, one phrase per knob name, e.g. `page_cache_4k:
/// 4294967296 in the record, unset in this run`. Knobs compare by name and value, whoever
/// asked for them: a knob the user gave equals the same knob the gate added. A knob the
/// gate added on one side only follows from the work dir kind, which is checked on its
/// own, and is no difference here.
fn knob_differences(recorded: &[Knob], ours: &[Knob]) -> Vec<String> {
    use std::collections::BTreeMap;
    let by_name = |knobs: &[Knob]| -> BTreeMap<String, Knob> {
        // The last of a name wins, as on fdbserver's command line.
        knobs.iter().map(|k| (k.name.clone(), k.clone())).collect()
    };
    let (r, o) = (by_name(recorded), by_name(ours));
    let mut names: Vec<&String> = r.keys().chain(o.keys()).collect();
    names.sort();
    names.dedup();
    let shown = |k: Option<&Knob>| k.map_or("unset".to_string(), |k| k.value.clone());
    names
        .into_iter()
        .filter_map(|name| match (r.get(name), o.get(name)) {
            (Some(a), Some(b)) if a.value == b.value => None,
            (Some(k), None) | (None, Some(k)) if k.source == KnobSource::Auto => None,
            (a, b) => Some(format!(
                "{name}: {} in the record, {} in this run",
                shown(a),
                shown(b)
            )),
        })
        .collect()
}

/// How a run that would be judged against a record is set up.
pub struct RunSetup<'a> {
    pub host: &'a Host,
    pub workload: &'a Workload,
    /// Whether its work dir is a RAM disk.
    pub workdir_tmpfs: bool,
    /// The knobs its fdbservers get (the experiment arm's, as planned).
    pub knobs: &'a [Knob],
}

/// Differences from a record the user accepted (`--allow-host-mismatch`,
/// `--allow-knob-mismatch`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowed {
    /// Another host class or work dir kind.
    pub host: bool,
    /// Other user knobs.
    pub knobs: bool,
}

/// `baselines/` of the workspace (where `Cargo.toml` is), unless `explicit`.
pub fn dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(d) = explicit {
        return Ok(d.to_path_buf());
    }
    let root = super::fs::workspace_root().context(
        "baselines/ (recorded baselines and slo.json) lives in the perfgate checkout: run \
         the gate from inside it, or give `bench`/`baseline` --baselines-dir DIR",
    )?;
    Ok(root.join("baselines"))
}

/// Finds baseline `name` (a file name without `.json`, or a path) in `dir`.
pub fn find(dir: &Path, name: &str) -> Result<(PathBuf, Baseline)> {
    let path = if name.ends_with(".json") || name.contains('/') {
        PathBuf::from(name)
    } else {
        dir.join(format!("{name}.json"))
    };
    if path.symlink_metadata().is_err() {
        return Err(UsageError(format!(
            "no baseline '{name}' ({} does not exist); `cargo xtask baseline list` shows the \
             recorded ones",
            path.display()
        ))
        .into());
    }
    let b = Baseline::load(&path)?;
    Ok((path, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_recorded_from_a_real_fdb_run_parses() {
        // Recorded by `baseline record` from an A/A quick run of FDB 8.0.0 (c0c44752df67).
        let text = include_str!("../../testdata/baseline-real.json");
        let b = Baseline::parse(text, "baseline-real.json").unwrap();
        assert_eq!(
            (b.engine, b.workload.profile.as_str()),
            (Engine::Redwood, "quick")
        );
        assert_eq!(
            b.trials.iter().map(|t| t.tps).collect::<Vec<_>>(),
            [737.11, 699.67]
        );
        assert_eq!(
            b.build.source_version,
            "c0c44752df676e4a2d532b5cdb4bf96728a30b78"
        );
        let cut = text.replacen("\"tps\": 699.67", "\"tps\": -1", 1);
        let err = Baseline::parse(&cut, "x.json").unwrap_err().to_string();
        assert!(err.contains("field `trials[1].tps` is -1"), "{err}");
        // Issue 18: a p99 of 0 or below in a record gave "fewer than 2 complete pairs".
        let p99 = text.matches("\"txn_latency_us_p99\": ").count();
        assert!(p99 >= 2, "the record has p99s");
        let zero = with_first_p99(text, "0");
        let err = Baseline::parse(&zero, "x.json").unwrap_err().to_string();
        assert!(
            err.contains("field `trials[0].txn_latency_us_p99` is 0, not a positive latency"),
            "{err}"
        );
    }

    #[test]
    fn records_no_run_could_make_are_refused() {
        // Issue 18's breaker inputs, each from the real record.
        let text = include_str!("../../testdata/baseline-real.json");
        let mut copies: serde_json::Value = serde_json::from_str(text).unwrap();
        let first = copies["trials"][0].clone();
        copies["trials"] = serde_json::Value::Array(vec![first; 5000]);
        let mut same: serde_json::Value = serde_json::from_str(text).unwrap();
        same["trials"][1] = same["trials"][0].clone();
        // Copied in pairs, [t0, t1, t0, t1]: not all equal, still copies.
        let mut pairs: serde_json::Value = serde_json::from_str(text).unwrap();
        let both = pairs["trials"].as_array().unwrap().clone();
        pairs["trials"] = serde_json::Value::Array([both.clone(), both].concat());
        for (bad, says) in [
            (
                text.replacen("\"tps\": 699.67", "\"tps\": 1e308", 1),
                "`trials[1].tps` is 1e308, outside 1e-2 to 1e9 TPS",
            ),
            (
                text.replacen("\"tps\": 699.67", "\"tps\": 1e-300", 1),
                "`trials[1].tps` is 1e-300, outside 1e-2",
            ),
            (
                with_first_p99(text, "1e-300"),
                "`trials[0].txn_latency_us_p99` is 1e-300, outside 1e0 to 8.64e10 microseconds",
            ),
            (
                text.replacen(
                    "\"source_version\": \"c0c44752df676e4a2d532b5cdb4bf96728a30b78\"",
                    "\"source_version\": \"../../etc\"",
                    1,
                ),
                "`build.source_version` is \"../../etc\", not a git commit",
            ),
            (
                text.replacen("\"recorded_at\": \"", "\"recorded_at\": \"yesterday", 1),
                "not an RFC 3339 UTC time",
            ),
            (
                text.replacen("\"schema_version\": 1", "\"schema_version\": 0", 1),
                "schema_version 0; formats count from 1",
            ),
            (
                text.replacen("\"tps\": 699.67", "\"tps\": 699.67, \"tps\": 9999", 1),
                "duplicate field `tps`",
            ),
            (copies.to_string(), "needs 2 to 1000 trials"),
            (
                same.to_string(),
                "trials[0] and trials[1] are the same figures",
            ),
            (
                pairs.to_string(),
                "trials[0] and trials[2] are the same figures",
            ),
        ] {
            assert_ne!(bad, text, "{says}");
            let err = format!("{:#}", Baseline::parse(&bad, "x.json").unwrap_err());
            assert!(err.contains(says), "{says}: {err}");
        }
        // A record is its file's name.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("release.json"), text).unwrap();
        let err = format!(
            "{:#}",
            Baseline::load(&dir.path().join("release.json")).unwrap_err()
        );
        assert!(
            err.contains("names itself \"session2-aa\": a record's name is its file name"),
            "{err}"
        );
        std::fs::write(dir.path().join("session2-aa.json"), text).unwrap();
        assert!(Baseline::load(&dir.path().join("session2-aa.json")).is_ok());
    }

    /// `text` with the first trial's p99 replaced by `value`.
    fn with_first_p99(text: &str, value: &str) -> String {
        let key = "\"txn_latency_us_p99\": ";
        let at = text.find(key).expect("a p99") + key.len();
        let end = at + text[at..].find([',', '\n', '}']).expect("a value's end");
        format!("{}{value}{}", &text[..at], &text[end..])
    }
}
