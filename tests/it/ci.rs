//! `ci/gate.sh` as a CI job runs it: twice in one workspace (a self-hosted runner keeps
//! it), with the job's own flags beside the script's defaults; and the GitLab CI example
//! (`ci/examples/gitlab-ci.yml`) run by gitlab-ci-local on an FDB-shaped checkout.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{json, Value};

mod github;
mod jenkins;

use crate::{
    build::{behaviour, checkout, double_bin, git},
    support::{code, text, xtask, Sandbox, TINY},
};

fn gate_sh(
    s: &Sandbox,
    workspace: &Path,
    a: &Path,
    b: &Path,
    extra: &[&str],
) -> std::process::Output {
    gate_sh_command(s, workspace, a, b, extra).output().unwrap()
}

/// `ci/gate.sh` on trees `a` and `b` in `workspace` with the tiny workload and `extra`
/// flags, the built gate (`PERFGATE_XTASK`) and the sandbox's work dir.
fn gate_sh_command(s: &Sandbox, workspace: &Path, a: &Path, b: &Path, extra: &[&str]) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/gate.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(script)
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
        .env("PERFGATE_ALLOW_CONCURRENT", "1")
        .env("WORKDIR", s.workdir.path());
    cmd
}

#[test]
fn the_gate_script_runs_again_in_the_same_workspace_and_takes_the_jobs_flags() {
    // A CI job reruns the script in the same workspace: each run makes a results dir of
    // its own, the job's `--trials 2` replaces the script's default (clap refuses a flag
    // given twice), and the last line names the JUnit file this run wrote.
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
        let trials = crate::support::trials_of(
            &serde_json::from_str(
                &std::fs::read_to_string(workspace.join(&dir).join("trials.json")).unwrap(),
            )
            .unwrap(),
        );
        assert_eq!(
            trials.as_array().unwrap().len(),
            4,
            "--trials 2 is the job's"
        );
        dirs.push(dir);
    }
    assert_ne!(dirs[0], dirs[1], "each run has its own results directory");
    // A flag the gate does not know stops it before any trial; the JUnit file CI shows
    // is this run's, saying so as every usage error does, never the last run's.
    let o = gate_sh(&s, &workspace, &a, &b, &["--no-such-flag"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let junit = std::fs::read_to_string(workspace.join("junit.xml")).unwrap();
    assert!(
        junit.contains("ERROR: unexpected argument &apos;--no-such-flag&apos; found")
            || junit.contains("ERROR: unexpected argument '--no-such-flag' found"),
        "{junit}"
    );
    assert!(!junit.contains("<testcase name=\"tps\""), "{junit}");
    // `--trials auto` from the job gets the script's budget (it exited 64 without one).
    let o = gate_sh(&s, &workspace, &a, &b, &["--trials", "auto", "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // A PERFGATE_STRICT the script does not know is refused, not read as "not strict".
    for (value, want) in [("maybe", 64), ("yes", 0)] {
        let o = gate_sh_command(&s, &workspace, &a, &b, &["--dry-run"])
            .env("PERFGATE_STRICT", value)
            .output()
            .unwrap();
        assert_eq!(code(&o), want, "{value}: {}", text(&o));
    }
    let o = gate_sh_command(&s, &workspace, &a, &b, &[])
        .env("PERFGATE_XTASK", s.dir.path().join("no-such-gate"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("is not an executable file"),
        "{}",
        text(&o)
    );
}

/// `ci/gate.sh` on `a` and `b` in `workspace` with `--export-markdown summary.md` and the
/// `env`, after an earlier step of the job wrote to that file: asserts its exit status and
/// that the file keeps the earlier step's line and then says `said`.
fn assert_summary(
    s: &Sandbox,
    (a, b): (&Path, &Path),
    extra: &[&str],
    env: &[(&str, &Path)],
    (want, said): (i32, &str),
) {
    let workspace = s.dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let summary = workspace.join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let mut flags = extra.to_vec();
    flags.extend(["--export-markdown", "summary.md"]);
    let o = gate_sh_command(s, &workspace, a, b, &flags)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert_eq!(code(&o), want, "{extra:?} {env:?}: {}", text(&o));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("earlier step\n") && md.contains(said),
        "{extra:?} {env:?}:\n{md}"
    );
}

/// A CI job summary (`--export-markdown "$GITHUB_STEP_SUMMARY"`) gets the gate's verdict
/// table, or its error when it stopped before the first trial, after earlier steps' lines.
#[test]
fn the_job_summary_has_the_gates_verdict_table_or_its_error() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"tps": 900.0}));
    let table = "## perfgate: REGRESSION (exit 1)";
    assert_summary(&s, (&a, &b), &["--trials", "2"], &[], (1, table));
    // A tree without its mako: an error before the first trial.
    let no_mako = s.tree("no-mako", json!({"source_version": "3".repeat(40)}));
    std::fs::remove_file(no_mako.join("bin/mako")).unwrap();
    let error = "## perfgate: ERROR (exit 2)\n\nThe run stopped before its first trial";
    assert_summary(&s, (&a, &no_mako), &[], &[], (2, error));
    let refused = "unexpected argument '--no-such-flag'";
    assert_summary(&s, (&a, &b), &["--no-such-flag"], &[], (64, refused));
}

