//! Signals and cleanup: an interrupt tears down and keeps the results, the reaper ends
//! what a killed gate left, the next run cleans up after both, and nothing else is killed.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::support::{code, text, Sandbox};

#[test]
fn ctrl_c_tears_down_keeps_results_and_exits_2() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"mako_run_hang": true}), json!({}));
    let mut child = s.spawn_until_mako_runs(&a, &b);
    assert!(
        !s.leftover_processes().is_empty(),
        "the cluster should be running"
    );
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2));
    s.assert_no_leftover_processes();
    let trials = s.read_trials();
    assert_eq!(
        trials.as_array().unwrap().len(),
        1,
        "no trial after the interrupt"
    );
    assert_eq!(trials[0]["outcome"], "interrupted");
    assert_eq!(s.read_json("summary.json")["interrupted"], true);
    // The killed mako's sample directory and shared memory were removed.
    assert_no_mako_files(&a);
}

/// Panics unless the files named after each mako of tree `a` (its sample directory and
/// shared memory) are gone.
fn assert_no_mako_files(a: &Path) {
    let pids = std::fs::read_to_string(a.join("double-mako-pids")).unwrap();
    for pid in pids.lines() {
        assert!(!Path::new(&format!("/tmp/makoTemp{pid}")).exists());
        assert!(!Path::new(&format!("/dev/shm/mako{pid}")).exists());
    }
}

