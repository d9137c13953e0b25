//! Trials that fail or do not measure what they should: an ERROR that names the cause
//! (a crashed or exiting server, a bad mako report, mako's own timeouts, a storage server
//! that is not CPU-bound).

use serde_json::json;

use crate::support::{assert_valid_junit, code, text, Sandbox};

#[test]
fn mako_timeouts_make_the_measurement_invalid() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_timeouts": 7}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR");
    assert!(j["reason"].as_str().unwrap().contains("7 timeouts"), "{j}");
    // The invalid report is still kept with the trial.
    assert_eq!(s.read_trials()[1]["report"]["total_timeouts"], 7);
}

#[test]
fn storage_server_crash_during_the_run_is_caught_promptly() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({}),
        json!({"storage_crash_after_ms": 300, "time_scale": 1.0}),
    );
    // The double's mako does not notice the crash and would report success after its
    // run, so only the gate's own liveness checks during the trial can fail it.
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_trials();
    let err = trials[1]["error"].as_str().unwrap();
    assert!(
        err.contains("fdbserver storage") && err.contains("exited"),
        "{err}"
    );
    assert!(err.contains("crashing on purpose"), "{err}");
    assert!(err.contains("last trace errors: Crash"), "{err}");
    s.assert_no_leftover_processes();
}

#[test]
fn an_idle_storage_server_is_not_cpu_bound_a_note_or_with_the_flag_an_error() {
    let s = Sandbox::new();
    // The double's storage server sleeps; a 3 s run leaves a 1 s measurement window.
    let slow = json!({"time_scale": 0.5});
    let (a, b) = s.ab(slow.clone(), slow);
    let o = s.bench(&a, &b, &["--require-cpu-bound"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trial = &s.read_trials()[0];
    assert_eq!(trial["cpu_bound"], false, "{trial}");
    assert!(trial["storage_cpu_cores"].as_f64().unwrap() < 0.85);
    assert!(
        trial["error"].as_str().unwrap().contains("not CPU-bound"),
        "{trial}"
    );

    let o = s.bench_in("without-flag", &a, &b, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("trials not CPU-bound"),
        "{}",
        text(&o)
    );
    let junit = std::fs::read_to_string(s.dir.path().join("without-flag/junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<property name="tps.baseline_trials_not_cpu_bound" value="1"/>"#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"name="tps.experiment_workdir_peak_bytes""#),
        "{junit}"
    );
}

#[test]
fn a_server_whose_port_was_taken_starts_its_cluster_again_on_other_ports() {
    for (taken, attempts) in [(json!([0, 1]), 3), (json!([0, 1, 2]), 0)] {
        let s = Sandbox::new();
        // The baseline's first storage-server starts find their ports taken, as when
        // another program binds one between the gate's choice and the server's bind.
        let (a, b) = s.ab(
            json!({"address_in_use_starts": taken}),
            json!({"tps": 950.0}),
        );
        let o = s.bench(&a, &b, &[]);
        let trials = s.read_trials();
        let trials = trials.as_array().unwrap();
        let first = trials
            .iter()
            .find(|t| t["arm"] == "baseline" && t["repetition"] == 1)
            .unwrap();
        if attempts > 0 {
            // Started on the third ports: measured, its timings those of that start.
            assert_eq!(code(&o), 1, "{}", text(&o));
            assert!(
                trials.iter().all(|t| t["outcome"] == "measured"),
                "{trials:#?}"
            );
            assert!(
                text(&o).contains(&format!(
                    "a server's port was taken (fdbserver: Local address in use) between the \
                     gate's choice and the server's bind: starting the cluster again on other \
                     ports (attempt {attempts} of 3)"
                )),
                "{}",
                text(&o)
            );
            let starts = first["phases"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["phase"] == "cluster-start")
                .count();
            assert_eq!(starts, 1, "{first:#}");
        } else {
            // A third start that fails too is the trial's ERROR, with FDB's reason.
            assert_eq!(code(&o), 2, "{}", text(&o));
            assert_eq!(first["outcome"], "error", "{first:#}");
            let error = first["error"].as_str().unwrap();
            assert!(error.contains("Local address in use"), "{error}");
        }
    }
}

#[test]
fn a_server_exiting_during_configure_ends_the_trial_at_once() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"coordinator_exits_on_configure": true}));
    // fdbcli would wait for its own timeout; the gate notices the dead server instead.
    let o = s.bench(&a, &b, &["--timeout-configure", "600"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_trials()[1];
    assert_eq!(
        (&t["outcome"], &t["failed_phase"]),
        (&json!("error"), &json!("configure")),
        "{t}"
    );
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .contains("exiting during configure on purpose"),
        "{t}"
    );
    let configure_s = t["phases"][1]["duration_s"].as_f64().unwrap();
    assert!(
        configure_s < 300.0,
        "not bounded by the 600 s timeout: {configure_s}"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn a_truncated_mako_report_is_an_error_naming_the_file() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_truncates_report": true}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_trials()[1];
    let err = t["error"].as_str().unwrap();
    assert!(err.contains("mako.json is not valid JSON"), "{err}");
    assert_eq!(t["outcome"], "error");
}

#[test]
fn a_report_that_disagrees_with_itself_or_with_what_was_asked_is_an_error() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    // Each kind of impossible report on the experiment arm; the trial's error names the
    // cause.
    for (name, behaviour, says) in [
        (
            "text-errors",
            json!({"text_errors": 7}),
            "counts 7 errors and 0 timeouts but",
        ),
        (
            "short-window",
            json!({"measured_window_s": 0.2}),
            "measured 0.200 s, but",
        ),
        (
            "huge-tps",
            json!({"tps": 1e308, "noise_pct": 0.0}),
            "is not plausible: tps 1e308",
        ),
    ] {
        let mut behaviour = behaviour;
        behaviour["source_version"] = json!("0000000000000000000000000000000000000002");
        let b = s.tree(&format!("tree-{name}"), behaviour);
        let o = s.bench_in(name, &a, &b, &[]);
        assert_eq!(code(&o), 2, "{name}: {}", text(&o));
        let path = s.out().parent().unwrap().join(name).join("trials.json");
        let trials = crate::support::trials_of(
            &serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap(),
        );
        let err = trials[1]["error"].as_str().unwrap_or_default();
        assert!(err.contains(says), "{name}: {err}");
        assert_eq!(trials[1]["outcome"], "error", "{name}");
    }
}

