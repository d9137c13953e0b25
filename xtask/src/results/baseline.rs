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

use super::{
    host::{class_identifies_cpu, Host, UNKNOWN_CPU},
    trial::MAX_CORES,
};
use crate::{
    config::{readwrite, topology::Topology, Workload, MAX_TRIALS},
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
    /// The git commit of the gate that recorded it, as `meta.json`'s `gate_commit`
    /// ([`crate::version::COMMIT`]); absent in records made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_commit: Option<String>,
    pub engine: Engine,
    pub workload: Workload,
    /// The recorded cluster's shape; absent (the default 1/1/1 cluster) in records made
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Topology::is_default")]
    pub topology: Topology,
    /// For a run on a cluster the gate did not start (`bench --cluster-file`): the
    /// cluster's class as `status json` gave it (`fdb::status::ClusterStatus::class`:
    /// versions, redundancy, engine, machines, processes per class). Only a run on a
    /// cluster of the same class compares with it. Absent for the gate's own clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The recorded run's saturation sweep and knee (`bench --sweep`); absent for a run of
    /// one target, whose trials' TPS is the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<RecordedSweep>,
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
    /// The recorded build's tree when it was recorded: `bench --against-recorded` runs the
    /// control arm from it when no `--baseline-build` is given and it is still there.
    /// Absent in records made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_tree: Option<String>,
    /// When the recorded run started (its `meta.json`), RFC 3339 UTC; absent in records made
    /// before it was kept (then `recorded_at` stands for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The measured trials.
    pub trials: Vec<RecordedTrial>,
    /// Runs of the same build recorded on other days (`baseline record --add-run`): the
    /// day-to-day variance of the host that a judgement without a control arm needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_runs: Vec<RecordedRun>,
}

/// Another day's run of a record's build ([`Baseline::more_runs`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRun {
    /// When the run started (its `meta.json`), RFC 3339 UTC.
    pub started_at: String,
    /// Results dir it came from.
    pub from_results: String,
    /// Its measured trials.
    pub trials: Vec<RecordedTrial>,
    /// Its knee, TPS, when the record is a sweep's ([`RecordedSweep::knee_tps`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_tps: Option<u64>,
}

/// A recorded saturation sweep ([`Baseline::sweep`]): the ladder its run stepped and the
/// knee the recorded arm reached on it. Knees compare only on one ladder (its steps are
/// the knee's resolution), so a run judged against the record steps the same ladder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedSweep {
    /// The targets, TPS, strictly rising, 2 steps or more.
    pub ladder: Vec<u64>,
    /// The recorded arm's knee on the first run, TPS (`judge::knee`): a step of the ladder
    /// below its top (a knee at or above the top, or below the first step, is not
    /// measured, and not recorded).
    pub knee_tps: u64,
}

/// Runs a record may hold: the first and up to this many more.
pub const MAX_MORE_RUNS: usize = 30;
/// Least time between the starts of two runs of one record, seconds: they must come from
/// different days to measure the host's day-to-day variance.
pub const MIN_RUNS_APART_S: u64 = 12 * 3600;

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
    /// The sweep step's target the trial ran at, TPS (a sweep's record only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_tps: Option<u64>,
}

