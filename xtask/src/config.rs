//! Config stage: raw flags (`flags`) -> one validated [`BenchConfig`].
//!
//! Every check of user input happens here, once; later stages trust the config. A bad
//! value is a [`UsageError`] that says what was wrong and how to fix it (exit status 64).

use std::{
    fmt,
    path::{Path, PathBuf},
    time::Duration,
};

use serde::{Deserialize, Serialize};

use crate::flags::{
    BenchArgs, EngineArg, ProfileArg, RunArgs, TimeoutArgs, TrialsArg, WorkloadArgs,
};
use crate::slo::SloTps;

/// Bad user input: the message names the flag and the fix. Maps to exit status 64.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Longest run or phase bound accepted, seconds (one week): longer is a typo, and
/// `Instant + Duration` must not overflow.
pub const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// Most trials per arm and engine accepted.
pub const MAX_TRIALS: u32 = 1000;

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// FDB storage engine. The `configure new single <type>` names come from
/// `fdbclient/ManagementAPI.actor.cpp` (configuration parsing) in the FDB repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    Redwood,
    Rocksdb,
    ShardedRocksdb,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Redwood, Engine::Rocksdb, Engine::ShardedRocksdb];

    /// The storage engine name `fdbcli configure` takes.
    pub fn fdb_name(self) -> &'static str {
        match self {
            Engine::Redwood => "ssd-redwood-1",
            Engine::Rocksdb => "ssd-rocksdb-v1",
            Engine::ShardedRocksdb => "ssd-sharded-rocksdb",
        }
    }

    /// Whether the engine is RocksDB-based (needs the RocksDB direct-I/O knobs on tmpfs).
    pub fn is_rocksdb(self) -> bool {
        matches!(self, Engine::Rocksdb | Engine::ShardedRocksdb)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Redwood => "redwood",
            Engine::Rocksdb => "rocksdb",
            Engine::ShardedRocksdb => "sharded-rocksdb",
        })
    }
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

/// An fdbserver knob, passed as `--knob_<name>=<value>`. The name is normalized to
/// lowercase with `_` (fdbserver accepts `-` too: `flow/Knobs.cpp`, `Knobs::setKnob`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knob {
    pub name: String,
    pub value: String,
    /// Who asked for it: `user` or `auto` (added by the gate, e.g. for tmpfs).
    pub source: KnobSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KnobSource {
    User,
    Auto,
}

impl Knob {
    /// Parses `NAME=VALUE` as given to `--knob`; accepts `knob_NAME` and `--knob_NAME` too.
    pub fn parse_user(raw: &str, flag: &str) -> Result<Knob, UsageError> {
        let bad = |why: &str| {
            usage(format!(
                "invalid {flag} '{raw}': {why}; expected NAME=VALUE, \
                 e.g. {flag} page_cache_4k=2147483648"
            ))
        };
        let (name, value) = raw.split_once('=').ok_or_else(|| bad("no '='"))?;
        let name = name.trim_start_matches("--");
        let name = name.strip_prefix("knob_").unwrap_or(name);
        let name = name.to_ascii_lowercase().replace('-', "_");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("the name must be letters, digits and '_'"));
        }
        if value.is_empty() || value.chars().any(char::is_whitespace) {
            return Err(bad("the value must be non-empty and without spaces"));
        }
        Ok(Knob {
            name,
            value: value.to_string(),
            source: KnobSource::User,
        })
    }

    pub fn auto(name: &str, value: &str) -> Knob {
        Knob {
            name: name.to_string(),
            value: value.to_string(),
            source: KnobSource::Auto,
        }
    }

    /// The fdbserver argument, `--knob_<name>=<value>`.
    pub fn arg(&self) -> String {
        format!("--knob_{}={}", self.name, self.value)
    }
}

/// FDB's largest key, bytes.
pub const MAX_KEY_BYTES: u32 = 10_000;
/// FDB's largest value, bytes.
pub const MAX_VALUE_BYTES: u32 = 100_000;

/// Upper bound of mako's client processes (`-p`) and threads (`-t`): beyond it a value
/// is a typo, not a workload.
pub const MAX_CLIENTS: u32 = 256;

/// Cores the cluster itself needs: one for the storage server (single-threaded, the
/// process the gate measures) and one shared by the stateless and log processes.
pub const SERVER_CORES: usize = 2;

