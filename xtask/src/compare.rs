//! `cargo xtask compare <results-dir>`: judge a saved run again, offline, e.g. with
//! another tolerance. Reads `meta.json` and `trials.json`; runs nothing. Same outputs
//! and exit status as `bench`.

use std::{collections::BTreeMap, path::Path, time::SystemTime};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::{
    baseline::Baseline,
    bench::{check_writable_file, export},
    config::{Engine, UsageError},
    execute::TrialRecord,
    flags::CompareArgs,
    judge::{exit_code, judge_looks, Criteria},
    slo::SloTps,
};

/// What `compare` needs of a saved `meta.json` (`plan.config` and `plan.warnings`).
#[derive(Deserialize)]
struct SavedMeta {
    plan: SavedPlan,
}

#[derive(Deserialize)]
struct SavedPlan {
    config: SavedConfig,
    /// The recorded baseline of an `--against-recorded` run.
    #[serde(default)]
    recorded: Option<Baseline>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct SavedConfig {
    engines: Vec<Engine>,
    trials: u32,
    #[serde(default)]
    time_budget: Option<serde_json::Value>,
    max_regression_pct: f64,
    slo_tps: Option<f64>,
    #[serde(default)]
    slo: SloTps,
    #[serde(default)]
    strict: bool,
    #[serde(default)]
    gate_latency: bool,
}

/// Looks per engine of an adaptive run, from its `summary.json` (absent: one look).
#[derive(Deserialize)]
struct SavedSummary {
    #[serde(default)]
    interrupted: bool,
    judgements: Vec<SavedJudgement>,
}

#[derive(Deserialize)]
struct SavedJudgement {
    engine: Engine,
    #[serde(default = "one")]
    looks: u32,
}

fn one() -> u32 {
    1
}

fn read<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Result<T> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a perfgate results dir?)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a perfgate {file}", path.display()))
}

/// Judges the saved run in `args.dir` again and exports into `--out` (default
/// `<dir>/compare-<UTC time>`). Exit status as `bench`.
pub fn run(args: &CompareArgs) -> Result<i32> {
    if !args.dir.is_dir() {
        return Err(
            UsageError(format!("{} is not a results directory", args.dir.display())).into(),
        );
    }
    let meta: SavedMeta = read(&args.dir, "meta.json")?;
    let trials: Vec<TrialRecord> = read(&args.dir, "trials.json")?;
    // An interrupted run may have no summary; then every engine had one look.
    let summary: Option<SavedSummary> = read(&args.dir, "summary.json").ok();
    let c = meta.plan.config;
    let criteria = Criteria {
        // With --trials auto the planned count is a minimum the budget may cut short.
        trials: if c.time_budget.is_some_and(|b| !b.is_null()) {
            1
        } else {
            c.trials
        },
        max_regression_pct: args.max_regression.unwrap_or(c.max_regression_pct),
        slo_tps: args.slo_tps.or(c.slo_tps),
        slo: c.slo,
        strict: args.strict || c.strict,
        unpaired: meta.plan.recorded.is_some(),
        gate_latency: c.gate_latency,
    };
    if !(criteria.max_regression_pct > 0.0 && criteria.max_regression_pct < 100.0) {
        return Err(UsageError("--max-regression must be between 0 and 100".into()).into());
    }
    let looks: BTreeMap<Engine, u32> = summary
        .iter()
        .flat_map(|s| s.judgements.iter().map(|j| (j.engine, j.looks)))
        .collect();
    let interrupted = summary.is_some_and(|s| s.interrupted);
    let mut judged = meta
        .plan
        .recorded
        .as_ref()
        .map(Baseline::as_trials)
        .unwrap_or_default();
    judged.extend(trials);
    let judgements = judge_looks(&judged, &c.engines, criteria, interrupted, &looks);
    let out = match &args.out {
        Some(o) => o.clone(),
        None => {
            let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
                .to_string()
                .replace(':', "");
            args.dir.join(format!("compare-{stamp}"))
        }
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    if let Some(j) = &args.junit {
        check_writable_file(j)?;
    }
    export(
        &out,
        &judgements,
        interrupted,
        &meta.plan.warnings,
        args.junit.as_deref(),
        false,
    )?;
    Ok(exit_code(&judgements))
}
