//! perfgate's command line, `cargo xtask`: parses the flags and runs one subcommand of
//! the library (`xtask/src/lib.rs`).

use std::process::ExitCode;

use clap::Parser;
use xtask::{baseline, bench, compare, config, doctor, flags, supervise};

/// Exit status for bad flags or flag values (BSD `EX_USAGE`), apart from 2 (TIMEOUT/error).
const EXIT_USAGE: u8 = 64;

fn main() -> ExitCode {
    let cli = match flags::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let empty = flags::empty_env_flags(|v| std::env::var_os(v));
            if e.kind() == clap::error::ErrorKind::InvalidValue && !empty.is_empty() {
                for (var, flag) in empty {
                    eprintln!(
                        "error: {var} is set but empty (it stands for {flag}): unset it \
                         (`unset {var}`) or set it to a path"
                    );
                }
                return ExitCode::from(EXIT_USAGE);
            }
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    if let Err(e) = supervise::install_interrupt_handler() {
        eprintln!("error: {e:#}");
        return ExitCode::from(2);
    }
    let sh = match xshell::Shell::new() {
        Ok(sh) => sh,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match &cli.command {
        flags::Command::Bench(args) => bench::run(&sh, args),
        flags::Command::Calibrate(args) => bench::calibrate(&sh, args),
        flags::Command::Compare(args) => compare::run(args),
        flags::Command::Baseline(cmd) => baseline::run(cmd),
        flags::Command::Build(args) => bench::build_only(&sh, args),
        flags::Command::Doctor { workdir } => doctor::run(workdir.as_deref()),
        flags::Command::Reap { run_dir, log } => supervise::reap(run_dir, log),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            let usage = e.downcast_ref::<config::UsageError>().is_some();
            ExitCode::from(if usage { EXIT_USAGE } else { 2 })
        }
    }
}