/// When the gate wrote nothing to the job summary (a refusal of the script's own, a gate
/// that crashed or did not build, a dry run), the script says the exit status there and
/// why; never through a link.
#[test]
fn the_job_summary_says_the_exit_status_when_the_gate_wrote_nothing() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"tps": 900.0}));
    let ab = (a.as_path(), b.as_path());
    let nothing = "## perfgate: exit status 0, no verdict table";
    assert_summary(&s, ab, &["--dry-run"], &[], (0, nothing));
    let silent = s.dir.path().join("silent-gate");
    std::fs::write(&silent, "#!/bin/sh\nexit 2\n").unwrap();
    std::fs::set_permissions(&silent, PermissionsExt::from_mode(0o755)).unwrap();
    let crashed = "exit status 2, no verdict table\n\nThe gate wrote none";
    assert_summary(&s, ab, &[], &[("PERFGATE_XTASK", &silent)], (2, crashed));
    let strict = [("PERFGATE_STRICT", Path::new("maybe"))];
    let refused = "exit status 64, no verdict table\n\nperfgate: PERFGATE_STRICT='maybe'";
    assert_summary(&s, ab, &["--dry-run"], &strict, (64, refused));
    let no_gate = [("PERFGATE_XTASK", &*s.dir.path().join("no-such-gate"))];
    assert_summary(&s, ab, &[], &no_gate, (64, "perfgate: PERFGATE_XTASK="));
    // A link there is refused by the gate (64) and left alone by the script, and so is
    // what it points to.
    let (victim, summary) = (
        s.dir.path().join("victim"),
        s.dir.path().join("workspace/summary.md"),
    );
    std::fs::remove_file(&summary).unwrap();
    std::os::unix::fs::symlink(&victim, &summary).unwrap();
    let flags = ["--dry-run", "--export-markdown", "summary.md"];
    let o = gate_sh_command(&s, &s.dir.path().join("workspace"), &a, &b, &flags)
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(!victim.exists() && summary.is_symlink(), "{}", text(&o));
    // A JUnit file reached through a link is an earlier one, not this run's: the last line
    // does not name it.
    std::fs::write(s.dir.path().join("stale.xml"), "<testsuites/>").unwrap();
    let junit = s.dir.path().join("workspace/linked.xml");
    std::os::unix::fs::symlink(s.dir.path().join("stale.xml"), &junit).unwrap();
    let o = gate_sh_command(&s, &s.dir.path().join("workspace"), &a, &b, &["--dry-run"])
        .env("PERFGATE_JUNIT", "linked.xml")
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("no JUnit written by this run (linked.xml)"),
        "{}",
        text(&o)
    );
    // A results dir whose name starts with a dash is a value, not a flag.
    let o = gate_sh_command(&s, &s.dir.path().join("workspace"), &a, &b, &["--dry-run"])
        .env("PERFGATE_OUT", "-dash")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
}

