//! The multitest driver (`--profile point-read|write|mixed`): testers as supervised
//! children, the spec the gate writes, the results read back and judged like mako's, an
//! overdriven trial, saturation, a failed test, a stray tester, and its usage errors.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{code, text, Sandbox};

/// A small multitest workload: 1000 rows, the shortest test the gate allows.
pub(crate) const SMALL: [&str; 6] = [
    "--profile",
    "point-read",
    "--rows",
    "1000",
    "--seconds",
    "10",
];

/// A multitest run with `extra` flags into the sandbox's results dir, emptied first (a
/// test may run several).
pub(super) fn multitest(s: &Sandbox, a: &Path, b: &Path, extra: &[&str]) -> std::process::Output {
    let _ = std::fs::remove_dir_all(s.out());
    s.bench_command_with(a, b, &s.out(), &SMALL, extra)
        .output()
        .unwrap()
}

/// Each fdbserver's (tester's) trace dir in a trial's artifacts `dir`, `<role>-<port>`,
/// with its trace files' text.
pub(super) fn server_traces(dir: &Path) -> Vec<(String, String)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name() != "multitest")
        .map(|e| {
            let trace = std::fs::read_dir(e.path())
                .unwrap()
                .flatten()
                .map(|f| std::fs::read_to_string(f.path()).unwrap())
                .collect();
            (e.file_name().to_string_lossy().into_owned(), trace)
        })
        .collect()
}

