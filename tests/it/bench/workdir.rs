//! The work dir: a disk-backed one is warned about, a trial that would not fit is refused,
//! a second gate on a busy one is refused.

use serde_json::json;

use crate::support::{code, text, Sandbox};

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
    assert_eq!(s.read_trials()[0]["knobs"], json!([]));
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
    let cgroup = s.simulated_cgroup(50);
    let mut cmd = s.bench_command(&a, &b, &[]);
    let o = cmd.env("PERFGATE_CGROUP_ROOT", &cgroup).output().unwrap();
    if s.workdir_is_tmpfs() {
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains("memory cgroup headroom"), "{}", text(&o));
    }
}

#[test]
fn a_second_gate_on_a_busy_work_dir_is_refused_naming_the_first() {
    // Two gates on one work dir would each measure the other's load, with no warning.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"time_scale": 0.2}), json!({"time_scale": 0.2}));
    let first = s.spawn_until_mako_runs(&a, &b);
    let o = s
        .bench_command_out(&a, &b, &s.dir.path().join("second"), &["--trials", "2"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "another gate is running on the work dir {}: pid {} (",
            s.workdir.path().display(),
            first.id()
        )),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("resource_group"), "{}", text(&o));
    assert!(
        !s.dir.path().join("second/trials.json").exists(),
        "the second ran no trial"
    );
    // Nor did it make its results dir (a meta.json and run.log there would make its retry
    // with the same --out a refusal of a dir that is not empty).
    assert!(!s.dir.path().join("second").exists(), "{}", text(&o));
    // A work dir nested in the first's is the same machine's load: refused too.
    let nested = s.workdir.path().join("nested");
    let o = s
        .bench_command_out(&a, &b, &s.dir.path().join("third"), &["--trials", "2"])
        .env("PERFGATE_WORKDIR", &nested)
        .env_remove("PERFGATE_ALLOW_CONCURRENT")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", text(&o));
    // Other tests' gates may be listed too.
    assert!(
        text(&o).contains("another gate is running on this host: pid ")
            && text(&o).contains(&format!("pid {} (", first.id()))
            && text(&o).contains("PERFGATE_ALLOW_CONCURRENT=1"),
        "{}",
        text(&o)
    );
    assert!(!s.dir.path().join("third/trials.json").exists());
    // Allowed, it runs, and says so once, before its first trial.
    let o = s
        .bench_command_out(&a, &b, &s.dir.path().join("fifth"), &["--trials", "1"])
        .env("PERFGATE_WORKDIR", &nested)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let said = text(&o)
        .matches("PERFGATE_ALLOW_CONCURRENT=1: running anyway")
        .count();
    // The first gate, still running now, was running when this one checked.
    let mut first = first;
    let expected = if first.try_wait().unwrap().is_none() {
        1
    } else {
        said.min(1)
    };
    assert_eq!(said, expected, "{}", text(&o));
    std::fs::remove_dir(&nested).unwrap();
    let o = first.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "the first gate was not disturbed");
    let trials = s.read_trials();
    assert!(
        trials
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["outcome"] == "measured"),
        "{trials}"
    );
    s.assert_no_leftover_processes();
    assert_eq!(std::fs::read_dir(s.workdir.path()).unwrap().count(), 0);
}

#[test]
fn perfgate_workdir_comes_before_the_unprefixed_workdir() {
    // WORKDIR is a name other tools set; the gate's own variable wins.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let own = tempfile::tempdir_in(s.workdir.path().parent().unwrap()).unwrap();
    let o = s
        .bench_command(&a, &b, &["--trials", "1", "--dry-run"])
        .env("PERFGATE_WORKDIR", own.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains(&own.path().display().to_string()),
        "{}",
        text(&o)
    );
    let o = s
        .bench_command(&a, &b, &["--trials", "1", "--dry-run"])
        .env("WORKDIR", "")
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("WORKDIR is set but empty"),
        "{}",
        text(&o)
    );
}
