//! One file per subcommand: each turns its flags into a config, runs the stages in order
//! and returns the exit status. The only modules that wire stages together.

pub mod baseline;
pub mod bench;
pub mod build;
pub mod calibrate;
pub mod compare;
pub mod doctor;
pub mod noise;
pub mod pipeline;
pub mod reap;

use anyhow::Result;

use crate::cli::Command;

/// Runs `command`, its terminal output in colour when `color` (`--color`, decided once by
/// `run::use_color`); returns its exit status (errors are mapped by `error::exit_status`).
pub fn run(command: &Command, color: bool) -> Result<i32> {
    match command {
        Command::Bench(args) => bench::run(args, color),
        Command::Calibrate(args) => calibrate::run(args, color),
        Command::Compare(args) => compare::run(args),
        Command::Baseline(cmd) => baseline::run(cmd),
        Command::Build(args) => build::run(args),
        Command::Doctor { workdir, json } => {
            let workdir =
                crate::cli::workdir_or_env(workdir.as_deref()).map_err(crate::error::UsageError)?;
            doctor::run(workdir.as_deref(), *json)
        }
        Command::Reap { run_dir, log } => reap::run(run_dir, log),
    }
}
