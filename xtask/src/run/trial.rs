//! Run stage: run one planned trial (a fresh cluster, or the one of `--cluster-file`
//! checked; the workload's driver, `mako.rs` or `multitest.rs`; harvest, teardown), every
//! phase bounded and timed, into a [`TrialRecord`].
//!
//! A trial never returns an error: whatever happens becomes the record's outcome, so the
//! results of earlier trials and this one's artifacts are always kept.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{anyhow, Context};

use super::{
    cluster::{Cluster, Place},
    context::TrialContext,
    driver::{timed, Driver, Failure, Trial},
    mako::Mako,
    monitor::Monitor,
    multitest::Multitest,
};
use crate::{
    config::{existing::ExistingCluster, ClusterSource, DriverKind, Workload},
    plan::{ArmPlan, PlannedTrial},
    process::{output_note, PhaseError},
    results::trial::{Outcome, Phase, PhaseTiming, TrialRecord},
};

/// Runs one trial against `tree`. Artifacts go to `<results>/trials/<NN>-<engine>-<arm>-<rep>`
/// (a rerun's to `...-rerun`, beside those of the trial it replaces).
pub fn run_trial(ctx: &TrialContext, arm: &ArmPlan, planned: &PlannedTrial) -> TrialRecord {
    let name = format!(
        "{:02}-{}-{}-{}{}",
        planned.index,
        planned.engine,
        planned.arm,
        planned.repetition,
        if planned.rerun { "-rerun" } else { "" }
    );
    let artifacts_rel = PathBuf::from(crate::results::fs::TRIALS_DIR).join(&name);
    let t = Trial {
        ctx,
        arm,
        planned,
        work: ctx.run_workdir.join(&name),
        artifacts: ctx.results_dir.join(&artifacts_rel),
        with_partner: std::cell::Cell::new(None),
    };
    let (work, artifacts) = (&t.work, &t.artifacts);
    let mut record = TrialRecord {
        index: planned.index,
        engine: planned.engine,
        arm: planned.arm,
        repetition: planned.repetition,
        knobs: planned.knobs.clone(),
        target_tps: planned.target_tps,
        outcome: Outcome::Measured,
        failed_phase: None,
        error: None,
        phases: Vec::new(),
        availability: None,
        report: None,
        multitest: None,
        simulation: None,
        storage_cpu_cores: None,
        cpu_bound: None,
        cpu: None,
        workdir_peak_bytes: None,
        cluster: None,
        gate_stalls_s: Vec::new(),
        run_started_unix_s: None,
        run_with_partner: None,
        host: None,
        artifacts: artifacts_rel,
    };
    // Counts need no covariate; every other trial is bracketed by the probe.
    let simulated = matches!(ctx.workload.driver_kind(), DriverKind::Simulation(_));
    let probe = (ctx.host_probe && !simulated).then(super::probe::before);
    let mut cluster = None;
    let mut result = crate::files::create_dir_all("--out", artifacts)
        .and_then(|_| crate::files::create_dir_all("work dir", work))
        .with_context(|| {
            format!(
                "cannot create {} and {}",
                artifacts.display(),
                work.display()
            )
        })
        .map_err(|e| Failure {
            phase: Phase::ClusterStart,
            error: e.into(),
        })
        .and_then(|_| run_phases(&t, &mut cluster, &mut record));
    if let (Some(meeting), None) = (ctx.meeting, t.with_partner.get()) {
        meeting.leave();
    }
    if let Some(c) = cluster {
        result = teardown(ctx, c, &name, result, &mut record);
    }
    record.host = probe.map(super::probe::Before::after);
    // The data is wiped only now, after the artifacts were copied off the RAM disk.
    if let Err(e) = crate::files::remove_dir_all("work dir", work) {
        tracing::warn!("cannot wipe {}: {e:#}", work.display());
    }
    if let Err(failure) = result {
        record_failure(ctx, &mut record, failure, artifacts);
    }
    record
}

