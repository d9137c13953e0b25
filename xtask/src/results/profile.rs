//! Results stage: the simulation driver's per-function profiles. Each simulation trial
//! keeps the instructions of every function of its run ([`PROFILE_FILE`] in its
//! artifacts); the differential profile ([`diff`]) says which functions' instructions per
//! committed transaction changed most between the arms, so a REGRESSION says where.

use std::{collections::BTreeMap, path::Path};

use anyhow::{bail, Context, Result};
use fdb::{
    simulation::{role_of_file, Cachegrind, SimRole},
    Engine,
};
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    fs::create_new,
    trial::{Outcome, TrialRecord},
};
use crate::{config::Arm, process::read_output};

/// The per-function profile of a simulation trial in its artifacts: `ir`, `role`, `file`,
/// `function`, tab-separated, the most expensive first, for every function of at least
/// [`PROFILE_MIN_SHARE`] of the run's instructions.
pub const PROFILE_FILE: &str = "profile.tsv";

/// Functions below this share of a run's instructions are left out of [`PROFILE_FILE`]:
/// a change there is below a millionth of the run.
pub const PROFILE_MIN_SHARE: f64 = 1e-6;

/// Longest function or file name a profile keeps, bytes.
const NAME_BYTES: usize = 1000;

/// How many functions the differential profile lists.
pub const DIFF_TOP: usize = 10;

/// One function's line of a [`PROFILE_FILE`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileLine {
    pub ir: u64,
    pub role: SimRole,
    pub file: String,
    pub function: String,
}

/// Writes `run`'s [`PROFILE_FILE`] into `artifacts` (created exclusively) and returns its
/// path.
pub fn write_profile(artifacts: &Path, run: &Cachegrind) -> Result<std::path::PathBuf> {
    let least = ((run.total_ir as f64 * PROFILE_MIN_SHARE).ceil() as u64).max(1);
    let mut text = String::from("ir\trole\tfile\tfunction\n");
    // Names as cachegrind gives them, made safe for every report (no controls, at most
    // NAME_BYTES: a template's demangled name can run to kilobytes).
    let clean = |s: &str| crate::process::clean_text(s, NAME_BYTES, &[]);
    for f in run.functions.iter().filter(|f| f.ir >= least) {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            f.ir,
            role_of_file(&f.file).as_str(),
            clean(&f.file),
            clean(&f.function)
        ));
    }
    let path = artifacts.join(PROFILE_FILE);
    create_new(&path, &text)?;
    Ok(path)
}

/// Reads a [`PROFILE_FILE`]. Errors: a line that is not `ir`, role, file, function.
pub fn read_profile(path: &Path) -> Result<Vec<ProfileLine>> {
    let text = read_output(path)?;
    text.lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut f = l.splitn(4, '\t');
            let (Some(ir), Some(role), Some(file), Some(function)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                bail!(
                    "{}: line {l:?} is not ir, role, file, function",
                    path.display()
                );
            };
            Ok(ProfileLine {
                ir: ir
                    .parse()
                    .with_context(|| format!("{}: {ir:?} is not a count", path.display()))?,
                role: SimRole::from_name(role)
                    .with_context(|| format!("{}: {role:?} is not a role", path.display()))?,
                file: file.to_string(),
                function: function.to_string(),
            })
        })
        .collect()
}

/// A function whose instructions per committed transaction changed between the arms.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FunctionChange {
    pub function: String,
    /// Where it is defined, as the debug information tells.
    pub file: String,
    pub role: SimRole,
    /// Instructions per committed transaction in each arm, over the complete pairs.
    pub baseline_per_txn: f64,
    pub experiment_per_txn: f64,
    /// Experiment minus baseline.
    pub change_per_txn: f64,
}

/// The differential profile of one engine: the functions whose instructions per committed
/// transaction changed most, largest change first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProfileDiff {
    pub engine: Engine,
    /// Complete pairs (both trials measured) the profile sums.
    pub pairs: usize,
    /// Pairs whose two trials printed the same unseed: the same simulated path, so the
    /// difference is the arms' code alone.
    pub exact_pairs: usize,
    /// At most [`DIFF_TOP`] functions.
    pub functions: Vec<FunctionChange>,
}

/// The differential profile of each engine of a simulation run whose results dir is `out`,
/// from the measured pairs' profiles; empty when the run has no simulation trial. A
/// profile that cannot be read leaves the run without one, and the warning for the run's
/// report says why: it explains a verdict, it does not decide one.
pub fn diff_or_warning(out: &Path, trials: &[TrialRecord]) -> (Vec<ProfileDiff>, Option<String>) {
    match diff(out, trials) {
        Ok(d) => (d, None),
        Err(e) => (Vec::new(), Some(format!("no differential profile: {e:#}"))),
    }
}

/// [`diff_or_warning`]. Errors: a profile file that is missing, does not read, or lies
/// outside the results dir.
pub fn diff(out: &Path, trials: &[TrialRecord]) -> Result<Vec<ProfileDiff>> {
    let mut engines: Vec<Engine> = trials
        .iter()
        .filter(|t| t.simulation.is_some())
        .map(|t| t.engine)
        .collect();
    engines.dedup();
    let mut diffs = Vec::new();
    for engine in engines {
        diffs.extend(engine_diff(out, engine, trials)?);
    }
    Ok(diffs)
}

