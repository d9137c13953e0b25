//! `cargo xtask baseline record|list|show`: recorded baselines in `baselines/` (the file
//! format is `results::baseline`).

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    time::SystemTime,
};

use anyhow::{bail, Context, Result};

use crate::{
    cli::{ArmArg, BaselineCommand},
    config::Arm,
    error::UsageError,
    judge::knee,
    results::{
        baseline::{dir, find, Baseline, RecordedSweep, RecordedTrial, SCHEMA_VERSION},
        fs::{json, write},
        saved::{SavedArm, SavedPlan, SavedRun, SavedSummary},
        trial::{Outcome, TrialRecord},
    },
};

/// Records one baseline per engine from the `arm` trials of the run in `from`, into
/// `dir`; returns the files written and whether the run had a baseline arm (the other
/// arm, when `arm` is the experiment). `name` defaults to `<host class>-<profile>-<engine>`;
/// with several engines the engine is appended to a given name. An existing file is
/// refused unless `existing` says what to do with it.
fn record(
    from: &Path,
    dir: &Path,
    name: Option<&str>,
    arm: Arm,
    existing: Existing,
) -> Result<(Vec<PathBuf>, bool)> {
    if let Some(n) = name {
        check_name(n)?;
    }
    let run = SavedRun::read(from)?;
    check_finished(from, run.summary.as_ref())?;
    crate::files::create_dir_all("--baselines-dir", dir)?;
    // Every engine's record is made and placed before any is written: a run that cannot
    // be recorded whole leaves nothing behind.
    let mut placed = Vec::new();
    for &engine in run.meta.plan.engines() {
        let b = engine_record(from, &run, engine, arm, name)?;
        // Only a record `baseline list` and `--against-recorded` can read back: what the
        // reader refuses (a control character in a saved run's field) is refused here.
        Baseline::parse(&json(&b), &format!("{} (from {})", b.name, from.display()))
            .context("the run cannot be recorded")?;
        placed.push(place(dir, b, existing)?);
    }
    let mut written = Vec::new();
    for (path, b) in placed {
        write(&path, &json(&b))?;
        written.push(path);
    }
    Ok((written, run.meta.plan.baseline.is_some()))
}

/// The record of `engine`'s `arm` trials of `run` (from `from`), named as [`record`] says.
/// Errors: a sweep whose knee was not measured, fewer than 2 measured trials, a run
/// without that arm.
fn engine_record(
    from: &Path,
    run: &SavedRun,
    engine: fdb::Engine,
    arm: Arm,
    name: Option<&str>,
) -> Result<Baseline> {
    let (meta, plan, trials) = (&run.meta, &run.meta.plan, &run.trials);
    let recorded_arm = arm_of(plan, arm)?;
    // A sweep that stopped says why before its trial count does.
    let sweep = match plan.config.schedule().ladder() {
        Some(ladder) => Some(recorded_sweep(from, trials, engine, arm, ladder)?),
        None => None,
    };
    let measured: Vec<&TrialRecord> = trials
        .iter()
        .filter(|t| t.engine == engine && t.arm == arm && t.outcome == Outcome::Measured)
        .collect();
    if measured.len() < 2 {
        bail!(
            "the run has {} measured {arm} trials of {engine}; a baseline needs at least 2",
            measured.len()
        );
    }
    let cluster = cluster_class(&measured)?;
    let base = match name {
        Some(n) if plan.engines().len() == 1 => n.to_string(),
        Some(n) => format!("{n}-{engine}"),
        None => slug(&format!(
            "{}-{}-{engine}",
            meta.host.class(),
            plan.config.workload.profile
        )),
    };
    Ok(Baseline {
        schema_version: SCHEMA_VERSION,
        name: base,
        recorded_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        gate_version: env!("CARGO_PKG_VERSION").to_string(),
        gate_commit: Some(crate::version::COMMIT.to_string()),
        engine,
        workload: plan.config.workload.clone(),
        topology: plan.config.topology.clone(),
        cluster,
        sweep,
        knobs: measured[0].knobs.clone(),
        host_class: meta.host.class(),
        host: meta.host.clone(),
        workdir_tmpfs: plan.workdir.tmpfs,
        build: recorded_arm.version.clone(),
        build_config: recorded_arm.build_config.clone(),
        // Absolute: a record outlives the directory it was made in.
        from_results: std::path::absolute(from)
            .unwrap_or_else(|_| from.to_path_buf())
            .display()
            .to_string(),
        build_tree: recorded_arm
            .tree
            .as_ref()
            .map(|t| t.root.display().to_string()),
        started_at: meta.started_at.clone(),
        trials: measured.iter().filter_map(|t| recorded(t)).collect(),
        more_runs: Vec::new(),
    })
}

/// The class of the cluster the gate did not start that `measured` ran on (each trial
/// read it from `status json`), or `None` for the gate's own clusters. Errors: trials that
/// saw different classes (the cluster changed during the run).
fn cluster_class(measured: &[&TrialRecord]) -> Result<Option<String>> {
    let mut classes: Vec<String> = measured
        .iter()
        .filter_map(|t| t.cluster.as_ref().map(|c| c.class()))
        .collect();
    classes.dedup();
    match classes.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        many => Err(UsageError(format!(
            "the run's trials saw the cluster as {}: it changed during the run, so its \
             trials are not one cluster's record; record a run whose trials all saw one \
             class",
            many.join(" / then / ")
        ))
        .into()),
    }
}

