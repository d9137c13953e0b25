//! Command-line flags (clap). The first stage of the pipeline: raw, unchecked input.
//!
//! Nothing here is validated beyond what clap parses; `config` turns [`BenchArgs`] into a
//! checked [`crate::config::BenchConfig`], and no later stage sees these structs.

use std::{ffi::OsString, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Exit codes, shown in `--help` and the README; `main` is the only place that maps to them.
pub const EXIT_CODES: &str = "\
Exit status:
  0   every engine MEASURED or INCONCLUSIVE (no regression, no SLO violation)
  1   a REGRESSION or SLO-VIOLATION (or INCONCLUSIVE with --strict)
  2   a TIMEOUT, an infrastructure error (crash, a build tree missing a binary, an invalid
      report) or an interrupt
  64  usage error: a bad flag or value, a build tree that does not exist or is no Release
      build with BUILD_MAKO, or an A/A (one build, same knobs) without its flag";

/// Exit codes of `calibrate`.
pub const CALIBRATE_EXIT_CODES: &str = "\
Exit status:
  0   every trial was measured (whatever the A/A verdict)
  2   a trial timed out or failed, or an interrupt
  64  usage error";

/// perfgate: A/B throughput gate for FoundationDB, built on mako.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    version = crate::version::LINE.as_str(),
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// Colours on the terminal: auto, always, never.
    ///
    /// auto: only on a terminal, and not when NO_COLOR is set to a non-empty value or TERM
    /// is dumb. always: also into a pipe or a file (a CI log viewer that renders them), in
    /// spite of NO_COLOR and TERM. Only bench's and calibrate's log lines have colours.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        hide_possible_values = true,
        help_heading = OUTPUTS
    )]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

/// `--color`: whether the terminal output gets ANSI colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR or TERM=dumb says otherwise.
    Auto,
    /// Always, even into a pipe, whatever NO_COLOR and TERM say.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// The choice the flag made, or `None` for `auto` (decided by the terminal and the
    /// environment, `run::use_color`).
    pub fn forced(self) -> Option<bool> {
        match self {
            ColorChoice::Auto => None,
            ColorChoice::Always => Some(true),
            ColorChoice::Never => Some(false),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload (mako or FDB's multitest ReadWrite) on a baseline and an experiment FDB
    /// build tree in A/B pairs on a RAM disk, a pair's arms at once where the run allows,
    /// and judge the experiment's TPS.
    // Fixed usage: clap's, after a mistyped flag, showed the flag it suggested as the
    // whole usage ("Usage: cargo xtask bench --logs <N>").
    #[command(
        after_help = EXIT_CODES,
        override_usage = "cargo xtask bench [OPTIONS]  (the arms: --baseline-build DIR \
                          --experiment-build DIR, or --fdb-src DIR; see --help)"
    )]
    Bench(Box<BenchArgs>),
    /// Measure this host's noise: an A/A run of one build (both arms), reporting the
    /// coefficient of variation, the MDE per number of trials, and how many trials
    /// --max-regression needs. Writes calibration.json beside the usual results.
    #[command(
        after_help = CALIBRATE_EXIT_CODES,
        override_usage = "cargo xtask calibrate --build DIR [OPTIONS]"
    )]
    Calibrate(Box<CalibrateArgs>),
    /// Judge a saved run again, offline (e.g. with another --max-regression): reads its
    /// meta.json and trials.json, runs nothing, writes summary.json, summary.md and
    /// junit.xml anew.
    #[command(after_help = EXIT_CODES)]
    Compare(CompareArgs),
    /// Check this host in seconds: RAM disk and free space, memory cgroup, cores, CPU
    /// frequency scaling, other load, build tools, and an fsync latency probe of the work
    /// dir. Exit 0, or 2 when a check fails.
    Doctor {
        /// Work dir to check; default: as `bench` would choose it (/mnt/ram, else the
        /// largest tmpfs).
        #[arg(long, env = "PERFGATE_WORKDIR", value_name = "PATH")]
        workdir: Option<PathBuf>,
        /// Print the findings as one JSON object instead, for scripts.
        ///
        /// {"schema_version": 1, "result": "ok"|"warn"|"fail", "exit_code": 0|2, "checks":
        /// [{"name", "status", "value", "hint"}, ...]}: each check's name, its status, what
        /// it found and what to do (null when nothing), and the worst status. The exit
        /// status is the same as without --json.
        #[arg(long)]
        json: bool,
    },
    /// Build the arms' FDB trees from --fdb-src ahead of time (what `bench` would build),
    /// and print where they are.
    Build(SourceArgs),
    /// Internal: the watchdog `bench` starts beside itself, which ends a run's processes
    /// when the gate dies however it dies (`run::reaper::Reaper`).
    #[command(name = "__reap", hide = true)]
    Reap {
        /// The run's directory on the work dir (`perfgate-<gate pid>-<nonce>`).
        run_dir: PathBuf,
        /// The run's log, where what was cleaned up is appended.
        log: PathBuf,
    },
    /// Recorded baselines in baselines/: record one from a finished run, list, show.
    #[command(subcommand)]
    Baseline(BaselineCommand),
}

/// `cargo xtask baseline ...`
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Record one baseline per engine from a finished run's trials of one arm.
    Record {
        /// Results directory of a `bench` or `calibrate` run.
        #[arg(long, value_name = "RESULTS_DIR")]
        from: PathBuf,
        /// File name (without .json); default `<host class>-<profile>-<engine>`.
        #[arg(long)]
        name: Option<String>,
        /// Which arm's trials to record.
        #[arg(long, value_enum, default_value = "experiment")]
        arm: ArmArg,
        /// Replace an existing baseline of the same name.
        #[arg(long, conflicts_with = "add_run")]
        force: bool,
        /// Add the run to the existing baseline of that name as another day's run of the
        /// same build (at least 12 h after each of its runs): with runs from 2 or more days
        /// a record measures how the host's speed moves between days, which
        /// `bench --against-recorded --no-control` needs.
        #[arg(long)]
        add_run: bool,
        /// Where baselines live; default: baselines/ in this workspace.
        #[arg(long, value_name = "DIR")]
        baselines_dir: Option<PathBuf>,
    },
    /// List the recorded baselines.
    List {
        /// Where baselines live; default: baselines/ in this workspace.
        #[arg(long, value_name = "DIR")]
        baselines_dir: Option<PathBuf>,
    },
    /// Print one baseline.
    Show {
        /// Baseline name (file name without .json) or path.
        name: String,
        /// Where baselines live; default: baselines/ in this workspace.
        #[arg(long, value_name = "DIR")]
        baselines_dir: Option<PathBuf>,
    },
}