impl Baseline {
    /// Reads and checks a baseline file.
    ///
    /// Errors: unreadable file, or anything [`Baseline::parse`] refuses.
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = crate::input::read_trusted_text(path)
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
        b.check(origin)?;
        Ok(b)
    }

    /// Everything [`Baseline::parse`] checks beyond the format, for a record read from
    /// elsewhere (a saved run's `meta.json`); `origin` names it in errors.
    pub fn check(&self, origin: &str) -> Result<()> {
        self.check_trials(origin)?;
        self.check_sweep(origin)?;
        self.topology
            .validate()
            .map_err(|e| anyhow::anyhow!("baseline {origin}: field `topology`: {}", e.0))?;
        self.check_provenance(origin)?;
        self.check_host(origin)
    }

    /// The host class is the recorded host's ([`Host::class`]): an edited one would let a
    /// record of another machine pass the host check. Neither holds a character a terminal
    /// or report would take for something else (controls, bidirectional overrides).
    fn check_host(&self, origin: &str) -> Result<()> {
        for (field, value) in [
            ("host_class", &self.host_class),
            ("host.cpu_model", &self.host.cpu_model),
            ("host.hostname", &self.host.hostname),
            ("host.kernel", &self.host.kernel),
        ] {
            if value.chars().any(crate::process::unsafe_in_text) {
                bail!(
                    "baseline {origin}: field `{field}` holds control or bidirectional \
                     characters ({value:?}), which no host reports"
                );
            }
        }
        let class = self.host.class();
        // Records made before the CPU was read on every architecture have an empty CPU;
        // their class was written the old way (" x2, 24 GiB").
        let old_way =
            self.host.cpu_model.is_empty() && self.host_class == class.replacen(UNKNOWN_CPU, "", 1);
        if self.host_class != class && !old_way {
            bail!(
                "baseline {origin}: field `host_class` is {:?}, but the recorded host \
                 (`host`) is of class {class:?}: the record was edited",
                self.host_class
            );
        }
        Ok(())
    }

    /// Every recorded run's trials with the field that holds them: `trials` first, then
    /// each of `more_runs`.
    pub fn runs(&self) -> Vec<(String, &[RecordedTrial])> {
        std::iter::once(("trials".to_string(), self.trials.as_slice()))
            .chain(
                self.more_runs
                    .iter()
                    .enumerate()
                    .map(|(k, r)| (format!("more_runs[{k}].trials"), r.trials.as_slice())),
            )
            .collect()
    }

    /// The recorded sweep's ladder, TPS; `None` for a record of one target.
    pub fn ladder(&self) -> Option<&[u64]> {
        self.sweep.as_ref().map(|sw| sw.ladder.as_slice())
    }

    /// The knee of every recorded run, TPS, the first run's first; empty unless the record
    /// is a sweep's.
    pub fn knees(&self) -> Vec<u64> {
        match &self.sweep {
            Some(sw) => std::iter::once(sw.knee_tps)
                .chain(self.more_runs.iter().filter_map(|r| r.knee_tps))
                .collect(),
            None => Vec::new(),
        }
    }

    /// A sweep's record ([`RecordedSweep`]) holds a ladder of 2 or more rising targets, a
    /// knee per run on a step below its top, and trials at the ladder's steps; a record of
    /// one target holds no knee and no trial target. Errors: the first field that breaks
    /// this.
    fn check_sweep(&self, origin: &str) -> Result<()> {
        let Some(sw) = &self.sweep else {
            if let Some(k) = self.more_runs.iter().position(|r| r.knee_tps.is_some()) {
                bail!(
                    "baseline {origin}: field `more_runs[{k}].knee_tps` is set, but the record \
                     has no `sweep`: a knee belongs to a sweep's record"
                );
            }
            for (field, trials) in self.runs() {
                if let Some(i) = trials.iter().position(|t| t.target_tps.is_some()) {
                    bail!(
                        "baseline {origin}: field `{field}[{i}].target_tps` is set, but the \
                         record has no `sweep`: trials at a target belong to a sweep's record"
                    );
                }
            }
            return Ok(());
        };
        // What `--sweep` accepts (`config::readwrite::parse_ladder`): the run judged
        // against the record must be able to give the same ladder.
        let rising = sw.ladder.windows(2).all(|w| w[0] < w[1]);
        let steps = 2..=readwrite::MAX_SWEEP_STEPS;
        let in_range = |t: &u64| (1..=readwrite::MAX_TARGET_TPS).contains(t);
        if !steps.contains(&sw.ladder.len()) || !rising || !sw.ladder.iter().all(in_range) {
            bail!(
                "baseline {origin}: field `sweep.ladder` is {:?}, not 2 to {} targets of 1 to \
                 {} TPS rising step by step (what --sweep takes)",
                sw.ladder,
                readwrite::MAX_SWEEP_STEPS,
                readwrite::MAX_TARGET_TPS
            );
        }
        let top = sw.ladder[sw.ladder.len() - 1];
        let knees = std::iter::once(("sweep.knee_tps".to_string(), Some(sw.knee_tps))).chain(
            self.more_runs
                .iter()
                .enumerate()
                .map(|(k, r)| (format!("more_runs[{k}].knee_tps"), r.knee_tps)),
        );
        for (field, knee) in knees {
            match knee {
                None => bail!(
                    "baseline {origin}: field `{field}` is missing: every run of a sweep's \
                     record has its knee"
                ),
                Some(k) if k >= top || !sw.ladder.contains(&k) => bail!(
                    "baseline {origin}: field `{field}` is {k}, not a step of `sweep.ladder` \
                     below its top ({top} TPS)"
                ),
                Some(_) => {}
            }
        }
        for (field, trials) in self.runs() {
            for (i, t) in trials.iter().enumerate() {
                if !t.target_tps.is_some_and(|x| sw.ladder.contains(&x)) {
                    bail!(
                        "baseline {origin}: field `{field}[{i}].target_tps` is {}, not a step \
                         of `sweep.ladder`",
                        t.target_tps
                            .map_or("missing".to_string(), |x| x.to_string())
                    );
                }
            }
        }
        self.check_knees_followed(origin)
    }

    /// Each run's knee is a step its trials followed: it has trials there, a strict
    /// majority of them at least [`readwrite::FOLLOWED_SHARE`] of the target, as
    /// `judge::knee` follows a step (a record keeps no retries, so a knee set lower than
    /// the trials followed is not caught here). Errors: the first run whose trials
    /// contradict its knee.
    fn check_knees_followed(&self, origin: &str) -> Result<()> {
        let runs = self.runs();
        for ((field, trials), knee) in runs.iter().zip(self.knees()) {
            let at: Vec<f64> = trials
                .iter()
                .filter(|t| t.target_tps == Some(knee))
                .map(|t| t.tps)
                .collect();
            let short: Vec<f64> = at
                .iter()
                .copied()
                .filter(|tps| *tps < readwrite::FOLLOWED_SHARE * knee as f64)
                .collect();
            if at.is_empty() || 2 * short.len() >= at.len() {
                bail!(
                    "baseline {origin}: the knee of `{field}` is {knee} TPS, but {}: the \
                     record was edited",
                    match short.first() {
                        Some(tps) => format!(
                            "{} of its {} trials at that target measured below the {:.0}% \
                             that follows it (one measured {tps} TPS), and a step is followed \
                             by a majority",
                            short.len(),
                            at.len(),
                            readwrite::FOLLOWED_SHARE * 100.0
                        ),
                        None => "no trial ran at that target".to_string(),
                    }
                );
            }
        }
        Ok(())
    }

    /// When the first recorded run started: `started_at`, else `recorded_at`.
    pub fn first_started_at(&self) -> &str {
        self.started_at.as_deref().unwrap_or(&self.recorded_at)
    }

    /// Each run's trials ([`Baseline::check_run`]), no two trials of the record the same,
    /// at most [`MAX_MORE_RUNS`] more runs. Errors: the first that is not.
    fn check_trials(&self, origin: &str) -> Result<()> {
        if self.more_runs.len() > MAX_MORE_RUNS {
            bail!(
                "baseline {origin}: field `more_runs` holds {} runs, more than the \
                 {MAX_MORE_RUNS} a record keeps",
                self.more_runs.len()
            );
        }
        let runs = self.runs();
        for (field, trials) in &runs {
            check_run(origin, field, trials)?;
        }
        let all: Vec<(String, usize, &RecordedTrial)> = runs
            .iter()
            .flat_map(|(f, ts)| ts.iter().enumerate().map(move |(i, t)| (f.clone(), i, t)))
            .collect();
        for (n, (field, i, t)) in all.iter().enumerate() {
            if let Some((f, k, _)) = all[..n].iter().find(|(_, _, u)| u == t) {
                bail!(
                    "baseline {origin}: {f}[{k}] and {field}[{i}] are the same figures, which \
                     separate trials never measure: a record holds no copies"
                );
            }
        }
        Ok(())
    }
}

