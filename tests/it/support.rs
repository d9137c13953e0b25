//! Test harness: fake FDB build trees (the test double), a RAM-disk work dir, and the
//! real `xtask` binary run as a child process.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

use serde_json::{json, Value};
use tempfile::TempDir;

/// A tiny workload: the test double needs no more, and tests stay fast.
pub const TINY: [&str; 10] = [
    "--rows",
    "1000",
    "--keylen",
    "16",
    "--vallen",
    "16",
    "--warmup-seconds",
    "2",
    "--seconds",
    "6",
];

/// The `xtask` binary of this workspace, built once per test run (it is another package,
/// so cargo does not build it for these tests by itself).
/// The gate as a command. Tests run many gates at once, each on its own work dir, so
/// each may run beside the others (`PERFGATE_ALLOW_CONCURRENT`); a test of the refusal
/// removes it. Most tests check trials one after the other, in their planned order: their
/// pairs are sequential (`PERFGATE_PAIRING`); the duet's tests name `--pairing`, and the
/// tests of the default remove the variable.
pub fn gate_cmd() -> Command {
    let mut cmd = Command::new(xtask());
    cmd.env("PERFGATE_ALLOW_CONCURRENT", "1");
    cmd.env("PERFGATE_PAIRING", "sequential");
    cmd
}

pub fn xtask() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--package", "xtask", "--bin", "xtask"])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build -p xtask failed");
        // This test binary is <target>/debug/deps/it-<hash>.
        let exe = std::env::current_exe().unwrap();
        exe.parent().unwrap().parent().unwrap().join("xtask")
    })
}

/// Fails the test unless `summary` (a `summary.json`, or what `--json` printed) is valid
/// under the JSON Schema the project ships for it.
#[track_caller]
pub fn assert_valid_summary(summary: &Value) {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = SCHEMA.get_or_init(|| {
        let schema = serde_json::from_str(include_str!("../../docs/summary.schema.json"))
            .expect("docs/summary.schema.json is JSON");
        jsonschema::validator_for(&schema).expect("docs/summary.schema.json is a schema")
    });
    let errors: Vec<String> = validator
        .iter_errors(summary)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid under docs/summary.schema.json: {errors:?}"
    );
}

/// The trials of a `trials.json`'s text: `{"schema_version": 1, "trials": [...]}`.
#[track_caller]
pub fn trials_of(file: &Value) -> Value {
    assert_eq!(file["schema_version"], 1, "trials.json's version");
    assert!(file["trials"].is_array(), "{file}");
    file["trials"].clone()
}

/// Every regular file named `summary.json` beneath `dir`, links not followed.
fn summaries(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            found.extend(summaries(&e.path()));
        } else if kind.is_file() && e.file_name() == "summary.json" {
            found.push(e.path());
        }
    }
    found
}

/// A test's own directory, holding fake trees, the work dir and the results.
pub struct Sandbox {
    pub dir: TempDir,
    /// Work dir of the cluster: on tmpfs (/dev/shm) when the host has it.
    pub workdir: TempDir,
}

