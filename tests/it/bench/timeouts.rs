//! A phase past its bound is a TIMEOUT, and what it started is ended: cluster start,
//! configure, mako run, teardown.

use serde_json::json;

use crate::support::{code, read_junit, text, Sandbox};

#[test]
fn configure_hang_is_a_timeout_of_that_phase_and_leaves_no_process() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"configure_hang": true}));
    let o = s.bench(&a, &b, &["--timeout-configure", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "TIMEOUT", "{j}");
    let trials = s.read_trials();
    assert_eq!(trials[1]["outcome"], "timeout");
    assert_eq!(trials[1]["failed_phase"], "configure");
    // The phases before it and the teardown are still timed.
    let phases = crate::support::phase_names(&trials[1]);
    assert_eq!(phases, ["cluster-start", "configure", "teardown"]);
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<error message="TIMEOUT (redwood): trial 2 (experiment #1): configure"#)
            || junit.contains(r#"<error message="trial 2 (experiment #1): configure"#),
        "{junit}"
    );
    let case = &read_junit(&s.out().join("junit.xml"))[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Error", "{case}");
    assert_eq!(case["results"][0]["verdict"], "TIMEOUT");
    s.assert_no_leftover_processes();
}

#[test]
fn slow_cluster_start_past_its_bound_is_a_timeout() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"server_start_delay_ms": 30000}), json!({}));
    let o = s.bench(&a, &b, &["--timeout-cluster-start", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_trials();
    assert_eq!(trials[0]["failed_phase"], "cluster-start", "{trials}");
    assert_eq!(trials[0]["outcome"], "timeout");
    s.assert_no_leftover_processes();
}

#[test]
fn a_server_that_ignores_sigterm_is_killed_and_the_teardown_is_a_timeout() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"server_ignores_sigterm": true}));
    let o = s.bench(&a, &b, &["--timeout-teardown", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_trials();
    assert_eq!(trials[0]["outcome"], "measured", "{trials}");
    assert_eq!(trials[1]["outcome"], "timeout");
    assert_eq!(trials[1]["failed_phase"], "teardown");
    assert!(
        trials[1]["error"]
            .as_str()
            .unwrap()
            .contains("ignored SIGTERM and were killed"),
        "{trials}"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn a_cluster_that_freezes_during_the_run_is_said_before_the_bound() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"cluster_freezes_on_run": true}));
    // A stopped cluster would hang the trial to the bound, and mako be blamed. A grace of
    // 40 s: the cluster is asked every 10 s from 10 s past --seconds; two unanswered
    // questions end the trial by about 30 s past it.
    let o = s.bench(&a, &b, &["--trials", "1", "--timeout-mako-run-grace", "40"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_trials();
    let t = trials
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["arm"] == "experiment")
        .unwrap_or_else(|| panic!("{trials}"));
    assert_eq!(
        (&t["outcome"], &t["failed_phase"]),
        (&json!("error"), &json!("mako-run")),
        "{t}"
    );
    let error = t["error"].as_str().unwrap();
    assert!(
        error.contains("the cluster stopped answering: mako --mode run has run ")
            && error.contains("s past its expected end, and status json found no available")
            && error.contains("status-probe.json"),
        "{error}"
    );
    let probe = s.out().join(t["artifacts"].as_str().unwrap());
    assert!(probe.join("status-probe.json").is_file(), "{probe:?}");
    // Its teardown continued the stopped server (SIGCONT) rather than waiting it out.
    let teardown = t["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "teardown")
        .unwrap_or_else(|| panic!("{t}"));
    assert!(teardown["duration_s"].as_f64().unwrap() < 30.0, "{t}");
    s.assert_no_leftover_processes();
    // A grace too short for two questions still ends in a TIMEOUT that says what the one
    // question it had time for saw, not only to raise the grace.
    let o = s.bench_in(
        "short",
        &a,
        &b,
        &["--trials", "1", "--timeout-mako-run-grace", "12"],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("TIMEOUT: mako-run: did not finish within its bound")
            && text(&o).contains("the cluster did not answer the last status json"),
        "{}",
        text(&o)
    );
    s.assert_no_leftover_processes();
}

#[test]
fn a_hanging_mako_run_is_a_timeout_and_is_killed() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_run_hang": true}));
    // --seconds 6 plus a 1 s grace: the hang is cut after 7 s.
    let o = s.bench(&a, &b, &["--trials", "2", "--timeout-mako-run-grace", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_trials()[1];
    assert_eq!(
        (&t["outcome"], &t["failed_phase"]),
        (&json!("timeout"), &json!("mako-run")),
        "{t}"
    );
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "TIMEOUT"
    );
    s.assert_no_leftover_processes();
}