/// One run's trials (field `field` of the record): 2 to [`MAX_TRIALS`], each value positive
/// and within its plausible range. Errors: the first that is not.
fn check_run(origin: &str, field_of: &str, trials: &[RecordedTrial]) -> Result<()> {
    if !(2..=MAX_TRIALS as usize).contains(&trials.len()) {
        bail!(
            "baseline {origin}: field `{field_of}` needs 2 to {MAX_TRIALS} trials (what one \
             run can measure), has {}",
            trials.len()
        );
    }
    let positive = |v: f64| v.is_finite() && v > 0.0;
    for (i, t) in trials.iter().enumerate() {
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
                bail!("baseline {origin}: field `{field_of}[{i}].{field}` is {v}, not {what}");
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
                (0.0, MAX_CORES),
                "cores",
            ),
        ] {
            if let Some(v) = value.filter(|v| !(range.0..=range.1).contains(v)) {
                bail!(
                    "baseline {origin}: field `{field_of}[{i}].{field}` is {v:e}, outside {:e} \
                     to {:e} {what}",
                    range.0,
                    range.1
                );
            }
        }
    }
    Ok(())
}

impl Baseline {
    /// Adds `other` (a record made just now from another run) to this record as one of
    /// `more_runs`: another day's run of the same build on the same class of host.
    ///
    /// Errors ([`UsageError`], naming the difference): another source version, engine,
    /// workload, knobs, host class or work dir kind; a results dir already in the record; a
    /// run that started within [`MIN_RUNS_APART_S`] of one of the record's (the same day's
    /// runs do not show the day-to-day variance); more than [`MAX_MORE_RUNS`] runs.
    pub fn add_run(&mut self, other: Baseline) -> Result<()> {
        let refuse = |why: String| -> anyhow::Error {
            UsageError(format!("--add-run to baseline {}: {why}", self.name)).into()
        };
        self.same_setup(&other).map_err(refuse)?;
        let froms = std::iter::once(self.from_results.as_str())
            .chain(self.more_runs.iter().map(|r| r.from_results.as_str()));
        if froms.clone().any(|f| f == other.from_results) {
            return Err(refuse(format!(
                "the run in {} is in the record already",
                other.from_results
            )));
        }
        let start = other.first_started_at().to_string();
        self.another_day(&start).map_err(refuse)?;
        if self.more_runs.len() >= MAX_MORE_RUNS {
            return Err(refuse(format!(
                "the record holds {} runs already, the most it keeps",
                MAX_MORE_RUNS + 1
            )));
        }
        let mut added = self.clone();
        added.more_runs.push(RecordedRun {
            started_at: start,
            from_results: other.from_results,
            trials: other.trials,
            knee_tps: other.sweep.map(|sw| sw.knee_tps),
        });
        // Everything a reader of the file checks, before it is written: a copied run dir
        // (another path, the same trials) would otherwise make the record unreadable.
        let origin = format!("{} with the run added", self.name);
        added
            .check_trials(&origin)
            .and_then(|()| added.check_sweep(&origin))
            .and_then(|()| added.check_provenance(&origin))
            .map_err(|e| refuse(format!("{e:#}")))?;
        *self = added;
        Ok(())
    }

