//! The test double's `fdbserver -r simulation -f SPEC -s SEED -b off`: what the real
//! simulator prints, in the format of the real capture
//! `fdb/testdata/simulation/stdout-seed1.txt` (a `ChangeConfig` test without metrics, then
//! the spec's ReadWrite test's metrics per client, `N tests passed; M tests failed.`,
//! `Unseed: N`, `Elapsed: ...`), with `simfdb/` and a trace file in its working directory.
//! Under the double's `valgrind` (`PERFGATE_DOUBLE_CACHEGRIND_OUT` set) it also writes a
//! cachegrind file in the format of `fdb/testdata/simulation/cachegrind-excerpt.out`:
//! the storage server's `getValueQ` at the tree's `sim_storage_ir_per_txn`, a tlog, a
//! proxy, a client and flow function, and code without symbols.
//!
//! Every figure is a function of the seed and the tree's behaviour alone, as the real
//! simulator's are of the seed and the binary: the same tree and seed give the same
//! output.

use std::{fmt::Write as _, path::PathBuf};

use crate::common;

/// Simulated clients that report metrics.
const CLIENTS: u64 = 2;

pub fn main(args: &[String], b: &common::Behaviour) {
    let spec_path = PathBuf::from(common::flag(args, &["-f", "--testfile"]).expect("-f SPEC"));
    let seed: u64 = common::flag(args, &["-s", "--seed"])
        .and_then(|s| s.parse().ok())
        .expect("-s SEED");
    let spec = std::fs::read_to_string(&spec_path).expect("the spec");
    assert!(
        spec.contains("[configuration]"),
        "a simulation spec has [configuration]"
    );
    assert!(
        spec.contains("buggify = false"),
        "the gate turns buggify off"
    );
    let title = spec
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("testTitle = '")?
                .strip_suffix('\'')
                .map(str::to_string)
        })
        .expect("testTitle");
    std::fs::create_dir_all("simfdb").expect("simfdb/ in the working directory");
    if let Some(ms) = b.sim_meet_peer_ms {
        meet_peer(ms);
    }
    let trace = format!("trace.0.0.0.0.{}.double.0.1.xml", std::process::id());
    let mut events = String::from("<?xml version=\"1.0\"?>\n<Trace>\n");
    let transactions = 1000 + seed * 37;
    let unseed = 40_000
        + seed * 7919
        + b.sim_unseed_offset
        + if b.sim_not_deterministic {
            u64::from(std::process::id())
        } else {
            0
        };
    let mut out = String::from("Random seed is ");
    let _ = writeln!(out, "{seed}...\nsetting up test (ChangeConfig)...");
    out.push_str("fetching metrics (ChangeConfig)...\nRun test:");
    let _ = writeln!(
        out,
        "{title} start\nrunning test ({title})...\nfetching metrics ({title})..."
    );
    let failed = b.sim_fails;
    for c in 0..CLIENTS {
        let share = transactions / CLIENTS + u64::from(c == 0) * (transactions % CLIENTS);
        let _ = writeln!(
            out,
            "Metric ({c}, 0): ReadWrite.Measured Duration, 5.000000, 5"
        );
        let _ = writeln!(
            out,
            "Metric ({c}, 3): ReadWrite.A Transactions, {share}.000000, {share}"
        );
        let _ = writeln!(
            out,
            "Metric ({c}, 4): ReadWrite.B Transactions, 0.000000, 0"
        );
        let _ = writeln!(out, "Metric ({c}, 5): ReadWrite.Retries, 3.000000, 3");
    }
    let (p, f) = if failed { (0, 1) } else { (1, 0) };
    let _ = writeln!(
        out,
        "{p} tests passed; {f} tests failed.\n\nUnseed: {unseed}"
    );
    let _ = writeln!(out, "Elapsed: 24.500000 simsec, 0.1 real seconds");
    if failed {
        events.push_str("<Event Severity=\"40\" Type=\"TestFailure\" Reason=\"double\"/>\n");
    }
    events.push_str("</Trace>\n");
    std::fs::write(&trace, events).expect("trace file");
    print!("{out}");
    if let (Ok(file), true) = (
        std::env::var("PERFGATE_DOUBLE_CACHEGRIND_OUT"),
        b.sim_cachegrind_fifo,
    ) {
        nix::unistd::mkfifo(file.as_str(), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    } else if let Ok(file) = std::env::var("PERFGATE_DOUBLE_CACHEGRIND_OUT") {
        let scale = 1.0 + seed as f64 * b.sim_seed_spread_pct / 100.0;
        let per = |ir: u64| (ir as f64 * scale) as u64 * transactions;
        let functions = [
            (
                "/src/foundationdb/fdbserver/storageserver/storageserver.cpp",
                "getValueQ(StorageServer*, GetValueRequest) [clone .resume]",
                per(b.sim_storage_ir_per_txn),
            ),
            (
                "/src/foundationdb/fdbserver/tlog/TLogServer.cpp",
                "commitMessages(TLogData*)",
                per(20_000),
            ),
            (
                "/src/foundationdb/fdbserver/resolver/SkipList.cpp",
                "SkipList::detectConflicts(ReadConflictRange*, int, bool*)",
                per(15_000),
            ),
            (
                "/src/foundationdb/fdbserver/workloads/ReadWrite.cpp",
                "ReadWriteWorkload::start()",
                per(30_000),
            ),
            (
                "/src/foundationdb/flow/Net2.cpp",
                "N2::Net2::run()",
                per(b.sim_shared_ir_per_txn),
            ),
            ("???", "???", per(300_000)),
        ];
        let mut text = String::from(
            "desc: I1 cache:         32768 B, 64 B, 8-way associative\ncmd: fdbserver -r simulation\nevents: Ir\n",
        );
        let mut total = 0;
        for (fl, func, ir) in functions {
            // Two cost lines per function, as cachegrind writes one per source line.
            let _ = writeln!(
                text,
                "fl={fl}\nfn={func}\n10 {}\n11 {}",
                ir / 2,
                ir - ir / 2
            );
            total += ir;
        }
        let _ = writeln!(text, "summary: {total}");
        std::fs::write(&file, text).expect("the cachegrind file");
    }
    std::process::exit(i32::from(failed));
}

/// Marks this simulation as started (a file in the tree's root) and waits up to `ms` for
/// another one's mark; exits 1 if none came.
fn meet_peer(ms: u64) {
    let root = common::tree_root();
    let mine = format!("sim-started-{}", std::process::id());
    std::fs::write(root.join(&mine), "").expect("a mark in the tree root");
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    loop {
        let peers = std::fs::read_dir(&root)
            .expect("the tree root")
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("sim-started-") && name != mine
            })
            .count();
        if peers > 0 {
            return;
        }
        if std::time::Instant::now() >= deadline {
            eprintln!("double: the simulation ran alone");
            std::process::exit(1);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
