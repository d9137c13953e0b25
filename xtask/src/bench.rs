//! `cargo xtask bench`: options -> plan -> run -> judge -> export, top to bottom.
//!
//! The only place that wires the stages together and writes the results directory:
//! `meta.json` (written first, so even a crashed run says what it was), `trials.json` and
//! `results.tsv` (rewritten after every trial), then `summary.json`, `junit.xml`.

use std::{
    collections::BTreeMap,
    io::{IsTerminal as _, Write as _},
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, Instant, SystemTime},
};

use anyhow::{Context, Result};
use serde::Serialize;
use xshell::Shell;

use crate::{
    baseline::{self, Baseline},
    build,
    calibrate::Calibration,
    config::{Arm, BenchConfig, Engine, UsageError, Workload},
    execute::{run_trial, Outcome, TrialContext, TrialRecord},
    fdbtree::{self, BuildConfig, FdbTree},
    flags::{BenchArgs, CalibrateArgs, SourceArgs},
    host::Host,
    judge::{judge_looks, Criteria, Verdict},
    plan::{ArmPlan, Plan, PlannedTrial, Preflight},
    preflight::{self, Capacity, Footprint},
    report,
    sequential::Sequential,
    slo, supervise, workdir,
};

/// Runs the gate; returns the exit status (0, 1 or 2). Errors before the first trial
/// (bad input, missing binaries) are returned as errors.
pub fn run(sh: &Shell, args: &BenchArgs) -> Result<i32> {
    let junit = args.run.junit.clone();
    // Before hours of building and running, not after.
    if let Some(j) = &junit {
        check_writable_file(j)?;
    }
    let result = (|| {
        let mut config = BenchConfig::try_from(args)?;
        // Everything cheap to check is checked before a build that may take hours.
        let prepared = prepare(&mut config)?;
        let baseline_needed = args.baseline_build.is_none() && args.against_recorded.is_none();
        if baseline_needed || args.experiment_build.is_none() {
            let built = build_arms(
                sh,
                &args.source,
                baseline_needed,
                args.experiment_build.is_none(),
                true,
            )?;
            for (arm, p) in built {
                config.arm_mut(arm).build_dir = p.build_dir.clone();
                config.provenance.push(p);
            }
        }
        run_config(sh, config, prepared)
    })();
    match result {
        Ok(done) => Ok(done.map_or(0, |done| done.exit_code)),
        Err(e) => {
            // A CI job reads the JUnit file: a run that could not start (bad flags, a
            // build that failed or timed out) is an error there too, not a missing file.
            if let Some(path) = junit {
                let verdict = if e.downcast_ref::<build::BuildTimeout>().is_some() {
                    Verdict::Timeout
                } else {
                    Verdict::Error
                };
                let _ = write(
                    &path,
                    &report::junit_setup_error(verdict, &format!("{e:#}")),
                );
            }
            Err(e)
        }
    }
}

