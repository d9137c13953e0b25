//! What `bench` and `calibrate` share once a run is planned: run -> judge -> report. The
//! results dir is made here, `meta.json` first.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use fdb::Engine;

use crate::{
    config::{Schedule, MAX_TRIALS},
    judge::{
        host::host_lines, knee, samples::Sample, sequential::Sequential, Criteria, Judge,
        Judgement, Reference, Verdict,
    },
    plan::{Plan, PlannedTrial},
    process::interrupted,
    report::write::{self, LateCopy},
    results::{fs::results_dir, trial::TrialRecord},
    run::{init_logging, Runner},
};

/// What a finished (or interrupted) run left.
pub struct Finished {
    pub plan: Plan,
    pub out: PathBuf,
    pub trials: Vec<TrialRecord>,
    pub interrupted: bool,
    pub exit_code: i32,
    /// How many copies of the results (`--junit`, `--export-*`) could not be written.
    pub copies_failed: usize,
}

/// What a command writes once the run's verdict files and report are written and before
/// their copies: its own files in the results dir (the first argument), from the plan and
/// the trials, and the copies it makes of them ([`LateCopy`]).
pub type Afterwards<'a> =
    Box<dyn FnOnce(&Path, &Plan, &[TrialRecord]) -> Result<Vec<LateCopy>> + 'a>;

/// Nothing more than the verdict files (`bench`).
pub fn nothing_afterwards<'a>() -> Afterwards<'a> {
    Box::new(|_, _, _| Ok(Vec::new()))
}

/// Runs the plan's trials, judges them and writes every result: the results dir is made
/// here, `meta.json` first; `afterwards` writes the command's own files before any copy.
/// The terminal's log lines are in colour when `color`.
pub fn execute(plan: Plan, color: bool, afterwards: Afterwards) -> Result<Finished> {
    if interrupted() {
        anyhow::bail!("interrupted by a signal before the first trial; nothing was run");
    }
    // Before the results dir is made; the runner then refuses one on the same work dir even
    // when allowed. Allowed, it is a warning on the terminal and in run.log: not in the
    // result files, whose contents would then depend on what else ran on the host.
    let beside = crate::run::refuse_other_gates()?;
    crate::run::refuse_busy_workdir(&plan.workdir.path)?;
    let out = results_dir(plan.config.out.as_deref(), plan.config.copies())?;
    let ran = run_into(plan, out.clone(), beside, color, afterwards);
    if let Err(e) = &ran {
        leave_error(&out, e);
    }
    ran
}

/// What an error that ended the run leaves in its results dir `out`, best effort: the error
/// at the end of `run.log`, and a `summary.json` of its shape (as `--json` prints it) where
/// the run wrote none, so that the results dir says how its run ended (a setup error
/// before the first trial, or results that could not be written).
fn leave_error(out: &Path, e: &anyhow::Error) {
    tracing::error!(target: crate::run::RUN_LOG_ONLY, "{e:#}");
    let json = crate::report::error_json(crate::error::exit_status(e), &format!("{e:#}"));
    let _ = crate::results::fs::create_new(
        &out.join("summary.json"),
        &crate::process::json_printable(&json),
    );
}

/// [`execute`] once its results dir `out` is made.
fn run_into(
    plan: Plan,
    out: PathBuf,
    beside: Option<String>,
    color: bool,
    afterwards: Afterwards,
) -> Result<Finished> {
    init_logging(&out, plan.config.quiet, color)?;
    if let Some(w) = beside {
        tracing::warn!("{w}");
    }
    tracing::info!("results: {}", out.display());
    // The plan quotes files (CMakeCache.txt, a record): printable, as every such text.
    let printable = crate::process::printable;
    for line in plan.render_body().lines() {
        tracing::info!("{}", printable(line));
    }
    // The plan's warnings go out once, at warn level (shown even with --quiet).
    for w in &plan.warnings {
        tracing::warn!("{}", printable(w));
    }
    let results = || write::Stage("results");
    let started = std::time::SystemTime::now();
    write::meta(&out, &plan).context(results())?;
    if let Schedule::Sweep { ladder, .. } = &plan.config.schedule {
        return finish_sweep(plan.clone(), out, started, ladder, afterwards);
    }
    let (trials, looks, set_aside) = run_trials(&plan, &out)?;
    let interrupted = interrupted();
    let reference = reference(&plan);
    let criteria = criteria(&plan, plan.config.schedule.complete_at());
    let samples = Sample::of_run(reference.record_as_baseline(), &trials);
    let judgements = Judge {
        criteria,
        interrupted,
        looks: &looks,
        family: None,
        prior: plan.noise_prior.as_ref(),
    }
    .verdicts(&samples, &plan.engines);
    let mut warnings = plan.warnings.clone();
    warnings.extend(set_aside);
    if let Some(record) = reference.controlled_record() {
        log_host_lines(host_lines(record, &samples, &plan.engines), &mut warnings);
    }
    let judged = Judged {
        trials,
        judgements,
        warnings,
        interrupted,
    };
    finish(plan, out, judged, started, afterwards)
}

