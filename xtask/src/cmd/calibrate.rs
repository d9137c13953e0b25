//! `cargo xtask calibrate`: an A/A run of one build (both arms), then this host's noise
//! figures (`judge::calibrate`) beside the usual results.

use std::io::Write as _;

use anyhow::Result;
use xshell::Shell;

use super::pipeline::execute;
use crate::{
    cli::CalibrateArgs,
    config::BenchConfig,
    config::Workload,
    error::UsageError,
    judge::{calibrate::Calibration, samples::Sample, sizing::TrialCost},
    plan::resolve::{plan, prepare},
    report::write,
    results::{
        fs::{check_writable_file, create_new},
        trial::{Outcome, TrialRecord},
    },
};

/// Runs the A/A trials and writes `calibration.json`. Exit status 0 when every trial was
/// measured, else 2.
pub fn run(sh: &Shell, args: &CalibrateArgs) -> Result<i32> {
    let config = BenchConfig::new(Some(&args.build), Some(&args.build), true, &args.run)?;
    if let Some(j) = &config.junit {
        check_writable_file(j)?;
    }
    if let Some(p) = &args.write_profile {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(UsageError(format!(
                "--write-profile {}: something is there already; the gate never replaces a \
                 profile, so remove it or choose another path",
                p.display()
            ))
            .into());
        }
        check_writable_file(p)?;
    }
    let prepared = prepare(&config)?;
    let plan = plan(sh, config, prepared, Vec::new())?;
    if plan.config.dry_run {
        let _ = write!(std::io::stdout(), "{}", plan.render());
        return Ok(0);
    }
    let started = std::time::Instant::now();
    let done = execute(plan)?;
    let trials_wall_s = started.elapsed().as_secs_f64();
    let c = &done.plan.config;
    let cost = trial_cost(
        trials_wall_s,
        &done.trials,
        &c.workload,
        args.budget.as_secs_f64(),
    );
    let cal = Calibration::new(
        &Sample::of_trials(&done.trials),
        &done.plan.engines,
        c.max_regression_pct,
        c.gates.union(c.gates_if_measured),
        cost,
    );
    write::calibration(&done.out, &cal)?;
    if let Some(path) = &args.write_profile {
        // Sized for the first engine that could be: one profile serves every engine.
        match cal.engines.iter().find_map(|e| e.sizing.as_ref()) {
            Some(z) => {
                let name = Workload::profile_name(path);
                let text = c.workload.to_profile_file(
                    &name,
                    z.warmup_seconds,
                    z.warmup_seconds + z.window_seconds,
                );
                create_new(path, &text)?;
                let _ = writeln!(
                    std::io::stderr(),
                    "profile '{name}' written to {}: run it with --profile-file {} --trials {}",
                    path.display(),
                    path.display(),
                    z.pairs
                );
            }
            None => {
                let _ = writeln!(
                    std::io::stderr(),
                    "no profile written to {}: the trials could not be sized (fewer than 2 \
                     complete A/A pairs, no per-second samples, or a budget too small for 2 pairs)",
                    path.display()
                );
            }
        }
    }
    // With --json, stdout is summary.json alone, for scripts; calibration.json is beside it.
    if !done.plan.config.json {
        let _ = writeln!(std::io::stdout(), "\n{}", cal.render());
    }
    let all_measured = done.trials.iter().all(|t| t.outcome == Outcome::Measured);
    Ok(if all_measured && !done.interrupted {
        0
    } else {
        2
    })
}

/// What a trial cost beside mako's run: the wall-clock time of all trials (`wall_s`, from
/// the first cluster start to the last teardown, so every gap between phases and trials
/// counts, not only the recorded phases) over the trials run, less mako's `--seconds`;
/// with the run's warmup and window and `budget_s`. `None` without a measured trial.
fn trial_cost(
    wall_s: f64,
    trials: &[TrialRecord],
    w: &Workload,
    budget_s: f64,
) -> Option<TrialCost> {
    let measured = trials.iter().any(|t| t.outcome == Outcome::Measured);
    (measured && !trials.is_empty()).then(|| TrialCost {
        overhead_s: (wall_s / trials.len() as f64 - w.seconds as f64).max(0.0),
        warmup_s: w.warmup_seconds,
        window_s: w.measured_seconds(),
        budget_s,
    })
}