/// Builds the arms that have no tree from `--fdb-src` (`build` module), baseline at
/// `--baseline` (default: merge base with upstream main), experiment at `--experiment`
/// (default: the working tree).
fn build_arms(
    sh: &Shell,
    args: &SourceArgs,
    baseline: bool,
    experiment: bool,
    for_bench: bool,
) -> Result<Vec<(Arm, build::Provenance)>> {
    if args.build_jobs == Some(0) {
        return Err(UsageError("--build-jobs must be at least 1".into()).into());
    }
    if args.timeout_build == 0 || args.timeout_build > crate::config::MAX_SECONDS {
        return Err(UsageError(format!(
            "--timeout-build must be at least 1 second and at most {} (one week)",
            crate::config::MAX_SECONDS
        ))
        .into());
    }
    let src = fdb_src(args, for_bench)?;
    build::check_tools()?;
    let settings = build::BuildSettings {
        cmake_args: args.cmake_args.clone(),
        jobs: args
            .build_jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        timeout_s: args.timeout_build,
    };
    let cache = target_dir()?.join("perfgate").join("fdb");
    let mut built = Vec::new();
    for (arm, wanted) in [(Arm::Baseline, baseline), (Arm::Experiment, experiment)] {
        if !wanted {
            continue;
        }
        let source = match (arm, &args.baseline, &args.experiment) {
            (Arm::Baseline, Some(rev), _) | (Arm::Experiment, _, Some(rev)) => {
                build::Source::Revision(rev.clone())
            }
            (Arm::Baseline, None, _) => build::Source::Revision(build::default_baseline(sh, &src)?),
            (Arm::Experiment, _, None) => build::Source::WorkingTree,
        };
        eprintln!(
            "building the {arm} arm ({source}) from {} ...",
            src.display()
        );
        let mut p = build::build(sh, &src, &source, &settings, &cache)
            .with_context(|| format!("cannot build the {arm} arm from {}", src.display()))?;
        p.arm = arm.to_string();
        eprintln!(
            "{arm}: {} ({}), {}",
            p.build_dir.display(),
            &p.commit[..p.commit.len().min(12)],
            if p.cache_hit && p.build_s > 0.0 {
                format!("cached (built in {:.0} s by an earlier run)", p.build_s)
            } else if p.cache_hit {
                "cached".to_string()
            } else {
                format!("built in {:.0} s", p.build_s)
            }
        );
        built.push((arm, p));
    }
    Ok(built)
}

/// `--fdb-src`/`FDB_SRC` (`.cargo/config.toml` sets `../foundationdb`), which must be a
/// git checkout; the error says where it looked and the ways to point at one.
/// `bench` also takes prebuilt trees (`for_bench`); `build` does not.
fn fdb_src(args: &SourceArgs, for_bench: bool) -> Result<PathBuf> {
    let src = args
        .fdb_src
        .clone()
        .unwrap_or_else(|| PathBuf::from("../foundationdb"));
    if src.join(".git").exists() {
        return Ok(std::fs::canonicalize(&src).unwrap_or(src));
    }
    // `.cargo/config.toml` sets FDB_SRC to ../foundationdb beside this repository.
    let from = match &args.fdb_src {
        None => "the default",
        Some(p) if p.ends_with("foundationdb") => {
            "--fdb-src/FDB_SRC; `cargo xtask` sets FDB_SRC to ../foundationdb beside this \
             repository (.cargo/config.toml) unless you do"
        }
        Some(_) => "--fdb-src/FDB_SRC",
    };
    let what = if src.is_dir() {
        "is not a git checkout (no .git)"
    } else {
        "does not exist"
    };
    Err(UsageError(format!(
        "no FDB checkout: {} {what} (from {from}); clone one there (git clone \
         https://github.com/apple/foundationdb), give --fdb-src PATH or set FDB_SRC{}",
        src.display(),
        if for_bench {
            ", or give prebuilt trees with --baseline-build and --experiment-build"
        } else {
            ""
        }
    ))
    .into())
}

/// `cargo xtask build`: what `bench` would build, ahead of time.
pub fn build_only(sh: &Shell, args: &SourceArgs) -> Result<i32> {
    for (arm, p) in build_arms(sh, args, true, true, false)? {
        let _ = writeln!(std::io::stdout(), "{arm}: {}", p.build_dir.display());
    }
    Ok(0)
}

fn target_dir() -> Result<PathBuf> {
    let meta = cargo_metadata::MetadataCommand::new()
        .no_deps()
        .exec()
        .context("cannot find the cargo target dir (cargo metadata)")?;
    Ok(meta.target_directory.into_std_path_buf())
}

/// `cargo xtask calibrate`: an A/A run of one build, then the host's noise figures.
/// Exit status 0 when every trial was measured, else 2.
pub fn calibrate(sh: &Shell, args: &CalibrateArgs) -> Result<i32> {
    let mut config = BenchConfig::new(&args.build, &args.build, true, &args.run)?;
    if let Some(j) = &config.junit {
        check_writable_file(j)?;
    }
    let prepared = prepare(&mut config)?;
    let Some(done) = run_config(sh, config, prepared)? else {
        return Ok(0);
    };
    let cal = Calibration::new(
        &done.trials,
        &done.plan.config.engines,
        done.plan.config.max_regression_pct,
    );
    write(&done.out.join("calibration.json"), &json(&cal))?;
    let _ = writeln!(std::io::stdout(), "\n{}", cal.render());
    let all_measured = done.trials.iter().all(|t| t.outcome == Outcome::Measured);
    Ok(if all_measured && !done.interrupted {
        0
    } else {
        2
    })
}