/// A saturation sweep (`--sweep`): its steps up to one past the knee, the knee judged
/// per engine (`judge::knee`), and every result written as for any run.
fn finish_sweep(
    plan: Plan,
    out: PathBuf,
    started: std::time::SystemTime,
    ladder: &[u64],
    afterwards: Afterwards,
) -> Result<Finished> {
    let (trials, set_aside) = run_sweep(&plan, &out, ladder)?;
    let interrupted = interrupted();
    let against = reference(&plan);
    let criteria = criteria(&plan, plan.config.schedule.complete_at());
    let mut warnings = plan.warnings.clone();
    warnings.extend(set_aside);
    if let Some(record) = against.controlled_record() {
        log_host_lines(
            knee::host_lines(record, &trials, &plan.engines),
            &mut warnings,
        );
    }
    let judged = Judged {
        judgements: knee::judge(
            &trials,
            &plan.engines,
            ladder,
            criteria,
            interrupted,
            against,
        ),
        trials,
        warnings,
        interrupted,
    };
    finish(plan, out, judged, started, afterwards)
}

/// Runs each engine's steps in order, all of a step's pairs and its confirmations
/// ([`knee::confirmations`]), and stops the engine one step past its knee: after the first
/// step that no arm followed, or a failed trial.
fn run_sweep(plan: &Plan, out: &Path, ladder: &[u64]) -> Result<(Vec<TrialRecord>, Vec<String>)> {
    let mut runner = Runner::start(plan, out, |trials, set_aside| {
        write::trials(out, trials, set_aside).context(write::Stage("results"))
    })?;
    let against = reference(plan);
    'engines: for &engine in &plan.engines {
        // Steps handed to the runner: the plan's trials on the steps past them will not run.
        let mut climbed = 0;
        // The engine's rounds (a pair, or a trial of the one arm) run so far.
        let mut rounds = 0;
        for &target in ladder {
            climbed += 1;
            let step = numbered_on(
                plan.trials
                    .iter()
                    .filter(|t| t.engine == engine && t.target_tps == Some(target)),
                &mut rounds,
            );
            for planned in &step {
                if !runner.run(planned.clone())? {
                    break 'engines;
                }
            }
            let extra = if runner.failed(engine) {
                0
            } else {
                knee::confirmations(&knee::steps(&runner.trials, engine), target, against)
            };
            if extra > 0 {
                tracing::info!(
                    "{engine}: the arms split on {target} TPS: {extra} more trial(s) per arm \
                     there, so that a majority decides the step"
                );
            }
            // After a failed trial the runner skips the engine's others.
            let confirmations = confirming(&step, extra, &mut rounds);
            runner.expect_more(confirmations.len());
            for planned in confirmations {
                if !runner.run(planned)? {
                    break 'engines;
                }
            }
            if runner.failed(engine) {
                break;
            }
            let steps = knee::steps(&runner.trials, engine);
            if !steps.iter().any(|s| s.target_tps == target && s.followed) {
                tracing::info!(
                    "{engine}: no arm followed {target} TPS: one step past the knee, the sweep \
                     stops"
                );
                break;
            }
        }
        let unclimbed = &ladder[climbed..];
        runner.expect_fewer(
            plan.trials
                .iter()
                .filter(|t| {
                    t.engine == engine && t.target_tps.is_some_and(|x| unclimbed.contains(&x))
                })
                .count(),
        );
    }
    Ok(runner.finish())
}

/// A sweep step's planned trials numbered on from the engine's `rounds` so far (the step's
/// first round `*rounds + 1`), and `rounds` moved past them. The plan numbers each step's
/// rounds on from the step before it, and cannot know the confirmations a split step will
/// run: numbered past every planned round, they read 1, 2, 3, 5, 6, 4 in run order.
fn numbered_on<'a>(
    step: impl Iterator<Item = &'a PlannedTrial>,
    rounds: &mut u32,
) -> Vec<PlannedTrial> {
    let step: Vec<&PlannedTrial> = step.collect();
    let first = step.iter().map(|t| t.repetition).min().unwrap_or(1);
    let base = *rounds;
    let out: Vec<PlannedTrial> = step
        .into_iter()
        .map(|t| PlannedTrial {
            repetition: base + 1 + (t.repetition - first),
            ..t.clone()
        })
        .collect();
    *rounds = out.iter().map(|t| t.repetition).max().unwrap_or(base);
    out
}

