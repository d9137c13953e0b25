//! Results stage: a saved results dir read back: `meta.json`, `trials.json` and (when the run finished)
//! `summary.json`, for `compare` (re-judge offline) and `baseline record`. One reader,
//! so both accept the same runs and name the same file in their errors. Only the fields
//! they need are read; the files are written by `report::write`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use serde::{de::DeserializeOwned, Deserialize};

use fdb::{cmake::BuildConfig, mako::MakoReport, Engine, FdbVersion};

use super::{
    baseline::Baseline,
    host::Host,
    noise::NoisePrior,
    trial::{MultitestReport, Outcome, TrialRecord, MAX_CORES, MAX_INSTRUCTIONS_PER_S},
};
use crate::{
    config::{slo::SloTps, Metric, MetricSet, Schedule, Workload},
    error::UsageError,
};

/// The format version of `meta.json` this gate writes, and the newest it reads (one
/// without a version was written before it said so, and is read).
pub const META_SCHEMA_VERSION: u32 = 1;

/// The format version of `trials.json` this gate writes (`{"schema_version", "trials"}`),
/// and the newest it reads; a bare array of trials was written before it said its version,
/// and is read.
pub const TRIALS_SCHEMA_VERSION: u32 = 1;

/// A finished or interrupted run: what was planned and the trials that ended.
pub struct SavedRun {
    pub meta: SavedMeta,
    /// Every trial that ended, in run order (`trials.json`).
    pub trials: Vec<TrialRecord>,
    /// Trials that failed transiently and ran again, never judged (`trials.json`'s
    /// `set_aside`; empty for runs that had none and runs of gates before reruns).
    pub set_aside: Vec<TrialRecord>,
    /// `None` when the run died before writing `summary.json`.
    pub summary: Option<SavedSummary>,
}

/// `meta.json`: the host and the plan.
#[derive(Deserialize)]
pub struct SavedMeta {
    /// [`META_SCHEMA_VERSION`]; absent before it was written.
    #[serde(default)]
    pub schema_version: Option<u32>,
    pub host: Host,
    /// When the run started, seconds since the Unix epoch (absent before 0.1); at most
    /// [`LATEST_UNIX_S`], which every reader of it may rely on.
    #[serde(default, deserialize_with = "unix_seconds")]
    pub started_at_unix_s: Option<u64>,
    /// The same, RFC 3339 UTC.
    #[serde(default)]
    pub started_at: Option<String>,
    /// The results dir where the run wrote it, absolute (absent before 0.1.1): the prefix
    /// of the paths in its trials' errors.
    #[serde(default)]
    pub results_dir: Option<std::path::PathBuf>,
    pub plan: SavedPlan,
}

/// The last second RFC 3339 can write (9999-12-31T23:59:59Z), seconds since the Unix epoch:
/// a later start time is no time a gate wrote, and would not print.
pub const LATEST_UNIX_S: u64 = 253_402_300_799;

/// A start time of a saved run, refused after [`LATEST_UNIX_S`].
fn unix_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let s = Option::<u64>::deserialize(d)?;
    match s {
        Some(s) if s > LATEST_UNIX_S => Err(serde::de::Error::custom(format!(
            "started_at_unix_s {s} is after 9999-12-31T23:59:59Z: no time a gate wrote"
        ))),
        _ => Ok(s),
    }
}

#[derive(Deserialize)]
pub struct SavedPlan {
    pub config: SavedConfig,
    /// The engines that ran (`None` in results dirs of gates before 0.1: then
    /// `config.engines`).
    #[serde(default)]
    engines: Option<Vec<Engine>>,
    /// The effective TPS floors (`None` in results dirs of gates before 0.1: then
    /// `config.slo`).
    #[serde(default)]
    slo: Option<SloTps>,
    pub workdir: SavedWorkdir,
    /// `None` for a run judged against a recorded baseline.
    pub baseline: Option<SavedArm>,
    pub experiment: SavedArm,
    /// The recorded baseline of an `--against-recorded` run.
    #[serde(default)]
    pub recorded: Option<Baseline>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The calibration's noise the run compared its pairs' with (`--noise-from`).
    #[serde(default)]
    pub noise_prior: Option<NoisePrior>,
}

