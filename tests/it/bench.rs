//! `cargo xtask bench` end to end: verdicts, timeouts, errors, interrupts, results dir.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::support::{code, read_junit, text, Sandbox};

#[test]
fn equal_arms_are_measured_and_every_result_file_is_written() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 995.0}));
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let j = &summary["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{summary}");
    assert_eq!(j["engine"], "redwood");
    assert_eq!(j["baseline"]["tps"], json!([1000.0, 1000.0]));
    assert!(
        (j["tps_delta_pct"].as_f64().unwrap() + 0.5).abs() < 1e-9,
        "{j}"
    );

    // Trials ran A B B A, each with a fresh cluster and the tmpfs knob.
    let trials = s.read_json("trials.json");
    let arms: Vec<&str> = trials
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["arm"].as_str().unwrap())
        .collect();
    assert_eq!(arms, ["baseline", "experiment", "experiment", "baseline"]);
    let t0 = &trials[0];
    assert_eq!(t0["outcome"], "measured");
    let phases: Vec<&str> = t0["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        [
            "cluster-start",
            "configure",
            "available",
            "mako-build",
            "mako-run",
            "teardown"
        ]
    );
    if s.workdir_is_tmpfs() {
        assert_eq!(t0["knobs"][0]["name"], "disable_posix_kernel_aio");
        assert_eq!(t0["knobs"][0]["source"], "auto");
    }
    // Artifacts were harvested off the work dir, and the work dir was wiped.
    let art = s.out().join(t0["artifacts"].as_str().unwrap());
    for f in [
        "mako-run.txt",
        "mako.json",
        "mako-sketch.json",
        "mako-build.txt",
        "fdbcli-configure.txt",
        "status.json",
    ] {
        assert!(art.join(f).is_file(), "{f} missing in {}", art.display());
    }
    let traces = std::fs::read_dir(&art)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("storage-"));
    let storage_dir = traces.map(|e| e.path()).next().expect("storage trace dir");
    assert!(std::fs::read_dir(storage_dir).unwrap().count() > 0);
    assert_eq!(
        std::fs::read_dir(s.workdir.path()).unwrap().count(),
        0,
        "work dir not wiped"
    );

    let meta = s.read_json("meta.json");
    assert_eq!(
        meta["plan"]["baseline"]["version"]["source_version"],
        "0000000000000000000000000000000000000001"
    );
    assert_eq!(meta["plan"]["workdir"]["tmpfs"], s.workdir_is_tmpfs());
    let tsv = std::fs::read_to_string(s.out().join("results.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), 5, "{tsv}");
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<testcase name="tps" classname="perfgate.redwood">"#),
        "{junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    let parsed = read_junit(&s.out().join("junit.xml"));
    assert_eq!(parsed[0]["name"], "redwood");
    assert_eq!(parsed[0]["cases"][0]["classname"], "perfgate.redwood");
    assert_eq!(parsed[0]["cases"][0]["results"], json!([]));
    assert_eq!(parsed[0]["cases"][0]["properties"]["verdict"], "MEASURED");
    assert!(std::fs::read_to_string(s.out().join("run.log"))
        .unwrap()
        .contains("trial 4: redwood baseline #2"));
    s.assert_no_leftover_processes();
}

#[test]
fn slower_experiment_is_a_regression_with_exit_1_and_a_junit_failure() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 900.0}));
    let junit_copy = s.dir.path().join("ci/junit.xml");
    std::fs::create_dir_all(junit_copy.parent().unwrap()).unwrap();
    let o = s.bench(&a, &b, &["--junit", junit_copy.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "REGRESSION"
    );
    let junit = std::fs::read_to_string(&junit_copy).unwrap();
    assert!(junit.contains(r#"type="REGRESSION""#), "{junit}");
    assert!(
        junit.contains(r#"<property name="tps_delta_pct" value="-10.00"/>"#),
        "{junit}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("REGRESSION"));
    let case = &read_junit(&junit_copy)[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Failure", "{case}");
    assert_eq!(case["results"][0]["type"], "REGRESSION");
    assert_eq!(case["properties"]["tps_delta_pct"], "-10.00");
    assert!(
        case["system_out"]
            .as_str()
            .unwrap()
            .contains("tps_delta_pct=-10.00"),
        "{case}"
    );
}

#[test]
fn slo_floors_come_from_the_flag_the_environment_or_slo_json() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 1000.0}));
    std::fs::create_dir_all(s.dir.path().join("baselines")).unwrap();
    std::fs::write(
        s.dir.path().join("baselines/slo.json"),
        r#"{"schema_version": 1, "tps": {"quick": {"redwood": 1200.0}}}"#,
    )
    .unwrap();
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "SLO-VIOLATION", "{j}");
    assert_eq!(j["criteria"]["slo_tps"], 1200.0);
    assert!(s.read_json("meta.json")["plan"]["config"]["slo_sources"][0]
        .as_str()
        .unwrap()
        .contains("slo.json"));
    // The environment beats the file, the flag beats both.
    let mut cmd = s.bench_command_out(&a, &b, &s.dir.path().join("env"), &["--trials", "2"]);
    let o = cmd.env("PERFGATE_SLO_TPS_REDWOOD", "900").output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let mut cmd = s.bench_command_out(
        &a,
        &b,
        &s.dir.path().join("flag"),
        &["--trials", "2", "--slo-tps", "1100"],
    );
    let o = cmd.env("PERFGATE_SLO_TPS_REDWOOD", "900").output().unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
}

