//! Recorded baselines: release qualification judges a candidate against numbers recorded
//! earlier on the same class of host, instead of a paired baseline arm.
//!
//! `baselines/<name>.json` holds one record per host class, profile and engine, readable
//! in a diff: the per-trial TPS (and p99 latency, storage CPU), the build's source version,
//! the workload and knobs, the host fingerprint, the gate version and when it was
//! recorded. Files are written atomically; a file that does not parse, or comes from a
//! newer format, is an error naming the file and the field, never a silent pass.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    time::SystemTime,
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::{
    analyze::{LatencyStats, MakoReport},
    config::{Arm, Engine, Knob, UsageError, Workload},
    execute::{Outcome, TrialRecord},
    fdbtree::FdbVersion,
    flags::{ArmArg, BaselineCommand},
    host::Host,
    saved::SavedRun,
};

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
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        Baseline::parse(&text, &path.display().to_string())
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
            Some(_) => {}
            None => bail!("baseline {origin}: field `schema_version` is missing or not a number"),
        }
        let b: Baseline = serde_json::from_value(raw)
            .with_context(|| format!("baseline {origin} does not match the format"))?;
        if b.trials.len() < 2 {
            bail!(
                "baseline {origin}: field `trials` needs at least 2 trials, has {}",
                b.trials.len()
            );
        }
        if let Some(i) = b
            .trials
            .iter()
            .position(|t| !(t.tps.is_finite() && t.tps > 0.0))
        {
            bail!(
                "baseline {origin}: field `trials[{i}].tps` is {}, not a positive TPS",
                b.trials[i].tps
            );
        }
        Ok(b)
    }

    /// The recorded trials as baseline-arm trial records, for the judge.
    pub fn as_trials(&self) -> Vec<TrialRecord> {
        self.trials
            .iter()
            .enumerate()
            .map(|(i, t)| TrialRecord {
                index: 0,
                engine: self.engine,
                arm: Arm::Baseline,
                repetition: i as u32 + 1,
                knobs: self.knobs.clone(),
                outcome: Outcome::Measured,
                failed_phase: None,
                error: None,
                phases: Vec::new(),
                availability: None,
                report: Some(MakoReport {
                    tps: t.tps,
                    overall_tps: t.tps as u64,
                    run_duration_s: self.workload.seconds as f64,
                    warmup_duration_s: self.workload.warmup_seconds as f64,
                    measured_duration_s: self.workload.measured_seconds() as f64,
                    total_xacts: 0,
                    total_conflicts: 0,
                    total_errors: 0,
                    total_timeouts: 0,
                    samples_tps: Vec::new(),
                    latency_us: t
                        .txn_latency_us_p99
                        .map(|p99| {
                            let nan = f64::NAN;
                            let l = LatencyStats {
                                samples: 1,
                                min: nan,
                                avg: nan,
                                max: nan,
                                p50: nan,
                                p95: nan,
                                p99,
                                p99_9: nan,
                            };
                            [("TRANSACTION".to_string(), l)].into()
                        })
                        .unwrap_or_default(),
                }),
                storage_cpu_cores: t.storage_cpu_cores,
                cpu_bound: None,
                workdir_peak_bytes: None,
                artifacts: PathBuf::from(format!("recorded:{}", self.name)),
            })
            .collect()
    }

    /// Whether a run on `host` with `workload` may be judged against this record: the
    /// same workload always; the same host class unless `allow_host_mismatch` (then a
    /// loud warning is returned).
    pub fn check_compatible(
        &self,
        host: &Host,
        workload: &Workload,
        allow_host_mismatch: bool,
    ) -> Result<Vec<String>> {
        if &self.workload != workload {
            return Err(UsageError(format!(
                "baseline {} was recorded with another workload ({:?}) than this run's ({:?}): \
                 TPS of different workloads do not compare; use its profile and values",
                self.name, self.workload, workload
            ))
            .into());
        }
        if self.host_class == host.class() {
            return Ok(Vec::new());
        }
        let why = format!(
            "baseline {} was recorded on host class '{}', this host is '{}'",
            self.name,
            self.host_class,
            host.class()
        );
        if !allow_host_mismatch {
            return Err(UsageError(format!(
                "{why}: TPS from different machines do not compare; record a baseline on this \
                 class of host, or pass --allow-host-mismatch"
            ))
            .into());
        }
        Ok(vec![format!(
            "HOST MISMATCH (--allow-host-mismatch): {why}; the verdict compares different machines"
        )])
    }
}

/// `baselines/` of the workspace (where `Cargo.toml` is), unless `explicit`.
pub fn dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(d) = explicit {
        return Ok(d.to_path_buf());
    }
    let meta = cargo_metadata::MetadataCommand::new()
        .no_deps()
        .exec()
        .context("cannot find the workspace (cargo metadata); pass --baselines-dir DIR")?;
    Ok(meta.workspace_root.as_std_path().join("baselines"))
}