#[test]
fn a_dropped_ssh_session_sighup_ends_the_run_in_order() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"mako_run_hang": true}), json!({}));
    let child = s.spawn_until_mako_runs(&a, &b);
    // Under memory pressure the OOM killer takes mako or a server before the gate and its
    // reaper; the reaper never, where lowering a score is allowed (CAP_SYS_RESOURCE).
    let adj = |pid: u32| -> i32 {
        let text = std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).unwrap();
        text.trim().parse().unwrap()
    };
    let reaper = reaper_of(s.workdir.path()).expect("a reaper watches the gate") as u32;
    let mako: u32 = std::fs::read_to_string(a.join("double-mako-pids"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(adj(mako), 500);
    assert!(adj(child.id()) < adj(mako) && adj(reaper) <= adj(child.id()));
    if has_cap_sys_resource() {
        assert_eq!(adj(reaper), -1000);
    }
    // SIGHUP's default action kills the gate (exit 129), with no summary.json, no JUnit.
    signal(&child, nix::sys::signal::Signal::SIGHUP);
    assert_ended_in_order(&s, child);
}

/// Sends `sig` to the gate `child`.
fn signal(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

/// The interrupted gate `child` ends in order: exit 2, nothing of the run left running,
/// summary.json and the JUnit file written and saying interrupted.
fn assert_ended_in_order(s: &Sandbox, mut child: std::process::Child) {
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{status:?}");
    s.assert_no_leftover_processes();
    assert_eq!(s.read_json("summary.json")["interrupted"], true);
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(junit.contains("interrupted"), "{junit}");
}

#[test]
fn a_gate_stopped_mid_trial_is_said_not_taken_for_a_quick_phase() {
    // A gate stopped for 10 min in a configure phase bounded at 120 s sees fdbcli's exit
    // on waking: taken as success, the 642 s would go unsaid.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let mut cmd = s.bench_command(&a, &b, &[]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let child = s.spawn_until_mako_runs_of(cmd, &a);
    signal(&child, nix::sys::signal::Signal::SIGSTOP);
    std::thread::sleep(Duration::from_secs(7));
    signal(&child, nix::sys::signal::Signal::SIGCONT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trials = s.read_trials();
    let stalled: Vec<f64> = trials
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["gate_stalls_s"].as_array().cloned().unwrap_or_default())
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(stalled.len(), 1, "{trials:#}");
    assert!((6.0..60.0).contains(&stalled[0]), "{stalled:?}");
    let err = text(&o);
    assert!(err.contains("the gate itself was stalled for"), "{err}");
    let notes = s.read_json("summary.json").to_string();
    assert!(notes.contains("the gate itself was stalled"), "{notes}");
}

#[test]
fn a_sigterm_delivered_twice_at_once_is_one_interrupt() {
    // GNU `timeout` sends SIGTERM to the gate and then to its process group: both arrive
    // within microseconds. Taken as a repeat, the second would exit at once and lose the
    // results.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"mako_run_hang": true}), json!({}));
    let child = s.spawn_until_mako_runs(&a, &b);
    for _ in 0..2 {
        signal(&child, nix::sys::signal::Signal::SIGTERM);
    }
    assert_ended_in_order(&s, child);
}

#[test]
fn a_process_that_left_its_group_is_ended_after_its_trial() {
    // A mako worker in a group of its own (setsid) escapes the group kill: left, it would
    // outlive the run, taking CPU from every later trial and from the next run.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"mako_detached_worker": true}), json!({}));
    let o = s.bench(&a, &b, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    s.assert_no_leftover_processes();
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    assert!(
        log.contains("outlived the trial outside its process groups (setsid) and was killed")
            && log.contains("--double-worker"),
        "{log}"
    );
}

#[test]
fn a_child_the_gate_inherited_across_exec_is_left_alone() {
    // `sleep & exec xtask bench ...` (a CI entry point): the sleep is the gate's child from
    // its first instant, but no trial's: the escapee sweep must leave it alone.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"mako_detached_worker": true}), json!({}));
    let gate = s.bench_command(&a, &b, &["--trials", "1"]);
    let pidfile = s.dir.path().join("sleeper.pid");
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"sleep 300 & echo $! > "$0"; exec "$@""#)
        .arg(&pidfile)
        .arg(gate.get_program())
        .args(gate.get_args())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, v) in gate.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    let status = cmd.status().unwrap();
    let sleeper: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
        .is_ok_and(|stat| !stat.contains(") Z "));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sleeper),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(status.success(), "{status:?}");
    assert!(alive, "the gate killed a child it inherited");
    // The trial's own escapee was still ended.
    s.assert_no_leftover_processes();
}

#[test]
fn a_second_interrupt_later_exits_at_once() {
    let s = Sandbox::new();
    // The cluster ignores SIGTERM, so the orderly end of the first interrupt takes the
    // servers' whole stop grace: the second signal lands while it is under way.
    let (a, b) = s.ab(
        json!({"mako_run_hang": true, "server_ignores_sigterm": true}),
        json!({}),
    );
    let mut child = s.spawn_until_mako_runs(&a, &b);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{status:?}");
    // Exited before writing its summary; the servers die by their parent-death signal.
    assert!(!s.out().join("summary.json").exists());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.leftover_processes().is_empty() {
        assert!(Instant::now() < deadline, "{:?}", s.leftover_processes());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether this process may lower an `oom_score_adj` (CAP_SYS_RESOURCE, capability 24, in
/// its effective set).
fn has_cap_sys_resource() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    eff & (1 << 24) != 0
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
    // Someone watching a file of the dead run (`tail -f` of a trace file), in a process
    // group of its own, not the run's: the cleanup must not kill it with the run's processes.
    let mut viewer = {
        use std::os::unix::process::CommandExt as _;
        std::process::Command::new("sh")
            .args(["-c", "sleep 300", "viewer"])
            .arg(stale[0].path().join("trace.xml"))
            .process_group(0)
            .spawn()
            .unwrap()
    };
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
    let viewer_alive = viewer.try_wait().unwrap().is_none();
    let _ = viewer.kill();
    let _ = viewer.wait();
    assert!(
        viewer_alive,
        "the cleanup killed a process that was not the run's"
    );
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
fn the_reaper_touches_nothing_it_cannot_prove_is_a_dead_gates_run_dir() {
    // `xtask __reap DIR LOG` by hand: a directory that is not a run dir (no lock, or a
    // FIFO planted as the lock, or the wrong name) survives, and nothing hangs.
    let s = Sandbox::new();
    let victims = [
        ("perfgate-1-nolock", None),
        ("perfgate-2-fifo", Some(true)),
        ("somebodys-dir", Some(false)),
    ];
    for (name, lock) in victims {
        let dir = s.dir.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("precious"), "keep").unwrap();
        let lock_path = dir.join(".perfgate-run.lock");
        match lock {
            Some(true) => nix::unistd::mkfifo(&lock_path, nix::sys::stat::Mode::S_IRWXU).unwrap(),
            Some(false) => std::fs::write(&lock_path, "").unwrap(),
            None => {}
        }
        let o = crate::support::gate_cmd()
            .arg("__reap")
            .arg(&dir)
            .arg(s.dir.path().join("log"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        assert_eq!(
            std::fs::read_to_string(dir.join("precious")).unwrap(),
            "keep",
            "{name}"
        );
    }
}

/// A gate whose first trial's mako run hangs (1 s of grace past its window), its stderr
/// piped, once that mako runs.
fn gate_in_a_hung_mako_run(s: &Sandbox) -> std::process::Child {
    let (a, b) = s.ab(json!({"mako_run_hang": true}), json!({}));
    let mut cmd = s.bench_command(&a, &b, &["--timeout-mako-run-grace", "1"]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    s.spawn_until_mako_runs_of(cmd, &a)
}

#[test]
fn a_results_dir_removed_during_the_run_stops_it_naming_the_cause() {
    // Unnoticed, a --out deleted mid-run fails the trial on a missing file of its own,
    // and the next trials write a new results dir with no plan.
    let s = Sandbox::new();
    let child = gate_in_a_hung_mako_run(&s);
    std::fs::remove_dir_all(s.out()).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lost its meta.json during the run") && err.contains("before trial 2"),
        "{err}"
    );
    assert!(
        !s.out().join("trials.json").exists(),
        "no results without their plan"
    );
    s.assert_no_leftover_processes();
}

/// An error that ends a run after its results dir was made leaves that dir saying so: the
/// error at the end of run.log and a summary.json of the error's shape, as `--json`
/// prints it, so that neither a person nor a script reading the dir takes it for a run
/// still going or one that lost its files.
#[test]
fn a_run_ended_by_an_error_leaves_the_error_in_its_results_dir() {
    let s = Sandbox::new();
    let child = gate_in_a_hung_mako_run(&s);
    std::fs::remove_file(s.out().join("meta.json")).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err.matches("lost its meta.json during the run").count(),
        1,
        "{err}"
    );
    let summary = s.read_json("summary.json");
    assert_eq!(summary["exit_code"], 2, "{summary}");
    assert!(
        summary["error"]
            .as_str()
            .is_some_and(|e| e.contains("lost its meta.json during the run")),
        "{summary}"
    );
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains("ERROR") && last.contains("lost its meta.json during the run"),
        "{log}"
    );
    s.assert_no_leftover_processes();
}

/// `meta.json`'s record of how the run contained its processes: `cgroup` or
/// `process_groups`.
fn containment(s: &Sandbox) -> String {
    let meta = s.read_json("meta.json");
    let kind = &meta["plan"]["containment"]["kind"];
    kind.as_str()
        .unwrap_or_else(|| panic!("{meta:#}"))
        .to_string()
}

/// Files named like a mako's leftovers, `/dev/shm/mako<pid>` and `/tmp/makoTemp<pid>`,
/// of a pid no process of this PID namespace has (a mako of another namespace, or files
/// someone planted): no gate started that mako. Removed when dropped.
struct ForeignMako(u32);

impl ForeignMako {
    /// Plants the files for a pid `offset` above `pid_max` (each test its own): no process
    /// of this namespace can have it, so no gate ever starts a mako that names its files
    /// so, while they look like those of a mako that is gone.
    fn plant(offset: u32) -> ForeignMako {
        let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let m = ForeignMako(max + offset);
        std::fs::write(m.shm(), "another mako's").unwrap();
        std::fs::create_dir_all(m.temp()).unwrap();
        m
    }

    fn shm(&self) -> String {
        format!("/dev/shm/mako{}", self.0)
    }

    fn temp(&self) -> String {
        format!("/tmp/makoTemp{}", self.0)
    }

    /// Panics unless both files are still there.
    fn assert_kept(&self) {
        assert!(
            Path::new(&self.shm()).is_file(),
            "{} was removed",
            self.shm()
        );
        assert!(
            Path::new(&self.temp()).is_dir(),
            "{} was removed",
            self.temp()
        );
    }
}

impl Drop for ForeignMako {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.shm());
        let _ = std::fs::remove_dir_all(self.temp());
    }
}

#[test]
fn only_the_files_of_makos_the_gate_started_are_removed() {
    // Another PID namespace's live mako, or files planted for a pid the gate never started,
    // look dead from here: the cleanup at the start of a gate must leave them.
    let foreign = ForeignMako::plant(100);
    // As root: mako on a /dev/shm and /tmp of its own; forced, on the host's, claimed.
    for (forced, names) in [(None, "private"), (Some("process-groups"), "claimed")] {
        let s = Sandbox::new();
        let (a, b) = s.ab(json!({"mako_abort_at_exit": true}), json!({}));
        let mut cmd = s.bench_command(&a, &b, &["--trials", "1"]);
        if let Some(mode) = forced {
            cmd.env("PERFGATE_CONTAINMENT", mode);
        }
        let o = cmd.output().unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        foreign.assert_kept();
        let meta = s.read_json("meta.json");
        assert_eq!(meta["plan"]["mako_names"]["kind"], names, "{meta:#}");
        // Nothing planted at the names could be used: the double saw its /dev/shm and
        // /tmp were not the gate's, or the gate had made both; and nothing is left (mako
        // aborts at exit, leaving its files).
        let seen = std::fs::read_to_string(a.join("double-mako-claimed")).unwrap();
        assert!(
            seen.lines().count() >= 1 && seen.lines().all(|l| l.ends_with(&format!(" {names}"))),
            "{seen}"
        );
        assert_no_mako_files(&a);
    }
}

/// mako's own /tmp and /dev/shm cover the host's for mako alone: a tree whose mako is an
/// absolute link into the host's /tmp (links are resolved by the gate) still runs.
#[test]
fn a_mako_linked_from_the_hosts_tmp_runs_in_its_own_tmp() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let host_tmp = tempfile::tempdir_in("/tmp").unwrap();
    let copy = host_tmp.path().join("mako");
    std::fs::copy(env!("CARGO_BIN_EXE_mako"), &copy).unwrap();
    for tree in [&a, &b] {
        std::fs::remove_file(tree.join("bin/mako")).unwrap();
        std::os::unix::fs::symlink(&copy, tree.join("bin/mako")).unwrap();
    }
    let o = s.bench(&a, &b, &["--trials", "1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let seen = std::fs::read_to_string(a.join("double-mako-claimed")).unwrap();
    let names = s.read_json("meta.json")["plan"]["mako_names"]["kind"].clone();
    assert!(
        seen.lines()
            .all(|l| l.ends_with(&format!(" {}", names.as_str().unwrap()))),
        "{seen}"
    );
}

#[test]
fn after_a_sigkill_of_the_gate_a_worker_that_called_setsid_is_ended_too() {
    // A worker in a session of its own is in none of the run's process groups: only the
    // run's cgroup holds it once its mako died with the gate.
    let foreign = ForeignMako::plant(2000);
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"mako_run_hang": true, "mako_setsid_worker": true}),
        json!({}),
    );
    let mut gate = s.spawn_until_mako_runs(&a, &b);
    let worker = |s: &Sandbox| {
        s.leftover_processes()
            .into_iter()
            .filter(|p| p.contains("--double-worker"))
            .count()
    };
    assert_eq!(worker(&s), 1, "{:?}", s.leftover_processes());
    let kind = containment(&s);
    gate.kill().unwrap();
    gate.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while reaper_of(s.workdir.path()).is_some()
        || std::fs::read_dir(s.workdir.path()).unwrap().count() > 0
    {
        assert!(Instant::now() < deadline, "the reaper never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The reaper removes only the files of the makos its gate started.
    foreign.assert_kept();
    if kind == "cgroup" {
        s.assert_no_leftover_processes();
        let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
        assert!(log.contains("--double-worker"), "{log}");
    } else {
        // Process groups only (the named fallback): the worker outlives the run.
        assert_eq!(kind, "process_groups");
        let left = s.leftover_processes();
        assert!(
            left.iter().all(|p| p.contains("--double-worker")),
            "{left:?}"
        );
        for pid in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmd = std::fs::read(pid.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmd).contains("--double-worker")
                && String::from_utf8_lossy(&cmd).contains(&*s.dir.path().to_string_lossy())
            {
                let pid: i32 = pid.file_name().to_string_lossy().parse().unwrap();
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

#[test]
fn a_double_forked_descendant_naming_nothing_of_the_run_is_ended_after_its_trial() {
    // `setsid -f` in mako: an orphan at once, in a session of its own, its command line
    // naming neither the run dir nor the cluster. The cgroup, and without one the gate as
    // its subreaper, end it; meta.json says which.
    for forced in [None, Some("process-groups")] {
        let s = Sandbox::new();
        let (a, b) = s.ab(json!({"mako_escaped_worker": true}), json!({}));
        let mut cmd = s.bench_command(&a, &b, &["--trials", "1"]);
        if let Some(mode) = forced {
            cmd.env("PERFGATE_CONTAINMENT", mode);
        }
        let o = cmd.output().unwrap();
        assert_eq!(code(&o), 0, "{forced:?}: {}", text(&o));
        s.assert_no_leftover_processes();
        let kind = containment(&s);
        if forced.is_some() {
            assert_eq!(kind, "process_groups");
            let why = s.read_json("meta.json")["plan"]["containment"]["why"].clone();
            assert_eq!(why, "PERFGATE_CONTAINMENT=process-groups");
        }
        let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
        assert!(
            log.contains("outlived the trial outside its process groups")
                && log.contains("--double-worker"),
            "{forced:?}: {log}"
        );
    }
}

#[test]
fn a_bad_containment_is_a_usage_error() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s
        .bench_command(&a, &b, &["--trials", "1"])
        .env("PERFGATE_CONTAINMENT", "jail")
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o)
            .contains("PERFGATE_CONTAINMENT is 'jail': it takes auto, cgroup or process-groups"),
        "{}",
        text(&o)
    );
}
