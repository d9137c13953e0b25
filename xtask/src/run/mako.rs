//! Run stage: mako's driver. `mako --mode build` loads the rows, `mako --mode run` runs
//! the load for `--seconds`; its text and JSON reports become the trial's [`MakoReport`].
//!
//! mako links `libfdb_c.so` without an rpath and aborts in `_dl_fini` at exit after
//! writing its report (`bindings/c/test/mako/mako.cpp`): it runs with the tree's `lib/`
//! as `LD_LIBRARY_PATH`, and a complete report, not its exit status, is success.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Result};
use fdb::mako::{last_sample_tps, MakoReport, TextSummary};

use super::{
    cluster::Cluster,
    context::Progress,
    driver::{timed, Driver, Failure, Trial},
    monitor::Monitor,
    reaper::{record_mako, remove_mako_leftovers},
    stall::StallWatch,
};
use crate::{
    config::Workload,
    process::{excerpt, output_note, read_output, Child, PhaseError},
    results::trial::{Phase, RoleCpu, TrialRecord},
};

/// mako's driver: its build phase, then its run.
pub(super) struct Mako;

impl Driver for Mako {
    fn run(
        &self,
        t: &Trial,
        cluster: &mut Cluster,
        monitor: &mut Monitor,
        record: &mut TrialRecord,
    ) -> Result<(), Failure> {
        let built = timed(record, Phase::MakoBuild, || build(t, cluster, monitor));
        record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
        built?;
        let ran = timed(record, Phase::MakoRun, || run(t, cluster, monitor));
        record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
        let (report, role_cpu) = ran?;
        if let Some(note) = report.one_valued_latency() {
            tracing::info!("trial {}: {note}", t.planned.index);
        }
        let w = t.ctx.workload;
        let validity = report
            .validity()
            .and_then(|()| report.window_matches(w.seconds as f64, w.warmup_seconds as f64))
            .and_then(|()| t.record_cpu(record, role_cpu));
        record.report = Some(report);
        validity.map_err(|e| Failure {
            phase: Phase::MakoRun,
            error: anyhow!(e).into(),
        })
    }
}

/// A mako command in `mode` with the environment mako needs (it links `libfdb_c.so`
/// without an rpath, and `LD_BIND_NOW` makes a missing symbol fail at start, not
/// mid-run) and the data set's shape, which build and run must agree on.
fn command(t: &Trial, cluster: &Cluster, mode: &str) -> Command {
    let (tree, w) = (&t.arm.tree, t.ctx.workload);
    let mako = tree
        .mako
        .as_ref()
        .expect("a mako workload's trees are opened with mako");
    let mut cmd = Command::new(mako);
    t.ctx.env.apply(&mut cmd);
    cmd.env("LD_LIBRARY_PATH", &tree.lib_dir)
        .env("LD_BIND_NOW", "1")
        .current_dir(&t.work)
        .arg("--cluster")
        .arg(&cluster.cluster_file)
        .args(["--mode", mode])
        .args(["--rows", &w.rows.to_string()])
        .args(["--keylen", &w.keylen.to_string()])
        .args(["--vallen", &w.vallen.to_string()]);
    cmd
}

/// `mako --mode build` within `--timeout-mako-build`: the data set, complete (no error,
/// no timeout counted). Artifacts: `mako-build.txt`/`.err`.
fn build(t: &Trial, cluster: &Cluster, monitor: &mut Monitor) -> Result<(), PhaseError> {
    let (ctx, arm, artifacts) = (t.ctx, t.arm, &t.artifacts);
    let w = ctx.workload;
    let mut cmd = command(t, cluster, "build");
    cmd.args(["-p", &w.build_procs.to_string()]);
    let (out, err) = (
        artifacts.join("mako-build.txt"),
        artifacts.join("mako-build.err"),
    );
    let started = Instant::now();
    let mut child = Child::spawn_on("mako --mode build", cmd, &out, &err, ctx.other_cpus())?;
    record_mako(ctx.run_workdir, child.pid());
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
fn status(elapsed: Duration, w: &Workload, out: &Path) -> String {
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

/// `mako --mode run` within `--seconds` + `--timeout-mako-run-grace`, every role's CPU
/// sampled over its window; its report. Artifacts: `mako-run.txt`/`.err`, `mako.json`
/// and, where mako has it, `mako-sketch.json`.
fn run(
    t: &Trial,
    cluster: &Cluster,
    monitor: &mut Monitor,
) -> Result<(MakoReport, Option<RoleCpu>), PhaseError> {
    let (ctx, arm, artifacts) = (t.ctx, t.arm, &t.artifacts);
    let w = ctx.workload;
    let (out, err) = (
        artifacts.join("mako-run.txt"),
        artifacts.join("mako-run.err"),
    );
    let json = artifacts.join("mako.json");
    let cmd = run_command(t, cluster, &json);
    let started = Instant::now();
    let mut child = Child::spawn_on("mako --mode run", cmd, &out, &err, ctx.other_cpus())?;
    record_mako(ctx.run_workdir, child.pid());
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
        progress.update(Some(elapsed), || status(elapsed, w, &out));
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
fn run_command(t: &Trial, cluster: &Cluster, json: &Path) -> Command {
    let (w, caps) = (t.ctx.workload, &t.arm.mako);
    let mut cmd = command(t, cluster, "run");
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
            &t.artifacts.join("mako-sketch.json"),
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