#[test]
fn experiment_below_the_slo_is_an_slo_violation() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 1000.0}));
    let o = s.bench(&a, &b, &["--slo-tps", "1500"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "SLO-VIOLATION", "{j}");
    let case = &read_junit(&s.out().join("junit.xml"))[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Failure", "{case}");
    assert_eq!(case["results"][0]["type"], "SLO-VIOLATION");
}

#[test]
fn configure_hang_is_a_timeout_of_that_phase_and_leaves_no_process() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"configure_hang": true}));
    let o = s.bench(&a, &b, &["--timeout-configure", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "TIMEOUT", "{j}");
    let trials = s.read_json("trials.json");
    assert_eq!(trials[1]["outcome"], "timeout");
    assert_eq!(trials[1]["failed_phase"], "configure");
    // The phases before it and the teardown are still timed.
    let phases: Vec<&str> = trials[1]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["cluster-start", "configure", "teardown"]);
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<error message="TIMEOUT: trial 2 (experiment #1): configure"#),
        "{junit}"
    );
    let case = &read_junit(&s.out().join("junit.xml"))[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Error", "{case}");
    assert_eq!(case["results"][0]["type"], "TIMEOUT");
    s.assert_no_leftover_processes();
}

#[test]
fn missing_mako_is_a_clear_error_before_any_trial() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    std::fs::remove_file(b.join("bin/mako")).unwrap();
    let junit = s.dir.path().join("junit.xml");
    let o = s.bench(&a, &b, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the experiment build tree"), "{err}");
    assert!(err.contains("is not usable"), "{err}");
    // CI still gets a JUnit file, with the error in it.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"type="ERROR""#) && xml.contains("bin/mako is missing"),
        "{xml}"
    );
    let case = &read_junit(&junit)[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Error", "{case}");
    assert_eq!(case["results"][0]["type"], "ERROR");
    assert!(err.contains("bin/mako is missing"), "{err}");
    assert!(err.contains("-DBUILD_MAKO=ON"), "{err}");
    assert!(
        !s.out().exists(),
        "no results dir for a run that never started"
    );
}

#[test]
fn same_build_and_knobs_is_refused_unless_allow_same() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = s.bench(&a, &a, &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--allow-same"),
        "{}",
        text(&o)
    );
    // A knob A/B on one build is a real A/B.
    let o = s.bench(&a, &a, &["--experiment-knob", "page_cache_4k=1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trials = s.read_json("trials.json");
    assert_eq!(trials[1]["arm"], "experiment");
    assert!(trials[1]["knobs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"] == "page_cache_4k"));
}

