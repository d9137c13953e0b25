//! `cargo xtask bench`: flags -> config -> build -> plan -> run -> judge -> report, top to
//! bottom. Everything cheap to check is checked before a build that may take hours.

use std::io::Write as _;

use anyhow::Result;

use super::pipeline::{execute, nothing_afterwards};
use crate::{
    build,
    cli::BenchArgs,
    config::{source::SourceConfig, Arm, BenchConfig},
    error::UsageError,
    plan::resolve::{plan, prepare, Prepared},
    report::write,
    results::fs::check_copies,
    run::cluster::{engine_of_existing, refuse_unreachable},
};

/// Runs the gate; returns the exit status (0, 1 or 2). Errors before the first trial
/// (bad input, missing binaries, a failed build) are returned as errors, and written to
/// the `--junit` file as one ERROR (or TIMEOUT) test case. The log lines are in colour
/// when `color`.
pub fn run(args: &BenchArgs, color: bool) -> Result<i32> {
    let copies = crate::config::copies_of(&args.run);
    // Before hours of building and running, not after.
    check_copies(&copies, args.run.out.as_deref())?;
    let result = (|| {
        let config = BenchConfig::try_from(args)?;
        let prepared = prepare(&config)?;
        // A cluster that is down is said in a second, before a build or a plan-time wait.
        if let Some(e) = config.cluster.existing() {
            refuse_unreachable(e)?;
        }
        check_given_trees(&config)?;
        let mut wanted = Vec::new();
        let no_tree = |arm| prepared.given_tree(&config, arm).is_none();
        if no_tree(Arm::Baseline) && config.against.baseline_arm() {
            wanted.push(Arm::Baseline);
        }
        if no_tree(Arm::Experiment) {
            wanted.push(Arm::Experiment);
        }
        refuse_unused_source_flags(args, &wanted)?;
        let built = if wanted.is_empty() {
            Vec::new()
        } else {
            build::need_git()?;
            // Before hours of building, not after.
            if !config.dry_run {
                crate::run::refuse_other_gates()?;
            }
            let mut source =
                SourceConfig::new(&args.source, &wanted, crate::results::fs::default_fdb_src())?;
            // Against a record, the control arm is the recorded build.
            if let Some(record) = prepared.record() {
                if source.baseline_rev.is_none() {
                    source.baseline_rev = Some(record.build.source_version.clone());
                }
            }
            // Resolved once for the checks before building (a working tree is snapshotted).
            let commits = build::commits(&source, &wanted)?;
            refuse_same_commit(&config, &prepared, &source, &commits)?;
            refuse_unfit_cmake_args(&config, &source)?;
            refuse_unknown_knobs(&config, &prepared, &source, &commits)?;
            build::build_arms(&source, &wanted)?
        };
        let mut plan = plan(config, prepared, built, &engine_of_existing)?;
        if let Some(dir) = plan.config.noise_from.clone() {
            let prior = super::noise::load(
                &dir,
                &plan,
                plan.config.noise_max_age_s,
                std::time::SystemTime::now(),
            )?;
            plan.noise_prior = Some(prior);
        }
        if plan.config.dry_run {
            // With --json, the plan as meta.json's "plan" would hold it, for scripts.
            let shown = if args.run.json {
                crate::process::json_printable(&crate::results::fs::json(&plan))
            } else {
                // The plan quotes the trees' CMakeCache.txt and a record.
                crate::process::printable(&plan.render())
            };
            let _ = write!(std::io::stdout(), "{shown}");
            return Ok(0);
        }
        Ok(execute(plan, color, nothing_afterwards())?.exit_code)
    })();
    if let Err(e) = &result {
        write::setup_error(copies, e);
    }
    result
}

/// Refuses a flag for building an arm from source (`--baseline REV`, `--experiment REV`,
/// and with no arm to build `--fdb-src`, `--cmake-arg`, `--build-jobs`) where no arm it is
/// for is built (`wanted`): the run would go on without it, unsaid. `FDB_SRC` in the
/// environment is not refused: it is there for every run.
fn refuse_unused_source_flags(args: &BenchArgs, wanted: &[Arm]) -> Result<(), UsageError> {
    let s = &args.source;
    for (arm, rev, flag) in [
        (Arm::Baseline, &s.baseline, "--baseline"),
        (Arm::Experiment, &s.experiment, "--experiment"),
    ] {
        if let (Some(rev), false) = (rev, wanted.contains(&arm)) {
            return Err(UsageError(format!(
                "{flag} {rev} is not used: the {arm} arm is not built from source in this \
                 run (it has a tree, from --{arm}-build or the record, or no {arm} arm runs); \
                 leave out one of the two"
            )));
        }
    }
    if !wanted.is_empty() {
        return Ok(());
    }
    let given = [
        (crate::config::source::fdb_src_typed(), "--fdb-src"),
        (!s.cmake_args.is_empty(), "--cmake-arg"),
        (s.build_jobs.is_some(), "--build-jobs"),
    ];
    match given.iter().find(|(g, _)| *g) {
        Some((_, flag)) => Err(UsageError(format!(
            "{flag} is not used: no arm is built from source in this run (each has its tree \
             given, or runs against a record); leave it out, or leave out an arm's --*-build \
             to build that arm"
        ))),
        None => Ok(()),
    }
}

