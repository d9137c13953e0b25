//! perfgate's command line, `cargo xtask`: parses the flags, runs one subcommand
//! (`cmd`) and maps its result to the exit status.

use std::{io::IsTerminal as _, process::ExitCode};

use clap::Parser;
use xtask::{
    cli,
    error::{exit_status, EXIT_ERROR, EXIT_USAGE},
    process,
};

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse_from(cli::fdb_knob_spellings(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => {
            // Only when the refused value is an empty variable's flag: a bad value of
            // another flag keeps its own message.
            let invalid = e
                .get(clap::error::ContextKind::InvalidArg)
                .map(|a| a.to_string());
            let empty: Vec<_> = cli::empty_env_flags(|v| std::env::var_os(v))
                .into_iter()
                .filter(|(_, flag, _)| {
                    invalid
                        .as_deref()
                        .is_some_and(|a| a.starts_with(flag.as_str()))
                })
                .collect();
            if e.kind() == clap::error::ErrorKind::InvalidValue && !empty.is_empty() {
                for (var, flag, takes) in empty {
                    xtask::say!(
                        "error: {var} is set but empty (it stands for {flag}): unset it \
                         (`unset {var}`) or set it to {takes}"
                    );
                }
                return ExitCode::from(EXIT_USAGE);
            }
            // clap shows help (`xtask --color bogus help`) before it checks values; a bad
            // --color is refused all the same, as it is before any other command.
            if let (false, Some(bad)) = (e.use_stderr(), bad_color()) {
                xtask::say!(
                    "error: invalid value '{bad}' for '--color <WHEN>': give auto, always or never"
                );
                return ExitCode::from(EXIT_USAGE);
            }
            let _ = e.print();
            if e.use_stderr() {
                refused_flags_reported(&e.render().to_string());
            }
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    // Whatever umask the gate was started with (000 is a CI container's default), nothing
    // it creates is writable by other users: its own checks refuse such directories, and
    // another user could change its results.
    process::keep_writes_private();
    // Run as root, a program found on another user's PATH entry would be theirs.
    for dropped in process::keep_path_trusted() {
        xtask::say!("warning: {dropped}");
    }
    if let Err(e) = process::install_interrupt_handler() {
        xtask::say!("error: {e:#}");
        return ExitCode::from(EXIT_ERROR);
    }
    // Decided once, for the stream the colours go to: the log lines on stderr.
    let color = xtask::run::use_color(
        cli.color.forced(),
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
        std::env::var_os("TERM"),
    );
    match xtask::cmd::run(&cli.command, color) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            xtask::say!("error: {e:#}");
            let status = exit_status(&e);
            if cli.command.wants_json() {
                // A script reading stdout gets an answer even when no trial ran, in the
                // shape the command prints.
                let message = format!("{e:#}");
                let json = match cli.command {
                    cli::Command::Doctor { .. } => xtask::cmd::doctor::error_json(status, &message),
                    _ => xtask::report::error_json(status, &message),
                };
                println!("{}", process::json_printable(json.trim_end()));
            }
            ExitCode::from(status)
        }
    }
}

/// A flag clap refused is an error before any verdict too: as for every other usage error,
/// `--json` prints it as JSON on stdout, `--junit PATH` gets one ERROR test case and
/// `--export-markdown PATH` the error (README, "Verdicts and exit codes"). The flags are
/// read from the raw command line, since it did not parse.
fn refused_flags_reported(message: &str) {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let message = clap_message(message);
    if args.iter().any(|a| a == "--json") {
        let json = match subcommand(&args) {
            Some("doctor") => xtask::cmd::doctor::error_json(EXIT_USAGE, &message),
            _ => xtask::report::error_json(EXIT_USAGE, &message),
        };
        println!("{}", process::json_printable(json.trim_end()));
    }
    let value_of = |flag: &str| {
        let joined = format!("{flag}=");
        args.iter()
            .enumerate()
            .find_map(|(i, a)| match a.strip_prefix(&joined) {
                Some(path) => Some(std::path::PathBuf::from(path)),
                None if a == flag => args.get(i + 1).map(std::path::PathBuf::from),
                None => None,
            })
    };
    let (junit, markdown) = (value_of("--junit"), value_of("--export-markdown"));
    let copies = xtask::config::Copies {
        junit: junit.as_deref(),
        markdown: markdown.as_deref(),
        ..Default::default()
    };
    // As for any other usage error, a copy may be in a directory not made yet (`--junit
    // <out>/ci/junit.xml`); a path that cannot be written is left to setup_error's write.
    for (flag, path) in copies.each() {
        let _ = xtask::results::fs::check_writable_file(flag, path);
    }
    xtask::report::write::setup_error(
        copies,
        &anyhow::Error::new(xtask::error::UsageError(message)),
    );
}

/// The value of `--color` on the command line when it is none of clap's (`auto`,
/// `always`, `never`).
fn bad_color() -> Option<String> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let value = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--color=") {
            Some(v) => Some(v.to_string()),
            None if a == "--color" => args.get(i + 1).cloned(),
            None => None,
        })?;
    <cli::ColorChoice as clap::ValueEnum>::from_str(&value, false)
        .is_err()
        .then_some(value)
}

/// clap's error message without its usage lines: every line before `Usage:` (a missing
/// argument's name is on the line after the sentence), joined, without `error: `.
fn clap_message(rendered: &str) -> String {
    rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .to_string()
}

/// The subcommand of a raw command line (`args[0]` the program): its first argument that
/// is no flag, `--color`'s value skipped.
fn subcommand(args: &[String]) -> Option<&str> {
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        if a == "--color" {
            rest.next();
        } else if !a.starts_with('-') {
            return Some(a);
        }
    }
    None
}
