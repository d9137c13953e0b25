//! Run stage: run one planned trial (fresh cluster, `mako --mode build`, `mako --mode
//! run`, harvest, teardown), every phase bounded and timed, into a [`TrialRecord`].
//!
//! A trial never returns an error: whatever happens becomes the record's outcome, so the
//! results of earlier trials and this one's artifacts are always kept.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Context, Result};
use fdb::mako::{last_sample_tps, MakoReport, TextSummary};

use super::{
    cluster::Cluster,
    context::{Progress, TrialContext},
    monitor::Monitor,
    reaper::remove_mako_leftovers,
    stall::StallWatch,
};
use crate::{
    build::tree::FdbTree,
    config::{existing::ExistingCluster, Workload},
    plan::{env::ChildEnv, ArmPlan, PlannedTrial},
    process::{excerpt, output_note, read_output, Child, PhaseError},
    results::trial::{
        CpuRole, Outcome, Phase, PhaseTiming, RoleCpu, TrialRecord, CPU_BOUND_MIN_CORES,
    },
};

struct Failure {
    phase: Phase,
    error: PhaseError,
}

/// Runs one trial against `tree`. Artifacts go to `<results>/trials/<NN>-<engine>-<arm>-<rep>`.
pub fn run_trial(ctx: &TrialContext, arm: &ArmPlan, planned: &PlannedTrial) -> TrialRecord {
    let name = format!(
        "{:02}-{}-{}-{}",
        planned.index, planned.engine, planned.arm, planned.repetition
    );
    let artifacts_rel = PathBuf::from(crate::results::fs::TRIALS_DIR).join(&name);
    let artifacts = ctx.results_dir.join(&artifacts_rel);
    let work = ctx.run_workdir.join(&name);
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
        storage_cpu_cores: None,
        cpu_bound: None,
        cpu: None,
        workdir_peak_bytes: None,
        cluster: None,
        gate_stalls_s: Vec::new(),
        artifacts: artifacts_rel,
    };
    let mut cluster = None;
    let mut result = std::fs::create_dir_all(&artifacts)
        .and_then(|()| std::fs::create_dir_all(&work))
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
        .and_then(|()| {
            run_phases(
                ctx,
                arm,
                planned,
                &work,
                &artifacts,
                &mut cluster,
                &mut record,
            )
        });
    if let Some(c) = cluster {
        result = teardown(ctx, c, &name, result, &mut record);
    }
    // The data is wiped only now, after the artifacts were copied off the RAM disk.
    if let Err(e) = std::fs::remove_dir_all(&work) {
        tracing::warn!("cannot wipe {}: {e}", work.display());
    }
    if let Err(failure) = result {
        record_failure(ctx, &mut record, failure, &artifacts);
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
    let rows = match (ctx.existing, phase, &record.multitest) {
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
fn bring_up(
    ctx: &TrialContext,
    arm: &ArmPlan,
    planned: &PlannedTrial,
    c: &mut Cluster,
    record: &mut TrialRecord,
) -> Result<(), Failure> {
    let b = ctx.bounds;
    if ctx.existing.is_none() {
        timed(record, Phase::ClusterStart, || {
            c.start(&arm.tree, &planned.knobs, ctx.pinning, b.cluster_start)?;
            check_knobs(c)
        })?;
        timed(record, Phase::Configure, || {
            c.configure(planned.engine, arm.mako.release, b.configure)
        })?;
    }
    let mut existing = None;
    record.availability = Some(timed(record, Phase::Available, || {
        let available = c.wait_available(b.available)?;
        if ctx.existing.is_some() {
            let remote = ctx.existing.map_or(0, |e| e.remote_testers);
            let status = c.existing_status(&arm.version.protocol, remote, b.available)?;
            existing = Some(status);
        }
        Ok(available)
    })?);
    if let Some(status) = &existing {
        tracing::info!("trial {}: cluster {}", planned.index, status.class());
        check_class(ctx, planned, status).map_err(|error| Failure {
            phase: Phase::Available,
            error,
        })?;
    }
    record.cluster = existing;
    Ok(())
}

/// Stops the trial's cluster (the teardown phase, bounded), looks for refused knobs once
/// more (trace files are complete only now), keeps its trace files, and returns the
/// trial's result with a teardown failure added when it was a success so far.
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

/// The trial's cluster, not started yet: the gate's own of `ctx.topology`, or the one of
/// `--cluster-file`.
fn prepare_cluster(
    ctx: &TrialContext,
    arm: &ArmPlan,
    work: &Path,
    artifacts: &Path,
) -> anyhow::Result<Cluster> {
    let tree = &arm.tree;
    match ctx.existing {
        Some(e) => {
            let release = arm.mako.release;
            Cluster::existing(tree, release, e, work, artifacts, ctx.env, ctx.ports)
        }
        None => Cluster::new(tree, ctx.topology, work, artifacts, ctx.env, ctx.ports),
    }
}

fn run_phases(
    ctx: &TrialContext,
    arm: &ArmPlan,
    planned: &PlannedTrial,
    work: &Path,
    artifacts: &Path,
    cluster: &mut Option<Cluster>,
    record: &mut TrialRecord,
) -> Result<(), Failure> {
    let c = prepare_cluster(ctx, arm, work, artifacts).map_err(|e| Failure {
        phase: Phase::ClusterStart,
        error: e.into(),
    })?;
    // Stored before it starts, so that a cluster that fails to start is still harvested
    // and torn down.
    let c = cluster.insert(c);
    bring_up(ctx, arm, planned, c, record)?;
    let mut monitor = Monitor::new(work);
    if ctx.workload.readwrite.is_some() {
        let ran = timed(record, Phase::Multitest, || {
            super::multitest::run(ctx, arm, planned, c, work, artifacts, &mut monitor)
        });
        record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
        let (report, role_cpu) = ran?;
        if let Err(error) = check_steady(ctx, c, record) {
            record.multitest = Some(report);
            return Err(Failure {
                phase: Phase::Multitest,
                error,
            });
        }
        // A sweep overdrives past its knee on purpose: retries there are data.
        let validity = match planned.target_tps {
            Some(_) => report.measured(),
            None => report.validity(),
        }
        .and_then(|()| record_cpu(ctx, record, role_cpu));
        for note in report.saturation().into_iter().chain(report.contention()) {
            tracing::info!("trial {}: {note}", planned.index);
        }
        if let (Some(_), Err(why)) = (planned.target_tps, report.validity()) {
            // In a sweep this is data (the step is not followed), but it is said.
            tracing::info!(
                "trial {}: {why}; in a sweep, this step is not followed",
                planned.index
            );
        }
        record.multitest = Some(report);
        return validity.map_err(|e| Failure {
            phase: Phase::Multitest,
            error: anyhow!(e).into(),
        });
    }
    let built = timed(record, Phase::MakoBuild, || {
        mako_build(ctx, arm, c, work, artifacts, &mut monitor)
    });
    record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
    built?;
    let ran = timed(record, Phase::MakoRun, || {
        mako_run(ctx, arm, c, work, artifacts, &mut monitor)
    });
    record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
    let (report, role_cpu) = ran?;
    if let Some(note) = report.one_valued_latency() {
        tracing::info!("trial {}: {note}", planned.index);
    }
    let w = ctx.workload;
    let validity = report
        .validity()
        .and_then(|()| report.window_matches(w.seconds as f64, w.warmup_seconds as f64))
        .and_then(|()| record_cpu(ctx, record, role_cpu));
    record.report = Some(report);
    validity.map_err(|e| Failure {
        phase: Phase::MakoRun,
        error: anyhow!(e).into(),
    })
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

/// For a cluster the gate did not start: errors when it recovered during the test
/// ([`Cluster::check_no_recovery`] against the status the trial read before it).
fn check_steady(ctx: &TrialContext, c: &Cluster, record: &TrialRecord) -> Result<(), PhaseError> {
    match (ctx.existing, &record.cluster) {
        (Some(_), Some(before)) => c.check_no_recovery(before, ctx.bounds.available),
        _ => Ok(()),
    }
}

/// Records every role's CPU over the measurement window and whether the storage server
/// was CPU-bound; `Err(reason)` when it was not (or could not be measured) under
/// `--require-cpu-bound`.
fn record_cpu(
    ctx: &TrialContext,
    record: &mut TrialRecord,
    role_cpu: Option<RoleCpu>,
) -> Result<(), String> {
    let cpu = role_cpu
        .as_ref()
        .and_then(|r| r.cores.get(&CpuRole::Storage).copied());
    record.storage_cpu_cores = cpu;
    record.cpu_bound = cpu.map(|c| c >= CPU_BOUND_MIN_CORES);
    record.cpu = role_cpu;
    match (ctx.require_cpu_bound, cpu) {
        (true, Some(c)) if c < CPU_BOUND_MIN_CORES => Err(format!(
            "not CPU-bound: the storage server used {c:.2} cores, below {CPU_BOUND_MIN_CORES} \
             (--require-cpu-bound)"
        )),
        (true, None) => {
            Err("storage server CPU could not be measured (--require-cpu-bound)".into())
        }
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

/// Runs `f` as `phase`, recording its duration whatever the result.
fn timed<T>(
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

/// A mako command in `mode` with the environment mako needs (it links `libfdb_c.so`
/// without an rpath, and `LD_BIND_NOW` makes a missing symbol fail at start, not
/// mid-run) and the data set's shape, which build and run must agree on.
fn mako_command(
    env: &ChildEnv,
    tree: &FdbTree,
    cluster: &Cluster,
    work: &Path,
    mode: &str,
    w: &Workload,
) -> Command {
    let mako = tree
        .mako
        .as_ref()
        .expect("a mako workload's trees are opened with mako");
    let mut cmd = Command::new(mako);
    env.apply(&mut cmd);
    cmd.env("LD_LIBRARY_PATH", &tree.lib_dir)
        .env("LD_BIND_NOW", "1")
        .current_dir(work)
        .arg("--cluster")
        .arg(&cluster.cluster_file)
        .args(["--mode", mode])
        .args(["--rows", &w.rows.to_string()])
        .args(["--keylen", &w.keylen.to_string()])
        .args(["--vallen", &w.vallen.to_string()]);
    cmd
}

fn mako_build(
    ctx: &TrialContext,
    arm: &ArmPlan,
    cluster: &Cluster,
    work: &Path,
    artifacts: &Path,
    monitor: &mut Monitor,
) -> Result<(), PhaseError> {
    let w = ctx.workload;
    let mut cmd = mako_command(ctx.env, &arm.tree, cluster, work, "build", w);
    cmd.args(["-p", &w.build_procs.to_string()]);
    let (out, err) = (
        artifacts.join("mako-build.txt"),
        artifacts.join("mako-build.err"),
    );
    let started = Instant::now();
    let mut child = Child::spawn_on("mako --mode build", cmd, &out, &err, ctx.other_cpus())?;
    let bound = ctx.bounds.mako_build;
    let mut stall = StallWatch::new("mako --mode build", started, None, bound);
    let status = child.wait_until(started + bound, bound, || {
        monitor.tick();
        cluster.check_alive()?;
        stall.check(cluster)
    });
    remove_mako_leftovers(child.pid());
    let status = status.map_err(|e| stall.explain(e))?;
    let text = read_output(&out)?;
    // mako aborts in _dl_fini after its report, so the exit status says little: a
    // complete report is success.
    let summary = TextSummary::parse(&text).map_err(|e| {
        anyhow!(
            "mako --mode build ended ({status}) without a complete report: {}; see {}; {}",
            excerpt(&format!("{e:#}"), 10),
            out.display(),
            output_note("stderr", &err, 5)
        )
    })?;
    let timeouts = match summary.total_timeouts {
        Some(n) => n,
        None if !arm.mako.counts_timeouts => 0,
        None => {
            return Err(anyhow!(
                "mako --mode build printed no 'Total Timeouts:' line, which mako of FDB {} \
                 prints: the report is incomplete; see {}",
                arm.mako.release,
                out.display()
            )
            .into())
        }
    };
    if summary.total_errors > 0 || timeouts > 0 {
        return Err(anyhow!(
            "mako --mode build counted {} errors and {timeouts} timeouts: the data set is \
             incomplete; see {}",
            summary.total_errors,
            out.display()
        )
        .into());
    }
    Ok(())
}

/// mako's status: the phase (warmup or measuring) and the current TPS from its
/// per-second lines in `out`.
fn mako_status(elapsed: Duration, w: &Workload, out: &Path) -> String {
    let phase = if elapsed < Duration::from_secs(w.warmup_seconds) {
        "warmup"
    } else if elapsed < Duration::from_secs(w.seconds) {
        "measuring"
    } else {
        "its window is over"
    };
    // Cosmetic: a report not readable yet shows the phase alone.
    let text = read_output(out).unwrap_or_default();
    match last_sample_tps(&text) {
        Some(tps) => format!("{phase}, {tps:.0} TPS"),
        None => phase.to_string(),
    }
}

fn mako_run(
    ctx: &TrialContext,
    arm: &ArmPlan,
    cluster: &Cluster,
    work: &Path,
    artifacts: &Path,
    monitor: &mut Monitor,
) -> Result<(MakoReport, Option<RoleCpu>), PhaseError> {
    let w = ctx.workload;
    let (out, err) = (
        artifacts.join("mako-run.txt"),
        artifacts.join("mako-run.err"),
    );
    let json = artifacts.join("mako.json");
    let cmd = mako_run_command(ctx, arm, cluster, work, artifacts, &json);
    let started = Instant::now();
    let mut child = Child::spawn_on("mako --mode run", cmd, &out, &err, ctx.other_cpus())?;
    let bound = Duration::from_secs(w.seconds) + ctx.bounds.mako_run_grace;
    // Every role's CPU over the measurement window: from the end of the warmup (counted
    // from mako's start) to the last sample while every mako process still ran.
    let servers = cluster.server_pids();
    let client = child.pid();
    let warmup = Duration::from_secs(w.warmup_seconds);
    let mut progress = Progress::new(ctx.progress, "mako run", w.seconds);
    let expected = Some(Duration::from_secs(w.seconds));
    let grace = ctx.bounds.mako_run_grace;
    let mut stall = StallWatch::new("mako --mode run", started, expected, grace);
    let status = child.wait_until(started + bound, bound, || {
        monitor.tick();
        if started.elapsed() >= warmup {
            monitor.start_cpu_window(&servers, Some(client));
        }
        let elapsed = started.elapsed();
        progress.update(Some(elapsed), || mako_status(elapsed, w, &out));
        cluster.check_alive()?;
        stall.check(cluster)
    });
    progress.finish();
    remove_mako_leftovers(child.pid());
    let status = status.map_err(|e| stall.explain(e))?;
    let cpu = monitor.role_cpu();
    let report = (|| -> Result<MakoReport> {
        let text = read_output(&out)?;
        let json_text = read_output(&json)?;
        let report = MakoReport::parse(
            &text,
            &out.display().to_string(),
            &json_text,
            &json.display().to_string(),
            arm.mako.format(),
        )?;
        if arm.mako.warmup_seconds {
            return Ok(report);
        }
        // No --warmup_seconds: the window is the samples after the warmup's seconds.
        report.measured_after(w.warmup_seconds as f64)
    })()
    .map_err(|e| {
        anyhow!(
            "mako --mode run ended ({status}) without a usable report: {}; {}",
            excerpt(&format!("{e:#}"), 10),
            output_note("stderr", &err, 5)
        )
    })?;
    Ok((report, cpu))
}

/// `mako --mode run` as this arm's mako takes it (`ArmPlan::mako`): `--async_xacts`,
/// `--warmup_seconds` and `--stats_export_path` only where it has them (the plan refused
/// a workload a mako cannot run); without `--warmup_seconds` it runs the whole
/// `--seconds` and the window is cut from its samples.
fn mako_run_command(
    ctx: &TrialContext,
    arm: &ArmPlan,
    cluster: &Cluster,
    work: &Path,
    artifacts: &Path,
    json: &Path,
) -> Command {
    let (w, caps) = (ctx.workload, &arm.mako);
    let mut cmd = mako_command(ctx.env, &arm.tree, cluster, work, "run", w);
    cmd.args(["-p", &w.procs.to_string()])
        .args(["-t", &w.threads.to_string()]);
    if caps.async_xacts {
        cmd.args(["--async_xacts", &w.async_xacts.to_string()]);
    }
    cmd.args(["-x", &w.transaction]);
    if caps.warmup_seconds {
        cmd.args(["--warmup_seconds", &w.warmup_seconds.to_string()]);
    }
    cmd.args(["--seconds", &w.seconds.to_string()])
        // Both take an optional argument (getopt `optional_argument` in mako.cpp): only
        // the `=` form is unambiguous (and the only one 7.1/7.2's mako reads).
        // OS strings: a results dir whose name is not UTF-8 is still the same path.
        .arg(flag_path("--json_report=", json));
    if caps.stats_export_path {
        cmd.arg(flag_path(
            "--stats_export_path=",
            &artifacts.join("mako-sketch.json"),
        ));
    }
    cmd
}

/// `--flag=PATH` as one argument, keeping the path's bytes (not `display()`'s lossy text).
fn flag_path(flag: &str, path: &Path) -> std::ffi::OsString {
    let mut arg = std::ffi::OsString::from(flag);
    arg.push(path);
    arg
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
