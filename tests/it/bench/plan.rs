//! Flags and the plan: usage errors exit 64, `--dry-run` prints the plan and runs
//! nothing.

use serde_json::json;

use crate::support::{code, text, Sandbox};

#[test]
fn usage_errors_exit_64() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--trials", "zero"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let o = s.bench(&a, &b, &["--knob", "no_equals_sign"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NAME=VALUE"));
    // An empty PERFGATE_WORKDIR is named as such, not as a --workdir the user never typed.
    let o = s
        .bench_command(&a, &b, &[])
        .env("PERFGATE_WORKDIR", "")
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("PERFGATE_WORKDIR is set but empty (it stands for --workdir)"),
        "{}",
        text(&o)
    );
    // An empty variable does not hide another flag's bad value.
    let o = s
        .bench_command(&a, &b, &["--engine", "foo"])
        .env("PERFGATE_WORKDIR", "")
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("invalid value 'foo' for '--engine"),
        "{}",
        text(&o)
    );
    assert!(
        !text(&o).contains("WORKDIR is set but empty"),
        "{}",
        text(&o)
    );
}

#[test]
fn dry_run_prints_the_plan_and_runs_nothing() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--dry-run", "--trials", "2", "--engine", "all"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines()
            .filter(|l| l.contains(". A ") || l.contains(". B "))
            .count(),
        12,
        "{out}"
    );
    assert!(
        out.contains("--knob_rocksdb_use_direct_reads=false") || !s.workdir_is_tmpfs(),
        "{out}"
    );
    // The order shown can be had again (the sandbox's seed is 3).
    // With the least time it takes: 12 trials of the sandbox's 6 s test.
    assert!(
        out.contains(
            "12 in this order (--seed 3 repeats it), at least 1m 12s of test time (6 s each)"
        ),
        "{out}"
    );
    assert!(!out.contains("GIVES AT MOST INCONCLUSIVE"), "{out}");
    assert!(!s.out().exists());
    // One pair estimates no noise: said before the run, not found in its verdict.
    let o = s.bench(&a, &b, &["--dry-run", "--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("WARNING: --trials 1 GIVES AT MOST INCONCLUSIVE"),
        "{}",
        text(&o)
    );
    // With --json, the same plan as JSON (meta.json's "plan"), for scripts.
    let o = s.bench(
        &a,
        &b,
        &["--dry-run", "--json", "--trials", "2", "--engine", "all"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(
        plan["trials"].as_array().map(Vec::len),
        Some(12),
        "{plan:#}"
    );
    assert_eq!(plan["config"]["seed"], 3, "{plan:#}");
    assert!(!s.out().exists());
    // The text plan names the floors and the ports, as the JSON plan does.
    let o = s
        .bench_command(&a, &b, &["--dry-run", "--port-range", "42000-42099"])
        .env("PERFGATE_SLO_TPS_REDWOOD", "500")
        .env("PERFGATE_SLO_TPS_REDWOD", "500")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("slo        redwood: 500 TPS from PERFGATE_SLO_TPS_REDWOOD"),
        "{out}"
    );
    assert!(out.contains("ports      42000-42099, 3 per trial"), "{out}");
    assert!(
        out.contains("PERFGATE_SLO_TPS_REDWOD names no storage engine, so it sets no floor"),
        "{out}"
    );
    // A value clap refuses is reported as every usage error is: JSON on stdout, a JUnit
    // ERROR case (clap's own exit path writes neither).
    let junit = s.dir.path().join("refused.xml");
    let o = s.bench(
        &a,
        &b,
        &[
            "--port-range",
            "5-4",
            "--json",
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    let err: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(err["exit_code"], 64, "{err}");
    assert!(
        err["error"].as_str().unwrap().contains("LOW is above HIGH"),
        "{err}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("ERROR: ") && xml.contains("LOW is above HIGH"),
        "{xml}"
    );
    // Testers on other hosts join only a cluster the gate did not start.
    let o = s.bench(&a, &b, &["--dry-run", "--remote-testers", "2"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--remote-testers 2 needs --cluster-file"),
        "{}",
        text(&o)
    );
}
