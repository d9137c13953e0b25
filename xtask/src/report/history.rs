//! Report stage: the experiment's values for benchmark-history tools, which chart one value
//! per commit and alert on their own thresholds: Bencher's Metric Format
//! (`--export-bmf`) and github-action-benchmark's custom JSON
//! (`--export-benchmark`). One entry per engine and judged metric, the experiment
//! arm's mean in the metric's unit ([`Metric::unit`]); the verdict stays the gate's.

use serde::Serialize;

use crate::{
    config::Direction,
    judge::{Judgement, Metric, Verdict},
};

/// The experiment's value of a judgement's metric, and the lowest and highest trial's when
/// the judgement keeps them (TPS, from two trials on): `None` when the experiment measured
/// none, or when its verdict is ERROR or TIMEOUT (an interrupted run's too): a history
/// tool charts every value it is given, and a run that failed is no data point.
fn experiment_value(j: &Judgement) -> Option<(f64, Option<(f64, f64)>)> {
    if matches!(j.verdict, Verdict::Error | Verdict::Timeout) {
        return None;
    }
    if j.metric == Metric::KneeTps {
        return Some((j.knees?.experiment_tps? as f64, None));
    }
    let e = j.experiment.as_ref()?;
    let value = e.mean(j.metric)?;
    let range = (j.metric == Metric::Tps && e.tps.len() > 1).then(|| {
        let lo = e.tps.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = e.tps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    });
    Some((value, range)).filter(|(v, _)| v.is_finite())
}

/// A measure of Bencher's Metric Format: a value and, optionally, its bounds.
#[derive(Serialize)]
struct BmfMetric {
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    lower_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upper_value: Option<f64>,
}

/// Bencher Metric Format JSON (<https://bencher.dev/docs/reference/bencher-metric-format>):
/// `{"perfgate/<engine>": {"<metric>": {"value", "lower_value", "upper_value"}}}`, the
/// experiment's mean, and for TPS its lowest and highest trial as the bounds.
pub fn bmf(judgements: &[Judgement]) -> String {
    let mut benchmarks = std::collections::BTreeMap::<String, serde_json::Map<_, _>>::new();
    for j in judgements {
        let Some((value, range)) = experiment_value(j) else {
            continue;
        };
        let metric = BmfMetric {
            value,
            lower_value: range.map(|r| r.0),
            upper_value: range.map(|r| r.1),
        };
        benchmarks
            .entry(format!("perfgate/{}", j.engine))
            .or_default()
            .insert(
                j.metric.name().to_string(),
                serde_json::to_value(metric).expect("numbers serialize"),
            );
    }
    crate::results::fs::json(&benchmarks)
}

/// An entry of github-action-benchmark's custom tools (`BenchmarkResult` in its
/// `src/extract.ts`: `name`, `unit`, `value`, optional `range` and `extra`).
#[derive(Serialize)]
struct ActionEntry {
    name: String,
    unit: &'static str,
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    extra: String,
}

