//! Config stage: raw flags (`cli`) -> one validated [`BenchConfig`], never changed after.
//!
//! Every check of user input happens here, once; later stages trust the config. A bad
//! value is a [`UsageError`] that says what was wrong and how to fix it (exit status 64).

use std::{
    fmt,
    path::{Path, PathBuf},
    time::Duration,
};

use serde::{Deserialize, Serialize};

pub mod against;
pub mod cluster;
pub mod existing;
pub mod metric;
pub mod path_json;
pub mod readwrite;
pub mod schedule;
pub mod slo;
pub mod source;
pub mod topology;
pub mod workload;

use fdb::{Engine, Knob};

use crate::{
    cli::{BenchArgs, EngineArg, PairingArg, RunArgs, TimeoutArgs, TrialsArg},
    error::UsageError,
};
pub use against::Against;
pub use cluster::ClusterSource;
pub use metric::{CpuRole, Direction, Metric, MetricSet, HARDWARE_PMU};
pub use schedule::{Pairing, PairingChoice, Schedule};
pub use workload::{client_procs, DriverKind, Workload, SATURATING_CORES, SERVER_CORES};

/// Longest run or phase bound accepted, seconds (one week): longer is a typo, and
/// `Instant + Duration` must not overflow.
pub const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// Most trials per arm and engine accepted.
pub const MAX_TRIALS: u32 = 1000;

/// Pairs `--trials auto` runs before its first look at the data (`judge::sequential`).
pub const MIN_PAIRS: u32 = 3;

pub(crate) fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// One of the two arms of an A/B run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// A: what the experiment is judged against.
    Baseline,
    /// B: the change under test.
    Experiment,
}

impl Arm {
    /// One-letter label used in the trial order (A B B A ...).
    pub fn letter(self) -> char {
        match self {
            Arm::Baseline => 'A',
            Arm::Experiment => 'B',
        }
    }
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arm::Baseline => "baseline",
            Arm::Experiment => "experiment",
        })
    }
}

/// Time bound of each phase of a trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseBounds {
    pub cluster_start: Duration,
    pub configure: Duration,
    pub available: Duration,
    pub mako_build: Duration,
    /// Beyond the workload's `seconds`.
    pub mako_run_grace: Duration,
    pub teardown: Duration,
    /// One seed of the simulation driver under Valgrind.
    pub simulation: Duration,
}

impl PhaseBounds {
    fn resolve(t: &TimeoutArgs) -> Result<PhaseBounds, UsageError> {
        let s = |flag: &str, v: u64| {
            if v == 0 || v > MAX_SECONDS {
                Err(usage(format!(
                    "{flag} {v} must be between 1 and {MAX_SECONDS} seconds"
                )))
            } else {
                Ok(Duration::from_secs(v))
            }
        };
        Ok(PhaseBounds {
            cluster_start: s("--timeout-cluster-start", t.timeout_cluster_start)?,
            configure: s("--timeout-configure", t.timeout_configure)?,
            available: s("--timeout-available", t.timeout_available)?,
            mako_build: s("--timeout-mako-build", t.timeout_mako_build)?,
            mako_run_grace: s("--timeout-mako-run-grace", t.timeout_mako_run_grace)?,
            teardown: s("--timeout-teardown", t.timeout_teardown)?,
            simulation: s("--timeout-simulation", t.timeout_simulation)?,
        })
    }
}

/// Where each arm's build tree is and which knobs the user gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArmConfig {
    pub arm: Arm,
    /// FDB build tree given by the user (`--*-build`), checked by `build::tree` before any
    /// trial; `None` when the arm is built from `--fdb-src` (its tree is in the plan).
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub build_dir: Option<PathBuf>,
    /// User knobs in order: `--knob` first, then the arm's own; later ones win.
    pub knobs: Vec<Knob>,
}

/// Everything `bench` needs, validated.
#[derive(Debug, Clone, Serialize)]
pub struct BenchConfig {
    pub baseline: ArmConfig,
    pub experiment: ArmConfig,
    /// Engines asked for (`--engine`), in the order they run; no duplicates. A run against a
    /// recorded baseline runs the record's engine instead (`plan::Plan::engines`); against
    /// a cluster the gate did not start it is empty: the plan reads the cluster's.
    pub engines: Vec<Engine>,
    pub workload: Workload,
    /// The cluster the trials run against: one the gate starts for each trial, or one it
    /// did not start (`--cluster-file`).
    #[serde(flatten)]
    pub cluster: ClusterSource,
    /// Set when the run's client processes were scaled to the host's cores
    /// ([`client_procs`]): what was changed and why, for the run's warnings.
    pub procs_scaled: Option<String>,
    /// How many trials each arm and engine gets, and when the run stops.
    #[serde(flatten)]
    pub schedule: Schedule,
    /// How the two trials of a pair share the host (`--pairing`), and why.
    #[serde(flatten)]
    pub pairing: PairingChoice,
    /// Whether `--trials` was left to its default, which follows the pairing.
    #[serde(skip)]
    pub pairs_by_default: bool,
    /// Seed of the trial order within A/B blocks (`--seed`, else from the clock); recorded
    /// so a run's order can be reproduced.
    pub seed: u64,
    /// `--workdir`/`WORKDIR`, if given; else the work dir is chosen by `workdir`.
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub workdir: Option<PathBuf>,
    /// Results directory, if given; else one under the cargo target dir.
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub out: Option<PathBuf>,
    /// Extra copy of the JUnit XML.
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub junit: Option<PathBuf>,
    /// `--export-markdown`: where the Markdown verdict table is copied, if anywhere.
    pub export_markdown: Option<PathBuf>,
    /// `--export-bmf`: where the experiment's values go as Bencher Metric Format JSON.
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub export_bmf: Option<PathBuf>,
    /// `--export-benchmark`: github-action-benchmark JSON files, the higher-is-better
    /// metrics' and the lower-is-better metrics'.
    pub export_benchmark_action: Option<[PathBuf; 2]>,
    /// Largest tolerated TPS loss of the experiment, percent.
    pub max_regression_pct: f64,
    /// Absolute TPS floor of the experiment for every engine (`--slo-tps`), if any.
    pub slo_tps: Option<f64>,
    /// INCONCLUSIVE fails the run.
    pub strict: bool,
    /// The metrics that gate the run (TPS always, and what `--gate` names).
    pub gates: MetricSet,
    /// The metrics that gate when every trial measured them: the storage/client CPU
    /// ratio, unless `--tps-only`.
    pub gates_if_measured: MetricSet,
    pub allow_same: bool,
    /// What the experiment is compared with: the baseline arm, a recorded baseline (with
    /// or without a control arm), or nothing.
    #[serde(flatten)]
    pub against: Against,
    /// Accept a recorded baseline from another host class or work dir kind.
    pub allow_host_mismatch: bool,
    /// Accept a recorded baseline whose user knobs differ from this run's.
    pub allow_knob_mismatch: bool,
    /// Where baselines live (`--baselines-dir`), if given.
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub baselines_dir: Option<PathBuf>,
    /// A calibration's results dir whose noise the pairs' is compared with (`--noise-from`).
    #[serde(serialize_with = "path_json::lossy_opt")]
    pub noise_from: Option<PathBuf>,
    /// Oldest calibration `noise_from` may be, seconds (`--noise-max-age`).
    pub noise_max_age_s: u64,
    /// A trial whose storage server used less than 0.85 cores is an error, not a warning.
    pub require_cpu_bound: bool,
    /// Probe the host's speed around each trial (`run::probe`; `--host-probe`).
    pub host_probe: bool,
    /// Run build trees that are not Release, lack mako or are instrumented (warned).
    pub allow_non_release: bool,
    pub dry_run: bool,
    /// Warnings and errors only on the terminal, no progress bar.
    pub quiet: bool,
    /// Give the storage server a CPU of its own (`--pin`).
    pub pin: bool,
    /// Where the gate's servers' and testers' ports come from (`--port-range`); `None`:
    /// any free port.
    pub port_range: Option<crate::input::PortRange>,
    /// summary.json on stdout instead of the table.
    pub json: bool,
    pub bounds: PhaseBounds,
}

