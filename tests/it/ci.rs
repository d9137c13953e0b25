//! `ci/gate.sh` as a CI job runs it: twice in one workspace (a self-hosted runner keeps
//! it), with the job's own flags beside the script's defaults.

use std::{path::Path, process::Command};

use serde_json::json;

use crate::support::{code, text, xtask, Sandbox, TINY};

fn gate_sh(
    s: &Sandbox,
    workspace: &Path,
    a: &Path,
    b: &Path,
    extra: &[&str],
) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/gate.sh");
    Command::new("bash")
        .arg(script)
        .arg("--baseline-build")
        .arg(a)
        .arg("--experiment-build")
        .arg(b)
        .args(TINY)
        .arg("--baselines-dir")
        .arg(s.dir.path().join("baselines"))
        .args(extra)
        .current_dir(workspace)
        .env("PERFGATE_XTASK", xtask())
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap()
}

#[test]
fn the_gate_script_runs_again_in_the_same_workspace_and_takes_the_jobs_flags() {
    // Issue 15: the second run found perfgate-results/ and exited 64; `--trials 2` was
    // "cannot be used multiple times", and the script still said "JUnit in junit.xml".
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"tps": 900.0}));
    let workspace = s.dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut dirs = Vec::new();
    for run in 0..2 {
        let o = gate_sh(&s, &workspace, &a, &b, &["--trials", "2", "--strict"]);
        assert_eq!(code(&o), 1, "run {run}: {}", text(&o));
        let last = String::from_utf8_lossy(&o.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .to_string();
        assert!(
            last.contains("exit status 1") && last.contains("JUnit in junit.xml"),
            "{last}"
        );
        let xml = std::fs::read_to_string(workspace.join("junit.xml")).unwrap();
        assert!(
            xml.contains(r#"<failure message="REGRESSION (redwood): "#),
            "{xml}"
        );
        let dir = last.rsplit("results in ").next().unwrap().to_string();
        let trials: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(workspace.join(&dir).join("trials.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            trials.as_array().unwrap().len(),
            4,
            "--trials 2 is the job's"
        );
        dirs.push(dir);
    }
    assert_ne!(dirs[0], dirs[1], "each run has its own results directory");
    // A run that writes no JUnit (a flag the gate does not know stops it before it
    // writes anything) does not claim the last run's.
    let o = gate_sh(&s, &workspace, &a, &b, &["--no-such-flag"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("no JUnit written by this run"),
        "{}",
        text(&o)
    );
}