    /// What keeps `other` from being a run of this record's build on its setup: another
    /// source version, engine, workload, knobs, host class or work dir kind.
    fn same_setup(&self, other: &Baseline) -> Result<(), String> {
        let knobs = knob_differences(&self.knobs, &other.knobs);
        for (differs, what) in [
            (
                self.build.source_version != other.build.source_version,
                format!(
                    "the run is of source version {}, the record of {}",
                    other.build.source_version, self.build.source_version
                ),
            ),
            (
                self.engine != other.engine,
                format!(
                    "the run is of {}, the record of {}",
                    other.engine, self.engine
                ),
            ),
            (
                self.workload != other.workload,
                "the run has another workload".to_string(),
            ),
            (self.cluster != other.cluster, {
                let of = |c: &Option<String>| match c {
                    Some(class) => format!("a cluster of class {class}"),
                    None => "the gate's own cluster".to_string(),
                };
                format!(
                    "the run is of {}, the record of {}",
                    of(&other.cluster),
                    of(&self.cluster)
                )
            }),
            (
                self.topology != other.topology,
                format!(
                    "the run's cluster is {}, the record's {}",
                    other.topology.summary(),
                    self.topology.summary()
                ),
            ),
            (
                self.ladder() != other.ladder(),
                format!(
                    "the run stepped {}, the record {}",
                    stepped(other.ladder()),
                    stepped(self.ladder())
                ),
            ),
            (
                !knobs.is_empty(),
                format!("knobs differ ({})", knobs.join("; ")),
            ),
            (
                self.host_class != other.host_class,
                format!(
                    "the run is from host class '{}', the record from '{}'",
                    other.host_class, self.host_class
                ),
            ),
            (
                self.workdir_tmpfs != other.workdir_tmpfs,
                "the run's work dir was on another kind of filesystem".to_string(),
            ),
        ] {
            if differs {
                return Err(format!(
                    "{what}: a record's runs are one build on one setup; record it under \
                     another --name"
                ));
            }
        }
        Ok(())
    }

