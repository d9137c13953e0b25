//! How the numbers become a verdict and an exit status: a regression, the SLO floor
//! and where it comes from, noise that leaves it open, the latency test case, and
//! `compare` judging a saved run again.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{code, compare_only, read_junit, text, Sandbox, TINY};

#[test]
fn slower_experiment_is_a_regression_with_exit_1_and_a_junit_failure() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 900.0}));
    let junit_copy = s.dir.path().join("ci/junit.xml");
    std::fs::create_dir_all(junit_copy.parent().unwrap()).unwrap();
    let o = s.bench(&a, &b, &["--junit", junit_copy.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "REGRESSION"
    );
    let junit = std::fs::read_to_string(&junit_copy).unwrap();
    assert!(
        junit.contains(r#"<failure message="REGRESSION (redwood): TPS "#),
        "{junit}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("REGRESSION"));
    let case = &read_junit(&junit_copy)[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Failure", "{case}");
    assert_eq!(case["results"][0]["verdict"], "REGRESSION");
    // -10% give or take the double's 0.05% noise per trial, in the property and the log.
    let delta = case["properties"]["mean_change_pct"].as_str().unwrap();
    let value: f64 = delta.parse().unwrap();
    assert!((value + 10.0).abs() < 0.2, "{case}");
    // The failure's body: the sentence, then the numbers; system-out has the table
    // only, so that GitLab, which shows both, does not show the sentence twice.
    let body = case["results"][0]["text"].as_str().unwrap();
    assert!(
        body.starts_with("REGRESSION (redwood): TPS ")
            && body.contains(&format!("mean_change_pct={delta}")),
        "{case}"
    );
    let out = case["system_out"].as_str().unwrap();
    assert!(
        out.starts_with("engine ") && !out.contains("mean_change_pct"),
        "{case}"
    );
}

#[test]
fn slo_floors_come_from_the_flag_the_environment_or_slo_json() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 1000.0}));
    std::fs::create_dir_all(s.dir.path().join("baselines")).unwrap();
    std::fs::write(
        s.dir.path().join("baselines/slo.json"),
        r#"{"schema_version": 1, "tps": {"quick": {"redwood": 1200.0}}}"#,
    )
    .unwrap();
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "SLO-VIOLATION", "{j}");
    assert_eq!(j["criteria"]["slo_tps"], 1200.0);
    assert!(s.read_json("meta.json")["plan"]["slo_sources"][0]
        .as_str()
        .unwrap()
        .contains("slo.json"));
    // The environment beats the file, the flag beats both.
    let mut cmd = s.bench_command_out(&a, &b, &s.dir.path().join("env"), &["--trials", "2"]);
    let o = cmd.env("PERFGATE_SLO_TPS_REDWOOD", "900").output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let mut cmd = s.bench_command_out(
        &a,
        &b,
        &s.dir.path().join("flag"),
        &["--trials", "2", "--slo-tps", "1100"],
    );
    let o = cmd.env("PERFGATE_SLO_TPS_REDWOOD", "900").output().unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
}

#[test]
fn experiment_below_the_slo_is_an_slo_violation() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 1000.0}));
    let o = s.bench(&a, &b, &["--slo-tps", "1500"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "SLO-VIOLATION", "{j}");
    let case = &read_junit(&s.out().join("junit.xml"))[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Failure", "{case}");
    assert_eq!(case["results"][0]["verdict"], "SLO-VIOLATION");
}

#[test]
fn noise_beyond_the_tolerance_is_inconclusive_and_fails_only_under_strict() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"noise_pct": 10.0}),
        json!({"noise_pct": 10.0, "tps": 990.0}),
    );
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "INCONCLUSIVE", "{j}");
    assert!(j["comparison"]["mde_pct"].as_f64().unwrap() > 2.0, "{j}");
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains(">INCONCLUSIVE (redwood): TPS ")
            && junit.contains(r#"<skipped message="INCONCLUSIVE (redwood): TPS "#),
        "{junit}"
    );
    let case = &read_junit(&s.out().join("junit.xml"))[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Skipped", "{case}");
    assert!(
        case["results"][0]["message"]
            .as_str()
            .unwrap()
            .contains("MDE"),
        "{case}"
    );
    // The same trees anew (the double's noise follows each tree's run count).
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"noise_pct": 10.0}),
        json!({"noise_pct": 10.0, "tps": 990.0}),
    );
    let o = s.bench(&a, &b, &["--trials", "2", "--strict"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "INCONCLUSIVE"
    );
}

