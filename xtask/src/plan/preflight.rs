//! Plan stage: will a trial fit on the work dir? Checked before anything starts.
//!
//! A trial's data lives on the work dir until its teardown (each trial wipes its own), so
//! the largest single trial must fit in the free space of the work dir's filesystem and,
//! when that is tmpfs (whose pages count against the memory cgroup: a full cgroup is an
//! OOM kill, not ENOSPC), in the cgroup's memory headroom.
//!
//! Footprint estimate (DESIGN.md: redwood grows by roughly 2 KB per inserted key):
//! rows x (keylen + vallen) x 3 (B-tree pages, tlog, free space) + 64 MiB (server files,
//! trace logs) + expected TPS x inserts per transaction x seconds x 2 KB. The expected TPS
//! is a recorded baseline's best trial plus 20% when there is one, else 5000 TPS.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use super::workdir::Workdir;
use crate::{
    config::{ClusterSource, DriverKind, Workload},
    error::UsageError,
};

/// What a trial is expected to need on the work dir, and what there is.
#[derive(Debug, Clone, Serialize)]
pub struct Preflight {
    pub footprint: Footprint,
    pub capacity: Capacity,
}

/// TPS assumed when no recorded baseline says better.
pub const DEFAULT_EXPECTED_TPS: f64 = 5000.0;
const BYTES_PER_INSERT: f64 = 2048.0;
const FIXED_BYTES: f64 = 64.0 * 1024.0 * 1024.0;
/// What a trial's testers keep on the work dir when the cluster is not the gate's: their
/// trace files and the multitest's spec. Measured on FDB 8.0 (one tester, a 20 s
/// point-read test at 45k TPS): a peak of 0.21 MB per trial, the tester's trace file
/// 0.15 MB. The bound keeps room for a trace file rolled at 10 MiB
/// (`TRACE_DEFAULT_ROLL_SIZE`, `flow/include/flow/Trace.h`) in a long test.
const TESTER_BYTES: f64 = 16.0 * 1024.0 * 1024.0;
const DATA_OVERHEAD: f64 = 3.0;
/// Room left unplanned, for what the estimate misses.
const SAFETY: f64 = 0.9;

/// Estimated bytes one trial writes to the work dir.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Footprint {
    /// The loaded data set, with overhead.
    pub data_bytes: f64,
    /// Growth over the run from inserts.
    pub growth_bytes: f64,
    pub expected_tps: f64,
    /// Keys written per transaction: mako's inserts, or ReadWrite's writes
    /// ([`writes_per_transaction`]).
    pub inserts_per_transaction: f64,
    /// Trials on the work dir at once, each needing this footprint: 2 in a duet.
    pub trials_at_once: u32,
}

impl Footprint {
    pub fn new(w: &Workload, expected_tps: f64) -> Footprint {
        let inserts = writes_per_transaction(w);
        Footprint {
            data_bytes: w.rows as f64 * (f64::from(w.keylen) + f64::from(w.vallen)) * DATA_OVERHEAD
                + FIXED_BYTES,
            growth_bytes: expected_tps * inserts * w.seconds as f64 * BYTES_PER_INSERT,
            expected_tps,
            inserts_per_transaction: inserts,
            trials_at_once: 1,
        }
    }

    /// What testers of a cluster the gate did not start keep on the work dir: their own
    /// files only ([`TESTER_BYTES`]), no data set, no growth.
    pub fn testers_only(expected_tps: f64) -> Footprint {
        Footprint {
            data_bytes: TESTER_BYTES,
            growth_bytes: 0.0,
            expected_tps,
            inserts_per_transaction: 0.0,
            trials_at_once: 1,
        }
    }

    pub fn total(&self) -> f64 {
        self.data_bytes + self.growth_bytes
    }
}

/// Keys inserted per transaction of a valid mako transaction spec: `i` counts, `ir`
/// counts times their range (`g18ui`: 1).
pub fn inserts_per_transaction(spec: &str) -> f64 {
    // Folded from +0.0: an empty f64 sum is -0.0, which printed as "-0 inserts".
    fdb::mako::transaction_ops(spec)
        .unwrap_or_default()
        .iter()
        .map(|op| match op.name {
            "i" => op.count as f64,
            "ir" => op.count as f64 * op.range.unwrap_or(1) as f64,
            _ => 0.0,
        })
        .fold(0.0, |a, b| a + b)
}

