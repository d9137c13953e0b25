//! The gate's flags of every command, `--color` (on a pipe and on a pseudo-terminal) and
//! `--version`, and `doctor --json`.

use std::{
    io::Read as _,
    process::{Command, Stdio},
};

use serde_json::json;

use crate::support::{code, text, Sandbox};

/// The colour sequences (SGR, `ESC [ params m`) in `bytes`: what `--color` turns on and
/// off. Other escape sequences (a progress bar's cursor moves, on a terminal) are no colour.
fn colour_sequences(bytes: &[u8]) -> usize {
    let mut count = 0;
    for (i, _) in bytes.iter().enumerate().filter(|(_, b)| **b == 0x1b) {
        let rest = &bytes[i + 1..];
        if rest.first() == Some(&b'[') {
            let params = rest[1..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b';')
                .count();
            count += usize::from(rest.get(1 + params) == Some(&b'm'));
        }
    }
    count
}

/// Runs `cmd` with its stderr on a new pseudo-terminal (a terminal to `isatty`, as an
/// interactive shell's) and stdout on a pipe; what it wrote on the terminal.
fn stderr_on_a_terminal(mut cmd: Command) -> (i32, Vec<u8>) {
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    cmd.stdout(Stdio::null()).stderr(Stdio::from(pty.slave));
    let mut child = cmd.spawn().unwrap();
    // The parent's copy of the terminal's other end goes with `cmd`: reading the master
    // then ends (EIO) once the gate and everything it started have closed theirs.
    drop(cmd);
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = master.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), reader.join().unwrap())
}

/// Where a run's stderr goes.
#[derive(Debug, Clone, Copy)]
enum Stderr {
    Pipe,
    Terminal,
}

/// One-pair `bench` runs of the double in one sandbox, each with its own results dir.
struct Runs {
    s: Sandbox,
    a: std::path::PathBuf,
    b: std::path::PathBuf,
}

impl Runs {
    fn new() -> Runs {
        let s = Sandbox::new();
        let (a, b) = s.ab(json!({}), json!({"tps": 990.0}));
        Runs { s, a, b }
    }

    /// The colour sequences the run `name` wrote to stderr with `flags`, on `stderr`, with
    /// `TERM` and `NO_COLOR` as `env` sets them (unset: `TERM=xterm`, no `NO_COLOR`).
    fn colours(&self, name: &str, stderr: Stderr, flags: &[&str], env: &[(&str, &str)]) -> usize {
        let out = self.s.dir.path().join(name);
        let mut cmd = self
            .s
            .bench_command_out(&self.a, &self.b, &out, &["--trials", "1"]);
        cmd.args(flags).env("TERM", "xterm").env_remove("NO_COLOR");
        cmd.envs(env.iter().copied());
        let (status, err) = match stderr {
            Stderr::Pipe => {
                let o = cmd.output().unwrap();
                (code(&o), o.stderr)
            }
            Stderr::Terminal => stderr_on_a_terminal(cmd),
        };
        let shown = String::from_utf8_lossy(&err);
        assert_eq!(status, 0, "{name}: {shown}");
        // A run that printed nothing would pass every "no colour" case.
        assert!(shown.contains("results: "), "{name}: {shown}");
        colour_sequences(&err)
    }
}

#[test]
fn color_is_auto_always_or_never_and_an_explicit_flag_wins_over_the_environment() {
    use Stderr::{Pipe, Terminal};
    assert_eq!(
        colour_sequences(b"\x1b[32m INFO\x1b[0m \x1b[2K\x1b[1A x"),
        2
    );
    let r = Runs::new();
    let dumb = [("TERM", "dumb")];
    let no_color = [("NO_COLOR", "1")];
    // auto (the default): a terminal gets colours, a pipe none; TERM=dumb or NO_COLOR
    // turns them off on a terminal too. An empty NO_COLOR counts as unset (no-color.org).
    assert!(r.colours("tty", Terminal, &[], &[]) > 0);
    assert!(r.colours("tty-auto", Terminal, &["--color", "auto"], &[]) > 0);
    assert!(r.colours("tty-empty", Terminal, &[], &[("NO_COLOR", "")]) > 0);
    assert_eq!(r.colours("pipe", Pipe, &[], &[]), 0);
    assert_eq!(r.colours("pipe-auto", Pipe, &["--color", "auto"], &[]), 0);
    assert_eq!(r.colours("tty-dumb", Terminal, &[], &dumb), 0);
    assert_eq!(r.colours("tty-no-color", Terminal, &[], &no_color), 0);
    // always: colours into a pipe too, whatever TERM and NO_COLOR say.
    assert!(r.colours("pipe-always", Pipe, &["--color", "always"], &[]) > 0);
    assert!(r.colours("pipe-always-dumb", Pipe, &["--color", "always"], &dumb) > 0);
    let both = [("TERM", "dumb"), ("NO_COLOR", "1")];
    assert!(r.colours("tty-always-both", Terminal, &["--color=always"], &both) > 0);
    // never: none, on a terminal too.
    assert_eq!(
        r.colours("tty-never", Terminal, &["--color", "never"], &[]),
        0
    );
    assert_eq!(r.colours("pipe-never", Pipe, &["--color", "never"], &[]), 0);
}

