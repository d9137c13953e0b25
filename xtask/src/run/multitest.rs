//! Run stage: the multitest driver's phase of a trial. Tester processes (`fdbserver -c
//! test`) join the trial's cluster as supervised children of it; `fdbserver -r multitest
//! -f multitest.toml` runs one ReadWrite test on them, bounded; its stdout becomes the
//! trial's [`MultitestReport`].
//!
//! FDB's behaviour (read in `fdbserver/tester/test.cpp` of 8.0, `tester.actor.cpp` of
//! 7.x, and seen on a real 8.0 run, `fdb/testdata/multitest/`): the multitest waits up to
//! 600 s for `--num-testers` testers, silently, then uses every tester it found; it exits
//! 0 when a test failed, so only its `N tests passed; M tests failed.` line tells; a
//! workload option it refuses is named only on the testers' stderr; and the testers keep
//! running the last test after the multitest exits, so they are stopped with the cluster.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::anyhow;
use fdb::{knob::KnobSource, multitest::read_run, Knob};

use super::{
    cluster::{copy_files, Cluster},
    context::Progress,
    driver::{timed, Driver, Failure, Trial},
    monitor::Monitor,
    stall::StallWatch,
};
use crate::{
    build::tree::locality_args,
    config::DriverKind,
    plan::PlannedTrial,
    process::{excerpt, output_note, read_output, Child, PhaseError},
    results::{
        fs::create_new,
        trial::{CpuRole, MultitestReport, Phase, RoleCpu, TrialRecord},
    },
};

/// The line multitest prints when the test's load starts, after its setup loaded the
/// rows (`fdbserver/tester/test.cpp`, `runTest`: `running test (TITLE)...`).
const RUNNING: &str = "running test (";

/// The multitest's first line, printed once the testers it waits for have joined (runTests
/// in `fdbserver/tester/test.cpp`, after its wait for `minTestersExpected` testers).
const JOINED: &str = "startingConfiguration:";

/// The multitest driver: testers and one ReadWrite test, in one phase.
pub(super) struct Multitest;

impl Driver for Multitest {
    fn run(
        &self,
        t: &Trial,
        cluster: &mut Cluster,
        monitor: &mut Monitor,
        record: &mut TrialRecord,
    ) -> Result<(), Failure> {
        let ran = timed(record, Phase::Multitest, || run_test(t, cluster, monitor));
        record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
        let (report, role_cpu) = ran?;
        if let Err(error) = check_steady(t, cluster, record) {
            record.multitest = Some(report);
            return Err(Failure {
                phase: Phase::Multitest,
                error,
            });
        }
        let planned = t.planned;
        // A sweep overdrives past its knee on purpose: retries there are data.
        let validity = match planned.target_tps {
            Some(_) => report.measured(),
            None => report.validity(),
        }
        .and_then(|()| t.record_cpu(record, role_cpu));
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
        validity.map_err(|e| Failure {
            phase: Phase::Multitest,
            error: anyhow!(e).into(),
        })
    }
}

/// For a cluster the gate did not start, whose status the trial read before the test:
/// errors when it recovered during the test ([`Cluster::check_no_recovery`]).
fn check_steady(t: &Trial, c: &Cluster, record: &TrialRecord) -> Result<(), PhaseError> {
    match &record.cluster {
        Some(before) => c.check_no_recovery(before, t.ctx.bounds.available),
        None => Ok(()),
    }
}

/// The multitest's stdout in a trial's artifacts: its progress lines and its result.
const STDOUT: &str = "multitest.txt";