#[test]
fn configure_failing_names_fdbclis_reason_from_its_stderr() {
    // fdbcli prints the reason on its stderr, with stdout empty (apple/foundationdb
    // 13653): the message must quote stderr.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"configure_says_exists": true}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_trials()[1];
    let err = t["error"].as_str().unwrap();
    assert!(
        err.contains("fdbcli-configure.err): ERROR: Database already exists!"),
        "{err}"
    );
    assert!(err.contains("fdbcli-configure.txt) is empty"), "{err}");
    assert!(
        text(&o).contains("ERROR: Database already exists!"),
        "{}",
        text(&o)
    );
}

#[test]
fn what_no_reader_takes_in_a_childs_output_stays_in_its_artifacts() {
    // U+FFFE/U+FFFF and a 12 MB line on mako's stderr must not reach junit.xml (xmllint,
    // Xerces and expat reject it, and it grows to 36 MB), summary.json or the terminal.
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({}),
        json!({"mako_stderr_garbage": true, "mako_truncates_report": true}),
    );
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let out = s.out();
    let err = s.read_trials()[1]["error"].as_str().unwrap().to_string();
    assert!(err.contains("mako-run.err) ends with:"), "{err}");
    assert!(err.contains("\\u{fffe}\\u{ffff} \\u{1b}[31mred"), "{err}");
    assert!(
        err.contains(" more bytes cut]\ndouble: the last line"),
        "{err}"
    );
    assert!(!err.contains(['\u{fffe}', '\u{ffff}', '\x1b']), "{err}");
    assert_valid_junit(&out.join("junit.xml"));
    let limit = 256 << 10;
    for file in [
        "junit.xml",
        "summary.json",
        "trials.json",
        "report.html",
        "meta.json",
    ] {
        let bytes = std::fs::read(out.join(file)).unwrap();
        assert!(bytes.len() < limit, "{file}: {} bytes", bytes.len());
        let text = String::from_utf8(bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!text.contains(['\u{fffe}', '\u{ffff}', '\x1b']), "{file}");
    }
    assert!(o.stdout.len() + o.stderr.len() < limit, "terminal");
    // The full text stays with the trial.
    let kept = walk(&out)
        .into_iter()
        .find(|p| p.ends_with("mako-run.err") && p.to_string_lossy().contains("experiment"))
        .expect("the experiment's mako-run.err");
    assert!(std::fs::metadata(&kept).unwrap().len() > 12 << 20);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            all.extend(walk(&p));
        } else {
            all.push(p);
        }
    }
    all
}

