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
fn allowed_cpus() -> Vec<usize> {
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
