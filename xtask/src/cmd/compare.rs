//! `cargo xtask compare <results-dir>`: judge a saved run again, offline, e.g. with
//! another tolerance. Reads `meta.json` and `trials.json`; runs nothing. Same outputs
//! and exit status as `bench`.

use std::{
    path::{Path, PathBuf},
    time::SystemTime,
};

use anyhow::Result;

use crate::{
    cli::CompareArgs,
    config::{check_max_regression, check_slo_tps, Copies, Schedule},
    error::UsageError,
    judge::{host::host_lines, knee, samples::Sample, Criteria, Judge, Reference},
    report::write,
    results::{
        fs::{check_copies, check_copy_apart, check_results_dir, dir_stamp, resolved},
        saved::{SavedPlan, SavedRun, SavedSummary},
        trial::TrialRecord,
    },
};

/// Judges the saved run in `args.dir` again and exports into `--out` (default
/// `<dir>/compare-<UTC time>`). Exit status as `bench`.
pub fn run(args: &CompareArgs) -> Result<i32> {
    let SavedRun {
        meta,
        trials,
        set_aside,
        summary,
    } = SavedRun::read(&args.dir)?;
    let plan = &meta.plan;
    if let Some(p) = &plan.noise_prior {
        p.check(&args.dir.join("meta.json").display().to_string())?;
    }
    let reference = Reference::of(plan.recorded.as_ref(), plan.baseline.is_some());
    let criteria = criteria(args, plan, reference);
    check_max_regression(criteria.max_regression_pct)?;
    check_slo_tps(args.slo_tps)?;
    // A run writes summary.json at its end, interrupted or not: without it the run was
    // killed (or is still running), and its trials are judged as an unfinished run's.
    let finished = summary.is_some();
    let looks = summary
        .as_ref()
        .map(SavedSummary::looks)
        .unwrap_or_default();
    let interrupted = summary.as_ref().is_none_or(|s| s.interrupted);
    let samples = Sample::of_run(reference.record_as_baseline(), &trials);
    let judged = Judged {
        trials: &trials,
        samples: &samples,
        criteria,
        interrupted,
        looks: &looks,
    };
    let mut judgements = judge_saved(plan, reference, &judged);
    if !finished {
        for j in &mut judgements {
            j.reason = j.reason.replacen(
                "the run was interrupted by a signal",
                "the run did not finish (no summary.json: it was killed, or is still running)",
                1,
            );
        }
    }
    let out = results_dir(args)?;
    let mut warnings = warnings_of(plan, reference, &samples, &trials, &set_aside);
    let (profile_diff, unread) = crate::results::profile::diff_or_warning(&args.dir, &trials);
    warnings.extend(unread);
    if let Some(original) = &meta.results_dir {
        // The run's messages name its files where it was written; name them from here.
        let to_run = path_to_run(&out, &args.dir);
        write::rewrite_texts(&mut judgements, &mut warnings, |t| {
            write::rewrite_dir(t, original, &to_run)
        });
    }
    let hostname = meta.host.hostname.clone();
    let junit_run = crate::report::JunitRun::new(
        &trials,
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(meta.started_at_unix_s.unwrap_or(0)),
        &hostname,
        args.junit.as_deref(),
    );
    let written = write::verdicts(
        &out,
        write::Verdicts {
            judgements: &judgements,
            interrupted,
            warnings: &warnings,
            profile_diff: &profile_diff,
        },
        write::Copies {
            files: copies(args),
            json_to_stdout: args.json,
        },
        &junit_run,
    )?;
    Ok(written.copies(Vec::new()).exit_code)
}

/// The saved run's judgements: a sweep's knee (`SavedRun::read` checked its ladder), or
/// its trials judged at the looks it took.
fn judge_saved(plan: &SavedPlan, reference: Reference, j: &Judged) -> Vec<crate::judge::Judgement> {
    match &plan.config.schedule() {
        Schedule::Sweep { ladder, .. } => knee::judge(
            j.trials,
            plan.engines(),
            ladder,
            j.criteria,
            j.interrupted,
            reference,
        ),
        Schedule::Fixed { .. } | Schedule::Sequential { .. } => Judge {
            criteria: j.criteria,
            interrupted: j.interrupted,
            looks: j.looks,
            family: None,
            prior: plan.noise_prior.as_ref(),
        }
        .verdicts(j.samples, plan.engines()),
    }
}

/// What a saved run is judged on.
struct Judged<'a> {
    trials: &'a [TrialRecord],
    /// The record's trials (against one without a control arm), then the run's.
    samples: &'a [Sample],
    criteria: Criteria,
    interrupted: bool,
    /// The looks each engine's `--trials auto` planned.
    looks: &'a std::collections::BTreeMap<fdb::Engine, u32>,
}