/// Cores a host needs before one storage server can be kept saturated: measured with the
/// quick profile on FDB 8.0 (2-core host, g18ui), mako spends about 3x the storage
/// server's CPU per transaction (2 client processes 1.1 cores, storage 0.38, stateless
/// 0.21, log 0.12), so a saturated storage server needs about 3 client cores plus
/// [`SERVER_CORES`].
pub const SATURATING_CORES: usize = 6;

/// The scaling rule for mako's run client processes (`-p`): the profile's count, but no
/// more than the cores left after [`SERVER_CORES`], and at least 1. Client processes
/// beyond the free cores only time-share with the storage server, so they add
/// scheduling noise, not load. `cores` is the number of logical CPUs the gate may use
/// (`std::thread::available_parallelism`, which honours affinity and cgroup quotas).
pub fn client_procs(profile_procs: u32, cores: usize) -> u32 {
    let free = cores.saturating_sub(SERVER_CORES).max(1);
    profile_procs.min(u32::try_from(free).unwrap_or(u32::MAX))
}

/// The mako workload of a run (mako's `--help`, `bindings/c/test/mako/mako.cpp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Profile the defaults came from.
    pub profile: String,
    /// Rows loaded by `mako --mode build` (`--rows`).
    pub rows: u64,
    /// Key length in bytes (`--keylen`).
    pub keylen: u32,
    /// Value length in bytes (`--vallen`).
    pub vallen: u32,
    /// Transaction spec (`-x`).
    pub transaction: String,
    /// Client processes for `--mode build` (`-p`).
    pub build_procs: u32,
    /// Client processes for `--mode run` (`-p`).
    pub procs: u32,
    /// Worker threads per process for `--mode run` (`-t`).
    pub threads: u32,
    /// Concurrent transactions per thread (`--async_xacts`).
    pub async_xacts: u32,
    /// Warmup excluded from TPS, seconds (`--warmup_seconds`).
    pub warmup_seconds: u64,
    /// Whole run including the warmup, seconds (`--seconds`).
    pub seconds: u64,
}

impl Workload {
    /// Measurement window in seconds: mako's `--seconds` includes the warmup.
    pub fn measured_seconds(&self) -> u64 {
        self.seconds - self.warmup_seconds
    }

    pub(crate) fn from_profile(profile: ProfileArg) -> Workload {
        // Standard: `contrib/mako_storage_bench.sh` defaults in the FDB repository.
        let standard = Workload {
            profile: "standard".to_string(),
            rows: 100_000,
            keylen: 128,
            vallen: 512,
            transaction: "g18ui".to_string(),
            build_procs: 4,
            procs: 7,
            threads: 4,
            async_xacts: 128,
            warmup_seconds: 300,
            seconds: 600,
        };
        match profile {
            ProfileArg::Standard => standard,
            // Two client processes leave the storage server and the other servers two
            // cores on a 4-core host (client_procs scales -p down on smaller ones).
            ProfileArg::Quick => Workload {
                profile: "quick".to_string(),
                build_procs: 2,
                procs: 2,
                threads: 2,
                async_xacts: 64,
                warmup_seconds: 60,
                seconds: 120,
                ..standard
            },
        }
    }

    /// The workload from `profile` (or a profile file) with the user's flags over it.
    /// Unless `--procs` or the profile file sets it, the run's client processes are scaled
    /// to `cores` by [`client_procs`]; the second value then says so (a note for the run's
    /// warnings, since numbers from hosts with other core counts are not comparable).
    fn resolve(
        profile: ProfileArg,
        file: Option<&Path>,
        o: &WorkloadArgs,
        cores: usize,
    ) -> Result<(Workload, Option<String>), UsageError> {
        let (p, file_procs) = match file {
            Some(path) => {
                let f = ProfileFile::read(path)?;
                let given = f.procs.is_some();
                (f.apply(profile), given)
            }
            None => (Workload::from_profile(profile), false),
        };
        let mut scaled = None;
        let procs = match o.procs {
            Some(n) => n,
            None if file_procs => p.procs,
            None => {
                let n = client_procs(p.procs, cores);
                if n != p.procs {
                    scaled = Some(format!(
                        "client processes scaled to this host: mako run -p {n} instead of the \
                         {} profile's {} ({cores} cores; rule: at most cores - {SERVER_CORES}, \
                         at least 1; --procs overrides)",
                        p.profile, p.procs
                    ));
                }
                n
            }
        };
        let w = Workload {
            profile: p.profile.clone(),
            rows: o.rows.unwrap_or(p.rows),
            keylen: o.keylen.unwrap_or(p.keylen),
            vallen: o.vallen.unwrap_or(p.vallen),
            transaction: o.transaction.clone().unwrap_or(p.transaction),
            build_procs: o.build_procs.unwrap_or(p.build_procs),
            procs,
            threads: o.threads.unwrap_or(p.threads),
            async_xacts: o.async_xacts.unwrap_or(p.async_xacts),
            warmup_seconds: o.warmup_seconds.unwrap_or(p.warmup_seconds),
            seconds: o.seconds.unwrap_or(p.seconds),
        };
        w.validate()?;
        Ok((w, scaled))
    }

