//! `--pairing duet`: both arms of a pair at once, each on half of the CPUs, against a host
//! whose speed drifts (the double's `host_speed_pct`): the duet's pairs cancel the drift,
//! sequential pairs do not.

use serde_json::{json, Value};

use crate::support::{code, text, Sandbox, TINY};

/// The double's moments (`double-host-moments`) of `tree`'s mako runs, in run order.
fn moments(tree: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(tree.join("double-host-moments"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// The CPUs the tests may run on.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    (0..nix::sched::CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .collect()
}

/// TPS's change of a run: (pct, half-width of its 95% interval), from summary.json.
fn tps_change(s: &Sandbox) -> (f64, f64, Value) {
    let j = s.read_json("summary.json")["judgements"][0].clone();
    assert_eq!(j["metric"], "tps", "{j:#}");
    let c = &j["change"];
    let (low, high) = (
        c["ci95_low_pct"].as_f64().unwrap(),
        c["ci95_high_pct"].as_f64().unwrap(),
    );
    (c["pct"].as_f64().unwrap(), (high - low) / 2.0, j)
}

#[test]
fn a_duets_pairs_share_the_hosts_moments_and_cancel_its_drift_where_sequential_ones_do_not() {
    let drifting = |extra: Value| {
        let mut v = json!({"host_speed_pct": 10.0});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let cpus = allowed_cpus();
    // Windows of 30 s (3 batches of the per-second pairing), 0.3 s at the double's pace.
    let mut workload = TINY.to_vec();
    let at = workload.iter().position(|f| *f == "--seconds").unwrap();
    workload[at + 1] = "32";
    let run = |s: &Sandbox, a: &std::path::Path, b: &std::path::Path, flags: &[&str]| {
        s.bench_command_with(a, b, &s.out(), &workload, flags)
            .output()
            .unwrap()
    };
    // Sequential: each run has a moment of its own; the drift is the pairs' noise.
    let seq = Sandbox::new();
    let (a, b) = seq.ab(drifting(json!({})), drifting(json!({"tps": 950.0})));
    let o = run(&seq, &a, &b, &["--trials", "4"]);
    assert!([0, 1].contains(&code(&o)), "{}", text(&o));
    let (a_m, b_m) = (moments(&a), moments(&b));
    assert_eq!(a_m.len(), 4, "{a_m:?}");
    assert!(a_m.iter().all(|m| !b_m.contains(m)), "{a_m:?} {b_m:?}");
    let (_, seq_width, seq_j) = tps_change(&seq);
    // Its arms never measured the same seconds: nothing to pair second by second.
    assert!(seq_j.get("per_second").is_none(), "{seq_j:#}");
    let s = Sandbox::new();
    let (a, b) = s.ab(drifting(json!({})), drifting(json!({"tps": 950.0})));
    let o = run(&s, &a, &b, &["--trials", "4", "--pairing", "duet"]);
    if cpus.len() < 2 {
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains("may run on 1 CPU"), "{}", text(&o));
        return;
    }
    assert_eq!(code(&o), 1, "{}", text(&o));
    // Both arms of each pair ran in the same moments of the host.
    let (a_m, b_m) = (moments(&a), moments(&b));
    assert_eq!(a_m.len(), 4, "{a_m:?}");
    let (mut a_sorted, mut b_sorted) = (a_m.clone(), b_m.clone());
    a_sorted.sort();
    b_sorted.sort();
    assert_eq!(a_sorted, b_sorted);
    let (pct, width, j) = tps_change(&s);
    assert_eq!(j["verdict"], "REGRESSION", "{j:#}");
    assert!((pct + 5.0).abs() < 0.3, "{j:#}");
    assert!(
        width * 5.0 < seq_width,
        "duet ±{width}%, sequential ±{seq_width}%"
    );
    // Second by second, the arms of each pair moved with the host's seconds together,
    // and their ratio kept nothing of them.
    let ps = &j["per_second"];
    assert_eq!(ps["pairs"], 4, "{j:#}");
    assert_eq!(ps["window_s"], 30.0, "{j:#}");
    assert!(ps["arm_correlation"].as_f64().unwrap() > 0.9, "{j:#}");
    assert!(ps["within_pct"].as_f64().unwrap() < 0.1, "{j:#}");
    // The double's halves are alike: the pairs' ratio does not depend on the placement.
    assert!(
        ps["placement"]["pct"].as_f64().unwrap().abs() < 0.1,
        "{j:#}"
    );
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("duet pairs second by second (4 pairs"),
        "{notes}"
    );
    // Each arm on a half of the CPUs, the halves swapped from pair to pair; the plan says so.
    let meta = s.read_json("meta.json");
    let half = cpus.len() / 2;
    let halves = json!([cpus[..half], cpus[half..2 * half]]);
    assert_eq!(meta["plan"]["duet_halves"], halves, "{meta:#}");
    for t in meta["plan"]["trials"].as_array().unwrap() {
        let first = (t["repetition"].as_u64().unwrap() % 2 == 1) == (t["arm"] == "baseline");
        let cpus = &halves[usize::from(!first)];
        assert_eq!(t["pinning"]["storage"], *cpus, "{t}");
        assert_eq!(t["pinning"]["others"], *cpus, "{t}");
    }
}

#[test]
fn a_duet_is_refused_where_its_arms_cannot_run_at_once() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // An odd number of pairs is run, with a warning that the halves do not cancel.
    if allowed_cpus().len() >= 2 {
        for (trials, warned) in [("3", true), ("4", false)] {
            let o = s.bench(
                &a,
                &b,
                &["--pairing", "duet", "--trials", trials, "--dry-run"],
            );
            assert_eq!(code(&o), 0, "{}", text(&o));
            assert_eq!(
                text(&o).contains("in 2 of them and on the second in 1"),
                warned,
                "--trials {trials}: {}",
                text(&o)
            );
        }
    }
    let mako = ["--seconds", "10", "--warmup-seconds", "2"];
    for (workload, flags, said) in [
        (&mako[..], &["--pin"][..], "--pin"),
        (&crate::bench::SMALL[..], &[][..], "the multitest driver"),
        (
            &["--profile", "sim-g18ui"][..],
            &[][..],
            "a simulation profile",
        ),
    ] {
        let mut all = vec!["--pairing", "duet"];
        all.extend_from_slice(flags);
        let o = s
            .bench_command_with(&a, &b, &s.out(), workload, &all)
            .output()
            .unwrap();
        assert_eq!(code(&o), 64, "{flags:?}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("--pairing duet does not go with {said}")),
            "{}",
            text(&o)
        );
    }
}