/// Refuses, before hours of building, `--cmake-arg`s that make a tree the plan refuses
/// (a build type other than Release, instrumentation: `fdb::cmake::arg_problems`), unless
/// `--allow-non-release` (the built tree is then warned about like a given one).
fn refuse_unfit_cmake_args(config: &BenchConfig, source: &SourceConfig) -> Result<(), UsageError> {
    let problems = fdb::cmake::arg_problems(&source.cmake_args);
    if problems.is_empty() || config.allow_non_release {
        return Ok(());
    }
    Err(UsageError(format!(
        "the --cmake-arg values would build trees the gate refuses: {}; pass \
         --allow-non-release to build and run them anyway",
        problems.join("; ")
    )))
}

/// Refuses, before hours of building, a user knob that the source of the arm it is for
/// does not name anywhere (`build::knobs_unknown_at`): its fdbserver would refuse it at
/// the first trial.
fn refuse_unknown_knobs(
    config: &BenchConfig,
    prepared: &Prepared,
    source: &SourceConfig,
    commits: &[(Arm, String)],
) -> Result<()> {
    for (arm, commit) in commits {
        let names: Vec<&str> = prepared
            .arm_knobs(config, *arm)
            .iter()
            .map(|k| k.name.as_str())
            .collect();
        let unknown = build::knobs_unknown_at(&source.fdb_src, commit, &names)?;
        if !unknown.is_empty() {
            return Err(UsageError(format!(
                "the {arm} arm's source ({}) names no knob {}: its fdbserver would refuse \
                 {} at the first trial; check the spelling against flow/Knobs.cpp, \
                 fdbclient/ServerKnobs.cpp and fdbclient/ClientKnobs.cpp of that commit",
                &commit[..commit.len().min(12)],
                unknown.join(", "),
                if unknown.len() == 1 { "it" } else { "them" }
            ))
            .into());
        }
    }
    Ok(())
}

/// Refuses, before hours of building, two arms built from the same commit with the same
/// knobs (e.g. a fresh clone on main: the merge base with main and a clean working tree):
/// the plan would refuse them as an A/A run after the build.
fn refuse_same_commit(
    config: &BenchConfig,
    prepared: &Prepared,
    source: &SourceConfig,
    commits: &[(Arm, String)],
) -> Result<()> {
    if config.allow_same || commits.len() < 2 || !prepared.same_knobs(config) {
        return Ok(());
    }
    if commits[0].1 != commits[1].1 {
        return Ok(());
    }
    Err(UsageError(format!(
        "baseline ({}) and experiment ({}) are the same commit {} with the same knobs: this \
         would be an A/A run, not an A/B; commit or change what you want to measure, give \
         --baseline REV/--experiment REV or --baseline-knob/--experiment-knob, or pass \
         --allow-same to measure noise on purpose",
        source
            .baseline_rev
            .as_deref()
            .unwrap_or("the merge base of HEAD with upstream main"),
        source
            .experiment_rev
            .as_deref()
            .unwrap_or("the working tree, without uncommitted changes"),
        &commits[0].1[..commits[0].1.len().min(12)]
    ))
    .into())
}

/// A given tree that is no tree is said before the other arm's checkout or build, and both
/// arms' at once. Errors: a [`UsageError`] naming each wrong tree and its arm.
fn check_given_trees(config: &BenchConfig) -> Result<(), UsageError> {
    let mut wrong = Vec::new();
    for arm in [Arm::Baseline, Arm::Experiment] {
        let Some(dir) = &config.arm(arm).build_dir else {
            continue;
        };
        if let Err(e) = build::tree::FdbTree::check_root(dir) {
            wrong.push(format!("{}: {}", config.tree_label(arm), e.0));
        }
        if config.one_tree() {
            break;
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(UsageError(wrong.join("\nand "))),
    }
}