impl SavedPlan {
    /// The engines that ran, in order.
    pub fn engines(&self) -> &[Engine] {
        self.engines.as_deref().unwrap_or(&self.config.engines)
    }

    /// The effective TPS floors per engine.
    pub fn slo(&self) -> SloTps {
        self.slo.unwrap_or(self.config.slo)
    }
}

impl SavedConfig {
    /// The run's schedule, from the fields `config::Schedule` is saved as.
    pub fn schedule(&self) -> Schedule {
        match (&self.sweep, self.time_budget) {
            (Some(ladder), _) => Schedule::Sweep {
                ladder: ladder.clone(),
                pairs: self.trials,
            },
            (None, Some(budget)) => Schedule::Sequential { budget },
            (None, None) => Schedule::Fixed { pairs: self.trials },
        }
    }

    /// The metrics that gate when measured (none before there were such).
    pub fn gates_if_measured(&self) -> MetricSet {
        self.gates_if_measured.unwrap_or(MetricSet::NONE)
    }

    /// The gated metrics (before `--gate`: TPS, and latency with `--gate-latency`).
    pub fn gates(&self) -> MetricSet {
        let latency = self.gate_latency.then_some(Metric::TxnLatencyP99);
        self.gates
            .unwrap_or_else(|| MetricSet::TPS.with_all(latency))
    }
}

/// The judging criteria and workload of the run (`plan.config`).
#[derive(Deserialize)]
pub struct SavedConfig {
    /// The engines asked for.
    engines: Vec<Engine>,
    pub workload: Workload,
    /// Pairs planned (with `--trials auto`, the minimum); see [`SavedConfig::schedule`].
    trials: u32,
    /// Set for `--trials auto`.
    #[serde(default)]
    time_budget: Option<std::time::Duration>,
    /// A saturation sweep's ladder, TPS (`--sweep`).
    #[serde(default)]
    sweep: Option<Vec<u64>>,
    /// The cluster's shape (absent: the default 1/1/1 cluster).
    #[serde(default)]
    pub topology: crate::config::topology::Topology,
    /// How the pairs' trials shared the host (absent: runs before duets, sequential).
    #[serde(default = "sequential")]
    pub pairing: crate::config::Pairing,
    /// `--max-regression`, percent.
    pub max_regression_pct: f64,
    /// `--slo-tps`, TPS.
    pub slo_tps: Option<f64>,
    /// Where earlier gates kept the effective floors.
    #[serde(default)]
    slo: SloTps,
    #[serde(default)]
    pub strict: bool,
    /// Runs before `--gate` kept only this.
    #[serde(default)]
    gate_latency: bool,
    #[serde(default)]
    gates: Option<MetricSet>,
    /// Runs before the default work metric had none.
    #[serde(default)]
    gates_if_measured: Option<MetricSet>,
    /// The cluster the gate did not start (`--cluster-file`), as recorded; only whether
    /// there was one is read. Absent from runs of the gate's own clusters and older runs.
    #[serde(default)]
    pub existing: Option<serde_json::Value>,
    /// The recorded baseline's name, for a run judged against one (`config::Against`);
    /// absent from runs of gates before records.
    #[serde(default)]
    against_recorded: Option<String>,
}

#[derive(Deserialize)]
pub struct SavedWorkdir {
    pub tmpfs: bool,
}

#[derive(Deserialize)]
pub struct SavedArm {
    pub version: FdbVersion,
    /// Where the arm's build tree was.
    #[serde(default)]
    pub tree: Option<SavedTree>,
    /// How the arm's tree was configured (`CMakeCache.txt`), when it said.
    #[serde(default)]
    pub build_config: Option<BuildConfig>,
}

/// An arm's build tree as the plan named it.
#[derive(Deserialize)]
pub struct SavedTree {
    /// The tree's root directory.
    pub root: PathBuf,
}

/// `summary.json`: whether the run was interrupted and the looks per engine.
#[derive(Deserialize)]
pub struct SavedSummary {
    #[serde(default)]
    pub interrupted: bool,
    judgements: Vec<SavedJudgement>,
}