/// An arm, as named on the command line.
/// A metric `--gate` can add to the gated set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateMetric {
    /// mako's p99 transaction latency.
    Latency,
    /// Storage server CPU per transaction relative to the client's (host speed cancelled).
    StorageCpuRatio,
    /// Storage server CPU microseconds per transaction.
    StorageCpu,
    /// Transaction log CPU microseconds per transaction.
    LogCpu,
    /// Stateless server CPU microseconds per transaction.
    StatelessCpu,
    /// Client (mako, all processes) CPU microseconds per transaction.
    ClientCpu,
    /// Storage server instructions per transaction (hosts with a hardware PMU; the
    /// simulation driver gates on it by default).
    StorageInstructions,
    /// Client (mako, all processes) instructions per transaction (hosts with a hardware PMU).
    ClientInstructions,
    /// tlog instructions per transaction (the simulation driver).
    LogInstructions,
    /// Stateless servers' instructions per transaction (the simulation driver).
    StatelessInstructions,
    /// Instructions per transaction of the whole simulated run, shared code included (the
    /// simulation driver).
    Instructions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArmArg {
    Baseline,
    Experiment,
}

/// Flags of `cargo xtask compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results directory of a `bench` or `calibrate` run.
    #[arg(value_name = "RESULTS_DIR")]
    pub dir: PathBuf,
    /// Tolerated TPS loss in percent; default: the run's.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub max_regression: Option<f64>,
    /// Absolute TPS floor of the experiment; default: the run's.
    #[arg(long, value_name = "TPS", allow_negative_numbers = true)]
    pub slo_tps: Option<f64>,
    /// Fail (exit 1) on INCONCLUSIVE.
    #[arg(long)]
    pub strict: bool,
    /// Where to write summary.json, summary.md and junit.xml; default:
    /// <RESULTS_DIR>/compare-<UTC time>-<pid>.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write the JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Also write the verdict table as Markdown here (always written to <out>/summary.md).
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write the experiment's values as Bencher Metric Format JSON here.
    #[arg(long, value_name = "FILE")]
    pub export_bmf: Option<PathBuf>,
    /// Also write github-action-benchmark JSON: higher-is-better metrics, then lower.
    #[arg(long = "export-benchmark", num_args = 2, value_names = ["HI", "LO"])]
    pub export_benchmark_action: Option<Vec<PathBuf>>,
    /// Print summary.json to stdout instead of the table, for scripts.
    #[arg(long)]
    pub json: bool,
}

impl Command {
    /// Whether the command was asked for `--json` (then an error before any verdict is
    /// also printed as JSON, `report::error_json`).
    pub fn wants_json(&self) -> bool {
        match self {
            Command::Bench(a) => a.run.json,
            Command::Calibrate(a) => a.run.json,
            Command::Compare(a) => a.json,
            Command::Doctor { json, .. } => *json,
            _ => false,
        }
    }
}

/// The command line with fdbserver's spelling of a knob, `--knob_NAME=VALUE` or
/// `--knob_NAME VALUE` (`fdbserver/fdbserver.actor.cpp` takes both), rewritten as the
/// gate's `--knob knob_NAME=VALUE`, so that a knob copied from an fdbserver command line
/// applies to both arms. Arguments after a bare `--` are left as they are.
pub fn fdb_knob_spellings(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        if a == "--" {
            out.push(a);
            out.extend(args);
            break;
        }
        let knob = a
            .to_str()
            .and_then(|s| s.strip_prefix("--"))
            .filter(|s| s.starts_with("knob_"));
        match knob {
            Some(k) if k.contains('=') => out.extend(["--knob".into(), k.into()]),
            Some(k) => {
                let value = args.next().unwrap_or_default();
                let mut spelled = OsString::from(format!("{k}="));
                spelled.push(value);
                out.extend(["--knob".into(), spelled]);
            }
            None => out.push(a),
        }
    }
    out
}

/// Storage engine as named on the command line (the gate's short name, or the name
/// `fdbcli configure` and `status json` use); `all` expands to every engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// `ssd-redwood-1`
    #[value(alias = "ssd-redwood-1")]
    Redwood,
    /// `ssd-rocksdb-v1` (the build must have RocksDB compiled in)
    #[value(alias = "ssd-rocksdb-v1")]
    Rocksdb,
    /// `ssd-sharded-rocksdb` (the build must have RocksDB compiled in)
    #[value(alias = "ssd-sharded-rocksdb")]
    ShardedRocksdb,
    /// every engine above
    All,
}

/// How the two trials of an A/B pair share the host (`--pairing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairingArg {
    /// A duet where the run allows one (a mako profile on clusters the gate starts, a
    /// baseline arm, no --pin, 2 or more CPUs, room for two trials), else sequential; the
    /// plan says which and why.
    Auto,
    /// One after the other (blocks A B B A or B A A B), each on the whole host.
    Sequential,
    /// Both at once, each on half of the allowed CPUs with a cluster, work dir and ports
    /// of its own; the halves swap from pair to pair.
    Duet,
}