#[test]
fn aa_run_with_allow_same_is_measured() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"noise_pct": 1.0}));
    let o = s.bench(&a, &a, &["--allow-same"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn usage_errors_exit_64() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--trials", "zero"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let o = s.bench(&a, &b, &["--knob", "no_equals_sign"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NAME=VALUE"));
    // An empty WORKDIR is named as such, not as a --workdir the user never typed.
    let o = s
        .bench_command(&a, &b, &[])
        .env("WORKDIR", "")
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("WORKDIR is set but empty (it stands for --workdir)"),
        "{}",
        text(&o)
    );
}

#[test]
fn overriding_the_tmpfs_knob_makes_the_server_fail_and_the_trial_an_error() {
    let s = Sandbox::new();
    if !s.workdir_is_tmpfs() {
        return; // the double only refuses tmpfs data dirs
    }
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--experiment-knob", "disable_posix_kernel_aio=0"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR", "{j}");
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("cluster-start") && reason.contains("O_DIRECT"),
        "{reason}"
    );
    // The failed cluster was still torn down and its trace files kept.
    let trial = &s.read_json("trials.json")[1];
    let phases: Vec<&str> = trial["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["cluster-start", "teardown"]);
    let art = s.out().join(trial["artifacts"].as_str().unwrap());
    let traces: Vec<_> = std::fs::read_dir(&art)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .collect();
    // Each server writes its trace file before it fails; the one that failed first is
    // kept for sure, the others may have been stopped before writing theirs.
    assert!(
        !traces.is_empty(),
        "no trace file kept in {}",
        art.display()
    );
}

#[test]
fn mako_timeouts_make_the_measurement_invalid() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_timeouts": 7}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR");
    assert!(j["reason"].as_str().unwrap().contains("7 timeouts"), "{j}");
    // The invalid report is still kept with the trial.
    assert_eq!(s.read_json("trials.json")[1]["report"]["total_timeouts"], 7);
}

#[test]
fn storage_server_crash_during_the_run_is_caught_promptly() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({}),
        json!({"storage_crash_after_ms": 300, "time_scale": 1.0}),
    );
    // The double's mako does not notice the crash and would report success after its
    // run, so only the gate's own liveness checks during the trial can fail it.
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_json("trials.json");
    let err = trials[1]["error"].as_str().unwrap();
    assert!(
        err.contains("fdbserver storage") && err.contains("exited"),
        "{err}"
    );
    assert!(err.contains("crashing on purpose"), "{err}");
    assert!(err.contains("last trace errors: Crash"), "{err}");
    s.assert_no_leftover_processes();
}

#[test]
fn ctrl_c_tears_down_keeps_results_and_exits_2() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"mako_run_hang": true}), json!({}));
    let mut child = s.spawn_until_mako_runs(&a, &b);
    assert!(
        !s.leftover_processes().is_empty(),
        "the cluster should be running"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2));
    s.assert_no_leftover_processes();
    let trials = s.read_json("trials.json");
    assert_eq!(
        trials.as_array().unwrap().len(),
        1,
        "no trial after the interrupt"
    );
    assert_eq!(trials[0]["outcome"], "interrupted");
    assert_eq!(s.read_json("summary.json")["interrupted"], true);
    // The killed mako's sample directory and shared memory were removed.
    let pids = std::fs::read_to_string(a.join("double-mako-pids")).unwrap();
    for pid in pids.lines() {
        assert!(!Path::new(&format!("/tmp/makoTemp{pid}")).exists());
        assert!(!Path::new(&format!("/dev/shm/mako{pid}")).exists());
    }
}

/// The reaper (`xtask __reap`) watching the gate whose run dirs are under `workdir`.
fn reaper_of(workdir: &Path) -> Option<i32> {
    let needle = workdir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd);
        (cmd.contains("__reap") && cmd.contains(&needle)).then_some(pid)
    })
}