/// Oldest calibration `--noise-from` accepts by default (`--noise-max-age`, whose default
/// in the CLI is the same 14 days): a host's noise moves with its neighbours and kernel,
/// and a calibration says what it was then.
pub const DEFAULT_NOISE_MAX_AGE_S: u64 = 14 * 24 * 3600;

/// Tolerated loss of a gated metric, percent, when `--max-regression` is not given.
pub const DEFAULT_MAX_REGRESSION_PCT: f64 = 2.0;

/// The same under the simulation driver: its instruction counts are deterministic (an A/A
/// gives the same count), so the tolerance is the smallest change worth a look, not room
/// for noise; a +1% storage-server change must be a REGRESSION.
pub const DEFAULT_SIMULATION_MAX_REGRESSION_PCT: f64 = 0.5;

impl BenchConfig {
    /// Whether one given tree runs as both arms (calibrate's A/A): messages then name "the
    /// build tree", once.
    pub fn one_tree(&self) -> bool {
        self.baseline.build_dir.is_some() && self.baseline.build_dir == self.experiment.build_dir
    }

    /// How messages name `arm`'s tree: "the build tree" when one tree runs as both arms,
    /// else "the baseline build tree" or "the experiment build tree".
    pub fn tree_label(&self, arm: Arm) -> String {
        if self.one_tree() {
            "the build tree".to_string()
        } else {
            format!("the {arm} build tree")
        }
    }

    /// Where copies of the run's results also go.
    pub fn copies(&self) -> Copies<'_> {
        Copies {
            junit: self.junit.as_deref(),
            markdown: self.export_markdown.as_deref(),
            bmf: self.export_bmf.as_deref(),
            benchmark_action: self
                .export_benchmark_action
                .as_ref()
                .map(|[a, b]| [a.as_path(), b.as_path()]),
        }
    }

    pub fn arm(&self, arm: Arm) -> &ArmConfig {
        match arm {
            Arm::Baseline => &self.baseline,
            Arm::Experiment => &self.experiment,
        }
    }
}

/// Where copies of a run's results also go, outside or inside its results dir, each named
/// by its flag. Every check of a copy's path (`results::fs::check_copies`) and every writer
/// of one (`report::write`) takes the whole set, so a new copy is checked and written
/// where the others are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Copies<'a> {
    /// `--junit`: the JUnit XML.
    pub junit: Option<&'a Path>,
    /// `--export-markdown`: the verdict table, appended.
    pub markdown: Option<&'a Path>,
    /// `--export-bmf`: Bencher Metric Format JSON.
    pub bmf: Option<&'a Path>,
    /// `--export-benchmark`: github-action-benchmark JSON, the higher-is-better
    /// metrics' file and the lower-is-better metrics'.
    pub benchmark_action: Option<[&'a Path; 2]>,
}

impl<'a> Copies<'a> {
    /// Each copy with its flag, in flag order.
    pub fn each(&self) -> Vec<(&'static str, &'a Path)> {
        let mut v = Vec::new();
        v.extend(self.junit.map(|p| ("--junit", p)));
        v.extend(self.markdown.map(|p| ("--export-markdown", p)));
        v.extend(self.bmf.map(|p| ("--export-bmf", p)));
        for p in self.benchmark_action.iter().flatten() {
            v.push(("--export-benchmark", *p));
        }
        v
    }
}

/// Each arm's knobs: `--knob` first, then the arm's own (`--baseline-knob`,
/// `--experiment-knob`). Errors: a knob that does not parse, or one given twice in a flag.
fn arm_knobs(a: &RunArgs) -> Result<[Vec<Knob>; 2], UsageError> {
    let parse_all = |raw: &[String], flag: &str| -> Result<Vec<Knob>, UsageError> {
        let knobs = raw
            .iter()
            .map(|k| Knob::parse_user(k, flag).map_err(UsageError))
            .collect::<Result<Vec<Knob>, UsageError>>()?;
        refuse_twice(&knobs, flag)?;
        Ok(knobs)
    };
    let common = parse_all(&a.knobs, "--knob")?;
    let with_common = |own: &[String], flag: &str| -> Result<Vec<Knob>, UsageError> {
        let mut all = common.clone();
        all.extend(parse_all(own, flag)?);
        Ok(all)
    };
    Ok([
        with_common(&a.baseline_knobs, "--baseline-knob")?,
        with_common(&a.experiment_knobs, "--experiment-knob")?,
    ])
}

/// The copies `run` asks for, before they are validated with the rest (the checks of the
/// copies' paths come first, and a setup error is written to them).
pub fn copies_of(run: &crate::cli::RunArgs) -> Copies<'_> {
    Copies {
        junit: run.junit.as_deref(),
        markdown: run.export_markdown.as_deref(),
        bmf: run.export_bmf.as_deref(),
        benchmark_action: benchmark_action(run.export_benchmark_action.as_deref()),
    }
}

/// `--export-benchmark`'s two files (clap takes exactly two), the higher-is-better
/// metrics' and the lower-is-better metrics'.
pub fn benchmark_action(files: Option<&[PathBuf]>) -> Option<[&Path; 2]> {
    match files? {
        [bigger, smaller] => Some([bigger.as_path(), smaller.as_path()]),
        _ => None,
    }
}

impl TryFrom<&BenchArgs> for BenchConfig {
    type Error = UsageError;

