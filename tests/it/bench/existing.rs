//! `--cluster-file`: a cluster the gate did not start gets testers only; its status is
//! recorded, a recovery during a test fails the trial, data or another release is refused
//! before any test, and it is judged against a record of its class.

use std::path::Path;

use serde_json::{json, Value};

use super::multitest::{multitest, record, server_traces, trials, SMALL};
use crate::support::{code, text, Sandbox};

/// A cluster started by hand, as an operator's would be: one double fdbserver of `tree`
/// on a free loopback port, configured `single ssd-redwood-1` with the tree's fdbcli.
/// Returns its cluster file and the process (killed when the test drops it).
pub(crate) fn hand_started_cluster(s: &Sandbox, tree: &Path) -> (std::path::PathBuf, KillOnDrop) {
    hand_started_cluster_of(s, tree, "ssd-redwood-1")
}

/// [`hand_started_cluster`] configured with storage engine `engine`; none is created
/// when `engine` is empty.
fn hand_started_cluster_of(
    s: &Sandbox,
    tree: &Path,
    engine: &str,
) -> (std::path::PathBuf, KillOnDrop) {
    use std::process::{Command, Stdio};
    let dir = s.dir.path().join("hand-cluster");
    for d in ["data", "log"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let port = unused_port();
    let file = dir.join("fdb.cluster");
    // A Latin-1 byte in the comment: FDB reads the file as bytes and drops the comment.
    let mut bytes = b"# by hand, caf\xe9\n".to_vec();
    bytes.extend(format!("hand:abc123@127.0.0.1:{port}\n").bytes());
    std::fs::write(&file, bytes).unwrap();
    // The double wants the localities the gate gives every server (it takes a server
    // without them for one that would open /dev/shm/fdbserver_shared_memory_id).
    let server = Command::new(tree.join("bin/fdbserver"))
        .args(["--locality-machineid", "hand", "--locality-zoneid", "hand"])
        .args(["-p", &format!("127.0.0.1:{port}"), "-c", "stateless", "-C"])
        .arg(&file)
        .arg("-d")
        .arg(dir.join("data"))
        .arg("-L")
        .arg(dir.join("log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = KillOnDrop(server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the hand-started server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if engine.is_empty() {
        return (file, server);
    }
    let o = Command::new(tree.join("bin/fdbcli"))
        .arg("-C")
        .arg(&file)
        .args(["--exec", &format!("configure new single {engine}")])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    (file, server)
}

/// A child process killed (and reaped) when dropped.
pub(crate) struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bench` of one tree against the cluster file `file`, with `extra` flags.
fn against_existing(s: &Sandbox, tree: &Path, file: &Path, extra: &[&str]) -> std::process::Output {
    against_existing_with(s, tree, file, &SMALL, extra)
}

/// [`against_existing`] with `workload` flags instead of [`SMALL`].
fn against_existing_with(
    s: &Sandbox,
    tree: &Path,
    file: &Path,
    workload: &[&str],
    extra: &[&str],
) -> std::process::Output {
    existing_command(s, tree, file, workload, extra)
        .output()
        .unwrap()
}

/// The command of [`against_existing_with`], the results dir emptied first.
fn existing_command(
    s: &Sandbox,
    tree: &Path,
    file: &Path,
    workload: &[&str],
    extra: &[&str],
) -> std::process::Command {
    let _ = std::fs::remove_dir_all(s.out());
    let mut cmd = crate::support::gate_cmd();
    cmd.arg("bench")
        .arg("--experiment-build")
        .arg(tree)
        .arg("--cluster-file")
        .arg(file)
        .arg("--out")
        .arg(s.out())
        .args(workload)
        .args(["--seed", "3", "--baselines-dir"])
        .arg(s.dir.path().join("baselines"))
        .args(extra)
        .env("WORKDIR", s.workdir.path())
        .env_remove("FDB_TLS_CERTIFICATE_FILE")
        .env_remove("FDB_TLS_KEY_FILE");
    cmd
}

#[test]
fn an_existing_cluster_gets_testers_only_and_its_status_is_recorded() {
    let s = Sandbox::new();
    // The last trial's testers stay listed for a while after they end, as on real FDB
    // (about 8 s): before, the next trial's multitest took a gone one and never ended.
    let (a, _) = s.ab(json!({"tester_linger_ms": 1500}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    let before = std::fs::read(&file).unwrap();
    let o = against_existing(&s, &a, &file, &["--trials", "2", "--testers", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("EXISTING CLUSTER (hand, coordinators 127.0.0.1:"),
        "{out}"
    );
    assert!(
        out.contains("cluster FDB 8.0.0, single ssd-redwood-1"),
        "{out}"
    );
    // Trial 2 waited for trial 1's lingering tester to leave, and said so.
    assert!(
        out.contains("more than the 0 --remote-testers: waiting"),
        "{out}"
    );
    let t = trials(&s);
    assert_eq!(t.len(), 2, "one arm: {t:#?}");
    for trial in &t {
        assert_eq!(trial["arm"], "experiment");
        assert_eq!(trial["outcome"], "measured", "{trial:#}");
        assert_eq!(trial["cluster"]["storage_engine"], "ssd-redwood-1");
        assert_eq!(trial["cluster"]["protocol_version"], "fdb00b080000000");
        // FDB clears after a test only in simulation: asked, so the next trial finds the
        // database empty as a fresh cluster is.
        let spec = std::fs::read_to_string(
            s.out()
                .join(trial["artifacts"].as_str().unwrap())
                .join("multitest.toml"),
        )
        .unwrap();
        assert!(spec.contains("clearAfterTest = true\n"), "{spec}");
        // No server of the gate's: no cluster start, no configure.
        let phases = crate::support::phase_names(trial);
        assert_eq!(phases, ["available", "multitest", "teardown"], "{phases:?}");
        let dir = s.out().join(trial["artifacts"].as_str().unwrap());
        let servers: Vec<String> = server_traces(&dir).into_iter().map(|(d, _)| d).collect();
        assert!(
            servers.len() == 2 && servers.iter().all(|d| d.starts_with("test-")),
            "{servers:?}"
        );
        // The testers took the address FDB picks for a cluster on other hosts.
        let args = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("fdbserver-test-")
            })
            .map(|e| e.path());
        assert!(args.is_some(), "a tester's output is kept");
    }
    // Every trial looked for data: keys another client wrote between trials would go
    // with the test's own.
    for trial in ["01-redwood-experiment-1", "02-redwood-experiment-2"] {
        assert!(s
            .out()
            .join("trials")
            .join(trial)
            .join("fdbcli-getrange.txt")
            .is_file());
    }
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{j}");
    // Judged again offline as bench judged it (one arm): before, compare said ERROR.
    let o = crate::support::gate_cmd()
        .arg("compare")
        .arg(s.out())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("redwood MEASURED: TPS"), "{}", text(&o));
    // The user's cluster file is read, never written.
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // A tester on another "host", started by hand with the README's command line: the
    // multitest waits for it beside the gate's own, and counts its metrics.
    let port = unused_port();
    let remote = s.dir.path().join("hand-cluster/remote-tester");
    std::fs::create_dir_all(&remote).unwrap();
    let _tester = KillOnDrop(
        std::process::Command::new(a.join("bin/fdbserver"))
            .args([
                "--locality-machineid",
                "remote",
                "--locality-zoneid",
                "remote",
            ])
            .args(["-c", "test", "-p", &format!("auto:{port}"), "-C"])
            .arg(&file)
            .arg("-d")
            .arg(&remote)
            .arg("-L")
            .arg(&remote)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let o = against_existing(&s, &a, &file, &["--trials", "1", "--remote-testers", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("1 tester(s) here and 1 on other hosts"),
        "{}",
        text(&o)
    );
    let t = &trials(&s)[0];
    assert_eq!(t["multitest"]["testers"], 2);
    // Client CPU is the gate's testers' only: not set against every tester's TPS.
    assert!(t["cpu"]["cores"].get("client").is_none(), "{t:#}");
    assert!(
        text(&o).contains(
            "plus 1 tester(s) on other hosts (--remote-testers): the target is split over 2 \
             testers"
        ),
        "{}",
        text(&o)
    );
    // Not declared: a stray tester, named by its address.
    let o = against_existing(
        &s,
        &a,
        &file,
        &["--trials", "1", "--timeout-available", "2"],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    // (The gate's tester of the last run may still be listed beside it.)
    let said = text(&o)
        .lines()
        .find(|l| l.contains("tester-class processes are registered with the cluster ("))
        .unwrap_or_default()
        .to_string();
    assert!(
        said.contains(&format!("127.0.0.1:{port}"))
            && said.contains("more than the 0 --remote-testers"),
        "{}",
        text(&o)
    );
    drop(_tester);
    // Once the cluster no longer lists it (as a real cluster controller forgets a tester
    // seconds after it ends)...
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::process::Command::new(a.join("bin/fdbcli"))
        .arg("-C")
        .arg(&file)
        .args(["--exec", "status json"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(&format!("127.0.0.1:{port}")))
        .unwrap()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the tester stays listed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // ...the remote tester gone: the multitest waits for it, and the gate says so.
    let o = against_existing(
        &s,
        &a,
        &file,
        &[
            "--trials",
            "1",
            "--remote-testers",
            "1",
            "--timeout-mako-build",
            "1",
            "--timeout-mako-run-grace",
            "1",
        ],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(
            "the 2 tester(s) it waits for (1 started here, 1 --remote-testers on other hosts) \
             never all joined the cluster"
        ),
        "{}",
        text(&o)
    );
    // No test began, so no rows were written: nothing to clear.
    assert!(!text(&o).contains("rows may be left"), "{}", text(&o));
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn an_engine_reconfigured_during_a_test_is_said_to_be_one() {
    let s = Sandbox::new();
    // During the second test (run 1) someone runs `configure memory`.
    let (a, _) = s.ab(json!({"multitest_reconfigure_runs": [1]}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    let o = against_existing(&s, &a, &file, &["--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = trials(&s);
    assert_eq!(t[0]["outcome"], "measured", "{:#}", t[0]);
    assert_ne!(t[1]["outcome"], "measured", "{:#}", t[1]);
    let said = t[1].to_string();
    assert!(
        said.contains(
            "the cluster's storage engine was changed during the test (configured \\\"ssd-redwood-1\\\" before, \\\"memory\\\" after"
        ),
        "{said}"
    );
    assert!(!said.contains("recovered during the test"), "{said}");
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn the_data_set_of_an_existing_cluster_is_not_counted_against_the_local_work_dir() {
    // A cluster the gate did not start holds its data set on its own servers: the local
    // work dir's room is no reason to refuse the run.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    // 50 MiB of memory cgroup headroom (simulated; tmpfs pages count against it), and
    // a data set of 10 M rows x 116 bytes x 3: about 3.3 GB.
    let cgroup = s.simulated_cgroup(50);
    let big = [
        "--profile",
        "point-read",
        "--rows",
        "10000000",
        "--seconds",
        "10",
    ];
    let mut cmd = existing_command(&s, &a, &file, &big, &["--dry-run"]);
    let o = cmd.env("PERFGATE_CGROUP_ROOT", &cgroup).output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(!text(&o).contains("a trial needs about"), "{}", text(&o));
    // A small workload on a cluster of the gate's own is refused: its data is here.
    let mut own = s.bench_command(&a, &b, &[]);
    let o = own.env("PERFGATE_CGROUP_ROOT", &cgroup).output().unwrap();
    if s.workdir_is_tmpfs() {
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains("a trial needs about"), "{}", text(&o));
    }
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn a_gate_killed_while_it_reads_the_engine_leaves_a_dir_the_next_run_removes() {
    // A SIGKILL during the plan-time probe leaves no chance to clean up: the probe's
    // scratch dir must be found and removed by the next run.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // Never configured, and its status never answers: the probe waits.
    let (file, _server) = hand_started_cluster_of(&s, &a, "");
    let mut gate = existing_command(&s, &a, &file, &SMALL, &["--timeout-available", "600"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ours = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(s.workdir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("perfgate-"))
            .map(|e| e.path())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while ours().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the probe never began"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    gate.kill().unwrap();
    gate.wait().unwrap();
    assert_eq!(ours().len(), 1, "{:?}", ours());
    // The next run on the work dir finds it, its gate dead, and removes it.
    let o = s.bench(&a, &b, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("died without cleaning up"),
        "{}",
        text(&o)
    );
    assert!(ours().is_empty(), "{:?}", ours());
}

#[test]
fn a_cluster_whose_database_was_never_created_is_named_so_before_any_trial() {
    let s = Sandbox::new();
    // Its status answers after 15 s, later than the first poll's 10 s bound.
    let (a, _) = s.ab(json!({"never_configured_answer_s": 15}), json!({}));
    let (file, _server) = hand_started_cluster_of(&s, &a, "");
    let o = against_existing(&s, &a, &file, &["--timeout-available", "600"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(
            "the cluster's coordinators have no record of a database (status json recovery \
             state configuration_never_created"
        ),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("configure new single ssd-2"),
        "{}",
        text(&o)
    );
    // Said at once, not after --timeout-available.
    assert!(!text(&o).contains("TIMEOUT"), "{}", text(&o));
    assert!(!text(&o).contains("printed no status"), "{}", text(&o));
    // Nothing was configured by the gate: the database still does not exist.
    assert!(!s.out().join("trials").exists());
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn a_recovery_of_an_existing_cluster_during_a_test_fails_that_trial() {
    let s = Sandbox::new();
    // The second test (run 1) spans a recovery: FDB's multitest still passes it.
    let (a, _) = s.ab(json!({"multitest_recovery_runs": [1]}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    let o = against_existing(&s, &a, &file, &["--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let t = trials(&s);
    assert_eq!(t[0]["outcome"], "measured", "{:#}", t[0]);
    assert_eq!(t[0]["cluster"]["generation"], 2, "{:#}", t[0]);
    assert!(s
        .out()
        .join("trials/01-redwood-experiment-1/status-after.json")
        .is_file());
    assert_ne!(t[1]["outcome"], "measured", "{:#}", t[1]);
    let said = t[1].to_string();
    assert!(
        said.contains(
            "the cluster recovered during the test (status json generation 2 before, 4 after"
        ),
        "{said}"
    );
    assert!(
        text(&o).contains("the cluster recovered during the test"),
        "{}",
        text(&o)
    );
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn a_trial_waits_for_an_existing_cluster_to_finish_recovering() {
    let s = Sandbox::new();
    // Available but still recovering for the first 3 answers, as a restarted real one is.
    let (a, _) = s.ab(json!({"recovering_status_answers": 3}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    let o = against_existing(&s, &a, &file, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = &trials(&s)[0];
    assert_eq!(t["outcome"], "measured", "{t:#}");
    // The plan's read of the engine waited out the recovery (3 answers, then the 4th):
    // the trial's first answer finds it recovered.
    assert_eq!(t["availability"]["polls"], 1, "{t:#}");
    assert_eq!(t["cluster"]["recovery_state"], "fully_recovered", "{t:#}");
    drop(_server);
    // One that never finishes: a timeout that says so, not a test of the recovery.
    let s = Sandbox::new();
    let (a, _) = s.ab(json!({"recovering_status_answers": 1000000}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    let o = against_existing(
        &s,
        &a,
        &file,
        &["--trials", "1", "--timeout-available", "2"],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(
            "the cluster is available but still recovering (status json recovery state \
             all_logs_recruited, not fully_recovered)"
        ),
        "{}",
        text(&o)
    );
    assert!(!s
        .out()
        .join("trials/01-redwood-experiment-1/multitest.toml")
        .exists());
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn a_test_cut_short_says_the_rows_it_leaves_and_a_gone_cluster_is_named() {
    for how in ["cluster stops", "SIGINT"] {
        let s = Sandbox::new();
        // A 3 s test (60 s scaled), so that it is under way when the cluster stops.
        let (a, _) = s.ab(json!({"time_scale": 0.05}), json!({}));
        let (file, mut server) = hand_started_cluster(&s, &a);
        let workload = [
            "--profile",
            "point-read",
            "--rows",
            "1000",
            "--seconds",
            "60",
        ];
        let gate = existing_command(&s, &a, &file, &workload, &["--trials", "1"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = s.out().join("trials/01-redwood-experiment-1/multitest.txt");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("running test (")
        {
            assert!(std::time::Instant::now() < deadline, "{how}: no test ran");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if how == "SIGINT" {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(gate.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            )
            .unwrap();
        } else {
            let _ = server.0.kill();
            let _ = server.0.wait();
        }
        let o = gate.wait_with_output().unwrap();
        assert_eq!(code(&o), 2, "{how}: {}", text(&o));
        assert!(
            text(&o).contains(&format!(
                "the test's rows may be left in the database (ReadWrite clears them only when \
                 the test ends), and the next run will refuse the cluster as not empty: it was \
                 empty before this trial, so if nothing else writes to it, clear them with \
                 `fdbcli -C {} --exec 'writemode on; clearrange \"\" \\xff'`",
                file.display()
            )),
            "{how}: {}",
            text(&o)
        );
        if how == "cluster stops" {
            let port = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            let port = port.trim().rsplit(':').next().unwrap().to_string();
            assert!(
                text(&o).contains(&format!(
                    "none of the cluster's coordinators (127.0.0.1:{port}) has accepted a \
                     connection for 15 s during the test: the cluster stopped"
                )),
                "{}",
                text(&o)
            );
        }
        assert_only_the_hand_cluster_is_left(&s);
    }
}

#[test]
fn a_sweep_of_an_existing_cluster_shows_one_arms_knee() {
    let s = Sandbox::new();
    let (a, _) = s.ab(json!({"tester_linger_ms": 200}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    let o = against_existing(&s, &a, &file, &["--sweep", "600,900,1200", "--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{j}");
    assert_eq!(j["knees"]["has_baseline"], false, "{j}");
    // The baseline column holds no knee: there is no baseline, not one below the ladder.
    let row = text(&o)
        .lines()
        .find(|l| l.starts_with("redwood") && l.contains("MEASURED"))
        .unwrap_or_default()
        .to_string();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(!row.contains("< 600"), "{row}");
    assert!(cells.contains(&"900"), "{row}");
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn an_existing_cluster_is_judged_against_a_record_of_its_class_only() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tester_linger_ms": 200}), json!({}));
    let (file, _server) = hand_started_cluster(&s, &a);
    // Two days' runs of the cluster make the record: there is no control arm to run.
    for (day, extra) in [("day1", &[][..]), ("day2", &["--add-run"][..])] {
        let o = against_existing(&s, &a, &file, &["--trials", "2"]);
        assert_eq!(code(&o), 0, "{}", text(&o));
        let dir = s.dir.path().join(day);
        std::fs::rename(s.out(), &dir).unwrap();
        if day == "day2" {
            crate::support::date_to_another_day(&dir);
        }
        let o = record(&s, &dir, "qual", extra);
        assert_eq!(code(&o), 0, "{}", text(&o));
        // One arm ran: no other arm to offer.
        assert!(!text(&o).contains("--arm baseline"), "{}", text(&o));
    }
    let path = s.dir.path().join("baselines/qual.json");
    let mut saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        saved["cluster"], "FDB 8.0.0, single ssd-redwood-1, 1 machine(s): 1 unset",
        "the testers are not the cluster's: {saved:#}"
    );
    let against = ["--trials", "2", "--against-recorded", "qual"];
    let o = against_existing(&s, &a, &file, &against);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o)
            .contains("one arm, judged against the record's runs of a cluster of the same class"),
        "{}",
        text(&o)
    );
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{j}");
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .contains("over 2 recorded days vs 2 trials"),
        "{j}"
    );
    // One trial: no pairs to speak of, too few trials.
    let o = against_existing(
        &s,
        &a,
        &file,
        &["--trials", "1", "--against-recorded", "qual"],
    );
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["verdict"], "INCONCLUSIVE", "{j} {}", text(&o));
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .starts_with("TPS: fewer than 2 measured trials on a side (or 2 recorded days)"),
        "{j}"
    );
    // A cluster of another class: refused at its first trial, before any test.
    saved["cluster"] = json!("FDB 8.0.0, double ssd-redwood-1, 3 machine(s): 3 storage");
    std::fs::write(&path, saved.to_string()).unwrap();
    let o = against_existing(&s, &a, &file, &against);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(
            "the cluster is FDB 8.0.0, single ssd-redwood-1, 1 machine(s): 1 unset, baseline \
             qual was recorded on FDB 8.0.0, double ssd-redwood-1"
        ),
        "{}",
        text(&o)
    );
    assert!(!s
        .out()
        .join("trials/01-redwood-experiment-1/multitest.toml")
        .exists());
    // A record of another engine: refused when the plan reads the cluster's.
    saved["engine"] = json!("memory");
    std::fs::write(&path, saved.to_string()).unwrap();
    let o = against_existing(&s, &a, &file, &against);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains(
            "the cluster's storage engine is redwood, and baseline qual was recorded on memory"
        ),
        "{}",
        text(&o)
    );
    // The gate's own cluster does not compare with it.
    let o = multitest(&s, &a, &b, &["--against-recorded", "qual", "--trials", "1"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("baseline qual was recorded on a cluster the gate did not start"),
        "{}",
        text(&o)
    );
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn an_existing_clusters_engine_is_read_from_it_and_names_the_run() {
    let s = Sandbox::new();
    let (a, _) = s.ab(json!({}), json!({}));
    let (file, _server) = hand_started_cluster_of(&s, &a, "memory");
    // The plan reads the engine; the knobs it lists are the testers', not the servers'.
    // A floor set for redwood only would leave this run without one: said.
    let o = existing_command(&s, &a, &file, &SMALL, &["--trials", "1", "--dry-run"])
        .env("PERFGATE_SLO_TPS_REDWOOD", "5000")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let plan = text(&o);
    assert!(
        plan.contains(
            "PERFGATE_SLO_TPS_REDWOOD set(s) a TPS floor for another engine than this run's, \
             and memory has none"
        ),
        "{plan}"
    );
    let line = plan
        .lines()
        .find(|l| l.contains("1. B"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(line.contains("memory"), "{line}");
    // The gate starts no cluster and no mako here, and its plan says neither.
    assert!(
        plan.contains("plus each trial's status check and data load"),
        "{plan}"
    );
    assert!(!plan.contains("mako the tree's lib/"), "{plan}");
    if s.workdir_is_tmpfs() {
        assert!(
            line.ends_with("tester --knob_disable_posix_kernel_aio=1"),
            "{line}"
        );
    }
    // A floor for memory applies to it: the run is labelled memory everywhere.
    let mut cmd = existing_command(&s, &a, &file, &SMALL, &["--trials", "2"]);
    let o = cmd
        .env("PERFGATE_SLO_TPS_MEMORY", "1e12")
        .env("PERFGATE_SLO_TPS_REDWOOD", "1")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
    let t = trials(&s);
    for trial in &t {
        assert_eq!(trial["engine"], "memory", "{trial:#}");
        assert_eq!(trial["cluster"]["storage_engine"], "memory");
        let knobs = trial["knobs"].as_array().unwrap();
        assert!(knobs.len() <= 1, "the testers' aio knob at most: {knobs:?}");
    }
    assert!(s.out().join("trials/01-memory-experiment-1").is_dir());
    let j = &s.read_json("summary.json")["judgements"][0];
    assert_eq!(j["engine"], "memory", "{j}");
    assert_eq!(j["verdict"], "SLO-VIOLATION", "{j}");
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(junit.contains("classname=\"perfgate.memory\""), "{junit}");
    assert!(!junit.contains("redwood"), "{junit}");
    let meta = s.read_json("meta.json");
    assert_eq!(
        meta["plan"]["slo"]["memory"], 1e12,
        "{:#}",
        meta["plan"]["slo"]
    );
    assert_only_the_hand_cluster_is_left(&s);
}

#[test]
fn an_existing_cluster_of_an_unknown_engine_is_refused_before_any_trial() {
    let s = Sandbox::new();
    let (a, _) = s.ab(json!({}), json!({}));
    // As a newer FDB's engine, or a database whose storage servers differ ("custom").
    let (file, _server) = hand_started_cluster_of(&s, &a, "ssd-future-9");
    let o = against_existing(&s, &a, &file, &["--trials", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("cannot read the storage engine of the cluster hand")
            && out.contains("names storage engine \"ssd-future-9\", none the gate knows"),
        "{out}"
    );
    assert!(!s.out().join("trials").exists());
    assert_only_the_hand_cluster_is_left(&s);
}

/// A loopback port nothing listens on now, chosen by the OS.
fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Nothing the gate started is left: only the hand-started cluster runs.
fn assert_only_the_hand_cluster_is_left(s: &Sandbox) {
    let left: Vec<String> = s
        .leftover_processes()
        .into_iter()
        .filter(|p| !p.contains("hand-cluster"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Nor the scratch dir the engine was read in, whether that failed or not.
    let scratch: Vec<_> = std::fs::read_dir(s.workdir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("perfgate-"))
        .collect();
    assert!(scratch.is_empty(), "{scratch:?}");
}

#[test]
fn an_existing_cluster_with_data_or_of_another_release_is_refused_before_any_test() {
    let s = Sandbox::new();
    // The user's data: ReadWrite's clearAfterTest would wipe it.
    let (a, b) = s.ab(
        json!({"database_keys": ["users/1"]}),
        json!({"release": "7.3"}),
    );
    let (file, _server) = hand_started_cluster(&s, &a);
    let o = against_existing(&s, &a, &file, &["--trials", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("the database is not empty (it holds the key `users/1')"),
        "{}",
        text(&o)
    );
    assert!(
        !s.out()
            .join("trials/01-redwood-experiment-1/multitest.toml")
            .exists(),
        "no test ran"
    );
    // Testers of 7.3 against an 8.0 cluster: its fdbcli reaches no coordinator and warns,
    // as a real 7.3 fdbcli does; said at once, not after --timeout-available.
    let o = against_existing(
        &s,
        &b,
        &file,
        &["--trials", "1", "--timeout-available", "600"],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(
            "fdbcli of --experiment-build (FDB 7.3) cannot use the cluster: it warns that a \
             process of the cluster is incompatible with its release, so the coordinators, \
             though they may run, do not answer it (Unable to reach a quorum of coordinators. \
             (quorum_not_reachable)); testers of FDB 7.3 cannot join a cluster of another \
             release"
        ) && text(&o).contains("give --experiment-build a tree of the cluster's release"),
        "{}",
        text(&o)
    );
    // No coordinator listening where the cluster file says: said at once, not after the
    // status wait of --timeout-available.
    let gone = s.dir.path().join("gone.cluster");
    let port = unused_port();
    std::fs::write(&gone, format!("gone:abc@127.0.0.1:{port}\n")).unwrap();
    let o = against_existing(&s, &a, &gone, &["--trials", "1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "none of the coordinators of --cluster-file {} (127.0.0.1:{port}) accepts a TCP \
             connection from this host (each tried within 1 s), so nothing was built or run",
            gone.display()
        )),
        "{}",
        text(&o)
    );
    // Flags that configure servers the gate does not start, or a second arm.
    for (extra, says) in [
        (
            vec!["--knob", "page_cache_4k=1000"],
            "--knob, --baseline-knob and --experiment-knob do not go with --cluster-file",
        ),
        (
            vec!["--engine", "rocksdb"],
            "--engine does not go with --cluster-file",
        ),
        (vec!["--pin"], "--pin does not go with --cluster-file"),
        (
            vec!["--hosts", "3"],
            "the cluster topology flags (--hosts, --redundancy, --logs and the like) do not go \
             with --cluster-file",
        ),
        // Refused as topology, not checked against the default --hosts 1.
        (
            vec!["--redundancy", "double"],
            "the cluster topology flags (--hosts",
        ),
        (vec!["--logs", "3"], "the cluster topology flags (--hosts"),
        (
            vec!["--trials", "auto", "--time-budget", "1h"],
            "--trials auto does not go with --cluster-file",
        ),
    ] {
        let o = against_existing(&s, &a, &file, &extra);
        assert_eq!(code(&o), 64, "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{extra:?}: {}", text(&o));
    }
    let o = against_existing_with(&s, &a, &file, &["--profile", "quick"], &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("a mako profile does not go with --cluster-file"),
        "{}",
        text(&o)
    );
    let bad = s.dir.path().join("bad.cluster");
    let mut too_long = format!("hand:abc@127.0.0.1:{}\n", unused_port()).into_bytes();
    too_long.resize(60001, b' ');
    for (contents, says) in [
        (
            b"not a cluster file".to_vec(),
            "not a cluster file FDB takes: its connection string has no `@`",
        ),
        (
            too_long,
            "it holds 60001 bytes, more than the 60000 FDB reads",
        ),
        // Without a client certificate every connection to a TLS coordinator fails: said
        // at once, not after --timeout-available.
        (
            b"hand:abc@127.0.0.1:4500:tls\n".to_vec(),
            "its coordinators are reached over TLS (`:tls`), and the testers and fdbcli \
             have no certificate or key: set FDB_TLS_CERTIFICATE_FILE and FDB_TLS_KEY_FILE",
        ),
    ] {
        std::fs::remove_file(&bad).ok();
        std::fs::write(&bad, contents).unwrap();
        let o = against_existing(&s, &a, &bad, &[]);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(says), "{says}: {}", text(&o));
    }
    assert_only_the_hand_cluster_is_left(&s);
}