/// Sets the trial's outcome, failed phase and error from `failure`, with what the user
/// needs next: for a timeout, the flag to raise and the child's output (in `artifacts`);
/// for a test cut short on a cluster the gate did not start, the rows it left.
fn record_failure(
    ctx: &TrialContext,
    record: &mut TrialRecord,
    Failure { phase, error }: Failure,
    artifacts: &Path,
) {
    record.outcome = match error {
        PhaseError::Timeout(..) => Outcome::Timeout,
        PhaseError::Interrupted => Outcome::Interrupted,
        PhaseError::Failed(_) => Outcome::Error,
    };
    record.failed_phase = Some(phase);
    let note = match &error {
        PhaseError::Timeout(..) => timeout_note(phase, artifacts),
        _ => String::new(),
    };
    let rows = match (ctx.cluster.existing(), phase, &record.multitest) {
        (Some(e), Phase::Multitest, None) if super::multitest::wrote_rows(artifacts) => {
            rows_left_note(e)
        }
        _ => String::new(),
    };
    record.error = Some(format!("{phase}: {error}{note}{rows}"));
}

/// What a test cut short leaves in a cluster the gate did not start `e`: its rows, which
/// ReadWrite clears only when the test ends (`clearAfterTest`), and how to clear them. The
/// trial found the database empty, so every key in it is the test's or another client's.
fn rows_left_note(e: &ExistingCluster) -> String {
    format!(
        "; the test's rows may be left in the database (ReadWrite clears them only when the \
         test ends), and the next run will refuse the cluster as not empty: it was empty \
         before this trial, so if nothing else writes to it, clear them with `fdbcli -C {} \
         --exec 'writemode on; clearrange \"\" \\xff'`",
        shell_quoted(&e.path)
    )
}

/// `path` as a shell word to paste: quoted when it needs it (lossy where not UTF-8).
fn shell_quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    shlex::try_quote(&text).map_or_else(|_| format!("{text:?}"), |q| q.into_owned())
}

/// What a phase that ran out of time was waiting for: the flag of its bound and the
/// output of the child it waited on (its stderr's tail and file, or its stdout's), so the
/// message says where to look and what to raise.
fn timeout_note(phase: Phase, artifacts: &Path) -> String {
    let (flag, child) = match phase {
        Phase::ClusterStart => ("--timeout-cluster-start", None),
        Phase::Configure => ("--timeout-configure", Some("fdbcli-configure")),
        Phase::Available => ("--timeout-available", Some("status")),
        Phase::MakoBuild => ("--timeout-mako-build", Some("mako-build")),
        Phase::MakoRun => ("--timeout-mako-run-grace", Some("mako-run")),
        Phase::Multitest => (
            "--timeout-mako-build (testers joining, rows loading) or --timeout-mako-run-grace",
            Some("multitest"),
        ),
        Phase::Teardown => ("--timeout-teardown", None),
        Phase::Simulation => ("--timeout-simulation", Some("simulation")),
    };
    let output = match child {
        Some(stem) => {
            let out = if phase == Phase::Available {
                artifacts.join("status.json")
            } else {
                artifacts.join(format!("{stem}.txt"))
            };
            format!(
                "; {}; {}",
                output_note("stderr", &artifacts.join(format!("{stem}.err")), 5),
                output_note("stdout", &out, 3)
            )
        }
        None => "; each fdbserver's stderr is in fdbserver-<role>-<port>.err there".to_string(),
    };
    format!(" (raise {flag} if it needs longer){output}")
}

/// Starts and configures the trial's cluster, or for a cluster the gate did not start
/// only reads and checks its `status json`, and waits until the database is available.
fn bring_up(t: &Trial, c: &mut Cluster, record: &mut TrialRecord) -> Result<(), Failure> {
    let (ctx, arm, planned) = (t.ctx, t.arm, t.planned);
    let b = ctx.bounds;
    let remote = match ctx.cluster {
        ClusterSource::Own(_) => {
            timed(record, Phase::ClusterStart, || {
                c.start(&arm.tree, &planned.knobs, ctx.pinning, b.cluster_start)?;
                check_knobs(c)
            })?;
            timed(record, Phase::Configure, || {
                c.configure(planned.engine, arm.mako.release, b.configure)
            })?;
            let available = timed(record, Phase::Available, || c.wait_available(b.available))?;
            record.availability = Some(available);
            return Ok(());
        }
        ClusterSource::Existing(e) => e.remote_testers,
        ClusterSource::Simulated => {
            return Err(Failure {
                phase: Phase::ClusterStart,
                error: anyhow!("a simulated cluster has no servers to bring up").into(),
            })
        }
    };
    let (available, status) = timed(record, Phase::Available, || {
        let available = c.wait_available(b.available)?;
        let status = c.existing_status(&arm.version.protocol, remote, b.available)?;
        Ok((available, status))
    })?;
    record.availability = Some(available);
    tracing::info!("trial {}: cluster {}", planned.index, status.class());
    check_class(ctx, planned, &status).map_err(|error| Failure {
        phase: Phase::Available,
        error,
    })?;
    record.cluster = Some(status);
    Ok(())
}