/// Named workload profile; every value it sets can be overridden by its own flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileArg {
    /// The upstream `contrib/mako_storage_bench.sh` workload: rows 100000, build -p 4,
    /// run -p 7 -t 4 --async_xacts 128, 300 s warmup, 600 s run.
    Standard,
    /// For a small host (2-4 cores): build -p 2; run -p 2 -t 2 --async_xacts 64, 60 s
    /// warmup, 120 s run. Run -p of both profiles is scaled to the host's cores (docs/workloads.md).
    Quick,
    /// Range reads that load the storage server more than the client: 16-byte keys and
    /// values, one 1000-row range read per transaction (gr1:1000), run -p 2 -t 2
    /// --async_xacts 64, 30 s warmup, 90 s run.
    Scan,
    /// Multitest driver (FDB's ReadWrite workload on tester processes): one point read
    /// per transaction; 100000 rows of 16-byte keys and 100-byte values, 1 tester x 64
    /// actors, target 100000 TPS, 60 s test.
    #[value(name = "point-read")]
    #[serde(rename = "point-read")]
    PointRead,
    /// Multitest driver: one blind write per transaction; otherwise as point-read.
    Write,
    /// Multitest driver: about 91% reads (A: 10 reads; B: 1 read, 9 writes; alpha 0.1);
    /// otherwise as point-read.
    Mixed,
    /// Simulation driver (FDB's simulator under Valgrind, instructions per transaction):
    /// ReadWrite with 18 point reads and 2 writes per transaction, as mako's g18ui; 20000
    /// rows of 16-byte keys and 100-byte values, target 1000 TPS, 5 simulated seconds.
    #[value(name = "sim-g18ui")]
    #[serde(rename = "sim-g18ui")]
    SimG18ui,
    /// Simulation driver: one point read per transaction; otherwise as sim-g18ui.
    #[value(name = "sim-point-read")]
    #[serde(rename = "sim-point-read")]
    SimPointRead,
    /// Simulation driver: one blind write per transaction; otherwise as sim-g18ui.
    #[value(name = "sim-write")]
    #[serde(rename = "sim-write")]
    SimWrite,
    /// Simulation driver: the mixed load (A: 10 reads; B: 1 read, 9 writes; alpha 0.1);
    /// otherwise as sim-g18ui.
    #[value(name = "sim-mixed")]
    #[serde(rename = "sim-mixed")]
    SimMixed,
}

/// `--trials`: a number of pairs, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialsArg {
    Count(u32),
    Auto,
}

impl std::str::FromStr for TrialsArg {
    type Err = String;

    fn from_str(s: &str) -> Result<TrialsArg, String> {
        if s == "auto" {
            return Ok(TrialsArg::Auto);
        }
        s.parse()
            .map(TrialsArg::Count)
            .map_err(|_| format!("'{s}' is neither a number of trials nor 'auto'"))
    }
}

// The headings of `bench`'s and `calibrate`'s help (and `build`'s), in the order shown:
// clap orders headings by the first flag declared under each, so flags are declared
// heading by heading (the flattened `SourceArgs`, which holds --timeout-build, comes after
// `RunArgs`). Under a heading, flags show in declaration order unless `display_order` says
// otherwise ("The arms", calibrate's --budget). A flag's first doc paragraph is its `-h`
// line (one line at 100 columns, or clap moves every help of that heading to a line of
// its own); the rest shows with `--help` only, as do the `hide_short_help` expert flags.

/// What is compared: the builds or revisions, knobs and recorded baselines.
const ARMS: &str = "The arms";
/// What the trials run.
const WORKLOAD: &str = "Workload (defaults from --profile)";
/// Where and on what the trials run.
const CLUSTER: &str = "Cluster";
/// How many trials and how they are judged.
const VERDICTS: &str = "Statistics and verdicts";
/// What is written where.
const OUTPUTS: &str = "Outputs";
/// Every --timeout-*.
const BOUNDS: &str = "Bounds (seconds)";

