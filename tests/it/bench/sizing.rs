//! How many trials: `calibrate`'s A/A estimate and `--trials auto` stopping when the
//! verdict is decided.

use serde_json::json;

use crate::support::{code, text, Sandbox};

#[test]
fn calibrate_runs_an_aa_and_reports_noise_mde_and_trials_needed() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"noise_pct": 3.0}));
    let o = crate::support::gate_cmd()
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
    // With --json, stdout is summary.json alone (the calibration is in its file).
    let o = crate::support::gate_cmd()
        .args(["calibrate", "--build"])
        .arg(&a)
        .arg("--out")
        .arg(s.dir.path().join("json"))
        .args(crate::support::TINY)
        .args(["--trials", "2", "--json", "--quiet"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o)));
    crate::support::assert_valid_summary(&summary);
    assert!(s.dir.path().join("json/calibration.json").is_file());
}

/// The trials sized for a budget: the noise split into within and between trials, and a
/// profile that runs them.
#[test]
fn calibrate_sizes_the_trials_for_a_budget_and_writes_the_profile() {
    let s = Sandbox::new();
    // Noise between trials only: mako's per-second TPS is flat within a trial.
    let a = s.tree("a", json!({"noise_pct": 3.0}));
    let profile = s.dir.path().join("host.json");
    // TINY with a 60 s window: sizing needs three 10 s batches.
    let mut workload = crate::support::TINY;
    (workload[7], workload[9]) = ("20", "80");
    let calibrate = |out: &str| {
        crate::support::gate_cmd()
            .args(["calibrate", "--build"])
            .arg(&a)
            .arg("--out")
            .arg(s.dir.path().join(out))
            .args(workload)
            .args(["--trials", "3", "--budget", "20m", "--write-profile"])
            .arg(&profile)
            .env("WORKDIR", s.workdir.path())
            .output()
            .unwrap()
    };
    let o = calibrate("cal");
    assert_eq!(code(&o), 0, "{}", text(&o));
    let cal: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("cal/calibration.json")).unwrap(),
    )
    .unwrap();
    let tps = &cal["engines"][0]["metrics"][0];
    assert_eq!(tps["metric"], "tps", "{cal}");
    // Flat per-second TPS: the whole of the noise is between trials.
    assert_eq!(tps["split"]["within_pct"], 0.0, "{cal}");
    assert!(tps["split"]["between_pct"].as_f64().unwrap() > 0.0, "{cal}");
    assert_eq!(tps["split"]["window_s"], 60.0, "{cal}");
    // Between-trial noise: the shortest window and the shortest warmup, as many pairs as
    // fit 20 minutes.
    let z = &cal["engines"][0]["sizing"];
    assert_eq!(
        (z["warmup_seconds"].as_u64(), z["window_seconds"].as_u64()),
        (Some(10), Some(30)),
        "{cal}"
    );
    let overhead = cal["cost"]["overhead_s"].as_f64().unwrap();
    let pairs = (1200.0 / (2.0 * (overhead + 40.0))).floor();
    assert_eq!(z["pairs"].as_f64(), Some(pairs), "{cal}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("--warmup-seconds 10 --seconds 40"),
        "{stdout}"
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    assert_eq!(
        (
            &written["name"],
            &written["warmup_seconds"],
            &written["seconds"],
            &written["rows"]
        ),
        (&json!("host"), &json!(10), &json!(40), &json!(1000))
    );
    // The profile runs: a bench with it plans the sized trials.
    let o = crate::support::gate_cmd()
        .args(["bench", "--baseline-build"])
        .arg(&a)
        .arg("--experiment-build")
        .arg(&a)
        .arg("--profile-file")
        .arg(&profile)
        .args(["--allow-same", "--dry-run"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("warmup 10 s of 40 s"), "{}", text(&o));
    // A second calibration never replaces the profile, and says so before any trial.
    let o = calibrate("again");
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("something is there already"),
        "{}",
        text(&o)
    );
    assert!(!s.dir.path().join("again/trials.json").exists());
    // Also refused before any trial: a budget that cannot hold 2 pairs of the shortest
    // sized trials (160 s), and a profile path among the run's own outputs.
    let out = s.dir.path().join("third");
    let cases = [
        (
            "2m",
            s.dir.path().join("new.json"),
            "need at least 160 s for 2 pairs",
        ),
        (
            "0s",
            s.dir.path().join("new.json"),
            "need at least 160 s for 2 pairs",
        ),
        (
            "20m",
            out.join("summary.json"),
            "the run writes its own results there",
        ),
    ];
    for (budget, path, why) in cases {
        let o = crate::support::gate_cmd()
            .args(["calibrate", "--build"])
            .arg(&a)
            .arg("--out")
            .arg(&out)
            .args(workload)
            .args(["--trials", "3", "--budget", budget, "--write-profile"])
            .arg(&path)
            .env("WORKDIR", s.workdir.path())
            .output()
            .unwrap();
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(why), "{}", text(&o));
        assert!(!out.join("trials.json").exists() && !path.exists());
    }
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&profile).unwrap())
            .unwrap(),
        written
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
    assert_eq!(s.read_trials().as_array().unwrap().len(), 6);
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    assert!(
        log.contains("after 3 pairs: REGRESSION") && log.contains("(look 1 of at most "),
        "{log}"
    );
}