/// What a finished (or interrupted) run left.
struct Finished {
    plan: Plan,
    out: PathBuf,
    trials: Vec<TrialRecord>,
    interrupted: bool,
    exit_code: i32,
}

/// What a run resolves from its flags before anything slow starts (a build, a trial).
struct Prepared {
    workdir: workdir::Workdir,
    /// `--against-recorded`: the record and the warnings of comparing with it.
    recorded: Option<(baseline::Baseline, Vec<String>)>,
    /// That a trial fits on the work dir.
    preflight: Preflight,
}

/// Checks and resolves the flags that need no build tree: the recorded baseline (which
/// also fixes the engine), the SLO floors, that `--out` is free, the work dir (it may create
/// the directory) and that a trial fits on it. Errors are the user's to fix, before hours of building.
fn prepare(config: &mut BenchConfig) -> Result<Prepared> {
    let recorded = match &config.against_recorded {
        Some(name) => {
            let (_, b) = baseline::find(&baseline::dir(config.baselines_dir.as_deref())?, name)?;
            let warnings =
                b.check_compatible(&Host::read(), &config.workload, config.allow_host_mismatch)?;
            // A record is one engine's: that engine is what runs.
            config.engines = vec![b.engine];
            Some((b, warnings))
        }
        None => None,
    };
    let slo_file = baseline::dir(config.baselines_dir.as_deref())?.join("slo.json");
    let env = |var: &str| std::env::var(var).ok();
    (config.slo, config.slo_sources) = slo::resolve(
        config.slo_tps,
        &config.workload.profile,
        &config.engines,
        &env,
        &slo_file,
    )?;
    if let Some(out) = &config.out {
        check_results_dir(out, config.junit.as_deref())?;
    }
    let workdir = workdir::choose(config.workdir.as_deref())?;
    let preflight = preflight(
        &config.workload,
        &workdir,
        recorded.as_ref().map(|(b, _)| b),
    )?;
    Ok(Prepared {
        workdir,
        recorded,
        preflight,
    })
}