/// `git args` at the top of the gate's workspace (paths are relative to it), in its own
/// checkout only, as the gate's build asks (`xtask/build.rs`): its trimmed stdout, or
/// `None` when git fails (no git, or no checkout of its own).
fn git(args: &[&str]) -> Option<String> {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let workspace = std::fs::canonicalize(workspace).unwrap();
    Command::new("git")
        .args(args)
        .current_dir(&workspace)
        .env("GIT_CEILING_DIRECTORIES", workspace.parent().unwrap())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_the_gate_was_built_from_and_a_modified_checkout() {
    let o = crate::support::gate_cmd()
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let printed = String::from_utf8(o.stdout).unwrap();
    let line = printed.strip_suffix('\n').unwrap_or(&printed);
    let (version, commit) = line
        .strip_prefix("cargo xtask ")
        .and_then(|l| l.split_once(" ("))
        .unwrap_or_else(|| panic!("{line:?}"));
    assert!(version.starts_with("0."), "{line:?}");
    let Some(head) = git(&["rev-parse", "--short", "HEAD"]) else {
        assert_eq!(commit, "commit unknown)", "{line:?}");
        return;
    };
    let (hash, modified) = match commit.strip_suffix(", modified)") {
        Some(hash) => (hash, true),
        None => (commit.trim_end_matches(')'), false),
    };
    assert_eq!(hash, head, "{line:?}");
    // The gate is compiled again when its own sources change (and then asks git again),
    // so a change there is always reported; a clean checkout never is. (A change to
    // another file alone, a guide, shows once HEAD, the index or the sources move.)
    let changed = |paths: &[&str]| {
        let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
        args.extend(paths);
        !git(&args).unwrap().is_empty()
    };
    if changed(&[
        "xtask/src",
        "xtask/Cargo.toml",
        "fdb/src",
        "Cargo.toml",
        "Cargo.lock",
    ]) {
        assert!(modified, "sources changed, yet {line:?}");
    }
    if !changed(&["."]) {
        assert!(!modified, "nothing changed, yet {line:?}");
    }
}

/// `doctor --json` with `args`: its exit status and the JSON object it printed.
fn doctor_json(args: &[&std::ffi::OsStr]) -> (i32, serde_json::Value) {
    let o = crate::support::gate_cmd().args(args).output().unwrap();
    let report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON object ({e}): {}", text(&o)));
    (code(&o), report)
}

#[test]
fn doctor_json_prints_each_check_and_the_result_and_exits_as_without_it() {
    let s = Sandbox::new();
    let workdir = s.workdir.path().as_os_str();
    // --color before the command, as a script may give it to every command.
    let flags = ["--color", "never", "doctor", "--json", "--workdir"];
    let mut args: Vec<&std::ffi::OsStr> = flags.iter().map(|f| f.as_ref()).collect();
    let (status, report) = doctor_json(&[args.clone(), vec![workdir]].concat());
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["exit_code"], 0);
    let checks = report["checks"].as_array().unwrap();
    let rank = |s: &serde_json::Value| ["ok", "warn", "fail"].iter().position(|r| s == r);
    for check in checks {
        let keys: Vec<&String> = check.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 4, "{check}");
        assert!(
            check["name"].as_str().is_some_and(|n| !n.is_empty()),
            "{check}"
        );
        assert!(rank(&check["status"]).is_some(), "{check}");
        assert!(
            check["value"].as_str().is_some_and(|v| !v.is_empty()),
            "{check}"
        );
        // A hint when there is something to do, null when not: never an empty string.
        let hint = &check["hint"];
        assert!(hint.is_null() || hint.as_str().is_some_and(|h| !h.is_empty()));
        if check["status"] != "ok" {
            assert!(
                !hint.is_null(),
                "a finding that is not ok says what to do: {check}"
            );
        }
    }
    let worst = checks.iter().filter_map(|c| rank(&c["status"])).max();
    assert_eq!(rank(&report["result"]), worst, "{report:#}");
    let work_dir = checks.iter().find(|c| c["name"] == "work dir").unwrap();
    assert_ne!(work_dir["status"], "fail", "{work_dir}");
    let shown = s.workdir.path().display().to_string();
    assert!(
        work_dir["value"].as_str().unwrap().starts_with(&shown),
        "{work_dir}"
    );
    for name in [
        "host",
        "fsync latency",
        "memory cgroup",
        "cores",
        "FDB checkout",
    ] {
        assert!(
            checks.iter().any(|c| c["name"] == name),
            "no {name}: {report:#}"
        );
    }

    // A failed check: a work dir that is a file. Exit 2, as without --json.
    let file = s.dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    args.push(file.as_os_str());
    let (status, report) = doctor_json(&args);
    assert_eq!((status, &report["exit_code"]), (2, &json!(2)), "{report:#}");
    assert_eq!(report["result"], "fail");
    let checks = report["checks"].as_array().unwrap();
    let work_dir = checks.iter().find(|c| c["name"] == "work dir").unwrap();
    assert_eq!(work_dir["status"], "fail", "{report:#}");
    assert_eq!(work_dir["hint"], "give --workdir on a tmpfs");
}

