//! `cargo xtask calibrate`: an A/A run of one build (both arms), then this host's noise
//! figures (`judge::calibrate`) beside the usual results.

use std::{io::Write as _, path::Path};

use anyhow::Result;

use super::pipeline::execute;
use crate::plan::Plan;
use crate::report::write::LateCopy;
use crate::{
    cli::CalibrateArgs,
    config::BenchConfig,
    config::{DriverKind, Workload},
    error::UsageError,
    judge::{
        calibrate::Calibration,
        samples::Sample,
        sizing::{self, TrialCost, BATCH_S},
    },
    plan::resolve::{plan, prepare},
    process::printable,
    report::write,
    results::{
        fs::{check_copies, check_writable_file, resolved},
        trial::{Outcome, TrialRecord},
    },
    run::cluster::engine_of_existing,
};

/// Runs the A/A trials and writes `calibration.json`. Exit status 0 when every trial was
/// measured (and, with `--write-profile`, the trials could be sized) and every copy of the
/// results (`--junit`, `--export-*`) was written, else 2; a window too
/// short to size is refused before any trial. The log lines are in colour when `color`.
pub fn run(args: &CalibrateArgs, color: bool) -> Result<i32> {
    let config = BenchConfig {
        baselines_dir: args.baselines_dir.clone(),
        ..BenchConfig::new(Some(&args.build), Some(&args.build), true, &args.run)?
    };
    if config.workload.simulated {
        return Err(UsageError(format!(
            "profile '{}' runs FDB's simulator under Valgrind, whose instruction counts are \
             exact: there is no noise to calibrate; an A/A is `cargo xtask bench` with this \
             profile and --baseline-build DIR --experiment-build DIR --allow-same",
            config.workload.profile
        ))
        .into());
    }
    check_copies(&config.copies(), config.out.as_deref())?;
    if let Some(p) = &args.write_profile {
        check_profile_path(p, &config, args.budget)?;
    }
    let prepared = prepare(&config)?;
    let plan = plan(config, prepared, Vec::new(), &engine_of_existing)?;
    if plan.config.dry_run {
        let _ = write!(std::io::stdout(), "{}", printable(&plan.render()));
        return Ok(0);
    }
    let started = std::time::Instant::now();
    let mut rendered = None;
    let afterwards = |out: &Path, plan: &Plan, trials: &[TrialRecord]| {
        let wall_s = started.elapsed().as_secs_f64();
        let cal = calibration(plan, trials, wall_s, args.budget);
        write::calibration(out, &cal)?;
        rendered = Some(cal.render());
        let late = args.write_profile.as_ref().map(|path| {
            let sized = sized_profile(&cal, &plan.config.workload, path, args.budget);
            LateCopy {
                flag: "--write-profile",
                path: path.clone(),
                written: sized.as_ref().map(|s| s.1.clone()).unwrap_or_default(),
                text: sized.map(|s| s.0),
            }
        });
        Ok(late.into_iter().collect())
    };
    let done = execute(plan, color, Box::new(afterwards))?;
    // With --json, stdout is summary.json alone, for scripts; calibration.json is beside it.
    if let (false, Some(table)) = (done.plan.config.json, rendered) {
        let _ = writeln!(std::io::stdout(), "\n{}", printable(&table));
    }
    let all_measured = done.trials.iter().all(|t| t.outcome == Outcome::Measured);
    // A copy that failed (the profile among them) is an error, as summary.json's
    // exit_code says.
    Ok(
        if all_measured && !done.interrupted && done.copies_failed == 0 {
            0
        } else {
            2
        },
    )
}

/// The calibration of an A/A run's `trials`, which took `wall_s` seconds in all, sized for
/// `budget` where mako's per-second TPS allows.
fn calibration(
    plan: &Plan,
    trials: &[TrialRecord],
    wall_s: f64,
    budget: std::time::Duration,
) -> Calibration {
    let c = &plan.config;
    // Sizing splits mako's per-second TPS into batches; ReadWrite prints none, so a
    // multitest calibration measures the noise only.
    let cost = match c.workload.driver_kind() {
        // `calibrate` refuses the simulation driver before any trial.
        DriverKind::Multitest(_) | DriverKind::Simulation(_) => {
            tracing::info!(
                "no trials sized for --budget: the multitest driver prints no per-second TPS \
                 to size a window from (ReadWrite measures the middle 75% of --seconds)"
            );
            None
        }
        DriverKind::Mako => trial_cost(
            wall_s,
            trials,
            &c.workload,
            budget.as_secs_f64(),
            c.pairing.pairing.trials_at_once(),
        ),
    };
    Calibration::new(
        &Sample::of_trials(trials),
        &plan.engines,
        c.max_regression_pct,
        c.gates.union(c.gates_if_measured),
        cost,
    )
}