#[derive(Deserialize)]
struct SavedJudgement {
    engine: Engine,
    #[serde(default = "one")]
    looks: u32,
}

fn one() -> u32 {
    1
}

impl SavedSummary {
    /// Looks taken per engine (`--trials auto` looks at the data more than once).
    pub fn looks(&self) -> BTreeMap<Engine, u32> {
        self.judgements
            .iter()
            .map(|j| (j.engine, j.looks))
            .collect()
    }
}

impl SavedRun {
    /// Reads the run in `dir`. Errors: `dir` missing, not a directory or without
    /// `meta.json` (a [`UsageError`]: the user named the wrong directory); `meta.json` or
    /// `trials.json` or a `summary.json` that is there unreadable or not perfgate's, or
    /// numbers in `trials.json` the gate never writes (naming the file); a missing
    /// `summary.json` is not an error (the run did not finish).
    pub fn read(dir: &Path) -> Result<SavedRun> {
        let why = if !dir.exists() {
            Some("does not exist")
        } else if !dir.is_dir() {
            Some("is not a directory")
        } else if dir.join("meta.json").symlink_metadata().is_err() {
            // Only when nothing is there: a FIFO or a link there is named by `read`.
            Some("holds no meta.json")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(UsageError(format!(
                "{} {why}: give the results dir of a bench or calibrate run (its --out dir, \
                 or <cargo target dir>/perfgate/<time>-<pid>)",
                dir.display()
            ))
            .into());
        }
        // Its files are taken as a gate's: a directory others may add files to is not.
        crate::files::check_private("the saved run", dir)?;
        let (trials, set_aside) = read_trials(dir)?;
        check_trials(&trials).map_err(|why| {
            anyhow::anyhow!(
                "{} is not what a gate writes: {why}; re-judging it would judge edited numbers",
                dir.join("trials.json").display()
            )
        })?;
        let meta: SavedMeta = read(dir, "meta.json")?;
        check_version(
            &dir.join("meta.json"),
            meta.schema_version,
            META_SCHEMA_VERSION,
        )?;
        // The plan against the trials: either file may be the edited one.
        check_meta(&meta, &trials).map_err(|why| {
            anyhow::anyhow!(
                "{} and trials.json beside it are not what a gate writes: {why}; re-judging \
                 them would judge edited numbers",
                dir.join("meta.json").display()
            )
        })?;
        Ok(SavedRun {
            meta,
            trials,
            set_aside,
            // A dangling link is not "the run did not finish": `read` names it.
            summary: if dir.join("summary.json").symlink_metadata().is_ok() {
                Some(read(dir, "summary.json")?)
            } else {
                None
            },
        })
    }
}

/// Checks what the gate guarantees of every record it writes: trials numbered 1, 2, ...
/// in order with repetitions from 1; a measured trial has a report whose TPS is a
/// positive, finite number and whose figures add up ([`fdb::mako::MakoReport::check`]), and its CPU accounting (if any) holds a
/// positive window, cores per role in [0, [`MAX_CORES`]] and instructions per second
/// per role in [0, [`MAX_INSTRUCTIONS_PER_S`]], all finite.
/// Trial `t`'s host-speed probe (of `trials`) is what a probe measures, of the same work as
/// every other trial's: speeds of different work are not comparable.
fn check_host_speed(trials: &[TrialRecord], t: &TrialRecord, which: &str) -> Result<(), String> {
    let Some(h) = &t.host else { return Ok(()) };
    h.validity().map_err(|e| format!("{which} records {e}"))?;
    let first = trials
        .iter()
        .find_map(|u| Some((u.index, u.host.as_ref()?)));
    match first {
        Some((index, f)) if f.probe_rounds != h.probe_rounds => Err(format!(
            "{which} records a host-speed probe of {} rounds where trial {index} has {}: \
             probes of different work do not compare",
            h.probe_rounds, f.probe_rounds
        )),
        _ => Ok(()),
    }
}