/// Keys a workload writes per transaction on average: mako's inserts; for ReadWrite its
/// writes (`alpha` of type B transactions, the rest type A), counted as inserts, an upper
/// bound: ReadWrite overwrites keys of its rows, which the tlog and the storage server's
/// version window hold until they are durable.
pub fn writes_per_transaction(w: &Workload) -> f64 {
    match w.driver_kind() {
        DriverKind::Multitest(rw) | DriverKind::Simulation(rw) => {
            rw.alpha * f64::from(rw.writes_b) + (1.0 - rw.alpha) * f64::from(rw.writes_a)
        }
        DriverKind::Mako => inserts_per_transaction(&w.transaction),
    }
}

/// Room for a trial: the work dir's free bytes and, on tmpfs, the memory cgroup's
/// headroom (`None`: no limit found).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capacity {
    pub free_bytes: u64,
    pub cgroup_headroom_bytes: Option<u64>,
    /// Which cgroup files gave the headroom.
    pub cgroup_source: Option<String>,
}

/// `Err` with the numbers and the flags that would fit when the footprint is too big.
pub fn check(foot: &Footprint, cap: &Capacity, w: &Workload) -> Result<(), String> {
    let (room, what, bigger) = match cap.cgroup_headroom_bytes {
        Some(h) if h < cap.free_bytes => (
            h,
            format!(
                "memory cgroup headroom ({})",
                cap.cgroup_source.as_deref().unwrap_or("?")
            ),
            // tmpfs pages count against the cgroup's limit wherever the RAM disk is: a
            // larger RAM disk does not help, a higher limit or a disk work dir does.
            "a higher memory limit for this job's cgroup (memory.max), or a --workdir on a \
             disk (slower: fsync then bounds TPS)",
        ),
        _ => (
            cap.free_bytes,
            "free space on the work dir".to_string(),
            "a larger --workdir",
        ),
    };
    // Trials at once share the room: each gets its part (and the fixes are for one).
    let usable = room as f64 * SAFETY / f64::from(foot.trials_at_once.max(1));
    if foot.total() <= usable {
        return Ok(());
    }
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let mut fixes = Vec::new();
    let growth_per_s = foot.growth_bytes / w.seconds as f64;
    if foot.data_bytes < usable && growth_per_s > 0.0 {
        let seconds = ((usable - foot.data_bytes) / growth_per_s).floor() as u64;
        if seconds > w.warmup_seconds {
            fixes.push(format!("--seconds {seconds}"));
        }
    }
    let per_row = f64::from(w.keylen + w.vallen) * DATA_OVERHEAD;
    let rows = ((usable - foot.growth_bytes.min(usable) - FIXED_BYTES) / per_row).floor();
    if rows >= 1.0 {
        fixes.push(format!("--rows {}", rows as u64));
    }
    fixes.push(bigger.to_string());
    if foot.trials_at_once > 1 {
        fixes.push("--pairing sequential (one trial at a time)".into());
    }
    let writes = match w.driver_kind() {
        DriverKind::Multitest(_) | DriverKind::Simulation(_) => "writes",
        DriverKind::Mako => "inserts",
    };
    let need = match foot.trials_at_once {
        0 | 1 => format!("a trial needs about {:.0} MiB", mib(foot.total())),
        n => format!(
            "the {n} trials a duet runs at once need about {:.0} MiB, {:.0} MiB each",
            mib(foot.total() * f64::from(n)),
            mib(foot.total())
        ),
    };
    Err(format!(
        "{need} on the work dir ({:.0} MiB data set + {:.0} MiB growth at {:.0} TPS x {} \
         {writes} x {} s), more than {:.0}% of the {:.0} MiB {what}: it would fail with \
         ENOSPC or an OOM kill mid-run; try {}",
        mib(foot.data_bytes),
        mib(foot.growth_bytes),
        foot.expected_tps,
        foot.inserts_per_transaction,
        w.seconds,
        SAFETY * 100.0,
        mib(room as f64),
        fixes.join(", or ")
    ))
}

