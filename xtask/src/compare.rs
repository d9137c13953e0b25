//! `cargo xtask compare <results-dir>`: judge a saved run again, offline, e.g. with
//! another tolerance. Reads `meta.json` and `trials.json`; runs nothing. Same outputs
//! and exit status as `bench`.

use std::time::SystemTime;

use anyhow::{Context, Result};

use crate::{
    baseline::Baseline,
    bench::{check_writable_file, export},
    config::UsageError,
    flags::CompareArgs,
    judge::{exit_code, judge_looks, Criteria},
    saved::{SavedRun, SavedSummary},
};

/// Judges the saved run in `args.dir` again and exports into `--out` (default
/// `<dir>/compare-<UTC time>`). Exit status as `bench`.
pub fn run(args: &CompareArgs) -> Result<i32> {
    let why = if !args.dir.exists() {
        Some("does not exist")
    } else if !args.dir.is_dir() {
        Some("is not a directory")
    } else if !args.dir.join("meta.json").is_file() {
        Some("holds no meta.json")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(UsageError(format!(
            "{} {why}: give the results dir of a bench or calibrate run (the --out dir, or \
             target/perfgate/<time>-<pid>)",
            args.dir.display()
        ))
        .into());
    }
    let SavedRun {
        meta,
        trials,
        summary,
    } = SavedRun::read(&args.dir)?;
    let c = meta.plan.config;
    let criteria = Criteria {
        // With --trials auto the planned count is a minimum the budget may cut short.
        trials: if c.time_budget.is_some_and(|b| !b.is_null()) {
            1
        } else {
            c.trials
        },
        max_regression_pct: args.max_regression.unwrap_or(c.max_regression_pct),
        slo_tps: args.slo_tps.or(c.slo_tps),
        slo: c.slo,
        strict: args.strict || c.strict,
        unpaired: meta.plan.recorded.is_some(),
        gate_latency: c.gate_latency,
    };
    if !(criteria.max_regression_pct > 0.0 && criteria.max_regression_pct < 100.0) {
        return Err(UsageError("--max-regression must be between 0 and 100".into()).into());
    }
    // An interrupted run may have no summary; then every engine had one look.
    let looks = summary
        .as_ref()
        .map(SavedSummary::looks)
        .unwrap_or_default();
    let interrupted = summary.is_some_and(|s| s.interrupted);
    let mut judged = meta
        .plan
        .recorded
        .as_ref()
        .map(Baseline::as_trials)
        .unwrap_or_default();
    judged.extend(trials);
    let judgements = judge_looks(&judged, &c.engines, criteria, interrupted, &looks);
    let out = match &args.out {
        Some(o) => o.clone(),
        None => {
            let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
                .to_string()
                .replace(':', "");
            args.dir.join(format!("compare-{stamp}"))
        }
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    if let Some(j) = &args.junit {
        check_writable_file(j)?;
    }
    export(
        &out,
        &judgements,
        interrupted,
        &meta.plan.warnings,
        args.junit.as_deref(),
        false,
    )?;
    Ok(exit_code(&judgements))
}
