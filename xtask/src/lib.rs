//! perfgate: a throughput regression gate for FoundationDB, run as `cargo xtask`.
//!
//! One folder per pipeline stage, and data flows one way (the tidy test in
//! `tests/it/tidy.rs` keeps it so: a module imports only from its own stage and earlier ones):
//!
//! `config` (flags -> a validated, immutable config) -> `results` (the records every later
//! stage shares, and the files they live in) -> `build` (FDB trees from git revisions) ->
//! `plan` (trees, work dir, trials) -> `run` (supervised clusters and mako, one trial at a
//! time) -> `judge` (samples -> verdicts; pure) -> `report` (every output file and the
//! table) -> `cmd` (one file per subcommand, wiring the stages together).
//!
//! Below them all: `version` (the gate's version and commit), `error` (usage errors, exit
//! statuses), `input` (reading files the gate did not write: never blocking, regular files
//! only, bounded), `files` (every change to the filesystem, never through a planted link),
//! `process` (supervised children) and `cli` (clap's structs, read only by `config` and `cmd`). FDB's own formats are the
//! `fdb` crate (`fdb/`), which imports nothing of the gate.

/// `eprintln!` that ignores a closed stderr (`... 2>&1 | head -1`): a message that
/// cannot be shown must not panic the gate (exit 101) before it has ended its run. The
/// message is [`process::printable`]: it may quote a file (a record, a saved run) whose
/// control characters must not reach the terminal.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let line = $crate::process::printable(&format!($($t)*));
        let _ = writeln!(std::io::stderr(), "{line}");
    }};
}

pub mod build;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod contain;
pub mod error;
pub mod files;
pub mod input;
pub mod judge;
pub mod plan;
pub mod process;
pub mod report;
pub mod results;
pub mod run;
pub mod version;
