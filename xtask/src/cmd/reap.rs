//! `xtask __reap RUN_DIR LOG` (hidden): the watchdog `bench` starts beside itself, which
//! ends a run's processes when the gate dies however it dies (`run::reaper::Reaper`).

use std::path::Path;

use anyhow::Result;

/// Waits for the gate to end, then cleans up after it if it died; returns 0.
pub fn run(run_dir: &Path, log: &Path) -> Result<i32> {
    crate::run::reaper::reap(run_dir, log)
}