#[test]
fn after_a_sigkill_of_the_gate_its_reaper_ends_every_process_of_the_run() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"mako_run_hang": true, "mako_forks_worker": true}),
        json!({}),
    );
    let mut gate = s.spawn_until_mako_runs(&a, &b);
    assert!(
        reaper_of(s.workdir.path()).is_some(),
        "a reaper watches the gate"
    );
    gate.kill().unwrap(); // SIGKILL: no handler, no teardown
    gate.wait().unwrap();
    // Servers and mako die by the parent-death signal, mako's forked worker by the reaper.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.leftover_processes().is_empty()
        || std::fs::read_dir(s.workdir.path()).unwrap().count() > 0
    {
        assert!(
            Instant::now() < deadline,
            "{:?} {:?}",
            s.leftover_processes(),
            std::fs::read_dir(s.workdir.path())
                .unwrap()
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The reaper logs what it did after doing it, then exits: read the log after that.
    while reaper_of(s.workdir.path()).is_some() {
        assert!(Instant::now() < deadline, "the reaper exits when done");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    assert!(
        log.contains("reaper: the gate exited without tearing down: killed")
            && log.contains("--double-worker"),
        "{log}"
    );
}

#[test]
fn after_a_sigkill_of_the_gate_and_its_reaper_the_next_run_cleans_up() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"mako_run_hang": true, "mako_forks_worker": true}),
        json!({}),
    );
    let mut gate = s.spawn_until_mako_runs(&a, &b);
    // Both killed at once (e.g. the OOM killer, or `kill -9` of the whole session).
    let reaper = reaper_of(s.workdir.path()).expect("a reaper watches the gate");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(reaper),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    gate.kill().unwrap();
    gate.wait().unwrap();
    // The servers and mako die with the gate (parent-death signal); the worker lingers.
    let deadline = Instant::now() + Duration::from_secs(30);
    let is_server = |p: &String| p.contains("/bin/fdbserver") || p.contains("--mode run");
    while s.leftover_processes().iter().any(is_server) {
        assert!(Instant::now() < deadline, "{:?}", s.leftover_processes());
        std::thread::sleep(Duration::from_millis(50));
    }
    let worker = |s: &Sandbox| {
        s.leftover_processes()
            .into_iter()
            .filter(|p| p.contains("--double-worker"))
            .count()
    };
    assert_eq!(worker(&s), 1, "{:?}", s.leftover_processes());
    let stale: Vec<_> = std::fs::read_dir(s.workdir.path())
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(stale.len(), 1, "the killed gate's run dir is left");
    // A directory that merely looks like a run dir (no gate's lock file) is not touched.
    let foreign = s.workdir.path().join("perfgate-2");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("important.txt"), "keep").unwrap();

    // The next gate on this work dir ends the worker and removes the stale dir.
    let (c, d) = (
        s.tree("c", json!({})),
        s.tree(
            "d",
            json!({"source_version": "3333333333333333333333333333333333333333"}),
        ),
    );
    let o = s.bench_in("second", &c, &d, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("died without cleaning up: killed 1 leftover"),
        "{}",
        text(&o)
    );
    assert_eq!(worker(&s), 0, "{:?}", s.leftover_processes());
    let left: Vec<_> = std::fs::read_dir(s.workdir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(
        left,
        std::slice::from_ref(&foreign),
        "only the foreign directory is left"
    );
    assert!(foreign.join("important.txt").is_file());
}

#[test]
fn slow_cluster_start_past_its_bound_is_a_timeout() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"server_start_delay_ms": 30000}), json!({}));
    let o = s.bench(&a, &b, &["--timeout-cluster-start", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_json("trials.json");
    assert_eq!(trials[0]["failed_phase"], "cluster-start", "{trials}");
    assert_eq!(trials[0]["outcome"], "timeout");
    s.assert_no_leftover_processes();
}

#[test]
fn disk_backed_work_dir_is_warned_about_and_recorded() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let disk = s.dir.path().join("disk-workdir");
    let o = s.bench(&a, &b, &["--workdir", disk.to_str().unwrap()]);
    if s.read_json("meta.json")["plan"]["workdir"]["tmpfs"] == true {
        return; // the temp dir is itself on tmpfs on this host
    }
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("IS NOT A RAM DISK"),
        "{}",
        text(&o)
    );
    let summary = s.read_json("summary.json");
    assert!(
        summary["warnings"][0]
            .as_str()
            .unwrap()
            .contains("IS NOT A RAM DISK"),
        "{summary}"
    );
    // Off tmpfs the AIO knob is not needed and not added.
    assert_eq!(s.read_json("trials.json")[0]["knobs"], json!([]));
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
    assert!(!s.out().exists());
}

