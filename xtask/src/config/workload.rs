//! Config stage: the mako workload of a run, from a built-in profile or a profile file,
//! with the user's flags over it, checked against mako's and FDB's limits.

use std::{collections::BTreeMap, path::Path};

use fdb::mako::{transaction_ops, MAX_KEY_BYTES, MAX_VALUE_BYTES};
use serde::{Deserialize, Serialize};

use super::{
    readwrite::{Load, ReadWriteLoad, MIN_TEST_SECONDS},
    usage, MAX_SECONDS,
};
use crate::{
    cli::{ProfileArg, WorkloadArgs},
    error::UsageError,
};

/// The program that runs a workload, chosen by its profile: every stage that depends on
/// it asks [`Workload::driver_kind`] and matches on the answer, so a new driver is one
/// more variant here and its `run::driver::Driver`.
#[derive(Debug, Clone, Copy)]
pub enum DriverKind<'a> {
    /// mako (`bindings/c/test/mako/mako.cpp`), a client of the cluster: the arms' trees
    /// need their mako binary.
    Mako,
    /// FDB's multitest (`fdbserver -r multitest`) with testers running the ReadWrite
    /// workload (`fdbserver/workloads/ReadWrite.actor.cpp`) at this load.
    Multitest(&'a ReadWriteLoad),
    /// FDB's simulator (`fdbserver -r simulation`) running a whole cluster and the
    /// ReadWrite workload at this load in one process, under Valgrind's cachegrind: the
    /// instructions per committed transaction of each role (`fdb::simulation`). Its
    /// `testers` is unused: the simulator chooses its clients.
    Simulation(&'a ReadWriteLoad),
}

impl DriverKind<'_> {
    /// Whether the arms' trees must hold mako: the multitest driver runs fdbserver alone.
    pub fn needs_mako(self) -> bool {
        matches!(self, DriverKind::Mako)
    }

    /// Tester processes the gate starts on this host in each trial: none for mako.
    pub fn testers(self) -> u32 {
        match self {
            DriverKind::Mako | DriverKind::Simulation(_) => 0,
            DriverKind::Multitest(rw) => rw.testers,
        }
    }
}

/// Upper bound of mako's client processes (`-p`) and threads (`-t`): beyond it a value
/// is a typo, not a workload.
pub const MAX_CLIENTS: u32 = 256;

/// Upper bound of mako's concurrent transactions per thread (`--async_xacts`): mako keeps
/// a transaction state for each (`bindings/c/test/mako/mako.cpp`, `runAsyncWorkload`);
/// the standard profile uses 128, so beyond this a value is a typo, not a workload.
pub const MAX_ASYNC_XACTS: u32 = 10_000;

/// Upper bound of `--rows`: mako reads it with `atoi` into a C `int`
/// (`bindings/c/test/mako/mako.cpp`, argument parsing), which a larger value overflows.
pub const MAX_ROWS: u64 = i32::MAX as u64;

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

/// Names of the built-in profiles ([`ProfileArg`]): a profile file may not take one.
const BUILT_IN: [&str; 10] = [
    "quick",
    "standard",
    "scan",
    "point-read",
    "write",
    "mixed",
    "sim-g18ui",
    "sim-point-read",
    "sim-write",
    "sim-mixed",
];

/// Upper bound of a simulation's `--seconds` (simulated time): each simulated second of the
/// built-in load costs about 20 s of host time under Valgrind.
pub const MAX_SIMULATED_SECONDS: u64 = 120;

/// The workload of a run: mako's (its `--help`, `bindings/c/test/mako/mako.cpp`), or with
/// [`Workload::readwrite`] the multitest driver's ReadWrite load, which uses `rows`,
/// `keylen`, `vallen` and `seconds` as its nodeCount, keyBytes, valueBytes and
/// testDuration and leaves mako's other fields empty (0, "").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The multitest driver's load; `None`: the mako driver (and every run recorded before
    /// the multitest driver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readwrite: Option<ReadWriteLoad>,
    /// The ReadWrite load runs in FDB's simulator under Valgrind (the simulation driver),
    /// not on testers of a real cluster; `seconds` is then simulated time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

