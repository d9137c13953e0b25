//! The Jenkins example (`ci/examples/Jenkinsfile`), run by `tests/it/jenkins.groovy` where
//! no Jenkins runs: Groovy 2.4 (Jenkins' version) parses it, and stand-ins for the
//! pipeline's sections and steps run it, its `sh` script for real, on a change request
//! whose target branch moved on after the branch point.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{json, Value};

use super::{job_env, perfgate_repo};
use crate::{
    build::{behaviour, checkout, git},
    support::{code, text, xtask, Sandbox},
};

/// A multibranch job's workspace for a change request of branch `pr` into `main`: the
/// FDB-shaped checkout as `origin`, where `pr` branched off `main` (10% slower when
/// `slower`) and `main` moved on since, and its clone at `pr` in `ws/foundationdb`, without
/// `main`. Returns the workspace, the branch point and the change's head.
fn change_request(s: &Sandbox, slower: bool) -> (PathBuf, String, String) {
    let origin = checkout(s);
    let branch_point = git(&origin, &["rev-parse", "HEAD"]);
    git(&origin, &["checkout", "-qb", "pr"]);
    let tps = if slower { 900.0 } else { 1000.0 };
    std::fs::write(origin.join("double.json"), behaviour(tps)).unwrap();
    std::fs::write(origin.join("change.txt"), "the change").unwrap();
    git(&origin, &["add", "."]);
    git(&origin, &["commit", "-qm", "the change"]);
    let head = git(&origin, &["rev-parse", "HEAD"]);
    git(&origin, &["checkout", "-q", "main"]);
    std::fs::write(origin.join("landed.txt"), "since").unwrap();
    git(&origin, &["add", "."]);
    git(&origin, &["commit", "-qm", "landed on main since"]);
    let ws = s.dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let o = Command::new("git")
        .args(["clone", "-q", "--branch", "pr"])
        .arg(&origin)
        .arg(ws.join("foundationdb"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    git(
        &ws.join("foundationdb"),
        &["update-ref", "-d", "refs/remotes/origin/main"],
    );
    (ws, branch_point, head)
}

/// What a test gives the Jenkinsfile over its `environment`: the gate cloned from this
/// repository's working tree, the sandbox's caches and the tests' job settings, and `gate`
/// as PERFGATE_XTASK.
fn overrides(s: &Sandbox, gate: &Path) -> Vec<String> {
    let repo = perfgate_repo(s);
    let mut o = vec![
        format!("PERFGATE_REPO=file://{}", repo.display()),
        "PERFGATE_REF=under-test".into(),
        format!("PERFGATE_XTASK={}", gate.display()),
        format!(
            "PERFGATE_XTASK_CACHE={}",
            s.dir.path().join("gate-cache").display()
        ),
    ];
    o.extend(job_env(s).into_iter().map(|(k, v)| format!("{k}={v}")));
    o
}

/// The Jenkinsfile run in workspace `ws` on node `perf-1`, with the multibranch job's
/// variables `job` (CHANGE_ID, ...) and the runner's `args` (overrides, `--param`s).
fn jenkins(ws: &Path, job: &[(&str, &str)], args: &[String]) -> Output {
    let Ok(groovy) = which::which("groovy") else {
        panic!("groovy not found: run ci/setup.sh")
    };
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(groovy);
    cmd.arg(here.join("it/jenkins.groovy"))
        .arg(here.join("../ci/examples/Jenkinsfile"))
        .args(args)
        .current_dir(ws)
        .env("WORKSPACE", ws)
        .env("NODE_NAME", "perf-1");
    for v in ["CHANGE_ID", "CHANGE_TARGET", "CHANGE_FORK", "BRANCH_NAME"] {
        cmd.env_remove(v);
    }
    cmd.envs(job.iter().copied());
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 0, "the runner: {}", text(&o));
    o
}

/// The build's result, from the runner's last line.
fn result(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out
        .lines()
        .rev()
        .find(|l| l.starts_with("[jenkins] result: "));
    last.unwrap_or_else(|| panic!("no result: {}", text(o)))["[jenkins] result: ".len()..]
        .to_string()
}

/// A stand-in gate that says its arguments and exits with `STANDIN_STATUS`.
fn stand_in(s: &Sandbox) -> PathBuf {
    let gate = s.dir.path().join("stand-in-gate");
    std::fs::write(
        &gate,
        "#!/bin/sh\necho \"stand-in: $*\"\nexit \"$STANDIN_STATUS\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&gate, PermissionsExt::from_mode(0o755)).unwrap();
    gate
}

const CHANGE: [(&str, &str); 2] = [("CHANGE_ID", "7"), ("CHANGE_TARGET", "main")];

/// The gate's exit status decides the build's result: 0 SUCCESS, 1 UNSTABLE, 2 and 64
/// FAILURE; the JUnit and archive steps run after a failure too.
#[test]
fn the_jenkins_example_maps_the_gates_exit_status_to_the_build_result() {
    let s = Sandbox::new();
    let (ws, _, _) = change_request(&s, false);
    let args = overrides(&s, &stand_in(&s));
    for (status, want) in [("0", "SUCCESS"), ("1", "UNSTABLE"), ("2", "FAILURE")] {
        let mut args = args.clone();
        args.push(format!("STANDIN_STATUS={status}"));
        let o = jenkins(&ws, &CHANGE, &args);
        assert_eq!(result(&o), want, "{status}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("[jenkins] lock: perfgate-perf-1")
                && out.contains("[jenkins] junit: ")
                && out.contains("[jenkins] archiveArtifacts: perfgate-out/**"),
            "{status}: {}",
            text(&o)
        );
    }
    // A usage error of the script's own: 64, the build fails and says so.
    let mut args = args.clone();
    args.push("PERFGATE_STRICT=maybe".into());
    let o = jenkins(&ws, &CHANGE, &args);
    assert_eq!(result(&o), "FAILURE", "{}", text(&o));
    assert!(
        text(&o).contains("failed: perfgate: exit status 64"),
        "{}",
        text(&o)
    );
}

/// The stage runs for a change request of the repository's own, and for a build started
/// by hand with EXPERIMENT and BASELINE; not for a fork's change request, nor for a branch.
#[test]
fn the_jenkins_example_runs_for_its_own_change_requests_and_by_hand() {
    let s = Sandbox::new();
    let (ws, branch_point, head) = change_request(&s, false);
    let mut args = overrides(&s, &stand_in(&s));
    args.push("STANDIN_STATUS=0".into());
    let fork = [CHANGE[0], CHANGE[1], ("CHANGE_FORK", "someone")];
    for job in [&[][..], &fork[..]] {
        let o = jenkins(&ws, job, &args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("stage Throughput: skipped (when)"),
            "{}",
            text(&o)
        );
    }
    // Its own: the merge base with the target branch, fetched, against the change's head.
    let o = jenkins(&ws, &CHANGE, &args);
    let said = format!("--baseline {branch_point} --experiment {head}");
    assert!(text(&o).contains(&said), "{said}: {}", text(&o));
    // By hand: the commits given.
    let mut by_hand = args.clone();
    by_hand.extend(["--param".into(), "EXPERIMENT=e0e0".into()]);
    by_hand.extend(["--param".into(), "BASELINE=b0b0".into()]);
    let o = jenkins(&ws, &[], &by_hand);
    assert!(
        text(&o).contains("--baseline b0b0 --experiment e0e0"),
        "{}",
        text(&o)
    );
}

/// A change request whose head is 10% slower, with the real gate: UNSTABLE, the JUnit
/// case failed, this build's results archived; baseline at the merge base, not at the
/// target branch's tip.
#[test]
fn the_jenkins_example_marks_a_slower_change_request_unstable() {
    let s = Sandbox::new();
    let (ws, branch_point, head) = change_request(&s, true);
    let o = jenkins(&ws, &CHANGE, &overrides(&s, xtask()));
    assert_eq!(result(&o), "UNSTABLE", "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("[jenkins] junit: perfgate-out/junit.xml, 2 case(s), 1 failed"),
        "{}",
        text(&o)
    );
    assert!(
        out.contains("followSymlinks false") && !out.contains(" 0 file(s)"),
        "{}",
        text(&o)
    );
    // The gate ran inside the host's lock.
    let at = |line: &str| out.find(line).unwrap_or_else(|| panic!("{line}: {out}"));
    assert!(at("[jenkins] lock: perfgate-perf-1") < at("[jenkins] sh (perfgate)"));
    assert!(at("[jenkins] sh: exit status 1") < at("[jenkins] unlock: perfgate-perf-1"));
    let results = ws.join("perfgate-out");
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("meta.json")).unwrap()).unwrap();
    let plan = &meta["plan"];
    assert_eq!(
        plan["baseline"]["provenance"]["commit"],
        json!(branch_point)
    );
    assert_eq!(plan["experiment"]["provenance"]["commit"], json!(head));
    s.assert_no_leftover_processes();
}
