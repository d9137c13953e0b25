//! `cargo xtask doctor`: is this host fit to run the gate? A few seconds of checks, each
//! finding with what to do about it. Reads /proc, /sys and the work dir; starts nothing
//! but a short fsync probe.

use std::{
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::Result;
use serde::Serialize;

use crate::{
    cli::ProfileArg,
    config::{
        client_procs,
        source::{find_checkout, Origin},
        Arm, Workload, SATURATING_CORES,
    },
    plan::{preflight, workdir},
    results::host::{class_identifies_cpu, Host},
};

/// How a finding bears on the gate, from the best to the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check's result; with `--json`, one element of `checks`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What was checked, e.g. `work dir`.
    pub name: &'static str,
    pub status: Status,
    /// What was found, with numbers.
    pub value: String,
    /// What to do; empty when nothing (`null` in JSON).
    #[serde(serialize_with = "empty_as_null")]
    pub hint: String,
}

fn empty_as_null<S: serde::Serializer>(hint: &str, s: S) -> Result<S::Ok, S::Error> {
    match hint {
        "" => s.serialize_none(),
        hint => s.serialize_str(hint),
    }
}

fn finding(status: Status, name: &'static str, value: String, hint: &str) -> Finding {
    Finding {
        name,
        status,
        value,
        hint: hint.to_string(),
    }
}

/// `doctor --json`: every check and what they add up to, for scripts.
#[derive(Debug, Serialize)]
struct Report<'a> {
    /// Version of this object's format.
    schema_version: u32,
    /// The worst status of any check.
    result: Status,
    /// The exit status, the same as without `--json`: 2 when a check failed, else 0; 64
    /// for a usage error, which ran no check.
    exit_code: i32,
    checks: &'a [Finding],
    /// What was wrong with the command line, and how to fix it (only for a usage error).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// What `doctor --json` prints when its command line is refused (exit status
/// `exit_code`): its own object, with no check and the `error`, so that a script reads
/// one shape whatever happened.
pub fn error_json(exit_code: u8, error: &str) -> String {
    crate::results::fs::json(&Report {
        schema_version: 1,
        result: Status::Fail,
        exit_code: i32::from(exit_code),
        checks: &[],
        error: Some(error),
    })
}

/// Runs every check (the work dir as `--workdir` would choose it) and prints the findings
/// as text, or with `json` as one JSON object ([`Report`]); exits 2 when one failed.
pub fn run(explicit_workdir: Option<&Path>, json: bool) -> Result<i32> {
    let findings = check_all(explicit_workdir);
    let exit_code = exit_code(&findings);
    let shown = if json {
        crate::process::json_printable(&render_json(&findings))
    } else {
        // Findings quote what the host says (a CPU model, a process's command line).
        crate::process::printable(&render(&findings))
    };
    let _ = std::io::stdout().write_all(shown.as_bytes());
    Ok(exit_code)
}

fn exit_code(findings: &[Finding]) -> i32 {
    if findings.iter().any(|f| f.status == Status::Fail) {
        2
    } else {
        0
    }
}

fn check_all(explicit_workdir: Option<&Path>) -> Vec<Finding> {
    let host = Host::read();
    let (status, fix) = if class_identifies_cpu(&host.class()) {
        (Status::Ok, "")
    } else {
        (
            Status::Warn,
            "/proc/cpuinfo names no CPU this gate can read: recorded baselines and \
             --noise-from are refused here unless --allow-host-mismatch",
        )
    };
    let mut f = vec![finding(
        status,
        "host",
        format!(
            "{} ({}), kernel {}",
            host.class(),
            host.hostname,
            host.kernel
        ),
        fix,
    )];
    f.extend(workdir_findings(explicit_workdir));
    f.push(memory_cgroup());
    f.push(cores(host.cpus));
    f.push(governor());
    f.push(busy_processes());
    f.push(other_gates());
    f.push(fdb_checkout(
        std::env::var_os("FDB_SRC").map(PathBuf::from),
        crate::results::fs::default_fdb_src(),
    ));
    f.extend(build_tools());
    f.push(valgrind());
    if let Some(why) = crate::build::cmake_too_old() {
        f.push(finding(
            Status::Warn,
            "cmake version",
            why,
            "pip install cmake (needed only to build FDB trees)",
        ));
    }
    f
}

