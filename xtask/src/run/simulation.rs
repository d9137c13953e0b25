//! Run stage: the simulation driver's trial. One seed of FDB's simulator (`fdbserver -r
//! simulation`), a whole cluster and the ReadWrite workload in one process on simulated
//! time, run under Valgrind's cachegrind (`--cache-sim=no`: instruction counts only) in a
//! scratch directory of the trial's work dir (the simulator writes `simfdb/` and its trace
//! files into its working directory). The trial keeps the spec, the simulator's stdout,
//! stderr and trace files, and the instructions per function
//! ([`PROFILE_FILE`](crate::results::profile::PROFILE_FILE)).
//!
//! Why cachegrind and not callgrind: the gate attributes each function's own (exclusive)
//! instructions to a role by where the function is defined, which cachegrind's per-function
//! costs give; callgrind's inclusive costs and windows cost 1.6x the time (measured on FDB
//! 8.0, `docs/simulation.md`). Address-space randomization is turned off for
//! the child (`personality(ADDR_NO_RANDOMIZE)`, as `setarch -R`): flow's memory-tracker
//! samples allocations by address hash, so with it on, two runs of one seed differ in a few
//! hundredths of a percent of their instructions.

use std::{path::Path, process::Command, time::Instant};

use super::{
    cluster::copy_files,
    driver::{timed, Failure, Trial},
};
use crate::{
    build::tree::locality_args,
    config::Arm,
    plan::{simulation::seed_of, Plan},
    process::{output_note, read_output, Child, PhaseError},
    results::{
        fs::create_new,
        profile::write_profile,
        trial::{Outcome, Phase, SimulationReport, TrialRecord},
    },
};
use anyhow::{anyhow, bail, Context};
use fdb::{simulation, Engine};

/// The simulator's stdout and stderr in a trial's artifacts.
const STDOUT: &str = "simulation.txt";
const STDERR: &str = "simulation.err";
/// The spec, in the trial's artifacts.
const SPEC: &str = "simulation.toml";
/// cachegrind's output file, on the trial's work dir (kept in the artifacts when it does
/// not read).
const CACHEGRIND_OUT: &str = "cachegrind.out";

/// Runs the trial's seed under cachegrind, bounded by `--timeout-simulation`, and fills
/// `record.simulation`.
pub(super) fn run(t: &Trial, record: &mut TrialRecord) -> Result<(), Failure> {
    let report = timed(record, Phase::Simulation, || run_seed(t))?;
    record.simulation = Some(report);
    Ok(())
}

fn run_seed(t: &Trial) -> Result<SimulationReport, PhaseError> {
    let (ctx, planned) = (t.ctx, t.planned);
    let w = ctx.workload;
    let plan = ctx
        .simulation
        .ok_or_else(|| anyhow!("the simulation driver ran without its plan"))?;
    let valgrind = &plan.valgrind;
    let spec = plan
        .specs
        .get(&planned.engine)
        .ok_or_else(|| anyhow!("the plan has no simulation spec for {}", planned.engine))?;
    let spec_file = t.artifacts.join(SPEC);
    create_new(&spec_file, spec)?;
    let dir = t.work.join("simulation");
    crate::files::create_dir_all("work dir", &dir)?;
    // Beside the simulator's dir, not in it: its trace files are kept, and the 20 MB of
    // cachegrind's file only when it does not read.
    let out_file = t.work.join(CACHEGRIND_OUT);
    let seed = seed_of(planned.repetition);
    let mut cmd = Command::new(&valgrind.path);
    ctx.env.apply(&mut cmd);
    // No gdbserver: it would make pipes and shared memory named after the pid.
    cmd.args(["--tool=cachegrind", "--cache-sim=no", "--vgdb=no"])
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(&t.arm.tree.fdbserver)
        .args(["-r", "simulation", "-f"])
        .arg(&spec_file)
        .args(["-s", &seed.to_string(), "-b", "off"])
        .args(locality_args("simulation"))
        .args(planned.knobs.iter().map(|k| k.arg()))
        .current_dir(&dir);
    // SAFETY: personality(2) is one system call, async-signal-safe, and allocates nothing.
    unsafe {
        use std::os::unix::process::CommandExt as _;
        cmd.pre_exec(|| {
            use nix::sys::personality::{self, Persona};
            personality::set(personality::get()? | Persona::ADDR_NO_RANDOMIZE)?;
            Ok(())
        });
    }
    let (stdout, stderr) = (t.artifacts.join(STDOUT), t.artifacts.join(STDERR));
    let bound = ctx.bounds.simulation;
    let started = Instant::now();
    let mut child = Child::spawn("valgrind fdbserver -r simulation", cmd, &stdout, &stderr)?;
    let status = child.wait_until(started + bound, bound, || Ok(()));
    let title = w.test_title();
    let result = status.and_then(|status| {
        read(&stdout, &stderr, &out_file, &title, status).map_err(PhaseError::from)
    });
    // Kept whatever happened: a failed seed's trace says why, and a seed that replays
    // differently (the A/A check) is found by comparing two traces.
    let (result, cachegrind) = match (result, copy_files(&dir, &t.artifacts.join(TRACE_DIR))) {
        (Ok(r), Ok(())) => r,
        (Ok(_), Err(e)) => return Err(e.into()),
        (Err(e), kept) => {
            let e = keep_cachegrind_out(&out_file, &t.artifacts, e);
            return Err(with_traces(&t.artifacts, kept, e));
        }
    };
    let profile = write_profile(&t.artifacts, &cachegrind)?;
    let simulated_tps = result.transactions / w.seconds as f64;
    Ok(SimulationReport {
        seed,
        simulated_tps,
        instructions: cachegrind.total_ir,
        instructions_by_role: simulation::ir_by_role(&cachegrind),
        result,
        profile: profile
            .strip_prefix(ctx.results_dir)
            .map_or(profile.clone(), Path::to_path_buf),
    })
}