    fn try_from(a: &BenchArgs) -> Result<BenchConfig, UsageError> {
        // Before the topology is checked, which names --hosts and the like.
        existing::refuse_topology(a, &topology_fields(&a.run.topology))?;
        // Arms without a tree are built from source later (`build::build_arms`) and get
        // their tree then; with --against-recorded there is no baseline tree at all.
        // Paired once, at the end, when the cluster and the control arm are known.
        let base = BenchConfig::unpaired(
            a.baseline_build.as_deref(),
            a.experiment_build.as_deref(),
            a.allow_same,
            &a.run,
        )?;
        if a.no_control && base.schedule.budget().is_some() {
            return Err(usage(
                "--trials auto does not work with --no-control (unpaired looks are not \
                 implemented); give --trials N, or run a control arm",
            ));
        }
        if a.against_recorded.is_some() && !a.run.engines.is_empty() {
            return Err(usage(
                "--engine does not go with --against-recorded: a record is one engine's, and \
                 that engine runs; record one baseline per engine to judge several",
            ));
        }
        if a.against_recorded.is_some() && !a.run.baseline_knobs.is_empty() {
            return Err(usage(
                "--baseline-knob does not go with --against-recorded: the record is the \
                 baseline and ran with its own knobs (`cargo xtask baseline show NAME` lists \
                 them); give this run's knobs with --knob or --experiment-knob",
            ));
        }
        let schedule = match &a.sweep {
            Some(ladder) => Schedule::Sweep {
                ladder: check_sweep(&base, a, ladder)?,
                pairs: base.schedule.planned_pairs(),
            },
            None => base.schedule.clone(),
        };
        refuse_beside_simulation(&base, a)?;
        // Against a cluster the gate did not start, its own engine, read from its status
        // json by the plan.
        let (cluster, engines) = match existing::ExistingCluster::resolve(a, &base)? {
            Some(e) => (ClusterSource::Existing(e), Vec::new()),
            None => (base.cluster.clone(), base.engines.clone()),
        };
        let c = BenchConfig {
            schedule,
            against: Against::of(
                a.against_recorded.as_deref(),
                a.no_control,
                a.cluster_file.is_some(),
            ),
            cluster,
            engines,
            allow_host_mismatch: a.allow_host_mismatch,
            allow_knob_mismatch: a.allow_knob_mismatch,
            baselines_dir: a.baselines_dir.clone(),
            noise_from: a.noise_from.clone(),
            noise_max_age_s: a.noise_max_age.as_secs(),
            ..base
        };
        let c = c.with_pairing(a.run.pairing, a.run.trials.is_none())?;
        check_port_range(&c)?;
        Ok(c)
    }
}

/// Errors when one flag gives a knob twice with different values: which one was meant is
/// not for the gate to guess (across flags, an arm's own knob wins over `--knob`).
fn refuse_twice(knobs: &[Knob], flag: &str) -> Result<(), UsageError> {
    for (i, k) in knobs.iter().enumerate() {
        if let Some(other) = knobs[..i]
            .iter()
            .find(|o| o.name == k.name && o.value != k.value)
        {
            return Err(usage(format!(
                "{flag} gives knob {} twice, ={} and ={}: give it once",
                k.name, other.value, k.value
            )));
        }
    }
    Ok(())
}

impl BenchConfig {
    /// Validates the shared run flags `a` for the two arms' build trees, with the pairing
    /// they ask for ([`choose_pairing`]). Errors: a [`UsageError`] naming the flag.
    pub fn new(
        baseline: Option<&Path>,
        experiment: Option<&Path>,
        allow_same: bool,
        a: &RunArgs,
    ) -> Result<BenchConfig, UsageError> {
        BenchConfig::unpaired(baseline, experiment, allow_same, a)?
            .with_pairing(a.pairing, a.trials.is_none())
    }

    /// [`BenchConfig::new`] before its pairing is chosen: `pairing` is sequential as a
    /// placeholder, for the caller to replace with [`BenchConfig::with_pairing`] once it
    /// knows what a duet depends on (the cluster, the control arm).
    fn unpaired(
        baseline: Option<&Path>,
        experiment: Option<&Path>,
        allow_same: bool,
        a: &RunArgs,
    ) -> Result<BenchConfig, UsageError> {
        let [baseline_knobs, experiment_knobs] = arm_knobs(a)?;
        let schedule = schedule_of(a.trials.unwrap_or(TrialsArg::Count(3)), a.time_budget)?;
        check_slo_tps(a.slo_tps)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (workload, procs_scaled) =
            Workload::resolve(a.profile, a.profile_file.as_deref(), &a.workload, cores)?;
        let max_regression = max_regression_of(a.max_regression, &workload)?;
        let simulated = workload.simulated;
        let cluster = cluster_of(&workload, &a.topology)?;
        let c = BenchConfig {
            baseline: ArmConfig {
                arm: Arm::Baseline,
                build_dir: baseline.map(Path::to_path_buf),
                knobs: baseline_knobs,
            },
            experiment: ArmConfig {
                arm: Arm::Experiment,
                build_dir: experiment.map(Path::to_path_buf),
                knobs: experiment_knobs,
            },
            engines: expand_engines(&a.engines),
            workload,
            cluster,
            procs_scaled,
            schedule,
            pairing: PairingChoice::of(PairingArg::Sequential, None).map_err(usage)?,
            pairs_by_default: false,
            seed: a.seed.unwrap_or_else(clock_seed),
            workdir: crate::cli::workdir_or_env(a.workdir.as_deref()).map_err(UsageError)?,
            out: a.out.clone(),
            junit: a.junit.clone(),
            export_markdown: a.export_markdown.clone(),
            export_bmf: a.export_bmf.clone(),
            export_benchmark_action: benchmark_action(a.export_benchmark_action.as_deref())
                .map(|files| files.map(Path::to_path_buf)),
            max_regression_pct: max_regression,
            slo_tps: a.slo_tps,
            strict: a.strict,
            gates: gates(a.gate_latency, &a.gate, simulated),
            gates_if_measured: if a.tps_only || simulated {
                MetricSet::NONE
            } else {
                MetricSet::NONE.with(Metric::StorageCpuRatio)
            },
            allow_same,
            against: Against::BaselineArm,
            allow_host_mismatch: false,
            allow_knob_mismatch: false,
            baselines_dir: None,
            noise_from: None,
            noise_max_age_s: DEFAULT_NOISE_MAX_AGE_S,
            require_cpu_bound: a.require_cpu_bound,
            host_probe: a.host_probe,
            allow_non_release: a.allow_non_release,
            dry_run: a.dry_run,
            quiet: a.quiet,
            pin: a.pin,
            port_range: a.port_range,
            json: a.json,
            bounds: PhaseBounds::resolve(&a.timeouts)?,
        };
        check_driver_gates(&c)?;
        Ok(c)
    }
}