/// Valgrind, which the simulation driver (`--profile sim-*`) needs: a warning without it,
/// worded as `bench`'s refusal.
fn valgrind() -> Finding {
    match crate::plan::simulation::Valgrind::find() {
        Ok(v) => finding(
            Status::Ok,
            "valgrind",
            format!("{} ({})", v.version, v.path.display()),
            "",
        ),
        Err(e) => finding(
            Status::Warn,
            "valgrind",
            e.0,
            "needed only by the sim-* profiles",
        ),
    }
}

/// The FDB checkout `bench` builds its arms from (`FDB_SRC`, else foundationdb beside
/// the gate's workspace): a warning when it is not a git checkout, since `bench` without
/// prebuilt trees then stops at once; worded as `bench`'s error.
fn fdb_checkout(from_env: Option<PathBuf>, default: Option<PathBuf>) -> Finding {
    if from_env.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
        return finding(
            Status::Warn,
            "FDB checkout",
            "FDB_SRC is set but empty, which bench refuses".into(),
            "unset FDB_SRC, or set it to an FDB git checkout",
        );
    }
    let given = from_env.map(|p| (p, Origin::Env));
    match find_checkout(given, default, &[Arm::Baseline, Arm::Experiment]) {
        Ok(src) => finding(Status::Ok, "FDB checkout", src.display().to_string(), ""),
        Err((problem, advice)) => finding(Status::Warn, "FDB checkout", problem, &advice),
    }
}

/// The work dir `bench` would use (tmpfs, free space) and fsync latency there and, for
/// contrast, in the current directory.
fn workdir_findings(explicit_workdir: Option<&Path>) -> Vec<Finding> {
    // doctor only looks: a work dir `bench` would create is said, not made.
    if let Some(path) = explicit_workdir.filter(|p| p.symlink_metadata().is_err()) {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let (status, value) = if parent.is_none_or(Path::is_dir) {
            (
                Status::Warn,
                format!(
                    "{} does not exist: bench would create it there, and doctor checks \
                     nothing it would have to create",
                    path.display()
                ),
            )
        } else {
            (
                Status::Fail,
                format!("{} does not exist, nor does its parent", path.display()),
            )
        };
        return vec![finding(
            status,
            "work dir",
            value,
            "create it (e.g. mount a RAM disk there: mount -t tmpfs -o size=16g tmpfs DIR) \
             and run doctor again",
        )];
    }
    let w = match workdir::choose(explicit_workdir) {
        Ok(w) => w,
        Err(e) => {
            return vec![finding(
                Status::Fail,
                "work dir",
                format!("{e:#}"),
                "give --workdir on a tmpfs",
            )]
        }
    };
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let status = if w.tmpfs { Status::Ok } else { Status::Warn };
    let mut f = vec![finding(
        status,
        "work dir",
        format!(
            "{} ({}, {:.1} GiB free of {:.1} GiB, chosen by {})",
            w.path.display(),
            if w.tmpfs { "tmpfs" } else { "NOT tmpfs" },
            gib(w.free_bytes),
            gib(w.total_bytes),
            w.chosen_by
        ),
        if w.tmpfs {
            ""
        } else {
            "mount a RAM disk: mount -t tmpfs -o size=16g tmpfs /mnt/ram"
        },
    )];
    f.push(fsync_probe(&w.path, w.tmpfs));
    // The same probe where results go, for contrast: a RAM disk answers in
    // microseconds, a disk in tens of microseconds to milliseconds.
    if let Ok(here) = std::env::current_dir() {
        f.push(contrast_probe(&here));
    }
    f
}

/// [`fsync_probe`] in `dir` as a contrast to the work dir's: never a fault, since the gate
/// writes nothing there, but a directory it cannot write says it was not measured.
fn contrast_probe(dir: &Path) -> Finding {
    let mut disk = fsync_probe(dir, false);
    disk.name = "fsync (cwd)";
    if disk.status == Status::Fail {
        disk.value = format!("not measured: {}", disk.value);
    }
    disk.status = disk.status.min(Status::Ok);
    disk.hint.clear();
    disk
}