/// Seconds from which a server's `SlowTask` is named in the error of a mako run that failed
/// (a run loop blocked for a second fails or delays every transaction in flight; the
/// milliseconds-long ones a busy host logs all the time are not news).
const SLOW_TASK_NOTE_S: f64 = 1.0;

/// Stops the trial's cluster (the teardown phase, bounded), looks for refused knobs once
/// more (trace files are complete only now), names a long `SlowTask` in a failed mako
/// run's error, keeps its trace files, and returns the trial's result with a teardown
/// failure added when it was a success so far.
fn teardown(
    ctx: &TrialContext,
    mut c: Cluster,
    name: &str,
    mut result: Result<(), Failure>,
    record: &mut TrialRecord,
) -> Result<(), Failure> {
    let started = Instant::now();
    let stopped = c.stop(ctx.bounds.teardown);
    record.phases.push(PhaseTiming {
        phase: Phase::Teardown,
        duration_s: started.elapsed().as_secs_f64(),
    });
    // Trace files are complete only now: look for refused knobs once more.
    if result.is_ok() {
        if let Err(error) = check_knobs(&c) {
            result = Err(Failure {
                phase: Phase::ClusterStart,
                error,
            });
        }
    }
    // mako counts the transactions a blocked server fails as errors: name the block.
    if let Err(f) = &mut result {
        if f.phase == Phase::MakoRun {
            if let Some(note) = c.slow_task_note(SLOW_TASK_NOTE_S) {
                f.error = match std::mem::replace(&mut f.error, PhaseError::Interrupted) {
                    PhaseError::Failed(e) => PhaseError::Failed(anyhow!("{e:#}; {note}")),
                    PhaseError::Timeout(bound, what) if what.is_empty() => {
                        PhaseError::Timeout(bound, note)
                    }
                    PhaseError::Timeout(bound, what) => {
                        PhaseError::Timeout(bound, format!("{what}; {note}"))
                    }
                    PhaseError::Interrupted => PhaseError::Interrupted,
                };
            }
        }
    }
    if let Err(e) = c.harvest() {
        tracing::warn!("trial {name}: trace files not kept: {e:#}");
    }
    match (&result, stopped) {
        (Ok(()), Err(error)) => {
            result = Err(Failure {
                phase: Phase::Teardown,
                error,
            })
        }
        (Err(_), Err(error)) => tracing::warn!("trial {name}: teardown: {error}"),
        (_, Ok(())) => {}
    }
    result
}

/// The trial's cluster, not started yet: the gate's own of the planned topology, or the
/// one of `--cluster-file`.
fn prepare_cluster(t: &Trial) -> anyhow::Result<Cluster> {
    let (ctx, arm, work, artifacts) = (t.ctx, t.arm, &t.work, &t.artifacts);
    let tree = &arm.tree;
    let at = Place {
        work,
        artifacts,
        env: ctx.env,
        ports: ctx.ports,
    };
    match ctx.cluster {
        ClusterSource::Existing(e) => Cluster::existing(tree, arm.mako.release, e, at),
        ClusterSource::Own(topology) => Cluster::new(tree, topology, at),
        ClusterSource::Simulated => Err(anyhow!("a simulated cluster has no servers to prepare")),
    }
}

