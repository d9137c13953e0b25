//! `cargo xtask bench`: flags -> config -> build -> plan -> run -> judge -> report, top to
//! bottom. Everything cheap to check is checked before a build that may take hours.

use std::io::Write as _;

use anyhow::Result;
use xshell::Shell;

use super::pipeline::execute;
use crate::{
    build,
    cli::BenchArgs,
    config::{source::SourceConfig, Arm, BenchConfig},
    plan::resolve::{plan, prepare},
    report::write,
    results::fs::check_writable_file,
};

/// Runs the gate; returns the exit status (0, 1 or 2). Errors before the first trial
/// (bad input, missing binaries, a failed build) are returned as errors, and written to
/// the `--junit` file as one ERROR (or TIMEOUT) test case.
pub fn run(sh: &Shell, args: &BenchArgs) -> Result<i32> {
    let junit = args.run.junit.clone();
    // Before hours of building and running, not after.
    if let Some(j) = &junit {
        check_writable_file(j)?;
    }
    let result = (|| {
        let config = BenchConfig::try_from(args)?;
        let prepared = prepare(&config)?;
        let mut wanted = Vec::new();
        if config.baseline.build_dir.is_none() && config.against_recorded.is_none() {
            wanted.push(Arm::Baseline);
        }
        if config.experiment.build_dir.is_none() {
            wanted.push(Arm::Experiment);
        }
        let built = if wanted.is_empty() {
            Vec::new()
        } else {
            let source = SourceConfig::new(&args.source, true)?;
            build::build_arms(sh, &source, &wanted)?
        };
        let plan = plan(sh, config, prepared, built)?;
        if plan.config.dry_run {
            let _ = write!(std::io::stdout(), "{}", plan.render());
            return Ok(0);
        }
        Ok(execute(plan)?.exit_code)
    })();
    if let (Err(e), Some(path)) = (&result, junit) {
        write::setup_error(&path, e);
    }
    result
}