/// Gates running on this host now (a run dir's lock held by a live gate,
/// `run::reaper::live_runs_on_host`): `bench` refuses to start beside one, and idle
/// between trials it takes no CPU that [`busy_processes`] would see.
fn other_gates() -> Finding {
    let live = crate::run::reaper::live_runs_on_host();
    if live.is_empty() {
        return finding(Status::Ok, "other gates", "none running".into(), "");
    }
    finding(
        Status::Warn,
        "other gates",
        live.join(", "),
        "bench refuses to start until they end (PERFGATE_ALLOW_CONCURRENT=1 runs beside \
         them, on a --workdir of its own, with noisier trials)",
    )
}

/// The memory cgroup's headroom: tmpfs data counts against it.
fn memory_cgroup() -> Finding {
    match preflight::cgroup_headroom(Path::new("/sys/fs/cgroup")) {
        Some((h, src)) => finding(
            if h < 4 << 30 {
                Status::Warn
            } else {
                Status::Ok
            },
            "memory cgroup",
            format!(
                "{:.1} GiB headroom ({src})",
                h as f64 / f64::from(1u32 << 30)
            ),
            if h < 4 << 30 {
                "tmpfs data counts against it: shorten runs (--seconds) or raise the limit"
            } else {
                ""
            },
        ),
        None => finding(Status::Ok, "memory cgroup", "no limit".into(), ""),
    }
}

/// git, cmake, ninja and a C++ compiler ([`crate::build::BUILD_TOOLS`]): needed only to
/// build FDB trees.
fn build_tools() -> Vec<Finding> {
    let mut f = Vec::new();
    for (tools, package) in crate::build::BUILD_TOOLS {
        f.push(match tools.iter().find_map(|t| which::which(t).ok()) {
            Some(p) => finding(Status::Ok, "build tools", p.display().to_string(), ""),
            None => finding(
                Status::Warn,
                "build tools",
                format!("{} not found", tools.join(" / ")),
                &format!("needed only to build FDB trees: apt-get install {package}"),
            ),
        });
    }
    f
}

/// Whether this host can keep one storage server saturated: it needs
/// [`SATURATING_CORES`] (a core for the storage server, one for the other servers and
/// about three for mako's clients); the run's client processes follow [`client_procs`].
fn cores(cpus: usize) -> Finding {
    let quick = Workload::from_profile(ProfileArg::Quick).procs;
    let standard = Workload::from_profile(ProfileArg::Standard).procs;
    let detail = format!(
        "{cpus} logical CPUs: mako run -p {} (quick), -p {} (standard)",
        client_procs(quick, cpus),
        client_procs(standard, cpus)
    );
    if cpus >= SATURATING_CORES {
        return finding(Status::Ok, "cores", detail, "");
    }
    finding(
        Status::Warn,
        "cores",
        detail,
        &format!(
            "below {SATURATING_CORES} cores mako's clients and the storage server share cores, \
             so the storage server cannot be kept saturated and TPS partly measures the \
             clients: expect trials marked not CPU-bound; gate on a host with \
             {SATURATING_CORES} or more cores for numbers that measure the storage server"
        ),
    )
}

/// Frequency scaling and turbo make TPS drift with temperature and load.
fn governor() -> Finding {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let gov = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    let no_turbo = read("/sys/devices/system/cpu/intel_pstate/no_turbo");
    let boost = read("/sys/devices/system/cpu/cpufreq/boost");
    let turbo_on = no_turbo.as_deref() == Some("0") || boost.as_deref() == Some("1");
    match gov {
        None => finding(
            Status::Ok,
            "cpu frequency",
            "no cpufreq control visible (a VM?)".into(),
            "",
        ),
        Some(g) => {
            let bad = g != "performance" || turbo_on;
            finding(
                if bad { Status::Warn } else { Status::Ok },
                "cpu frequency",
                format!(
                    "governor {g}, turbo {}",
                    if turbo_on { "on" } else { "off or unknown" }
                ),
                if bad {
                    "for less noise: cpupower frequency-set -g performance, and turn turbo off"
                } else {
                    ""
                },
            )
        }
    }
}