    fn validate(&self) -> Result<(), UsageError> {
        for (flag, v) in [
            ("--build-procs", self.build_procs),
            ("--procs", self.procs),
            ("--threads", self.threads),
            ("--async-xacts", self.async_xacts),
            ("--vallen", self.vallen),
        ] {
            if v == 0 {
                return Err(usage(format!("{flag} must be at least 1")));
            }
        }
        for (flag, v) in [
            ("--build-procs", self.build_procs),
            ("--procs", self.procs),
            ("--threads", self.threads),
        ] {
            if v > MAX_CLIENTS {
                return Err(usage(format!(
                    "{flag} {v} is more than {MAX_CLIENTS}: that many mako processes or \
                     threads would measure the host's scheduler, not FDB"
                )));
            }
        }
        if self.rows == 0 {
            return Err(usage("--rows must be at least 1"));
        }
        // FDB's limits (documentation, "Known Limitations"): keys up to 10,000 bytes,
        // values up to 100,000 bytes.
        if self.keylen > MAX_KEY_BYTES || self.vallen > MAX_VALUE_BYTES {
            return Err(usage(format!(
                "--keylen {} / --vallen {}: FDB allows keys up to {MAX_KEY_BYTES} bytes and \
                 values up to {MAX_VALUE_BYTES} bytes",
                self.keylen, self.vallen
            )));
        }
        // mako refuses keys shorter than "mako" + the digits of the largest row number
        // (mako.cpp, argument validation: "--keylen must be larger than ...").
        let digits = self.rows.to_string().len() as u32;
        if self.keylen < 4 + digits {
            return Err(usage(format!(
                "--keylen {} is too short for --rows {}: mako needs at least {} bytes \
                 (\"mako\" + {digits} digits)",
                self.keylen,
                self.rows,
                4 + digits
            )));
        }
        transaction_ops(&self.transaction).map_err(|why| {
            usage(format!(
                "--transaction '{}' is not a mako transaction spec such as g18ui: {why}",
                self.transaction
            ))
        })?;
        if self.seconds > MAX_SECONDS {
            return Err(usage(format!(
                "--seconds {} is longer than the {MAX_SECONDS} s (one week) a trial may take",
                self.seconds
            )));
        }
        if self.seconds <= self.warmup_seconds {
            return Err(usage(format!(
                "--seconds {} must be larger than --warmup-seconds {}: mako's --seconds \
                 includes the warmup, so nothing would be measured",
                self.seconds, self.warmup_seconds
            )));
        }
        Ok(())
    }
}

/// One operation of a mako transaction spec: its name, count and, for range operations,
/// the range (`ir3:10`: 3 insert ranges of 10 keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnOp {
    pub name: &'static str,
    pub count: u64,
    pub range: Option<u64>,
}