impl BenchConfig {
    /// This run with the pairing `arg` asks for ([`choose_pairing`]) and, when `--trials`
    /// was not given (`default_pairs`), the default number of pairs for it
    /// ([`Pairing::default_pairs`]). Errors: as [`choose_pairing`], and a `--time-budget`
    /// too short for the pairing ([`check_budget_holds_the_first_look`]).
    fn with_pairing(self, arg: PairingArg, default_pairs: bool) -> Result<Self, UsageError> {
        let pairing = choose_pairing(&self, arg)?;
        let c = BenchConfig {
            pairs_by_default: default_pairs,
            ..self
        }
        .paired(pairing);
        check_budget_holds_the_first_look(&c)?;
        Ok(c)
    }

    /// This run with `pairing`, and the default pairs for it when `--trials` was not given
    /// (a duet that did not fit the work dir turns sequential: 3 pairs, not 4).
    pub fn paired(self, pairing: PairingChoice) -> Self {
        let schedule = match self.schedule {
            Schedule::Fixed { .. } if self.pairs_by_default => Schedule::Fixed {
                pairs: pairing.pairing.default_pairs(),
            },
            schedule => schedule,
        };
        BenchConfig {
            pairing,
            schedule,
            ..self
        }
    }
}

/// The pairing `arg` asks for in run `c` ([`PairingChoice::of`]). Errors: a
/// [`UsageError`] for `--pairing duet` in a run that cannot have one ([`duet_obstacle`]).
fn choose_pairing(c: &BenchConfig, arg: PairingArg) -> Result<PairingChoice, UsageError> {
    let obstacle = match arg {
        PairingArg::Sequential => None,
        PairingArg::Auto | PairingArg::Duet => duet_obstacle(c),
    };
    PairingChoice::of(arg, obstacle).map_err(usage)
}

/// What keeps a duet from run `c`, as a phrase after "does not go with": a duet starts
/// both arms' clusters and mako runs at once, each on half of the CPUs. The simulator's
/// trials run at once already; a cluster the gate did not start is one cluster; without
/// a baseline arm there is no pair; `--pin` places processes otherwise; the multitest
/// driver's test phases cannot be started together; one CPU has no halves. `None`: the
/// run can have a duet (the room for two trials is checked with the work dir, by the plan).
fn duet_obstacle(c: &BenchConfig) -> Option<String> {
    let cpus = crate::process::allowed_cpus();
    let obstacles = [
        (
            c.workload.simulated,
            "a simulation profile (its trials run at once already, one per core)".to_string(),
        ),
        (
            !c.workload.simulated && !c.workload.driver_kind().needs_mako(),
            "the multitest driver (give a mako profile: quick, standard or scan)".into(),
        ),
        (
            matches!(c.cluster, ClusterSource::Existing(_)),
            "--cluster-file (one cluster cannot be both arms at once)".into(),
        ),
        (
            !c.against.baseline_arm(),
            "--no-control (a duet runs the baseline arm beside the experiment)".into(),
        ),
        (
            c.pin,
            "--pin (a duet gives each arm half of the CPUs instead)".into(),
        ),
        match &cpus {
            Ok(cpus) => (
                cpus.len() < 2,
                format!(
                    "{} allowed CPU (each arm needs one at least: give the gate 2 or more, \
                     with taskset or the container's limit)",
                    cpus.len()
                ),
            ),
            Err(e) => (true, format!("allowed CPUs that cannot be read ({e})")),
        },
    ];
    obstacles
        .into_iter()
        .find(|(on, _)| *on)
        .map(|(_, what)| what)
}

/// `--trials auto` runs [`MIN_PAIRS`] pairs per engine before its first look: a budget
/// whose share per engine cannot hold even their mako runs (2 trials of `--seconds` per
/// pair; starting clusters and loading data come on top) would stop with a verdict that
/// can only be INCONCLUSIVE. Errors: a [`UsageError`] with the least budget that could.
fn check_budget_holds_the_first_look(c: &BenchConfig) -> Result<(), UsageError> {
    let Some(budget) = c.schedule.budget() else {
        return Ok(());
    };
    let engines = c.engines.len().max(1) as u64;
    // A duet's pair takes one trial's time, a sequential pair two.
    let per_pair = 2 / u64::from(c.pairing.pairing.trials_at_once());
    let least = Duration::from_secs(u64::from(MIN_PAIRS) * per_pair * c.workload.seconds * engines);
    if budget >= least {
        return Ok(());
    }
    Err(usage(format!(
        "--time-budget {} cannot hold the {MIN_PAIRS} pairs per engine --trials auto runs \
         before its first look: their workload runs alone take {} ({MIN_PAIRS} pairs x {per_pair} \
         trial(s) one after the other x --seconds {} x {engines} engine(s)); give more than that (starting clusters and \
         loading data come on top: `cargo xtask calibrate` measures a pair), or --trials N",
        humantime::format_duration(budget),
        humantime::format_duration(least),
        c.workload.seconds
    )))
}

/// The gated set of `--gate-latency` and `--gate`: TPS and what they name.
/// Without `--gate`, TPS gates, or under the simulation driver (`simulated`) the storage
/// server's instructions per transaction: the simulator's TPS is simulated time's, which a
/// change of CPU cost does not move.
pub fn gates(gate_latency: bool, gate: &[crate::cli::GateMetric], simulated: bool) -> MetricSet {
    use crate::cli::GateMetric as G;
    let named = gate.iter().map(|g| match g {
        G::Latency => Metric::TxnLatencyP99,
        G::StorageCpuRatio => Metric::StorageCpuRatio,
        G::StorageCpu => Metric::CpuPerTxn(CpuRole::Storage),
        G::LogCpu => Metric::CpuPerTxn(CpuRole::Log),
        G::StatelessCpu => Metric::CpuPerTxn(CpuRole::Stateless),
        G::ClientCpu => Metric::CpuPerTxn(CpuRole::Client),
        G::StorageInstructions => Metric::InstructionsPerTxn(CpuRole::Storage),
        G::ClientInstructions => Metric::InstructionsPerTxn(CpuRole::Client),
        G::LogInstructions => Metric::InstructionsPerTxn(CpuRole::Log),
        G::StatelessInstructions => Metric::InstructionsPerTxn(CpuRole::Stateless),
        G::Instructions => Metric::TotalInstructionsPerTxn,
    });
    let latency = gate_latency.then_some(Metric::TxnLatencyP99);
    let base = if simulated {
        MetricSet::NONE.with(Metric::InstructionsPerTxn(CpuRole::Storage))
    } else {
        MetricSet::TPS
    };
    base.with_all(latency).with_all(named)
}

