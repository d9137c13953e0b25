//! Repository rules as tests: the README and the guides in docs/ stay true to the code,
//! to CI and to each other.

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

/// The flags of a subcommand's `--help`: option entries are indented by at most six spaces
/// (`  -x, --name`, `      --name`); description lines are indented further.
fn help_flags(command: &[&str]) -> Vec<String> {
    let help = crate::support::gate_cmd()
        .args(command)
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success(), "{command:?} --help");
    let help = String::from_utf8(help.stdout).unwrap();
    help.lines()
        .filter(|l| l.trim_start().starts_with('-') && l.len() - l.trim_start().len() <= 6)
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(',').to_string())
        .filter(|f| !["--help", "--version"].contains(&f.as_str()))
        .collect()
}

/// Whether `text` names `flag` itself, not only a longer flag it begins (`--logs` in
/// `--logs-per-host`).
fn names_flag(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(i, _)| {
        !text[i + flag.len()..]
            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[test]
fn every_flag_of_every_command_is_in_the_reference() {
    // docs/reference.md has one `## <command>` section per subcommand; each flag of the
    // command's `--help` must be named in its own section, and each flag every command
    // takes (clap's global ones, in `cargo xtask --help`) in `## Every command`.
    let reference = repo_file("docs/reference.md");
    let section = |command: &str| -> String {
        let mut lines = reference
            .lines()
            .skip_while(|l| *l != format!("## {command}"));
        assert!(
            lines.next().is_some(),
            "docs/reference.md has no `## {command}` section"
        );
        lines
            .take_while(|l| !l.starts_with("## "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let commands: [&[&str]; 8] = [
        &["bench"],
        &["calibrate"],
        &["compare"],
        &["doctor"],
        &["build"],
        &["baseline", "record"],
        &["baseline", "list"],
        &["baseline", "show"],
    ];
    let bench = help_flags(&["bench"]);
    assert!(bench.len() > 20, "{bench:?}");
    let global = help_flags(&[]);
    assert!(global.contains(&"--color".to_string()), "{global:?}");
    let mut missing = Vec::new();
    let every = section("Every command");
    for flag in global.iter().map(String::as_str).chain(["--version"]) {
        if !names_flag(&every, flag) {
            missing.push(format!("every command's {flag}"));
        }
    }
    for command in commands {
        let name = command.join(" ");
        let text = section(&name);
        for flag in help_flags(command) {
            if !global.contains(&flag) && !names_flag(&text, &flag) {
                missing.push(format!("{name} {flag}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags of `--help` missing from their section of docs/reference.md: {missing:?}"
    );
}

/// GitHub's anchor of a Markdown heading: lower case, punctuation other than `-` and `_`
/// dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks), with GitHub's `-1`,
/// `-2` suffixes for repeated ones.
fn anchors(markdown: &str) -> Vec<String> {
    let (mut bases, mut anchors) = (Vec::new(), Vec::new());
    let mut fenced = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let base = anchor(line.trim_start_matches('#'));
            let n = bases.iter().filter(|b| **b == base).count();
            anchors.push(if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            });
            bases.push(base);
        }
    }
    anchors
}

/// The targets of a Markdown file's inline links (`[text](target)`), outside code blocks.
fn link_targets(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    targets
}

#[test]
fn every_link_of_the_readme_and_the_guides_points_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = vec![root.join("README.md")];
    let mut guides: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guides.sort();
    assert!(guides.len() > 5, "{guides:?}");
    files.extend(guides);
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let name = format!("{}: {target}", file.strip_prefix(root).unwrap().display());
            if !linked.exists() {
                broken.push(format!("{name} (no such file)"));
            } else if !fragment.is_empty() {
                let heads = anchors(&std::fs::read_to_string(&linked).unwrap_or_default());
                if !heads.iter().any(|a| a == fragment) {
                    broken.push(format!("{name} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links: {broken:#?}");
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
    // And the JUnit file says it failed: a skipped case under a failed job would hide why.
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

/// Every key `double.json` takes (a field of the double's `Behaviour`) is in
/// docs/testing.md's table of them, so a newcomer can make the double misbehave.
#[test]
fn every_key_of_the_doubles_json_is_documented() {
    let source = repo_file("tests/double/common.rs");
    let start = source
        .find("pub struct Behaviour {")
        .expect("the double's Behaviour");
    let body = &source[start..start + source[start..].find("\n}\n").unwrap()];
    let keys: Vec<&str> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub ")?.split_once(':'))
        .map(|(name, _)| name)
        .collect();
    assert!(keys.len() > 40, "{keys:?}");
    let docs = repo_file("docs/testing.md");
    let missing: Vec<&&str> = keys
        .iter()
        .filter(|k| !docs.contains(&format!("| `{k}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/testing.md's table: {missing:?}"
    );
}