#[test]
fn a_server_that_ignores_sigterm_is_killed_and_the_teardown_is_a_timeout() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"server_ignores_sigterm": true}));
    let o = s.bench(&a, &b, &["--timeout-teardown", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_json("trials.json");
    assert_eq!(trials[0]["outcome"], "measured", "{trials}");
    assert_eq!(trials[1]["outcome"], "timeout");
    assert_eq!(trials[1]["failed_phase"], "teardown");
    assert!(
        trials[1]["error"]
            .as_str()
            .unwrap()
            .contains("ignored SIGTERM and were killed"),
        "{trials}"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn a_non_empty_results_dir_or_unwritable_junit_path_is_refused_before_any_trial() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    std::fs::create_dir_all(s.out()).unwrap();
    std::fs::write(s.out().join("stale.txt"), "earlier run").unwrap();
    let junit = s.dir.path().join("usage-junit.xml");
    let o = s.bench(&a, &b, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not an empty directory"));
    // CI still gets a JUnit file saying why nothing ran.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"type="ERROR""#) && xml.contains("is not an empty directory"),
        "{xml}"
    );
    std::fs::remove_file(s.out().join("stale.txt")).unwrap();
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = s.bench(
        &a,
        &b,
        &["--junit", file.join("junit.xml").to_str().unwrap()],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a-file: "),
        "{}",
        text(&o)
    );
    assert!(!s.out().join("meta.json").exists(), "no trial may run");
    // The JUnit file may go inside the results dir, which does not exist yet, also in a
    // subdirectory; and a run that failed at once (its error JUnit file the only thing
    // there) does not block the corrected rerun.
    std::fs::remove_dir_all(s.out()).unwrap();
    let junit = s.out().join("ci/junit.xml");
    let j = junit.to_str().unwrap();
    let o = s.bench(&a, &b, &["--junit", j, "--procs", "0"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains(r#"type="ERROR""#));
    let o = s.bench(&a, &b, &["--junit", j]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<testcase"));
}

#[test]
fn a_knob_fdbserver_does_not_know_fails_the_trial_naming_it() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = s.bench(&a, &a, &["--experiment-knob", "page_cahce_4k=1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "ERROR");
    let reason = j["reason"].as_str().unwrap();
    assert!(reason.contains("unknown knob 'page_cahce_4k'"), "{reason}");
    let o = s.bench_in(
        "bad-value",
        &a,
        &a,
        &["--experiment-knob", "page_cache_4k=lots"],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("invalid value 'lots' for knob 'page_cache_4k'"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_idle_storage_server_is_not_cpu_bound_a_note_or_with_the_flag_an_error() {
    let s = Sandbox::new();
    // The double's storage server sleeps; a 3 s run leaves a 1 s measurement window.
    let slow = json!({"time_scale": 0.5});
    let (a, b) = s.ab(slow.clone(), slow);
    let o = s.bench(&a, &b, &["--require-cpu-bound"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trial = &s.read_json("trials.json")[0];
    assert_eq!(trial["cpu_bound"], false, "{trial}");
    assert!(trial["storage_cpu_cores"].as_f64().unwrap() < 0.85);
    assert!(
        trial["error"].as_str().unwrap().contains("not CPU-bound"),
        "{trial}"
    );

    let o = s.bench_in("without-flag", &a, &b, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("trials not CPU-bound"),
        "{}",
        text(&o)
    );
    let junit = std::fs::read_to_string(s.dir.path().join("without-flag/junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<property name="baseline_trials_not_cpu_bound" value="1"/>"#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"name="experiment_workdir_peak_bytes""#),
        "{junit}"
    );
}

#[test]
fn noise_beyond_the_tolerance_is_inconclusive_and_fails_only_under_strict() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"noise_pct": 10.0}),
        json!({"noise_pct": 10.0, "tps": 990.0}),
    );
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "INCONCLUSIVE", "{j}");
    assert!(j["comparison"]["mde_pct"].as_f64().unwrap() > 2.0, "{j}");
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(junit.contains("<skipped message=\"INCONCLUSIVE"), "{junit}");
    let case = &read_junit(&s.out().join("junit.xml"))[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Skipped", "{case}");
    assert!(
        case["results"][0]["message"]
            .as_str()
            .unwrap()
            .contains("MDE"),
        "{case}"
    );
    // The same trees anew (the double's noise follows each tree's run count).
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"noise_pct": 10.0}),
        json!({"noise_pct": 10.0, "tps": 990.0}),
    );
    let o = s.bench(&a, &b, &["--trials", "2", "--strict"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "INCONCLUSIVE"
    );
}

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

#[test]
fn compare_rejudges_a_saved_run_offline_with_the_same_or_another_tolerance() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 950.0}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let compare = |extra: &[&str], out: &str| {
        std::process::Command::new(crate::support::xtask())
            .arg("compare")
            .arg(s.out())
            .arg("--out")
            .arg(s.dir.path().join(out))
            .args(extra)
            .output()
            .unwrap()
    };
    // The same criteria reproduce the verdict and its numbers, running nothing.
    let o = compare(&[], "same");
    assert_eq!(code(&o), 1, "{}", text(&o));
    let again: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("same/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        again["judgements"],
        s.read_json("summary.json")["judgements"]
    );
    // A 10% tolerance passes the 5% loss.
    let o = compare(&["--max-regression", "10"], "loose");
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("MEASURED"),
        "{}",
        text(&o)
    );
    // Not a results dir: a clear usage error, saying which way it is not.
    let empty = s.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for (dir, why) in [
        (Path::new("/nonexistent"), "does not exist"),
        (empty.as_path(), "holds no meta.json"),
    ] {
        let o = std::process::Command::new(crate::support::xtask())
            .arg("compare")
            .arg(dir)
            .output()
            .unwrap();
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(why), "{}", text(&o));
    }
}

#[test]
fn a_trial_that_would_not_fit_the_ram_disk_or_the_cgroup_is_refused_before_starting() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // A 16 MiB tmpfs, where this host lets the test mount one (CI runs as root).
    let small = s.dir.path().join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|st| st.success());
    if mounted {
        let o = s.bench_in("small-run", &a, &b, &["--workdir", small.to_str().unwrap()]);
        let _ = std::process::Command::new("umount").arg(&small).status();
        assert_eq!(code(&o), 64, "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("free space on the work dir") && err.contains("a larger --workdir"),
            "{err}"
        );
        assert!(err.contains("x 1 inserts x 6 s"), "{err}");
        assert!(!s.dir.path().join("small-run").exists(), "nothing started");
    }
    // A memory cgroup with 50 MiB of headroom (simulated: tmpfs pages count against it).
    let cg = s.dir.path().join("cgroup/memory");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(cg.join("memory.limit_in_bytes"), (100u64 << 20).to_string()).unwrap();
    std::fs::write(cg.join("memory.usage_in_bytes"), (50u64 << 20).to_string()).unwrap();
    let mut cmd = s.bench_command(&a, &b, &[]);
    let o = cmd
        .env("PERFGATE_CGROUP_ROOT", s.dir.path().join("cgroup"))
        .output()
        .unwrap();
    if s.workdir_is_tmpfs() {
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains("memory cgroup headroom"), "{}", text(&o));
    }
}