#[test]
fn compare_rejudges_a_saved_run_offline_with_the_same_or_another_tolerance() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 950.0}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let compare = |extra: &[&str], out: &str| {
        crate::support::gate_cmd()
            .arg("compare")
            .arg(s.out())
            .arg("--out")
            .arg(s.dir.path().join(out))
            .args(extra)
            .output()
            .unwrap()
    };
    // The same criteria reproduce the verdict and its numbers, running nothing.
    let o = compare(&[], "same");
    assert_eq!(code(&o), 1, "{}", text(&o));
    let again: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("same/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        again["judgements"],
        s.read_json("summary.json")["judgements"]
    );
    // A 10% tolerance passes the 5% loss.
    let o = compare(&["--max-regression", "10"], "loose");
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("MEASURED"),
        "{}",
        text(&o)
    );
    // Edited numbers are refused, naming the trial, not judged: a measured TPS of 0.
    let edited = s.dir.path().join("edited");
    std::fs::create_dir_all(&edited).unwrap();
    for f in ["meta.json", "summary.json"] {
        std::fs::copy(s.out().join(f), edited.join(f)).unwrap();
    }
    let mut trials = s.read_trials();
    trials[1]["report"]["tps"] = serde_json::json!(0.0);
    std::fs::write(edited.join("trials.json"), trials.to_string()).unwrap();
    let o = compare_only(&edited);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("trial 2 (") && text(&o).contains("TPS is 0"),
        "{}",
        text(&o)
    );
    // CPU numbers the gate never writes are refused the same way (1e308 cores).
    let mut trials = s.read_trials();
    if trials[1]["cpu"].is_object() {
        trials[1]["report"]["tps"] = s.read_trials()[1]["report"]["tps"].clone();
        trials[1]["cpu"]["cores"]["storage"] = serde_json::json!(1e308);
        std::fs::write(edited.join("trials.json"), trials.to_string()).unwrap();
        let o = compare_only(&edited);
        assert_eq!(code(&o), 2, "{}", text(&o));
        assert!(text(&o).contains("storage cores"), "{}", text(&o));
    }
    // Other edits a gate never writes: refused, naming what is wrong.
    let original = s.read_trials();
    let doubled_tps = original[1]["report"]["tps"].as_f64().unwrap() * 2.0;
    let edits: [(Edit, &str); 9] = [
        (
            Box::new(|t| t[1]["index"] = t[0]["index"].clone()),
            "its trial 2 holds index 1",
        ),
        (
            Box::new(|t| t[0]["repetition"] = serde_json::json!(0)),
            "trial 1 has repetition 0",
        ),
        (
            Box::new(move |t| t[1]["report"]["tps"] = serde_json::json!(doubled_tps)),
            "a mako report that does not add up",
        ),
        // A repetition given twice, failures inside a measured trial.
        (
            Box::new(|t| t[3]["repetition"] = t[0]["repetition"].clone()),
            "trial 4 repeats redwood baseline #1",
        ),
        (
            Box::new(|t| t[1]["report"]["total_errors"] = serde_json::json!(500)),
            "is measured but its report is not a valid measurement: mako counted 500 errors",
        ),
        (
            Box::new(|t| t[1]["error"] = serde_json::json!("crashed")),
            "is measured but holds an error (crashed)",
        ),
        // A repetition beyond the arm's trials would be judged as a pair of its own.
        (
            Box::new(|t| t[3]["repetition"] = serde_json::json!(999)),
            "trial 4 is redwood baseline #999, but that arm has 3 trial(s)",
        ),
        // A duration no phase can last would make compare's JUnit writer panic.
        (
            Box::new(|t| t[1]["phases"][0]["duration_s"] = serde_json::json!(1e308)),
            "trial 2 has a cluster-start phase of 1e308 s",
        ),
        // This TPS has 324 digits in plain notation.
        (
            Box::new(|t| t[1]["report"]["tps"] = serde_json::json!(5e-324)),
            "a mako report that does not add up: tps 5e-324 over",
        ),
    ];
    assert_edits_refused(&edited, &original, edits);
    // A file of a newer format is refused, naming its version, not misread.
    let newer = json!({"schema_version": 2, "trials": original});
    std::fs::write(edited.join("trials.json"), newer.to_string()).unwrap();
    let o = compare_only(&edited);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("has schema_version 2, newer than the 1 this perfgate reads"),
        "{}",
        text(&o)
    );
    // Versions no gate wrote: refused, saying what is wrong with them.
    for (version, says) in [
        (json!(0), "schema_version 0 (versions start at 1)"),
        (json!("1"), "schema_version \"1\" is not a whole number"),
        (json!(-1), "schema_version -1 is not a whole number"),
        (json!(1.5), "schema_version 1.5 is not a whole number"),
    ] {
        let file = json!({"schema_version": version, "trials": original});
        std::fs::write(edited.join("trials.json"), file.to_string()).unwrap();
        let o = compare_only(&edited);
        assert_eq!(code(&o), 2, "{version}: {}", text(&o));
        assert!(text(&o).contains(says), "{version}: {}", text(&o));
    }
    // The edits above were written as a bare array, as trials.json was before it said its
    // version: that is still read (and the edits refused, not the format).
    std::fs::write(edited.join("trials.json"), original.to_string()).unwrap();
    for (pointer, value, says) in [
        ("/plan/config/trials", json!(0), "it plans 0 trials"),
        ("/plan/engines", json!([]), "it plans no engine"),
        (
            "/plan/config/slo_tps",
            json!(-1.0),
            "its TPS floor slo_tps is -1",
        ),
        (
            "/plan/config/workload/seconds",
            json!(200),
            "trial 1 is measured but not a valid measurement: mako ran",
        ),
    ] {
        let mut meta = s.read_json("meta.json");
        *meta.pointer_mut(pointer).unwrap() = value;
        std::fs::write(edited.join("meta.json"), meta.to_string()).unwrap();
        let o = compare_only(&edited);
        assert_eq!(code(&o), 2, "{pointer}: {}", text(&o));
        assert!(text(&o).contains(says), "{pointer}: {}", text(&o));
    }
    let mut meta = s.read_json("meta.json");
    assert_eq!(meta["schema_version"], 1);
    meta["schema_version"] = json!(2);
    std::fs::write(edited.join("meta.json"), meta.to_string()).unwrap();
    let o = compare_only(&edited);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("meta.json has schema_version 2"),
        "{}",
        text(&o)
    );
    // What the run was compared with, and its schedule, must hold together as a gate
    // writes them: judged anyway, an edited file could pass a run that failed.
    for (field, value, says) in [
        (
            "baseline",
            json!(null),
            "it has no baseline arm, no recorded baseline and no cluster of its own",
        ),
        (
            "config/existing",
            json!({"cluster_file": "/x/fdb.cluster"}),
            "it has a baseline arm on a cluster the gate did not start",
        ),
        (
            "config/against_recorded",
            json!("rel"),
            "its config names the recorded baseline rel and its plan holds none",
        ),
        (
            "config/sweep",
            json!([400, 800]),
            "trial 1 ran at no sweep target and the run planned the ladder 400,800",
        ),
        (
            "config/time_budget",
            json!("2h"),
            "invalid type: string \"2h\", expected struct Duration",
        ),
    ] {
        let mut meta = s.read_json("meta.json");
        let (parent, key) = field.rsplit_once('/').unwrap_or(("", field));
        let at = if parent.is_empty() {
            &mut meta["plan"]
        } else {
            &mut meta["plan"][parent]
        };
        at[key] = value;
        std::fs::write(edited.join("meta.json"), meta.to_string()).unwrap();
        let o = compare_only(&edited);
        assert_eq!(code(&o), 2, "{field}: {}", text(&o));
        assert!(text(&o).contains(says), "{field}: {}", text(&o));
    }
    std::fs::copy(s.out().join("meta.json"), edited.join("meta.json")).unwrap();

    // compare never writes into the run it reads: --out RUN, or --junit inside it.
    let o = compare(&[], "results");
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("not an empty directory"), "{}", text(&o));
    let junit_inside = s.out().join("junit.xml");
    let before = std::fs::read(&junit_inside).unwrap();
    let o = compare(
        &[
            "--max-regression",
            "10",
            "--junit",
            junit_inside.to_str().unwrap(),
        ],
        "j",
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("inside the run being judged"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read(&junit_inside).unwrap(), before);
    // --junit through a link into the run is inside the run (it would replace the
    // run's trials.json with JUnit XML).
    let link = s.dir.path().join("run-link");
    std::os::unix::fs::symlink(s.out(), &link).unwrap();
    let trials_before = std::fs::read(s.out().join("trials.json")).unwrap();
    let via_link = link.join("trials.json");
    let o = compare(&["--junit", via_link.to_str().unwrap()], "via-link");
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("inside the run being judged"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read(s.out().join("trials.json")).unwrap(),
        trials_before
    );
    // --export-markdown into the run too (Markdown appended to trials.json would leave
    // the run impossible to judge again).
    let o = compare(
        &["--export-markdown", via_link.to_str().unwrap()],
        "md-via-link",
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--export-markdown") && text(&o).contains("inside the run being judged"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read(s.out().join("trials.json")).unwrap(),
        trials_before
    );
    // A refused --junit (a FIFO there) leaves no empty --out behind, nor a dangling --out
    // link an "File exists" error.
    let fifo = s.dir.path().join("junit-fifo.xml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let o = compare(&["--junit", fifo.to_str().unwrap()], "fifo-out");
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(!s.dir.path().join("fifo-out").exists(), "{}", text(&o));
    std::os::unix::fs::symlink(s.dir.path().join("gone"), s.dir.path().join("dangling")).unwrap();
    let o = compare(&[], "dangling");
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("is a symbolic link to something missing"),
        "{}",
        text(&o)
    );
    // A run without summary.json did not finish: its numbers are not a verdict.
    let killed = s.dir.path().join("killed");
    std::fs::create_dir_all(&killed).unwrap();
    for f in ["meta.json", "trials.json"] {
        std::fs::copy(s.out().join(f), killed.join(f)).unwrap();
    }
    let o = compare_only(&killed);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("the run did not finish"), "{}", text(&o));
    // A summary.json that is there but is not the gate's is named, not ignored.
    std::fs::write(killed.join("summary.json"), "{").unwrap();
    let o = compare_only(&killed);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("summary.json is not a perfgate"),
        "{}",
        text(&o)
    );
    // A floor is checked as bench checks it: 0, negative or NaN cannot switch it off.
    for bad in ["--slo-tps=0", "--slo-tps=-5", "--slo-tps=NaN"] {
        let o = compare(&[bad], "bad-slo");
        assert_eq!(code(&o), 64, "{bad}: {}", text(&o));
        assert!(
            text(&o).contains("must be a positive TPS figure"),
            "{}",
            text(&o)
        );
    }
    // Not a results dir: a clear usage error, saying which way it is not.
    let empty = s.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for (dir, why) in [
        (Path::new("/nonexistent"), "does not exist"),
        (empty.as_path(), "holds no meta.json"),
    ] {
        let o = compare_only(dir);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(why), "{}", text(&o));
    }
}