#[test]
fn a_refused_command_line_is_answered_in_the_commands_shape_whole_and_with_its_copies() {
    let s = Sandbox::new();
    // doctor --json answers in doctor's shape, whatever was refused.
    for (args, env, said) in [
        (
            &["doctor", "--json", "--bogus"][..],
            None,
            "unexpected argument '--bogus'",
        ),
        (
            &["doctor", "--json"][..],
            Some(("WORKDIR", "")),
            "WORKDIR is set but empty",
        ),
    ] {
        let mut cmd = crate::support::gate_cmd();
        cmd.args(args);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        assert_eq!(code(&o), 64, "{}", text(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(report["schema_version"], 1, "{report}");
        assert_eq!(
            (&report["result"], &report["exit_code"]),
            (&json!("fail"), &json!(64))
        );
        assert_eq!(report["checks"], json!([]), "{report}");
        assert!(report["error"].as_str().unwrap().contains(said), "{report}");
    }
    // A missing argument is named: clap puts it on the line after its sentence.
    let o = crate::support::gate_cmd()
        .args(["calibrate", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    let error: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        error["error"],
        "the following required arguments were not provided: --build <DIR>"
    );
    // A mistyped flag still writes the copies, in directories not made yet.
    let (md, junit) = (
        s.dir.path().join("new/step.md"),
        s.dir.path().join("ci/junit.xml"),
    );
    let o = crate::support::gate_cmd()
        .args(["bench", "--bogus", "--export-markdown"])
        .arg(&md)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("unexpected argument '--bogus'"), "{md}");
    assert!(std::fs::read_to_string(&junit).unwrap().contains("--bogus"));
    // A bad --color is refused before help, as before any other command.
    for args in [
        &["--color", "bogus", "help"][..],
        &["--color=bogus", "--help"][..],
        &["--color", "bogus", "help", "bench"][..],
    ] {
        let o = crate::support::gate_cmd().args(args).output().unwrap();
        assert_eq!(code(&o), 64, "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("invalid value 'bogus' for '--color"),
            "{}",
            text(&o)
        );
    }
    let o = crate::support::gate_cmd()
        .args(["--color", "never", "help"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn doctor_makes_no_missing_work_dir_and_says_bench_would() {
    let s = Sandbox::new();
    let missing = s.dir.path().join("ram");
    let (status, report) = doctor_json(&[
        "doctor".as_ref(),
        "--json".as_ref(),
        "--workdir".as_ref(),
        missing.as_os_str(),
    ]);
    assert!(!missing.exists(), "doctor made {}", missing.display());
    let checks = report["checks"].as_array().unwrap();
    let work_dir = checks.iter().find(|c| c["name"] == "work dir").unwrap();
    assert_eq!(work_dir["status"], "warn", "{report:#}");
    assert!(
        work_dir["value"]
            .as_str()
            .unwrap()
            .contains("does not exist: bench would create it"),
        "{work_dir}"
    );
    assert_ne!(status, 64, "{report:#}");
}