/// Every `summary.json` a test's runs wrote is checked against the shipped schema, however
/// the test read it: a field the schema does not describe, or one of the wrong type, fails
/// the test that produced it.
impl Drop for Sandbox {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        for path in summaries(self.dir.path()) {
            let Ok(summary) = serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap())
            else {
                // Not one the gate wrote: a test's planted file.
                continue;
            };
            assert_valid_summary(&summary);
        }
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let workdir = if Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
            workdir,
        }
    }

    /// A fake FDB build tree named `name` with the double's `behaviour` (JSON object of
    /// `Behaviour` fields; missing ones take their defaults).
    pub fn tree(&self, name: &str, behaviour: Value) -> PathBuf {
        let root = self.dir.path().join(name);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("lib")).unwrap();
        for (program, exe) in [
            ("fdbserver", env!("CARGO_BIN_EXE_fdbserver")),
            ("fdbcli", env!("CARGO_BIN_EXE_fdbcli")),
            ("mako", env!("CARGO_BIN_EXE_mako")),
        ] {
            std::os::unix::fs::symlink(exe, root.join("bin").join(program)).unwrap();
        }
        std::fs::write(root.join("lib/libfdb_c.so"), "").unwrap();
        // What cmake -DCMAKE_BUILD_TYPE=Release -DBUILD_MAKO=ON leaves (tests may edit it).
        std::fs::write(
            root.join("CMakeCache.txt"),
            "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\nUSE_ASAN:BOOL=OFF\nCMAKE_CXX_FLAGS:STRING=\nCMAKE_CXX_FLAGS_RELEASE:STRING=-O3 -DNDEBUG\n",
        )
        .unwrap();
        std::fs::write(root.join("double.json"), behaviour.to_string()).unwrap();
        root
    }

    /// Two trees with different source versions: baseline `a`, experiment `b`.
    pub fn ab(&self, a: Value, b: Value) -> (PathBuf, PathBuf) {
        let mut b = b;
        if b.get("source_version").is_none() {
            b["source_version"] = json!("0000000000000000000000000000000000000002");
        }
        (self.tree("a", a), self.tree("b", b))
    }

    /// A memory cgroup (v1 files) with `headroom_mib` MiB of headroom under the sandbox,
    /// simulated for `PERFGATE_CGROUP_ROOT` (tmpfs pages count against a real one); its
    /// root.
    pub fn simulated_cgroup(&self, headroom_mib: u64) -> PathBuf {
        let root = self.dir.path().join("cgroup");
        let cg = root.join("memory");
        std::fs::create_dir_all(&cg).unwrap();
        let (limit, usage) = ((headroom_mib + 50) << 20, 50u64 << 20);
        std::fs::write(cg.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
        std::fs::write(cg.join("memory.usage_in_bytes"), usage.to_string()).unwrap();
        root
    }

    pub fn workdir_is_tmpfs(&self) -> bool {
        nix::sys::statfs::statfs(self.workdir.path())
            .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
    }

    pub fn out(&self) -> PathBuf {
        self.dir.path().join("results")
    }

    /// `cargo xtask bench` with a tiny workload, the given trees and `extra` flags.
    pub fn bench_command(&self, a: &Path, b: &Path, extra: &[&str]) -> Command {
        self.bench_command_out(a, b, &self.out(), extra)
    }

    pub fn bench_command_out(&self, a: &Path, b: &Path, out: &Path, extra: &[&str]) -> Command {
        self.bench_command_with(a, b, out, &TINY, extra)
    }

    /// Like [`Sandbox::bench_command_out`], with `workload` flags instead of [`TINY`].
    pub fn bench_command_with(
        &self,
        a: &Path,
        b: &Path,
        out: &Path,
        workload: &[&str],
        extra: &[&str],
    ) -> Command {
        let mut cmd = crate::support::gate_cmd();
        cmd.arg("bench")
            .arg("--baseline-build")
            .arg(a)
            .arg("--experiment-build")
            .arg(b)
            .arg("--out")
            .arg(out)
            .args(workload)
            // Seed 3 orders the trials A B B A A B B A (pinned by Cargo.lock's rand), so
            // tests know which trial ran which arm; the order itself is a unit test.
            .args(["--seed", "3"])
            // No floors from the workspace's baselines/slo.json in tests.
            .arg("--baselines-dir")
            .arg(self.dir.path().join("baselines"))
            .args(extra)
            .env("WORKDIR", self.workdir.path());
        cmd
    }

    /// [`Sandbox::bench_command_with`] with the host-speed probe (`--host-probe`).
    pub fn probed_bench_command(
        &self,
        a: &Path,
        b: &Path,
        out: &Path,
        workload: &[&str],
        extra: &[&str],
    ) -> Command {
        let mut cmd = self.bench_command_with(a, b, out, workload, extra);
        cmd.arg("--host-probe");
        cmd
    }

    /// Starts the gate in the background and returns once the first trial's mako run is
    /// under way (the double writes its pid to `<a>/double-mako-pids` when it runs, after
    /// starting its worker if asked to); `a` must be the first trial's tree.
    pub fn spawn_until_mako_runs(&self, a: &Path, b: &Path) -> std::process::Child {
        let mut cmd = self.bench_command(a, b, &[]);
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        self.spawn_until_mako_runs_of(cmd, a)
    }

    /// [`Sandbox::spawn_until_mako_runs`] of a gate command of the caller's (its flags,
    /// its output pipes).
    pub fn spawn_until_mako_runs_of(&self, mut cmd: Command, a: &Path) -> std::process::Child {
        let child = cmd.spawn().unwrap();
        let started = a.join("double-mako-pids");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !started.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "mako run never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child
    }

    /// `cargo xtask calibrate` of `tree` into `out` with the tiny workload, `trials` pairs
    /// and `--quiet`; asserts it succeeded.
    pub fn calibrate(&self, tree: &Path, out: &Path, trials: u32) {
        self.calibrate_with(tree, out, &TINY, trials)
    }

    /// [`Sandbox::calibrate`] with `workload` flags instead of [`TINY`].
    pub fn calibrate_with(&self, tree: &Path, out: &Path, workload: &[&str], trials: u32) {
        let o = crate::support::gate_cmd()
            .args(["calibrate", "--build"])
            .arg(tree)
            .arg("--out")
            .arg(out)
            .args(workload)
            .args(["--trials", &trials.to_string(), "--quiet"])
            .env("WORKDIR", self.workdir.path())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
    }

    pub fn bench(&self, a: &Path, b: &Path, extra: &[&str]) -> Output {
        self.bench_command(a, b, extra).output().unwrap()
    }

    /// Like [`Sandbox::bench`], with results in `<sandbox>/<name>` (a second run).
    pub fn bench_in(&self, name: &str, a: &Path, b: &Path, extra: &[&str]) -> Output {
        let out = self.dir.path().join(name);
        self.bench_command_out(a, b, &out, extra).output().unwrap()
    }

    pub fn read_json(&self, file: &str) -> Value {
        let path = self.out().join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// The trials of the results dir's `trials.json`, an array (the file is versioned).
    #[track_caller]
    /// `cargo xtask compare` of this sandbox's results into `<sandbox>/again`: its output
    /// and the summary.json it wrote.
    pub fn compare_again(&self) -> (Output, Value) {
        let again = self.dir.path().join("again");
        let o = gate_cmd()
            .arg("compare")
            .arg(self.out())
            .arg("--out")
            .arg(&again)
            .output()
            .unwrap();
        let summary = std::fs::read_to_string(again.join("summary.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        (o, summary)
    }

    pub fn read_trials(&self) -> Value {
        trials_of(&self.read_json("trials.json"))
    }

    /// Fails the test if a process started from this sandbox's fake trees is still alive
    /// (however a run ended, the gate ends every process it started).
    #[track_caller]
    pub fn assert_no_leftover_processes(&self) {
        let left = self.leftover_processes();
        assert!(left.is_empty(), "{left:?}");
    }

    /// Live processes started from this sandbox's fake trees (argv[0] under it).
    pub fn leftover_processes(&self) -> Vec<String> {
        let root = self.dir.path().to_string_lossy().into_owned();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .chars()
                    .all(|c| c.is_ascii_digit())
            })
            .filter_map(|e| {
                let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let zombie = stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z'));
                let cmd = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                // mako runs as `/proc/self/fd/<fd><path>` (the gate's root, from a mount
                // namespace of its own).
                let path = cmd
                    .strip_prefix("/proc/self/fd/")
                    .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit()))
                    .unwrap_or(&cmd);
                (path.starts_with(&root) && !zombie).then_some(cmd)
            })
            .collect()
    }
}