#[test]
fn gate_latency_adds_a_p99_test_case_that_can_fail_on_its_own() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"p99_us": 4000.0}), json!({"p99_us": 5000.0}));
    // Without the flag latency is judged and shown, but decides nothing.
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("txn_latency_p99 (not gating) REGRESSION: p99 transaction latency +2"),
        "{}",
        text(&o)
    );
    let o = s.bench_in("gated", &a, &b, &["--trials", "2", "--gate-latency"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    // A gated metric's verdict line names the metric it judged.
    assert!(
        text(&o).contains("redwood txn_latency_p99 REGRESSION: p99 transaction latency +"),
        "{}",
        text(&o)
    );
    let junit = read_junit(&s.dir.path().join("gated/junit.xml"));
    let cases = junit[0]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "{junit}");
    assert_eq!(
        (&cases[0]["name"], &cases[0]["results"]),
        (&json!("tps"), &json!([]))
    );
    assert_eq!(cases[1]["name"], "txn_latency_p99");
    assert_eq!(cases[1]["results"][0]["verdict"], "REGRESSION", "{junit}");
    // +25% give or take the double's 0.05% noise per trial.
    let change: f64 = cases[1]["properties"]["txn_latency_p99_change_pct"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((change - 25.0).abs() < 0.2, "{junit}");
    // summary.json says the same in the metric's own direction, for scripts; its
    // comparison is oriented so that higher is better (1/latency fell by 20%).
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("gated/summary.json")).unwrap(),
    )
    .unwrap();
    let p99 = &summary["judgements"][1];
    assert_eq!(
        (&p99["metric"], &p99["direction"]),
        (&json!("txn_latency_p99"), &json!("lower_is_better")),
        "{p99}"
    );
    let own = p99["change"]["pct"].as_f64().unwrap();
    assert!((own - change).abs() < 0.01, "{p99}");
    assert!(
        p99["change"]["ci95_low_pct"].as_f64().unwrap() < own,
        "{p99}"
    );
    assert!(
        (p99["mean_change_pct"].as_f64().unwrap() - 25.0).abs() < 0.2,
        "{p99}"
    );
    assert!(
        (p99["comparison"]["delta_pct"].as_f64().unwrap() + 20.0).abs() < 0.2,
        "{p99}"
    );
    assert_eq!(summary["judgements"][0]["direction"], "higher_is_better");
}

