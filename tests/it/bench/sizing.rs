//! How many trials: `calibrate`'s A/A estimate and `--trials auto` stopping when the
//! verdict is decided.

use serde_json::json;

use crate::support::{code, text, Sandbox};

#[test]
fn calibrate_runs_an_aa_and_reports_noise_mde_and_trials_needed() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"noise_pct": 3.0}));
    let o = std::process::Command::new(crate::support::xtask())
        .args(["calibrate", "--build"])
        .arg(&a)
        .arg("--out")
        .arg(s.out())
        .args(crate::support::TINY)
        .args(["--trials", "4"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let cal = s.read_json("calibration.json");
    let e = &cal["engines"][0];
    assert_eq!(e["pairs"], 4, "{cal}");
    assert!(e["pair_log_ratio_sd"].as_f64().unwrap() > 0.0, "{cal}");
    assert!(e["mde_pct_by_pairs"].as_array().unwrap().len() > 3);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("calibration of redwood over 4 A/A pairs"),
        "{stdout}"
    );
    assert!(stdout.contains("tolerance needs"), "{stdout}");
    // Both arms ran the one build.
    let meta = s.read_json("meta.json");
    assert_eq!(
        meta["plan"]["baseline"]["tree"]["root"],
        meta["plan"]["experiment"]["tree"]["root"]
    );
    // With --json, stdout is summary.json alone (the calibration is in its file).
    let o = std::process::Command::new(crate::support::xtask())
        .args(["calibrate", "--build"])
        .arg(&a)
        .arg("--out")
        .arg(s.dir.path().join("json"))
        .args(crate::support::TINY)
        .args(["--trials", "2", "--json", "--quiet"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o)));
    assert!(summary["judgements"].is_array(), "{summary}");
    assert!(s.dir.path().join("json/calibration.json").is_file());
}

#[test]
fn adaptive_trials_stop_at_the_first_look_on_a_clear_case() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 800.0}));
    let o = s.bench(&a, &b, &["--trials", "auto", "--time-budget", "1h"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "REGRESSION"
    );
    // Three pairs, the minimum, then decided.
    assert_eq!(s.read_json("trials.json").as_array().unwrap().len(), 6);
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    assert!(log.contains("after 3 pairs (look 1 of at most"), "{log}");
}