/// Parses a mako transaction spec (`-x`) as mako does (`bindings/c/test/mako/mako.cpp`,
/// `parseTransaction`): operation names matched longest first, an optional count (1 when
/// omitted), and for range operations `:` an optional `-` (reverse) and the range.
pub fn transaction_ops(spec: &str) -> Result<Vec<TxnOp>, String> {
    // In mako's matching order; range operations take ":<range>".
    const OPS: [(&str, bool); 15] = [
        ("grv", false),
        ("gr", true),
        ("g", false),
        ("sj", false),
        ("sgr", true),
        ("sg", false),
        ("u", false),
        ("ir", true),
        ("i", false),
        ("o", false),
        ("cr", true),
        ("c", false),
        ("scr", true),
        ("sc", false),
        ("bg", true),
    ];
    let mut ops = Vec::new();
    let mut rest = spec;
    while !rest.is_empty() {
        let (name, range_op) = OPS
            .iter()
            .find(|(n, _)| rest.starts_with(n))
            .ok_or_else(|| format!("unknown operation at '{rest}'"))?;
        rest = &rest[name.len()..];
        // Digits, if any: `Ok(None)` when there are none; too many is an error, not a
        // silent default.
        let number = |s: &mut &str| -> Result<Option<u64>, String> {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let digits = &s[..end];
            *s = &s[end..];
            if digits.is_empty() {
                return Ok(None);
            }
            digits
                .parse()
                .map(Some)
                .map_err(|_| format!("'{name}{digits}': {digits} is too large"))
        };
        let count = number(&mut rest)?.unwrap_or(1);
        if count == 0 {
            return Err(format!(
                "'{name}0': an operation's count must be at least 1"
            ));
        }
        let range = if *range_op {
            rest = rest
                .strip_prefix(':')
                .ok_or_else(|| format!("'{name}' needs ':<range>'"))?;
            rest = rest.strip_prefix('-').unwrap_or(rest);
            Some(number(&mut rest)?.ok_or_else(|| format!("'{name}' needs a number after ':'"))?)
        } else {
            None
        };
        ops.push(TxnOp { name, count, range });
    }
    if ops.is_empty() {
        return Err("it is empty".into());
    }
    Ok(ops)
}

/// A user profile file (`--profile-file`): a name, an optional base profile, and any
/// workload values.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    /// Recorded as the workload's profile (baselines and SLOs are per profile).
    name: String,
    base: Option<ProfileArg>,
    rows: Option<u64>,
    keylen: Option<u32>,
    vallen: Option<u32>,
    transaction: Option<String>,
    build_procs: Option<u32>,
    procs: Option<u32>,
    threads: Option<u32>,
    async_xacts: Option<u32>,
    warmup_seconds: Option<u64>,
    seconds: Option<u64>,
}

impl ProfileFile {
    fn read(path: &Path) -> Result<ProfileFile, UsageError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            usage(format!(
                "cannot read --profile-file {}: {e}",
                path.display()
            ))
        })?;
        let f: ProfileFile = serde_json::from_str(&text).map_err(|e| {
            usage(format!(
                "--profile-file {} is not a profile: {e}; a profile is JSON such as \
                 {{\"name\": \"big-values\", \"base\": \"standard\", \"vallen\": 4096}}",
                path.display()
            ))
        })?;
        // Named by the file's own fields: the user gave no flag.
        let counts = [
            ("rows", f.rows),
            ("keylen", f.keylen.map(u64::from)),
            ("vallen", f.vallen.map(u64::from)),
            ("build_procs", f.build_procs.map(u64::from)),
            ("procs", f.procs.map(u64::from)),
            ("threads", f.threads.map(u64::from)),
            ("async_xacts", f.async_xacts.map(u64::from)),
            ("seconds", f.seconds),
        ];
        if let Some((field, _)) = counts.iter().find(|(_, v)| *v == Some(0)) {
            return Err(usage(format!(
                "--profile-file {}: field `{field}` must be at least 1",
                path.display()
            )));
        }
        if ["quick", "standard"].contains(&f.name.as_str()) {
            return Err(usage(format!(
                "--profile-file {}: name '{}' is a built-in profile's; choose another name \
                 (baselines and SLO floors are per profile name)",
                path.display(),
                f.name
            )));
        }
        if f.name.is_empty()
            || !f
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(usage(format!(
                "--profile-file {}: field `name` '{}' must be letters, digits, '-' or '_'",
                path.display(),
                f.name
            )));
        }
        Ok(f)
    }

    /// The workload: the file's base (else `profile`) with the file's values over it.
    fn apply(self, profile: ProfileArg) -> Workload {
        let b = Workload::from_profile(self.base.unwrap_or(profile));
        Workload {
            profile: self.name,
            rows: self.rows.unwrap_or(b.rows),
            keylen: self.keylen.unwrap_or(b.keylen),
            vallen: self.vallen.unwrap_or(b.vallen),
            transaction: self.transaction.unwrap_or(b.transaction),
            build_procs: self.build_procs.unwrap_or(b.build_procs),
            procs: self.procs.unwrap_or(b.procs),
            threads: self.threads.unwrap_or(b.threads),
            async_xacts: self.async_xacts.unwrap_or(b.async_xacts),
            warmup_seconds: self.warmup_seconds.unwrap_or(b.warmup_seconds),
            seconds: self.seconds.unwrap_or(b.seconds),
        }
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
        })
    }
}