/// Plans, runs, judges and exports; `None` for `--dry-run`.
fn run_config(
    sh: &Shell,
    config: BenchConfig,
    Prepared {
        workdir,
        recorded,
        preflight,
    }: Prepared,
) -> Result<Option<Finished>> {
    let mut build_warnings = Vec::new();
    // calibrate runs one tree as both arms: then it is just "the build tree".
    let one_tree = config.baseline.build_dir == config.experiment.build_dir;
    let mut arm_plan = |arm: Arm| -> Result<ArmPlan> {
        let tree = FdbTree::open(&config.arm(arm).build_dir).with_context(|| {
            format!(
                "the {}build tree {} is not usable",
                if one_tree {
                    String::new()
                } else {
                    format!("{arm} ")
                },
                config.arm(arm).build_dir.display()
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
        })
    };
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
            let mut plan = Plan::new(config, workdir, None, experiment, false)?;
            plan.warnings.extend(warnings);
            plan.recorded = Some(b);
            plan
        }
        None => {
            let baseline = arm_plan(Arm::Baseline)?;
            if let (Some(a), Some(b)) = (&baseline.build_config, &experiment.build_config) {
                let differences = a.differences(b);
                if !differences.is_empty() {
                    build_warnings.push(format!(
                        "THE ARMS WERE CONFIGURED DIFFERENTLY (CMakeCache.txt, baseline vs \
                         experiment): {}; the TPS change includes their effect, not only the \
                         code's",
                        differences.join("; ")
                    ));
                }
            }
            let same = fdbtree::same_binaries(&baseline.tree, &experiment.tree)?;
            Plan::new(config, workdir, Some(baseline), experiment, same)?
        }
    };
    plan.warnings.extend(build_warnings);
    plan.warnings.extend(plan.config.procs_scaled.clone());
    plan.preflight = Some(preflight);
    if plan.config.dry_run {
        let _ = write!(std::io::stdout(), "{}", plan.render());
        return Ok(None);
    }
    if supervise::interrupted() {
        anyhow::bail!("interrupted by a signal before the first trial; nothing was run");
    }
    let out = results_dir(plan.config.out.as_deref(), plan.config.junit.as_deref())?;
    init_logging(&out, plan.config.quiet)?;
    tracing::info!("results: {}", out.display());
    // The plan's warnings go out once, at warn level (shown even with --quiet).
    for line in plan.render().lines() {
        if !line.starts_with("WARNING: ") {
            tracing::info!("{line}");
        }
    }
    for w in &plan.warnings {
        tracing::warn!("{w}");
    }
    write(&out.join("meta.json"), &json(&Meta::new(&plan)))?;
    // The build logs of arms built from source, beside the run's other logs.
    for p in &plan.config.provenance {
        let _ = std::fs::copy(&p.log, out.join(format!("build-{}.log", p.arm)));
    }

    let TrialsRun { trials, looks } = run_trials(&plan, &out)?;
    let interrupted = supervise::interrupted();
    // With --trials auto the planned count is a minimum the budget may cut short.
    let planned = if plan.config.time_budget.is_some() {
        1
    } else {
        plan.config.trials
    };
    let mut criteria = criteria(&plan.config, planned);
    // Against a record, its trials are the baseline arm: unpaired.
    let mut judged = plan
        .recorded
        .as_ref()
        .map(Baseline::as_trials)
        .unwrap_or_default();
    criteria.unpaired = plan.recorded.is_some();
    judged.extend(trials.iter().cloned());
    let judgements = judge_looks(&judged, &plan.config.engines, criteria, interrupted, &looks);
    export(
        &out,
        &judgements,
        interrupted,
        &plan.warnings,
        plan.config.junit.as_deref(),
        plan.config.json,
    )?;
    write(
        &out.join("report.html"),
        &crate::html::render(&plan, &trials, &judgements, &plan.warnings),
    )?;
    let exit_code = if interrupted {
        2
    } else {
        crate::judge::exit_code(&judgements)
    };
    Ok(Some(Finished {
        plan,
        out,
        trials,
        interrupted,
        exit_code,
    }))
}

/// The trials that ran, and how many looks each engine's verdict is one of.
struct TrialsRun {
    trials: Vec<TrialRecord>,
    /// `--trials auto`: looks planned per engine (none: one look, the end).
    looks: BTreeMap<Engine, u32>,
}