/// `--noise-from`: a calibration's noise compared with a run's pairs (never pooled),
/// recorded in meta.json and in the verdict, used again by `compare`; calibrations that do
/// not fit are refused before any trial, saying what differs.
#[test]
fn noise_from_a_calibration_is_compared_recorded_and_checked() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"noise_pct": 2.0}));
    let cal = s.dir.path().join("cal");
    s.calibrate(&a, &cal, 4);
    let cal_arg = cal.to_str().unwrap();
    let o = s.bench(
        &a,
        &a,
        &["--allow-same", "--trials", "2", "--noise-from", cal_arg],
    );
    assert!(code(&o) < 2, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let tps = &summary["judgements"][0];
    let used = tps["noise_from"]
        .as_str()
        .unwrap_or_else(|| panic!("{tps}"));
    assert!(
        used.starts_with(&format!(
            "noise NOT pooled with calibration {cal_arg} (4 A/A pairs"
        )) && used.contains("judged on this run's 2 pairs alone"),
        "{used}"
    );
    // Two pairs alone have 1 degree of freedom (less for their order), and the
    // calibration's pairs add none.
    let df = tps["comparison"]["df"].as_f64().unwrap();
    assert!(df > 0.0 && df <= 1.0, "{tps}");
    assert!(
        text(&o).contains("note: noise NOT pooled with calibration"),
        "{}",
        text(&o)
    );
    let meta = s.read_json("meta.json");
    let prior = &meta["plan"]["noise_prior"];
    assert_eq!(prior["source"], cal_arg, "{prior}");
    assert!(prior["noise"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["metric"] == "tps" && n["pairs"] == 4 && n["sd_log"].as_f64().unwrap() > 0.0));
    // compare re-judges with the recorded figures, even with the calibration gone.
    std::fs::rename(&cal, s.dir.path().join("cal-moved")).unwrap();
    let (o, rejudged) = s.compare_again();
    assert!(code(&o) < 2, "{}", text(&o));
    assert_eq!(rejudged["judgements"][0]["noise_from"], tps["noise_from"]);
    assert_eq!(
        rejudged["judgements"][0]["comparison"], tps["comparison"],
        "the same numbers"
    );
    std::fs::rename(s.dir.path().join("cal-moved"), &cal).unwrap();

    // Refused, before any trial: each names what differs.
    let refused = |name: &str, noise_from: &str, extra: &[&str], want: &str| {
        let mut args = vec!["--allow-same", "--trials", "2", "--noise-from", noise_from];
        args.extend_from_slice(extra);
        let o = s.bench_in(name, &a, &a, &args);
        assert_eq!(code(&o), 64, "{name}: {}", text(&o));
        assert!(text(&o).contains(want), "{name}: {}", text(&o));
        assert!(
            !s.dir.path().join(name).join("trials.json").exists(),
            "{name}: no trial ran"
        );
    };
    // A bench run's results are not a calibration.
    let bench_dir = s.out();
    refused(
        "not-cal",
        bench_dir.to_str().unwrap(),
        &[],
        "not the results dir of a `cargo xtask calibrate` run",
    );
    refused(
        "xacts",
        cal_arg,
        &["--async-xacts", "8"],
        // Only the field that differs is named, not the two whole workloads.
        "another workload than this run's (async_xacts 64 vs 8, the calibration's first)",
    );
    // Pairs run at once are not noisy as pairs run one after the other are.
    if crate::bench::duet::allowed_cpus().len() >= 2 {
        refused(
            "duet",
            cal_arg,
            &["--pairing", "duet"],
            "its pairs were sequential and this run's are duet (--pairing duet)",
        );
    }
    // A calibration whose pairs agree exactly measured no noise, which no host has: nothing
    // to compare a run's noise with.
    let quiet = s.tree("quiet", json!({"noise_pct": 0.0}));
    let quiet_cal = s.dir.path().join("quiet-cal");
    s.calibrate(&quiet, &quiet_cal, 2);
    refused(
        "quiet-run",
        quiet_cal.to_str().unwrap(),
        &[],
        "A/A pairs of redwood agree exactly (sd 0)",
    );
    // Too old, and from the future (meta.json edited in copies).
    for (name, started, want) in [
        ("old", 1_000_000_000u64, "older than --noise-max-age 14days"),
        ("future", 9_000_000_000, "after this host's clock now"),
    ] {
        let copy = s.dir.path().join(format!("cal-{name}"));
        std::fs::create_dir(&copy).unwrap();
        for f in [
            "meta.json",
            "trials.json",
            "summary.json",
            "calibration.json",
        ] {
            std::fs::copy(cal.join(f), copy.join(f)).unwrap();
        }
        let mut meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(copy.join("meta.json")).unwrap())
                .unwrap();
        meta["started_at_unix_s"] = json!(started);
        std::fs::write(copy.join("meta.json"), meta.to_string()).unwrap();
        refused(name, copy.to_str().unwrap(), &[], want);
    }
}