/// `rel` (a trial's profile path, from its record) under the results dir `out`. Errors: an
/// absolute path or one with `..`: a record that points outside the run.
fn inside(out: &Path, rel: &Path) -> Result<std::path::PathBuf> {
    use std::path::Component;
    if rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Ok(out.join(rel));
    }
    bail!(
        "a trial's profile {} is not a path inside the results dir (trials.json edited?)",
        rel.display()
    )
}

/// The measured simulation pairs of `engine`: (baseline, experiment) of each repetition.
fn pairs_of(engine: Engine, trials: &[TrialRecord]) -> Vec<(&TrialRecord, &TrialRecord)> {
    let of = |arm: Arm, rep: u32| {
        trials.iter().find(|t| {
            t.engine == engine
                && t.arm == arm
                && t.repetition == rep
                && t.outcome == Outcome::Measured
                && t.simulation.is_some()
        })
    };
    trials
        .iter()
        .filter(|t| t.engine == engine && t.arm == Arm::Baseline)
        .filter_map(|b| {
            Some((
                of(Arm::Baseline, b.repetition)?,
                of(Arm::Experiment, b.repetition)?,
            ))
        })
        .collect()
}

/// [`diff`] of one engine; `None` without a measured pair.
fn engine_diff(out: &Path, engine: Engine, trials: &[TrialRecord]) -> Result<Option<ProfileDiff>> {
    let pairs = pairs_of(engine, trials);
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut per_fn: BTreeMap<(String, String), (SimRole, [f64; 2])> = BTreeMap::new();
    let mut txns = [0.0; 2];
    for (b, e) in &pairs {
        for (side, t) in [(0, b), (1, e)] {
            let s = t
                .simulation
                .as_ref()
                .expect("paired trials are simulations");
            txns[side] += s.result.transactions;
            for line in read_profile(&inside(out, &s.profile)?)? {
                let entry = per_fn
                    .entry((line.function, line.file))
                    .or_insert((line.role, [0.0; 2]));
                entry.1[side] += line.ir as f64;
            }
        }
    }
    let unseed = |t: &TrialRecord| t.simulation.as_ref().map(|s| s.result.unseed);
    let exact_pairs = pairs.iter().filter(|(b, e)| unseed(b) == unseed(e)).count();
    let mut functions: Vec<FunctionChange> = per_fn
        .into_iter()
        .map(|((function, file), (role, ir))| {
            let (b, e) = (ir[0] / txns[0], ir[1] / txns[1]);
            FunctionChange {
                function,
                file,
                role,
                baseline_per_txn: b,
                experiment_per_txn: e,
                change_per_txn: e - b,
            }
        })
        .filter(|f| f.change_per_txn != 0.0)
        .collect();
    functions.sort_by(|a, b| {
        b.change_per_txn
            .abs()
            .total_cmp(&a.change_per_txn.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    functions.truncate(DIFF_TOP);
    Ok(Some(ProfileDiff {
        engine,
        pairs: pairs.len(),
        exact_pairs,
        functions,
    }))
}

/// The differential profiles as text for the terminal and summary.md: per engine, the
/// functions with their change of instructions per transaction.
pub fn render(diffs: &[ProfileDiff]) -> String {
    let mut s = String::new();
    for d in diffs {
        s.push_str(&format!(
            "{}: instructions per transaction by function, experiment - baseline ({} pairs of \
             seeds, {} with the same simulated path):\n",
            d.engine, d.pairs, d.exact_pairs
        ));
        if d.functions.is_empty() {
            s.push_str("  no function changed\n");
        }
        for f in &d.functions {
            let pct = if f.baseline_per_txn > 0.0 {
                format!("{:+.2}%", 100.0 * f.change_per_txn / f.baseline_per_txn)
            } else {
                "new".to_string()
            };
            s.push_str(&format!(
                "  {:>+12.1} ({pct:>7}) {:<9} {}\n",
                f.change_per_txn,
                f.role.as_str(),
                crate::process::clean_text(&short(&f.function), 200, &[])
            ));
        }
    }
    s
}

/// A function's name without its parameter list, for a line of text.
fn short(function: &str) -> String {
    match function.find('(') {
        Some(i) if i > 0 => format!("{}(...){}", &function[..i], tail_after_params(function, i)),
        _ => function.to_string(),
    }
}

/// What follows a function's parameter list that opens at `open` (` const`, ` [clone
/// .resume]`), found by matching parentheses.
fn tail_after_params(function: &str, open: usize) -> &str {
    let mut depth = 0;
    for (i, c) in function[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &function[open + i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_is_shown_without_its_parameters_but_with_its_clone() {
        assert_eq!(
            short("getValueQ(StorageServer*, GetValueRequest) [clone .resume]"),
            "getValueQ(...) [clone .resume]"
        );
        assert_eq!(short("f(g(int), h) const"), "f(...) const");
        assert_eq!(short("???"), "???");
    }
}