/// `extra` more rounds of a sweep's step: its last round's trials (one per arm, in its arm
/// order), each round numbered `*next + 1` on, `next` being the engine's rounds so far.
fn confirming(step: &[PlannedTrial], extra: usize, next: &mut u32) -> Vec<PlannedTrial> {
    let last = step.iter().map(|t| t.repetition).max().unwrap_or(0);
    let round: Vec<&PlannedTrial> = step.iter().filter(|t| t.repetition == last).collect();
    let mut out = Vec::new();
    for _ in 0..extra {
        *next += 1;
        out.extend(round.iter().map(|t| PlannedTrial {
            repetition: *next,
            ..(*t).clone()
        }));
    }
    out
}

/// Logs the host check's `(changed, line)`s; a changed host's line is also a warning of
/// the run's report.
fn log_host_lines(lines: Vec<(bool, String)>, warnings: &mut Vec<String>) {
    for (changed, line) in lines {
        if changed {
            tracing::warn!("{line}");
            warnings.push(line);
        } else {
            tracing::info!("{line}");
        }
    }
}

/// What a run's results are written from.
struct Judged {
    trials: Vec<TrialRecord>,
    judgements: Vec<Judgement>,
    /// The plan's warnings and any the run added.
    warnings: Vec<String>,
    interrupted: bool,
}

/// Writes the verdicts (summary, JUnit, Markdown), report.html and what `afterwards`
/// writes, then the copies (`--junit`, `--export-*`, `afterwards`' own), and returns the
/// finished run with its exit status.
fn finish(
    plan: Plan,
    out: PathBuf,
    mut j: Judged,
    started: std::time::SystemTime,
    afterwards: Afterwards,
) -> Result<Finished> {
    let results = || write::Stage("results");
    let (profile_diff, unread) = crate::results::profile::diff_or_warning(&out, &j.trials);
    j.warnings.extend(unread);
    let hostname = crate::results::host::Host::read().hostname;
    let junit_run =
        crate::report::JunitRun::new(&j.trials, started, &hostname, plan.config.junit.as_deref());
    let verdicts = write::Verdicts {
        judgements: &j.judgements,
        interrupted: j.interrupted,
        warnings: &j.warnings,
        profile_diff: &profile_diff,
    };
    let written = write::verdicts(
        &out,
        verdicts,
        write::Copies {
            files: plan.config.copies(),
            json_to_stdout: plan.config.json,
        },
        &junit_run,
    )
    .context(results())?;
    // The run's warnings, as summary.json has them: the plan's and those of its trials.
    write::html_report(&out, &plan, &j.trials, &verdicts, started).context(results())?;
    let late = afterwards(&out, &plan, &j.trials).context(results())?;
    // The run's own files first: a copy that fails cannot cost them.
    let copied = written.copies(late);
    Ok(Finished {
        exit_code: copied.exit_code,
        copies_failed: copied.failed,
        plan,
        out,
        trials: j.trials,
        interrupted: j.interrupted,
    })
}

/// What the plan's experiment is judged against: its record (if any), and whether a
/// baseline arm ran beside it.
fn reference(plan: &Plan) -> Reference<'_> {
    Reference::of(plan.recorded.as_ref(), plan.baseline.is_some())
}

/// The judging criteria of the plan, for `trials` planned per arm.
fn criteria(plan: &Plan, trials: u32) -> Criteria {
    let c = &plan.config;
    Criteria {
        trials,
        max_regression_pct: c.max_regression_pct,
        slo_tps: c.slo_tps,
        slo: plan.slo,
        strict: c.strict,
        // As `compare` judges the run again.
        unpaired: reference(plan).unpaired(),
        gates: c.gates,
        gates_if_measured: c.gates_if_measured,
        exact: c.workload.simulated,
    }
}

/// The records judged, the looks planned per engine (`--trials auto`) and what the results
/// must say of the trials set aside.
type Ran = (Vec<TrialRecord>, BTreeMap<Engine, u32>, Vec<String>);