/// Where each arm's build tree is and which knobs the user gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArmConfig {
    pub arm: Arm,
    /// FDB build tree (checked by `fdbtree` before any trial).
    pub build_dir: PathBuf,
    /// User knobs in order: `--knob` first, then the arm's own; later ones win.
    pub knobs: Vec<Knob>,
}

/// Everything `bench` needs, validated.
#[derive(Debug, Clone, Serialize)]
pub struct BenchConfig {
    pub baseline: ArmConfig,
    pub experiment: ArmConfig,
    /// Engines in the order they run; no duplicates.
    pub engines: Vec<Engine>,
    pub workload: Workload,
    /// Set when the run's client processes were scaled to the host's cores
    /// ([`client_procs`]): what was changed and why, for the run's warnings.
    pub procs_scaled: Option<String>,
    /// Trials per arm and engine planned up front (with `--trials auto`, the minimum).
    pub trials: u32,
    /// `--trials auto`: pairs are added until decided or this budget is spent.
    pub time_budget: Option<Duration>,
    /// Seed of the trial order within A/B blocks (`--seed`, else from the clock); recorded
    /// so a run's order can be reproduced.
    pub seed: u64,
    /// `--workdir`/`WORKDIR`, if given; else the work dir is chosen by `workdir`.
    pub workdir: Option<PathBuf>,
    /// Results directory, if given; else one under the cargo target dir.
    pub out: Option<PathBuf>,
    /// Extra copy of the JUnit XML.
    pub junit: Option<PathBuf>,
    /// Largest tolerated TPS loss of the experiment, percent.
    pub max_regression_pct: f64,
    /// Absolute TPS floor of the experiment for every engine (`--slo-tps`), if any.
    pub slo_tps: Option<f64>,
    /// Effective floors per engine (flag, environment, `baselines/slo.json`), resolved
    /// by `bench` before planning.
    pub slo: SloTps,
    /// Where each effective floor came from.
    pub slo_sources: Vec<String>,
    /// How arms built from source came to be (`build`), in arm order.
    pub provenance: Vec<crate::build::Provenance>,
    /// INCONCLUSIVE fails the run.
    pub strict: bool,
    /// p99 transaction latency is gated too.
    pub gate_latency: bool,
    pub allow_same: bool,
    /// Judge against this recorded baseline (name or path) instead of a baseline arm.
    pub against_recorded: Option<String>,
    /// Accept a recorded baseline from another host class.
    pub allow_host_mismatch: bool,
    /// Where baselines live (`--baselines-dir`), if given.
    pub baselines_dir: Option<PathBuf>,
    /// A trial whose storage server used less than 0.85 cores is an error, not a warning.
    pub require_cpu_bound: bool,
    /// Run build trees that are not Release, lack mako or are instrumented (warned).
    pub allow_non_release: bool,
    pub dry_run: bool,
    /// Warnings and errors only on the terminal, no progress bar.
    pub quiet: bool,
    /// summary.json on stdout instead of the table.
    pub json: bool,
    pub bounds: PhaseBounds,
}

impl BenchConfig {
    pub fn arm_mut(&mut self, arm: Arm) -> &mut ArmConfig {
        match arm {
            Arm::Baseline => &mut self.baseline,
            Arm::Experiment => &mut self.experiment,
        }
    }

    pub fn arm(&self, arm: Arm) -> &ArmConfig {
        match arm {
            Arm::Baseline => &self.baseline,
            Arm::Experiment => &self.experiment,
        }
    }
}

impl TryFrom<&BenchArgs> for BenchConfig {
    type Error = UsageError;

    fn try_from(a: &BenchArgs) -> Result<BenchConfig, UsageError> {
        // Arms without a tree are built from source later (`bench::build_arms`) and get
        // their tree then; with --against-recorded there is no baseline tree at all.
        let baseline = a.baseline_build.as_deref().unwrap_or(Path::new(""));
        let experiment = a.experiment_build.as_deref().unwrap_or(Path::new(""));
        let mut c = BenchConfig::new(baseline, experiment, a.allow_same, &a.run)?;
        if a.against_recorded.is_some() && c.time_budget.is_some() {
            return Err(usage(
                "--trials auto does not work with --against-recorded yet; give --trials N",
            ));
        }
        if a.against_recorded.is_some() && !a.run.engines.is_empty() {
            return Err(usage(
                "--engine does not go with --against-recorded: a record is one engine's, and \
                 that engine runs; record one baseline per engine to judge several",
            ));
        }
        c.against_recorded = a.against_recorded.clone();
        c.allow_host_mismatch = a.allow_host_mismatch;
        c.baselines_dir = a.baselines_dir.clone();
        Ok(c)
    }
}