#[test]
fn a_gated_p99_mako_did_not_give_is_an_error_naming_the_trial() {
    let s = Sandbox::new();
    // A p99 of 0 us is no latency: before, three pairs said "fewer than 2 complete pairs".
    let (a, b) = s.ab(json!({"p99_us": 4000.0}), json!({"p99_us": 0.0}));
    let o = s.bench(&a, &b, &["--trials", "3", "--gate-latency"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][1];
    assert_eq!(
        (&j["metric"], &j["verdict"]),
        (&json!("txn_latency_p99"), &json!("ERROR"))
    );
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("p99 transaction latency was not measured in trial")
            && reason.contains("(experiment #"),
        "{reason}"
    );
}

/// The double's servers and mako burn real CPU; the gate accounts it per role over the
/// measurement window (the experiment's storage server burns 3x the baseline's). The
/// storage/client CPU ratio gates by default; with `--tps-only` it is reported only.
#[test]
fn storage_cpu_per_transaction_is_measured_per_role_and_gates_by_default() {
    // What only processes show: each role's CPU read from /proc over the window and
    // carried to the results, and which metrics gate. The verdicts on given CPU figures
    // are the judge's unit test `storage_cpu_per_transaction_gates_by_default_through_its_
    // ratio_to_the_clients`: the doubles' real CPU burn follows the host's load, so no
    // verdict is asserted here.
    let s = Sandbox::new();
    let cpu =
        |storage: f64| json!({"time_scale": 1.0, "cpu_pct": {"storage": storage, "client": 20.0}});
    let (a, b) = s.ab(cpu(10.0), cpu(30.0));
    // Real seconds (time_scale 1): a measurement window of 2 s.
    let mut window = TINY;
    window[7] = "1";
    window[9] = "3";
    let run = |name: &str, extra: &[&str]| {
        let out = s.dir.path().join(name);
        let mut args = vec!["--trials", "2"];
        args.extend(extra);
        s.bench_command_with(&a, &b, &out, &window, &args)
            .output()
            .unwrap()
    };
    let gating = |out: &str, metric: &str| {
        let summary: Value = serde_json::from_slice(
            &std::fs::read(s.dir.path().join(out).join("summary.json")).unwrap(),
        )
        .unwrap();
        let j = summary["judgements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["metric"] == metric)
            .unwrap_or_else(|| panic!("no {metric} judgement: {summary:#}"))
            .clone();
        assert!(j["verdict"].is_string(), "{j}");
        j["gating"].as_bool().unwrap()
    };
    let o = run("results", &[]);
    assert!([0, 1].contains(&code(&o)), "{}", text(&o));
    assert!(gating("results", "storage_to_client_cpu"), "{}", text(&o));
    assert!(!gating("results", "storage_cpu_us_per_txn"), "{}", text(&o));
    let junit = read_junit(&s.out().join("junit.xml"));
    let cases = junit[0]["cases"].as_array().unwrap();
    for name in ["tps", "storage_to_client_cpu", "storage_cpu_us_per_txn"] {
        assert!(
            cases.iter().any(|c| c["name"] == name),
            "no {name} in {junit}"
        );
    }
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("storage_cpu_us_per_txn (not gating)"),
        "{}",
        text(&o)
    );
    let trials = s.read_trials();
    for t in trials.as_array().unwrap() {
        let cores = &t["cpu"]["cores"];
        let storage = cores["storage"].as_f64().unwrap();
        let expected = if t["arm"] == "baseline" { 0.1 } else { 0.3 };
        // CPU time per cycle is fixed; a busy host only stretches the cycles, and the
        // window's edges may catch part of one cycle more (0.1205 cores seen against 0.1
        // on a loaded host): half the gap to the other arm's level stays apart.
        assert!(storage > 0.0 && storage <= expected * 1.5, "{t}");
        assert!(cores["client"].as_f64().unwrap() > 0.0, "{t}");
        assert!(cores["log"].as_f64().unwrap() < 0.05, "{t}");
        assert!(t["cpu"]["window_s"].as_f64().unwrap() > 0.5, "{t}");
    }
    let o = run("tps-only", &["--tps-only"]);
    assert!([0, 1].contains(&code(&o)), "{}", text(&o));
    assert!(!gating("tps-only", "storage_to_client_cpu"), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("storage_to_client_cpu (not gating)"),
        "{}",
        text(&o)
    );
}

