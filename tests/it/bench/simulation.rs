//! The simulation driver (`--profile sim-*`): FDB's simulator under Valgrind (the double's
//! `fdbserver -r simulation` and `valgrind`), instructions per transaction per role judged
//! as exact counts, the differential profile, a failed seed, and its usage errors.

use std::{path::Path, process::Command};

use serde_json::{json, Value};

use crate::support::{code, text, Sandbox};

/// The simulation workload of these tests.
const SIM: [&str; 2] = ["--profile", "sim-g18ui"];

/// A directory holding the double's `valgrind`, for `PATH`.
pub(crate) fn valgrind_dir(s: &Sandbox) -> std::path::PathBuf {
    let dir = s.dir.path().join("valgrind-bin");
    if !dir.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_valgrind"), dir.join("valgrind")).unwrap();
    }
    dir
}

/// The gate's `bench` of a simulation with `extra` flags, `PATH` led by `path` (the
/// double's valgrind, or none).
fn sim_command(s: &Sandbox, a: &Path, b: &Path, path: &Path, extra: &[&str]) -> Command {
    let _ = std::fs::remove_dir_all(s.out());
    let mut cmd = s.bench_command_with(a, b, &s.out(), &SIM, extra);
    let rest = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{}:{rest}", path.display()));
    cmd
}

fn sim(s: &Sandbox, a: &Path, b: &Path, extra: &[&str]) -> std::process::Output {
    sim_command(s, a, b, &valgrind_dir(s), extra)
        .output()
        .unwrap()
}

fn judgement<'a>(summary: &'a Value, metric: &str) -> &'a Value {
    summary["judgements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {summary:#}"))
}

#[test]
fn an_a_a_simulation_is_exact_and_every_seed_runs_in_both_arms() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = sim(&s, &a, &a, &["--allow-same", "--trials", "3"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let storage = judgement(&summary, "storage_instructions_per_txn");
    assert_eq!(storage["verdict"], "MEASURED", "{storage:#}");
    assert_eq!(storage["gating"], true);
    let reason = storage["reason"].as_str().unwrap();
    assert!(
        reason.contains("+0.000% in each of 3 pairs, an exact count"),
        "{reason}"
    );
    // The simulator's TPS is simulated time's: judged, never gating.
    assert_eq!(judgement(&summary, "tps")["gating"], false);
    let total = judgement(&summary, "instructions_per_txn");
    assert_eq!(
        (total["verdict"].as_str(), total["gating"].as_bool()),
        (Some("MEASURED"), Some(false))
    );
    let trials = s.read_trials();
    let trials = trials.as_array().unwrap();
    assert_eq!(trials.len(), 6);
    for t in trials {
        // Valgrind's temporary files go to the run's own dir, which nobody else can enter.
        let err = std::fs::read_to_string(
            s.out()
                .join(t["artifacts"].as_str().unwrap())
                .join("simulation.err"),
        )
        .unwrap();
        let tmp = err
            .lines()
            .find_map(|l| l.strip_prefix("==1== TMPDIR="))
            .unwrap_or_else(|| panic!("{err}"));
        let run_dir = std::path::Path::new(tmp);
        assert!(
            run_dir.starts_with(s.workdir.path())
                && run_dir
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("perfgate-"),
            "{tmp}"
        );
        let sim = &t["simulation"];
        // Seed k is pair k's, in both arms: the same unseed for the same tree.
        assert_eq!(sim["seed"], t["repetition"], "{t:#}");
        assert_eq!(
            sim["result"]["unseed"],
            40_000 + 7919 * sim["seed"].as_u64().unwrap()
        );
        let dir = s.out().join(t["artifacts"].as_str().unwrap());
        let spec = std::fs::read_to_string(dir.join("simulation.toml")).unwrap();
        assert!(spec.contains("storageEngineType = 3"), "{spec}");
        assert!(dir.join("profile.tsv").is_file());
    }
    // The same tree in both arms: no function changed.
    let diff = &summary["profile_diff"][0];
    assert_eq!(diff["pairs"], 3);
    assert_eq!(diff["exact_pairs"], 3);
    assert_eq!(diff["functions"], json!([]));
    let meta = s.read_json("meta.json");
    // What reproduces the figures: Valgrind's version, the seeds, the spec.
    let plan = &meta["plan"]["simulation"];
    assert_eq!(plan["valgrind"]["version"], "valgrind-3.19.0");
    assert_eq!(plan["seeds"], json!([1, 2, 3]));
    let spec = plan["specs"]["redwood"].as_str().unwrap();
    assert!(spec.contains("testTitle = 'perfgate-sim-g18ui'"), "{spec}");
    assert_eq!(meta["plan"]["config"]["simulated"], true);
    s.assert_no_leftover_processes();
}

#[test]
fn the_two_trials_of_a_pair_run_at_once_on_a_host_with_two_cores() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: one core, so the gate runs one trial at a time");
        return;
    }
    let s = Sandbox::new();
    // Each seed waits for the other arm's: run one after the other, both would fail.
    let a = s.tree("a", json!({ "sim_meet_peer_ms": 60_000 }));
    let o = sim(&s, &a, &a, &["--allow-same", "--trials", "1"]);
    assert!(!text(&o).contains("ran alone"), "{}", text(&o));
    let trials = s.read_trials();
    let outcomes: Vec<&Value> = trials
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["outcome"])
        .collect();
    assert_eq!(
        outcomes,
        [&json!("measured"), &json!("measured")],
        "{}",
        text(&o)
    );
}