/// With PERFGATE_XTASK_CACHE, the script runs the gate built for its checkout's commit
/// without cargo, refuses a link in the cache it did not make, and runs a checkout with
/// changes under `cargo run`, never as its commit. (The GitLab example's test builds one
/// for real.) A stand-in `cargo` on PATH logs how it was called.
#[test]
fn the_gate_script_runs_the_gate_built_for_its_commit_and_never_a_changed_one() {
    let s = Sandbox::new();
    let repo = perfgate_repo(&s);
    // A clean checkout of the commit; its index was written from this workspace's files,
    // so `reset --hard` lays them out.
    git(&repo, &["checkout", "-q", "under-test"]);
    git(&repo, &["reset", "-q", "--hard"]);
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    let bin = s.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = |path: &Path, body: &str| {
        std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(path, PermissionsExt::from_mode(0o755)).unwrap();
    };
    let log = s.dir.path().join("cargo.log");
    script(
        &bin.join("cargo"),
        &format!("echo \"$*\" >> {}", log.display()),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = |cache: &Path| {
        Command::new("bash")
            .arg(repo.join("ci/gate.sh"))
            .arg("--dry-run")
            .current_dir(s.dir.path())
            .env("PATH", &path)
            .env("PERFGATE_XTASK_CACHE", cache)
            .env_remove("PERFGATE_XTASK")
            .output()
            .unwrap()
    };
    let cargo_calls = || std::fs::read_to_string(&log).unwrap_or_default();
    // Built before: run as it is.
    let cache = s.dir.path().join("cache");
    std::fs::create_dir_all(cache.join(&commit)).unwrap();
    script(
        &cache.join(&commit).join("xtask"),
        "echo \"cached gate: $1\"; exit 3",
    );
    let o = run(&cache);
    assert_eq!(code(&o), 3, "{}", text(&o));
    assert!(text(&o).contains("cached gate: bench"), "{}", text(&o));
    // A link where the commit's directory goes: refused, nothing built or run.
    let planted = s.dir.path().join("planted");
    std::fs::create_dir_all(&planted).unwrap();
    std::os::unix::fs::symlink(cache.join(&commit), planted.join(&commit)).unwrap();
    let o = run(&planted);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("is a symbolic link"), "{}", text(&o));
    // A directory where the binary goes: refused, not built into.
    let odd = s.dir.path().join("odd");
    std::fs::create_dir_all(odd.join(&commit).join("xtask")).unwrap();
    let o = run(&odd);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("is there and not a file"), "{}", text(&o));
    assert_eq!(cargo_calls(), "", "no cargo for a built or refused gate");
    // A checkout with changes is not its commit: cargo run, not the cached binary.
    std::fs::write(repo.join("README.md"), "changed\n").unwrap();
    let o = run(&cache);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("is not a clean git checkout"),
        "{}",
        text(&o)
    );
    let manifest = repo.join("Cargo.toml");
    assert!(
        cargo_calls().starts_with(&format!(
            "run --quiet --manifest-path {} ",
            manifest.display()
        )),
        "{}",
        cargo_calls()
    );
}

/// The perfgate repository the GitLab job clones: a clone of this workspace's repository
/// (CI runs in one) whose branch `under-test` is HEAD with the working tree's tracked files
/// as they are now, so the job runs this ci/gate.sh, uncommitted changes included. The
/// workspace's repository is only read.
fn perfgate_repo(s: &Sandbox) -> PathBuf {
    let workspace =
        std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).unwrap();
    let head = git(&workspace, &["rev-parse", "HEAD"]);
    let repo = s.dir.path().join("perfgate");
    let o = Command::new("git")
        .args(["clone", "-q", "--shared", "--no-checkout"])
        .arg(&workspace)
        .arg(&repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    git(&repo, &["read-tree", &head]);
    let work_tree = format!("--work-tree={}", workspace.display());
    git(&repo, &[&work_tree, "add", "--update"]);
    let tree = git(&repo, &["write-tree"]);
    let commit = git(
        &repo,
        &[
            "-c",
            "user.name=perfgate-tests",
            "-c",
            "user.email=t@example.invalid",
            "commit-tree",
            "-p",
            &head,
            "-m",
            "the working tree under test",
            &tree,
        ],
    );
    git(&repo, &["branch", "under-test", &commit]);
    repo
}

