//! FDB releases other than 8.0: each tree's mako is asked what it takes
//! (`--help`, `fdbserver --version`) before anything starts; 7.2-7.4 run with the window
//! cut from their samples, what a release cannot run is refused at plan time.

use serde_json::json;

use crate::support::{code, text, Sandbox};

#[test]
fn a_73_ab_runs_without_warmup_seconds_and_is_measured() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"release": "7.3"}), json!({"release": "7.3"}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let meta = s.read_json("meta.json");
    let mako = &meta["plan"]["experiment"]["mako"];
    assert_eq!(mako["release"], json!({"major": 7, "minor": 3}), "{mako}");
    assert_eq!(mako["warmup_seconds"], false, "{mako}");
    let summary = s.read_json("summary.json");
    assert_eq!(summary["judgements"][0]["verdict"], "MEASURED", "{summary}");
    assert!(
        text(&o).contains("its mako has no --warmup_seconds (it came with FDB 8.0)"),
        "{}",
        text(&o)
    );
    // The window is the asked one, cut from the samples; the flag was never passed.
    let trials = s.read_trials();
    let report = &trials[0]["report"];
    assert!(
        report["warmup_duration_s"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    let dir = s.out().join(trials[0]["artifacts"].as_str().unwrap());
    let err = std::fs::read_to_string(dir.join("mako-run.err")).unwrap_or_default();
    assert!(!err.contains("unrecognized option"), "{err}");
}

#[test]
fn a_72_tree_configures_redwood_by_its_own_name() {
    // 7.2's fdbcli knows only ssd-redwood-1-experimental (the double refuses the other).
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"release": "7.2"}), json!({"release": "7.2"}));
    let o = s.bench(&a, &b, &["--engine", "redwood"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let dir = s
        .out()
        .join(s.read_trials()[0]["artifacts"].as_str().unwrap());
    assert!(
        !dir.join("mako-sketch.json").exists(),
        "7.2's --stats_export_path writes elsewhere: not passed"
    );
}

#[test]
fn arms_of_two_releases_say_their_windows_differ() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"release": "7.4"}), json!({}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("cut the warmup differently (baseline FDB 7.4, experiment FDB 8.0)"),
        "{}",
        text(&o)
    );
}

#[test]
fn what_a_release_cannot_run_is_refused_before_any_trial() {
    for (release, flags, says) in [
        (
            "7.1",
            &[][..],
            "its mako has no --async_xacts (it came with FDB 7.2)",
        ),
        // No engine runs on 7.1: its mako is what stops it, whatever the engine.
        (
            "7.1",
            &["--engine", "sharded-rocksdb"][..],
            "its mako has no --async_xacts (it came with FDB 7.2)",
        ),
        ("6.3", &[][..], "the gate runs FDB 7.2 and later"),
    ] {
        let s = Sandbox::new();
        let (a, b) = s.ab(json!({"release": release}), json!({"release": release}));
        let o = s.bench(&a, &b, flags);
        let out = s.out();
        assert_eq!(code(&o), 64, "{release} {flags:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{release} {flags:?}: {}", text(&o));
        assert!(!out.join("trials").exists(), "{release}: no trial ran");
    }
}

#[test]
fn a_release_newer_than_the_matrix_runs_with_a_warning() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"release": "9.9"}), json!({"release": "9.9"}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("newer than the releases the gate was checked against (7.1 to 8.0)"),
        "{}",
        text(&o)
    );
}
