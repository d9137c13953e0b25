//! `cargo xtask bench`: flags -> config -> build -> plan -> run -> judge -> report, top to
//! bottom. Everything cheap to check is checked before a build that may take hours.

use std::{
    collections::BTreeMap,
    io::Write as _,
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use fdb::Engine;
use xshell::Shell;

use crate::{
    build::{
        self,
        tree::{same_binaries, FdbTree},
        Provenance,
    },
    cli::BenchArgs,
    config::{slo, source::SourceConfig, Arm, BenchConfig, MAX_TRIALS, MIN_PAIRS},
    judge::{
        judge_looks, planned_trials, samples::Sample, sequential::Sequential, Criteria, Judgement,
        Verdict,
    },
    plan::{
        check_build_config,
        preflight::{self, Preflight},
        workdir::{self, Workdir},
        ArmPlan, Plan,
    },
    process::interrupted,
    report::write,
    results::{
        baseline::{self, Baseline},
        fs::{check_results_dir, check_writable_file, results_dir},
        host::Host,
        trial::TrialRecord,
    },
    run::{init_logging, Runner},
};

/// Runs the gate; returns the exit status (0, 1 or 2). Errors before the first trial
/// (bad input, missing binaries, a failed build) are returned as errors, and written to
/// the `--junit` file as one ERROR (or TIMEOUT) test case.
pub fn run(sh: &Shell, args: &BenchArgs) -> Result<i32> {
    let junit = args.run.junit.clone();
    // Before hours of building and running, not after.
    if let Some(j) = &junit {
        check_writable_file(j)?;
    }
    let result = (|| {
        let config = BenchConfig::try_from(args)?;
        let prepared = prepare(&config)?;
        let mut wanted = Vec::new();
        if config.baseline.build_dir.is_none() && config.against_recorded.is_none() {
            wanted.push(Arm::Baseline);
        }
        if config.experiment.build_dir.is_none() {
            wanted.push(Arm::Experiment);
        }
        let built = if wanted.is_empty() {
            Vec::new()
        } else {
            let source = SourceConfig::new(&args.source, true)?;
            build::build_arms(sh, &source, &wanted)?
        };
        let Some(plan) = plan(sh, config, prepared, built)? else {
            return Ok(0);
        };
        Ok(execute(plan)?.exit_code)
    })();
    if let (Err(e), Some(path)) = (&result, junit) {
        write::setup_error(&path, e);
    }
    result
}

/// What a finished (or interrupted) run left.
pub struct Finished {
    pub plan: Plan,
    pub out: PathBuf,
    pub trials: Vec<TrialRecord>,
    pub interrupted: bool,
    pub exit_code: i32,
}

/// What a run resolves from its config before anything slow starts (a build, a trial).
pub struct Prepared {
    /// The engines that run: the config's, or the recorded baseline's.
    engines: Vec<Engine>,
    /// The effective TPS floors and where each came from.
    slo: (slo::SloTps, Vec<String>),
    workdir: Workdir,
    /// `--against-recorded`: the record and the warnings of comparing with it.
    recorded: Option<(Baseline, Vec<String>)>,
    /// That a trial fits on the work dir.
    preflight: Preflight,
}

/// Checks and resolves what needs no build tree: the recorded baseline (which also fixes
/// the engine), the SLO floors, that `--out` is free, the work dir (it may create the
/// directory) and that a trial fits on it. Errors are the user's to fix, before hours of
/// building.
pub fn prepare(config: &BenchConfig) -> Result<Prepared> {
    let baselines = baseline::dir(config.baselines_dir.as_deref())?;
    let recorded = match &config.against_recorded {
        Some(name) => {
            let (_, b) = baseline::find(&baselines, name)?;
            let warnings =
                b.check_compatible(&Host::read(), &config.workload, config.allow_host_mismatch)?;
            Some((b, warnings))
        }
        None => None,
    };
    // A record is one engine's: that engine is what runs.
    let engines = match &recorded {
        Some((b, _)) => vec![b.engine],
        None => config.engines.clone(),
    };
    let env = |var: &str| std::env::var(var).ok();
    let slo = slo::resolve(
        config.slo_tps,
        &config.workload.profile,
        &engines,
        &env,
        &baselines.join("slo.json"),
    )?;
    if let Some(out) = &config.out {
        check_results_dir(out, config.junit.as_deref())?;
    }
    let workdir = workdir::choose(config.workdir.as_deref())?;
    let best_recorded_tps = recorded
        .as_ref()
        .and_then(|(b, _)| b.trials.iter().map(|t| t.tps).reduce(f64::max));
    let preflight = preflight::fits(&config.workload, &workdir, best_recorded_tps)?;
    Ok(Prepared {
        engines,
        slo,
        workdir,
        recorded,
        preflight,
    })
}

/// The plan of a run: each arm's tree (given, or `built`) checked and read, the trials in
/// order. Prints it and returns `None` for `--dry-run`.
pub fn plan(
    sh: &Shell,
    config: BenchConfig,
    prepared: Prepared,
    built: Vec<(Arm, Provenance)>,
) -> Result<Option<Plan>> {
    let mut built: BTreeMap<Arm, Provenance> = built.into_iter().collect();
    let mut build_warnings = Vec::new();
    // calibrate runs one tree as both arms: then it is just "the build tree".
    let one_tree = config.baseline.build_dir.is_some()
        && config.baseline.build_dir == config.experiment.build_dir;
    let mut arm_plan = |arm: Arm| -> Result<ArmPlan> {
        let provenance = built.remove(&arm);
        let dir = match (&config.arm(arm).build_dir, &provenance) {
            (Some(d), _) => d.clone(),
            (None, Some(p)) => p.build_dir.clone(),
            (None, None) => unreachable!("an arm without a tree is built first"),
        };
        let tree = FdbTree::open(&dir).with_context(|| {
            format!(
                "the {}build tree {} is not usable",
                if one_tree {
                    String::new()
                } else {
                    format!("{arm} ")
                },
                dir.display()
            )
        })?;
        let version = tree.version(sh)?;
        let build_config =
            check_build_config(&tree, config.allow_non_release, &mut build_warnings)?;
        Ok(ArmPlan {
            arm,
            tree,
            version,
            build_config,
            provenance,
        })
    };
    let Prepared {
        engines,
        slo: (slo, slo_sources),
        workdir,
        recorded,
        preflight,
    } = prepared;
    let experiment = match arm_plan(Arm::Experiment) {
        Ok(e) => e,
        // Both trees wrong: say so at once, not one per attempt.
        Err(e) if recorded.is_none() && !one_tree => match arm_plan(Arm::Baseline) {
            Err(b) => return Err(e.context(format!("{b:#}\nand"))),
            Ok(_) => return Err(e),
        },
        Err(e) => return Err(e),
    };
    let mut plan = match recorded {
        Some((b, warnings)) => {
            let mut plan = Plan::new(config, engines, workdir, None, experiment, false)?;
            plan.warnings.extend(warnings);
            plan.recorded = Some(b);
            plan
        }
        None => {
            let baseline = arm_plan(Arm::Baseline)?;
            build_warnings.extend(arms_configured_differently(&baseline, &experiment));
            let same = same_binaries(&baseline.tree, &experiment.tree)?;
            Plan::new(config, engines, workdir, Some(baseline), experiment, same)?
        }
    };
    plan.warnings.extend(build_warnings);
    plan.warnings.extend(plan.config.procs_scaled.clone());
    plan.preflight = Some(preflight);
    (plan.slo, plan.slo_sources) = (slo, slo_sources);
    if plan.config.dry_run {
        let _ = write!(std::io::stdout(), "{}", plan.render());
        return Ok(None);
    }
    Ok(Some(plan))
}

/// The warning for arms whose `CMakeCache.txt` differ in what changes the binaries.
fn arms_configured_differently(baseline: &ArmPlan, experiment: &ArmPlan) -> Option<String> {
    let (a, b) = (
        baseline.build_config.as_ref()?,
        experiment.build_config.as_ref()?,
    );
    let differences = a.differences(b);
    (!differences.is_empty()).then(|| {
        format!(
            "THE ARMS WERE CONFIGURED DIFFERENTLY (CMakeCache.txt, baseline vs experiment): \
             {}; the TPS change includes their effect, not only the code's",
            differences.join("; ")
        )
    })
}

/// Runs the plan's trials, judges them and writes every result: the results dir is made
/// here, `meta.json` first.
pub fn execute(plan: Plan) -> Result<Finished> {
    if interrupted() {
        anyhow::bail!("interrupted by a signal before the first trial; nothing was run");
    }
    let out = results_dir(plan.config.out.as_deref(), plan.config.junit.as_deref())?;
    init_logging(&out, plan.config.quiet)?;
    tracing::info!("results: {}", out.display());
    for line in plan.render_body().lines() {
        tracing::info!("{line}");
    }
    // The plan's warnings go out once, at warn level (shown even with --quiet).
    for w in &plan.warnings {
        tracing::warn!("{w}");
    }
    write::meta(&out, &plan)?;
    let (trials, looks) = run_trials(&plan, &out)?;
    let interrupted = interrupted();
    let mut criteria = criteria(
        &plan,
        planned_trials(plan.config.trials, plan.config.time_budget.is_some()),
    );
    // Against a record, its trials are the baseline arm: unpaired.
    criteria.unpaired = plan.recorded.is_some();
    let mut samples = plan
        .recorded
        .as_ref()
        .map(Sample::of_recorded)
        .unwrap_or_default();
    samples.extend(Sample::of_trials(&trials));
    let judgements = judge_looks(&samples, &plan.engines, criteria, interrupted, &looks);
    write::verdicts(
        &out,
        &judgements,
        interrupted,
        &plan.warnings,
        plan.config.junit.as_deref(),
        plan.config.json,
    )?;
    write::html_report(&out, &plan, &trials, &judgements)?;
    let exit_code = crate::judge::exit_code(&judgements, interrupted);
    Ok(Finished {
        plan,
        out,
        trials,
        interrupted,
        exit_code,
    })
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
        unpaired: false,
        gate_latency: c.gate_latency,
    }
}