/// `gitlab-ci-local` (npm, installed by ci/setup.sh) in `repo` with these `--variable`s,
/// its user-wide settings in the sandbox.
fn gitlab_ci_local(s: &Sandbox, repo: &Path, extra: &[&str], variables: &[String]) -> Output {
    let Ok(gcl) = which::which("gitlab-ci-local") else {
        panic!("gitlab-ci-local not found: run ci/setup.sh")
    };
    let mut cmd = Command::new(gcl);
    cmd.current_dir(repo)
        .arg("--home")
        .arg(s.dir.path().join("gitlab-ci-local-home"))
        .args(["--no-color", "--ignore-predefined-vars"])
        .arg("CI_PIPELINE_SOURCE,CI_PROJECT_ID")
        .args(extra);
    for v in variables {
        cmd.arg("--variable").arg(v);
    }
    cmd.output().unwrap()
}

/// The variables of a merge request pipeline of project 7 from project `source` (7: its
/// own branch), the gate cloned from [`perfgate_repo`] (and built by the job, as the
/// example does), and the test's tiny workload and sandboxed dirs ([`job_env`]).
fn mr_variables(s: &Sandbox, source: u32, base: &str, gate: &Path) -> Vec<String> {
    let mut variables = vec![
        "CI_PIPELINE_SOURCE=merge_request_event".into(),
        "CI_PROJECT_ID=7".into(),
        format!("CI_MERGE_REQUEST_SOURCE_PROJECT_ID={source}"),
        format!("CI_MERGE_REQUEST_DIFF_BASE_SHA={base}"),
        format!("PERFGATE_REPO=file://{}", gate.display()),
        "PERFGATE_REF=under-test".into(),
    ];
    variables.extend(job_env(s).into_iter().map(|(k, v)| format!("{k}={v}")));
    variables
}

/// What a test gives every example's job: the FDB-shaped checkout's build flags, the tiny
/// workload, 2 pairs, and the sandbox's baselines, work dir and build cache.
fn job_env(s: &Sandbox) -> Vec<(String, String)> {
    let mut flags = vec![double_bin()];
    flags.extend(TINY.iter().map(|f| f.to_string()));
    flags.push(format!(
        "--baselines-dir {}",
        s.dir.path().join("baselines").display()
    ));
    let sandboxed = |p: &Path| p.display().to_string();
    vec![
        ("PERFGATE_EXTRA_FLAGS".into(), flags.join(" ")),
        ("PERFGATE_TRIALS".into(), "2".into()),
        ("PERFGATE_ALLOW_CONCURRENT".into(), "1".into()),
        ("PERFGATE_WORKDIR".into(), sandboxed(s.workdir.path())),
        (
            "CARGO_TARGET_DIR".into(),
            sandboxed(&s.dir.path().join("target")),
        ),
    ]
}

/// The gate binary the job built into PERFGATE_XTASK_CACHE (one gate commit: one binary),
/// and its inode and modification time.
fn cached_gate(cache: &Path) -> (PathBuf, u64, std::time::SystemTime) {
    use std::os::unix::fs::MetadataExt as _;
    let commits: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "target"))
        .collect();
    assert_eq!(commits.len(), 1, "{commits:?}");
    let bin = commits[0].join("xtask");
    let m = std::fs::metadata(&bin).unwrap();
    (bin, m.ino(), m.modified().unwrap())
}