pub(super) fn trials(s: &Sandbox) -> Vec<Value> {
    s.read_trials().as_array().unwrap().clone()
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
        let phases = crate::support::phase_names(trial);
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
        "txn p98 µs",
        "GRV p50 µs",
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
    let header: Vec<&str> = tsv.lines().next().unwrap().split('\t').collect();
    let row: Vec<&str> = tsv.lines().nth(1).unwrap().split('\t').collect();
    let tps = header.iter().position(|h| *h == "tps").unwrap();
    assert!(
        row[tps].parse::<f64>().unwrap() > 800.0,
        "tps column: {row:?}"
    );
    let window = header.iter().position(|h| *h == "measured_s").unwrap();
    assert_eq!(
        row[window], "7.500",
        "ReadWrite's window: the middle 75% of 10 s"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn retries_make_an_overdriven_trial_and_a_followed_target_is_not_saturation() {
    let s = Sandbox::new();
    // 500 retries of about 7500 transactions (1000 TPS x 7.5 s): 6.7%, overdriven.
    let a = s.tree("a", json!({"tps": 1000.0, "multitest_retries": 500}));
    let o = multitest(&s, &a, &a, &["--allow-same", "--trials", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    for t in trials(&s) {
        assert_eq!(t["outcome"], "error", "{t}");
        assert_eq!(t["failed_phase"], "multitest");
        let e = t["error"].as_str().unwrap();
        assert!(
            e.contains("overdriven, ReadWrite retried 500 transactions in the window, 6.6")
                && e.contains("above 1% the load is more"),
            "{e}"
        );
        assert_eq!(
            t["multitest"]["result"]["retries"], 500.0,
            "the figures are kept"
        );
    }
    // 12 retries (0.16%) are contention: measured, and said.
    let c = s.tree("c", json!({"tps": 1000.0, "multitest_retries": 12}));
    let o = multitest(&s, &c, &c, &["--allow-same", "--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(trials(&s).iter().all(|t| t["outcome"] == "measured"));
    assert!(
        text(&o).contains("12 retries, 0.16") && text(&o).contains("contention, below the 1%"),
        "{}",
        text(&o)
    );
    // Nothing completed (0 TPS, as a write workload on 1000 rows can do) is an error,
    // not a "saturated" cluster.
    let z = s.tree("z", json!({"tps": 0.0, "multitest_retries": 300}));
    let o = multitest(&s, &z, &z, &["--allow-same", "--trials", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let e = trials(&s)[0]["error"].as_str().unwrap().to_string();
    assert!(
        e.contains(
            "no transaction completed in the measured window (TPS 0); ReadWrite retried 300"
        ),
        "{e}"
    );
    assert!(!text(&o).contains("saturated"), "{}", text(&o));
    let s = Sandbox::new();
    let a = s.tree("a", json!({"tps": 1000.0}));
    let o = multitest(
        &s,
        &a,
        &a,
        &["--allow-same", "--trials", "3", "--target-tps", "500"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    for t in trials(&s) {
        let tps = t["multitest"]["result"]["tps"].as_f64().unwrap();
        assert!((tps - 500.0).abs() < 1.0, "the target is followed: {tps}");
    }
    assert!(!text(&o).contains("saturated"), "{}", text(&o));
    // A target met measures the target: no pass on TPS, said so.
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(
        (&j["metric"], &j["verdict"]),
        (&json!("tps"), &json!("INCONCLUSIVE"))
    );
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("6 of 6 trials met their target of 500 TPS"),
        "{reason}"
    );
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
        (
            &[
                "--profile",
                "point-read",
                "--hosts",
                "2",
                "--redundancy",
                "triple",
            ][..],
            "--redundancy triple keeps 3 replicas on different zones",
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
    let o = crate::support::gate_cmd()
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
    // Without --write-profile, calibrate measures a multitest workload's noise, and says
    // why it sizes no trials.
    let o = crate::support::gate_cmd()
        .args(["calibrate", "--build"])
        .arg(&a)
        .args(["--out"])
        .arg(s.dir.path().join("cal2"))
        .args(SMALL)
        .args(["--trials", "2"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("prints no per-second TPS"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("three 10 s"), "{}", text(&o));
    assert!(s.dir.path().join("cal2/calibration.json").is_file());
}

#[test]
fn a_sweep_stops_one_step_past_the_knee_and_a_lower_knee_is_a_regression() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 800.0}));
    let o = multitest(
        &s,
        &a,
        &b,
        &["--sweep", "400,600,900,1200,2000", "--trials", "1"],
    );
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(
        text(&o).contains("sweep      targets 400, 600, 900, 1200, 2000 TPS, 1 pair(s) each"),
        "{}",
        text(&o)
    );
    // One pair per step is no INCONCLUSIVE-only plan here: the knee is judged per step,
    // so the warning would contradict the REGRESSION it can find.
    assert!(
        !text(&o).contains("GIVES AT MOST INCONCLUSIVE"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("10 in this order (--seed 3 repeats it), if each runs once,"),
        "{}",
        text(&o)
    );
    // The time left counts the whole ladder, which the sweep may not climb: an estimate.
    assert!(
        text(&o).contains("trial 2 of 10 so far: redwood") && text(&o).contains(", about "),
        "{}",
        text(&o)
    );
    let j = &s.read_json("summary.json")["judgements"];
    assert_eq!(j.as_array().unwrap().len(), 1, "the knee alone: {j}");
    assert_eq!(
        (&j[0]["metric"], &j[0]["verdict"]),
        (&json!("knee_tps"), &json!("REGRESSION"))
    );
    let reason = j[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the knee fell from 900 TPS to 600 TPS"),
        "{reason}"
    );
    // 1200 TPS was followed by no arm: the sweep stopped there, not at 2000. The arms
    // split on 900: it ran to 3 pairs.
    let targets: Vec<u64> = trials(&s)
        .iter()
        .map(|t| t["target_tps"].as_u64().unwrap())
        .collect();
    assert_eq!(targets.len(), 12, "{targets:?}");
    assert_eq!(
        targets.iter().filter(|t| **t == 900).count(),
        6,
        "{targets:?}"
    );
    assert!(
        targets.iter().all(|t| *t <= 1200) && targets.contains(&1200),
        "{targets:?}"
    );
    for t in trials(&s) {
        let spec = std::fs::read_to_string(
            s.out()
                .join(t["artifacts"].as_str().unwrap())
                .join("multitest.toml"),
        )
        .unwrap();
        let want = format!("transactionsPerSecond = {}.0", t["target_tps"]);
        assert!(spec.contains(&want), "{want}: {spec}");
    }
    let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
    for want in [
        "saturation sweep",
        "baseline knee: 900 TPS",
        "experiment knee: 600 TPS",
        "measured TPS against the target",
        "p98 transaction latency against the measured TPS",
        "p98 latency (µs)",
    ] {
        assert!(html.contains(want), "{want}");
    }
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains("knee_tps") && junit.contains("REGRESSION (redwood)"),
        "{junit}"
    );
    // `compare` judges the saved sweep's knee again.
    let (o, summary) = s.compare_again();
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(summary["judgements"][0]["reason"], j[0]["reason"]);
    // The knees for scripts, and in the verdict table's columns of the arms.
    assert_eq!(
        j[0]["notes"],
        json!(["baseline knee: 900 TPS", "experiment knee: 600 TPS"])
    );
    assert_eq!(
        j[0]["knees"],
        json!({"baseline_tps": 900, "experiment_tps": 600, "first_step_tps": 400,
               "top_step_tps": 2000, "has_baseline": true})
    );
    let md = std::fs::read_to_string(s.out().join("summary.md")).unwrap();
    assert!(
        md.contains("| redwood | knee TPS | 900 | 600 | -33.33% | - | **REGRESSION** |"),
        "{md}"
    );
    s.assert_no_leftover_processes();
}

/// `baseline record` of the run in the sandbox's results dir into its baselines dir as
/// `name`, with `extra` flags.
#[test]
fn one_slow_trial_at_the_knee_runs_the_step_again_and_moves_no_knee() {
    // Were a step followed only when every trial there is, one slow trial at the knee
    // would give an A/A sweep a false REGRESSION of one step (real FDB 8.0: 16000 vs
    // 8000 TPS). So the step the arms split on runs to 3 trials per arm, and a majority
    // decides.
    let s = Sandbox::new();
    // The experiment tree's third run (at 900 TPS) measures half.
    let (a, b) = s.ab(json!({}), json!({"multitest_slow_runs": [2]}));
    let o = multitest(
        &s,
        &a,
        &b,
        &["--sweep", "400,600,900,1200", "--trials", "1"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("redwood: the arms split on 900 TPS: 2 more trial(s) per arm there"),
        "{}",
        text(&o)
    );
    // The count takes in the confirmations once they are known, so the total never falls
    // behind the trial number ("9 of 9", "10 of 10").
    for n in 7..=12 {
        assert!(
            text(&o).contains(&format!("trial {n} of 12 so far: redwood")),
            "{n}: {}",
            text(&o)
        );
    }
    let t = trials(&s);
    let at = |target: u64| {
        t.iter()
            .filter(|t| t["target_tps"] == json!(target))
            .count()
    };
    assert_eq!(
        (at(400), at(600), at(900), at(1200)),
        (2, 2, 6, 2),
        "{t:#?}"
    );
    // Each arm's repetitions count its trials in run order, the confirmations included
    // (before: 1, 2, 3, 5, 6, 4, the confirmations numbered past every planned step).
    for arm in ["baseline", "experiment"] {
        let reps: Vec<u64> = t
            .iter()
            .filter(|t| t["arm"] == arm)
            .map(|t| t["repetition"].as_u64().unwrap())
            .collect();
        assert_eq!(reps, [1, 2, 3, 4, 5, 6], "{arm}");
    }
    let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
    let rep_column: Vec<&str> = html
        .lines()
        .filter(|l| {
            l.starts_with("<tr><td>")
                && ["baseline", "experiment"]
                    .iter()
                    .any(|arm| l.contains(&format!("<td>redwood</td><td>{arm}</td>")))
        })
        .filter_map(|l| l.split("</td><td>").nth(3))
        .collect();
    assert_eq!(
        rep_column,
        ["1", "1", "2", "2", "3", "3", "4", "4", "5", "5", "6", "6"],
        "the trials table's rep column, in run order"
    );
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{j}");
    assert_eq!(
        j["notes"],
        json!(["baseline knee: 900 TPS", "experiment knee: 900 TPS"])
    );
    assert!(html.contains("yes (2 of 3)"), "the split step's count");
    // A slow majority still loses the step: the same sweep with two slow runs there. But
    // 2 slow trials in the 4 pairs past the lower knee show no loss: INCONCLUSIVE, not a
    // REGRESSION of one step.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"multitest_slow_runs": [2, 3]}));
    let o = multitest(
        &s,
        &a,
        &b,
        &["--sweep", "400,600,900,1200", "--trials", "1"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "INCONCLUSIVE", "{j}");
    assert!(
        text(&o).contains(
            "the knee fell from 900 TPS to 600 TPS, but the TPS do not show a loss beyond the \
             2.00% tolerance: the 4 pairs at the steps above 600 TPS measured"
        ),
        "{}",
        text(&o)
    );
}

#[test]
fn a_failed_confirmation_ends_its_engines_sweep_and_the_next_engine_sweeps() {
    let s = Sandbox::new();
    // The experiment tree's third run (redwood at 900 TPS) is slow, so the arms split
    // there; its fourth, the experiment's confirmation of that step, fails.
    let (a, b) = s.ab(
        json!({}),
        json!({"multitest_slow_runs": [2], "multitest_fail_runs": [3]}),
    );
    let o = multitest(
        &s,
        &a,
        &b,
        &[
            "--sweep",
            "400,600,900,1200",
            "--trials",
            "1",
            "--engine",
            "redwood",
            "--engine",
            "rocksdb",
        ],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("redwood: the arms split on 900 TPS: 2 more trial(s) per arm there"),
        "{}",
        text(&o)
    );
    let t = trials(&s);
    let of = |engine: &str| -> Vec<&Value> { t.iter().filter(|t| t["engine"] == engine).collect() };
    let redwood = of("redwood");
    let failed: Vec<&&Value> = redwood.iter().filter(|t| t["outcome"] == "error").collect();
    assert_eq!(failed.len(), 1, "{redwood:#?}");
    assert_eq!(failed[0]["target_tps"], 900);
    assert_eq!(failed[0]["arm"], "experiment");
    // Nothing of redwood ran after its failed trial: not the rest of the confirmations,
    // not the next step.
    let last = redwood.iter().map(|t| t["index"].as_u64().unwrap()).max();
    assert_eq!(last, failed[0]["index"].as_u64(), "{redwood:#?}");
    // rocksdb swept its whole ladder as if nothing had happened.
    let rocksdb = of("rocksdb");
    assert!(
        rocksdb.iter().all(|t| t["outcome"] == "measured"),
        "{rocksdb:#?}"
    );
    assert!(
        rocksdb.iter().any(|t| t["target_tps"] == 1200),
        "{rocksdb:#?}"
    );
    // The count drops the steps redwood never climbed, so the run ends at "n of n".
    let n = t.len();
    assert!(
        text(&o).contains(&format!("trial {n} of {n} so far: rocksdb")),
        "{}",
        text(&o)
    );
    let judgements = s.read_json("summary.json")["judgements"].clone();
    let verdict = |engine: &str| {
        judgements
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["engine"] == engine)
            .map(|j| j["verdict"].clone())
    };
    assert_eq!(verdict("redwood"), Some(json!("ERROR")), "{judgements:#}");
    assert_eq!(
        verdict("rocksdb"),
        Some(json!("MEASURED")),
        "{judgements:#}"
    );
    s.assert_no_leftover_processes();
}

pub(super) fn record(s: &Sandbox, from: &Path, name: &str, extra: &[&str]) -> std::process::Output {
    crate::support::gate_cmd()
        .args(["baseline", "record", "--from"])
        .arg(from)
        .args(["--name", name, "--baselines-dir"])
        .arg(s.dir.path().join("baselines"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_sweeps_knee_is_recorded_and_a_candidate_is_gated_on_it() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 800.0}));
    let ladder = "400,600,900,1200,2000";
    let sweep = ["--sweep", ladder, "--trials", "1"];
    // The release: an A/A sweep of tree a, knee 900 TPS.
    let o = multitest(&s, &a, &a, &[&["--allow-same"][..], &sweep].concat());
    assert_eq!(code(&o), 0, "{}", text(&o));
    let day1 = s.dir.path().join("day1");
    std::fs::rename(s.out(), &day1).unwrap();
    let o = record(&s, &day1, "rel", &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("(the experiment arm's trials; --arm baseline records the other arm's)"),
        "{}",
        text(&o)
    );
    let rec = s.dir.path().join("baselines/rel.json");
    let b_json: Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    assert_eq!(
        b_json["sweep"],
        json!({"ladder": [400, 600, 900, 1200, 2000], "knee_tps": 900})
    );
    assert!(b_json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["target_tps"].as_u64().is_some()));
    let o = crate::support::gate_cmd()
        .args(["baseline", "list", "--baselines-dir"])
        .arg(s.dir.path().join("baselines"))
        .output()
        .unwrap();
    assert!(
        text(&o).contains("knee 900 TPS on the ladder 400,600,900,1200,2000"),
        "{}",
        text(&o)
    );
    // The candidate b (knee 600) against the record, with tree a as today's control.
    let against = [&["--against-recorded", "rel"][..], &sweep].concat();
    let o = multitest(&s, &a, &b, &against);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(
        (&j["metric"], &j["verdict"]),
        (&json!("knee_tps"), &json!("REGRESSION"))
    );
    assert!(
        text(&o).contains(
            "host check (redwood): today's control (the recorded build) reached a knee of 900 TPS"
        ),
        "{}",
        text(&o)
    );
    // A control slower today than on the recording day: the verdict stands, the host is
    // said to have changed.
    let slow = s.tree("slow", json!({"tps": 700.0}));
    let o = multitest(&s, &slow, &b, &against);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary = s.read_json("summary.json");
    assert_eq!(summary["judgements"][0]["verdict"], "MEASURED");
    assert!(
        summary["warnings"]
            .to_string()
            .contains("HOST CHANGED (redwood)"),
        "{summary}"
    );
    // Knees compare on one ladder, and a record of one target holds none.
    for (flags, want) in [
        (
            &["--against-recorded", "rel", "--trials", "1"][..],
            "pass --sweep 400,600,900,1200,2000",
        ),
        (
            &[
                "--against-recorded",
                "rel",
                "--trials",
                "1",
                "--sweep",
                "400,900",
            ][..],
            "pass --sweep 400,600,900,1200,2000",
        ),
    ] {
        let o = multitest(&s, &a, &b, flags);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(want), "{want}: {}", text(&o));
    }
    // Without a control arm, against the lowest of two days' knees.
    let day2 = s.dir.path().join("day2");
    let o = multitest(&s, &a, &a, &[&["--allow-same"][..], &sweep].concat());
    assert_eq!(code(&o), 0, "{}", text(&o));
    std::fs::rename(s.out(), &day2).unwrap();
    crate::support::date_to_another_day(&day2);
    let o = record(&s, &day2, "rel", &["--add-run"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = crate::support::gate_cmd()
        .args(["bench", "--no-control", "--experiment-build"])
        .arg(&b)
        .arg("--out")
        .arg(s.out())
        .args(SMALL)
        .args(&against)
        .arg("--baselines-dir")
        .arg(s.dir.path().join("baselines"))
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "REGRESSION", "{j}");
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .contains("the knee fell from 900 TPS (the lowest of the record's days) to 600 TPS"),
        "{j}"
    );
    assert_eq!(
        j["notes"],
        json!([
            "experiment knee: 600 TPS",
            "rel: recorded knees 900, 900 TPS over 2 days"
        ])
    );
    // A record edited in the saved run is not judged again.
    let meta_path = s.out().join("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["plan"]["recorded"]["sweep"]["knee_tps"] = json!(2000);
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let o = crate::support::compare_only(&s.out());
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(
            "its recorded baseline: baseline in meta.json: field `sweep.knee_tps` is 2000"
        ),
        "{}",
        text(&o)
    );
    // A knee the ladder does not bracket is not recorded.
    let o = multitest(
        &s,
        &a,
        &a,
        &["--allow-same", "--sweep", "100,200", "--trials", "1"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = record(&s, &s.out(), "above", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("raise the top"), "{}", text(&o));
    s.assert_no_leftover_processes();
}

#[test]
fn a_sweep_of_one_build_passes_and_a_ladder_below_or_above_the_knee_is_inconclusive() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"tps": 1000.0}));
    let aa = ["--allow-same", "--trials", "1", "--sweep"];
    let verdict = |o: &std::process::Output| {
        assert!(code(o) != 64, "{}", text(o));
        s.read_json("summary.json")["judgements"][0].clone()
    };
    let o = multitest(&s, &a, &a, &[&aa[..], &["500,900,1200"]].concat());
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(verdict(&o)["verdict"], "MEASURED");
    let o = multitest(&s, &a, &a, &[&aa[..], &["100,200"]].concat());
    let j = verdict(&o);
    assert_eq!(j["verdict"], "INCONCLUSIVE");
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .contains("raise the ladder's top"),
        "{j}"
    );
    let o = multitest(&s, &a, &a, &[&aa[..], &["5000..20000x2"]].concat());
    let j = verdict(&o);
    assert_eq!(j["verdict"], "INCONCLUSIVE");
    assert!(
        j["reason"].as_str().unwrap().contains("lower its start"),
        "{j}"
    );
    let md = std::fs::read_to_string(s.out().join("summary.md")).unwrap();
    assert!(md.contains("| knee TPS | < 5000 | < 5000 |"), "{md}");
    assert_eq!(trials(&s).len(), 2, "one step past the knee: the first");
    // Retries past the knee are data in a sweep, not an error.
    let r = s.tree("r", json!({"tps": 1000.0, "multitest_retries": 400}));
    let o = multitest(&s, &r, &r, &[&aa[..], &["500,900"]].concat());
    assert!(text(&o).contains("no arm followed 500 TPS"), "{}", text(&o));
    assert!(trials(&s).iter().all(|t| t["outcome"] == "measured"));
    for (flags, want) in [
        (&["--sweep", "1,2", "--target-tps", "5"][..], "--target-tps"),
        (&["--sweep", "7"][..], "at least 2 targets"),
        (
            &["--sweep", "1,2", "--noise-from", "/nonexistent"][..],
            "--sweep does not go with --noise-from",
        ),
    ] {
        let o = multitest(&s, &a, &a, &[&["--allow-same"][..], flags].concat());
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(want), "{want}: {}", text(&o));
    }
    let o = s
        .bench_command_with(
            &a,
            &a,
            &s.out(),
            &["--profile", "quick"],
            &["--allow-same", "--sweep", "1,2"],
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("runs mako"), "{}", text(&o));
}

#[test]
fn testers_are_the_client_and_get_no_arm_knob() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = multitest(
        &s,
        &a,
        &a,
        &[
            "--baseline-knob",
            "page_cache_4k=1",
            "--experiment-knob",
            "page_cache_4k=2",
            "--trials",
            "1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    for t in trials(&s) {
        let dir = s.out().join(t["artifacts"].as_str().unwrap());
        let mut servers = 0;
        for (name, trace) in server_traces(&dir) {
            let role = name.split('-').next().unwrap();
            let has_knob = trace.contains("--knob_page_cache_4k=");
            assert_eq!(has_knob, role != "test", "{name}: {trace}");
            // The tmpfs knob the gate adds reaches the testers too.
            assert!(trace.contains("--knob_disable_posix_kernel_aio=1") || !s.workdir_is_tmpfs());
            servers += 1;
        }
        assert_eq!(servers, 4, "3 servers and 1 tester in {}", dir.display());
    }
}

#[test]
fn a_tree_without_mako_runs_the_multitest_driver_and_not_mako() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    std::fs::remove_file(a.join("bin/mako")).unwrap();
    let cache = std::fs::read_to_string(a.join("CMakeCache.txt")).unwrap();
    std::fs::write(
        a.join("CMakeCache.txt"),
        cache.replace("BUILD_MAKO:BOOL=ON", "BUILD_MAKO:BOOL=OFF"),
    )
    .unwrap();
    let o = multitest(&s, &a, &a, &["--allow-same", "--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(!text(&o).contains("NOT A RELEASE BUILD"), "{}", text(&o));
    let o = s
        .bench_command_with(
            &a,
            &a,
            &s.dir.path().join("m"),
            &["--profile", "quick"],
            &["--allow-same"],
        )
        .output()
        .unwrap();
    assert_ne!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("bin/mako is missing"), "{}", text(&o));
}

#[test]
fn a_three_host_double_redundancy_cluster_places_each_host_apart() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = multitest(
        &s,
        &a,
        &a,
        &[
            "--allow-same",
            "--trials",
            "1",
            "--hosts",
            "3",
            "--redundancy",
            "double",
            "--coordinators",
            "3",
            "--logs",
            "2",
            "--testers",
            "2",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("cluster    3 host(s) x (1 stateless, 1 log, 1 storage), double redundancy, 3 coordinator(s), logs=2"),
        "{}",
        text(&o)
    );
    assert_eq!(
        s.read_json("meta.json")["plan"]["config"]["topology"]["hosts"],
        3
    );
    for t in trials(&s) {
        let dir = s.out().join(t["artifacts"].as_str().unwrap());
        let asked = std::fs::read_to_string(a.join("double-fdbcli.log")).unwrap();
        assert!(
            asked.contains("configure new double ssd-redwood-1 logs=2\n"),
            "{asked}"
        );
        let mut per_host = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (name, trace) in server_traces(&dir) {
            let host = (1..=3)
                .find(|h| trace.contains(&format!("-p 127.0.0.{h}:")))
                .unwrap_or_else(|| panic!("{name}: no 127.0.0.1-3 address: {trace}"));
            assert!(
                trace.contains(&format!("--locality-zoneid host{host}")),
                "{name}: {trace}"
            );
            per_host
                .entry(format!("host{host}"))
                .or_default()
                .push(name);
        }
        // 3 servers on each host, and the 2 testers on hosts 1 and 2.
        let counts: Vec<usize> = per_host.values().map(Vec::len).collect();
        assert_eq!(counts, [4, 4, 3], "{per_host:?}");
    }
    s.assert_no_leftover_processes();
}

#[test]
fn the_multitest_driver_refuses_fdb_7_1() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"release": "7.1"}));
    let o = multitest(&s, &a, &a, &["--allow-same", "--trials", "1"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("the multitest driver runs FDB 7.2 and later"),
        "{}",
        text(&o)
    );
}