/// Processes using CPU now: they add noise to every trial.
fn busy_processes() -> Finding {
    let ticks = || -> Vec<(u32, String, u64)> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
                let f: Vec<&str> = rest.split_whitespace().collect();
                let t = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
                Some((pid, name.to_string(), t))
            })
            .collect()
    };
    let before = ticks();
    let window = Duration::from_millis(500);
    std::thread::sleep(window);
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let own = std::process::id();
    let mut busy: Vec<(String, f64)> = ticks()
        .into_iter()
        .filter(|(pid, _, _)| *pid != own)
        .filter_map(|(pid, name, t)| {
            let (_, _, t0) = before.iter().find(|(p, _, _)| *p == pid)?;
            let cores = (t - t0) as f64 / hz / window.as_secs_f64();
            (cores >= 0.1).then(|| (format!("{name} ({pid})"), cores))
        })
        .collect();
    busy.sort_by(|a, b| b.1.total_cmp(&a.1));
    if busy.is_empty() {
        return finding(
            Status::Ok,
            "other load",
            "no process above 0.1 cores".into(),
            "",
        );
    }
    let list: Vec<String> = busy
        .iter()
        .take(5)
        .map(|(n, c)| format!("{n} {c:.1} cores"))
        .collect();
    finding(
        Status::Warn,
        "other load",
        list.join(", "),
        "stop them, or expect noisier trials (calibrate shows how much)",
    )
}

/// A write + fsync latency probe: on a RAM disk it is microseconds; on a network disk
/// milliseconds, which is what makes commits, not the storage server's CPU, the bound.
fn fsync_probe(dir: &Path, tmpfs: bool) -> Finding {
    let result = (|| -> anyhow::Result<Duration> {
        // Through the layer: a link planted at the name fails the create instead of being
        // written through. A random name, tried again when taken: a name anyone can guess
        // (the pid) lets anyone fail every probe by planting at it.
        let root = crate::files::Root::open("work dir", dir)?;
        let mut tries = 0;
        let (name, mut file) = loop {
            let name = format!(".perfgate-doctor-{:016x}", rand::random::<u64>());
            match root.create_new(&name) {
                Ok(file) => break (name, file),
                Err(_) if tries < 8 => tries += 1,
                Err(e) => return Err(e),
            }
        };
        let mut times = Vec::new();
        let timed = (|| -> anyhow::Result<()> {
            for _ in 0..20 {
                let start = Instant::now();
                file.write_all(&[0u8; 4096])?;
                file.sync_data()?;
                times.push(start.elapsed());
            }
            Ok(())
        })();
        // Only the file this probe created.
        let _ = root.remove_file(&name);
        timed?;
        times.sort();
        Ok(times[times.len() / 2])
    })();
    match result {
        Ok(median) => {
            // A disk-backed work dir is a warning however fast its fsync: commit latency,
            // not the storage server, then bounds TPS.
            let slow = !tmpfs || median > Duration::from_millis(1);
            finding(
                if slow { Status::Warn } else { Status::Ok },
                "fsync latency",
                format!(
                    "median {} µs for 4 KiB write + fdatasync{}",
                    median.as_micros(),
                    if tmpfs { " (tmpfs)" } else { "" }
                ),
                if slow {
                    "on a disk, commit latency bounds TPS, not the storage server's CPU: use a \
                     RAM disk"
                } else {
                    ""
                },
            )
        }
        Err(e) => finding(
            Status::Fail,
            "fsync latency",
            format!("cannot write to {}: {e}", dir.display()),
            "give a writable --workdir",
        ),
    }
}

/// The findings as one JSON object ([`Report`]), pretty-printed.
pub fn render_json(findings: &[Finding]) -> String {
    crate::results::fs::json(&Report {
        schema_version: 1,
        result: findings
            .iter()
            .map(|f| f.status)
            .max()
            .unwrap_or(Status::Ok),
        exit_code: exit_code(findings),
        checks: findings,
        error: None,
    })
}

