//! The test double's `fdbserver -r multitest -f SPEC -C FILE --num-testers N -L DIR`: waits
//! (silently, bounded) for N testers to have joined the coordinator, runs the spec's one
//! ReadWrite test for its `testDuration` (x the tree's `time_scale`) and prints what the
//! real one prints, from the real capture `fdb/testdata/multitest/pointread-stdout.txt`:
//! tester 0's 30 metric lines for every tester that joined, with TPS the smaller of the
//! target and the tree's `tps` (x noise), latencies scaled by its `p99_us`, its
//! `multitest_retries`, and `N tests passed; M tests failed.` (exit 0 even when failed).

use std::{fmt::Write as _, path::PathBuf, time::Duration};

use crate::common;

/// The real capture whose tester-0 lines are the template.
const CAPTURE: &str = include_str!("../../fdb/testdata/multitest/pointread-stdout.txt");

/// The capture's 98% latency of tester 0, ms: latencies scale by `p99_us` against it.
const CAPTURE_P98_MS: f64 = 4.442284;

pub fn main(args: &[String], b: &common::Behaviour) {
    let spec_path = PathBuf::from(common::flag(args, &["-f", "--testfile"]).expect("-f SPEC"));
    let cluster = PathBuf::from(common::flag(args, &["-C", "--cluster-file"]).expect("-C FILE"));
    let want: u32 = common::flag(args, &["--num-testers"])
        .map(|v| v.parse().expect("--num-testers N"))
        .unwrap_or(1);
    let Ok(spec) = std::fs::read_to_string(&spec_path) else {
        // Like the real one: a message and exit 0.
        eprintln!("ERROR: Could not open file `{}'", spec_path.display());
        return;
    };
    let option = |key: &str| -> Option<String> {
        spec.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('\'').to_string())
        })
    };
    let number = |key: &str| -> f64 {
        option(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("spec has no number {key}"))
    };
    let title = option("testTitle").expect("testTitle");
    let duration = number("testDuration");
    let target = number("transactionsPerSecond");
    let alpha = number("alpha");
    // Like the real one: waits up to 600 s (scaled) for the testers, printing nothing.
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(600.0 * b.time_scale);
    let testers = loop {
        let n: u32 = common::ask(&cluster, "testers")
            .and_then(|a| a.parse().ok())
            .unwrap_or(0);
        if n >= want {
            break n + b.multitest_extra_testers;
        }
        if std::time::Instant::now() >= deadline {
            eprintln!("Fatal Error: Operation timed out");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    println!(
        "startingConfiguration: start\nuseDB: true\nRun test:{title} start\n\
         setting up test ({title})...\nrunning test ({title})..."
    );
    let k = common::next_run();
    if b.multitest_recovery_runs.contains(&k) {
        // Mid-test, as a server killed and restarted under it.
        std::thread::sleep(Duration::from_secs_f64(duration * b.time_scale / 2.0));
        common::ask(&cluster, "recover");
        std::thread::sleep(Duration::from_secs_f64(duration * b.time_scale / 2.0));
    } else if b.multitest_reconfigure_runs.contains(&k) {
        std::thread::sleep(Duration::from_secs_f64(duration * b.time_scale / 2.0));
        common::ask(&cluster, "configure memory");
        common::ask(&cluster, "recover");
        std::thread::sleep(Duration::from_secs_f64(duration * b.time_scale / 2.0));
    } else {
        std::thread::sleep(Duration::from_secs_f64(duration * b.time_scale));
    }
    // A cluster gone meanwhile: the real multitest waits for it, as long as it takes.
    while common::ask(&cluster, "status").is_none() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let slow = if b.multitest_slow_runs.contains(&k) {
        0.5
    } else {
        1.0
    };
    let capacity = slow * b.tps * common::noise_factor(b.noise_pct, k, common::stream(b));
    // A target met is met within a little noise too (999.4 of 1000 in the capture).
    let met = target * common::noise_factor(b.noise_pct, k, !common::stream(b));
    let tps = capacity.min(met) / f64::from(testers);
    let latency = b.p99_us / 1000.0 / CAPTURE_P98_MS;
    let window = 0.75 * duration;
    let mut out =
        format!("{title} complete\nchecking test ({title})...\nfetching metrics ({title})...\n");
    for t in 0..testers {
        for line in CAPTURE.lines().filter(|l| l.starts_with("Metric (0, ")) {
            let rest = line.split_once("): ").expect("metric line").1;
            let mut f = rest.rsplitn(3, ", ");
            let (_, real, name) = (f.next(), f.next().expect("value"), f.next().expect("name"));
            let real: f64 = real.parse().expect("a number");
            let metric = name.trim_start_matches("ReadWrite.");
            let value = match metric {
                "Measured Duration" => window,
                "Transactions/sec" | "Operations/sec" | "Read rows/sec" => tps,
                "A Transactions" => (tps * window * (1.0 - alpha)).round(),
                "B Transactions" => (tps * window * alpha).round(),
                "Retries" => b.multitest_retries as f64 / f64::from(testers),
                m if m.contains("Latency") && real.is_finite() => real * latency,
                _ => real,
            };
            let index = line["Metric (0, ".len()..]
                .split_once(')')
                .expect("index")
                .0;
            let _ = writeln!(out, "Metric ({t}, {index}): {name}, {value:.6}, {value:.3}");
        }
    }
    let (passed, failed) = if b.multitest_test_fails || b.multitest_fail_runs.contains(&k) {
        (0, 1)
    } else {
        (1, 0)
    };
    let _ = write!(
        out,
        "Test complete\n{testers} test clients passed; 0 test clients failed\n\
         Run test:{title} Done.\n\n{passed} tests passed; {failed} tests failed.\n"
    );
    print!("{out}");
    if let Some(log) = common::flag(args, &["-L", "--logdir"]) {
        let _ = std::fs::write(
            PathBuf::from(log).join("trace.0.0.0.0.0.double.0.1.xml"),
            format!("<Event Severity=\"10\" Type=\"TestResults\" Workload=\"{title}\" Passed=\"{passed}\" />\n"),
        );
    }
}