impl BenchConfig {
    /// Validates the shared run flags `a` for the two arms' build trees.
    pub fn new(
        baseline: &Path,
        experiment: &Path,
        allow_same: bool,
        a: &RunArgs,
    ) -> Result<BenchConfig, UsageError> {
        let parse_all = |raw: &[String], flag: &str| -> Result<Vec<Knob>, UsageError> {
            raw.iter().map(|k| Knob::parse_user(k, flag)).collect()
        };
        let common = parse_all(&a.knobs, "--knob")?;
        let arm_knobs = |own: &[String], flag: &str| -> Result<Vec<Knob>, UsageError> {
            let mut all = common.clone();
            all.extend(parse_all(own, flag)?);
            Ok(all)
        };
        let (trials, time_budget) = match (a.trials, a.time_budget) {
            (TrialsArg::Count(n), None) if (1..=MAX_TRIALS).contains(&n) => (n, None),
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
            (TrialsArg::Auto, Some(b)) => (crate::sequential::MIN_PAIRS, Some(b)),
        };
        if !(a.max_regression.is_finite() && a.max_regression > 0.0 && a.max_regression < 100.0) {
            return Err(usage(format!(
                "--max-regression {} must be a percentage between 0 and 100 (exclusive)",
                a.max_regression
            )));
        }
        if let Some(slo) = a.slo_tps {
            if !(slo.is_finite() && slo > 0.0) {
                return Err(usage(format!(
                    "--slo-tps {slo} must be a positive TPS figure"
                )));
            }
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (workload, procs_scaled) =
            Workload::resolve(a.profile, a.profile_file.as_deref(), &a.workload, cores)?;
        Ok(BenchConfig {
            baseline: ArmConfig {
                arm: Arm::Baseline,
                build_dir: baseline.to_path_buf(),
                knobs: arm_knobs(&a.baseline_knobs, "--baseline-knob")?,
            },
            experiment: ArmConfig {
                arm: Arm::Experiment,
                build_dir: experiment.to_path_buf(),
                knobs: arm_knobs(&a.experiment_knobs, "--experiment-knob")?,
            },
            engines: expand_engines(&a.engines),
            workload,
            procs_scaled,
            trials,
            time_budget,
            seed: a.seed.unwrap_or_else(clock_seed),
            workdir: a.workdir.clone(),
            out: a.out.clone(),
            junit: a.junit.clone(),
            max_regression_pct: a.max_regression,
            slo_tps: a.slo_tps,
            slo: SloTps::default(),
            slo_sources: Vec::new(),
            provenance: Vec::new(),
            strict: a.strict,
            gate_latency: a.gate_latency,
            allow_same,
            against_recorded: None,
            allow_host_mismatch: false,
            baselines_dir: None,
            require_cpu_bound: a.require_cpu_bound,
            allow_non_release: a.allow_non_release,
            dry_run: a.dry_run,
            quiet: a.quiet,
            json: a.json,
            bounds: PhaseBounds::resolve(&a.timeouts)?,
        })
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
    use super::*;
    use crate::flags::{Cli, Command};
    use clap::Parser;

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
        assert_eq!(config(&["--profile", "standard"]).unwrap().trials, 3);
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
        // A huge insert range is a workload, not an overflow (the preflight estimate).
        let w = config(&["--transaction", "ir4294967296:4294967296"])
            .unwrap()
            .workload;
        assert!(crate::preflight::inserts_per_transaction(&w.transaction) > 1e18);
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

    #[test]
    fn malformed_knob_names_the_flag_and_the_form() {
        let err = config(&["--baseline-knob", "page_cache_4k"]).unwrap_err();
        assert!(err.0.contains("--baseline-knob 'page_cache_4k'"), "{err}");
        assert!(err.0.contains("NAME=VALUE"), "{err}");
        assert!(config(&["--knob", "bad name=1"]).is_err());
    }

    #[test]
    fn engine_all_expands_without_duplicates() {
        let c = config(&["--engine", "rocksdb", "--engine", "all"]).unwrap();
        assert_eq!(
            c.engines,
            [Engine::Rocksdb, Engine::Redwood, Engine::ShardedRocksdb]
        );
        assert_eq!(c.engines[2].fdb_name(), "ssd-sharded-rocksdb");
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
            (c.trials, c.time_budget),
            (3, Some(Duration::from_secs(5400)))
        );
    }
}