/// calibrate's own outputs (calibration.json, the sized profile) are no copy's
/// destination: refused before any trial, naming the flag.
#[test]
fn calibrate_refuses_a_copy_onto_its_own_outputs() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let out = s.dir.path().join("cal");
    let profile = s.dir.path().join("sized.json");
    for (extra, says) in [
        (
            vec!["--export-bmf".into(), out.join("calibration.json")],
            "--export-bmf",
        ),
        (
            vec![
                "--write-profile".into(),
                profile.clone(),
                "--export-benchmark".into(),
                s.dir.path().join("hi.json"),
                profile.clone(),
            ],
            "--write-profile",
        ),
    ] {
        let o = crate::support::gate_cmd()
            .args(["calibrate", "--build"])
            .arg(&a)
            .arg("--out")
            .arg(&out)
            .args(crate::support::TINY)
            .args(["--trials", "2"])
            .args(&extra)
            .env("WORKDIR", s.workdir.path())
            .output()
            .unwrap();
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(says), "{}", text(&o));
        assert!(!out.exists() && !profile.exists(), "{}", text(&o));
    }
}

/// A profile that cannot be sized is a failed copy of `--write-profile`, written after the
/// run's own files (calibration.json among them) and the other copies: the exit status
/// and summary.json's agree, and say which flag.
#[test]
fn a_profile_that_cannot_be_sized_fails_its_flag_after_the_runs_own_files() {
    let s = Sandbox::new();
    // Every trial an ERROR: no complete A/A pair to size from.
    let a = s.tree("a", json!({"mako_truncates_report": true}));
    let (out, profile, junit) = (
        s.dir.path().join("cal"),
        s.dir.path().join("host.json"),
        s.dir.path().join("junit.xml"),
    );
    let mut workload = crate::support::TINY;
    (workload[7], workload[9]) = ("20", "80");
    let o = crate::support::gate_cmd()
        .args(["calibrate", "--build"])
        .arg(&a)
        .arg("--out")
        .arg(&out)
        .args(workload)
        .args(["--trials", "2", "--budget", "20m", "--junit"])
        .arg(&junit)
        .arg("--write-profile")
        .arg(&profile)
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(!profile.exists());
    assert!(out.join("calibration.json").is_file() && junit.is_file());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["exit_code"], 2, "{summary}");
    let failure = &summary["copy_failures"][0];
    assert_eq!(failure["flag"], "--write-profile", "{summary}");
    assert!(
        failure["error"]
            .as_str()
            .unwrap()
            .contains("the trials could not be sized: 0 complete A/A pairs"),
        "{summary}"
    );
    assert!(
        text(&o).contains("--write-profile ")
            && text(&o).contains("was not written: the trials could not be sized"),
        "{}",
        text(&o)
    );
}