/// The schedule of `--trials` and `--time-budget`: N pairs, or `auto` within a budget
/// (a sweep's ladder is added by the caller, which checks it against the other flags).
fn schedule_of(trials: TrialsArg, budget: Option<Duration>) -> Result<Schedule, UsageError> {
    Ok(match (trials, budget) {
        (TrialsArg::Count(n), None) if (1..=MAX_TRIALS).contains(&n) => {
            Schedule::Fixed { pairs: n }
        }
        (TrialsArg::Count(n), None) => {
            return Err(usage(format!(
                "--trials {n} must be between 1 and {MAX_TRIALS}, or auto"
            )))
        }
        (TrialsArg::Count(_), Some(_)) => {
            return Err(usage("--time-budget goes with --trials auto"));
        }
        (TrialsArg::Auto, None) => {
            return Err(usage(
                "--trials auto needs --time-budget DURATION, e.g. --time-budget 2h",
            ));
        }
        (TrialsArg::Auto, Some(b)) if b.is_zero() || b.as_secs() > MAX_SECONDS * 4 => {
            return Err(usage(
                "--time-budget must be more than 0 and at most four weeks",
            ));
        }
        (TrialsArg::Auto, Some(b)) => Schedule::Sequential { budget: b },
    })
}

/// The cluster's shape from its flags, checked.
fn topology_of(a: &crate::cli::TopologyArgs) -> Result<topology::Topology, UsageError> {
    let t = topology_fields(a);
    t.validate()?;
    Ok(t)
}

/// The cluster of a run's trials from its workload and topology flags: the simulator's
/// own under the simulation driver (no topology flag may be given), else one the gate
/// starts in the flags' shape.
fn cluster_of(w: &Workload, a: &crate::cli::TopologyArgs) -> Result<ClusterSource, UsageError> {
    // Checked before the shape's own rules, which would ask for more flags.
    let t = match w.driver_kind() {
        DriverKind::Simulation(_) => topology_fields(a),
        DriverKind::Mako | DriverKind::Multitest(_) => topology_of(a)?,
    };
    match w.driver_kind() {
        DriverKind::Simulation(_) if !t.is_default() => Err(usage(format!(
            "the topology flags (--hosts, --logs, --commit-proxies, ...) shape a cluster the \
             gate starts, and profile '{}' runs FDB's simulator, whose cluster is fixed by the \
             gate's spec (one storage server, one tlog, one of each stateless role); drop \
             them, or use a multitest profile (point-read, write, mixed)",
            w.profile
        ))),
        DriverKind::Simulation(_) => Ok(ClusterSource::Simulated),
        DriverKind::Mako | DriverKind::Multitest(_) => Ok(ClusterSource::Own(t)),
    }
}

/// The topology the flags give, not checked.
fn topology_fields(a: &crate::cli::TopologyArgs) -> topology::Topology {
    topology::Topology {
        hosts: a.hosts,
        stateless_per_host: a.stateless_per_host,
        logs_per_host: a.logs_per_host,
        storage_per_host: a.storage_per_host,
        redundancy: a.redundancy.into(),
        coordinators: a.coordinators,
        logs: a.logs,
        commit_proxies: a.commit_proxies,
        grv_proxies: a.grv_proxies,
        resolvers: a.resolvers,
    }
}

/// Ports a trial listens on: one per server of the gate's own cluster (none for a cluster
/// the gate did not start) and one per tester this host runs (multitest driver).
pub fn ports_per_trial(c: &BenchConfig) -> u32 {
    c.cluster.servers() + c.workload.driver_kind().testers()
}

/// Errors when `--port-range` holds fewer ports than a trial listens on
/// ([`ports_per_trial`]): said before any trial, not by the first trial's start.
fn check_port_range(c: &BenchConfig) -> Result<(), UsageError> {
    let Some(r) = c.port_range else {
        return Ok(());
    };
    let size = u32::from(r.high - r.low) + 1;
    let need = ports_per_trial(c);
    if size < need {
        return Err(usage(format!(
            "--port-range {r} holds {size} port(s), and each trial listens on {need} (one \
             per server and tester here): give a range of at least {need}, with room for \
             ports other programs hold"
        )));
    }
    Ok(())
}

/// Refuses a gate the workload's driver cannot measure: the multitest driver's ReadWrite
/// reports no p99 latency.
fn check_driver_gates(c: &BenchConfig) -> Result<(), UsageError> {
    if c.workload.simulated {
        return check_simulation(c);
    }
    if c.gates.contains(Metric::TotalInstructionsPerTxn) {
        return Err(usage(format!(
            "--gate instructions counts the whole simulated run's instructions, and profile \
             '{}' runs a real cluster; give --profile sim-g18ui (or another sim-* profile), \
             or gate storage-instructions on a host with a hardware PMU",
            c.workload.profile
        )));
    }
    let multitest = matches!(c.workload.driver_kind(), DriverKind::Multitest(_));
    if multitest && c.gates.contains(Metric::TxnLatencyP99) {
        return Err(usage(format!(
            "--gate latency: profile '{}' runs the multitest driver, whose ReadWrite \
             workload reports no p99 latency (its highest percentile is p98, shown in \
             report.html); gate TPS or CPU instead",
            c.workload.profile
        )));
    }
    Ok(())
}

/// Errors when a simulation run (`base`) is given a flag of `bench` that needs a real
/// cluster or a noisy measurement: `--cluster-file`, `--sweep`, `--against-recorded`,
/// `--noise-from`.
fn refuse_beside_simulation(base: &BenchConfig, a: &BenchArgs) -> Result<(), UsageError> {
    if !base.workload.simulated {
        return Ok(());
    }
    let refused = [
        (
            a.cluster_file.is_some(),
            "--cluster-file (the simulator runs its own cluster)",
        ),
        (
            a.sweep.is_some(),
            "--sweep (the simulator's TPS is simulated time's)",
        ),
        (
            a.against_recorded.is_some(),
            "--against-recorded (records hold real clusters' TPS; compare two builds, \
                 which the simulation makes as exact as a record)",
        ),
        (
            a.noise_from.is_some(),
            "--noise-from (a seed's count is exact: there is no noise to compare)",
        ),
    ];
    if let Some((_, what)) = refused.iter().find(|(on, _)| *on) {
        return Err(usage(format!(
            "profile '{}' runs FDB's simulator under Valgrind, which does not go with \
                 {what}",
            base.workload.profile
        )));
    }
    Ok(())
}

/// Errors when a simulation run (`c`) asks for what only a real cluster has: CPU, latency
/// or TPS gates (the simulator's time is simulated: its TPS and latencies are its pacing,
/// and its CPU is Valgrind's), pinning, the CPU-bound check, or `--trials auto` (each
/// seed's count is exact: there is no noise to stop on).
fn check_simulation(c: &BenchConfig) -> Result<(), UsageError> {
    let other = c.gates.iter().find(|m| {
        !matches!(
            m,
            Metric::InstructionsPerTxn(_) | Metric::TotalInstructionsPerTxn
        )
    });
    let refused = [
        (
            other.is_some(),
            format!(
                "gating on {} (--gate or --gate-latency: the simulator's time is simulated, \
                 its TPS and latencies are its pacing, not the build's speed; gate \
                 instructions: --gate storage-instructions, log-instructions, \
                 stateless-instructions, client-instructions)",
                other.map_or("", |m| m.label())
            ),
        ),
        (
            c.slo_tps.is_some(),
            "--slo-tps (the simulator's TPS is simulated time's, and gates nothing)".to_string(),
        ),
        (
            c.port_range.is_some(),
            "--port-range (the simulator listens on no port)".to_string(),
        ),
        (
            c.schedule.budget().is_some(),
            "--trials auto (a seed's count is exact, so there is no noise to stop on; give \
             --trials N, N seeds per arm)"
                .to_string(),
        ),
        (
            c.pin,
            "--pin (instruction counts do not depend on where a process runs)".to_string(),
        ),
        (
            c.require_cpu_bound,
            "--require-cpu-bound (the simulator runs in one process under Valgrind)".to_string(),
        ),
    ];
    match refused.iter().find(|(on, _)| *on) {
        Some((_, what)) => Err(usage(format!(
            "profile '{}' runs FDB's simulator under Valgrind, which does not go with {what}",
            c.workload.profile
        ))),
        None => Ok(()),
    }
}