/// The trial's phases: its cluster brought up, then its driver's workload; the simulation
/// driver's cluster is inside its one process.
fn run_phases(
    t: &Trial,
    cluster: &mut Option<Cluster>,
    record: &mut TrialRecord,
) -> Result<(), Failure> {
    if let DriverKind::Simulation(_) = t.ctx.workload.driver_kind() {
        return super::simulation::run(t, record);
    }
    for attempt in 1.. {
        let c = prepare_cluster(t).map_err(|e| Failure {
            phase: Phase::ClusterStart,
            error: e.into(),
        })?;
        // Stored before it starts, so that a cluster that fails to start is still
        // harvested and torn down.
        let c = cluster.insert(c);
        let phases = record.phases.len();
        match bring_up(t, c, record) {
            Err(f) if attempt < CLUSTER_START_ATTEMPTS && port_taken(&f) => {
                tracing::warn!(
                    "trial {}: {}: a server's port was taken (fdbserver: Local address in \
                     use) between the gate's choice and the server's bind: starting the \
                     cluster again on other ports (attempt {} of {CLUSTER_START_ATTEMPTS})",
                    t.planned.index,
                    f.phase,
                    attempt + 1,
                );
                let c = cluster.take().expect("stored above");
                // Its trace files are kept; its timings are the next attempt's.
                let name = t.work.file_name().unwrap_or_default().to_string_lossy();
                teardown(t.ctx, c, &name, Err(f), record).ok();
                record.phases.truncate(phases);
            }
            result => {
                result?;
                break;
            }
        }
    }
    let c = cluster.as_mut().expect("brought up above");
    let mut monitor = Monitor::new(&t.work);
    driver_of(t.ctx.workload).run(t, c, &mut monitor, record)
}

/// Cluster starts a trial tries when a server finds its port taken ([`port_taken`]): the
/// gate's ports are free when chosen, but another program (another gate, a client given
/// the port for an outgoing connection) may bind one before the server does.
const CLUSTER_START_ATTEMPTS: u32 = 3;

/// Whether `f` is a server that could not bind its port: fdbserver's `address_in_use`
/// (2105, "Local address in use", `flow/include/flow/error_definitions.h`), which FDB 8.0
/// prints on stderr as "Error initializing networking with public address A and listen
/// address A (Local address in use)" before it exits 1.
fn port_taken(f: &Failure) -> bool {
    matches!(f.error, PhaseError::Failed(_)) && f.error.to_string().contains("Local address in use")
}

/// The driver of workload `w`: the one place the run stage chooses by it.
fn driver_of(w: &Workload) -> &'static dyn Driver {
    match w.driver_kind() {
        DriverKind::Multitest(_) => &Multitest,
        DriverKind::Mako => &Mako,
        // `run_phases` runs it before any cluster.
        DriverKind::Simulation(_) => &Multitest,
    }
}

/// Errors when the cluster's storage engine (`status`) is not the plan's (it was
/// reconfigured since the plan read it), or its class is not the one of the record the
/// run is judged against: TPS of other clusters do not compare.
fn check_class(
    ctx: &TrialContext,
    planned: &PlannedTrial,
    status: &fdb::status::ClusterStatus,
) -> Result<(), PhaseError> {
    if status.engine().map_err(|why| anyhow!(why))? != planned.engine {
        return Err(anyhow!(
            "the cluster's storage engine is now {:?}, and the plan read {} before the first \
             trial: it was reconfigured during the run, and TPS across the change do not \
             compare; run again once it is done",
            status.storage_engine,
            planned.engine
        )
        .into());
    }
    match ctx.recorded_cluster {
        Some((name, class)) if status.class() != class => Err(anyhow!(
            "the cluster is {}, baseline {name} was recorded on {class}: TPS of clusters of \
             other classes do not compare; judge it against a record of this cluster (`cargo \
             xtask baseline record --from DIR` of a run on it)",
            status.class()
        )
        .into()),
        _ => Ok(()),
    }
}

/// Fails when a server refused a knob: it would run with the default, and the trial
/// would silently benchmark another configuration than the one asked for.
fn check_knobs(cluster: &Cluster) -> Result<(), PhaseError> {
    let problems = cluster.knob_problems()?;
    if problems.is_empty() {
        return Ok(());
    }
    Err(anyhow!(
        "fdbserver refused knobs, so it would run with their defaults: {}",
        problems.join("; ")
    )
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_file_path_is_quoted_for_the_shell() {
        assert_eq!(
            shell_quoted(Path::new("/etc/fdb.cluster")),
            "/etc/fdb.cluster"
        );
        assert_eq!(
            shell_quoted(Path::new("/tmp/it's my dir/fdb.cluster")),
            r#""/tmp/it's my dir/fdb.cluster""#
        );
    }
}