/// Refuses a `--write-profile` path before any trial: something already there (the gate
/// never replaces a profile), a file the run itself writes (in `--out`, or the `--junit`
/// file), an unwritable place, a window too short to size, or a `--budget` that cannot
/// hold two pairs of the shortest sized trials.
fn check_profile_path(p: &Path, config: &BenchConfig, budget: std::time::Duration) -> Result<()> {
    let w = &config.workload;
    if let DriverKind::Multitest(_) = w.driver_kind() {
        return Err(UsageError(format!(
            "--write-profile sizes mako's warmup and window from its per-second TPS, and \
             profile '{}' runs the multitest driver, which prints none (ReadWrite measures \
             the middle 75% of --seconds); calibrate without --write-profile",
            w.profile
        ))
        .into());
    }
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let in_out = config
        .out
        .as_deref()
        .is_some_and(|o| abs(p).starts_with(abs(o)));
    let copy = config
        .copies()
        .each()
        .into_iter()
        .find(|(_, c)| resolved(c) == resolved(p))
        .map(|(flag, _)| flag);
    if in_out || copy.is_some() {
        return Err(UsageError(format!(
            "--write-profile {}: the run writes its own results there ({}); choose a path \
             outside them",
            p.display(),
            copy.unwrap_or("--out")
        ))
        .into());
    }
    let shortest = sizing::shortest_pairs_s(2);
    if budget.as_secs() < shortest {
        return Err(UsageError(format!(
            "--budget {}: the shortest sized trials (warmup {} s + window {} s) need at \
             least {shortest} s for 2 pairs; give a larger --budget, e.g. 30m",
            humantime::format_duration(budget),
            sizing::MIN_WARMUP_S,
            sizing::WINDOWS_S[0]
        ))
        .into());
    }
    if std::fs::symlink_metadata(p).is_ok() {
        return Err(UsageError(format!(
            "--write-profile {}: something is there already; the gate never replaces a \
             profile, so remove it or choose another path",
            p.display()
        ))
        .into());
    }
    check_writable_file("--write-profile", p)?;
    // Sizing splits each window into 10 s batches and needs three.
    let window = w.measured_seconds();
    if window < 3 * BATCH_S as u64 {
        return Err(UsageError(format!(
            "--write-profile needs a measurement window of at least {} s to size the \
             trials (three 10 s batches), and --seconds {} --warmup-seconds {} leave {window} s: \
             raise --seconds",
            3 * BATCH_S,
            w.seconds,
            w.warmup_seconds
        ))
        .into());
    }
    Ok(())
}

/// The profile of workload `w` with the trials `cal` sized, named after `path`, and how to
/// run it; or why they could not be sized.
fn sized_profile(
    cal: &Calibration,
    w: &Workload,
    path: &Path,
    budget: std::time::Duration,
) -> std::result::Result<(String, String), String> {
    // Sized for the first engine that could be: one profile serves every engine.
    if let Some(z) = cal.engines.iter().find_map(|e| e.sizing.as_ref()) {
        let name = Workload::profile_name(path);
        let text = w.to_profile_file(&name, z.warmup_seconds, z.warmup_seconds + z.window_seconds);
        let how = format!(
            "profile '{name}' written to {}: run it with --profile-file {} --trials {}",
            path.display(),
            path.display(),
            z.pairs
        );
        return Ok((text, how));
    }
    let pairs = cal.engines.iter().map(|e| e.pairs).max().unwrap_or(0);
    let why = if pairs < 2 {
        format!("{pairs} complete A/A pairs (sizing needs 2 or more)")
    } else if cal
        .engines
        .iter()
        .flat_map(|e| &e.metrics)
        .all(|m| m.split.is_none())
    {
        "no trial had a per-second series of three 10 s batches".to_string()
    } else {
        format!(
            "--budget {} does not fit 2 pairs of the shortest window",
            humantime::format_duration(budget)
        )
    };
    Err(format!(
        "the trials could not be sized: {why}; calibrate again with more --trials or a \
         larger --budget"
    ))
}

/// What a trial cost beside mako's run: the wall-clock time of all trials (`wall_s`, from
/// the first cluster start to the last teardown, so every gap between phases and trials
/// counts, not only the recorded phases) over the rounds run (`trials_at_once` trials a
/// round: a duet's pair), less mako's `--seconds`; with the run's warmup and window and
/// `budget_s`. `None` without a measured trial.
fn trial_cost(
    wall_s: f64,
    trials: &[TrialRecord],
    w: &Workload,
    budget_s: f64,
    trials_at_once: u32,
) -> Option<TrialCost> {
    let measured = trials.iter().any(|t| t.outcome == Outcome::Measured);
    let rounds = (trials.len() as f64 / f64::from(trials_at_once.max(1))).ceil();
    (measured && !trials.is_empty()).then(|| TrialCost {
        overhead_s: (wall_s / rounds - w.seconds as f64).max(0.0),
        warmup_s: w.warmup_seconds,
        window_s: w.measured_seconds(),
        budget_s,
        trials_at_once,
    })
}