/// Finds baseline `name` (a file name without `.json`, or a path) in `dir`.
pub fn find(dir: &Path, name: &str) -> Result<(PathBuf, Baseline)> {
    let path = if name.ends_with(".json") || name.contains('/') {
        PathBuf::from(name)
    } else {
        dir.join(format!("{name}.json"))
    };
    if !path.is_file() {
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

/// Records one baseline per engine from the `arm` trials of the run in `from`, into
/// `dir`; returns the files written. `name` defaults to `<host class>-<profile>-<engine>`;
/// with several engines the engine is appended to a given name. An existing file is
/// refused unless `force`.
pub fn record(
    from: &Path,
    dir: &Path,
    name: Option<&str>,
    arm: Arm,
    force: bool,
) -> Result<Vec<PathBuf>> {
    let SavedRun { meta, trials, .. } = SavedRun::read(from)?;
    let plan = meta.plan;
    let version = match arm {
        Arm::Baseline => plan
            .baseline
            .map(|a| a.version)
            .context("that run has no baseline arm (it was judged against a record)")?,
        Arm::Experiment => plan.experiment.version,
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for &engine in &plan.config.engines {
        let measured: Vec<&TrialRecord> = trials
            .iter()
            .filter(|t| t.engine == engine && t.arm == arm && t.outcome == Outcome::Measured)
            .collect();
        if measured.len() < 2 {
            bail!(
                "the run has {} measured {arm} trials of {engine}; a baseline needs at least 2",
                measured.len()
            );
        }
        let base = match name {
            Some(n) if plan.config.engines.len() == 1 => n.to_string(),
            Some(n) => format!("{n}-{engine}"),
            None => slug(&format!(
                "{}-{}-{engine}",
                meta.host.class(),
                plan.config.workload.profile
            )),
        };
        let path = dir.join(format!("{base}.json"));
        if path.exists() && !force {
            return Err(UsageError(format!(
                "baseline {} exists; pass --force to replace it, or --name",
                path.display()
            ))
            .into());
        }
        let b = Baseline {
            schema_version: SCHEMA_VERSION,
            name: base,
            recorded_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            gate_version: env!("CARGO_PKG_VERSION").to_string(),
            engine,
            workload: plan.config.workload.clone(),
            knobs: measured[0].knobs.clone(),
            host_class: meta.host.class(),
            host: meta.host.clone(),
            workdir_tmpfs: plan.workdir.tmpfs,
            build: version.clone(),
            from_results: from.display().to_string(),
            trials: measured
                .iter()
                .filter_map(|t| {
                    let r = t.report.as_ref()?;
                    Some(RecordedTrial {
                        tps: r.tps,
                        txn_latency_us_p99: r
                            .latency_us
                            .get("TRANSACTION")
                            .map(|l| l.p99)
                            .filter(|p| p.is_finite()),
                        storage_cpu_cores: t.storage_cpu_cores,
                    })
                })
                .collect(),
        };
        crate::bench::write(&path, &crate::bench::json(&b))?;
        written.push(path);
    }
    Ok(written)
}

/// One line per baseline in `dir`: name, engine, profile, host class, trials, mean TPS,
/// recorded. A file that does not load is listed with its error.
pub fn list(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "baselines dir {} does not exist: give --baselines-dir DIR, or record one first \
             (cargo xtask baseline record --from RESULTS_DIR)",
            dir.display()
        ))
        .into());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json") && p.file_name() != Some("slo.json".as_ref())
        })
        .collect();
    files.sort();
    let mut s = String::new();
    for f in files {
        match Baseline::load(&f) {
            Ok(b) => {
                let mean = b.trials.iter().map(|t| t.tps).sum::<f64>() / b.trials.len() as f64;
                let _ = writeln!(
                    s,
                    "{}  {} {}  {} trials, {:.1} TPS  source {}  host '{}'  recorded {}",
                    b.name,
                    b.engine,
                    b.workload.profile,
                    b.trials.len(),
                    mean,
                    &b.build.source_version[..b.build.source_version.len().min(12)],
                    b.host_class,
                    b.recorded_at
                );
            }
            Err(e) => {
                let _ = writeln!(s, "{}  UNREADABLE: {e:#}", f.display());
            }
        }
    }
    if s.is_empty() {
        let _ = writeln!(s, "no baselines in {}", dir.display());
    }
    Ok(s)
}

/// `cargo xtask baseline record|list|show`; exit status 0, or an error.
pub fn run(cmd: &BaselineCommand) -> Result<i32> {
    let out = |text: &str| {
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    };
    match cmd {
        BaselineCommand::Record {
            from,
            name,
            arm,
            force,
            baselines_dir,
        } => {
            let arm = match arm {
                ArmArg::Baseline => Arm::Baseline,
                ArmArg::Experiment => Arm::Experiment,
            };
            for path in record(
                from,
                &dir(baselines_dir.as_deref())?,
                name.as_deref(),
                arm,
                *force,
            )? {
                out(&format!("recorded {}\n", path.display()));
            }
        }
        BaselineCommand::List { baselines_dir } => out(&list(&dir(baselines_dir.as_deref())?)?),
        BaselineCommand::Show {
            name,
            baselines_dir,
        } => {
            let (path, b) = find(&dir(baselines_dir.as_deref())?, name)?;
            out(&format!("{}\n{}", path.display(), crate::bench::json(&b)));
        }
    }
    Ok(0)
}

/// Lowercase letters and digits, other runs of characters as one `-`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_readable_file_names() {
        assert_eq!(
            slug("Intel(R) Xeon(R) CPU @ 2.20GHz x2, 24 GiB-quick-redwood"),
            "intel-r-xeon-r-cpu-2-20ghz-x2-24-gib-quick-redwood"
        );
    }

    #[test]
    fn a_baseline_recorded_from_a_real_fdb_run_parses() {
        // Recorded by `baseline record` from an A/A quick run of FDB 8.0.0 (c0c44752df67).
        let text = include_str!("../testdata/baseline-real.json");
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
    }
}