#[test]
fn a_server_exiting_during_configure_ends_the_trial_at_once() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"coordinator_exits_on_configure": true}));
    // fdbcli would wait for its own timeout; the gate notices the dead server instead.
    let o = s.bench(&a, &b, &["--timeout-configure", "600"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_json("trials.json")[1];
    assert_eq!(
        (&t["outcome"], &t["failed_phase"]),
        (&json!("error"), &json!("configure")),
        "{t}"
    );
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .contains("exiting during configure on purpose"),
        "{t}"
    );
    let configure_s = t["phases"][1]["duration_s"].as_f64().unwrap();
    assert!(
        configure_s < 300.0,
        "not bounded by the 600 s timeout: {configure_s}"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn a_truncated_mako_report_is_an_error_naming_the_file() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_truncates_report": true}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_json("trials.json")[1];
    let err = t["error"].as_str().unwrap();
    assert!(err.contains("mako.json is not valid JSON"), "{err}");
    assert_eq!(t["outcome"], "error");
}

#[test]
fn two_gates_at_once_on_one_work_dir_do_not_collide() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"time_scale": 0.2}), json!({"time_scale": 0.2}));
    let spawn = |out: &str| {
        s.bench_command_out(&a, &b, &s.dir.path().join(out), &["--trials", "2"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn("one"), spawn("two"));
    for (name, child) in [("one", one), ("two", two)] {
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{name}: {}", text(&o));
        let trials: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(s.dir.path().join(name).join("trials.json")).unwrap(),
        )
        .unwrap();
        assert!(
            trials
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["outcome"] == "measured"),
            "{trials}"
        );
    }
    s.assert_no_leftover_processes();
    assert_eq!(std::fs::read_dir(s.workdir.path()).unwrap().count(), 0);
}

