//! `cargo xtask calibrate`: an A/A run of one build (both arms), then this host's noise
//! figures (`judge::calibrate`) beside the usual results.

use std::io::Write as _;

use anyhow::Result;
use xshell::Shell;

use super::pipeline::execute;
use crate::{
    cli::CalibrateArgs,
    config::BenchConfig,
    judge::{calibrate::Calibration, samples::Sample},
    plan::resolve::{plan, prepare},
    report::write,
    results::{fs::check_writable_file, trial::Outcome},
};

/// Runs the A/A trials and writes `calibration.json`. Exit status 0 when every trial was
/// measured, else 2.
pub fn run(sh: &Shell, args: &CalibrateArgs) -> Result<i32> {
    let config = BenchConfig::new(Some(&args.build), Some(&args.build), true, &args.run)?;
    if let Some(j) = &config.junit {
        check_writable_file(j)?;
    }
    let prepared = prepare(&config)?;
    let plan = plan(sh, config, prepared, Vec::new())?;
    if plan.config.dry_run {
        let _ = write!(std::io::stdout(), "{}", plan.render());
        return Ok(0);
    }
    let done = execute(plan)?;
    let cal = Calibration::new(
        &Sample::of_trials(&done.trials),
        &done.plan.engines,
        done.plan.config.max_regression_pct,
    );
    write::calibration(&done.out, &cal)?;
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