/// The findings as aligned text.
pub fn render(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for f in findings {
        let tag = match f.status {
            Status::Ok => "ok  ",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        let _ = writeln!(s, "{tag} {:<width$}  {}", f.name, f.value);
        if !f.hint.is_empty() {
            let _ = writeln!(s, "     {:<width$}  -> {}", "", f.hint);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_fdb_checkout_is_a_warning_saying_what_to_do() {
        // doctor must not say all is well where `bench` would stop at once.
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("foundationdb");
        let missing = fdb_checkout(Some(src.clone()), None);
        assert_eq!(missing.status, Status::Warn);
        assert!(missing.hint.contains("git clone"), "{missing:?}");
        // Worded as bench's error, naming where the path came from.
        assert_eq!(
            missing.value,
            format!("{} does not exist (from FDB_SRC)", src.display())
        );
        let default = fdb_checkout(None, Some(src.clone()));
        assert!(default.value.contains("(from the default: "), "{default:?}");
        let empty = fdb_checkout(Some(PathBuf::new()), Some(src.clone()));
        assert_eq!(empty.status, Status::Warn);
        assert!(
            empty.value.contains("FDB_SRC is set but empty"),
            "{empty:?}"
        );
        std::fs::create_dir_all(src.join(".git")).unwrap();
        let there = fdb_checkout(None, Some(src));
        assert_eq!(there.status, Status::Ok, "{there:?}");
    }

    #[test]
    fn few_cores_are_a_warning_with_advice() {
        let ok = cores(8);
        assert_eq!(ok.status, Status::Ok);
        assert_eq!(
            ok.value,
            "8 logical CPUs: mako run -p 2 (quick), -p 6 (standard)"
        );
        let f = cores(2);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(
            f.value,
            "2 logical CPUs: mako run -p 1 (quick), -p 1 (standard)"
        );
        assert!(f.hint.contains("not CPU-bound"), "{}", f.hint);
    }

    #[test]
    fn rendering_aligns_topics_and_shows_advice() {
        let text = render(&[
            finding(Status::Ok, "cores", "8 logical CPUs".into(), ""),
            finding(
                Status::Warn,
                "work dir",
                "/x (NOT tmpfs)".into(),
                "mount a RAM disk",
            ),
        ]);
        assert_eq!(text, "ok   cores     8 logical CPUs\nWARN work dir  /x (NOT tmpfs)\n               -> mount a RAM disk\n");
    }

    #[test]
    fn the_json_report_holds_every_check_and_the_worst_status() {
        let ok = finding(Status::Ok, "cores", "8 logical CPUs".into(), "");
        let warn = finding(Status::Warn, "work dir", "/x".into(), "mount a RAM disk");
        let v: serde_json::Value = serde_json::from_str(&render_json(&[ok, warn])).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "schema_version": 1,
                "result": "warn",
                "exit_code": 0,
                "checks": [
                    {"name": "cores", "status": "ok", "value": "8 logical CPUs", "hint": null},
                    {"name": "work dir", "status": "warn", "value": "/x", "hint": "mount a RAM disk"}
                ]
            })
        );
        let fail = finding(
            Status::Fail,
            "fsync latency",
            "cannot write".into(),
            "give one",
        );
        let v: serde_json::Value = serde_json::from_str(&render_json(&[fail])).unwrap();
        assert_eq!((&v["result"], &v["exit_code"]), (&"fail".into(), &2.into()));
    }

    #[test]
    fn a_current_directory_that_cannot_be_written_is_said_unmeasured_not_ok() {
        let dir = tempfile::tempdir().unwrap();
        let f = contrast_probe(&dir.path().join("gone"));
        assert_eq!(f.status, Status::Ok, "{f:?}");
        assert!(
            f.value.starts_with("not measured: cannot write to "),
            "{f:?}"
        );
        let f = contrast_probe(dir.path());
        assert!(f.value.starts_with("median "), "{f:?}");
    }

    #[test]
    fn the_fsync_probe_measures_a_directory_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let f = fsync_probe(dir.path(), false);
        assert_eq!(f.status, Status::Warn, "not a RAM disk: {f:?}");
        assert!(f.value.starts_with("median "), "{f:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
