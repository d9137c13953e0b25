//! `cargo xtask compare <results-dir>`: judge a saved run again, offline, e.g. with
//! another tolerance. Reads `meta.json` and `trials.json`; runs nothing. Same outputs
//! and exit status as `bench`.

use std::time::SystemTime;

use anyhow::{Context, Result};

use crate::{
    cli::CompareArgs,
    config::{check_max_regression, check_slo_tps},
    judge::{exit_code, judge_looks, planned_trials, samples::Sample, Criteria},
    report::write,
    results::{
        fs::{check_writable_file, dir_stamp},
        saved::{SavedRun, SavedSummary},
    },
};

/// Judges the saved run in `args.dir` again and exports into `--out` (default
/// `<dir>/compare-<UTC time>`). Exit status as `bench`.
pub fn run(args: &CompareArgs) -> Result<i32> {
    let SavedRun {
        meta,
        trials,
        summary,
    } = SavedRun::read(&args.dir)?;
    let plan = &meta.plan;
    let c = &plan.config;
    let adaptive = c.time_budget.as_ref().is_some_and(|b| !b.is_null());
    let criteria = Criteria {
        trials: planned_trials(c.trials, adaptive),
        max_regression_pct: args.max_regression.unwrap_or(c.max_regression_pct),
        slo_tps: args.slo_tps.or(c.slo_tps),
        slo: plan.slo(),
        strict: args.strict || c.strict,
        unpaired: plan.recorded.is_some(),
        gates: c.gates(),
        gates_if_measured: c.gates_if_measured(),
    };
    check_max_regression(criteria.max_regression_pct)?;
    check_slo_tps(args.slo_tps)?;
    // An interrupted run may have no summary; then every engine had one look.
    let looks = summary
        .as_ref()
        .map(SavedSummary::looks)
        .unwrap_or_default();
    let interrupted = summary.is_some_and(|s| s.interrupted);
    let samples = Sample::of_run(plan.recorded.as_ref(), &trials);
    let judgements = judge_looks(
        &samples,
        plan.engines(),
        criteria,
        interrupted,
        &looks,
        None,
    );
    let out = match &args.out {
        Some(o) => o.clone(),
        None => args
            .dir
            .join(format!("compare-{}", dir_stamp(SystemTime::now()))),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    if let Some(j) = &args.junit {
        check_writable_file(j)?;
    }
    write::verdicts(
        &out,
        &judgements,
        interrupted,
        &plan.warnings,
        args.junit.as_deref(),
        false,
    )?;
    Ok(exit_code(&judgements, interrupted))
}