/// Starts the testers, runs the test within `--timeout-mako-build` (testers joining, rows
/// loading) + `--seconds` + `--timeout-mako-run-grace`, and reads its results.
/// Artifacts: `multitest.toml`, `multitest.txt`/`.err`, and the multitest's trace in
/// `multitest/`.
fn run_test(
    t: &Trial,
    cluster: &mut Cluster,
    monitor: &mut Monitor,
) -> Result<(MultitestReport, Option<RoleCpu>), PhaseError> {
    let (ctx, arm, planned) = (t.ctx, t.arm, t.planned);
    let (work, artifacts) = (&t.work, &t.artifacts);
    let w = ctx.workload;
    let DriverKind::Multitest(rw) = w.driver_kind() else {
        return Err(anyhow!("the multitest driver ran a workload without a ReadWrite load").into());
    };
    // A sweep's step sets the target.
    let target_tps = planned.target_tps.unwrap_or(rw.target_tps);
    let spec_file = artifacts.join("multitest.toml");
    // The database of a cluster the gate did not start must be left as it was found.
    let clear = ctx.cluster.existing().is_some();
    create_new(
        &spec_file,
        &w.readwrite_spec(rw, target_tps, clear).to_toml()?,
    )?;
    let started = Instant::now();
    // Testers joining and the rows loading are the load phase (mako's build), then the
    // test runs its --seconds.
    let bound = ctx.bounds.mako_build + Duration::from_secs(w.seconds) + ctx.bounds.mako_run_grace;
    let knobs = tester_knobs(planned);
    cluster.start_testers(&arm.tree, rw.testers, &knobs, ctx.pinning, bound)?;
    let log = work.join("multitest");
    crate::files::create_dir_all("work dir", &log)?;
    // Testers on other hosts join a cluster the gate did not start.
    let remote = ctx.cluster.remote_testers();
    let testers = rw.testers + remote;
    let cmd = command(t, cluster, &spec_file, testers, &log);
    let (out, err) = (artifacts.join(STDOUT), artifacts.join("multitest.err"));
    let mut child = Child::spawn_on("fdbserver -r multitest", cmd, &out, &err, ctx.other_cpus())?;
    let status =
        wait(t, &mut child, cluster, monitor, started + bound, bound).map_err(|e| match e {
            // The multitest prints nothing until its testers have joined.
            PhaseError::Timeout(bound, _) if !joined(&out) => {
                PhaseError::Timeout(bound, not_joined(rw.testers, remote))
            }
            e => e,
        });
    let copied = copy_files(&log, &artifacts.join("multitest"));
    let status = status?;
    copied.map_err(PhaseError::from)?;
    let result = read_result(&out, &err, status, rw.testers, remote)
        .map_err(|e| cluster_gone_first(cluster, e))?;
    let cpu = monitor
        .trial_cpu(t.planned.index)
        .map(|cpu| without_client_cpu(cpu, remote > 0));
    Ok((
        MultitestReport {
            target_tps: target_tps as f64,
            testers,
            actors_per_tester: rw.actors_per_tester,
            result,
        },
        cpu,
    ))
}

/// The multitest's result from its stdout `out` (stderr `err`), which ended with `status`
/// and waited for its testers (`here` started by the gate, `remote` elsewhere). Errors: no
/// usable result, saying whether the testers never joined.
fn read_result(
    out: &Path,
    err: &Path,
    status: std::process::ExitStatus,
    here: u32,
    remote: u32,
) -> Result<fdb::multitest::ReadWriteResult, PhaseError> {
    let text = read_output(out)?;
    read_run(&text, (here + remote) as usize).map_err(|e| {
        if !joined(out) {
            return anyhow!(
                "fdbserver -r multitest ended ({status}): {}; {}",
                not_joined(here, remote),
                output_note("stderr", err, 5)
            )
            .into();
        }
        anyhow!(
            "fdbserver -r multitest ended ({status}) without a usable result: {}; see {}; {}; \
             a refused workload option is named only in the testers' stderr \
             (fdbserver-test-<port>.err)",
            excerpt(&format!("{e:#}"), 10),
            out.display(),
            output_note("stderr", err, 5)
        )
        .into()
    })
}

/// The multitest's failure `e`, said as the cluster's when none of the coordinators of a
/// cluster the gate did not start accepts a connection now, or when the cluster (any)
/// answers `status json` with no available database: a cluster gone while the rows
/// load fails the multitest before the gate's watch ([`Cluster::check_coordinators`])
/// would call it gone.
fn cluster_gone_first(cluster: &Cluster, e: PhaseError) -> PhaseError {
    if let Some(names) = cluster.coordinators_gone() {
        return anyhow!(
            "the multitest failed and none of the cluster's coordinators ({names}) accepts a \
             connection now: the cluster stopped, or this host lost its way to it; the \
             multitest's own error: {e}"
        )
        .into();
    }
    // A stopped cluster accepts connections but answers nothing, and FDB's tester gives
    // up during the load with only "Operation failed".
    match cluster.unanswered(Duration::from_secs(10)) {
        Ok(Some(seen)) => anyhow!(
            "the multitest failed and the cluster does not answer now: status json found no \
             available database ({seen}; kept as status-probe.json): it may have stopped \
             (SIGSTOP) or its host hung; the multitest's own error: {e}"
        )
        .into(),
        _ => e,
    }
}

/// `cpu` without the client's when testers run on other hosts (`remote`): the gate sees
/// only its own testers' CPU, against every tester's transactions, so client CPU per
/// transaction would be too low by the remote testers' share.
fn without_client_cpu(mut cpu: RoleCpu, remote: bool) -> RoleCpu {
    if remote {
        cpu.cores.remove(&CpuRole::Client);
        cpu.per_second.remove(&CpuRole::Client);
        cpu.instructions_per_s.remove(&CpuRole::Client);
    }
    cpu
}

