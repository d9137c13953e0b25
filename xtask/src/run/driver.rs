//! Run stage: what a workload driver gets and gives. A driver (mako's in `mako.rs`, the
//! multitest's in `multitest.rs`) implements [`Driver`]: it runs its workload on a
//! [`Trial`]'s available cluster and fills the trial's record. A new driver is one more
//! implementation and one arm of `trial::driver_of`.

use std::{path::PathBuf, time::Instant};

use super::{cluster::Cluster, context::TrialContext, monitor::Monitor};
use crate::{
    plan::{ArmPlan, PlannedTrial},
    process::PhaseError,
    results::trial::{CpuRole, Phase, PhaseTiming, RoleCpu, TrialRecord, CPU_BOUND_MIN_CORES},
};

/// Why a trial failed: the phase and its error.
pub(super) struct Failure {
    pub phase: Phase,
    pub error: PhaseError,
}

/// One trial under way: what every trial of the run shares, the arm and the planned
/// trial it runs, and its two directories.
pub(super) struct Trial<'a> {
    pub ctx: &'a TrialContext<'a>,
    pub arm: &'a ArmPlan,
    pub planned: &'a PlannedTrial,
    /// Its data dir on the work dir (RAM disk), wiped when the trial ends.
    pub work: PathBuf,
    /// Its artifacts dir in the results dir (`trials/<NN>-<engine>-<arm>-<rep>`).
    pub artifacts: PathBuf,
    /// Whether its measured run started together with its duet partner's (both came to
    /// the meeting, [`super::context::Meeting`]); `None` outside a duet or when it never
    /// came to the meeting, which it then leaves when its phases end, so that its partner
    /// waits no longer.
    pub with_partner: std::cell::Cell<Option<bool>>,
}

impl Trial<'_> {
    /// Waits for the other trials of its duet, if any, before its measured run: at most
    /// as long as they may take to be ready (cluster start, configure, availability and
    /// data load), so that a partner that hangs there only costs the bound.
    pub fn meet(&self) {
        let Some(meeting) = self.ctx.meeting else {
            return;
        };
        let b = self.ctx.bounds;
        let bound = b.cluster_start + b.configure + b.available + b.mako_build;
        let met = meeting.meet(bound);
        self.with_partner.set(Some(met.is_ok()));
        let why = match met {
            Ok(()) => return,
            Err(super::context::Absent::Failed) => "it failed before its run".to_string(),
            Err(super::context::Absent::Late) => format!(
                "it was not ready within {}",
                humantime::format_duration(bound)
            ),
        };
        tracing::warn!(
            "trial {}: its duet partner did not start its run with it ({why}): this trial's \
             run is not paired in time",
            self.planned.index
        );
    }
}

/// A workload driver: what runs on a trial's cluster once its database is available.
pub(super) trait Driver {
    /// Runs the workload on `cluster`, sampling it with `monitor`, and fills `record`: the
    /// driver's report, its phases with their durations, the work dir's peak growth and
    /// every role's CPU over the measurement window. An error names the phase that
    /// failed; `record` keeps what was measured before it.
    fn run(
        &self,
        t: &Trial,
        cluster: &mut Cluster,
        monitor: &mut Monitor,
        record: &mut TrialRecord,
    ) -> Result<(), Failure>;
}

impl Trial<'_> {
    /// Records every role's CPU over the measurement window and whether the storage server
    /// was CPU-bound; `Err(reason)` when it was not (or could not be measured) under
    /// `--require-cpu-bound`.
    pub(super) fn record_cpu(
        &self,
        record: &mut TrialRecord,
        role_cpu: Option<RoleCpu>,
    ) -> Result<(), String> {
        let cpu = role_cpu
            .as_ref()
            .and_then(|r| r.cores.get(&CpuRole::Storage).copied());
        record.storage_cpu_cores = cpu;
        record.cpu_bound = cpu.map(|c| c >= CPU_BOUND_MIN_CORES);
        record.cpu = role_cpu;
        match (self.ctx.require_cpu_bound, cpu) {
            (true, Some(c)) if c < CPU_BOUND_MIN_CORES => Err(format!(
                "not CPU-bound: the storage server used {c:.2} cores, below \
                 {CPU_BOUND_MIN_CORES} (--require-cpu-bound)"
            )),
            (true, None) => {
                Err("storage server CPU could not be measured (--require-cpu-bound)".into())
            }
            _ => Ok(()),
        }
    }
}

/// Runs `f` as `phase`, recording its duration whatever the result.
pub(super) fn timed<T>(
    record: &mut TrialRecord,
    phase: Phase,
    f: impl FnOnce() -> Result<T, PhaseError>,
) -> Result<T, Failure> {
    let started = Instant::now();
    let result = f();
    record.phases.push(PhaseTiming {
        phase,
        duration_s: started.elapsed().as_secs_f64(),
    });
    result.map_err(|error| Failure { phase, error })
}