/// Runs the trials, writing the records after each; stops early on an interrupt. With
/// `--trials auto`, each engine gets an equal share of the budget and adds pairs after the
/// planned ones until its verdict is decided (`judge::sequential`). Returns the records
/// and, for `--trials auto`, the looks planned per engine.
fn run_trials(
    plan: &Plan,
    out: &std::path::Path,
) -> Result<(Vec<TrialRecord>, BTreeMap<Engine, u32>)> {
    let mut runner = Runner::start(plan, out, |trials| write::trials(out, trials))?;
    let mut looks = BTreeMap::new();
    match plan.config.time_budget {
        None => {
            for planned in &plan.trials {
                if !runner.run(planned.clone())? {
                    break;
                }
            }
        }
        Some(budget) => {
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
    Ok((runner.finish(), looks))
}

/// Adds pairs of `engine` until decided, out of looks, or out of `budget`; returns the
/// looks planned (`None` if the budget ended before the first look).
///
/// A look stops the engine only when its verdict would stand in the final judgement with
/// every engine: it is judged alone with its p-values multiplied by K times the number of
/// engines, which bounds the final Holm adjustment (Holm <= Bonferroni).
fn adaptive(
    runner: &mut Runner,
    plan: &Plan,
    engine: Engine,
    budget: Duration,
) -> Result<Option<u32>> {
    let started = Instant::now();
    let mut seq = Sequential::new(budget);
    let engines = plan.engines.len() as u32;
    for rep in 1..=MAX_TRIALS {
        if !seq.another_pair_fits(started.elapsed(), rep - 1) {
            tracing::info!(
                "{engine}: stopping after {} pairs: the time budget is spent",
                rep - 1
            );
            break;
        }
        for planned in plan.pair(engine, rep) {
            if !runner.run(planned)? {
                return Ok(seq.looks_planned());
            }
        }
        if runner.failed(engine) {
            break;
        }
        let Some(k) = seq.look(started.elapsed(), rep) else {
            continue;
        };
        let j = look(&runner.trials, plan, engine, k * engines);
        tracing::info!(
            "{engine} after {rep} pairs (look {} of at most {k}): {}: {}",
            rep + 1 - MIN_PAIRS,
            j.verdict,
            j.reason
        );
        if j.verdict != Verdict::Inconclusive {
            break;
        }
    }
    Ok(seq.looks_planned())
}

/// The verdict on `engine` so far, as one of `looks` looks.
fn look(trials: &[TrialRecord], plan: &Plan, engine: Engine, looks: u32) -> Judgement {
    let looks = BTreeMap::from([(engine, looks)]);
    let samples = Sample::of_trials(trials);
    judge_looks(&samples, &[engine], criteria(plan, 1), false, &looks).remove(0)
}