/// Runs the trials, writing the records after each; stops early on an interrupt. With
/// `--trials auto`, each engine gets an equal share of the budget and adds pairs after the
/// planned ones until its verdict is decided (`judge::sequential`). Returns the records
/// and, for `--trials auto`, the looks planned per engine.
fn run_trials(plan: &Plan, out: &Path) -> Result<Ran> {
    let mut runner = Runner::start(plan, out, |trials, set_aside| {
        write::trials(out, trials, set_aside).context(write::Stage("results"))
    })?;
    let mut looks = BTreeMap::new();
    match plan.config.schedule {
        Schedule::Fixed { .. } | Schedule::Sweep { .. } => {
            for batch in plan.trials.chunks(plan.parallel_trials()) {
                if !runner.run_batch(batch.to_vec())? {
                    break;
                }
            }
        }
        Schedule::Sequential { budget } => {
            let share = budget / plan.engines.len() as u32;
            for &engine in &plan.engines {
                if let Some(k) = adaptive(&mut runner, plan, engine, share)? {
                    looks.insert(engine, k);
                }
                if interrupted() {
                    break;
                }
            }
        }
    }
    let (trials, set_aside) = runner.finish();
    Ok((trials, looks, set_aside))
}

/// Adds pairs of `engine` until decided, out of looks, or out of `budget`; returns the
/// looks planned (`None` if the budget ended before the first look).
///
/// A look stops the engine only when its verdicts would stand in the final judgement with
/// every engine: it is judged alone at its group-sequential look of K, by Bonferroni
/// over the final Holm family's size (every gated metric of every engine), which bounds
/// the final Holm adjustment (Holm <= Bonferroni). It stops when no gated metric is
/// INCONCLUSIVE, or one is worse (the run fails whatever more pairs say).
fn adaptive(
    runner: &mut Runner,
    plan: &Plan,
    engine: Engine,
    budget: Duration,
) -> Result<Option<u32>> {
    let started = Instant::now();
    let mut seq = Sequential::new(budget);
    let gated = plan.config.gates.union(plan.config.gates_if_measured);
    let family = plan.engines.len() * gated.iter().count();
    // Pairs handed to the runner: the plan's pairs past them will not run.
    let mut handed = 0;
    for rep in 1..=MAX_TRIALS {
        if !seq.another_pair_fits(started.elapsed(), rep - 1) {
            tracing::info!(
                "{engine}: stopping after {} pairs: the time budget is spent",
                rep - 1
            );
            break;
        }
        let pair = plan.pair(engine, rep);
        // The plan holds the first pairs; the rest are counted once they are known.
        if !plan
            .trials
            .iter()
            .any(|t| t.engine == engine && t.repetition == rep)
        {
            runner.expect_more(pair.len());
        }
        handed = rep;
        // A duet's pair runs at once; otherwise its trials one after the other.
        let batches = match plan.duet_halves {
            Some(_) => vec![pair],
            None => pair.into_iter().map(|t| vec![t]).collect(),
        };
        for batch in batches {
            if !runner.run_batch(batch)? {
                return Ok(seq.looks_planned());
            }
        }
        if runner.failed(engine) {
            break;
        }
        let Some(k) = seq.look(started.elapsed(), rep) else {
            continue;
        };
        let judged = look(&runner.trials, plan, engine, k, family);
        let worst = judged
            .iter()
            .max_by_key(|j| j.verdict)
            .expect("TPS is always judged");
        // The reason names the look (of at most K) when K > 1.
        tracing::info!(
            "{engine} after {rep} pairs: {}: {}",
            worst.verdict,
            worst.reason
        );
        if worst.verdict != Verdict::Inconclusive {
            break;
        }
    }
    runner.expect_fewer(
        plan.trials
            .iter()
            .filter(|t| t.engine == engine && t.repetition > handed)
            .count(),
    );
    Ok(seq.looks_planned())
}

/// The gated verdicts on `engine` so far, as a look of `looks` planned, judged as members
/// of a family of `family` gated comparisons.
fn look(
    trials: &[TrialRecord],
    plan: &Plan,
    engine: Engine,
    looks: u32,
    family: usize,
) -> Vec<Judgement> {
    let looks = BTreeMap::from([(engine, looks)]);
    let samples = Sample::of_trials(trials);
    let criteria = criteria(plan, 1);
    let mut judged = Judge {
        criteria,
        interrupted: false,
        looks: &looks,
        family: Some(family),
        prior: plan.noise_prior.as_ref(),
    }
    .verdicts(&samples, &[engine]);
    judged.retain(|j| j.gating);
    judged
}