/// Where compare's copies go.
fn copies(args: &CompareArgs) -> Copies<'_> {
    Copies {
        junit: args.junit.as_deref(),
        markdown: args.export_markdown.as_deref(),
        bmf: args.export_bmf.as_deref(),
        benchmark_action: crate::config::benchmark_action(args.export_benchmark_action.as_deref()),
    }
}

/// compare's results dir (`--out`, else `<run>/compare-<UTC time>-<pid>`), created once
/// it and the copies (`--junit`, `--export-markdown`) are known to be writable and apart
/// from the run it reads.
fn results_dir(args: &CompareArgs) -> Result<PathBuf> {
    let out = match &args.out {
        Some(o) => o.clone(),
        None => args.dir.join(format!(
            "compare-{}-{}",
            dir_stamp(SystemTime::now()),
            std::process::id()
        )),
    };
    let copies = copies(args);
    check_outputs(&args.dir, &out, &copies)?;
    // Before --out is created: a refused copy must not leave an empty --out behind.
    check_copies(&copies, None)?;
    crate::files::create_dir_all("--out", &out)?;
    Ok(out)
}

/// How the judged run's files are named from compare's `out`: `../` per level when `out`
/// is inside the run (its default, `<run>/compare-...`), else the run's absolute path; with
/// a trailing `/`. The run's own messages name its files by where it was written, which a
/// moved run (a downloaded CI artifact) no longer is.
fn path_to_run(out: &Path, run: &Path) -> String {
    let (out, run) = (resolved(&out.join("x")), resolved(&run.join("x")));
    let (out, run) = (out.parent().unwrap_or(&out), run.parent().unwrap_or(&run));
    match out.strip_prefix(run) {
        Ok(inside) => "../".repeat(inside.components().count()),
        Err(_) => format!("{}/", run.display()),
    }
}

/// The plan's warnings, those of the trials `set_aside` (as the run said them: they are
/// not judged here either), and for a judgement against a record with a fresh control
/// arm, the lines on which this host differs from the record's.
fn warnings_of(
    plan: &SavedPlan,
    reference: Reference,
    samples: &[Sample],
    trials: &[TrialRecord],
    set_aside: &[TrialRecord],
) -> Vec<String> {
    let mut warnings = plan.warnings.clone();
    warnings.extend(
        set_aside
            .iter()
            .filter(|t| t.transient_failure())
            .map(|t| t.rerun_warning("its batch was")),
    );
    if let Some(record) = reference.controlled_record() {
        // A sweep's host check is by knee, a run of one target's by TPS.
        let lines = match plan.config.schedule() {
            Schedule::Sweep { .. } => knee::host_lines(record, trials, plan.engines()),
            Schedule::Fixed { .. } | Schedule::Sequential { .. } => {
                host_lines(record, samples, plan.engines())
            }
        };
        warnings.extend(
            lines
                .into_iter()
                .filter_map(|(changed, line)| changed.then_some(line)),
        );
    }
    warnings
}

/// The saved run's criteria with the flags that override them (`--max-regression`,
/// `--slo-tps`, `--strict`).
fn criteria(args: &CompareArgs, plan: &SavedPlan, reference: Reference) -> Criteria {
    let c = &plan.config;
    Criteria {
        trials: c.schedule().complete_at(),
        max_regression_pct: args.max_regression.unwrap_or(c.max_regression_pct),
        slo_tps: args.slo_tps.or(c.slo_tps),
        slo: plan.slo(),
        strict: args.strict || c.strict,
        // As bench judged it (cmd::pipeline): no baseline arm ran.
        unpaired: reference.unpaired(),
        gates: c.gates(),
        gates_if_measured: c.gates_if_measured(),
        exact: c.workload.simulated,
    }
}

/// `compare` never writes into the run it reads: `out` must be a new or empty directory
/// (so `--out RUN` is refused: it would replace the run's own verdicts while its
/// report.html shows the first), and a copy (`--junit`, ...) inside `run` must be inside `out`.
fn check_outputs(run: &Path, out: &Path, copies: &Copies) -> Result<()> {
    check_results_dir(out, *copies)?;
    for (flag, path) in copies.each() {
        check_copy_apart(flag, out, path)?;
    }
    // Resolved through links: `--junit link-to-run/trials.json` is inside the run too.
    let run = resolved(&run.join("x"));
    let run = run.parent().unwrap_or(&run);
    let out = resolved(&out.join("x"));
    let out = out.parent().unwrap_or(&out);
    for (flag, path) in copies.each() {
        let p = resolved(path);
        if p.starts_with(run) && !p.starts_with(out) {
            return Err(UsageError(format!(
                "{flag} {}: that is inside the run being judged ({}); compare never writes \
                 into the run it reads, so give a path outside it or inside --out",
                path.display(),
                run.display()
            ))
            .into());
        }
    }
    Ok(())
}