#[test]
fn gate_latency_adds_a_p99_test_case_that_can_fail_on_its_own() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"p99_us": 4000.0}), json!({"p99_us": 5000.0}));
    // Without the flag latency is only reported.
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("p99 transaction latency +25.00%"),
        "{}",
        text(&o)
    );
    let o = s.bench_in("gated", &a, &b, &["--trials", "2", "--gate-latency"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let junit = read_junit(&s.dir.path().join("gated/junit.xml"));
    let cases = junit[0]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "{junit}");
    assert_eq!(
        (&cases[0]["name"], &cases[0]["results"]),
        (&json!("tps"), &json!([]))
    );
    assert_eq!(cases[1]["name"], "txn_latency_p99");
    assert_eq!(cases[1]["results"][0]["type"], "REGRESSION", "{junit}");
    assert_eq!(
        cases[1]["properties"]["txn_latency_p99_change_pct"],
        "25.00"
    );
}

#[test]
fn a_debug_or_instrumented_tree_is_refused_unless_allowed() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    std::fs::write(
        b.join("CMakeCache.txt"),
        "CMAKE_BUILD_TYPE:STRING=Debug\nBUILD_MAKO:BOOL=ON\nUSE_TSAN:BOOL=ON\n",
    )
    .unwrap();
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CMAKE_BUILD_TYPE is 'Debug'") && err.contains("USE_TSAN"),
        "{err}"
    );
    assert!(err.contains("--allow-non-release"), "{err}");
    let o = s.bench(&a, &b, &["--trials", "2", "--allow-non-release"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let w = &s.read_json("summary.json")["warnings"];
    assert!(
        w[0].as_str().unwrap().starts_with("NOT A RELEASE BUILD"),
        "{w}"
    );
    assert_eq!(
        s.read_json("meta.json")["plan"]["experiment"]["build_config"]["build_type"],
        "Debug"
    );
}

#[test]
fn arms_built_with_other_compilers_are_measured_with_a_warning_naming_the_difference() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    for (tree, compiler) in [(&a, "/usr/bin/clang++-19"), (&b, "/usr/bin/g++")] {
        std::fs::write(
            tree.join("CMakeCache.txt"),
            format!(
                "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\n\
                 CMAKE_CXX_COMPILER:STRING={compiler}\nUSE_JEMALLOC:BOOL=ON\n"
            ),
        )
        .unwrap();
    }
    let junit = s.dir.path().join("gate.xml");
    let o = s.bench(
        &a,
        &b,
        &["--trials", "2", "--junit", junit.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    // In CI the JUnit file is what is read: the warning is in it.
    let case = &read_junit(&junit)[0]["cases"][0];
    assert!(
        case["system_out"]
            .as_str()
            .unwrap()
            .contains("THE ARMS WERE CONFIGURED DIFFERENTLY"),
        "{case}"
    );
    let warnings = s.read_json("summary.json")["warnings"].clone();
    let w = warnings
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.starts_with("THE ARMS WERE CONFIGURED DIFFERENTLY"))
        .unwrap_or_else(|| panic!("{warnings}"));
    assert!(
        w.contains("CMAKE_CXX_COMPILER: '/usr/bin/clang++-19' vs '/usr/bin/g++'")
            && !w.contains("USE_JEMALLOC"),
        "{w}"
    );
    assert!(text(&o).contains("CONFIGURED DIFFERENTLY"), "{}", text(&o));
}

#[test]
fn json_prints_the_summary_for_scripts_and_quiet_keeps_the_terminal_to_warnings() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--trials", "2", "--json", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is the summary JSON");
    assert_eq!(summary, s.read_json("summary.json"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("INFO"), "{stderr}");
    // run.log keeps everything.
    assert!(std::fs::read_to_string(s.out().join("run.log"))
        .unwrap()
        .contains("INFO"));
}

