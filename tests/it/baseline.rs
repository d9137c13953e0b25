//! Recorded baselines end to end: record from a run, list, show, judge against one.

use std::process::Output;

use serde_json::{json, Value};

use crate::support::{code, text, Sandbox};

fn xtask_in(s: &Sandbox, args: &[&str]) -> Output {
    crate::support::gate_cmd()
        .args(args)
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap()
}

/// A calibrate run of a quiet tree recorded as baseline `release`.
fn recorded(s: &Sandbox) -> std::path::PathBuf {
    let tree = s.tree("release", json!({"tps": 1000.0, "noise_pct": 0.2}));
    let dir = s.dir.path().join("baselines");
    let run = s.dir.path().join("release-run");
    s.calibrate(&tree, &run, 2);
    let o = xtask_in(
        s,
        &[
            "baseline",
            "record",
            "--from",
            run.to_str().unwrap(),
            "--name",
            "release",
            "--baselines-dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("recorded "),
        "{}",
        text(&o)
    );
    dir
}

/// A second calibrate run of the recorded tree, dated 2020-01-01 (another day), added to
/// baseline `release` with `--add-run`; the same run again is refused.
fn add_another_day(s: &Sandbox, dir: &std::path::Path) {
    let run = s.dir.path().join("release-run-day2");
    s.calibrate(&s.dir.path().join("release"), &run, 2);
    crate::support::date_to_another_day(&run);
    let add = || {
        xtask_in(
            s,
            &[
                "baseline",
                "record",
                "--from",
                run.to_str().unwrap(),
                "--name",
                "release",
                "--add-run",
                "--baselines-dir",
                dir.to_str().unwrap(),
            ],
        )
    };
    let o = add();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("release.json")).unwrap()).unwrap();
    assert_eq!(
        b["more_runs"][0]["started_at"], "2020-01-01T00:00:00Z",
        "{b}"
    );
    assert_eq!(b["more_runs"][0]["trials"].as_array().unwrap().len(), 2);
    let o = add();
    assert_ne!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("is in the record already"),
        "{}",
        text(&o)
    );
}

fn against(
    s: &Sandbox,
    dir: &std::path::Path,
    exp: &std::path::Path,
    out: &str,
    extra: &[&str],
) -> Output {
    let mut cmd = crate::support::gate_cmd();
    cmd.args(["bench", "--against-recorded", "release", "--baselines-dir"])
        .arg(dir)
        .arg("--experiment-build")
        .arg(exp);
    // The control arm: the recorded build's tree, unless the test names its own or none.
    if !extra.contains(&"--no-control") && !extra.contains(&"--baseline-build") {
        cmd.arg("--baseline-build")
            .arg(s.dir.path().join("release"));
    }
    cmd.arg("--out")
        .arg(s.dir.path().join(out))
        .args(crate::support::TINY)
        .args(extra)
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap()
}

fn summary(s: &Sandbox, out: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join(out).join("summary.json")).unwrap(),
    )
    .unwrap()
}