    /// Refuses a run that started at `start` (RFC 3339) within [`MIN_RUNS_APART_S`] of one
    /// of the record's runs.
    fn another_day(&self, start: &str) -> Result<(), String> {
        let at = |t: &str| humantime::parse_rfc3339(t).ok();
        let new_at = at(start).ok_or(format!("the run's start {start:?} is not RFC 3339"))?;
        if new_at > std::time::SystemTime::now() + std::time::Duration::from_secs(300) {
            return Err(format!(
                "the run started {start}, after this host's clock now: fix the clock or the \
                 run's meta.json"
            ));
        }
        let starts = std::iter::once(self.first_started_at())
            .chain(self.more_runs.iter().map(|r| r.started_at.as_str()));
        for t in starts {
            let Some(then) = at(t) else { continue };
            let apart = new_at
                .duration_since(then)
                .or_else(|_| then.duration_since(new_at))
                .unwrap_or_default();
            if apart.as_secs() < MIN_RUNS_APART_S {
                return Err(format!(
                    "the run started {start}, within {} h of the record's run of {t}: runs of \
                     one day do not show how the host's speed moves from day to day; record \
                     a run from another day",
                    MIN_RUNS_APART_S / 3600
                ));
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
        for (k, r) in self.more_runs.iter().enumerate() {
            if humantime::parse_rfc3339(&r.started_at).is_err() {
                bail!(
                    "baseline {origin}: field `more_runs[{k}].started_at` is {:?}, not an RFC \
                     3339 UTC time (e.g. 2026-12-01T10:00:00Z)",
                    r.started_at
                );
            }
        }
        if let Some(at) = self
            .started_at
            .as_ref()
            .filter(|at| humantime::parse_rfc3339(at).is_err())
        {
            bail!(
                "baseline {origin}: field `started_at` is {at:?}, not an RFC 3339 UTC time \
                 (e.g. 2026-12-01T10:00:00Z)"
            );
        }
        let starts: Vec<(String, std::time::SystemTime)> =
            std::iter::once(("started_at".to_string(), self.first_started_at()))
                .chain(
                    self.more_runs.iter().enumerate().map(|(k, r)| {
                        (format!("more_runs[{k}].started_at"), r.started_at.as_str())
                    }),
                )
                .filter_map(|(f, t)| Some((f, humantime::parse_rfc3339(t).ok()?)))
                .collect();
        for (i, (f, t)) in starts.iter().enumerate() {
            for (g, u) in &starts[..i] {
                let apart = t.duration_since(*u).or_else(|_| u.duration_since(*t));
                if apart.map_or(0, |d| d.as_secs()) < MIN_RUNS_APART_S {
                    bail!(
                        "baseline {origin}: `{g}` and `{f}` are less than {} h apart: a \
                         record's runs come from different days",
                        MIN_RUNS_APART_S / 3600
                    );
                }
            }
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
        let runs = match self.more_runs.len() {
            0 => String::new(),
            n => format!("{} runs, ", n + 1),
        };
        format!(
            "{} ({runs}{} trials, source version {}, host '{}', {})",
            self.name,
            self.runs().iter().map(|(_, ts)| ts.len()).sum::<usize>(),
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
                "baseline {} was recorded with another workload than this run's ({}, the \
                 record's first): TPS of different workloads do not compare; use its profile \
                 and values: {}",
                self.name,
                self.workload.differences(run.workload).join(", "),
                self.workload.summary()
            ))
            .into());
        }
        self.check_shape(run)?;
        let mut warnings = Vec::new();
        let kind = |tmpfs: bool| {
            if tmpfs {
                "a RAM disk (tmpfs)"
            } else {
                "a disk"
            }
        };
        let host_class = run.host.class();
        let unknown = unknown_cpus(&self.host_class, &host_class);
        for (differs, why, remedy) in [
            (
                self.host_class != host_class || !unknown.is_empty(),
                format!(
                    "baseline {} was recorded on host class '{}', this host is \
                     '{host_class}'{unknown}",
                    self.name, self.host_class,
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

    /// Refuses a run whose cluster shape or sweep ladder is not the record's: neither
    /// TPS nor knees compare across them. Errors: a [`UsageError`] with the remedy.
    fn check_shape(&self, run: &RunSetup) -> Result<(), UsageError> {
        match (&self.cluster, run.existing) {
            (Some(class), false) => {
                return Err(UsageError(format!(
                    "baseline {} was recorded on a cluster the gate did not start ({class}); \
                     this run starts its own: give --cluster-file of that cluster",
                    self.name
                )))
            }
            (None, true) => {
                return Err(UsageError(format!(
                    "baseline {} was recorded on a cluster the gate started, this run is on \
                     one it did not (--cluster-file): TPS of the gate's one-host cluster and \
                     of another cluster do not compare; record runs of this cluster (`cargo \
                     xtask baseline record --from DIR`)",
                    self.name
                )))
            }
            _ => {}
        }
        if &self.topology != run.topology {
            return Err(UsageError(format!(
                "baseline {} was recorded on a cluster of {}, this run's is {}: TPS of \
                 different cluster shapes do not compare; give the record's topology flags \
                 ({})",
                self.name,
                self.topology.summary(),
                run.topology.summary(),
                match self.topology.flags() {
                    f if f.is_empty() => "none: the default cluster".to_string(),
                    f => f,
                }
            )));
        }
        let ladder = self.ladder();
        if ladder != run.sweep {
            let fix = match ladder {
                Some(l) => format!(
                    "its knee compares with one found on its ladder: pass --sweep {}",
                    readwrite::ladder_text(l)
                ),
                None => "it holds trials at one target, not a knee: run without --sweep, or \
                         record a sweep"
                    .to_string(),
            };
            return Err(UsageError(format!(
                "baseline {} stepped {}, this run {}: {fix}",
                self.name,
                stepped(ladder),
                stepped(run.sweep)
            )));
        }
        Ok(())
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
    /// Its cluster's shape.
    pub topology: &'a Topology,
    /// Its `--sweep` ladder, TPS.
    pub sweep: Option<&'a [u64]>,
    /// Whether it runs on a cluster the gate did not start (`--cluster-file`); its class
    /// is checked against the record's at each trial, once `status json` gives it.
    pub existing: bool,
}

/// What a record or run stepped, for people: "the ladder 1000,2000 TPS" or "one target
/// (no --sweep)".
fn stepped(ladder: Option<&[u64]>) -> String {
    match ladder {
        Some(l) => format!("the ladder {} TPS", readwrite::ladder_text(l)),
        None => "one target (no --sweep)".to_string(),
    }
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

/// `baselines/` of the workspace (where `Cargo.toml` is), unless `explicit`. Records
/// name trees the gate runs and floors it gates on: when the directory is there, it and
/// the way to it must be root's or this user's and writable by nobody else
/// ([`crate::files::check_trusted`]), else a [`UsageError`].
pub fn dir(explicit: Option<&Path>) -> Result<PathBuf> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => workspace_baselines()?,
    };
    if dir.symlink_metadata().is_ok() {
        crate::files::check_private("--baselines-dir", &dir)?;
    }
    Ok(dir)
}

/// `baselines/` of the workspace.
fn workspace_baselines() -> Result<PathBuf> {
    match super::fs::workspace_root() {
        Ok(root) => Ok(root.join("baselines")),
        Err(e) => Err(UsageError(format!(
            "baselines/ (recorded baselines and slo.json) lives in the perfgate checkout, \
             and this is not one ({e:#}): run the gate from inside it, or give \
             --baselines-dir DIR"
        ))
        .into()),
    }
}

/// "" when both host classes name their CPU; else a note of which does not (the same
/// class may then be another machine).
fn unknown_cpus(record: &str, this: &str) -> String {
    let unknown: Vec<&str> = [(record, "the record's host"), (this, "this host")]
        .into_iter()
        .filter(|(class, _)| !class_identifies_cpu(class))
        .map(|(_, which)| which)
        .collect();
    if unknown.is_empty() {
        return String::new();
    }
    format!(
        " (the CPU of {} is not known from /proc/cpuinfo, so the same class may be another \
         machine)",
        unknown.join(" and of ")
    )
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
        // A p99 of 0 or below is refused when the record is read, naming the field, not
        // later as "fewer than 2 complete pairs".
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
        // Edits no run could make, each from the real record.
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

    #[test]
    fn a_sweeps_record_holds_a_bracketed_knee_per_run_and_trials_at_its_steps() {
        let text = include_str!("../../testdata/baseline-real.json");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["sweep"] = serde_json::json!({"ladder": [400, 600, 900], "knee_tps": 400});
        v["trials"][0]["target_tps"] = 400.into();
        v["trials"][1]["target_tps"] = 900.into();
        let good = Baseline::parse(&v.to_string(), "x.json").unwrap();
        assert_eq!(good.knees(), [400]);
        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut bad = v.clone();
            f(&mut bad);
            bad.to_string()
        };
        let plain: serde_json::Value = serde_json::from_str(text).unwrap();
        for (bad, says) in [
            (
                edit(&|b| b["sweep"]["knee_tps"] = 900.into()),
                "`sweep.knee_tps` is 900, not a step of `sweep.ladder` below its top (900 TPS)",
            ),
            (
                edit(&|b| b["sweep"]["knee_tps"] = 500.into()),
                "`sweep.knee_tps` is 500, not a step",
            ),
            (
                edit(&|b| b["sweep"]["ladder"] = serde_json::json!([400, 400, 900])),
                "not 2 to 32 targets of 1 to 100000000 TPS rising step by step",
            ),
            (
                edit(&|b| b["sweep"]["ladder"] = serde_json::json!([400, 900, 200_000_000u64])),
                "not 2 to 32 targets",
            ),
            (
                // The trial at 900 measured 699.67 TPS: not followed.
                edit(&|b| {
                    b["sweep"] = serde_json::json!({"ladder": [400, 900, 1200], "knee_tps": 900})
                }),
                "1 of its 1 trials at that target measured below the 90% that follows it (one \
                 measured 699.67 TPS)",
            ),
            (
                edit(&|b| b["sweep"]["knee_tps"] = 600.into()),
                "no trial ran at that target",
            ),
            (
                edit(&|b| {
                    let none = Topology {
                        hosts: 0,
                        ..Topology::default()
                    };
                    b["topology"] = serde_json::to_value(none).unwrap();
                }),
                "field `topology`: --hosts 0 must be between 1",
            ),
            (
                edit(&|b| {
                    let mut t = serde_json::to_value(Topology::default()).unwrap();
                    t["zones"] = 3.into();
                    b["topology"] = t;
                }),
                "unknown field `zones`",
            ),
            (
                edit(&|b| b["trials"][1]["target_tps"] = 700.into()),
                "`trials[1].target_tps` is 700, not a step of `sweep.ladder`",
            ),
            (
                edit(&|b| {
                    b["trials"][1].as_object_mut().unwrap().remove("target_tps");
                }),
                "`trials[1].target_tps` is missing",
            ),
            (
                {
                    let mut b = plain.clone();
                    b["trials"][0]["target_tps"] = 400.into();
                    b.to_string()
                },
                "`trials[0].target_tps` is set, but the record has no `sweep`",
            ),
        ] {
            let err = format!("{:#}", Baseline::parse(&bad, "x.json").unwrap_err());
            assert!(err.contains(says), "{says}: {err}");
        }
        // A run set up otherwise than the record is refused before any trial.
        let host = Host::read();
        let setup = |sweep: Option<&'static [u64]>, topology: &Topology| {
            let run = RunSetup {
                host: &host,
                workload: &good.workload,
                workdir_tmpfs: good.workdir_tmpfs,
                knobs: &good.knobs,
                topology,
                sweep,
                existing: false,
            };
            let allowed = Allowed {
                host: true,
                knobs: false,
            };
            good.check_compatible(&run, allowed)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let one = Topology::default();
        assert_eq!(setup(Some(&[400, 600, 900]), &one), Ok(()));
        for (sweep, says) in [
            (None, "pass --sweep 400,600,900"),
            (Some(&[400, 900][..]), "this run the ladder 400,900 TPS"),
        ] {
            let e = setup(sweep, &one).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
        let three = Topology {
            hosts: 3,
            ..Topology::default()
        };
        let e = setup(Some(&[400, 600, 900]), &three).unwrap_err();
        assert!(e.contains("different cluster shapes do not compare"), "{e}");
        let e = Baseline::parse(&plain.to_string(), "x.json")
            .unwrap()
            .check_compatible(
                &RunSetup {
                    host: &host,
                    workload: &good.workload,
                    workdir_tmpfs: good.workdir_tmpfs,
                    knobs: &good.knobs,
                    topology: &one,
                    sweep: Some(&[400, 600, 900]),
                    existing: false,
                },
                Allowed {
                    host: true,
                    knobs: false,
                },
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds trials at one target, not a knee"), "{e}");
    }

    /// `text` with the first trial's p99 replaced by `value`.
    /// Another run of the real record's build: its trials scaled by `f`, started at `at`,
    /// from results dir `from`.
    fn another_run(b: &Baseline, f: f64, at: &str, from: &str) -> Baseline {
        let mut o = b.clone();
        o.started_at = Some(at.to_string());
        o.from_results = from.to_string();
        for t in &mut o.trials {
            t.tps *= f;
        }
        o
    }

    #[test]
    fn runs_from_other_days_are_added_and_checked() {
        let text = include_str!("../../testdata/baseline-real.json");
        let mut b = Baseline::parse(text, "r.json").unwrap();
        assert_eq!(b.runs().len(), 1);
        assert_eq!(
            b.first_started_at(),
            "2026-11-30T00:07:20Z",
            "recorded_at stands in"
        );
        // A day later: added.
        b.add_run(another_run(&b, 1.02, "2026-11-29T00:00:00Z", "/runs/day2"))
            .unwrap();
        assert_eq!(b.runs().len(), 2);
        assert_eq!(b.runs()[1].0, "more_runs[0].trials");
        // It round-trips through the file format, and the summary counts every run.
        let again = Baseline::parse(&crate::results::fs::json(&b), "r.json").unwrap();
        assert_eq!(again, b);
        assert!(
            b.summary().starts_with("session2-aa (2 runs, 4 trials"),
            "{}",
            b.summary()
        );
        // Refused, each saying why.
        for (other, want) in [
            (
                another_run(&b, 0.99, "2026-11-29T06:00:00Z", "/runs/day2b"),
                "within 12 h of the record's run of 2026-11-29T00:00:00Z",
            ),
            (
                another_run(&b, 0.99, "2026-11-27T00:00:00Z", "/runs/day2"),
                "is in the record already",
            ),
            // A copy of the first run's dir: another path, the same trials (a record that
            // took it could not be read again).
            (
                another_run(&b, 1.0, "2026-11-26T00:00:00Z", "/runs/copy"),
                "are the same figures",
            ),
            (
                another_run(&b, 0.97, "2099-01-01T00:00:00Z", "/runs/future"),
                "after this host's clock now",
            ),
            (
                {
                    let mut o = another_run(&b, 0.98, "2026-11-25T00:00:00Z", "/runs/x");
                    o.build.source_version = "ab".repeat(20);
                    o
                },
                "the run is of source version abab",
            ),
            (
                {
                    let mut o = another_run(&b, 0.98, "2026-11-24T00:00:00Z", "/runs/y");
                    o.host_class = "other x64, 512 GiB".into();
                    o
                },
                "host class 'other x64, 512 GiB'",
            ),
        ] {
            let err = b.clone().add_run(other).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        // A copied trial across runs, and a bad start time, are refused on reading.
        let mut copy = b.clone();
        copy.more_runs[0].trials[1] = copy.trials[0];
        let err = Baseline::parse(&crate::results::fs::json(&copy), "c.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("trials[0] and more_runs[0].trials[1] are the same figures"),
            "{err}"
        );
        let mut late = b.clone();
        late.more_runs[0].started_at = "tomorrow".into();
        let err = Baseline::parse(&crate::results::fs::json(&late), "l.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`more_runs[0].started_at` is \"tomorrow\""),
            "{err}"
        );
        // Runs of one day are refused on reading too.
        let mut close = b.clone();
        close.more_runs[0].started_at = "2026-11-30T05:00:00Z".into();
        let err = Baseline::parse(&crate::results::fs::json(&close), "c.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`started_at` and `more_runs[0].started_at` are less than 12 h apart"),
            "{err}"
        );
        let mut short = b;
        short.more_runs[0].trials.truncate(1);
        let err = Baseline::parse(&crate::results::fs::json(&short), "s.json")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("field `more_runs[0].trials` needs 2 to"),
            "{err}"
        );
    }

    fn with_first_p99(text: &str, value: &str) -> String {
        let key = "\"txn_latency_us_p99\": ";
        let at = text.find(key).expect("a p99") + key.len();
        let end = at + text[at..].find([',', '\n', '}']).expect("a value's end");
        format!("{}{value}{}", &text[..at], &text[end..])
    }

    #[test]
    fn a_record_whose_host_class_is_not_its_hosts_is_refused() {
        // host.cpu_model edited, host_class left as this host's: the class no longer
        // follows from the recorded host, so the record was edited.
        let text = include_str!("../../testdata/baseline-real.json");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["host"]["cpu_model"] = "AMD EPYC 7R13".into();
        let err = Baseline::parse(&v.to_string(), "x.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("the record was edited"), "{err}");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["host_class"] = "AMD EPYC\u{1b}[2J\u{202e} x2, 24 GiB".into();
        let err = Baseline::parse(&v.to_string(), "x.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("control or bidirectional characters"), "{err}");
        // An ARM record made before the CPU was read there: empty CPU, the old class.
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["host"]["cpu_model"] = "".into();
        v["host_class"] = " x2, 24 GiB".into();
        Baseline::parse(&v.to_string(), "x.json").unwrap();
    }

    #[test]
    fn a_host_whose_cpu_is_unknown_matches_no_record() {
        // ARM hosts may have no "model name" in /proc/cpuinfo: two of them would share the
        // class " x2, 24 GiB", and a Graviton2 record would judge a Graviton3 run.
        let text = include_str!("../../testdata/baseline-real.json");
        let mut b = Baseline::parse(text, "baseline-real.json").unwrap();
        let host = |cpu_model: &str| Host {
            hostname: "h".into(),
            kernel: "k".into(),
            cpu_model: cpu_model.into(),
            cpus: 2,
            memory_bytes: 24 << 30,
        };
        let check = |b: &Baseline, host: &Host, allowed: Allowed| {
            let run = RunSetup {
                host,
                workload: &b.workload,
                workdir_tmpfs: b.workdir_tmpfs,
                knobs: &b.knobs,
                topology: &b.topology,
                sweep: None,
                existing: false,
            };
            b.check_compatible(&run, allowed)
        };
        let known = host("AMD EPYC");
        assert_eq!(
            check(&b, &known, Allowed::default()).unwrap(),
            Vec::<String>::new()
        );
        for (record, this) in [(" x2, 24 GiB", ""), ("unknown CPU x2, 24 GiB", UNKNOWN_CPU)] {
            b.host_class = record.into();
            let err = check(&b, &host(this), Allowed::default())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("the CPU of the record's host and of this host is not known"),
                "{err}"
            );
            assert!(err.contains("--allow-host-mismatch"), "{err}");
            let allowed = Allowed {
                host: true,
                knobs: false,
            };
            let warnings = check(&b, &host(this), allowed).unwrap();
            assert!(warnings[0].starts_with("HOST MISMATCH"), "{warnings:?}");
        }
        b.host_class = "AMD EPYC x2, 24 GiB".into();
        let err = check(&b, &host(""), Allowed::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("the CPU of this host is not known"), "{err}");
    }
}
