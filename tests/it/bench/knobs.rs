//! Server knobs: the tmpfs AIO knob the gate adds, and knobs fdbserver rejects.

use serde_json::json;

use crate::support::{code, text, Sandbox};

#[test]
fn overriding_the_tmpfs_knob_makes_the_server_fail_and_the_trial_an_error() {
    let s = Sandbox::new();
    if !s.workdir_is_tmpfs() {
        return; // the double only refuses tmpfs data dirs
    }
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--experiment-knob", "disable_posix_kernel_aio=0"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR", "{j}");
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("cluster-start") && reason.contains("O_DIRECT"),
        "{reason}"
    );
    // The failed cluster was still torn down and its trace files kept.
    let trial = &s.read_trials()[1];
    let phases = crate::support::phase_names(trial);
    assert_eq!(phases, ["cluster-start", "teardown"]);
    let art = s.out().join(trial["artifacts"].as_str().unwrap());
    let traces: Vec<_> = std::fs::read_dir(&art)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .collect();
    // Each server writes its trace file before it fails; the one that failed first is
    // kept for sure, the others may have been stopped before writing theirs.
    assert!(
        !traces.is_empty(),
        "no trace file kept in {}",
        art.display()
    );
}

#[test]
fn a_knob_fdbserver_does_not_know_fails_the_trial_naming_it() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = s.bench(&a, &a, &["--experiment-knob", "page_cahce_4k=1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR");
    let reason = j["reason"].as_str().unwrap();
    assert!(reason.contains("unknown knob 'page_cahce_4k'"), "{reason}");
    let o = s.bench_in(
        "bad-value",
        &a,
        &a,
        &["--experiment-knob", "page_cache_4k=lots"],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("invalid value 'lots' for knob 'page_cache_4k'"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_stray_byte_in_server_or_mako_output_hides_nothing() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"stray_bytes": true}));
    // The refused knob is still found in stderr and trace holding a byte that is not UTF-8.
    let o = s.bench(&a, &a, &["--experiment-knob", "page_cahce_4k=1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR", "{j}");
    let reason = j["reason"].as_str().unwrap();
    assert!(reason.contains("unknown knob 'page_cahce_4k'"), "{reason}");
    // And mako's report around such a byte is read: the run measures.
    let b = s.tree(
        "b",
        json!({"stray_bytes": true, "source_version": "0000000000000000000000000000000000000002"}),
    );
    let o = s.bench_in("clean", &a, &b, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("MEASURED"), "{}", text(&o));
}

#[test]
fn fdb_variables_in_the_gates_environment_never_reach_a_server() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // The double applies FDB_KNOB_* like FDB 7.2+: passed on, this misspelt knob would be
    // refused and fail the trial (and a real one would override the arms' knobs).
    let o = s
        .bench_command(&a, &b, &["--trials", "1"])
        .env("FDB_KNOB_page_cahce_4k", "1")
        .env("FDB_NETWORK_OPTION_TRACE_ENABLE", "/tmp")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let warnings = s.read_json("summary.json")["warnings"].to_string();
    assert!(
        warnings.contains(
            "FDB_KNOB_page_cahce_4k, FDB_NETWORK_OPTION_TRACE_ENABLE set in the environment, \
             not passed to fdbserver, fdbcli or mako"
        ),
        "{warnings}"
    );
    let env = &s.read_json("meta.json")["plan"]["child_env"];
    let removed = env["removed"].to_string();
    assert!(removed.contains("\"FDB_KNOB_page_cahce_4k\""), "{env}");
    assert!(
        env["passed"].get("FDB_KNOB_page_cahce_4k").is_none(),
        "{env}"
    );
    assert!(
        std::fs::read_to_string(s.out().join("run.log"))
            .unwrap()
            .contains("environment children get"),
        "the run log names the environment"
    );
}