/// The simulator's result (stdout) and its instructions (cachegrind's file), once it
/// exited with `status`. Errors: it failed (exit status, a failed test, no unseed), or
/// cachegrind's file is missing or does not read; each names the file to read.
fn read(
    stdout: &Path,
    stderr: &Path,
    cachegrind: &Path,
    title: &str,
    status: std::process::ExitStatus,
) -> anyhow::Result<(simulation::SimulationResult, simulation::Cachegrind)> {
    let text = read_output(stdout)?;
    let result = simulation::read_run(&text, title);
    if !status.success() {
        let why = match &result {
            Err(e) => format!("{e:#}; "),
            Ok(_) => String::new(),
        };
        bail!(
            "valgrind fdbserver -r simulation ended ({status}): {why}{}; {}",
            output_note("stderr", stderr, 5),
            output_note("stdout", stdout, 3)
        );
    }
    let result = result.with_context(|| {
        format!(
            "in {}; {}",
            stdout.display(),
            output_note("stderr", stderr, 5)
        )
    })?;
    // Read as every child's output is: a regular file, not followed through a link, of at
    // most 64 MiB (a real one is about 20 MB), never waited on.
    let raw = read_output(cachegrind).with_context(|| {
        format!(
            "cachegrind wrote no usable output file ({})",
            output_note("stderr", stderr, 5)
        )
    })?;
    let parsed = simulation::parse_cachegrind(&raw).context("cachegrind's output file")?;
    Ok((result, parsed))
}

/// `e` with cachegrind's output file `out` copied into the trial's `artifacts` when it is a
/// regular file (a failed parse is read there), named in the message.
fn keep_cachegrind_out(out: &Path, artifacts: &Path, e: PhaseError) -> PhaseError {
    let regular = std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_file());
    let kept = artifacts.join(CACHEGRIND_OUT);
    if !regular || crate::files::copy("--out", out, &kept).is_err() {
        return e;
    }
    match e {
        PhaseError::Failed(e) => {
            PhaseError::Failed(anyhow!("{e:#} (the file is kept as {})", kept.display()))
        }
        e => e,
    }
}

/// Where a simulation trial keeps the simulator's trace files, in its artifacts.
pub const TRACE_DIR: &str = "trace";

/// `e` with where the simulator's trace files were kept (`kept`: copying them into the
/// trial's `artifacts/trace/`), named in the message: the trace says why a seed failed.
fn with_traces(artifacts: &Path, kept: anyhow::Result<()>, e: PhaseError) -> PhaseError {
    let note = match kept {
        Ok(()) => format!(
            "the simulator's trace files are in {}",
            artifacts.join(TRACE_DIR).display()
        ),
        Err(c) => format!("its trace files were not kept: {c:#}"),
    };
    match e {
        PhaseError::Failed(e) => PhaseError::Failed(anyhow!("{e:#}; {note}")),
        PhaseError::Timeout(bound, why) if why.is_empty() => PhaseError::Timeout(bound, note),
        PhaseError::Timeout(bound, why) => PhaseError::Timeout(bound, format!("{why}; {note}")),
        PhaseError::Interrupted => PhaseError::Interrupted,
    }
}

/// Marks as ERROR each measured experiment trial whose seed printed another unseed than
/// the same seed's baseline trial although both arms run byte-identical binaries
/// ([`Plan::same_build`]: one tree, or copies of one build) with the same knobs: FDB's determinism check failed, so the counts are not the
/// build's alone (an uninitialized read, the host's clock or entropy reaching the
/// simulation). Returns the indices of the trials marked.
pub fn check_determinism(plan: &Plan, trials: &mut [TrialRecord]) -> Vec<usize> {
    if plan.baseline.is_none() || !plan.same_build {
        return Vec::new();
    }
    let unseeds: Vec<(Engine, u32, Vec<fdb::Knob>, u64)> = trials
        .iter()
        .filter(|t| t.arm == Arm::Baseline && t.outcome == Outcome::Measured)
        .filter_map(|t| {
            let s = t.simulation.as_ref()?;
            Some((t.engine, t.repetition, t.knobs.clone(), s.result.unseed))
        })
        .collect();
    let mut marked = Vec::new();
    for t in trials
        .iter_mut()
        .filter(|t| t.arm == Arm::Experiment && t.outcome == Outcome::Measured)
    {
        let Some(s) = &t.simulation else { continue };
        let Some((.., base)) = unseeds
            .iter()
            .find(|(e, r, k, _)| *e == t.engine && *r == t.repetition && *k == t.knobs)
        else {
            continue;
        };
        if *base == s.result.unseed {
            continue;
        }
        t.outcome = Outcome::Error;
        t.failed_phase = Some(Phase::Simulation);
        t.error = Some(format!(
            "simulation: seed {} printed unseed {} here and {base} in the baseline arm, which \
             runs the same fdbserver with the same knobs: the simulation did not replay \
             (FDB's determinism check), so its counts are not the build's alone; compare the \
             two trials' trace files ({}/{TRACE_DIR}/ and the baseline's)",
            s.seed,
            s.result.unseed,
            t.artifacts.display()
        ));
        marked.push(t.index);
    }
    marked
}