/// Flags of `cargo xtask bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// FDB build tree of the baseline arm (A).
    ///
    /// It holds bin/fdbserver, bin/fdbcli, bin/mako and lib/libfdb_c.so (cmake
    /// -DBUILD_MAKO=ON). Without it the arm is built from --fdb-src at --baseline. With
    /// --against-recorded: the control arm, a tree of the recorded build (the same source
    /// version).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "no_control",
        help_heading = ARMS,
        display_order = 1
    )]
    pub baseline_build: Option<PathBuf>,

    /// Judge the experiment against a recorded baseline.
    ///
    /// Release qualification: NAME is a name in baselines/, or a path. A fresh control arm
    /// of the recorded build (--baseline-build, else the tree the record was made from if it
    /// is still there, else built from --fdb-src at the record's source version) runs
    /// paired with the experiment and gives the verdict; the record checks the host (today's
    /// control against the recorded trials, or a sweep's recorded knee: HOST CHANGED when
    /// they differ).
    #[arg(long, value_name = "NAME", help_heading = ARMS, display_order = 13)]
    pub against_recorded: Option<String>,

    /// With --against-recorded: run no control arm.
    ///
    /// The experiment is compared unpaired with the mean of the record's days, the spread
    /// of the day means in the error (a record of one run is refused: add days with
    /// `baseline record --add-run`). Weaker than a control arm (docs/recorded-baselines.md,
    /// "Without a control arm"); only when no tree of the recorded build can run.
    #[arg(long, requires = "against_recorded", help_heading = ARMS, display_order = 14)]
    pub no_control: bool,

    /// Accept a record from another host class or work dir kind.
    ///
    /// With --against-recorded: a record from another host class, or made on another kind
    /// of work dir (RAM disk or disk); the report says so loudly.
    #[arg(
        long,
        requires = "against_recorded",
        help_heading = ARMS,
        display_order = 15,
        hide_short_help = true
    )]
    pub allow_host_mismatch: bool,

    /// Accept a record made with other knobs than this run's.
    ///
    /// With --against-recorded, e.g. to judge a knob against a release; the report says
    /// so loudly.
    #[arg(
        long,
        requires = "against_recorded",
        help_heading = ARMS,
        display_order = 16,
        hide_short_help = true
    )]
    pub allow_knob_mismatch: bool,

    /// Where baselines live; default: this workspace's baselines/.
    #[arg(long, value_name = "DIR", help_heading = ARMS, display_order = 17)]
    pub baselines_dir: Option<PathBuf>,

    /// FDB build tree of the experiment arm (B).
    ///
    /// It may be the same tree as the baseline for a knob A/B (then give
    /// --baseline-knob/--experiment-knob) or an A/A (--allow-same). Without it the arm is
    /// built from --fdb-src at --experiment.
    #[arg(long, value_name = "DIR", help_heading = ARMS, display_order = 2)]
    pub experiment_build: Option<PathBuf>,

    /// Accept an A/A run: two arms of the same build and knobs.
    ///
    /// Two arms with the same source version, the same binaries and the same knobs, e.g.
    /// to measure this host's noise; see also `calibrate`.
    #[arg(long, help_heading = ARMS, display_order = 11)]
    pub allow_same: bool,

    #[command(flatten)]
    pub run: RunArgs,

    // After `run`: it holds --timeout-build, the last heading's.
    #[command(flatten)]
    pub source: SourceArgs,

    /// Saturation sweep of the target TPS (multitest profiles).
    ///
    /// Step the target TPS up a ladder, --trials A/B pairs per step, and stop one step past
    /// the knee, where no arm follows its target any more (below 90% of it, or retries).
    /// The knee of each arm is the highest target it followed; a lower knee of the
    /// experiment is a REGRESSION when the pairs at the steps above the lower knee show a
    /// loss beyond --max-regression (one-sided test at 2.5%), else INCONCLUSIVE. A list
    /// (2000,4000,8000) or a geometric ladder START..MAXxFACTOR (2000..64000x2). With
    /// --against-recorded of a sweep's record, give the record's ladder (a run of another
    /// ladder is refused); the knee is judged against the control arm's (or, with
    /// --no-control, the lowest recorded day's, without a test).
    #[arg(long, value_name = "LADDER", help_heading = WORKLOAD)]
    pub sweep: Option<String>,

    /// Run the multitest against a cluster the gate did not start.
    ///
    /// A qualification cluster: its cluster file, read once and copied, never written. No
    /// build of servers, no `configure new`, one arm: --experiment-build gives the testers'
    /// fdbserver and fdbcli, of the cluster's version. The database must be empty
    /// (ReadWrite's test clears every normal key when it ends). The cluster's version,
    /// shape and health are read from `status json` and recorded; the verdict is MEASURED,
    /// or SLO-VIOLATION below --slo-tps. With --against-recorded, it is judged against a
    /// record of a cluster of the same class, without a control arm (as --no-control: the
    /// record needs runs of 2 or more days).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["baseline_build", "noise_from"],
        help_heading = CLUSTER
    )]
    pub cluster_file: Option<PathBuf>,

    /// With --cluster-file: testers started on other hosts.
    ///
    /// Each started as `fdbserver -c test -C <the cluster file> -p auto:<port>`; the
    /// multitest waits for them beside the gate's own --testers, within
    /// --timeout-mako-build.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "cluster_file",
        help_heading = CLUSTER,
        hide_short_help = true
    )]
    pub remote_testers: u32,

    /// Compare the pairs' noise with an earlier A/A calibration's.
    ///
    /// Each verdict's note says how the noise of the run's pairs compares with that of a
    /// `cargo xtask calibrate --out DIR`, and when it is significantly larger (the host is
    /// noisier than when it was calibrated). Never pooled: verdicts are judged on the run's
    /// own pairs, as a few pairs cannot show that today is no noisier than the calibration's
    /// day (docs/calibration.md, "Noise from a calibration"). Refused unless it ran on this
    /// host class, with this workload and work dir kind, finished, and is younger than
    /// --noise-max-age. Recorded in meta.json and in every verdict of a metric it measured.
    #[arg(long, value_name = "DIR", conflicts_with = "no_control", help_heading = VERDICTS)]
    pub noise_from: Option<PathBuf>,

    /// Oldest calibration --noise-from accepts.
    ///
    /// For example `14d` or `36h`.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "14d",
        value_parser = humantime::parse_duration,
        requires = "noise_from",
        help_heading = VERDICTS
    )]
    pub noise_max_age: std::time::Duration,
}

/// Where arms without a build tree are built from.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// FDB git checkout to build the arms from.
    ///
    /// Default: foundationdb beside the gate's workspace.
    #[arg(long, env = "FDB_SRC", value_name = "PATH", help_heading = ARMS, display_order = 3)]
    pub fdb_src: Option<PathBuf>,
    /// Revision of the baseline arm (any git rev syntax).
    ///
    /// Default: the merge base of HEAD with the upstream main branch.
    #[arg(long, value_name = "REV", help_heading = ARMS, display_order = 4)]
    pub baseline: Option<String>,
    /// Revision of the experiment arm; default: the working tree.
    ///
    /// Uncommitted changes are included.
    #[arg(long, value_name = "REV", help_heading = ARMS, display_order = 5)]
    pub experiment: Option<String>,
    /// Extra cmake argument for both arms (repeatable).
    ///
    /// For example --cmake-arg=-DWITH_ROCKSDB=OFF.
    #[arg(
        long = "cmake-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        help_heading = ARMS,
        display_order = 6
    )]
    pub cmake_args: Vec<String>,
    /// Parallel build jobs; default: the host's cores.
    #[arg(long, value_name = "N", help_heading = ARMS, display_order = 7)]
    pub build_jobs: Option<usize>,
    /// For one arm's configure + build.
    #[arg(long, default_value_t = 6 * 3600, value_name = "SECONDS", help_heading = BOUNDS)]
    pub timeout_build: u64,
}

/// Flags of `cargo xtask calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// FDB build tree to measure; both arms run it.
    ///
    /// Use --trials 5 or more for a useful estimate of the noise.
    #[arg(long, value_name = "DIR", help_heading = ARMS, display_order = 1)]
    pub build: PathBuf,

    /// Where baselines (and slo.json) live.
    ///
    /// Default: baselines/ in this workspace.
    #[arg(long, value_name = "DIR", help_heading = ARMS, display_order = 17)]
    pub baselines_dir: Option<PathBuf>,

    #[command(flatten)]
    pub run: RunArgs,

    /// The time a gate run on this host may take.
    ///
    /// For example `30m` (ci/gate.sh's default): the trials are sized for it (warmup,
    /// window, pairs).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = humantime::parse_duration,
        default_value = "30m",
        help_heading = VERDICTS,
        display_order = 0
    )]
    pub budget: std::time::Duration,

    /// Write the sized trials as a profile for `--profile-file`.
    ///
    /// A JSON file: this run's workload with the recommended warmup and window, named after
    /// the file. The file must not exist.
    #[arg(long, value_name = "FILE", help_heading = OUTPUTS)]
    pub write_profile: Option<PathBuf>,
}

