//! `cargo xtask build`: what `bench` would build, ahead of time; prints where the trees are.

use std::io::Write as _;

use anyhow::Result;

use crate::{
    build::build_arms,
    cli::SourceArgs,
    config::{source::SourceConfig, Arm},
};

/// Builds both arms from `--fdb-src`; exit status 0, or an error.
pub fn run(args: &SourceArgs) -> Result<i32> {
    crate::build::need_git()?;
    let source = SourceConfig::new(args, &[], crate::results::fs::default_fdb_src())?;
    for (arm, p) in build_arms(&source, &[Arm::Baseline, Arm::Experiment])? {
        let line = crate::process::printable(&format!("{arm}: {}", p.build_dir.display()));
        let _ = writeln!(std::io::stdout(), "{line}");
    }
    Ok(0)
}
