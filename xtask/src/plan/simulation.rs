//! Plan stage: what the simulation driver's trials run, decided before any: Valgrind (found
//! and checked before any build), the seeds, and the spec of each engine, all recorded in
//! `meta.json` so a figure can be had again.

use std::{collections::BTreeMap, path::PathBuf, process::Command};

use anyhow::Result;
use fdb::{simulation::SimulationSpec, Engine};
use serde::Serialize;

use crate::{
    config::{BenchConfig, DriverKind},
    error::UsageError,
};

/// The simulation driver's plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulationPlan {
    pub valgrind: Valgrind,
    /// The simulator's seed of each repetition (pair k: `seeds[k - 1]`), in both arms.
    pub seeds: Vec<u64>,
    /// The spec (`fdbserver -r simulation -f`) of each engine, as TOML.
    pub specs: BTreeMap<Engine, String>,
}

impl SimulationPlan {
    /// The plan of `c`'s pairs of its workload on `engines`, under `valgrind`; `None` when
    /// the workload is not the simulation driver's. Errors: an engine the simulator does
    /// not have, or a ReadWrite value FDB would refuse.
    pub fn new(
        valgrind: Option<Valgrind>,
        c: &BenchConfig,
        engines: &[Engine],
    ) -> Result<Option<SimulationPlan>> {
        let (w, pairs) = (&c.workload, c.schedule.planned_pairs());
        let (Some(valgrind), DriverKind::Simulation(rw)) = (valgrind, w.driver_kind()) else {
            return Ok(None);
        };
        let test = w.readwrite_spec(rw, rw.target_tps, false);
        let specs = engines
            .iter()
            .map(|&engine| {
                Ok((
                    engine,
                    SimulationSpec {
                        engine,
                        test: &test,
                    }
                    .to_toml()?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Some(SimulationPlan {
            valgrind,
            seeds: (1..=pairs).map(seed_of).collect(),
            specs,
        }))
    }
}

/// The seed of repetition `repetition`: the repetition itself, so pair k of every run is
/// seed k in both arms and any run's figure can be had again with the same builds.
pub fn seed_of(repetition: u32) -> u64 {
    u64::from(repetition)
}

/// Valgrind, which runs every seed: where it is and its version (`valgrind --version`),
/// recorded in the plan so a figure can be reproduced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Valgrind {
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub path: PathBuf,
    /// `valgrind-3.19.0`.
    pub version: String,
}

impl Valgrind {
    /// Valgrind on `PATH`. Errors: a usage error naming the package when it is not
    /// installed or does not run.
    pub fn find() -> Result<Valgrind, UsageError> {
        let missing = |why: String| {
            UsageError(format!(
                "the simulation driver runs FDB's simulator under Valgrind, and {why}: install \
                 it (Debian and Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)"
            ))
        };
        let path =
            which::which("valgrind").map_err(|_| missing("valgrind is not on PATH".into()))?;
        let mut cmd = Command::new(&path);
        cmd.arg("--version");
        let out = crate::process::run_bounded("valgrind --version", cmd, VERSION_BOUND)
            .map_err(|e| missing(format!("{} does not run ({e:#})", path.display())))?;
        let version = out.stdout.trim().to_string();
        if !out.status.success() {
            return Err(missing(format!(
                "{} --version exited with {}: {}",
                path.display(),
                out.status,
                crate::process::excerpt(out.stderr.trim(), 3)
            )));
        }
        if !version.starts_with("valgrind-") {
            return Err(missing(format!(
                "{} --version printed {:?}, not a Valgrind version",
                path.display(),
                crate::process::excerpt(&version, 1)
            )));
        }
        Ok(Valgrind { path, version })
    }
}

/// Bound of `valgrind --version`.
const VERSION_BOUND: std::time::Duration = std::time::Duration::from_secs(30);