/// A trial whose mako counted failed transactions in an otherwise complete run (as a
/// storage server blocked for seconds makes) runs again, its whole batch (a duet's pair)
/// with it: the records are kept apart, never judged, and the results say so. A rerun that
/// fails too is an ERROR, and so is a third transient failure once two batches ran again.
#[test]
fn a_transient_failure_runs_its_batch_again_once_and_the_results_say_so() {
    let cpus = crate::bench::duet::allowed_cpus();
    for pairing in ["sequential", "duet"] {
        if pairing == "duet" && cpus.len() < 2 {
            continue;
        }
        let s = Sandbox::new();
        // The baseline's second mako run fails: pair 2's baseline trial.
        // In the sequential run its storage server logged a 5 s block, as a real one did.
        let slow_task_s = if pairing == "sequential" { 5.03 } else { 0.0 };
        let (a, b) = s.ab(
            json!({"mako_error_runs": [1], "storage_slow_task_s": slow_task_s}),
            json!({"tps": 950.0}),
        );
        let o = s.bench(&a, &b, &["--trials", "4", "--pairing", pairing]);
        assert_eq!(code(&o), 1, "{pairing}: {}", text(&o));
        let file = s.read_json("trials.json");
        let (judged, aside) = (
            file["trials"].as_array().unwrap(),
            file["set_aside"].as_array().unwrap(),
        );
        assert_eq!(judged.len(), 8, "{pairing}: {file:#}");
        assert!(
            judged.iter().all(|t| t["outcome"] == "measured"),
            "{file:#}"
        );
        let indexes: Vec<u64> = judged
            .iter()
            .map(|t| t["index"].as_u64().unwrap())
            .collect();
        assert_eq!(indexes, (1..=8).collect::<Vec<_>>(), "{pairing}");
        // A duet's pair is set aside whole; a sequential run's trial alone.
        let failed = aside
            .iter()
            .find(|t| t["outcome"] == "error")
            .unwrap_or_else(|| panic!("{file:#}"));
        assert_eq!(
            aside.len(),
            if pairing == "duet" { 2 } else { 1 },
            "{file:#}"
        );
        assert_eq!(failed["arm"], "baseline");
        assert_eq!(failed["report"]["total_errors"], 64, "{failed:#}");
        // The error names the block where the trace has one, and only then.
        let error = failed["error"].as_str().unwrap();
        assert_eq!(
            error.contains("; the storage server :")
                && error.contains("logged a SlowTask of 5.03 s"),
            pairing == "sequential",
            "{error}"
        );
        // The rerun has its index, and artifacts of its own beside the failed trial's.
        let index = failed["index"].as_u64().unwrap() as usize;
        let rerun = &judged[index - 1];
        assert_eq!(rerun["repetition"], failed["repetition"]);
        assert!(
            rerun["artifacts"].as_str().unwrap().ends_with("-rerun"),
            "{rerun}"
        );
        assert!(
            s.out().join(failed["artifacts"].as_str().unwrap()).is_dir(),
            "{failed:#}"
        );
        let summary = s.read_json("summary.json");
        assert_eq!(
            summary["judgements"][0]["verdict"], "REGRESSION",
            "{summary:#}"
        );
        let warnings = summary["warnings"].to_string();
        assert!(
            warnings.contains(&format!(
                "trial {index}: mako-run: not a valid measurement: mako counted 64 errors and 0 \
                 timeouts"
            )) && warnings.contains("waited: a transient failure") == (pairing == "sequential")
                && warnings.contains("set aside (kept in trials.json's set_aside, not judged)"),
            "{pairing}: {warnings}"
        );
        assert!(
            text(&o).contains(&format!(
                "trial {index} of 8: redwood baseline #{}, again after a transient failure",
                failed["repetition"]
            )),
            "{}",
            text(&o)
        );
        // report.html has the run's warnings, as summary.json does.
        let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
        assert!(html.contains("a transient failure"), "{pairing}");
        // compare judges the same trials again and says the same of those set aside.
        let (o, rejudged) = s.compare_again();
        assert_eq!(code(&o), 1, "{}", text(&o));
        assert_eq!(
            rejudged["judgements"][0]["change"], summary["judgements"][0]["change"],
            "{pairing}"
        );
        assert!(
            rejudged["warnings"]
                .to_string()
                .contains(&format!("trial {index}: mako-run: not a valid measurement")),
            "{rejudged:#}"
        );
        s.assert_no_leftover_processes();
    }
    // A pair with another failure beside the transient one stands: ERROR, nothing set
    // aside, so the other failure is judged.
    if cpus.len() >= 2 {
        let s = Sandbox::new();
        let (a, b) = s.ab(
            json!({"mako_error_runs": [0]}),
            json!({"mako_truncates_report": true}),
        );
        let o = s.bench(&a, &b, &["--trials", "4", "--pairing", "duet"]);
        assert_eq!(code(&o), 2, "{}", text(&o));
        let file = s.read_json("trials.json");
        assert!(file.get("set_aside").is_none(), "{file:#}");
        assert_eq!(
            s.read_json("summary.json")["judgements"][0]["verdict"],
            "ERROR"
        );
    }
    // Failing again, or a third time in a run: an ERROR, as any failed trial.
    for (runs, aside) in [(json!([0, 1]), 1), (json!([0, 2, 4]), 2)] {
        let s = Sandbox::new();
        let (a, b) = s.ab(json!({"mako_error_runs": runs}), json!({}));
        let o = s.bench(&a, &b, &["--trials", "4", "--pairing", "sequential"]);
        assert_eq!(code(&o), 2, "{runs}: {}", text(&o));
        let file = s.read_json("trials.json");
        let summary = s.read_json("summary.json");
        assert_eq!(summary["judgements"][0]["verdict"], "ERROR", "{summary:#}");
        let set_aside = file["set_aside"].as_array().map_or(0, Vec::len);
        assert_eq!(set_aside, aside, "{runs}: {file:#}");
    }
}