/// Flags shared by `bench` and `calibrate`: knobs, workload, cluster, trials and criteria,
/// outputs, bounds (declared in the order of their headings).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// fdbserver knob for both arms, as NAME=VALUE.
    ///
    /// The `knob_` prefix is optional.
    #[arg(long = "knob", value_name = "NAME=VALUE", help_heading = ARMS, display_order = 8)]
    pub knobs: Vec<String>,

    /// fdbserver knob for the baseline arm only.
    ///
    /// Applied after --knob, so it overrides it.
    #[arg(
        long = "baseline-knob",
        value_name = "NAME=VALUE",
        help_heading = ARMS,
        display_order = 9
    )]
    pub baseline_knobs: Vec<String>,

    /// fdbserver knob for the experiment arm only.
    ///
    /// Applied after --knob, so it overrides it.
    #[arg(
        long = "experiment-knob",
        value_name = "NAME=VALUE",
        help_heading = ARMS,
        display_order = 10
    )]
    pub experiment_knobs: Vec<String>,

    /// Run build trees that are not plain Release builds.
    ///
    /// Build trees whose CMakeCache.txt shows a build that is not Release, lacks
    /// BUILD_MAKO or is instrumented (sanitizers, coverage, profile generation) are refused
    /// otherwise, since their numbers say nothing about a change. Warned loudly.
    #[arg(long, help_heading = ARMS, display_order = 12)]
    pub allow_non_release: bool,

    /// Workload profile.
    ///
    /// quick is the everyday one; standard, the upstream workload for release
    /// qualification; scan, range reads that load the storage server (these three run
    /// mako).
    /// point-read, write and mixed run FDB's multitest ReadWrite workload instead.
    #[arg(long, value_enum, default_value = "quick", help_heading = WORKLOAD)]
    pub profile: ProfileArg,

    /// A user profile: a JSON file of workload values.
    ///
    /// It names the profile and any workload values, e.g. {"name": "big-values", "base":
    /// "standard", "vallen": 4096}. Its values override --profile (or its "base");
    /// workload flags override it.
    #[arg(long, value_name = "PATH", help_heading = WORKLOAD)]
    pub profile_file: Option<PathBuf>,

    #[command(flatten, next_help_heading = WORKLOAD)]
    pub workload: WorkloadArgs,

    /// Storage engine to benchmark; repeat for several [default: redwood]
    ///
    /// Against a recorded baseline the record's engine runs, and --engine is refused.
    #[arg(long = "engine", value_enum, value_name = "ENGINE", help_heading = CLUSTER)]
    pub engines: Vec<EngineArg>,

    /// Work directory for the cluster's data.
    ///
    /// It should be a RAM disk (tmpfs). Default: /mnt/ram when writable, else the tmpfs
    /// mount with the most free space. `PERFGATE_WORKDIR`, else the older `WORKDIR`, stand
    /// for it.
    #[arg(long, env = "PERFGATE_WORKDIR", value_name = "PATH", help_heading = CLUSTER)]
    pub workdir: Option<PathBuf>,

    /// Pin processes to CPUs, the storage server to one of its own.
    ///
    /// On a host with 2 or more allowed CPUs, the storage server runs on a CPU of its own
    /// and everything else (other servers, mako, the gate) on the rest. Off by default: on
    /// a 2-core VM it did not lower the noise of any metric, and it makes TPS client-bound,
    /// blind to storage server cost (docs/resolution.md).
    #[arg(long, help_heading = CLUSTER)]
    pub pin: bool,

    /// Ports the gate's servers and testers listen on.
    ///
    /// LOW-HIGH (e.g. 40000-40999), for a host whose firewall opens only a range: with
    /// --cluster-file, the cluster's servers connect to the testers here. A trial needs one
    /// port per server and tester. Default: any free port the OS gives.
    #[arg(
        long,
        value_name = "LOW-HIGH",
        value_parser = crate::input::PortRange::parse,
        help_heading = CLUSTER,
        hide_short_help = true
    )]
    pub port_range: Option<crate::input::PortRange>,

    #[command(flatten, next_help_heading = CLUSTER)]
    pub topology: TopologyArgs,

    /// A/B pairs per engine, or `auto`; default: 4 in a duet, else 3.
    ///
    /// With `auto`, pairs are added until the verdict is decided or --time-budget is spent
    /// (at least 3: a budget that cannot hold 3 pairs' mako runs is refused). Sequential
    /// arms run back to back in blocks A B B A or B A A B; a duet's halves of the CPUs swap
    /// from pair to pair, so it needs an even count for them to cancel. With one pair the
    /// verdict is at best INCONCLUSIVE.
    #[arg(long, value_name = "N|auto", help_heading = VERDICTS)]
    pub trials: Option<TrialsArg>,

    /// How the two trials of a pair share the host: both at once (duet) where the run
    /// allows it, else one after the other.
    ///
    /// A duet's arms run in the same seconds, each on half of the allowed CPUs (the halves
    /// swap from pair to pair) with a cluster, work dir and ports of its own, and start
    /// their measured run together: a change of the host's speed hits both and cancels in
    /// the pair's ratio. mako profiles on a cluster the gate starts (docs/duet.md). `auto`
    /// runs a duet where it can and says in the plan why not where it cannot.
    #[arg(
        long,
        value_enum,
        env = "PERFGATE_PAIRING",
        default_value = "auto",
        help_heading = VERDICTS,
        hide_short_help = true
    )]
    pub pairing: PairingArg,

    /// Time budget of `--trials auto`, e.g. `2h` or `90min`.
    ///
    /// Shared by the engines.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = humantime::parse_duration,
        help_heading = VERDICTS
    )]
    pub time_budget: Option<std::time::Duration>,

    /// Seed of the trial order; default: from the clock.
    ///
    /// The order is A B B A or B A A B per block of two pairs. Recorded in meta.json to
    /// reproduce an order.
    #[arg(long, value_name = "N", help_heading = VERDICTS)]
    pub seed: Option<u64>,

    /// Tolerated loss in percent; default 2 (sim-* profiles: 0.5).
    ///
    /// The simulation driver's instruction counts have no noise to make room for, so its
    /// default is the smallest change worth a look. MEASURED when the 95% interval rules out a larger loss, REGRESSION when the
    /// experiment is significantly worse by more than this.
    #[arg(
        long,
        value_name = "PCT",
        allow_negative_numbers = true,
        help_heading = VERDICTS
    )]
    pub max_regression: Option<f64>,

    /// Fail the run (exit 1) when a verdict is INCONCLUSIVE.
    ///
    /// INCONCLUSIVE: too few trials for the noise.
    #[arg(long, help_heading = VERDICTS)]
    pub strict: bool,

    /// Also gate p99 transaction latency; as `--gate latency`.
    ///
    /// The latency is mako's, warmup included.
    #[arg(long, help_heading = VERDICTS)]
    pub gate_latency: bool,

    /// Metrics that gate the run besides TPS; repeat or use commas.
    ///
    /// Each with the same rule and tolerance: one more comparison in the Holm family; one
    /// that was not measured is an ERROR. Every metric is judged and reported either way;
    /// only gated ones decide the exit status. Repeat or separate with commas.
    #[arg(
        long = "gate",
        value_name = "METRIC",
        value_enum,
        value_delimiter = ',',
        help_heading = VERDICTS
    )]
    pub gate: Vec<GateMetric>,

    /// Gate on TPS and what --gate names only.
    ///
    /// By default the storage server's CPU per transaction relative to the client's
    /// (`storage_to_client_cpu`) gates too whenever every trial measured it: on a shared
    /// 2-core VM its noise was half of TPS's or less (docs/resolution.md).
    #[arg(long, help_heading = VERDICTS)]
    pub tps_only: bool,

    /// Floor of the experiment's mean TPS, else SLO-VIOLATION.
    #[arg(long, value_name = "TPS", allow_negative_numbers = true, help_heading = VERDICTS)]
    pub slo_tps: Option<f64>,

    /// Make a trial whose storage server was not CPU-bound an error.
    ///
    /// A trial whose storage server used less than 0.85 cores over the measurement window
    /// is an error instead of a warning: such a run measures the client or the host, not
    /// the storage server.
    #[arg(long, help_heading = VERDICTS)]
    pub require_cpu_bound: bool,

    /// Bracket each trial by the host-speed probe, and judge from 5 pairs on at equal host
    /// speed.
    ///
    /// The same fixed CPU work is timed before each trial's cluster starts and after it is
    /// torn down (about 0.75 s each in the debug gate), with the host's steal time and CPU
    /// clock; the judge regresses the pairs' log TPS ratios on the probe's and judges the
    /// intercept. Off by default: on a 2-vCPU VM the probe's own time varied 2x within
    /// one trial, and it lowered the pairs' sd in 1 of 5 real FDB runs (docs/resolution.md).
    #[arg(long, hide_short_help = true, help_heading = VERDICTS)]
    pub host_probe: bool,

    /// Results directory.
    ///
    /// Default: <cargo target dir>/perfgate/<UTC time>-<pid>.
    #[arg(long, value_name = "DIR", help_heading = OUTPUTS)]
    pub out: Option<PathBuf>,

    /// Also write the JUnit XML here.
    ///
    /// It is always written to <out>/junit.xml.
    #[arg(long, value_name = "PATH", help_heading = OUTPUTS)]
    pub junit: Option<PathBuf>,

    /// Also write the verdict table as Markdown here.
    ///
    /// For a CI job summary (e.g. $GITHUB_STEP_SUMMARY); it is always written to
    /// <out>/summary.md.
    #[arg(long, value_name = "FILE", help_heading = OUTPUTS)]
    pub export_markdown: Option<PathBuf>,

    /// Also write the values as Bencher Metric Format JSON here.
    ///
    /// The experiment arm's: one benchmark per engine (perfgate/<engine>), one measure per judged metric: the
    /// experiment's mean (TPS with its lowest and highest trial), for `bencher run
    /// --adapter json --file FILE`.
    #[arg(long, value_name = "FILE", help_heading = OUTPUTS)]
    pub export_bmf: Option<PathBuf>,

    /// Also write github-action-benchmark JSON, two files.
    ///
    /// HI is for the action's customBiggerIsBetter tool (TPS, the knee), LO for
    /// customSmallerIsBetter (latency, work per transaction): one entry per engine and
    /// judged metric, the experiment's mean with its unit.
    #[arg(long = "export-benchmark", num_args = 2, value_names = ["HI", "LO"], help_heading = OUTPUTS)]
    pub export_benchmark_action: Option<Vec<PathBuf>>,

    /// Print only warnings, errors and the final verdict table.
    ///
    /// On the terminal: no plan, no progress (run.log has it all).
    #[arg(long, help_heading = OUTPUTS)]
    pub quiet: bool,

    /// Print summary.json to stdout instead of the table, for scripts.
    #[arg(long, help_heading = OUTPUTS)]
    pub json: bool,

    /// Print the plan and exit.
    ///
    /// The plan: trial order, command lines' knobs, work dir. Arms from --fdb-src are built
    /// (or found in the cache) first, since the plan names their binaries. With --json, the
    /// plan as JSON (as meta.json's "plan").
    #[arg(long, help_heading = OUTPUTS)]
    pub dry_run: bool,

    // Last: clap's `next_help_heading` holds for every later flag until another is set
    // (the flags after `run` in `BenchArgs` and `CalibrateArgs` set their own).
    #[command(flatten, next_help_heading = BOUNDS)]
    pub timeouts: TimeoutArgs,
}