fn check_trials(trials: &[TrialRecord]) -> Result<(), String> {
    check_numbering(trials)?;
    for t in trials.iter().filter(|t| t.outcome == Outcome::Measured) {
        let which = format!(
            "trial {} ({} {} #{})",
            t.index, t.engine, t.arm, t.repetition
        );
        if let Some(e) = &t.error {
            return Err(format!("{which} is measured but holds an error ({e})"));
        }
        if let Some(Err(e)) = t.report.as_ref().map(MakoReport::validity) {
            return Err(format!("{which} is measured but its report is {e}"));
        }
        if let Some(Err(e)) = t.multitest.as_ref().map(MultitestReport::validity) {
            return Err(format!("{which} is measured but its report is {e}"));
        }
        let tps = t.tps();
        if !tps.is_some_and(|tps| tps.is_finite() && tps > 0.0) {
            return Err(format!(
                "{which} is measured but its TPS is {}",
                tps.map_or("missing".to_string(), fdb::compact)
            ));
        }
        if let Some(Err(e)) = t.report.as_ref().map(|r| r.check()) {
            return Err(format!(
                "{which} has a mako report that does not add up: {e:#}"
            ));
        }
        check_host_speed(trials, t, &which)?;
        let Some(cpu) = &t.cpu else { continue };
        let within = |v: f64, max: f64| v.is_finite() && (0.0..=max).contains(&v);
        if !(cpu.window_s.is_finite() && cpu.window_s > 0.0) {
            return Err(format!(
                "{which} has a CPU window of {} s",
                fdb::compact(cpu.window_s)
            ));
        }
        let per_second = cpu
            .per_second
            .iter()
            .flat_map(|(r, v)| v.iter().map(|c| (*r, *c)));
        if let Some((role, c)) = cpu
            .cores
            .iter()
            .map(|(r, c)| (*r, *c))
            .chain(per_second)
            .find(|&(_, c)| !within(c, MAX_CORES))
        {
            return Err(format!("{which} has {} {role} cores", fdb::compact(c)));
        }
        if let Some((role, n)) = cpu
            .instructions_per_s
            .iter()
            .find(|(_, n)| !within(**n, MAX_INSTRUCTIONS_PER_S))
        {
            return Err(format!(
                "{which} has {} {role} instructions per second",
                fdb::compact(*n)
            ));
        }
    }
    Ok(())
}

/// Each arm's repetitions are 1, 2, ... without a gap (a pair is matched by its number),
/// as a run that is no sweep numbers them.
fn check_no_gaps(trials: &[TrialRecord]) -> Result<(), String> {
    for t in trials {
        let runs = trials
            .iter()
            .filter(|o| (o.engine, o.arm) == (t.engine, t.arm))
            .count();
        if t.repetition as usize > runs {
            return Err(format!(
                "trial {} is {} {} #{}, but that arm has {runs} trial(s): a gate numbers an \
                 arm's repetitions 1, 2, ... without a gap",
                t.index, t.engine, t.arm, t.repetition
            ));
        }
    }
    Ok(())
}

/// Longest phase a saved trial may record, seconds (a year): every phase is bounded by a
/// `--timeout-*` flag of at most [`crate::config::MAX_SECONDS`] (a week).
const MAX_PHASE_S: f64 = 365.0 * 24.0 * 3600.0;