#[test]
fn record_list_show_and_judge_a_candidate_against_the_record() {
    let s = Sandbox::new();
    let dir = recorded(&s);
    let file = dir.join("release.json");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(b["schema_version"], 1);
    assert_eq!(b["engine"], "redwood");
    assert_eq!(
        b["trials"].as_array().unwrap().len(),
        2,
        "the experiment arm's trials"
    );
    assert!(b["host_class"].as_str().unwrap().contains(" GiB"));
    // The same gate ran and recorded it: the record names its commit as meta.json does.
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("release-run/meta.json")).unwrap(),
    )
    .unwrap();
    assert!(b["gate_commit"].is_string(), "{b}");
    assert_eq!(b["gate_commit"], meta["gate_commit"]);

    let o = xtask_in(
        &s,
        &["baseline", "list", "--baselines-dir", dir.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("release  redwood quick  2 trials"),
        "{}",
        text(&o)
    );
    let missing = s.dir.path().join("no-baselines");
    let o = xtask_in(
        &s,
        &[
            "baseline",
            "list",
            "--baselines-dir",
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("does not exist"), "{}", text(&o));
    let o = xtask_in(
        &s,
        &[
            "baseline",
            "show",
            "release",
            "--baselines-dir",
            dir.to_str().unwrap(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\"from_results\""),
        "{}",
        text(&o)
    );

    // A candidate as fast as the record passes, paired with a fresh control arm of the
    // recorded build; the record checks the host.
    let same = s.tree("same", json!({"tps": 1000.0, "noise_pct": 0.2, "source_version": "5555555555555555555555555555555555555555"}));
    let o = against(&s, &dir, &same, "pass", &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = &summary(&s, "pass")["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{j}");
    assert_eq!(j["comparison"]["method"], "paired", "{j}");
    let log = std::fs::read_to_string(s.dir.path().join("pass/run.log")).unwrap();
    assert!(
        log.contains("host check (redwood): today's control (the recorded build) ran")
            && log.contains(": consistent"),
        "{log}"
    );
    // Without --baseline-build the control runs the tree the record was made from (the
    // record keeps where it was), not a build from source.
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("release.json")).unwrap()).unwrap();
    let release = s.dir.path().join("release");
    assert_eq!(b["build_tree"], release.to_str().unwrap(), "{b}");
    // `against` names the control's tree; these runs leave it to the record.
    let from_record = |baselines: &std::path::Path, extra: &[&str]| {
        crate::support::gate_cmd()
            .args(["bench", "--against-recorded", "release", "--baselines-dir"])
            .arg(baselines)
            .arg("--experiment-build")
            .arg(&same)
            .args(crate::support::TINY)
            .args(extra)
            .env("WORKDIR", s.workdir.path())
            .output()
            .unwrap()
    };
    let out = s.dir.path().join("record-tree");
    let o = from_record(&dir, &["--out", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("record-tree/meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        meta["plan"]["baseline"]["tree"]["root"],
        release.to_str().unwrap()
    );
    // A recorded tree that is still there but damaged is not silently replaced by a build
    // from source: the plan's check of it names it and what is wrong.
    let damaged = s.dir.path().join("damaged");
    std::fs::create_dir_all(damaged.join("bin")).unwrap();
    let other = s.dir.path().join("damaged-record");
    std::fs::create_dir_all(&other).unwrap();
    let mut rec = b.clone();
    rec["build_tree"] = json!(damaged.to_str().unwrap());
    std::fs::write(other.join("release.json"), rec.to_string()).unwrap();
    let o = from_record(&other, &["--dry-run"]);
    assert_ne!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains(damaged.to_str().unwrap()) && text(&o).contains("fdbserver"),
        "{}",
        text(&o)
    );
    // A record is data, not code: a tree another user controls (their directory, or a
    // binary of theirs in ours) is refused, never run as root.
    let theirs = s.tree("theirs", json!({"tps": 1000.0, "noise_pct": 0.2}));
    std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
    let mine = s.tree("mine", json!({"tps": 1000.0, "noise_pct": 0.2}));
    let server = mine.join("bin/fdbserver");
    std::fs::remove_file(&server).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_fdbserver"), &server).unwrap();
    std::os::unix::fs::lchown(&server, Some(65534), Some(65534)).unwrap();
    for (tree, culprit) in [(&theirs, theirs.clone()), (&mine, server.clone())] {
        rec["build_tree"] = json!(tree.to_str().unwrap());
        std::fs::write(other.join("release.json"), rec.to_string()).unwrap();
        let o = from_record(&other, &["--dry-run"]);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains(culprit.to_str().unwrap())
                && text(&o).contains("owned by uid 65534")
                && text(&o).contains("--baseline-build"),
            "{}",
            text(&o)
        );
    }

    // Without a control (--no-control), a record of one run is refused: nothing in it
    // tells the build's speed from the host's that day (the host's level varies by day).
    let o = against(&s, &dir, &same, "no-control-one-day", &["--no-control"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("baseline release holds one run")
            && text(&o).contains("--name release --add-run"),
        "{}",
        text(&o)
    );
    // Another day's run of the recorded build is added (its start moved to another day in
    // its meta.json: a test cannot wait a day). Then only the experiment arm runs, judged
    // against the days with their variance in the error, said loudly.
    add_another_day(&s, &dir);
    let o = against(&s, &dir, &same, "no-control", &["--no-control"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = &summary(&s, "no-control")["judgements"][0];
    assert_eq!(j["comparison"]["method"], "between-days", "{j}");
    assert_eq!(j["comparison"]["n_baseline"], 2, "two recorded days: {j}");
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .contains("recorded days vs 3 trials, the day-to-day variance included"),
        "{j}"
    );
    assert!(summary(&s, "no-control")["warnings"]
        .to_string()
        .contains("NO CONTROL ARM (--no-control)"));
    // A duet runs the control beside the experiment: without one there is no duet.
    let duet = ["--no-control", "--pairing", "duet"];
    let o = against(&s, &dir, &same, "no-control-duet", &duet);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains(
            "--pairing duet does not go with --no-control (a duet runs the baseline arm beside \
             the experiment)"
        ),
        "{}",
        text(&o)
    );
    let trials = crate::support::trials_of(
        &serde_json::from_str(
            &std::fs::read_to_string(s.dir.path().join("no-control/trials.json")).unwrap(),
        )
        .unwrap(),
    );
    assert!(trials
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["arm"] == "experiment"));

    // The same build on a host 5% faster than on the recording day. Against
    // the record alone that is a candidate 5% faster; paired with today's control it is
    // no change, and the host check says the host changed.
    let fast_host = json!({"tps": 1050.0, "noise_pct": 0.2});
    let control = s.tree("release-today", fast_host.clone());
    let mut candidate = fast_host;
    candidate["source_version"] = json!("7777777777777777777777777777777777777777");
    let candidate = s.tree("candidate", candidate);
    let control_arg = ["--baseline-build", control.to_str().unwrap()];
    let o = against(&s, &dir, &candidate, "host-changed", &control_arg);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let sum = summary(&s, "host-changed");
    let j = &sum["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{j}");
    assert!(
        j["comparison"]["delta_pct"].as_f64().unwrap().abs() < 1.0,
        "{j}"
    );
    let warnings = sum["warnings"].to_string();
    let head = "HOST CHANGED (redwood): today's control (the recorded build) ran +";
    let change: f64 = warnings
        .split_once(head)
        .and_then(|(_, rest)| rest.split_once('%'))
        .and_then(|(v, _)| v.parse().ok())
        .unwrap_or_else(|| panic!("{warnings}"));
    assert!((4.0..6.0).contains(&change), "{warnings}");
    // compare says the same offline.
    let o = crate::support::gate_cmd()
        .arg("compare")
        .arg(s.dir.path().join("host-changed"))
        .arg("--out")
        .arg(s.dir.path().join("host-changed-again"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(summary(&s, "host-changed-again")["warnings"]
        .to_string()
        .contains("HOST CHANGED (redwood)"));
    // A control that is not the recorded build is refused before any trial.
    // The recorded source version built another way is refused too (an -O0 build, 50%
    // slower, would otherwise pass for a host 50% slower).
    let rebuilt = s.tree("release-rebuilt", json!({"tps": 1000.0, "noise_pct": 0.2}));
    let cache = std::fs::read_to_string(rebuilt.join("CMakeCache.txt")).unwrap();
    std::fs::write(
        rebuilt.join("CMakeCache.txt"),
        cache.replace(
            "CMAKE_CXX_FLAGS:STRING=\n",
            "CMAKE_CXX_FLAGS:STRING=-fno-inline\n",
        ),
    )
    .unwrap();
    let rebuilt_arg = ["--baseline-build", rebuilt.to_str().unwrap()];
    let o = against(&s, &dir, &candidate, "rebuilt-control", &rebuilt_arg);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("was configured differently from the build baseline release")
            && text(&o).contains("CMAKE_CXX_FLAGS: (unset) vs '-fno-inline'"),
        "{}",
        text(&o)
    );
    let other = ["--baseline-build", same.to_str().unwrap()];
    let o = against(&s, &dir, &candidate, "wrong-control", &other);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("the control arm (") && text(&o).contains("is source version 5555"),
        "{}",
        text(&o)
    );

    // A slower one is a regression, and below an SLO an SLO violation.
    let slow = s.tree("slow", json!({"tps": 900.0, "noise_pct": 0.2, "source_version": "6666666666666666666666666666666666666666"}));
    let o = against(&s, &dir, &slow, "slow-run", &[]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        summary(&s, "slow-run")["judgements"][0]["verdict"],
        "REGRESSION"
    );
    let o = against(&s, &dir, &same, "slo", &["--slo-tps", "2000"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        summary(&s, "slo")["judgements"][0]["verdict"],
        "SLO-VIOLATION"
    );
    // compare reproduces a recorded-baseline verdict offline.
    let o = crate::support::gate_cmd()
        .arg("compare")
        .arg(s.dir.path().join("slow-run"))
        .arg("--out")
        .arg(s.dir.path().join("slow-again"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        summary(&s, "slow-again")["judgements"][0]["verdict"],
        "REGRESSION"
    );
}

#[test]
fn another_host_class_workload_or_a_broken_file_is_refused() {
    let s = Sandbox::new();
    let dir = recorded(&s);
    let file = dir.join("release.json");
    let original = std::fs::read_to_string(&file).unwrap();
    let exp = s.tree(
        "exp",
        json!({"tps": 1000.0, "source_version": "7777777777777777777777777777777777777777"}),
    );

    let mut b: Value = serde_json::from_str(&original).unwrap();
    // Another machine's record: its host and its class (a class alone edited is refused
    // as an edited record).
    b["host"]["cpu_model"] = json!("Some Other CPU");
    b["host"]["cpus"] = json!(64);
    b["host"]["memory_bytes"] = json!(512u64 << 30);
    b["host_class"] = json!("Some Other CPU x64, 512 GiB");
    std::fs::write(&file, b.to_string()).unwrap();
    let o = against(&s, &dir, &exp, "mismatch", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("recorded on host class 'Some Other CPU x64, 512 GiB'"),
        "{}",
        text(&o)
    );
    let o = against(&s, &dir, &exp, "allowed", &["--allow-host-mismatch"]);
    assert_ne!(code(&o), 64, "{}", text(&o));
    assert!(summary(&s, "allowed")["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("HOST MISMATCH"));

    // A record made on the other kind of work dir (disk against tmpfs measures the work
    // dir, not the build): refused like another host, or a HOST MISMATCH when allowed.
    let mut b: Value = serde_json::from_str(&original).unwrap();
    let tmpfs = b["workdir_tmpfs"].as_bool().unwrap();
    b["workdir_tmpfs"] = json!(!tmpfs);
    std::fs::write(&file, b.to_string()).unwrap();
    let o = against(&s, &dir, &exp, "workdir-kind", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let kind = |t: bool| if t { "a RAM disk (tmpfs)" } else { "a disk" };
    assert!(
        text(&o).contains(&format!(
            "recorded with its work dir on {}, this run's is on {}",
            kind(!tmpfs),
            kind(tmpfs)
        )),
        "{}",
        text(&o)
    );
    let o = against(
        &s,
        &dir,
        &exp,
        "workdir-allowed",
        &["--allow-host-mismatch"],
    );
    assert_ne!(code(&o), 64, "{}", text(&o));
    assert!(summary(&s, "workdir-allowed")["warnings"][0]
        .as_str()
        .unwrap()
        .contains("HOST MISMATCH (--allow-host-mismatch): baseline release was recorded with its work dir"));

    // A record made with a knob this run lacks (page_cache_4k=4294967296): knobs change
    // what is measured.
    let mut b: Value = serde_json::from_str(&original).unwrap();
    b["knobs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "page_cache_4k", "value": "4294967296", "source": "user"}));
    std::fs::write(&file, b.to_string()).unwrap();
    let o = against(&s, &dir, &exp, "knobs", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains(
            "different knobs (page_cache_4k: 4294967296 in the record, unset in this run)"
        ),
        "{}",
        text(&o)
    );
    let knob = ["--experiment-knob", "page_cache_4k=4294967296"];
    let o = against(&s, &dir, &exp, "knobs-same", &knob);
    assert_ne!(code(&o), 64, "{}", text(&o));
    let warnings = summary(&s, "knobs-same")["warnings"].to_string();
    assert!(!warnings.contains("MISMATCH"), "{warnings}");
    // Today's control arm is the recorded build as it was recorded: with the record's
    // user knobs, though the user gave them to the experiment alone.
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("knobs-same/meta.json")).unwrap(),
    )
    .unwrap();
    let trials = meta["plan"]["trials"].as_array().unwrap();
    let control: Vec<&Value> = trials.iter().filter(|t| t["arm"] == "baseline").collect();
    assert!(!control.is_empty(), "{trials:?}");
    for t in control {
        assert!(
            t["knobs"].to_string().contains("page_cache_4k"),
            "a control trial without the record's knob: {t}"
        );
    }
    let o = against(&s, &dir, &exp, "knobs-allowed", &["--allow-knob-mismatch"]);
    assert_ne!(code(&o), 64, "{}", text(&o));
    assert!(summary(&s, "knobs-allowed")["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("KNOB MISMATCH"));

    // The knob the gate adds on a RAM disk, given by the user too, is the same knob (not a
    // record that "ran with []"); on a disk it is a real difference.
    std::fs::write(&file, &original).unwrap();
    let aio = ["--knob", "disable_posix_kernel_aio=1"];
    let o = against(&s, &dir, &exp, "aio", &aio);
    if tmpfs {
        assert_ne!(code(&o), 64, "{}", text(&o));
    } else {
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains("disable_posix_kernel_aio: unset in the record, 1 in this run"),
            "{}",
            text(&o)
        );
    }

    let o = against(&s, &dir, &exp, "workload", &["--profile", "standard"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("another workload than this run's (")
            && text(&o).contains("profile \"quick\" vs \"standard\""),
        "{}",
        text(&o)
    );

    std::fs::write(&file, original.replacen("\"tps\":", "\"tsp\":", 1)).unwrap();
    let o = against(&s, &dir, &exp, "corrupt", &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("release.json does not match the format") && text(&o).contains("tsp"),
        "{}",
        text(&o)
    );

    let mut b: Value = serde_json::from_str(&original).unwrap();
    b["schema_version"] = json!(2);
    std::fs::write(&file, b.to_string()).unwrap();
    let o = against(&s, &dir, &exp, "future", &[]);
    assert!(
        text(&o).contains("schema_version 2, newer than the 1"),
        "{}",
        text(&o)
    );
    let o = xtask_in(
        &s,
        &["baseline", "list", "--baselines-dir", dir.to_str().unwrap()],
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("UNREADABLE"),
        "{}",
        text(&o)
    );

    let o = against(
        &s,
        &dir,
        &exp,
        "missing",
        &["--baselines-dir", "/nonexistent"],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
}

#[test]
fn recording_from_a_dir_that_is_not_a_run_is_a_usage_error() {
    let s = Sandbox::new();
    let not_a_run = s.dir.path().join("empty");
    std::fs::create_dir_all(&not_a_run).unwrap();
    for (from, why) in [
        (not_a_run.clone(), "holds no meta.json"),
        (s.dir.path().join("nowhere"), "does not exist"),
    ] {
        let o = xtask_in(
            &s,
            &[
                "baseline",
                "record",
                "--from",
                from.to_str().unwrap(),
                "--baselines-dir",
                s.dir.path().join("b").to_str().unwrap(),
            ],
        );
        // As compare says it: the user named the wrong directory (64), not a failed run.
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(why), "{}", text(&o));
        assert!(
            text(&o).contains("results dir of a bench or calibrate run"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn outside_its_workspace_the_gate_uses_its_own() {
    // A CI job runs the gate from the FDB checkout, which has no Cargo.toml: a workspace
    // looked for from there is not found and no arm could be built, so the gate uses the
    // workspace it was built in: its baselines and target dir.
    let s = Sandbox::new();
    let o = crate::support::gate_cmd()
        .args(["baseline", "list"])
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let own = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("baselines");
    // A clean checkout has no records: the list names the directory it read.
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        !listed.starts_with("no baselines in ") || listed.contains(&own.display().to_string()),
        "{}",
        text(&o)
    );
    let o = crate::support::gate_cmd()
        .args(["calibrate", "--build", "/nonexistent", "--baselines-dir"])
        .arg(s.dir.path())
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("/nonexistent does not exist"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_record_whose_class_was_edited_to_this_hosts_is_refused() {
    // The class follows from the recorded host: a host_class that is this host's, with the
    // recorded host another machine, means the record was edited.
    let s = Sandbox::new();
    let dir = recorded(&s);
    let file = dir.join("release.json");
    let mut b: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    b["host"]["cpu_model"] = json!("AMD EPYC 7R13");
    std::fs::write(&file, b.to_string()).unwrap();
    let exp = s.tree(
        "exp",
        json!({"tps": 1000.0, "source_version": "7777777777777777777777777777777777777777"}),
    );
    let o = against(&s, &dir, &exp, "edited", &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("the record was edited"), "{}", text(&o));
}

/// Control characters as a hostile file would hold them: clear the screen, retitle the
/// terminal (OSC ... BEL), a C1 CSI, a bidirectional override and a carriage return.
const NASTY: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{202e}txt.exe\r";

/// Fails unless `text` (`what`) holds none of [`NASTY`]'s characters as they are, and
/// holds them written as `\u{..}` when `escaped`.
#[track_caller]
fn assert_printable(what: &str, text: &str, escaped: bool) {
    let raw: Vec<char> = text
        .chars()
        .filter(|c| "\u{1b}\u{7}\u{9b}\u{202e}\r".contains(*c))
        .collect();
    assert!(raw.is_empty(), "{what} holds {raw:?}: {text}");
    if escaped {
        assert!(
            text.contains("\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{9b}31m\\u{202e}txt.exe"),
            "{what}: {text}"
        );
    }
}

#[test]
fn text_read_back_from_records_and_saved_runs_reaches_people_escaped() {
    let s = Sandbox::new();
    let dir = recorded(&s);
    let file = dir.join("release.json");
    let original = std::fs::read_to_string(&file).unwrap();
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut b: Value = serde_json::from_str(&original).unwrap();
        f(&mut b);
        std::fs::write(&file, b.to_string()).unwrap();
    };
    // `baseline list` and `show` print what the record says, and why they cannot read it.
    let d = dir.to_str().unwrap();
    let list = ["baseline", "list", "--baselines-dir", d];
    let show = ["baseline", "show", "release", "--baselines-dir", d];
    edit(&|b| b["build"]["release"] = json!(format!("FoundationDB 8.0{NASTY}")));
    let o = xtask_in(&s, &show);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_printable("show", &text(&o), false);
    assert!(text(&o).contains("8.0\\u001b[2J"), "{}", text(&o));
    edit(&|b| b["engine"] = json!(NASTY));
    for args in [&list[..], &show[..]] {
        let o = xtask_in(&s, args);
        assert_printable(args[1], &text(&o), false);
        assert!(text(&o).contains("\\u{1b}[2J"), "{}", text(&o));
    }
    // A refusal quoting the record: its compiler field, then a knob value.
    edit(&|b| b["build_config"]["cxx_compiler"] = json!(format!("/usr/bin/c++{NASTY}")));
    let exp = s.tree(
        "candidate",
        json!({"source_version": "7777777777777777777777777777777777777777"}),
    );
    let o = against(&s, &dir, &exp, "compiler", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("CMAKE_CXX_COMPILER"), "{}", text(&o));
    assert_printable("the compiler refusal", &text(&o), true);
    edit(&|b| {
        let knob =
            json!({"name": "knob_page_cache_4k", "value": format!("1{NASTY}"), "source": "user"});
        b["knobs"].as_array_mut().unwrap().push(knob);
    });
    let o = against(&s, &dir, &exp, "knob", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert_printable("the knob refusal", &text(&o), true);
    std::fs::write(&file, &original).unwrap();

    // compare: a trial's error and a warning of the saved run, into the table, summary.md,
    // the --export-markdown copy and junit.xml.
    let run = s.dir.path().join("release-run");
    let trials_path = run.join("trials.json");
    let mut trials: Value =
        serde_json::from_str(&std::fs::read_to_string(&trials_path).unwrap()).unwrap();
    trials["trials"][3]["outcome"] = json!("error");
    trials["trials"][3]["error"] = json!(format!("mako crashed: {NASTY}"));
    std::fs::write(&trials_path, trials.to_string()).unwrap();
    let meta_path = run.join("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["plan"]["warnings"] = json!([format!("a warning: {NASTY}")]);
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let (out, md) = (s.dir.path().join("cmp"), s.dir.path().join("step.md"));
    let o = crate::support::gate_cmd()
        .arg("compare")
        .arg(&run)
        .arg("--out")
        .arg(&out)
        .arg("--export-markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_printable("compare's output", &text(&o), true);
    for (what, path) in [
        ("summary.md", out.join("summary.md")),
        ("--export-markdown", md),
        ("junit.xml", out.join("junit.xml")),
    ] {
        assert_printable(what, &std::fs::read_to_string(path).unwrap(), true);
    }
    // --json gives scripts the same values, in JSON escapes the terminal shows as text.
    let o = crate::support::gate_cmd()
        .args(["compare", "--json", "--out"])
        .arg(s.dir.path().join("cmp-json"))
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_printable("compare --json", &text(&o), false);
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        summary["warnings"][0].as_str().unwrap().ends_with(NASTY),
        "{summary}"
    );
    // A saved run compare refuses, its refusal quoting the file.
    trials["trials"][3]["outcome"] = json!("measured");
    std::fs::write(&trials_path, trials.to_string()).unwrap();
    let o = crate::support::compare_only(&run);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("is measured but holds an error"),
        "{}",
        text(&o)
    );
    assert_printable("compare's refusal", &text(&o), true);

    // report.html and the terminal of a run whose tree's CMakeCache.txt says the same.
    let a = s.tree("nasty", json!({}));
    let cache = a.join("CMakeCache.txt");
    let text_of = std::fs::read_to_string(&cache).unwrap();
    std::fs::write(
        &cache,
        format!("{text_of}CMAKE_CXX_COMPILER:FILEPATH=/usr/bin/c++{NASTY}\n"),
    )
    .unwrap();
    let o = s.bench_in("nasty-run", &a, &exp, &["--trials", "2"]);
    assert!([0, 1].contains(&code(&o)), "{}", text(&o));
    assert_printable("bench's output", &text(&o), false);
    let html = std::fs::read_to_string(s.dir.path().join("nasty-run/report.html")).unwrap();
    assert_printable("report.html", &html, true);
}

/// A record is written only when it reads back: a saved run whose fields the record
/// reader refuses (a control character in a source version) is refused by `record`,
/// saying why, rather than written and then listed as UNREADABLE.
#[test]
fn a_run_that_would_make_an_unreadable_record_is_not_recorded() {
    let s = Sandbox::new();
    let dir = recorded(&s);
    let run = s.dir.path().join("release-run");
    let meta_path = run.join("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    for arm in ["baseline", "experiment"] {
        let v = &mut meta["plan"][arm]["version"]["source_version"];
        *v = json!(format!("{}{NASTY}", v.as_str().unwrap()));
    }
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let args = [
        "baseline",
        "record",
        "--from",
        run.to_str().unwrap(),
        "--name",
        "again",
        "--baselines-dir",
        dir.to_str().unwrap(),
    ];
    let o = xtask_in(&s, &args);
    assert_ne!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("cannot be recorded") && text(&o).contains("not a git commit"),
        "{}",
        text(&o)
    );
    assert!(!dir.join("again.json").exists());
    assert_printable("the refusal", &text(&o), true);
}