#[test]
fn one_percent_more_storage_work_is_a_regression_that_names_its_function() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({ "sim_storage_ir_per_txn": 50_500 }));
    let o = sim(&s, &a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let storage = judgement(&summary, "storage_instructions_per_txn");
    assert_eq!(storage["verdict"], "REGRESSION", "{storage:#}");
    let change = storage["comparison"]["delta_pct"].as_f64().unwrap();
    assert!((change - -0.990).abs() < 0.01, "1/1.01 - 1: {storage:#}");
    // Only the storage server's work changed: the tlog's is judged, unchanged, not gating.
    let log = judgement(&summary, "log_instructions_per_txn");
    assert_eq!(
        (log["verdict"].as_str(), log["gating"].as_bool()),
        (Some("MEASURED"), Some(false))
    );
    let top = &summary["profile_diff"][0]["functions"][0];
    assert!(
        top["function"].as_str().unwrap().starts_with("getValueQ("),
        "{top:#}"
    );
    assert_eq!(top["role"], "storage");
    // 500 more per transaction, whatever the seed's spread.
    let per_txn = top["change_per_txn"].as_f64().unwrap();
    assert!(per_txn > 500.0 && per_txn < 520.0, "{top:#}");
    let out = text(&o);
    assert!(out.contains("getValueQ(...) [clone .resume]"), "{out}");
    // A profile that is gone, or a record pointing outside the run, costs the profile only.
    let trials_json = s.out().join("trials.json");
    let mut trials: Value =
        serde_json::from_str(&std::fs::read_to_string(&trials_json).unwrap()).unwrap();
    trials["trials"][0]["simulation"]["profile"] = json!("../../etc/passwd");
    std::fs::write(&trials_json, trials.to_string()).unwrap();
    let again = crate::support::compare_only(&s.out());
    assert_eq!(code(&again), 1, "{}", text(&again));
    assert!(
        text(&again).contains("no differential profile"),
        "{}",
        text(&again)
    );
    assert!(
        text(&again).contains("not a path inside the results dir"),
        "{}",
        text(&again)
    );
    // Within the 0.5% tolerance, a quarter percent is no regression.
    let b = s.tree(
        "c",
        json!({ "sim_storage_ir_per_txn": 50_125, "source_version": "3".repeat(40) }),
    );
    let o = sim(&s, &a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn a_change_of_the_simulated_path_makes_seeds_replicates_not_exact_pairs() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({}),
        json!({ "sim_unseed_offset": 1, "sim_storage_ir_per_txn": 60_000 }),
    );
    let o = sim(&s, &a, &b, &["--trials", "3"]);
    let summary = s.read_json("summary.json");
    assert_eq!(summary["profile_diff"][0]["exact_pairs"], 0, "{}", text(&o));
    let storage = judgement(&summary, "storage_instructions_per_txn");
    assert_eq!(storage["verdict"], "REGRESSION", "{storage:#}");
}

#[test]
fn an_a_a_whose_seed_does_not_replay_is_an_error_naming_both_traces() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({ "sim_not_deterministic": true }));
    let o = sim(&s, &a, &a, &["--allow-same", "--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_trials();
    let errors: Vec<&str> = trials
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["error"].as_str())
        .collect();
    assert!(!errors.is_empty(), "{trials:#}");
    assert!(errors[0].contains("did not replay"), "{errors:?}");
    assert!(errors[0].contains("/trace/"), "{errors:?}");
    // Two copies of one build are byte-identical arms too.
    let copy = s.tree("copy", json!({ "sim_not_deterministic": true }));
    let o = sim(&s, &a, &copy, &["--allow-same", "--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("did not replay"), "{}", text(&o));
}

#[test]
fn a_cachegrind_file_that_is_a_fifo_is_an_error_not_a_wait() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({ "sim_cachegrind_fifo": true }));
    let o = sim(&s, &a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let trials = s.read_trials();
    let error = trials
        .as_array()
        .unwrap()
        .iter()
        .find_map(|t| t["error"].as_str())
        .expect("a failed trial");
    assert!(error.contains("a FIFO"), "{error}");
    s.assert_no_leftover_processes();
}

#[test]
fn a_failed_seed_is_an_error_that_keeps_the_simulators_trace() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({ "sim_fails": true }));
    let o = sim(&s, &a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let storage = judgement(&summary, "storage_instructions_per_txn");
    assert_eq!(storage["verdict"], "ERROR", "{storage:#}");
    let trials = s.read_trials();
    let failed = trials
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["outcome"] == "error")
        .expect("a failed trial");
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with("simulation: "), "{error}");
    assert!(error.contains("0 tests passed and 1 failed"), "{error}");
    assert!(error.contains("trace files are in"), "{error}");
    let kept = s
        .out()
        .join(failed["artifacts"].as_str().unwrap())
        .join("trace");
    let names: Vec<String> = std::fs::read_dir(&kept)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("trace.")), "{names:?}");
    s.assert_no_leftover_processes();
}