impl Workload {
    /// The fields in which `other` differs from `self`, as `name A vs B` (ReadWrite's as
    /// `readwrite.name`), by name: for messages, instead of two whole workloads.
    pub fn differences(&self, other: &Workload) -> Vec<String> {
        fn flat(prefix: &str, v: serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        flat(&format!("{prefix}{k}."), v, out);
                    }
                }
                v => out.push((prefix.trim_end_matches('.').to_string(), v)),
            }
        }
        let fields = |w: &Workload| {
            let mut out = Vec::new();
            flat("", serde_json::to_value(w).unwrap_or_default(), &mut out);
            out
        };
        let (ours, theirs) = (fields(self), fields(other));
        let mut names: Vec<&String> = ours.iter().chain(&theirs).map(|(k, _)| k).collect();
        names.dedup();
        let value = |f: &[(String, serde_json::Value)], k: &str| {
            f.iter()
                .find(|(n, _)| n == k)
                .map_or("none".to_string(), |(_, v)| v.to_string())
        };
        let mut said = Vec::new();
        for k in names {
            let (a, b) = (value(&ours, k), value(&theirs, k));
            let line = format!("{k} {a} vs {b}");
            if a != b && !said.contains(&line) {
                said.push(line);
            }
        }
        said
    }

    /// One line for people: the profile and every value, as mako's flags (or ReadWrite's
    /// options).
    pub fn summary(&self) -> String {
        if let DriverKind::Simulation(rw) = self.driver_kind() {
            return format!(
                "{}: ReadWrite in FDB's simulator under cachegrind, rows {} keyBytes {} \
                 valueBytes {}; {}, target {} TPS; {} simulated s, every transaction counted",
                self.profile,
                self.rows,
                self.keylen,
                self.vallen,
                rw.mix(),
                rw.target_tps,
                self.seconds,
            );
        }
        if let Some(rw) = &self.readwrite {
            return format!(
                "{}: multitest ReadWrite, rows {} keyBytes {} valueBytes {}; {}; {} s test \
                 (measured: its middle {} s)",
                self.profile,
                self.rows,
                self.keylen,
                self.vallen,
                rw.summary(),
                self.seconds,
                self.seconds as f64 * 0.75
            );
        }
        format!(
            "{}: rows {} keylen {} vallen {} -x {}; build -p {}; run -p {} -t {} \
             --async_xacts {}; warmup {} s of {} s (measured {} s)",
            self.profile,
            self.rows,
            self.keylen,
            self.vallen,
            self.transaction,
            self.build_procs,
            self.procs,
            self.threads,
            self.async_xacts,
            self.warmup_seconds,
            self.seconds,
            self.measured_seconds()
        )
    }

    /// A profile file (`--profile-file`) named `name` that gives this workload with the
    /// warmup and whole run (`seconds`, warmup included) given here: every value spelled
    /// out, so the profile does not depend on a built-in one or on the host's core count.
    pub fn to_profile_file(&self, name: &str, warmup_seconds: u64, seconds: u64) -> String {
        let values = WorkloadArgs {
            rows: Some(self.rows),
            keylen: Some(self.keylen),
            vallen: Some(self.vallen),
            transaction: Some(self.transaction.clone()),
            build_procs: Some(self.build_procs),
            procs: Some(self.procs),
            threads: Some(self.threads),
            async_xacts: Some(self.async_xacts),
            warmup_seconds: Some(warmup_seconds),
            seconds: Some(seconds),
            ..WorkloadArgs::default()
        };
        let mut file = serde_json::json!({ "name": name });
        if let (Some(f), serde_json::Value::Object(v)) = (
            file.as_object_mut(),
            serde_json::to_value(values).expect("plain data serializes"),
        ) {
            f.extend(v);
        }
        serde_json::to_string_pretty(&file).expect("plain data serializes") + "\n"
    }

    /// A profile name from a file name: its stem with every character other than a
    /// letter, digit, '-' or '_' made '-'; "calibrated" when nothing is left or the stem
    /// is a built-in profile's name.
    pub fn profile_name(path: &Path) -> String {
        let stem: String = path
            .file_stem()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let stem = stem.trim_matches('-');
        if stem.is_empty() || BUILT_IN.contains(&stem) {
            "calibrated".to_string()
        } else {
            stem.to_string()
        }
    }

    /// Measurement window in seconds: mako's `--seconds` includes the warmup; ReadWrite
    /// measures the middle 75% of its test (`discardEdgeMeasurements`), rounded down.
    pub fn measured_seconds(&self) -> u64 {
        match self.driver_kind() {
            DriverKind::Multitest(_) => self.seconds * 3 / 4,
            DriverKind::Simulation(_) => self.seconds,
            DriverKind::Mako => self.seconds - self.warmup_seconds,
        }
    }

    /// The title of this workload's ReadWrite test (`testTitle`): the multitest's and the
    /// simulator's stdout name the test's metrics by it.
    pub fn test_title(&self) -> String {
        format!("perfgate-{}", self.profile)
    }

    /// The ReadWrite test of this workload's load `rw` (the multitest and simulation
    /// drivers'): its rows, sizes, duration and mix, at `target_tps`; `clear` the rows when
    /// the test ends (a cluster the gate did not start, which the next trial must find
    /// empty as a fresh one is).
    pub fn readwrite_spec(
        &self,
        rw: &ReadWriteLoad,
        target_tps: u64,
        clear: bool,
    ) -> fdb::multitest::ReadWriteSpec {
        fdb::multitest::ReadWriteSpec {
            title: self.test_title(),
            duration_s: self.seconds as f64,
            target_tps: target_tps as f64,
            actors_per_tester: rw.actors_per_tester,
            node_count: self.rows,
            key_bytes: self.keylen,
            value_bytes: self.vallen,
            reads_a: rw.reads_a,
            writes_a: rw.writes_a,
            reads_b: rw.reads_b,
            writes_b: rw.writes_b,
            alpha: rw.alpha,
            clear_after_test: clear,
        }
    }

    /// The program that runs this workload: the multitest driver when it has a ReadWrite
    /// load, else mako.
    pub fn driver_kind(&self) -> DriverKind<'_> {
        match &self.readwrite {
            Some(rw) if self.simulated => DriverKind::Simulation(rw),
            Some(rw) => DriverKind::Multitest(rw),
            None => DriverKind::Mako,
        }
    }

    /// The quick profile's workload, as it is before any flag.
    pub fn quick() -> Workload {
        Workload::from_profile(ProfileArg::Quick)
    }

    /// A built-in profile's workload, as it is before any flag.
    pub fn from_profile(profile: ProfileArg) -> Workload {
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
            readwrite: None,
            simulated: false,
        };
        // Multitest: FDB's nodeCount default; the reference report's key, value and test
        // sizes; mako's fields empty.
        let multitest = |profile: &str, load: Load| Workload {
            profile: profile.to_string(),
            rows: 100_000,
            keylen: 16,
            vallen: 100,
            transaction: String::new(),
            build_procs: 0,
            procs: 0,
            threads: 0,
            async_xacts: 0,
            warmup_seconds: 0,
            seconds: 60,
            readwrite: Some(ReadWriteLoad::built_in(load)),
            simulated: false,
        };
        match profile {
            ProfileArg::PointRead => multitest("point-read", Load::PointRead),
            ProfileArg::Write => multitest("write", Load::Write),
            ProfileArg::Mixed => multitest("mixed", Load::Mixed),
            ProfileArg::SimG18ui
            | ProfileArg::SimPointRead
            | ProfileArg::SimWrite
            | ProfileArg::SimMixed => Workload::simulation(profile, multitest),
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
            // Measured on FDB 8.0, 2-core VM, -p 1: the storage server spent 144 us per
            // transaction against mako's 126 (g18ui: about a third of mako's), at 0.81-0.84
            // cores unpinned. Keys "mako" + 6 digits fit 16 bytes.
            ProfileArg::Scan => Workload {
                profile: "scan".to_string(),
                keylen: 16,
                vallen: 16,
                transaction: "gr1:1000".to_string(),
                build_procs: 2,
                procs: 2,
                threads: 2,
                async_xacts: 64,
                warmup_seconds: 30,
                seconds: 90,
                ..standard
            },
        }
    }

    /// A simulation profile's workload: the ReadWrite load `multitest` gives for its
    /// mix, run in FDB's simulator.
    fn simulation(profile: ProfileArg, multitest: impl Fn(&str, Load) -> Workload) -> Workload {
        // Simulation: rows enough that the mix's writes rarely conflict (2000 rows retried
        // 1.4 transactions per commit on FDB 8.0, 20000 rows 0.05), and 5 simulated seconds
        // (about 2 min of host time under cachegrind on FDB 8.0, 2-core VM). The simulator splits the
        // target over its clients (8 with the gate's spec); 32 actors each is ReadWrite's own
        // default for that rate (`ReadWriteWorkload.h`).
        let simulation = |profile: &str, load: ReadWriteLoad| Workload {
            profile: profile.to_string(),
            rows: 20_000,
            seconds: 5,
            readwrite: Some(ReadWriteLoad {
                target_tps: 1000,
                testers: 1,
                actors_per_tester: 32,
                ..load
            }),
            simulated: true,
            ..multitest(profile, Load::Mixed)
        };
        match profile {
            ProfileArg::SimPointRead => {
                simulation("sim-point-read", ReadWriteLoad::built_in(Load::PointRead))
            }
            ProfileArg::SimWrite => simulation("sim-write", ReadWriteLoad::built_in(Load::Write)),
            ProfileArg::SimMixed => simulation("sim-mixed", ReadWriteLoad::built_in(Load::Mixed)),
            _ => simulation(
                "sim-g18ui",
                ReadWriteLoad {
                    reads_a: 18,
                    writes_a: 2,
                    alpha: 0.0,
                    ..ReadWriteLoad::built_in(Load::Mixed)
                },
            ),
        }
    }

    /// The workload from `profile` (or a profile file) with the user's flags over it.
    /// Unless `--procs` or the profile file sets it, the run's client processes are scaled
    /// to `cores` by [`client_procs`]; the second value then says so (a note for the run's
    /// warnings, since numbers from hosts with other core counts are not comparable).
    pub(super) fn resolve(
        profile: ProfileArg,
        file: Option<&Path>,
        o: &WorkloadArgs,
        cores: usize,
    ) -> Result<(Workload, Option<String>), UsageError> {
        let (p, file_procs) = match file {
            Some(path) => {
                let f = ProfileFile::read(path)?;
                let given = f.values.procs.is_some();
                (f.apply(profile, path)?, given)
            }
            None => (Workload::from_profile(profile), false),
        };
        p.check_driver_values(o, None)?;
        let mut scaled = None;
        let procs = match o.procs {
            Some(n) => n,
            None if file_procs || p.readwrite.is_some() => p.procs,
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
        let mut w = p.overlay(o);
        w.procs = procs;
        w.validate()?;
        Ok((w, scaled))
    }

    /// This workload with the values `o` sets over it: the one place flags and profile
    /// files override a profile.
    fn overlay(self, o: &WorkloadArgs) -> Workload {
        Workload {
            profile: self.profile,
            rows: o.rows.unwrap_or(self.rows),
            keylen: o.keylen.unwrap_or(self.keylen),
            vallen: o.vallen.unwrap_or(self.vallen),
            transaction: o.transaction.clone().unwrap_or(self.transaction),
            build_procs: o.build_procs.unwrap_or(self.build_procs),
            procs: o.procs.unwrap_or(self.procs),
            threads: o.threads.unwrap_or(self.threads),
            async_xacts: o.async_xacts.unwrap_or(self.async_xacts),
            warmup_seconds: o.warmup_seconds.unwrap_or(self.warmup_seconds),
            seconds: o.seconds.unwrap_or(self.seconds),
            readwrite: self.readwrite.map(|rw| ReadWriteLoad {
                target_tps: o.target_tps.unwrap_or(rw.target_tps),
                testers: o.testers.unwrap_or(rw.testers),
                actors_per_tester: o.actors_per_tester.unwrap_or(rw.actors_per_tester),
                reads_a: o.reads_a.unwrap_or(rw.reads_a),
                writes_a: o.writes_a.unwrap_or(rw.writes_a),
                reads_b: o.reads_b.unwrap_or(rw.reads_b),
                writes_b: o.writes_b.unwrap_or(rw.writes_b),
                alpha: o.alpha.unwrap_or(rw.alpha),
            }),
            simulated: self.simulated,
        }
    }

    /// Errors when `o` (flags, or the profile file `file`'s fields) sets a value only the
    /// other driver has: a mako flag over a multitest profile, or the reverse. It would
    /// otherwise be silently ignored.
    fn check_driver_values(&self, o: &WorkloadArgs, file: Option<&Path>) -> Result<(), UsageError> {
        let mako = [
            ("transaction", o.transaction.is_some()),
            ("build-procs", o.build_procs.is_some()),
            ("procs", o.procs.is_some()),
            ("threads", o.threads.is_some()),
            ("async-xacts", o.async_xacts.is_some()),
            ("warmup-seconds", o.warmup_seconds.is_some()),
        ];
        let multitest = [
            ("target-tps", o.target_tps.is_some()),
            ("testers", o.testers.is_some()),
            ("actors-per-tester", o.actors_per_tester.is_some()),
            ("reads-a", o.reads_a.is_some()),
            ("writes-a", o.writes_a.is_some()),
            ("reads-b", o.reads_b.is_some()),
            ("writes-b", o.writes_b.is_some()),
            ("alpha", o.alpha.is_some()),
        ];
        let (foreign, runs, instead) = match self.readwrite {
            Some(_) if self.simulated => (
                &mako[..],
                "FDB's simulator (the simulation driver), which has no such value",
                "its values are --seconds (simulated), --rows, --keylen, --vallen, \
                 --target-tps, --actors-per-tester and, in a profile file, the mix (reads_a, \
                 writes_a, reads_b, writes_b, alpha)",
            ),
            Some(_) => (
                &mako[..],
                "the multitest driver (ReadWrite), which has no such value",
                "its values are --seconds, --rows, --keylen, --vallen, --target-tps, \
                 --testers and --actors-per-tester",
            ),
            None => (
                &multitest[..],
                "mako, which has no such value",
                "the multitest values need --profile point-read, write or mixed (or a \
                 profile file with one of them as its base)",
            ),
        };
        let Some((name, _)) = foreign.iter().find(|(_, given)| *given) else {
            return Ok(());
        };
        let what = match file {
            Some(f) => format!(
                "--profile-file {}: field `{}`",
                f.display(),
                name.replace('-', "_")
            ),
            None => format!("--{name}"),
        };
        Err(usage(format!(
            "{what} is set, but profile '{}' runs {runs}; {instead}",
            self.profile
        )))
    }

    fn validate(&self) -> Result<(), UsageError> {
        match &self.readwrite {
            Some(rw) => self.validate_readwrite(rw),
            None => self.validate_mako(),
        }
    }

    /// The checks of a mako workload: mako's limits, FDB's and the gate's.
    fn validate_mako(&self) -> Result<(), UsageError> {
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
        if self.async_xacts > MAX_ASYNC_XACTS {
            return Err(usage(format!(
                "--async-xacts {} is more than {MAX_ASYNC_XACTS}: mako keeps a transaction \
                 state for each in every thread (the standard profile runs 128)",
                self.async_xacts
            )));
        }
        if self.rows == 0 || self.rows > MAX_ROWS {
            return Err(usage(format!(
                "--rows {} must be between 1 and {MAX_ROWS} (mako reads it into a C int)",
                self.rows
            )));
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

impl Workload {
    /// The checks of a multitest workload: ReadWrite's limits and the gate's.
    fn validate_readwrite(&self, rw: &ReadWriteLoad) -> Result<(), UsageError> {
        rw.validate()?;
        if self.rows == 0 || self.rows > MAX_ROWS {
            return Err(usage(format!(
                "--rows {} must be between 1 and {MAX_ROWS} (ReadWrite's nodeCount)",
                self.rows
            )));
        }
        // ReadWrite asserts keyBytes >= 16 (`ReadWriteCommon`'s constructor); FDB's limits
        // ("Known Limitations") bound both sizes.
        if self.keylen < 16 || self.keylen > MAX_KEY_BYTES || self.vallen > MAX_VALUE_BYTES {
            return Err(usage(format!(
                "--keylen {} / --vallen {}: ReadWrite needs keys of at least 16 bytes, and \
                 FDB allows keys up to {MAX_KEY_BYTES} bytes and values up to \
                 {MAX_VALUE_BYTES} bytes",
                self.keylen, self.vallen
            )));
        }
        if self.vallen == 0 {
            return Err(usage("--vallen must be at least 1".to_string()));
        }
        if self.simulated {
            if !(1..=MAX_SIMULATED_SECONDS).contains(&self.seconds) {
                return Err(usage(format!(
                    "--seconds {} must be between 1 and {MAX_SIMULATED_SECONDS}: simulated \
                     seconds, each about 20 s of host time under Valgrind",
                    self.seconds
                )));
            }
            if self.readwrite.as_ref().is_some_and(|rw| rw.testers != 1) {
                return Err(usage(
                    "--testers: the simulator chooses its own clients (the simulation driver \
                     starts no tester)",
                ));
            }
            return Ok(());
        }
        if !(MIN_TEST_SECONDS..=MAX_SECONDS).contains(&self.seconds) {
            return Err(usage(format!(
                "--seconds {} must be between {MIN_TEST_SECONDS} and {MAX_SECONDS}: ReadWrite \
                 measures the middle 75% of its test, and testers stop about a second early \
                 (FDB 7.3+), so shorter tests under-report TPS",
                self.seconds
            )));
        }
        Ok(())
    }
}

/// Profile file fields that may be 0: the warmup, and a multitest transaction type's
/// reads or writes.
const MAY_BE_ZERO: [&str; 5] = [
    "warmup_seconds",
    "reads_a",
    "writes_a",
    "reads_b",
    "writes_b",
];

/// A user profile file (`--profile-file`): a name, an optional base profile, and any
/// workload values, named as [`WorkloadArgs`]'s fields.
#[derive(Debug, Deserialize)]
struct ProfileFile {
    /// Recorded as the workload's profile (baselines and SLOs are per profile).
    name: String,
    base: Option<ProfileArg>,
    #[serde(flatten)]
    values: WorkloadArgs,
    /// Any other field, refused by name (`deny_unknown_fields` does not work with `flatten`).
    #[serde(flatten)]
    unknown: BTreeMap<String, serde_json::Value>,
}

impl ProfileFile {
    fn read(path: &Path) -> Result<ProfileFile, UsageError> {
        let text = crate::input::read_trusted_text(path).map_err(|e| {
            usage(format!(
                "cannot read --profile-file {}: {e}",
                path.display()
            ))
        })?;
        let not_a_profile = |why: String| {
            usage(format!(
                "--profile-file {} is not a profile: {why}; a profile is JSON such as \
                 {{\"name\": \"big-values\", \"base\": \"standard\", \"vallen\": 4096}}",
                path.display()
            ))
        };
        let f: ProfileFile =
            serde_json::from_str(&text).map_err(|e| not_a_profile(e.to_string()))?;
        if let Some(field) = f.unknown.keys().next() {
            return Err(not_a_profile(format!("unknown field `{field}`")));
        }
        // Named by the file's own fields: the user gave no flag. Every count must be at
        // least 1, but for MAY_BE_ZERO.
        let values = serde_json::to_value(&f.values).expect("plain data serializes");
        let zero = values
            .as_object()
            .into_iter()
            .flatten()
            .find(|(field, v)| !MAY_BE_ZERO.contains(&field.as_str()) && v.as_u64() == Some(0));
        if let Some((field, _)) = zero {
            return Err(usage(format!(
                "--profile-file {}: field `{field}` must be at least 1",
                path.display()
            )));
        }
        if BUILT_IN.contains(&f.name.as_str()) {
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
    /// Errors: the file sets a value of the other driver (`path` names the file).
    fn apply(self, profile: ProfileArg, path: &Path) -> Result<Workload, UsageError> {
        let base = Workload::from_profile(self.base.unwrap_or(profile));
        base.check_driver_values(&self.values, Some(path))?;
        Ok(Workload {
            profile: self.name,
            ..base.overlay(&self.values)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_field_that_differs_readwrites_too() {
        let quick = Workload::quick();
        assert!(quick.differences(&quick).is_empty());
        let mut other = quick.clone();
        other.async_xacts = 8;
        other.seconds = 20;
        assert_eq!(
            quick.differences(&other),
            ["async_xacts 64 vs 8", "seconds 120 vs 20"]
        );
        let point = Workload::from_profile(ProfileArg::PointRead);
        let mut fewer = point.clone();
        fewer.readwrite.as_mut().unwrap().testers = 2;
        assert_eq!(point.differences(&fewer), ["readwrite.testers 1 vs 2"]);
        // A mako workload against a multitest one names the driver's load as missing.
        assert!(quick
            .differences(&point)
            .iter()
            .any(|d| d.starts_with("readwrite null vs") || d.starts_with("readwrite.")));
    }
}