/// Refuses a tree whose `CMakeCache.txt` shows a build whose numbers would be invalid
/// (not Release, no mako, instrumented), unless `allow` (`--allow-non-release`: then each
/// problem becomes a warning).
fn check_build_config(
    tree: &FdbTree,
    allow: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<BuildConfig>> {
    let (config, problems) = match BuildConfig::read(&tree.root) {
        Ok(c) => {
            let p = c.problems();
            (Some(c), p)
        }
        Err(e) => (
            None,
            vec![format!(
                "{e:#}: cannot check it is a Release build with -DBUILD_MAKO=ON"
            )],
        ),
    };
    if problems.is_empty() {
        return Ok(config);
    }
    let what = format!(
        "build tree {}: {}",
        tree.root.display(),
        problems.join("; ")
    );
    if !allow {
        return Err(
            UsageError(format!("{what}; pass --allow-non-release to run it anyway")).into(),
        );
    }
    warnings.push(format!("NOT A RELEASE BUILD (--allow-non-release): {what}"));
    Ok(config)
}

/// Checks that a trial fits on the work dir (`preflight`), before anything starts (a build
/// included): the footprint needs only the workload, the work dir and, for the expected TPS,
/// the recorded baseline's best trial.
fn preflight(
    workload: &Workload,
    workdir: &workdir::Workdir,
    recorded: Option<&Baseline>,
) -> Result<Preflight> {
    let expected_tps = recorded
        .and_then(|b| b.trials.iter().map(|t| t.tps).reduce(f64::max))
        .map_or(preflight::DEFAULT_EXPECTED_TPS, |best| best * 1.2);
    let footprint = Footprint::new(workload, expected_tps);
    let cgroup = if workdir.tmpfs {
        // tmpfs pages are charged to the memory cgroup. PERFGATE_CGROUP_ROOT points the
        // check elsewhere than /sys/fs/cgroup (tests simulate limits with it).
        let root = std::env::var_os("PERFGATE_CGROUP_ROOT")
            .map_or_else(|| PathBuf::from("/sys/fs/cgroup"), PathBuf::from);
        preflight::cgroup_headroom(&root)
    } else {
        None
    };
    let capacity = Capacity {
        free_bytes: workdir.free_bytes,
        cgroup_headroom_bytes: cgroup.as_ref().map(|c| c.0),
        cgroup_source: cgroup.map(|c| c.1),
    };
    preflight::check(&footprint, &capacity, workload).map_err(UsageError)?;
    Ok(Preflight {
        footprint,
        capacity,
    })
}

/// Writes `summary.json` and `junit.xml` (and the `--junit` copy) into `out` and prints
/// the table: the end of `bench`, `calibrate` and `compare`.
pub fn export(
    out: &Path,
    judgements: &[crate::judge::Judgement],
    interrupted: bool,
    warnings: &[String],
    junit_copy: Option<&Path>,
    json_to_stdout: bool,
) -> Result<()> {
    let table = report::table(judgements, warnings);
    let junit = report::junit(judgements, &table);
    let summary = report::summary_json(judgements, interrupted, warnings);
    write(&out.join("summary.json"), &summary)?;
    write(&out.join("junit.xml"), &junit)?;
    if let Some(extra) = junit_copy {
        write(extra, &junit)?;
    }
    // A closed stdout (`| head`) must not turn a verdict into a crash.
    let _ = if json_to_stdout {
        std::io::stdout().write_all(summary.as_bytes())
    } else {
        writeln!(std::io::stdout(), "\n{table}\nresults: {}", out.display())
    };
    Ok(())
}

/// Runs the trials and saves the records after each; stops early on an interrupt. With
/// `--trials auto`, each engine gets an equal share of the budget and adds pairs after the
/// planned ones until its verdict is decided (`sequential`).
fn run_trials(plan: &Plan, out: &Path) -> Result<TrialsRun> {
    for line in supervise::clean_stale_runs(&plan.workdir.path) {
        tracing::warn!("{line}");
    }
    let run_dir = supervise::RunDir::create(&plan.workdir.path)?;
    let run_workdir = run_dir.path.clone();
    // Ends what the trials started if this gate dies without tearing down (SIGKILL); it
    // owns the run dir, which goes first when this function returns.
    let _reaper = supervise::Reaper::start(run_dir, &out.join("run.log"))?;
    let mut runner = Runner {
        plan,
        out,
        ctx: TrialContext {
            workload: &plan.config.workload,
            bounds: &plan.config.bounds,
            run_workdir: &run_workdir,
            results_dir: out,
            require_cpu_bound: plan.config.require_cpu_bound,
            progress: !plan.config.quiet,
        },
        trials: Vec::new(),
    };
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
            let share = budget / plan.config.engines.len() as u32;
            for &engine in &plan.config.engines {
                if let Some(k) = runner.adaptive(engine, share)? {
                    looks.insert(engine, k);
                }
                if supervise::interrupted() {
                    break;
                }
            }
        }
    }
    Ok(TrialsRun {
        trials: runner.trials,
        looks,
    })
}

struct Runner<'a> {
    plan: &'a Plan,
    out: &'a Path,
    ctx: TrialContext<'a>,
    trials: Vec<TrialRecord>,
}