#[test]
fn a_simulation_without_valgrind_or_with_real_cluster_flags_is_refused_before_any_trial() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let empty = s.dir.path().join("no-valgrind");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = sim_command(&s, &a, &a, &empty, &["--allow-same"]);
    cmd.env("PATH", &empty);
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("apt-get install valgrind"),
        "{}",
        text(&o)
    );
    for (flags, says) in [
        (&["--trials", "auto"][..], "--trials auto"),
        (
            &["--gate", "storage-cpu"][..],
            "gating on storage server CPU per transaction",
        ),
        (&["--gate-latency"][..], "gating on p99 transaction latency"),
        (&["--hosts", "3"][..], "topology flags"),
        // Refused as a topology flag, not by the shape's rules (which would ask for --hosts).
        (&["--redundancy", "double"][..], "topology flags"),
        (&["--slo-tps", "100"][..], "--slo-tps"),
        (
            &["--warmup-seconds", "30"][..],
            "FDB's simulator (the simulation driver)",
        ),
        (&["--sweep", "100,200"][..], "--sweep"),
        (&["--testers", "2"][..], "--testers"),
        (&["--seconds", "1000"][..], "simulated seconds"),
    ] {
        let mut all = vec!["--allow-same"];
        all.extend_from_slice(flags);
        let o = sim(&s, &a, &a, &all);
        assert_eq!(code(&o), 64, "{flags:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{flags:?}: {}", text(&o));
    }
    // One seed per arm is allowed, and the warning says what is missing.
    let o = sim(&s, &a, &a, &["--allow-same", "--trials", "1", "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("gates      storage_instructions_per_txn (tolerance 0.5%)"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("pinning    "), "{}", text(&o));
    assert!(
        text(&o).contains("give --trials 2 or more (a seed each)"),
        "{}",
        text(&o)
    );
    let o = crate::support::gate_cmd()
        .args(["calibrate", "--build"])
        .arg(&a)
        .args(SIM)
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("no noise to calibrate"), "{}", text(&o));
}

#[test]
fn a_build_whose_storage_code_has_no_symbols_says_so() {
    let s = Sandbox::new();
    // No instruction in a storage-server file, as cachegrind reports a stripped fdbserver.
    let (a, b) = s.ab(json!({ "sim_storage_ir_per_txn": 0 }), json!({}));
    let o = sim(&s, &a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let storage = judgement(&summary, "storage_instructions_per_txn");
    assert_eq!(storage["verdict"], "ERROR", "{storage:#}");
    let reason = storage["reason"].as_str().unwrap();
    assert!(
        reason.contains("attributed to the storage code"),
        "{reason}"
    );
    assert!(
        reason.contains("no symbols or debug information"),
        "{reason}"
    );
}

#[test]
fn a_change_in_shared_code_shows_in_the_whole_runs_count_and_gates_when_asked() {
    let s = Sandbox::new();
    // 2% more work in flow, which no role owns.
    let (a, b) = s.ab(json!({}), json!({ "sim_shared_ir_per_txn": 408_000 }));
    let o = sim(&s, &a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let storage = judgement(&summary, "storage_instructions_per_txn");
    assert_eq!(storage["verdict"], "MEASURED", "{storage:#}");
    let total = judgement(&summary, "instructions_per_txn");
    assert_eq!(
        (total["verdict"].as_str(), total["gating"].as_bool()),
        (Some("REGRESSION"), Some(false))
    );
    let top = &summary["profile_diff"][0]["functions"][0];
    assert_eq!(
        (top["function"].as_str(), top["role"].as_str()),
        (Some("N2::Net2::run()"), Some("shared"))
    );
    let o = sim(&s, &a, &b, &["--trials", "2", "--gate", "instructions"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    // Outside the simulation driver there is no whole run's count to gate on.
    let o = s.bench(&a, &b, &["--gate", "instructions"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("--gate instructions counts the whole simulated run"),
        "{said}"
    );
}