/// `cmd` with the gate's default pairing (no `PERFGATE_PAIRING`) and its output.
fn by_default(mut cmd: std::process::Command) -> std::process::Output {
    cmd.env_remove("PERFGATE_PAIRING").output().unwrap()
}

/// The plan's `pairing` line of `o`, which must have one.
fn pairing_line(o: &std::process::Output) -> String {
    let t = text(o);
    t.lines()
        .find(|l| l.starts_with("pairing "))
        .unwrap_or_else(|| panic!("no pairing line: {t}"))
        .to_string()
}

#[test]
fn the_default_runs_a_duet_where_the_run_allows_one_and_says_why_not_elsewhere() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let plan = |workload: &[&str], flags: &[&str]| {
        let mut all = vec!["--trials", "4", "--dry-run"];
        all.extend_from_slice(flags);
        s.bench_command_with(&a, &b, &s.out(), workload, &all)
    };
    let o = by_default(plan(&TINY, &[]));
    assert_eq!(code(&o), 0, "{}", text(&o));
    let cpus = allowed_cpus();
    if cpus.len() >= 2 {
        let line = pairing_line(&o);
        assert!(line.starts_with("pairing    duet: "), "{line}");
        assert!(
            line.ends_with("(the default (--pairing auto): the run allows a duet)"),
            "{line}"
        );
        assert!(
            text(&o).contains("a pair at once, the pair's arms started together"),
            "{}",
            text(&o)
        );
    }
    // Without --trials, a duet runs 4 pairs, whose halves cancel; sequential pairs 3.
    let pairs = |o: &std::process::Output| {
        let t = text(o);
        let line = t
            .lines()
            .find(|l| l.starts_with("trials "))
            .unwrap_or_default();
        line.split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    let o = by_default(s.bench_command(&a, &b, &["--dry-run"]));
    assert_eq!(
        pairs(&o),
        if cpus.len() >= 2 { "8" } else { "6" },
        "{}",
        text(&o)
    );
    let o = by_default(s.bench_command(&a, &b, &["--dry-run", "--pin"]));
    assert_eq!(pairs(&o), "6", "{}", text(&o));
    // Where a duet cannot run, the default is sequential and the plan says why.
    let one_cpu = {
        let cmd = plan(&TINY, &[]);
        let mut t = std::process::Command::new("taskset");
        t.args(["-c", &cpus[0].to_string()]).arg(cmd.get_program());
        t.args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => t.env(k, v),
                None => t.env_remove(k),
            };
        }
        t
    };
    let mako = ["--seconds", "10", "--warmup-seconds", "2"];
    for (cmd, said) in [
        (plan(&mako, &["--pin"]), "--pin (a duet gives each arm"),
        (plan(&crate::bench::SMALL, &[]), "the multitest driver"),
        (one_cpu, "1 allowed CPU (each arm needs one at least"),
    ] {
        let o = by_default(cmd);
        assert_eq!(code(&o), 0, "{said}: {}", text(&o));
        let line = pairing_line(&o);
        assert!(
            line.starts_with("pairing    sequential: each pair's trials one after the other"),
            "{line}"
        );
        assert!(
            line.contains(&format!(
                "(the default (--pairing auto) cannot run a duet with {said}"
            )),
            "{line}"
        );
        assert!(text(&o).contains("in this order"), "{}", text(&o));
    }
    // The variable is the flag's default: a duet it asks for is refused as the flag's is.
    let mut cmd = plan(&mako, &["--pin"]);
    let o = cmd.env("PERFGATE_PAIRING", "duet").output().unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--pairing duet does not go with --pin"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_default_falls_back_to_sequential_where_two_trials_do_not_fit_and_one_does() {
    let s = Sandbox::new();
    if !s.workdir_is_tmpfs() || allowed_cpus().len() < 2 {
        return;
    }
    let (a, b) = s.ab(json!({}), json!({}));
    // What one trial needs, from the refusal of a cgroup it cannot fit.
    let with_headroom = |mib: u64, pairing: Option<&str>| {
        let mut cmd = s.bench_command(&a, &b, &["--dry-run"]);
        cmd.env("PERFGATE_CGROUP_ROOT", s.simulated_cgroup(mib));
        match pairing {
            Some(p) => cmd.env("PERFGATE_PAIRING", p).output().unwrap(),
            None => by_default(cmd),
        }
    };
    let o = with_headroom(1, None);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let need: f64 = text(&o)
        .split("a trial needs about ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", text(&o)));
    // Room for 1.5 trials (of the 90% the check uses): one fits, two do not.
    let room = (need * 1.5 / 0.9).ceil() as u64;
    let o = with_headroom(room, None);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let line = pairing_line(&o);
    assert!(line.starts_with("pairing    sequential: "), "{line}");
    // The pairs a sequential run has without --trials, not a duet's.
    assert!(
        text(&o).contains("trials     6 in this order"),
        "{}",
        text(&o)
    );
    assert!(
        line.contains("cannot run a duet: two trials at once do not fit (the 2 trials a duet runs at once need"),
        "{line}"
    );
    assert!(
        line.contains("the 2 trials a duet runs at once need about"),
        "{line}"
    );
    // Asked for by name, the duet is refused with the same reason.
    let o = with_headroom(room, Some("duet"));
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("the 2 trials a duet runs at once need about"),
        "{}",
        text(&o)
    );
}