/// `path` read by junitparser (`junit_read.py`): one entry per test suite with its cases,
/// their results (`kind` Failure/Error/Skipped, `verdict`: the message's first word, `type`
/// (none is written), `message`), properties and
/// system-out. Panics if the file is not JUnit an independent reader accepts.
pub fn read_junit(path: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("it/junit_read.py");
    let o = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "junitparser rejected {}: {}",
        path.display(),
        text(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Validates `path` against Jenkins' junit-10.xsd (`xtask/testdata/junit-10.xsd`, the
/// schema its xunit plugin checks with) with xmllint.
pub fn assert_valid_junit(path: &std::path::Path) {
    let xsd =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../xtask/testdata/junit-10.xsd");
    let o = std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(path)
        .output()
        .expect("xmllint runs (package libxml2-utils: run ci/setup.sh)");
    assert!(
        o.status.success(),
        "{} does not validate against junit-10.xsd: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The phases a trial of `trials.json` timed, in order, e.g. `["available", "multitest",
/// "teardown"]`.
pub fn phase_names(trial: &Value) -> Vec<&str> {
    trial["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect()
}

/// Dates the saved run in `run` to 2020-01-01 (its `meta.json` start): another day than
/// any run a test makes, as `baseline record --add-run` needs.
pub fn date_to_another_day(run: &Path) {
    let meta_path = run.join("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["started_at"] = json!("2020-01-01T00:00:00Z");
    meta["started_at_unix_s"] = json!(1_577_836_800u64);
    std::fs::write(&meta_path, meta.to_string()).unwrap();
}

/// `cargo xtask compare DIR` with no other flag (its --out beside the run).
pub fn compare_only(dir: &Path) -> Output {
    crate::support::gate_cmd()
        .arg("compare")
        .arg(dir)
        .output()
        .unwrap()
}