impl Runner<'_> {
    /// Runs one trial (unless its engine already failed) and saves every record so far.
    /// Returns false when the run must stop (interrupt).
    fn run(&mut self, mut planned: PlannedTrial) -> Result<bool> {
        // One failed trial already makes the engine's verdict TIMEOUT or ERROR: its
        // remaining trials would cost time and change nothing.
        if self.failed(planned.engine) {
            tracing::warn!(
                "{} trial skipped: an earlier {0} trial failed",
                planned.engine
            );
            return Ok(true);
        }
        planned.index = self.trials.len() + 1;
        tracing::info!(
            "trial {}: {} {} #{}",
            planned.index,
            planned.engine,
            planned.arm,
            planned.repetition
        );
        let record = run_trial(&self.ctx, &self.plan.arm(planned.arm).tree, &planned);
        match (&record.outcome, &record.report) {
            (Outcome::Measured, Some(r)) => tracing::info!(
                "trial {}: {:.1} TPS, storage server {} cores",
                record.index,
                r.tps,
                record
                    .storage_cpu_cores
                    .map(|c| format!("{c:.2}"))
                    .unwrap_or_else(|| "? (not measured: the run ended before its warmup)".into())
            ),
            _ => tracing::error!(
                "trial {}: {:?}: {}; artifacts in {}",
                record.index,
                record.outcome,
                record.error.as_deref().unwrap_or(""),
                self.out.join(&record.artifacts).display()
            ),
        }
        let stop = record.outcome == Outcome::Interrupted || supervise::interrupted();
        self.trials.push(record);
        write(&self.out.join("trials.json"), &json(&self.trials))?;
        write(
            &self.out.join("results.tsv"),
            &report::results_tsv(&self.trials),
        )?;
        if stop {
            tracing::warn!("interrupted: stopping after trial {}", self.trials.len());
        }
        Ok(!stop)
    }

    fn failed(&self, engine: Engine) -> bool {
        self.trials
            .iter()
            .any(|t| t.engine == engine && t.outcome != Outcome::Measured)
    }

    /// Adds pairs of `engine` until decided, out of looks, or out of `budget`; returns
    /// the looks planned (`None` if the budget ended before the first look).
    ///
    /// A look stops the engine only when its verdict would stand in the final judgement
    /// with every engine: it is judged alone with its p-values multiplied by K times the
    /// number of engines, which bounds the final Holm adjustment (Holm <= Bonferroni).
    fn adaptive(&mut self, engine: Engine, budget: Duration) -> Result<Option<u32>> {
        let started = Instant::now();
        let mut seq = Sequential::new(budget);
        let engines = self.plan.config.engines.len() as u32;
        for rep in 1..=crate::config::MAX_TRIALS {
            if !seq.another_pair_fits(started.elapsed(), rep - 1) {
                tracing::info!(
                    "{engine}: stopping after {} pairs: the time budget is spent",
                    rep - 1
                );
                break;
            }
            for planned in self.plan.pair(engine, rep) {
                if !self.run(planned)? {
                    return Ok(seq.looks_planned());
                }
            }
            if self.failed(engine) {
                break;
            }
            let Some(k) = seq.look(started.elapsed(), rep) else {
                continue;
            };
            let looks = BTreeMap::from([(engine, k * engines)]);
            let j = judge_looks(&self.trials, &[engine], self.criteria(1), false, &looks).remove(0);
            tracing::info!(
                "{engine} after {rep} pairs (look {} of at most {k}): {}: {}",
                rep + 1 - crate::sequential::MIN_PAIRS,
                j.verdict,
                j.reason
            );
            if j.verdict != Verdict::Inconclusive {
                break;
            }
        }
        Ok(seq.looks_planned())
    }

    fn criteria(&self, trials: u32) -> Criteria {
        criteria(&self.plan.config, trials)
    }
}

fn criteria(config: &BenchConfig, trials: u32) -> Criteria {
    Criteria {
        trials,
        max_regression_pct: config.max_regression_pct,
        slo_tps: config.slo_tps,
        slo: config.slo,
        strict: config.strict,
        unpaired: false,
        gate_latency: config.gate_latency,
    }
}

/// `meta.json`: what was run, where, with what.
#[derive(Serialize)]
struct Meta<'a> {
    /// perfgate version.
    gate_version: &'static str,
    /// Seconds since the Unix epoch when the run started.
    started_at_unix_s: u64,
    started_at: String,
    host: Host,
    plan: &'a Plan,
}