/// FDB's redundancy modes (`configure new <mode>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RedundancyArg {
    /// One replica.
    Single,
    /// Two replicas, on different zones (hosts).
    Double,
    /// Three replicas, on different zones (hosts).
    Triple,
}

/// The cluster's shape (`config::topology::Topology`); unset values are the
/// upstream loopback cluster's.
#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// "Hosts": loopback addresses 127.0.0.1 to 127.0.0.N.
    ///
    /// Each is its own machine and zone locality, so redundancy places replicas on
    /// different ones.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub hosts: u32,
    /// Stateless processes (`-c stateless`) per host.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub stateless_per_host: u32,
    /// Log processes (`-c log`) per host.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub logs_per_host: u32,
    /// Storage processes (`-c storage`) per host.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub storage_per_host: u32,
    /// Redundancy mode of `configure new`.
    #[arg(long, value_enum, default_value = "single")]
    pub redundancy: RedundancyArg,
    /// Coordinators, on the first N hosts.
    ///
    /// The first stateless process of each of the first N hosts.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub coordinators: u32,
    /// `configure`'s `logs=N` (tlogs recruited) [default: FDB's].
    #[arg(long, value_name = "N", hide_short_help = true)]
    pub logs: Option<u32>,
    /// `configure`'s `commit_proxies=N` [default: FDB's].
    #[arg(long, value_name = "N", hide_short_help = true)]
    pub commit_proxies: Option<u32>,
    /// `configure`'s `grv_proxies=N` [default: FDB's].
    #[arg(long, value_name = "N", hide_short_help = true)]
    pub grv_proxies: Option<u32>,
    /// `configure`'s `resolvers=N` [default: FDB's].
    #[arg(long, value_name = "N", hide_short_help = true)]
    pub resolvers: Option<u32>,
}

