//! `bench --noise-from DIR`: an earlier calibration's noise, checked against the planned run
//! and read before any trial (`results::noise::NoisePrior`, recorded in meta.json).

use std::{path::Path, time::SystemTime};

use anyhow::{Context as _, Result};

use crate::{
    error::UsageError,
    judge::{calibrate::prior_noise, samples::Sample},
    plan::Plan,
    results::{
        host::{class_identifies_cpu, Host},
        noise::NoisePrior,
        saved::SavedRun,
    },
};

/// Reads the calibration in `dir` for the planned run `plan`. Refused, with what differs
/// and how to get a calibration that fits: a dir that is not a finished `calibrate` run
/// (no calibration.json, no summary.json, interrupted, two different builds), another host
/// class, workload, pairing or work dir kind, older than `max_age_s` (or dated in the future), a run
/// engine it did not calibrate in 2 complete pairs, and a run without pairs
/// (`--no-control`).
pub fn load(dir: &Path, plan: &Plan, max_age_s: u64, now: SystemTime) -> Result<NoisePrior> {
    let refuse = |why: String| -> anyhow::Error {
        UsageError(format!("--noise-from {}: {why}", dir.display())).into()
    };
    if plan.baseline.is_none() {
        return Err(refuse(
            "--no-control runs no pairs, and only pairs' noise is compared with a calibration's"
                .into(),
        ));
    }
    let saved = SavedRun::read(dir).with_context(|| format!("--noise-from {}", dir.display()))?;
    let cal = dir.join("calibration.json");
    if !std::fs::symlink_metadata(&cal).is_ok_and(|m| m.is_file()) {
        return Err(refuse(
            "not the results dir of a `cargo xtask calibrate` run (no calibration.json \
             file); run `cargo xtask calibrate --build TREE --out DIR` on this host first"
                .into(),
        ));
    }
    check_fits(&saved, plan).map_err(refuse)?;
    let (age_s, at) = age(&saved, max_age_s, now).map_err(refuse)?;
    let noise = prior_noise(&Sample::of_trials(&saved.trials), saved.meta.plan.engines());
    if let Some(n) = noise
        .iter()
        .find(|n| n.metric == crate::config::Metric::Tps && n.sd_log <= 0.0)
    {
        return Err(refuse(format!(
            "its {} A/A pairs of {} agree exactly (sd 0), which measures no noise (a test \
             double or a copied trial); calibrate on real trials",
            n.pairs, n.engine
        )));
    }
    for e in &plan.engines {
        if !noise
            .iter()
            .any(|n| n.engine == *e && n.metric == crate::config::Metric::Tps)
        {
            return Err(refuse(format!(
                "it has fewer than 2 complete A/A pairs of {e}; calibrate that engine \
                 (--engine {e}, --trials {} or more)",
                crate::judge::calibrate::ADVISED_PAIRS
            )));
        }
    }
    Ok(NoisePrior {
        source: dir.to_path_buf(),
        calibrated_at: at,
        age_s,
        host_class: saved.meta.host.class(),
        noise,
    })
}

/// Why the saved calibration does not describe `plan`'s noise: unfinished, not an A/A,
/// another host class, workload or work dir kind.
fn check_fits(saved: &SavedRun, plan: &Plan) -> Result<(), String> {
    match &saved.summary {
        None => {
            return Err("the calibration did not finish (no summary.json); run it again".into())
        }
        Some(s) if s.interrupted => {
            return Err("the calibration was interrupted; run it again".into())
        }
        Some(_) => {}
    }
    let p = &saved.meta.plan;
    let same_build = p
        .baseline
        .as_ref()
        .is_some_and(|b| b.version == p.experiment.version);
    if !same_build {
        return Err(
            "its arms ran different builds: only an A/A run (one build in both arms, \
                    as `calibrate` runs) measures the noise alone"
                .into(),
        );
    }
    let (theirs, ours) = (saved.meta.host.class(), Host::read().class());
    if theirs != ours {
        return Err(format!(
            "it ran on host class '{theirs}', this host is '{ours}': noise does not carry \
             over between machines; calibrate on this class of host"
        ));
    }
    if !class_identifies_cpu(&ours) {
        return Err(format!(
            "this host's CPU is not known from /proc/cpuinfo (host class '{ours}'), so the \
             calibration may come from another machine of the same size; run without \
             --noise-from"
        ));
    }
    if p.config.workload != plan.config.workload {
        return Err(format!(
            "it ran another workload than this run's ({}, the calibration's first): \
             calibrate with this run's profile and workload flags",
            p.config
                .workload
                .differences(&plan.config.workload)
                .join(", ")
        ));
    }
    let (theirs, ours) = (p.config.pairing, plan.config.pairing.pairing);
    if theirs != ours {
        // Sequential pairs can always run; a duet only where this run allows one.
        let or = match theirs {
            crate::config::Pairing::Sequential => ", or give this run --pairing sequential",
            crate::config::Pairing::Duet => "",
        };
        return Err(format!(
            "its pairs were {} and this run's are {} ({}): pairs run at once and pairs run \
             one after the other see the host's drift differently, so their noise differs; \
             calibrate with --pairing {}{or}",
            theirs.name(),
            ours.name(),
            plan.config.pairing.reason,
            ours.name(),
        ));
    }
    if p.workdir.tmpfs != plan.workdir.tmpfs {
        return Err(
            "its work dir was on another kind of filesystem (RAM disk or disk) than \
                    this run's: calibrate with this run's --workdir"
                .into(),
        );
    }
    Ok(())
}

/// The calibration's age at `now`, seconds, and its start time (RFC 3339); refused when
/// unknown, in the future or older than `max_age_s`.
fn age(saved: &SavedRun, max_age_s: u64, now: SystemTime) -> Result<(u64, String), String> {
    // One source of the time: the seconds (the RFC 3339 string beside them is for people).
    let Some(started) = saved.meta.started_at_unix_s else {
        return Err(
            "its meta.json does not say when it ran (started_at_unix_s), so its age \
                    is unknown; run the calibration again"
                .into(),
        );
    };
    let at = humantime::format_rfc3339_seconds(
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(started),
    )
    .to_string();
    let now_s = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let Some(age_s) = now_s.checked_sub(started) else {
        return Err(format!(
            "it started at {at}, after this host's clock now: fix the clock or the file"
        ));
    };
    if age_s > max_age_s {
        return Err(format!(
            "it is {} old (started {at}), older than --noise-max-age {}: calibrate again, \
             or give a longer --noise-max-age",
            crate::results::noise::age_text(age_s),
            humantime::format_duration(std::time::Duration::from_secs(max_age_s))
        ));
    }
    Ok((age_s, at))
}