impl<'a> Meta<'a> {
    fn new(plan: &'a Plan) -> Meta<'a> {
        let now = SystemTime::now();
        Meta {
            gate_version: env!("CARGO_PKG_VERSION"),
            started_at_unix_s: now
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            started_at: humantime::format_rfc3339_seconds(now).to_string(),
            host: Host::read(),
            plan,
        }
    }
}

/// The results dir: `--out`, else `<cargo target dir>/perfgate/<UTC time>-<pid>`. It must
/// not hold an earlier run's results.
fn results_dir(explicit: Option<&Path>, junit: Option<&Path>) -> Result<PathBuf> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => {
            let meta = cargo_metadata::MetadataCommand::new()
                .no_deps()
                .exec()
                .context("cannot find the cargo target dir (cargo metadata); pass --out DIR")?;
            let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
                .to_string()
                .replace(':', "");
            meta.target_directory
                .as_std_path()
                .join("perfgate")
                .join(format!("{stamp}-{}", std::process::id()))
        }
    };
    check_results_dir(&dir, junit)?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create results dir {}", dir.display()))?;
    // Absolute: mako and fdbserver run in other directories and get paths inside it.
    std::fs::canonicalize(&dir).with_context(|| format!("cannot resolve {}", dir.display()))
}

/// A results dir must be missing or empty: results are never mixed with an earlier run's.
/// The way to the `--junit` file is not counted: `--junit <out>/ci/junit.xml` creates its
/// directory first, and a run that failed before its first trial leaves only that file.
fn check_results_dir(dir: &Path, junit: Option<&Path>) -> Result<()> {
    if !dir.exists() {
        // It will be created: its nearest existing ancestor must be a directory.
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Some(a) = abs.ancestors().skip(1).find(|a| a.exists()) {
            if !a.is_dir() {
                return Err(UsageError(format!(
                    "results dir {}: {} is not a directory; choose another --out",
                    dir.display(),
                    a.display()
                ))
                .into());
            }
        }
        return Ok(());
    }
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let junit = junit.map(abs);
    let occupied = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().any(|e| {
            !junit
                .as_ref()
                .is_some_and(|j| j.starts_with(abs(&e.path())))
        }),
        Err(_) => true,
    };
    if occupied {
        return Err(UsageError(format!(
            "results dir {} is not an empty directory; choose another --out (results are \
             never mixed with an earlier run's)",
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// Fails early, before hours of trials, when `path` could not be written at the end.
pub fn check_writable_file(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // `--junit <out>/junit.xml` is the natural spelling: its directory may not exist yet.
    let created = std::fs::create_dir_all(parent);
    let ok = created.is_ok()
        && !path.is_dir()
        && nix::unistd::access(parent, nix::unistd::AccessFlags::W_OK).is_ok();
    if !ok {
        let why = match created {
            Err(e) => format!("cannot create {}: {e}", parent.display()),
            Ok(()) if path.is_dir() => "the path is a directory".to_string(),
            Ok(()) => format!("{} is not writable", parent.display()),
        };
        return Err(UsageError(format!(
            "--junit {}: {why}; give a file path in a writable directory",
            path.display()
        ))
        .into());
    }
    Ok(())
}

/// Logs go to stderr (short) and to `<out>/run.log` (with timestamps).
fn init_logging(out: &Path, quiet: bool) -> Result<()> {
    use tracing_subscriber::{
        filter::LevelFilter, fmt, layer::SubscriberExt, util::SubscriberInitExt, Layer,
    };
    let file = std::fs::File::create(out.join("run.log")).context("cannot create run.log")?;
    tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .without_time()
                .with_target(false)
                .with_filter(if quiet {
                    LevelFilter::WARN
                } else {
                    LevelFilter::INFO
                }),
        )
        .with(
            fmt::layer()
                .with_writer(Mutex::new(file))
                .with_ansi(false)
                .with_target(false),
        )
        .try_init()
        .context("logging was already set up")
}

pub fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).expect("plain data serializes") + "\n"
}

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees
/// half a file.
pub fn write(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}