/// A metric asked for with --gate that no trial measured (windows far shorter than the
/// CPU clock's 10 ms ticks) is an ERROR, not a silent pass; the default work metric is
/// then only left out.
#[test]
fn a_gated_metric_that_was_not_measured_is_an_error() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--trials", "2", "--gate", "storage-cpu"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("storage server CPU per transaction was not measured in trial 1"),
        "{}",
        text(&o)
    );
    // Instructions need a hardware PMU: where the host has none, gating on them is
    // refused before any trial, saying why.
    let o = s.bench_in(
        "instructions",
        &a,
        &b,
        &["--trials", "2", "--gate", "storage-instructions"],
    );
    let pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists();
    if !pmu {
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains(
                "gating on storage server instructions per transaction needs a hardware PMU"
            ),
            "{}",
            text(&o)
        );
        assert!(!s.dir.path().join("instructions/trials.json").exists());
    } else {
        assert!(!text(&o).contains("needs a hardware PMU"), "{}", text(&o));
    }
}

/// With `--host-probe` every trial is bracketed by the host-speed probe, recorded in
/// trials.json; from 5 pairs
/// on the judge regresses the pairs' ratios on the probe's and says what that did to the
/// pairs' sd. Without `--host-probe` no probe is recorded.
#[test]
fn the_host_speed_probe_is_recorded_and_removed_from_five_pairs_on() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 990.0}));
    let o = s
        .probed_bench_command(&a, &b, &s.out(), &TINY, &["--trials", "5"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trials = s.read_trials();
    for t in trials.as_array().unwrap() {
        let h = &t["host"];
        assert!(h["probe_rounds"].as_u64().unwrap() > 0, "{t}");
        assert!(h["before_s"].as_f64().unwrap() > 0.0, "{t}");
        assert!(h["after_s"].as_f64().unwrap() > 0.0, "{t}");
    }
    let j = &s.read_json("summary.json")["judgements"][0];
    let k = &j["comparison"]["covariate"];
    assert!(k["slope"].as_f64().unwrap().is_finite(), "{j}");
    assert!(k["adjusted_sd_pct"].as_f64().unwrap() >= 0.0, "{j}");
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("host speed removed (probe slope"),
        "{reason}"
    );

    // Probe figures no probe measures, and a start time no gate wrote, are refused by
    // `compare`, naming what is wrong; a probe missing from one trial is said unused.
    let edited = s.dir.path().join("edited");
    std::fs::create_dir_all(&edited).unwrap();
    std::fs::copy(s.out().join("summary.json"), edited.join("summary.json")).unwrap();
    let meta = s.read_json("meta.json");
    std::fs::write(edited.join("meta.json"), meta.to_string()).unwrap();
    let original = s.read_trials();
    let rounds = original[0]["host"]["probe_rounds"].as_u64().unwrap();
    let edits: [(Edit, &str); 6] = [
        (
            Box::new(|t| t[1]["host"]["before_s"] = json!(0.0)),
            "before_s is 0",
        ),
        (
            Box::new(|t| t[2]["host"]["after_s"] = json!(-1.0)),
            "after_s is -1",
        ),
        (
            Box::new(|t| t[3]["host"]["before_s"] = json!(1e300)),
            "at most an hour",
        ),
        (
            Box::new(|t| t[1]["host"]["probe_rounds"] = json!(0)),
            "0 rounds",
        ),
        (
            Box::new(move |t| t[4]["host"]["probe_rounds"] = json!(rounds + 1)),
            "probes of different work do not compare",
        ),
        (
            Box::new(|t| t[1]["host"]["steal_pct"] = json!(-50.0)),
            "steal time of -50%",
        ),
    ];
    assert_edits_refused(&edited, &original, edits);
    let mut trials = original.clone();
    trials[3].as_object_mut().unwrap().remove("host");
    std::fs::write(edited.join("trials.json"), trials.to_string()).unwrap();
    let o = compare_only(&edited);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("host-speed probe not used: 1 of the 10 paired trials have none"),
        "{}",
        text(&o)
    );
    std::fs::write(edited.join("trials.json"), original.to_string()).unwrap();
    let mut late = meta.clone();
    late["started_at_unix_s"] = json!(253_402_300_800u64);
    std::fs::write(edited.join("meta.json"), late.to_string()).unwrap();
    let o = compare_only(&edited);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("after 9999-12-31T23:59:59Z"),
        "{}",
        text(&o)
    );

    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 990.0}));
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trials = s.read_trials();
    assert!(
        trials
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("host").is_none()),
        "{trials}"
    );
}

/// An edit of a saved run's trials.json.
type Edit = Box<dyn Fn(&mut Value)>;

/// Each edit of `original` written as `<edited>/trials.json` is refused by `compare` (exit
/// 2) with a message that contains its text.
fn assert_edits_refused(
    edited: &Path,
    original: &Value,
    edits: impl IntoIterator<Item = (Edit, &'static str)>,
) {
    for (edit, says) in edits {
        let mut trials = original.clone();
        edit(&mut trials);
        std::fs::write(edited.join("trials.json"), trials.to_string()).unwrap();
        let o = compare_only(edited);
        assert_eq!(code(&o), 2, "{says}: {}", text(&o));
        assert!(text(&o).contains(says), "{says}: {}", text(&o));
    }
}
