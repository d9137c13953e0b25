//! The multitest driver (`--profile point-read|write|mixed`): testers as supervised
//! children, the spec the gate writes, the results read back and judged like mako's, an
//! overdriven trial, saturation, a failed test, a stray tester, and its usage errors.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{code, text, Sandbox};

/// A small multitest workload: 1000 rows, the shortest test the gate allows.
const SMALL: [&str; 6] = [
    "--profile",
    "point-read",
    "--rows",
    "1000",
    "--seconds",
    "10",
];

fn multitest(s: &Sandbox, a: &Path, b: &Path, extra: &[&str]) -> std::process::Output {
    s.bench_command_with(a, b, &s.out(), &SMALL, extra)
        .output()
        .unwrap()
}

fn trials(s: &Sandbox) -> Vec<Value> {
    s.read_json("trials.json").as_array().unwrap().clone()
}

#[test]
fn a_slower_experiment_under_multitest_is_a_regression_with_the_reference_columns() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 900.0}));
    let o = multitest(&s, &a, &b, &[]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "REGRESSION"
    );
    let t = trials(&s);
    assert_eq!(t.len(), 6, "3 pairs");
    for trial in &t {
        assert_eq!(trial["outcome"], "measured", "{trial}");
        let m = &trial["multitest"];
        assert_eq!(
            (
                m["testers"].as_u64(),
                m["actors_per_tester"].as_u64(),
                m["target_tps"].as_f64()
            ),
            (Some(1), Some(64), Some(100000.0))
        );
        assert!(trial["report"].is_null(), "no mako report: {trial}");
        let phases: Vec<&str> = trial["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["phase"].as_str().unwrap())
            .collect();
        assert_eq!(
            phases,
            [
                "cluster-start",
                "configure",
                "available",
                "multitest",
                "teardown"
            ]
        );
        // The spec the gate wrote, with the harness's cluster-disturbing defaults off.
        let dir = s.out().join(trial["artifacts"].as_str().unwrap());
        let spec = std::fs::read_to_string(dir.join("multitest.toml")).unwrap();
        for line in [
            "waitForQuiescence = false",
            "runFailureWorkloads = false",
            "testDuration = 10.0",
            "transactionsPerSecond = 100000.0",
            "actorCountPerTester = 64",
            "nodeCount = 1000",
            "readsPerTransactionA = 1",
            "alpha = 0.0",
        ] {
            assert!(spec.contains(line), "{line}: {spec}");
        }
        assert!(dir.join("multitest.txt").is_file());
        // The tester was a supervised child: its output and trace were kept.
        let tester_err = std::fs::read_dir(&dir).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("fdbserver-test-")
        });
        assert!(tester_err, "no tester output in {}", dir.display());
    }
    let measured: Vec<f64> = t
        .iter()
        .map(|x| x["multitest"]["result"]["tps"].as_f64().unwrap())
        .collect();
    assert!(
        measured.iter().all(|v| (880.0..=1010.0).contains(v)),
        "{measured:?}"
    );
    // The table of the reference report, with saturation said: 100000 TPS was asked.
    let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
    for want in [
        "ReadWrite per trial",
        "txn p98 ms",
        "GRV p50 ms",
        "retries",
        "no (saturated)",
    ] {
        assert!(html.contains(want), "{want}");
    }
    assert!(
        text(&o).contains("not the target") && text(&o).contains("1 tester(s) x 64 actors"),
        "{}",
        text(&o)
    );
    let tsv = std::fs::read_to_string(s.out().join("results.tsv")).unwrap();
    let row: Vec<&str> = tsv.lines().nth(1).unwrap().split('\t').collect();
    assert!(
        row[5].parse::<f64>().unwrap() > 800.0,
        "tps column: {row:?}"
    );
    assert_eq!(
        row[7], "7.500",
        "ReadWrite's window: the middle 75% of 10 s"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn retries_make_an_overdriven_trial_and_a_followed_target_is_not_saturation() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"tps": 1000.0, "multitest_retries": 12}));
    let o = multitest(&s, &a, &a, &["--allow-same", "--trials", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    for t in trials(&s) {
        assert_eq!(t["outcome"], "error", "{t}");
        assert_eq!(t["failed_phase"], "multitest");
        let e = t["error"].as_str().unwrap();
        assert!(
            e.contains("overdriven, ReadWrite retried 12 transactions"),
            "{e}"
        );
        assert_eq!(
            t["multitest"]["result"]["retries"], 12.0,
            "the figures are kept"
        );
    }
    let s = Sandbox::new();
    let a = s.tree("a", json!({"tps": 1000.0}));
    let o = multitest(
        &s,
        &a,
        &a,
        &["--allow-same", "--trials", "1", "--target-tps", "500"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    for t in trials(&s) {
        let tps = t["multitest"]["result"]["tps"].as_f64().unwrap();
        assert!((tps - 500.0).abs() < 1.0, "the target is followed: {tps}");
    }
    assert!(!text(&o).contains("saturated"), "{}", text(&o));
    let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
    assert!(html.contains("<td>yes</td>") && !html.contains("no (saturated)"));
}

#[test]
fn a_failed_test_or_a_stray_tester_is_an_error_that_says_so() {
    for (behaviour, want) in [
        (
            json!({"multitest_test_fails": true}),
            "multitest reported 0 tests passed and 1 failed",
        ),
        (
            json!({"multitest_extra_testers": 1}),
            "has metrics from 2 testers, but 1 were started",
        ),
    ] {
        let s = Sandbox::new();
        let a = s.tree("a", behaviour);
        let o = multitest(&s, &a, &a, &["--allow-same", "--trials", "1"]);
        assert_eq!(code(&o), 2, "{}", text(&o));
        let t = &trials(&s)[0];
        assert_eq!(
            (&t["outcome"], &t["failed_phase"]),
            (&json!("error"), &json!("multitest"))
        );
        let e = t["error"].as_str().unwrap();
        assert!(
            e.contains(want) && e.contains("fdbserver-test-<port>.err"),
            "{e}"
        );
        s.assert_no_leftover_processes();
    }
}

#[test]
fn values_of_the_other_driver_are_usage_errors_naming_the_flag() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let run = |args: &[&str]| {
        s.bench_command_with(&a, &a, &s.out(), args, &["--allow-same", "--dry-run"])
            .output()
            .unwrap()
    };
    for (args, want) in [
        (
            &["--profile", "point-read", "--procs", "2"][..],
            "--procs is set, but profile 'point-read' runs the multitest driver",
        ),
        (
            &["--profile", "quick", "--target-tps", "5"][..],
            "--target-tps is set, but profile 'quick' runs mako",
        ),
        (
            &["--profile", "write", "--seconds", "5"][..],
            "--seconds 5 must be between 10 and",
        ),
        (
            &["--profile", "mixed", "--keylen", "8"][..],
            "ReadWrite needs keys of at least 16 bytes",
        ),
        (
            &["--profile", "mixed", "--testers", "0"][..],
            "--testers 0 must be",
        ),
        (
            &["--profile", "point-read", "--gate", "latency"][..],
            "reports no p99 latency",
        ),
    ] {
        let o = run(args);
        assert_eq!(code(&o), 64, "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
    }
    let file = s.dir.path().join("p.json");
    std::fs::write(
        &file,
        r#"{"name": "rw", "base": "point-read", "threads": 2}"#,
    )
    .unwrap();
    let o = run(&["--profile-file", file.to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("field `threads` is set"), "{}", text(&o));
    std::fs::write(
        &file,
        r#"{"name": "rw", "base": "mixed", "alpha": 0.5, "writes_b": 0, "reads_b": 0}"#,
    )
    .unwrap();
    let o = run(&["--profile-file", file.to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("type B 0"), "{}", text(&o));
    let o = std::process::Command::new(crate::support::xtask())
        .args(["calibrate", "--build"])
        .arg(&a)
        .args(["--out"])
        .arg(s.dir.path().join("cal"))
        .args(["--profile", "point-read", "--write-profile"])
        .arg(s.dir.path().join("sized.json"))
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("runs the multitest driver, which prints none"),
        "{}",
        text(&o)
    );
}