/// The `--sweep` ladder of a run, checked against the rest of its flags: the multitest
/// driver, a fixed number of pairs per step, and no flag the sweep replaces or that
/// cannot judge a knee.
fn check_sweep(c: &BenchConfig, a: &BenchArgs, ladder: &str) -> Result<Vec<u64>, UsageError> {
    if c.workload.driver_kind().needs_mako() {
        return Err(usage(format!(
            "--sweep steps the multitest driver's target TPS, and profile '{}' runs mako; \
             give --profile point-read, write or mixed",
            c.workload.profile
        )));
    }
    let conflict = [
        (
            c.schedule.budget().is_some(),
            "--trials auto (--sweep runs --trials N pairs per step)",
        ),
        (
            a.run.workload.target_tps.is_some(),
            "--target-tps (the ladder sets each step's)",
        ),
        (
            a.noise_from.is_some(),
            "--noise-from (a knee is judged by the ladder, not by paired noise)",
        ),
    ];
    if let Some((_, what)) = conflict.iter().find(|(on, _)| *on) {
        return Err(usage(format!("--sweep does not go with {what}")));
    }
    let steps = readwrite::parse_ladder(ladder).map_err(UsageError)?;
    let pairs = c.schedule.planned_pairs();
    if steps.len() as u64 * u64::from(pairs) > u64::from(MAX_TRIALS) {
        return Err(usage(format!(
            "--sweep with {} steps x --trials {pairs} pairs is more than {MAX_TRIALS} pairs",
            steps.len(),
        )));
    }
    Ok(steps)
}

/// Checks a `--max-regression` tolerance, percent: a number strictly between 0 and 100.
pub fn check_max_regression(pct: f64) -> Result<(), UsageError> {
    if pct.is_finite() && pct > 0.0 && pct < 100.0 {
        return Ok(());
    }
    Err(usage(format!(
        "--max-regression {pct} must be a percentage between 0 and 100 (exclusive)"
    )))
}

/// `--max-regression` as given, else the default of `w`'s driver, checked.
fn max_regression_of(given: Option<f64>, w: &Workload) -> Result<f64, UsageError> {
    let pct = given.unwrap_or(if w.simulated {
        DEFAULT_SIMULATION_MAX_REGRESSION_PCT
    } else {
        DEFAULT_MAX_REGRESSION_PCT
    });
    check_max_regression(pct)?;
    Ok(pct)
}

/// Checks a `--slo-tps` floor: a positive, finite TPS figure.
pub fn check_slo_tps(slo: Option<f64>) -> Result<(), UsageError> {
    match slo {
        Some(slo) if !(slo.is_finite() && slo > 0.0) => Err(usage(format!(
            "--slo-tps {slo} must be a positive TPS figure"
        ))),
        _ => Ok(()),
    }
}

fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_nanos() as u64) ^ u64::from(std::process::id())
}