/// The knee `arm` of `engine` reached on the sweep over `ladder` whose trials are
/// `trials` (of the run in `from`). Errors ([`UsageError`]): a trial of the engine that
/// failed (the sweep stopped before its knee showed), or a knee the ladder does not
/// bracket: the arm followed no step, or followed its top (the knee is above it).
fn recorded_sweep(
    from: &Path,
    trials: &[TrialRecord],
    engine: fdb::Engine,
    arm: Arm,
    ladder: &[u64],
) -> Result<RecordedSweep> {
    let refuse = |why: String| -> anyhow::Error {
        UsageError(format!(
            "{} is a saturation sweep whose {arm} knee of {engine} is not measured: {why}",
            from.display()
        ))
        .into()
    };
    if let Some(t) = trials
        .iter()
        .find(|t| t.engine == engine && t.outcome != Outcome::Measured)
    {
        return Err(refuse(format!(
            "trial {} was not measured, and the sweep stopped there; run it again",
            t.index
        )));
    }
    let steps = knee::steps(trials, engine);
    let top = ladder[ladder.len() - 1];
    match knee::knee(&steps, arm) {
        None => Err(refuse(format!(
            "it followed no step, not even {} TPS; lower the ladder's start and run it again",
            ladder[0]
        ))),
        Some(k) if k >= top => Err(refuse(format!(
            "it followed the ladder's top, {top} TPS, so the knee is above it; raise the \
             top and run it again"
        ))),
        Some(k) => Ok(RecordedSweep {
            ladder: ladder.to_vec(),
            knee_tps: k,
        }),
    }
}

/// Where the new record `b` goes in `dir` as `existing` says, and what is written there: a
/// new file, a replaced one, or the record of its name with the run added.
fn place(dir: &Path, b: Baseline, existing: Existing) -> Result<(PathBuf, Baseline)> {
    Ok(match existing {
        Existing::AddRun => {
            let (path, mut old) = find(dir, &b.name)?;
            old.add_run(b)?;
            (path, old)
        }
        _ => (free_path(dir, &b.name, existing == Existing::Replace)?, b),
    })
}

/// The saved run's `arm`. Errors: a run judged against a record has no baseline arm.
fn arm_of(plan: &SavedPlan, arm: Arm) -> Result<&SavedArm> {
    match arm {
        Arm::Baseline => plan
            .baseline
            .as_ref()
            .context("that run has no baseline arm (it was judged against a record)"),
        Arm::Experiment => Ok(&plan.experiment),
    }
}

/// What `baseline record` does with a record of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Existing {
    /// Refuse (the default).
    Refuse,
    /// Replace it (`--force`).
    Replace,
    /// Add the run to it as another day's (`--add-run`); it must exist.
    AddRun,
}

/// `<dir>/<base>.json`, refused when something is there, a dangling link included (it is
/// someone's), unless `force`. Errors: a [`UsageError`] naming the path and the remedies.
fn free_path(dir: &Path, base: &str, force: bool) -> Result<PathBuf> {
    let path = dir.join(format!("{base}.json"));
    if path.symlink_metadata().is_ok() && !force {
        return Err(UsageError(format!(
            "baseline {} exists; pass --force to replace it, or --name",
            path.display()
        ))
        .into());
    }
    Ok(path)
}

/// A record is what the host does on a whole run, not on the part a kill left: the run in
/// `from` must have ended (its `summary.json` written) without an interrupt.
fn check_finished(from: &Path, summary: Option<&SavedSummary>) -> Result<()> {
    match summary {
        None => bail!(
            "the run in {} did not finish (no summary.json: it was killed, or is still \
             running); record from a run that ended",
            from.display()
        ),
        Some(s) if s.interrupted => bail!(
            "the run in {} was interrupted by a signal; record from a run that ended",
            from.display()
        ),
        Some(_) => Ok(()),
    }
}

/// A baseline name is a plain file name: 1 to 100 letters, digits, '.', '_' or '-', not
/// starting with '.', so that `<dir>/<name>.json` stays inside the baselines dir, and not
/// `slo` (`slo.json` holds the SLO floors). Errors: a [`UsageError`] naming the rule.
fn check_name(name: &str) -> Result<()> {
    if name == "slo" {
        return Err(UsageError(
            "--name slo: baselines/slo.json is the SLO file (TPS floors), not a baseline; \
             choose another name"
                .to_string(),
        )
        .into());
    }
    let ok = (1..=100).contains(&name.len())
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        return Ok(());
    }
    Err(UsageError(format!(
        "--name {name:?}: a baseline name is a file name of 1 to 100 letters, digits, '.', \
         '_' and '-', not starting with '.' (e.g. ci-quick-redwood); it becomes \
         <baselines dir>/<name>.json"
    ))
    .into())
}

