//! Repository rules as tests: the README stays true to the code and to CI.

use std::path::Path;

fn repo_file(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn readme_starts_with_the_main_job_and_the_test_command_that_ci_runs() {
    let readme = repo_file("README.md");
    let first_block: Vec<&str> = readme
        .split("```")
        .nth(1)
        .expect("a code block")
        .lines()
        .skip(1)
        .collect();
    assert!(
        first_block[0].starts_with("cargo xtask bench"),
        "{first_block:?}"
    );
    assert_eq!(first_block[1], "cargo test --workspace");
    let ci = repo_file(".ci/run");
    assert!(
        ci.lines().any(|l| l.starts_with("cargo test --workspace")),
        "{ci}"
    );
}

#[test]
fn every_bench_flag_is_documented_in_the_readme() {
    let help = crate::support::gate_cmd()
        .args(["bench", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    let readme = repo_file("README.md");
    // Option entries are indented by at most six spaces (`  -x, --name`, `      --name`);
    // description lines are indented further.
    let flags: Vec<&str> = help
        .lines()
        .filter(|l| l.trim_start().starts_with('-') && l.len() - l.trim_start().len() <= 6)
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(','))
        .filter(|f| !["--help", "--version"].contains(f))
        .collect();
    assert!(flags.len() > 20, "{flags:?}");
    let missing: Vec<&&str> = flags.iter().filter(|f| !readme.contains(**f)).collect();
    assert!(
        missing.is_empty(),
        "flags of `bench --help` missing from README.md: {missing:?}"
    );
}

#[test]
fn help_documents_the_exit_codes() {
    let help = crate::support::gate_cmd()
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for line in [
        "0   every engine MEASURED",
        "1   a REGRESSION or SLO-VIOLATION",
        "2   a TIMEOUT",
        "64  usage error",
    ] {
        assert!(help.contains(line), "missing {line:?} in:\n{help}");
    }
    // Fresh user: after a mistyped flag, clap's usage was the flag it suggested.
    let o = crate::support::gate_cmd()
        .args(["bench", "--bogus"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(64), "{err}");
    assert!(
        err.contains("Usage: cargo xtask bench [OPTIONS]  (the arms: --baseline-build DIR")
            && !err.contains("Usage: cargo xtask bench --logs"),
        "{err}"
    );
}

#[test]
fn ci_gate_script_runs_the_gate_and_leaves_junit_where_ci_looks() {
    use serde_json::json;
    let s = crate::support::Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 900.0}));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let o = std::process::Command::new(root.join("ci/gate.sh"))
        .current_dir(s.dir.path())
        .args([
            "--baseline-build",
            a.to_str().unwrap(),
            "--experiment-build",
            b.to_str().unwrap(),
        ])
        .args(crate::support::TINY)
        .args(["--seed", "3"])
        .env("WORKDIR", s.workdir.path())
        .env("PERFGATE_ALLOW_CONCURRENT", "1")
        .env("PERFGATE_TRIALS", "2")
        .output()
        .unwrap();
    assert_eq!(crate::support::code(&o), 1, "{}", crate::support::text(&o));
    let junit = crate::support::read_junit(&s.dir.path().join("junit.xml"));
    assert_eq!(
        junit[0]["cases"][0]["results"][0]["verdict"], "REGRESSION",
        "{junit}"
    );
    // Each run has its own directory under perfgate-results/ (tests/it/ci.rs reruns it).
    let runs: Vec<_> = std::fs::read_dir(s.dir.path().join("perfgate-results"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].join("summary.json").is_file());
    assert!(String::from_utf8_lossy(&o.stdout).contains("perfgate: exit status 1"));
    // Strict by default: 2 noisy pairs cannot rule out a 2% loss, and that fails the job
    // instead of passing silently.
    let (c, d) = (
        s.tree("noisy-a", json!({"noise_pct": 5.0})),
        s.tree(
            "noisy-b",
            json!({"noise_pct": 5.0, "source_version": "0000000000000000000000000000000000000003"}),
        ),
    );
    let o = std::process::Command::new(root.join("ci/gate.sh"))
        .current_dir(s.dir.path())
        .args(["--baseline-build", c.to_str().unwrap()])
        .args(["--experiment-build", d.to_str().unwrap()])
        .args(crate::support::TINY)
        .args(["--seed", "3"])
        .env("WORKDIR", s.workdir.path())
        .env("PERFGATE_ALLOW_CONCURRENT", "1")
        .env("PERFGATE_TRIALS", "2")
        .env("PERFGATE_OUT", "noisy")
        .env("PERFGATE_JUNIT", "noisy.xml")
        .output()
        .unwrap();
    assert_eq!(crate::support::code(&o), 1, "{}", crate::support::text(&o));
    // And the JUnit file says it failed (issue 15: a skipped case under a failed job).
    let junit = crate::support::read_junit(&s.dir.path().join("noisy.xml"));
    let result = &junit[0]["cases"][0]["results"][0];
    assert_eq!(
        (&result["kind"], &result["verdict"]),
        (&json!("Failure"), &json!("INCONCLUSIVE")),
        "{junit}"
    );
}

#[test]
fn doctor_checks_this_host_and_says_what_to_do() {
    let s = crate::support::Sandbox::new();
    let o = crate::support::gate_cmd()
        .arg("doctor")
        .arg("--workdir")
        .arg(s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(crate::support::code(&o), 0, "{}", crate::support::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for topic in [
        "host",
        "work dir",
        "fsync latency",
        "memory cgroup",
        "cores",
        "cpu frequency",
        "other load",
        "FDB checkout",
        "build tools",
    ] {
        assert!(
            out.lines().any(|l| l[5..].starts_with(topic)),
            "no {topic} in:\n{out}"
        );
    }
    assert!(
        out.contains(&s.workdir.path().display().to_string()),
        "{out}"
    );
}