/// The engines named by `--engine` (redwood when none is).
fn expand_engines(args: &[EngineArg]) -> Vec<Engine> {
    if args.is_empty() {
        return vec![Engine::Redwood];
    }
    let mut engines = Vec::new();
    for arg in args {
        let add: &[Engine] = match arg {
            EngineArg::Redwood => &[Engine::Redwood],
            EngineArg::Rocksdb => &[Engine::Rocksdb],
            EngineArg::ShardedRocksdb => &[Engine::ShardedRocksdb],
            EngineArg::All => &Engine::ALL,
        };
        for e in add {
            if !engines.contains(e) {
                engines.push(*e);
            }
        }
    }
    engines
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;
    use crate::cli::{Cli, Command, ProfileArg};
    use clap::Parser;
    use fdb::mako::{transaction_ops, TxnOp};

    fn config(extra: &[&str]) -> Result<BenchConfig, UsageError> {
        let mut argv = vec![
            "xtask",
            "bench",
            "--baseline-build",
            "/a",
            "--experiment-build",
            "/b",
        ];
        argv.extend_from_slice(extra);
        let argv = crate::cli::fdb_knob_spellings(argv.into_iter().map(OsString::from));
        let Command::Bench(args) = Cli::try_parse_from(argv).expect("flags parse").command else {
            unreachable!("bench flags")
        };
        BenchConfig::try_from(&*args)
    }

    #[test]
    fn client_processes_leave_two_cores_to_the_cluster() {
        // (profile's -p, cores) -> -p
        for (procs, cores, want) in [(7, 16, 7), (7, 9, 7), (7, 8, 6), (2, 4, 2), (2, 3, 1)] {
            assert_eq!(
                client_procs(procs, cores),
                want,
                "-p {procs} on {cores} cores"
            );
        }
        assert_eq!(client_procs(2, 2), 1);
        assert_eq!(client_procs(2, 1), 1, "never below one client process");
        assert_eq!(client_procs(2, 0), 1, "unknown core count");
    }

    #[test]
    fn client_processes_are_scaled_unless_given() {
        let args = |extra: &[&str]| {
            let mut argv = vec!["xtask", "bench", "--profile", "standard"];
            argv.extend_from_slice(extra);
            let Command::Bench(b) = Cli::try_parse_from(argv).unwrap().command else {
                unreachable!("bench flags")
            };
            b
        };
        let a = args(&[]);
        let (w, note) = Workload::resolve(a.run.profile, None, &a.run.workload, 4).unwrap();
        assert_eq!(w.procs, 2);
        let note = note.expect("scaling is reported");
        assert!(
            note.contains("-p 2 instead of the standard profile's 7 (4 cores"),
            "{note}"
        );
        let (w, note) = Workload::resolve(a.run.profile, None, &a.run.workload, 32).unwrap();
        assert_eq!(
            (w.procs, note),
            (7, None),
            "enough cores: the profile's count"
        );
        let a = args(&["--procs", "5"]);
        let (w, note) = Workload::resolve(a.run.profile, None, &a.run.workload, 2).unwrap();
        assert_eq!(
            (w.procs, note),
            (5, None),
            "--procs is the user's to choose"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.json");
        std::fs::write(&file, r#"{"name": "mine", "procs": 3}"#).unwrap();
        let (w, note) =
            Workload::resolve(a.run.profile, Some(&file), &args(&[]).run.workload, 2).unwrap();
        assert_eq!((w.procs, note), (3, None), "a profile file's procs is kept");
    }

    #[test]
    fn standard_profile_is_the_upstream_workload() {
        let w = Workload::from_profile(ProfileArg::Standard);
        assert_eq!((w.rows, w.keylen, w.vallen), (100_000, 128, 512));
        assert_eq!(
            (w.build_procs, w.procs, w.threads, w.async_xacts),
            (4, 7, 4, 128)
        );
        assert_eq!(w.transaction, "g18ui");
        assert_eq!(
            config(&["--profile", "standard", "--pairing", "sequential"])
                .unwrap()
                .schedule,
            Schedule::Fixed { pairs: 3 }
        );
        assert_eq!(
            (w.warmup_seconds, w.seconds, w.measured_seconds()),
            (300, 600, 300)
        );
    }

    #[test]
    fn a_profile_file_names_the_workload_and_overrides_its_base() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(
            &path,
            r#"{"name": "big-values", "base": "standard", "vallen": 4096}"#,
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let w = config(&["--profile-file", p, "--seconds", "700"])
            .unwrap()
            .workload;
        assert_eq!(
            (w.profile.as_str(), w.vallen, w.threads, w.seconds),
            ("big-values", 4096, 4, 700)
        );
        std::fs::write(&path, r#"{"name": "x", "valen": 1}"#).unwrap();
        let err = config(&["--profile-file", p]).unwrap_err();
        assert!(err.0.contains("unknown field `valen`"), "{err}");
        assert!(err.0.contains("a profile is JSON such as"), "{err}");
        std::fs::write(&path, r#"{"name": "mine", "procs": 0}"#).unwrap();
        let err = config(&["--profile-file", p]).unwrap_err();
        assert!(err.0.contains("field `procs` must be at least 1"), "{err}");
        std::fs::write(&path, r#"{"name": "quick", "rows": 10}"#).unwrap();
        let err = config(&["--profile-file", p]).unwrap_err();
        assert!(err.0.contains("is a built-in profile's"), "{err}");
        assert!(config(&["--profile-file", "/nonexistent.json"])
            .unwrap_err()
            .0
            .contains("cannot read"));
    }

    #[test]
    fn a_written_profile_reads_back_as_the_same_workload_with_the_new_timing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sized on host.json");
        let mut w = config(&["--transaction", "gr1:100", "--procs", "3"])
            .unwrap()
            .workload;
        let name = Workload::profile_name(&path);
        assert_eq!(name, "sized-on-host");
        std::fs::write(&path, w.to_profile_file(&name, 20, 110)).unwrap();
        let back = config(&["--profile-file", path.to_str().unwrap()])
            .unwrap()
            .workload;
        (w.profile, w.warmup_seconds, w.seconds) = (name, 20, 110);
        assert_eq!(back, w);
        for (file, want) in [
            ("quick.json", "calibrated"),
            ("..json", "calibrated"),
            ("a.b.json", "a-b"),
        ] {
            assert_eq!(Workload::profile_name(Path::new(file)), want, "{file}");
        }
    }

    #[test]
    fn redwood_is_the_default_engine_and_a_record_fixes_its_own() {
        assert_eq!(config(&[]).unwrap().engines, [Engine::Redwood]);
        let parse = |extra: &[&str]| {
            let mut argv = vec!["xtask", "bench", "--experiment-build", "/b"];
            argv.extend_from_slice(extra);
            let Command::Bench(args) = Cli::try_parse_from(argv).unwrap().command else {
                unreachable!("bench flags")
            };
            BenchConfig::try_from(&*args)
        };
        assert!(parse(&["--against-recorded", "rel"]).is_ok());
        let err = parse(&["--against-recorded", "rel", "--engine", "rocksdb"]).unwrap_err();
        assert!(
            err.0
                .contains("--engine does not go with --against-recorded"),
            "{err}"
        );
        // Refused, not accepted and silently unused (there is no baseline arm to give it to).
        let err = parse(&["--against-recorded", "rel", "--baseline-knob", "a=1"]).unwrap_err();
        assert!(
            err.0
                .contains("--baseline-knob does not go with --against-recorded"),
            "{err}"
        );
    }

    #[test]
    fn quick_is_the_default_profile() {
        assert_eq!(config(&[]).unwrap().workload.profile, "quick");
    }

    #[test]
    fn quick_profile_values_can_be_overridden_one_by_one() {
        let w = config(&["--profile", "quick", "--procs", "3", "--seconds", "90"])
            .unwrap()
            .workload;
        assert_eq!(
            (
                w.profile.as_str(),
                w.procs,
                w.threads,
                w.seconds,
                w.warmup_seconds
            ),
            ("quick", 3, 2, 90, 60)
        );
    }

    #[test]
    fn warmup_must_be_shorter_than_the_run() {
        let err = config(&["--warmup-seconds", "60", "--seconds", "60"]).unwrap_err();
        assert!(err.0.contains("includes the warmup"), "{err}");
    }

    #[test]
    fn keylen_too_short_for_rows_is_refused_like_mako_does() {
        let err = config(&["--rows", "100000", "--keylen", "9"]).unwrap_err();
        assert!(err.0.contains("at least 10 bytes"), "{err}");
        assert!(config(&["--rows", "100000", "--keylen", "10"]).is_ok());
    }

    #[test]
    fn transaction_specs_parse_as_mako_does() {
        let ops = transaction_ops("g18ui").unwrap();
        let names: Vec<_> = ops.iter().map(|o| (o.name, o.count)).collect();
        assert_eq!(names, [("g", 18), ("u", 1), ("i", 1)]);
        let ops = transaction_ops("grv2gr5:10ir3:-4").unwrap();
        assert_eq!(
            ops[0],
            TxnOp {
                name: "grv",
                count: 2,
                range: None
            }
        );
        assert_eq!(
            ops[1],
            TxnOp {
                name: "gr",
                count: 5,
                range: Some(10)
            }
        );
        assert_eq!(
            ops[2],
            TxnOp {
                name: "ir",
                count: 3,
                range: Some(4)
            }
        );
        assert!(transaction_ops("gx")
            .unwrap_err()
            .contains("unknown operation at 'x'"));
        assert!(transaction_ops("ir3").unwrap_err().contains("':<range>'"));
        assert!(transaction_ops("g99999999999999999999999")
            .unwrap_err()
            .contains("too large"));
        assert!(config(&["--transaction", "g18uz"])
            .unwrap_err()
            .0
            .contains("unknown operation"));
        assert!(transaction_ops("g0u").unwrap_err().contains("'g0'"));
    }

    #[test]
    fn client_counts_must_be_a_workload_not_a_typo() {
        for (flags, want) in [
            (
                &["--async-xacts", "0"][..],
                "--async-xacts must be at least 1",
            ),
            (&["--procs", "100000"], "--procs 100000 is more than 256"),
            (
                &["--async-xacts", "4294967295"],
                "--async-xacts 4294967295 is more than 10000",
            ),
            (
                &["--rows", "2147483648", "--keylen", "16"],
                "--rows 2147483648 must be between 1 and 2147483647",
            ),
            (&["--threads", "257"], "--threads 257 is more than 256"),
            (
                &["--build-procs", "300"],
                "--build-procs 300 is more than 256",
            ),
        ] {
            let err = config(flags).unwrap_err();
            assert!(err.0.contains(want), "{flags:?}: {err}");
        }
        assert_eq!(config(&["--procs", "256"]).unwrap().workload.procs, 256);
        let err = config(&["--keylen", "4294967295", "--vallen", "1"]).unwrap_err();
        assert!(err.0.contains("keys up to 10000 bytes"), "{err}");
        assert!(config(&["--vallen", "100001"]).is_err());
        // A huge insert range is a workload (plan::preflight estimates it without overflow).
        assert!(config(&["--transaction", "ir4294967296:4294967296"]).is_ok());
    }

    #[test]
    fn knobs_are_normalized_and_arm_knobs_come_after_common_ones() {
        let c = config(&[
            "--knob=--knob_Page-Cache_4k=1",
            "--experiment-knob",
            "page_cache_4k=2",
        ])
        .unwrap();
        assert_eq!(c.baseline.knobs.len(), 1);
        assert_eq!(c.baseline.knobs[0].arg(), "--knob_page_cache_4k=1");
        let exp: Vec<String> = c.experiment.knobs.iter().map(Knob::arg).collect();
        assert_eq!(exp, ["--knob_page_cache_4k=1", "--knob_page_cache_4k=2"]);
    }

    /// A knob and an engine copied from an fdbserver or fdbcli command line work as
    /// written there.
    #[test]
    fn fdbs_own_spellings_of_knobs_and_engines_are_taken() {
        let c = config(&[
            "--knob_page_cache_4k=1",
            "--knob_max_outstanding",
            "64",
            "--engine",
            "ssd-redwood-1",
            "--engine",
            "ssd-rocksdb-v1",
            "--engine",
            "ssd-sharded-rocksdb",
        ])
        .unwrap();
        let knobs: Vec<String> = c.baseline.knobs.iter().map(Knob::arg).collect();
        assert_eq!(
            knobs,
            ["--knob_page_cache_4k=1", "--knob_max_outstanding=64"]
        );
        assert_eq!(c.experiment.knobs.len(), 2);
        assert_eq!(
            c.engines,
            [Engine::Redwood, Engine::Rocksdb, Engine::ShardedRocksdb]
        );
        // What follows a bare `--` is not rewritten; a value-less knob at the end is the
        // knob parser's to refuse.
        let args = crate::cli::fdb_knob_spellings(["x", "--", "--knob_b=1"].map(OsString::from));
        assert_eq!(args, ["x", "--", "--knob_b=1"].map(OsString::from));
        let err = config(&["--knob_page_cache_4k"]).unwrap_err();
        assert!(err.0.contains("NAME=VALUE"), "{err}");
    }

    #[test]
    fn malformed_knob_names_the_flag_and_the_form() {
        let err = config(&["--baseline-knob", "page_cache_4k"]).unwrap_err();
        assert!(err.0.contains("--baseline-knob 'page_cache_4k'"), "{err}");
        assert!(err.0.contains("NAME=VALUE"), "{err}");
        assert!(config(&["--knob", "bad name=1"]).is_err());
        // A knob given twice is refused: otherwise the second value would silently win.
        let err = config(&["--knob", "a=1", "--knob", "A=2"]).unwrap_err();
        assert!(
            err.0.contains("--knob gives knob a twice, =1 and =2"),
            "{err}"
        );
        assert!(config(&["--knob", "a=1", "--knob", "a=1"]).is_ok());
        let err = config(&["--knob", "min_trace_severity=40"]).unwrap_err();
        assert!(err.0.contains("status_incomplete"), "{err}");
    }

    #[test]
    fn engine_all_expands_without_duplicates() {
        let c = config(&["--engine", "rocksdb", "--engine", "all"]).unwrap();
        assert_eq!(
            c.engines,
            [Engine::Rocksdb, Engine::Redwood, Engine::ShardedRocksdb]
        );
    }

    #[test]
    fn bad_numbers_are_usage_errors() {
        assert!(config(&["--trials", "0"]).is_err());
        assert!(config(&["--max-regression", "0"]).is_err());
        assert!(config(&["--max-regression", "NaN"]).is_err());
        assert!(config(&["--slo-tps=-5"]).is_err());
        assert!(config(&["--timeout-configure", "0"]).is_err());
        assert!(config(&["--timeout-configure", "18446744073709551615"]).is_err());
        assert!(config(&["--seconds", "18446744073709551615"]).is_err());
        assert!(config(&["--trials", "4294967295"]).is_err());
        assert!(config(&["--trials", "auto"])
            .unwrap_err()
            .0
            .contains("--time-budget"));
        assert!(config(&["--time-budget", "1h"]).is_err());
        let c = config(&["--trials", "auto", "--time-budget", "90min"]).unwrap();
        assert_eq!(
            c.schedule,
            Schedule::Sequential {
                budget: Duration::from_secs(5400)
            }
        );
        assert_eq!(c.schedule.planned_pairs(), 3);
    }

    #[test]
    fn a_budget_that_cannot_hold_the_first_look_is_refused() {
        // Help promises at least 3 pairs before the first look: a budget too short for
        // them is refused, not run with fewer.
        let seq = ["--pairing", "sequential", "--trials", "auto"];
        let err = config(&[&seq[..], &["--time-budget", "1s"]].concat()).unwrap_err();
        assert!(
            err.0.contains(
                "--time-budget 1s cannot hold the 3 pairs per engine --trials auto runs before \
                 its first look: their workload runs alone take 12m (3 pairs x 2 trial(s) one \
                 after the other x --seconds 120 x 1 engine(s))"
            ),
            "{err}"
        );
        // The quick profile's 120 s per trial, 2 engines: 24 minutes at least.
        let two = [&seq[..], &["--engine", "redwood", "--engine", "rocksdb"]].concat();
        let at = |b: &str| config(&[&two[..], &["--time-budget", b]].concat());
        assert!(at("23m").is_err());
        assert!(at("24m").is_ok());
        // A duet's pair takes one trial's time: half as long.
        let duet = ["--pairing", "duet", "--trials", "auto", "--time-budget"];
        if crate::process::allowed_cpus().is_ok_and(|c| c.len() >= 2) {
            assert!(config(&[&duet[..], &["5m"]].concat()).is_err());
            assert!(config(&[&duet[..], &["6m"]].concat()).is_ok());
        }
    }
}