/// A measured trial as a record keeps it: its TPS, p99 transaction latency (when finite)
/// and storage server CPU; `None` without a report.
fn recorded(t: &TrialRecord) -> Option<RecordedTrial> {
    Some(RecordedTrial {
        tps: t.tps()?,
        txn_latency_us_p99: t.txn_latency_us_p99().filter(|p| p.is_finite()),
        storage_cpu_cores: t.storage_cpu_cores,
        target_tps: t.target_tps,
    })
}

/// One line per baseline in `dir`: name, engine, profile, host class, trials, mean TPS,
/// recorded. A file that does not load is listed with its error.
fn list(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "baselines dir {} does not exist: give --baselines-dir DIR, or record one first \
             (cargo xtask baseline record --from RESULTS_DIR)",
            dir.display()
        ))
        .into());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json") && p.file_name() != Some("slo.json".as_ref())
        })
        .collect();
    files.sort();
    let mut s = String::new();
    for f in files {
        match Baseline::load(&f) {
            Ok(b) => {
                let tps: Vec<f64> = b
                    .runs()
                    .iter()
                    .flat_map(|(_, ts)| ts.iter().map(|t| t.tps))
                    .collect();
                let mean = tps.iter().sum::<f64>() / tps.len() as f64;
                let runs = match b.runs().len() {
                    1 => String::new(),
                    n => format!("{n} runs, "),
                };
                // A sweep's trials ran at different targets: its figure is the knee.
                let figure = match &b.sweep {
                    Some(sw) => format!(
                        "knee {} TPS on the ladder {}",
                        b.knees()
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join("/"),
                        crate::config::readwrite::ladder_text(&sw.ladder)
                    ),
                    None => format!("{mean:.1} TPS"),
                };
                let _ = writeln!(
                    s,
                    "{}  {} {}  {runs}{} trials, {figure}  source {}  host '{}'  recorded {}",
                    b.name,
                    b.engine,
                    b.workload.profile,
                    tps.len(),
                    // By characters: a record's text need not be ASCII.
                    b.build.source_version.chars().take(12).collect::<String>(),
                    b.host_class,
                    b.recorded_at
                );
            }
            Err(e) => {
                let _ = writeln!(s, "{}  UNREADABLE: {e:#}", f.display());
            }
        }
    }
    if s.is_empty() {
        let _ = writeln!(s, "no baselines in {}", dir.display());
    }
    Ok(s)
}

/// `cargo xtask baseline record|list|show`; exit status 0, or an error.
pub fn run(cmd: &BaselineCommand) -> Result<i32> {
    let out = |text: &str| {
        // Records are files anyone may have edited: none moves the terminal's cursor.
        let text = crate::process::printable(text);
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    };
    match cmd {
        BaselineCommand::Record {
            from,
            name,
            arm,
            force,
            add_run,
            baselines_dir,
        } => {
            let arm = match arm {
                ArmArg::Baseline => Arm::Baseline,
                ArmArg::Experiment => Arm::Experiment,
            };
            let (written, two_arms) = record(
                from,
                &dir(baselines_dir.as_deref())?,
                name.as_deref(),
                arm,
                match (*force, *add_run) {
                    (_, true) => Existing::AddRun,
                    (true, false) => Existing::Replace,
                    (false, false) => Existing::Refuse,
                },
            )?;
            let hint = if two_arms && arm == Arm::Experiment {
                "; --arm baseline records the other arm's"
            } else {
                ""
            };
            for path in written {
                out(&format!(
                    "recorded {} (the {arm} arm's trials{hint})\n",
                    path.display()
                ));
            }
        }
        BaselineCommand::List { baselines_dir } => out(&list(&dir(baselines_dir.as_deref())?)?),
        BaselineCommand::Show {
            name,
            baselines_dir,
        } => {
            let (path, b) = find(&dir(baselines_dir.as_deref())?, name)?;
            out(&format!("{}\n{}", path.display(), json(&b)));
        }
    }
    Ok(0)
}

/// Lowercase letters and digits, other runs of characters as one `-`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_names_stay_inside_the_baselines_dir() {
        for good in ["ci-quick-redwood", "v7.3.43_scan", "a"] {
            check_name(good).unwrap();
        }
        let long = "x".repeat(101);
        for bad in [
            "",
            "../escaped",
            "/tmp/x",
            "../../../../tmp/x",
            ".hidden",
            "a/b",
            "a b",
            &long,
        ] {
            let e = check_name(bad).unwrap_err().to_string();
            assert!(e.contains("a baseline name is a file name"), "{bad}: {e}");
        }
        // `--name slo` would replace the SLO floors (slo.json) with a baseline.
        let e = check_name("slo").unwrap_err().to_string();
        assert!(e.contains("is the SLO file"), "{e}");
    }

    #[test]
    fn slugs_are_readable_file_names() {
        assert_eq!(
            slug("Intel(R) Xeon(R) CPU @ 2.20GHz x2, 24 GiB-quick-redwood"),
            "intel-r-xeon-r-cpu-2-20ghz-x2-24-gib-quick-redwood"
        );
    }
}