/// Whether a trial's multitest (its stdout in the trial's `artifacts`) got as far as its
/// test's setup, which writes the rows: before, a cluster the gate did not start holds
/// none of them.
pub fn wrote_rows(artifacts: &Path) -> bool {
    joined(&artifacts.join(STDOUT))
}

/// Whether the multitest's stdout `out` says its testers joined.
fn joined(out: &Path) -> bool {
    read_output(out).unwrap_or_default().contains(JOINED)
}

/// What to say when the multitest's testers (`here` started by the gate, `remote` on
/// other hosts) never all joined.
fn not_joined(here: u32, remote: u32) -> String {
    format!(
        "the {} tester(s) it waits for ({here} started here, {remote} --remote-testers on \
         other hosts) never all joined the cluster: the multitest starts its test only once \
         they have (`fdbserver/tester/test.cpp`); check that each remote tester runs, with \
         this cluster file and the cluster's release",
        here + remote
    )
}

/// The testers are the client, as mako is: an arm's knobs are the servers'. They get only
/// the knobs the gate adds for the work dir (tmpfs).
fn tester_knobs(planned: &PlannedTrial) -> Vec<Knob> {
    planned
        .knobs
        .iter()
        .filter(|k| k.source == KnobSource::Auto)
        .cloned()
        .collect()
}

/// Waits for the multitest until `deadline` (`bound` after the testers started), checking
/// the cluster and ticking the monitor. The CPU window is ReadWrite's measured one: the
/// middle 75% of the test, timed from the `running test` line of its stdout ([`STDOUT`]
/// in the trial's artifacts).
fn wait(
    t: &Trial,
    child: &mut Child,
    cluster: &Cluster,
    monitor: &mut Monitor,
    deadline: Instant,
    bound: Duration,
) -> Result<std::process::ExitStatus, PhaseError> {
    let ctx = t.ctx;
    let out = &t.artifacts.join(STDOUT);
    let pid = child.pid();
    let test_s = ctx.workload.seconds as f64;
    let mut load_started: Option<Instant> = None;
    let mut progress = Progress::new(ctx.progress, "multitest", ctx.workload.seconds);
    let test = Duration::from_secs(ctx.workload.seconds);
    // Until the test starts (testers joining, rows loading) there is no expected end.
    let mut stall = StallWatch::new("the multitest", Instant::now(), None, ctx.bounds.mako_build);
    let grace = ctx.bounds.mako_run_grace;
    let status = child.wait_until(deadline, bound, || {
        monitor.tick();
        if load_started.is_none() && read_output(out).unwrap_or_default().contains(RUNNING) {
            let now = Instant::now();
            load_started = Some(now);
            stall.expect_end(now, test, grace);
        }
        let into = load_started.map(|t| t.elapsed());
        if let Some(into) = into.map(|d| d.as_secs_f64()) {
            if into >= test_s / 8.0 {
                monitor.start_cpu_window(&cluster.server_pids(), Some(pid));
            }
            if into >= test_s * 7.0 / 8.0 {
                monitor.close_cpu_window();
            }
        }
        progress.update(into, || phase_of(into, test_s));
        cluster.check_alive()?;
        cluster.check_coordinators()?;
        stall.check(cluster)
    });
    progress.finish();
    monitor.close_cpu_window();
    status.map_err(|e| stall.explain(e))
}

/// What the test is doing `into` its load (`None`: testers joining, rows loading), for
/// the progress: ReadWrite measures the middle 75% of its `test_s` seconds.
fn phase_of(into: Option<Duration>, test_s: f64) -> String {
    match into.map(|d| d.as_secs_f64() / test_s) {
        None => "testers joining, loading rows".to_string(),
        Some(f) if (0.125..0.875).contains(&f) => "measuring".to_string(),
        Some(_) => "running, not measured".to_string(),
    }
}

/// `fdbserver -r multitest -f SPEC -C CLUSTER --num-testers N -L LOG`, run in `log`.
fn command(t: &Trial, cluster: &Cluster, spec: &Path, testers: u32, log: &Path) -> Command {
    let mut cmd = Command::new(&t.arm.tree.fdbserver);
    t.ctx.env.apply(&mut cmd);
    cmd.args(["-r", "multitest", "-f"])
        .arg(spec)
        .arg("-C")
        .arg(&cluster.cluster_file)
        .args(["--num-testers", &testers.to_string()])
        .args(locality_args("driver"))
        .arg("-L")
        .arg(log)
        .current_dir(log);
    cmd
}