/// github-action-benchmark's JSON for the judgements whose metric improves in `direction`:
/// `customBiggerIsBetter` takes the higher-is-better ones (TPS, the knee),
/// `customSmallerIsBetter` the others (latency, work per transaction). Each entry is named
/// `<engine> <metric>`, valued at the experiment's mean, TPS with its trials' spread as
/// `range` (`± half the spread`), and `extra` is the gate's verdict and change.
pub fn benchmark_action(judgements: &[Judgement], direction: Direction) -> String {
    let entries: Vec<ActionEntry> = judgements
        .iter()
        .filter(|j| j.metric.direction() == direction)
        .filter_map(|j| {
            let (value, range) = experiment_value(j)?;
            let change = j
                .change_pct()
                .map(|(c, lo, hi)| format!(" {c:+.2}% [{lo:+.2}, {hi:+.2}]"))
                .unwrap_or_default();
            Some(ActionEntry {
                name: format!("{} {}", j.engine, j.metric.name()),
                unit: j.metric.unit(),
                value,
                range: range.map(|(lo, hi)| format!("± {:.2}", (hi - lo) / 2.0)),
                extra: format!("{}{change}", j.verdict),
            })
        })
        .collect();
    crate::results::fs::json(&entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TPS and p99 latency of three pairs of redwood trials, TPS 5% lower in the experiment.
    fn judgements() -> Vec<Judgement> {
        super::super::tests::run().1
    }

    /// Bencher's published schema for BMF
    /// (<https://bencher.dev/docs/reference/bencher-metric-format>).
    const BMF_SCHEMA: &str = r#"{
        "$schema": "http://json-schema.org/draft-07/schema",
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "patternProperties": {".+": {
                "type": "object",
                "properties": {
                    "value": {"type": "number"},
                    "lower_value": {"type": "number"},
                    "upper_value": {"type": "number"}
                },
                "required": ["value"]
            }}
        }}
    }"#;

    /// github-action-benchmark's `BenchmarkResult` as a schema: what its custom tools read.
    const ACTION_SCHEMA: &str = r#"{
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "unit": {"type": "string"},
                "value": {"type": "number"},
                "range": {"type": "string"},
                "extra": {"type": "string"}
            },
            "required": ["name", "unit", "value"],
            "additionalProperties": false
        }
    }"#;

    fn assert_valid(schema: &str, text: &str) -> serde_json::Value {
        let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{text}");
        v
    }

    #[test]
    fn bmf_has_the_experiments_mean_and_its_trials_range_per_engine_and_metric() {
        let v = assert_valid(BMF_SCHEMA, &bmf(&judgements()));
        let tps = &v["perfgate/redwood"]["tps"];
        assert!(
            (tps["value"].as_f64().unwrap() - 951.8333).abs() < 1e-3,
            "{v}"
        );
        assert_eq!(
            (tps["lower_value"].as_f64(), tps["upper_value"].as_f64()),
            (Some(945.0), Some(960.5))
        );
        // The schema can fail: a measure without a value.
        let bad = r#"{"perfgate/redwood": {"tps": {"lower_value": 1.0}}}"#;
        let schema: serde_json::Value = serde_json::from_str(BMF_SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(!validator.is_valid(&serde_json::from_str(bad).unwrap()));
    }

    #[test]
    fn benchmark_action_files_split_the_metrics_by_their_direction() {
        let j = judgements();
        let bigger = assert_valid(
            ACTION_SCHEMA,
            &benchmark_action(&j, Direction::HigherIsBetter),
        );
        assert_eq!(bigger.as_array().unwrap().len(), 1, "{bigger}");
        let tps = &bigger[0];
        assert_eq!(
            (&tps["name"], &tps["unit"]),
            (&"redwood tps".into(), &"TPS".into())
        );
        assert_eq!(tps["range"], "± 7.75");
        assert!(
            tps["extra"]
                .as_str()
                .unwrap()
                .starts_with("REGRESSION -4.82% ["),
            "{tps}"
        );
        let smaller = assert_valid(
            ACTION_SCHEMA,
            &benchmark_action(&j, Direction::LowerIsBetter),
        );
        assert_eq!(smaller.as_array().unwrap().len(), 1, "{smaller}");
        let p99 = &smaller[0];
        assert_eq!(
            (&p99["name"], &p99["unit"]),
            (&"redwood txn_latency_p99".into(), &"µs".into())
        );
        assert!(
            (p99["value"].as_f64().unwrap() - 4566.667).abs() < 1e-2,
            "{p99}"
        );
        assert!(p99.get("range").is_none(), "{p99}");
    }

    #[test]
    fn a_failed_measurement_is_no_data_point_and_one_trial_has_no_spread() {
        let mut j = judgements();
        j[0].verdict = crate::judge::Verdict::Error;
        let v: serde_json::Value = serde_json::from_str(&bmf(&j)).unwrap();
        assert!(v["perfgate/redwood"].get("tps").is_none(), "{v}");
        assert!(
            v["perfgate/redwood"].get("txn_latency_p99").is_some(),
            "{v}"
        );
        let mut j = judgements();
        let e = j[0].experiment.as_mut().unwrap();
        e.tps.truncate(1);
        let hi: serde_json::Value =
            serde_json::from_str(&benchmark_action(&j, Direction::HigherIsBetter)).unwrap();
        assert!(hi[0].get("range").is_none(), "{hi}");
        let v: serde_json::Value = serde_json::from_str(&bmf(&j)).unwrap();
        assert!(
            v["perfgate/redwood"]["tps"].get("lower_value").is_none(),
            "{v}"
        );
    }
}