/// Checks one run of the GitLab job: it failed with the gate's status, as did the
/// pipeline; its artifacts (kept although it failed: `when: always`) are this run's
/// results alone, with a JUnit failure whose body starts with the verdict; the second run
/// found both commits built; and the job removed its clone of the gate.
fn assert_gitlab_run(run: usize, o: &Output, repo: &Path, (base, head): (&str, &str)) {
    let all = text(o);
    assert_eq!(code(o), 1, "run {run}: {all}");
    assert!(
        all.contains("perfgate: exit status 1") && all.contains("FAIL 1"),
        "run {run}: {all}"
    );
    // gitlab-ci-local empties the job's artifacts before it runs; its shell executor runs
    // the job in the checkout, which it keeps from run to run.
    let out = repo.join(".gitlab-ci-local/artifacts/perfgate/perfgate-out");
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        xml.contains("<failure") && xml.contains(">REGRESSION (redwood): "),
        "{xml}"
    );
    let trials = crate::support::trials_of(
        &serde_json::from_str(&std::fs::read_to_string(out.join("trials.json")).unwrap()).unwrap(),
    );
    assert_eq!(
        trials.as_array().unwrap().len(),
        4,
        "this run's 2 pairs only"
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    let plan = &meta["plan"];
    // The second run found both commits built in the job's CARGO_TARGET_DIR.
    for arm in ["baseline", "experiment"] {
        let hit = &plan[arm]["provenance"]["cache_hit"];
        assert_eq!(hit, &json!(run == 2), "run {run}: {plan}");
    }
    assert_eq!(plan["baseline"]["provenance"]["commit"], json!(base));
    assert_eq!(plan["experiment"]["provenance"]["commit"], json!(head));
    // Its shell executor's CI_BUILDS_DIR is the checkout: no clone of the gate is left.
    let left: Vec<_> = std::fs::read_dir(repo)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("perfgate") && n != "perfgate-out")
        .collect();
    assert!(left.is_empty(), "run {run}: {left:?}\n{all}");
}

/// The GitLab example on a merge request whose head is 10% slower: its rules, then two
/// runs in one project directory. The first builds the gate into PERFGATE_XTASK_CACHE,
/// the second runs that binary as it is, with no cargo.
#[test]
fn the_gitlab_example_fails_a_slower_merge_request_and_runs_again() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    // The merge request: the example as the project's pipeline, and a 10% slower build.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/examples/gitlab-ci.yml");
    std::fs::copy(example, repo.join(".gitlab-ci.yml")).unwrap();
    std::fs::write(repo.join("double.json"), behaviour(900.0)).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "slower"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let gate = perfgate_repo(&s);
    // Its rules: a job for a merge request of the project itself only, not for a push nor
    // for a merge request from a fork.
    for (variables, listed) in [
        (vec![], false),
        (mr_variables(&s, 8, &base, &gate), false),
        (mr_variables(&s, 7, &base, &gate), true),
    ] {
        let o = gitlab_ci_local(&s, &repo, &["--list-csv"], &variables);
        assert_eq!(code(&o), 0, "{}", text(&o));
        let jobs = String::from_utf8_lossy(&o.stdout);
        assert_eq!(jobs.contains("\nperfgate;"), listed, "{}", text(&o));
    }
    let cache = s.dir.path().join("gate-cache");
    let mut variables = mr_variables(&s, 7, &base, &gate);
    variables.push(format!("PERFGATE_XTASK_CACHE={}", cache.display()));
    let o = gitlab_ci_local(&s, &repo, &[], &variables);
    assert_gitlab_run(1, &o, &repo, (&base, &head));
    assert!(
        text(&o).contains("perfgate: building the gate at "),
        "{}",
        text(&o)
    );
    let built = cached_gate(&cache);
    let o = gitlab_ci_local(&s, &repo, &[], &variables);
    assert_gitlab_run(2, &o, &repo, (&base, &head));
    // The same file, untouched, and cargo compiled nothing.
    assert_eq!(cached_gate(&cache), built);
    let all = text(&o);
    assert!(
        all.contains("perfgate: the gate at ") && !all.contains("Compiling"),
        "{all}"
    );
    s.assert_no_leftover_processes();
}