/// mako workload overrides; unset values come from the profile. A profile file
/// (`--profile-file`) holds the same fields, by these names.
#[derive(Debug, Default, Args, serde::Serialize, serde::Deserialize)]
pub struct WorkloadArgs {
    /// Rows loaded by `mako --mode build` (mako --rows).
    ///
    /// Multitest: ReadWrite's nodeCount.
    #[arg(long)]
    pub rows: Option<u64>,
    /// Key length in bytes (mako --keylen).
    ///
    /// Multitest: keyBytes, at least 16.
    #[arg(long)]
    pub keylen: Option<u32>,
    /// Value length in bytes (mako --vallen; multitest: valueBytes).
    #[arg(long)]
    pub vallen: Option<u32>,
    /// Transaction spec (mako -x).
    ///
    /// For example g18ui: 18 gets, one update, one insert.
    #[arg(long, value_name = "SPEC")]
    pub transaction: Option<String>,
    /// Client processes of `mako --mode build` (mako -p).
    #[arg(long, value_name = "N")]
    pub build_procs: Option<u32>,
    /// Client processes of `mako --mode run` (mako -p).
    ///
    /// Default: the profile's, scaled to this host's cores (at most cores - 2, at least 1).
    #[arg(long, value_name = "N")]
    pub procs: Option<u32>,
    /// Worker threads per client process (mako -t).
    ///
    /// In each client process of `mako --mode run`.
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Concurrent transactions per thread (mako --async_xacts).
    ///
    /// In each thread of `mako --mode run`.
    #[arg(long, value_name = "N")]
    pub async_xacts: Option<u32>,
    /// Warmup in seconds, excluded from TPS (mako --warmup_seconds).
    #[arg(long, value_name = "SECONDS")]
    pub warmup_seconds: Option<u64>,
    /// Whole run in seconds, warmup included (mako --seconds).
    ///
    /// The measurement window is --seconds minus --warmup-seconds. Multitest: the test's
    /// duration (testDuration, at least 10), whose middle 75% is measured.
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<u64>,
    /// Multitest: the whole test's target TPS.
    ///
    /// Split over the testers (transactionsPerSecond).
    #[arg(long, value_name = "TPS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_tps: Option<u64>,
    /// Multitest: tester processes the gate starts.
    ///
    /// Each is an `fdbserver -c test`.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub testers: Option<u32>,
    /// Multitest: concurrent transaction loops per tester.
    ///
    /// ReadWrite's actorCountPerTester.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actors_per_tester: Option<u32>,
    /// Multitest, profile files only: point reads and writes of a type A and a type B
    /// transaction (readsPerTransactionA, ...).
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads_a: Option<u32>,
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_a: Option<u32>,
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads_b: Option<u32>,
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_b: Option<u32>,
    /// Multitest, profile files only: the probability of a type B transaction (alpha).
    #[arg(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
}

/// Time bounds of the phases of a trial, in seconds. Passing one ends the trial as TIMEOUT.
#[derive(Debug, Args)]
pub struct TimeoutArgs {
    /// For the servers to listen on their ports.
    ///
    /// Bound for the three fdbservers to listen on their ports.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub timeout_cluster_start: u64,
    /// For `fdbcli configure new`.
    ///
    /// Bound for `fdbcli --exec "configure new single <engine>"`.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub timeout_configure: u64,
    /// For the database to report available.
    ///
    /// Bound for `status json` to report the database available.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub timeout_available: u64,
    /// For loading the rows (mako --mode build).
    ///
    /// Bound for `mako --mode build` (multitest: added to the test's bound, for the
    /// testers to join and the rows to load).
    #[arg(long, default_value_t = 900, value_name = "SECONDS")]
    pub timeout_mako_build: u64,
    /// For the run, beyond its --seconds.
    ///
    /// Bound for `mako --mode run` (or the multitest driver's test) beyond its --seconds.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub timeout_mako_run_grace: u64,
    /// For stopping every process of the trial.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub timeout_teardown: u64,
    /// For one seed of the simulation driver under Valgrind.
    ///
    /// Bound for one `valgrind fdbserver -r simulation` run: the built-in 5 simulated
    /// seconds took 2-5 min on a 2-core VM.
    #[arg(
        long,
        default_value_t = 1800,
        value_name = "SECONDS",
        hide_short_help = true
    )]
    pub timeout_simulation: u64,
}

/// `--workdir` as given (flag or `PERFGATE_WORKDIR`), else the older `WORKDIR` variable:
/// an unprefixed name another tool may set, read only when the gate's own is absent.
/// Errors: `WORKDIR` is set but empty (a flag given without a value, in effect).
pub fn workdir_or_env(given: Option<&std::path::Path>) -> Result<Option<PathBuf>, String> {
    if let Some(p) = given {
        return Ok(Some(p.to_path_buf()));
    }
    match std::env::var_os("WORKDIR") {
        Some(v) if v.is_empty() => Err(
            "WORKDIR is set but empty: unset it, or give --workdir PATH (or PERFGATE_WORKDIR)"
                .to_string(),
        ),
        Some(v) => Ok(Some(PathBuf::from(v))),
        None => Ok(None),
    }
}

