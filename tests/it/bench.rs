//! `cargo xtask bench` end to end, a module per area; each module's first line says what
//! it covers. Whole output files are pinned in `golden`.

mod arms;
mod cleanup;
mod duet;
mod existing;
pub(crate) use existing::hand_started_cluster;
pub(crate) use multitest::SMALL;
mod failures;
mod knobs;
mod multitest;
mod plan;
mod releases;
mod results;
mod simulation;
pub(crate) use simulation::valgrind_dir;
mod sizing;
mod timeouts;
mod verdicts;
mod workdir;