#[test]
fn report_html_is_self_contained_and_renders_in_a_real_browser() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"tps": 1000.0, "noise_pct": 0.3}),
        json!({"tps": 900.0, "noise_pct": 0.3}),
    );
    let o = s.bench(&a, &b, &["--trials", "3"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let page = s.out().join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg"), "charts are inlined");
    assert!(
        !html.contains("http://")
            || html
                .matches("http://")
                .all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\""))
    );
    assert!(!html.contains("<script"), "no script, nothing fetched");
    assert!(
        html.contains("REGRESSION")
            && html.contains("Provenance")
            && html.contains("TPS per second")
    );
    // Headless Chromium (Debian's `chromium`, installed by ci/setup.sh) renders it.
    let Ok(chromium) = which_chromium() else {
        panic!("chromium not found: run ci/setup.sh")
    };
    let profile = s.dir.path().join("chromium-profile");
    let run = |extra: &[&str]| {
        std::process::Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
            ])
            .args([
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap()
    };
    let dom = run(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("Verdicts") && dom.contains("REGRESSION"),
        "{dom}"
    );
    let shot = s.dir.path().join("report.png");
    let o = run(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1200,2000",
    ]);
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {}", text(&o)));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}

fn which_chromium() -> Result<std::path::PathBuf, ()> {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|c| {
            let o = std::process::Command::new("sh")
                .args(["-c", &format!("command -v {c}")])
                .output()
                .ok()?;
            o.status
                .success()
                .then(|| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        })
        .ok_or(())
}

#[test]
fn a_hanging_mako_run_is_a_timeout_and_is_killed() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_run_hang": true}));
    // --seconds 6 plus a 1 s grace: the hang is cut after 7 s.
    let o = s.bench(&a, &b, &["--trials", "2", "--timeout-mako-run-grace", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = &s.read_json("trials.json")[1];
    assert_eq!(
        (&t["outcome"], &t["failed_phase"]),
        (&json!("timeout"), &json!("mako-run")),
        "{t}"
    );
    assert_eq!(
        s.read_json("summary.json")["judgements"][0]["verdict"],
        "TIMEOUT"
    );
    s.assert_no_leftover_processes();
}

#[test]
fn two_missing_build_trees_are_named_together_as_a_usage_error() {
    let s = Sandbox::new();
    let (a, b) = (s.dir.path().join("no-a"), s.dir.path().join("no-b"));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the baseline build tree") && err.contains("the experiment build tree"),
        "{err}"
    );
    assert!(err.contains("no-a does not exist") && err.contains("no-b does not exist"));
}

#[test]
fn on_a_normal_end_the_reaper_leaves_other_processes_alone() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let mut gate = s
        .bench_command(&a, &b, &["--trials", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let run_dir = loop {
        let found = std::fs::read_dir(s.workdir.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("perfgate-"));
        if let Some(e) = found {
            break e.path();
        }
        assert!(Instant::now() < deadline, "no run dir appeared");
        std::thread::sleep(Duration::from_millis(10));
    };
    // Someone watching a trial's log: its command line names the run dir.
    let mut viewer = std::process::Command::new("sh")
        .args(["-c", "sleep 300", "viewer"])
        .arg(run_dir.join("trial.log"))
        .spawn()
        .unwrap();
    assert!(gate.wait().unwrap().success());
    let alive = viewer.try_wait().unwrap().is_none();
    let _ = viewer.kill();
    let _ = viewer.wait();
    assert!(alive, "the reaper killed a process that was not the gate's");
}

#[test]
fn an_out_dir_under_a_file_is_refused_before_any_trial() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = s
        .bench_command_out(&a, &b, &file.join("res"), &[])
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("a-file is not a directory"),
        "{}",
        text(&o)
    );
}