/// The environment variables that stand for flags (`PERFGATE_WORKDIR` for `--workdir`, ...) and are
/// set but empty, as `(variable, flag, what it takes)`, e.g. `("PERFGATE_PAIRING",
/// "--pairing", "one of auto, sequential, duet")`: clap reads an empty one as a flag given
/// without a value, and its message names the flag the user never typed. `main` says which
/// variable it was instead.
pub fn empty_env_flags(
    get: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<(String, String, String)> {
    use clap::CommandFactory;
    fn walk(
        cmd: &clap::Command,
        get: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        found: &mut Vec<(String, String, String)>,
    ) {
        for arg in cmd.get_arguments() {
            let (Some(var), Some(long)) = (arg.get_env(), arg.get_long()) else {
                continue;
            };
            let var = var.to_string_lossy().into_owned();
            if get(&var).is_some_and(|v| v.is_empty()) && !found.iter().any(|(v, ..)| *v == var) {
                let values: Vec<String> = arg
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_string())
                    .collect();
                let takes = match values.is_empty() {
                    true => "a path".to_string(),
                    false => format!("one of {}", values.join(", ")),
                };
                found.push((var, format!("--{long}"), takes));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, get, found);
        }
    }
    let mut found = Vec::new();
    walk(&Cli::command(), &get, &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_flag_of_bench_and_calibrate_is_under_its_heading() {
        // clap's help heading holds for every later flag until another is set:
        // "Workload (defaults from --profile)" must not head the flags after the workload's,
        // and no flag is left under the bare "Options" (which holds only --help).
        let cmd = Cli::command();
        let shared = [
            ("knob", ARMS),
            ("allow-non-release", ARMS),
            ("profile", WORKLOAD),
            ("rows", WORKLOAD),
            ("actors-per-tester", WORKLOAD),
            ("engine", CLUSTER),
            ("workdir", CLUSTER),
            ("hosts", CLUSTER),
            ("resolvers", CLUSTER),
            ("trials", VERDICTS),
            ("strict", VERDICTS),
            ("require-cpu-bound", VERDICTS),
            ("out", OUTPUTS),
            ("dry-run", OUTPUTS),
            ("timeout-teardown", BOUNDS),
        ];
        let bench_only = [
            ("baseline-build", ARMS),
            ("fdb-src", ARMS),
            ("build-jobs", ARMS),
            ("against-recorded", ARMS),
            ("baselines-dir", ARMS),
            ("sweep", WORKLOAD),
            ("cluster-file", CLUSTER),
            ("remote-testers", CLUSTER),
            ("noise-from", VERDICTS),
            ("noise-max-age", VERDICTS),
            ("timeout-build", BOUNDS),
        ];
        let calibrate_only = [
            ("build", ARMS),
            ("baselines-dir", ARMS),
            ("budget", VERDICTS),
            ("write-profile", OUTPUTS),
        ];
        for (sub, own) in [
            ("bench", &bench_only[..]),
            ("calibrate", &calibrate_only[..]),
        ] {
            let sub_cmd = cmd.find_subcommand(sub).unwrap();
            let heading = |long: &str| {
                sub_cmd
                    .get_arguments()
                    .find(|a| a.get_long() == Some(long))
                    .unwrap_or_else(|| panic!("{sub} --{long}"))
                    .get_help_heading()
            };
            for (long, want) in shared.iter().chain(own) {
                assert_eq!(heading(long), Some(*want), "{sub} --{long}");
            }
            let mut order: Vec<&str> = Vec::new();
            for arg in sub_cmd.get_arguments().filter(|a| a.get_id() != "help") {
                let long = arg.get_long().unwrap_or_default();
                let h = arg
                    .get_help_heading()
                    .unwrap_or_else(|| panic!("{sub} --{long} has no heading"));
                if long.starts_with("timeout-") {
                    assert_eq!(h, BOUNDS, "{sub} --{long}");
                }
                if !order.contains(&h) {
                    order.push(h);
                }
            }
            // clap shows the headings in the order their first flags are declared.
            assert_eq!(
                order,
                [ARMS, WORKLOAD, CLUSTER, VERDICTS, OUTPUTS, BOUNDS],
                "{sub}"
            );
        }
    }

    #[test]
    fn bench_short_help_fits_two_screens_and_long_help_keeps_every_flag() {
        let mut cmd = Cli::command().term_width(100);
        cmd.build();
        for (sub, most) in [("bench", 104), ("calibrate", 90)] {
            let sub_cmd = cmd.find_subcommand_mut(sub).unwrap();
            let short = sub_cmd.render_help().to_string();
            let long = sub_cmd.render_long_help().to_string();
            assert!(
                short.lines().count() <= most,
                "{sub} -h: {} lines:\n{short}",
                short.lines().count()
            );
            for arg in sub_cmd.get_arguments() {
                let Some(name) = arg.get_long() else { continue };
                assert!(
                    long.contains(&format!("--{name}")),
                    "{sub} --help lacks --{name}"
                );
                if !arg.is_hide_short_help_set() {
                    assert!(
                        short.contains(&format!("--{name}")),
                        "{sub} -h lacks --{name}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_gates_own_workdir_variable_comes_before_the_older_one() {
        // PERFGATE_WORKDIR is clap's (the flag's env); WORKDIR only when it is absent.
        let given = std::path::Path::new("/given");
        assert_eq!(
            workdir_or_env(Some(given)).unwrap(),
            Some(given.to_path_buf())
        );
        let cmd = Cli::command();
        let bench = cmd.find_subcommand("bench").unwrap();
        let workdir = bench
            .get_arguments()
            .find(|a| a.get_long() == Some("workdir"))
            .unwrap();
        assert_eq!(workdir.get_env().unwrap(), "PERFGATE_WORKDIR");
    }

    #[test]
    fn empty_env_flags_names_each_empty_variable_once() {
        let env = |set: &'static [(&'static str, &'static str)]| {
            move |v: &str| {
                set.iter()
                    .find(|(k, _)| *k == v)
                    .map(|(_, x)| std::ffi::OsString::from(x))
            }
        };
        assert_eq!(
            empty_env_flags(env(&[("PERFGATE_WORKDIR", ""), ("FDB_SRC", "/src")])),
            [(
                "PERFGATE_WORKDIR".to_string(),
                "--workdir".to_string(),
                "a path".to_string()
            )]
        );
        assert_eq!(
            empty_env_flags(env(&[("PERFGATE_PAIRING", "")]))[0].2,
            "one of auto, sequential, duet"
        );
        assert!(empty_env_flags(env(&[("WORKDIR", "/dev/shm")])).is_empty());
        assert_eq!(empty_env_flags(env(&[("FDB_SRC", "")])).len(), 1);
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