/// The memory cgroup's headroom (limit minus usage) for this process, from cgroup v2
/// (`memory.max`, `memory.current`) or v1 (`memory/memory.limit_in_bytes`,
/// `memory/memory.usage_in_bytes`) under `root` (normally /sys/fs/cgroup); the cgroup's
/// own directory first, the hierarchy's root when that is not visible. `None` when no
/// limit is set or none is readable.
pub fn cgroup_headroom(root: &Path) -> Option<(u64, String)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let path_of = |pred: &dyn Fn(&str) -> bool| {
        own.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
            pred(ctrl).then(|| path.trim_start_matches('/').to_string())
        })
    };
    let read =
        |p: &Path| -> Option<String> { Some(std::fs::read_to_string(p).ok()?.trim().to_string()) };
    let candidates = |base: &Path, rel: Option<String>| {
        let mut dirs = Vec::new();
        if let Some(rel) = rel.filter(|r| !r.is_empty()) {
            dirs.push(base.join(rel));
        }
        dirs.push(base.to_path_buf());
        dirs
    };
    // cgroup v1 memory controller.
    for dir in candidates(
        &root.join("memory"),
        path_of(&|c| c.split(',').any(|x| x == "memory")),
    ) {
        let (Some(limit), Some(usage)) = (
            read(&dir.join("memory.limit_in_bytes")),
            read(&dir.join("memory.usage_in_bytes")),
        ) else {
            continue;
        };
        let (limit, usage): (u64, u64) = (limit.parse().ok()?, usage.parse().ok()?);
        // v1 writes "no limit" as a page-rounded i64::MAX.
        if limit >= (1 << 62) {
            return None;
        }
        return Some((
            limit.saturating_sub(usage),
            format!("{}/memory.limit_in_bytes", dir.display()),
        ));
    }
    // cgroup v2.
    for dir in candidates(root, path_of(&|c| c.is_empty())) {
        let (Some(max), Some(current)) = (
            read(&dir.join("memory.max")),
            read(&dir.join("memory.current")),
        ) else {
            continue;
        };
        if max == "max" {
            return None;
        }
        let (max, current): (u64, u64) = (max.parse().ok()?, current.parse().ok()?);
        return Some((
            max.saturating_sub(current),
            format!("{}/memory.max", dir.display()),
        ));
    }
    None
}