/// The runner numbers trials 1, 2, ... in run order, and each arm's repetitions from 1,
/// once each.
fn check_numbering(trials: &[TrialRecord]) -> Result<(), String> {
    for (i, t) in trials.iter().enumerate() {
        if t.index != i + 1 {
            return Err(format!(
                "its trial {} holds index {}; a gate numbers its trials 1, 2, ... in run order",
                i + 1,
                t.index
            ));
        }
        if t.repetition == 0 {
            return Err(format!(
                "trial {} has repetition 0; repetitions count from 1",
                t.index
            ));
        }
        // 1e308 s would make the JUnit writer panic; no phase lasts a year.
        if let Some(p) = t
            .phases
            .iter()
            .find(|p| !(p.duration_s.is_finite() && (0.0..=MAX_PHASE_S).contains(&p.duration_s)))
        {
            return Err(format!(
                "trial {} has a {} phase of {} s; a phase lasts 0 to {MAX_PHASE_S} s",
                t.index,
                p.phase,
                fdb::compact(p.duration_s)
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for t in trials {
        if !seen.insert((t.engine, t.arm, t.repetition)) {
            return Err(format!(
                "trial {} repeats {} {} #{}: a gate runs each repetition of an arm once",
                t.index, t.engine, t.arm, t.repetition
            ));
        }
    }
    Ok(())
}

/// Checks what the gate guarantees of a plan it writes, and that the measured trials are
/// windows of the plan's workload: at least 1 trial planned, TPS floors positive and
/// finite, every measured report's run and warmup the ones the plan asked
/// ([`MakoReport::window_matches`]).
/// Errors when what the run was compared with does not hold together as a gate writes it
/// (`config::Against`, `judge::Reference`): a record named but not saved, a run without a
/// baseline arm that had neither a record nor a cluster of its own, or a cluster the gate
/// did not start beside a baseline arm. Judged anyway, such a file could pass a run that
/// failed.
fn check_reference(plan: &SavedPlan) -> Result<(), String> {
    let c = &plan.config;
    let (arm, record, existing) = (
        plan.baseline.is_some(),
        plan.recorded.is_some(),
        c.existing.is_some(),
    );
    match (&c.against_recorded, record) {
        (Some(name), false) => {
            return Err(format!(
                "its config names the recorded baseline {name} and its plan holds none"
            ))
        }
        (None, true) => {
            return Err("its plan holds a recorded baseline and its config names none".into())
        }
        _ => {}
    }
    if !arm && !record && !existing {
        return Err(
            "it has no baseline arm, no recorded baseline and no cluster of its own \
                    (a gate compares with one of them)"
                .into(),
        );
    }
    if arm && existing {
        return Err(
            "it has a baseline arm on a cluster the gate did not start (a gate runs \
                    one arm there)"
                .into(),
        );
    }
    Ok(())
}

/// Errors when a trial's sweep target does not fit the run: a sweep's trials each ran at a
/// step of its `ladder`, and no other run's trial has a target of its own (a knee judged on
/// trials of another ladder, or none, says nothing of the run).
fn check_targets(ladder: Option<&[u64]>, trials: &[TrialRecord]) -> Result<(), String> {
    let Some(t) = trials.iter().find(|t| match (ladder, t.target_tps) {
        (Some(l), Some(x)) => !l.contains(&x),
        (Some(_), None) | (None, Some(_)) => true,
        (None, None) => false,
    }) else {
        return Ok(());
    };
    let target = t.target_tps.map_or("no sweep target".to_string(), |x| {
        format!("a target of {x} TPS")
    });
    let ladder = ladder.map_or("no sweep".to_string(), |l| {
        format!("the ladder {}", crate::config::readwrite::ladder_text(l))
    });
    Err(format!(
        "trial {} ran at {target} and the run planned {ladder}",
        t.index
    ))
}

fn check_meta(meta: &SavedMeta, trials: &[TrialRecord]) -> Result<(), String> {
    let c = &meta.plan.config;
    // Every run numbers each arm's repetitions 1, 2, ... in run order; a sweep's runs
    // written before that numbered a split step's confirmations past every planned step,
    // with gaps where the sweep stopped short of the ladder's top, and are still read.
    if c.sweep.is_none() {
        check_no_gaps(trials)?;
    }
    if meta.plan.engines().is_empty() {
        return Err("it plans no engine (a gate runs at least one)".into());
    }
    if c.trials == 0 {
        return Err("it plans 0 trials (a gate plans at least 1)".into());
    }
    if let Some(l) = c
        .sweep
        .as_ref()
        .filter(|l| l.len() < 2 || l.windows(2).any(|w| w[0] >= w[1]))
    {
        return Err(format!(
            "its sweep ladder {l:?} is not 2 or more increasing targets (a gate refuses one)"
        ));
    }
    check_reference(&meta.plan)?;
    check_targets(c.sweep.as_deref(), trials)?;
    if let Some(record) = &meta.plan.recorded {
        // The record a run was judged against, as `baseline` files are checked; a sweep
        // judged against it stepped its ladder (`Baseline::check_compatible`).
        record
            .check("in meta.json")
            .map_err(|e| format!("its recorded baseline: {e:#}"))?;
        let ladder = record.ladder();
        if ladder != c.sweep.as_deref() {
            return Err(format!(
                "its recorded baseline stepped the ladder {ladder:?} and the run {:?} (a gate \
                 refuses that)",
                c.sweep
            ));
        }
    }
    let slo = meta.plan.slo();
    for (what, floor) in [
        ("slo_tps", c.slo_tps),
        ("slo.redwood", slo.redwood),
        ("slo.rocksdb", slo.rocksdb),
        ("slo.sharded_rocksdb", slo.sharded_rocksdb),
    ] {
        if let Some(v) = floor.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("its TPS floor {what} is {v}, not a positive TPS"));
        }
    }
    let (run_s, warmup_s) = (c.workload.seconds as f64, c.workload.warmup_seconds as f64);
    for t in trials.iter().filter(|t| t.outcome == Outcome::Measured) {
        if let Some(Err(e)) = t.report.as_ref().map(|r| r.window_matches(run_s, warmup_s)) {
            return Err(format!("trial {} is measured but {e}", t.index));
        }
        // ReadWrite's window is the nominal 75% of its test (`discardEdgeMeasurements`).
        let window = t.multitest.as_ref().map(|m| m.result.measured_s);
        if let Some(w) = window.filter(|w| (w - 0.75 * run_s).abs() > 1e-6 * run_s) {
            return Err(format!(
                "trial {} is measured but ReadWrite measured {w} s of a {run_s} s test, not \
                 75% of it",
                t.index
            ));
        }
    }
    Ok(())
}

/// The trials of `dir/trials.json`, versioned or a bare array (written before the file
/// said its version), and those it set aside. Errors: as [`read`]'s, or a version newer
/// than this gate reads.
fn read_trials(dir: &Path) -> Result<(Vec<TrialRecord>, Vec<TrialRecord>)> {
    let path = dir.join("trials.json");
    let mut set_aside = serde_json::Value::Array(Vec::new());
    let trials = match read(dir, "trials.json")? {
        serde_json::Value::Object(mut file) => {
            let Some(raw) = file.get("schema_version") else {
                anyhow::bail!(
                    "{} is not a perfgate trials.json: no schema_version",
                    path.display()
                )
            };
            let Some(version) = raw.as_u64().and_then(|v| u32::try_from(v).ok()) else {
                anyhow::bail!(
                    "{} is not a perfgate trials.json: schema_version {raw} is not a whole \
                     number",
                    path.display()
                )
            };
            check_version(&path, Some(version), TRIALS_SCHEMA_VERSION)?;
            if let Some(aside) = file.remove("set_aside") {
                set_aside = aside;
            }
            file.remove("trials").unwrap_or_default()
        }
        bare => bare,
    };
    let parse = |v| {
        serde_json::from_value(v)
            .with_context(|| format!("{} is not a perfgate trials.json", path.display()))
    };
    Ok((parse(trials)?, parse(set_aside)?))
}

/// Refuses a file written by a newer gate, whose fields this one may misread, and a
/// version no gate wrote (0: versions start at 1). `None`: written before the file said
/// its version.
fn check_version(path: &Path, version: Option<u32>, readable: u32) -> Result<()> {
    match version {
        Some(0) => anyhow::bail!(
            "{} is not what a gate writes: schema_version 0 (versions start at 1)",
            path.display()
        ),
        Some(v) if v > readable => Err(UsageError(format!(
            "{} has schema_version {v}, newer than the {readable} this perfgate reads: read it \
             with the perfgate that wrote it (meta.json's gate_version and gate_commit say which)",
            path.display()
        ))
        .into()),
        _ => Ok(()),
    }
}

fn read<T: DeserializeOwned>(dir: &Path, file: &str) -> Result<T> {
    let path = dir.join(file);
    // The gate never writes a link there: one is refused, not followed.
    let text = crate::input::read_own_text(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a perfgate results dir?)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a perfgate {file}", path.display()))
}

/// The pairing of runs that do not name one: they came before duets.
fn sequential() -> crate::config::Pairing {
    crate::config::Pairing::Sequential
}