/// Checks that a trial fits on the work dir, before anything starts (a build included):
/// the footprint needs only the workload, the work dir and, for the expected TPS, the best
/// TPS of a recorded baseline (`recorded_best_tps`). Against a cluster the gate did not
/// start, the data set and its growth live on that cluster's servers: only the testers'
/// files ([`TESTER_BYTES`]) are on the work dir. `trials_at_once` trials (a duet's two)
/// share the room.
pub fn fits(
    workload: &Workload,
    workdir: &Workdir,
    recorded_best_tps: Option<f64>,
    cluster: &ClusterSource,
    trials_at_once: u32,
) -> Result<Preflight> {
    let expected_tps = recorded_best_tps.map_or(DEFAULT_EXPECTED_TPS, |best| best * 1.2);
    let footprint = match cluster {
        ClusterSource::Existing(_) => Footprint::testers_only(expected_tps),
        // The simulator's data (`simfdb/`) is on the work dir too, as a trial's would be.
        ClusterSource::Own(_) | ClusterSource::Simulated => Footprint {
            trials_at_once,
            ..Footprint::new(workload, expected_tps)
        },
    };
    let cgroup = if workdir.tmpfs {
        // tmpfs pages are charged to the memory cgroup. PERFGATE_CGROUP_ROOT points the
        // check elsewhere than /sys/fs/cgroup (tests simulate limits with it).
        let root = std::env::var_os("PERFGATE_CGROUP_ROOT")
            .map_or_else(|| PathBuf::from("/sys/fs/cgroup"), PathBuf::from);
        cgroup_headroom(&root)
    } else {
        None
    };
    let capacity = Capacity {
        free_bytes: workdir.free_bytes,
        cgroup_headroom_bytes: cgroup.as_ref().map(|c| c.0),
        cgroup_source: cgroup.map(|c| c.1),
    };
    check(&footprint, &capacity, workload).map_err(UsageError)?;
    Ok(Preflight {
        footprint,
        capacity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Workload {
        Workload::quick()
    }

    #[test]
    fn inserts_are_counted_from_the_transaction_spec() {
        assert_eq!(inserts_per_transaction("g18ui"), 1.0);
        assert_eq!(inserts_per_transaction("g8ui3"), 3.0);
        assert_eq!(inserts_per_transaction("gr:5ir2:10"), 20.0);
        assert_eq!(inserts_per_transaction("g18u"), 0.0);
        // Not "-0 inserts": an empty f64 sum is -0.0.
        assert_eq!(format!("{}", inserts_per_transaction("g18u")), "0");
        assert_eq!(format!("{}", inserts_per_transaction("")), "0");
        // A huge insert range is a workload, not an overflow.
        assert!(inserts_per_transaction("ir4294967296:4294967296") > 1e18);
    }

    #[test]
    fn readwrite_writes_grow_the_footprint_and_are_named_as_writes() {
        use crate::config::readwrite::{Load, ReadWriteLoad};
        // Write and mixed multitest profiles insert, so their data set grows. Their loads,
        // as the profiles have them (rows, sizes and 60 s of the multitest profiles).
        let profile = |load: Load| Workload {
            keylen: 16,
            vallen: 100,
            transaction: String::new(),
            warmup_seconds: 0,
            seconds: 60,
            readwrite: Some(ReadWriteLoad::built_in(load)),
            ..Workload::quick()
        };
        let (point, write, mixed) = (
            profile(Load::PointRead),
            profile(Load::Write),
            profile(Load::Mixed),
        );
        assert_eq!(writes_per_transaction(&point), 0.0);
        assert_eq!(writes_per_transaction(&write), 1.0);
        // ~91/9: 10% type B of 9 writes.
        assert!((writes_per_transaction(&mixed) - 0.9).abs() < 1e-9);
        let f = Footprint::new(&write, DEFAULT_EXPECTED_TPS);
        // 5000 TPS x 1 write x 60 s x 2 KB.
        assert!((f.growth_bytes - 614_400_000.0).abs() < 1.0);
        let room = Capacity {
            free_bytes: 300 << 20,
            cgroup_headroom_bytes: None,
            cgroup_source: None,
        };
        let err = check(&f, &room, &write).unwrap_err();
        assert!(err.contains("x 1 writes x 60 s"), "{err}");
        assert!(!err.contains("-0"), "{err}");
    }

    #[test]
    fn a_trial_that_fits_passes_and_one_that_does_not_names_the_numbers_and_fixes() {
        let w = quick();
        let f = Footprint::new(&w, DEFAULT_EXPECTED_TPS);
        // 100000 x 640 x 3 + 64 MiB and 5000 x 1 x 120 x 2 KB.
        assert!((f.data_bytes - (192_000_000.0 + 67_108_864.0)).abs() < 1.0);
        assert!((f.growth_bytes - 1_228_800_000.0).abs() < 1.0);
        let room = |free: u64, cg: Option<u64>| Capacity {
            free_bytes: free,
            cgroup_headroom_bytes: cg,
            cgroup_source: Some("test".into()),
        };
        assert!(check(&f, &room(8 << 30, None), &w).is_ok());
        let err = check(&f, &room(8 << 30, Some(1 << 30)), &w).unwrap_err();
        assert!(err.contains("memory cgroup headroom (test)"), "{err}");
        assert!(err.contains("--seconds "), "{err}");
        // Under a cgroup limit a larger RAM disk does not help: tmpfs pages count against
        // the cgroup's memory.max.
        assert!(
            err.contains("a higher memory limit for this job's cgroup (memory.max)")
                && !err.contains("a larger --workdir"),
            "{err}"
        );
        let err = check(&f, &room(100 << 20, None), &w).unwrap_err();
        assert!(
            err.contains("free space on the work dir") && err.contains("a larger --workdir"),
            "{err}"
        );
        // 1.5 GB fits in 2 GiB once, not twice (a duet's two trials at once).
        let duet = Footprint {
            trials_at_once: 2,
            ..f
        };
        assert!(check(&f, &room(2 << 30, None), &w).is_ok());
        let err = check(&duet, &room(2 << 30, None), &w).unwrap_err();
        assert!(
            err.contains("the 2 trials a duet runs at once need about")
                && err.contains("MiB each")
                && err.ends_with("or --pairing sequential (one trial at a time)"),
            "{err}"
        );
    }

    #[test]
    fn cgroup_headroom_reads_v1_and_v2_and_ignores_no_limit() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = dir.path().join("v1/memory");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "1073741824\n").unwrap();
        std::fs::write(v1.join("memory.usage_in_bytes"), "73741824\n").unwrap();
        assert_eq!(
            cgroup_headroom(&dir.path().join("v1")).unwrap().0,
            1_000_000_000
        );
        std::fs::write(v1.join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        assert_eq!(cgroup_headroom(&dir.path().join("v1")), None);
        let v2 = dir.path().join("v2");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(v2.join("memory.max"), "2000\n").unwrap();
        std::fs::write(v2.join("memory.current"), "500\n").unwrap();
        assert_eq!(cgroup_headroom(&v2).unwrap().0, 1500);
        std::fs::write(v2.join("memory.max"), "max\n").unwrap();
        assert_eq!(cgroup_headroom(&v2), None);
    }
}
