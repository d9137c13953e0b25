//! Analyze stage: mako's text report and `--json_report` file -> a typed [`MakoReport`].
//!
//! Pure: callers read the files and pass their text. The formats are those of
//! `bindings/c/test/mako/mako.cpp` (`printReport`, `printStatsJSON`) in the FDB repository;
//! the traps handled here are documented there:
//! - `overallTPS` is truncated to an integer; `results.tps` is the float we use.
//! - a killed run leaves no "Overall TPS" line and a truncated JSON file;
//! - `--verbose 0` prints no text report and writes invalid JSON (`"samples": [],}`);
//! - per-second samples may repeat a key (`"errors"`), so only the fields we need are
//!   typed and the rest is ignored;
//! - latency statistics include the warmup ("latency stats still include it");
//! - mako exits 0 even when transactions failed: `totalErrors`/`totalTimeouts` tell.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// One `mako --mode run` report, checked for completeness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MakoReport {
    /// Committed transactions per second over the measurement window (post-warmup), TPS
    /// (`results.tps`).
    pub tps: f64,
    /// mako's "Overall TPS" line: `tps` truncated to an integer, TPS.
    pub overall_tps: u64,
    /// Whole run, warmup included, seconds (`results.runDuration`).
    pub run_duration_s: f64,
    /// Warmup, seconds (`results.warmupDuration`).
    pub warmup_duration_s: f64,
    /// Measurement window, seconds (`results.totalDuration`).
    pub measured_duration_s: f64,
    /// Committed transactions in the window (`results.totalXacts`).
    pub total_xacts: u64,
    /// Conflicts in the window (`results.totalConflicts`).
    pub total_conflicts: u64,
    /// Failed operations (`results.totalErrors`); above zero the run is not a valid
    /// measurement.
    pub total_errors: u64,
    /// Timed-out operations (`results.totalTimeouts`); above zero the run is not a valid
    /// measurement.
    pub total_timeouts: u64,
    /// Per-second TPS samples over the whole run, warmup included, in order (`samples`).
    pub samples_tps: Vec<f64>,
    /// Latency statistics per operation (GET, COMMIT, TRANSACTION, ...), microseconds,
    /// warmup included.
    pub latency_us: BTreeMap<String, LatencyStats>,
}

/// Latency statistics of one mako operation, microseconds; NaN where mako gave none
/// (saved as JSON null).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub samples: u64,
    #[serde(deserialize_with = "nan_if_null")]
    pub min: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub avg: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub max: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p50: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p95: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p99: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p99_9: f64,
}

/// serde_json writes NaN as null; read it back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl MakoReport {
    /// Parses a run's text report (stdout) and JSON report together. `text_name` and
    /// `json_name` are used in errors (file paths).
    pub fn parse(text: &str, text_name: &str, json: &str, json_name: &str) -> Result<MakoReport> {
        let summary = TextSummary::parse(text)
            .with_context(|| format!("mako text report {text_name} is incomplete"))?;
        let raw: RawReport = serde_json::from_str(json).with_context(|| {
            format!(
                "mako JSON report {json_name} is not valid JSON (a killed run truncates it; \
                 --verbose 0 writes it invalid)"
            )
        })?;
        let r = raw.results;
        if summary.overall_tps != r.overall_tps {
            bail!(
                "mako reports disagree: {text_name} says Overall TPS {} but {json_name} says \
                 overallTPS {}; they are not from the same run",
                summary.overall_tps,
                r.overall_tps
            );
        }
        let stat = |m: &BTreeMap<String, f64>, op: &str| m.get(op).copied().unwrap_or(f64::NAN);
        let latency_us = r
            .num_samples
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(op, n)| {
                let s = LatencyStats {
                    samples: *n,
                    min: stat(&r.min_latency, op),
                    avg: stat(&r.avg_latency, op),
                    max: stat(&r.max_latency, op),
                    p50: stat(&r.median_latency, op),
                    p95: stat(&r.p95_latency, op),
                    p99: stat(&r.p99_latency, op),
                    p99_9: stat(&r.p999_latency, op),
                };
                (op.clone(), s)
            })
            .collect();
        Ok(MakoReport {
            tps: r.tps,
            overall_tps: r.overall_tps,
            run_duration_s: r.run_duration,
            warmup_duration_s: r.warmup_duration,
            measured_duration_s: r.total_duration,
            total_xacts: r.total_xacts,
            total_conflicts: r.total_conflicts,
            total_errors: r.total_errors,
            total_timeouts: r.total_timeouts,
            samples_tps: raw.samples.iter().map(|s| s.tps).collect(),
            latency_us,
        })
    }

    /// `Err(reason)` when the report is complete but not a valid measurement.
    pub fn validity(&self) -> Result<(), String> {
        if self.total_errors > 0 || self.total_timeouts > 0 {
            return Err(format!(
                "not a valid measurement: mako counted {} errors and {} timeouts",
                self.total_errors, self.total_timeouts
            ));
        }
        if !(self.tps.is_finite() && self.tps > 0.0) {
            return Err(format!("not a valid measurement: TPS is {}", self.tps));
        }
        Ok(())
    }
}

/// A trend of TPS within the measurement window: a run that had not reached steady state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Drift {
    /// Least-squares change of TPS across the window, percent of the window's mean TPS.
    pub pct: f64,
    /// Two-sided p of "no slope" from the regression's t statistic, with the effective
    /// sample size of autocorrelated (AR(1)) residuals: a flag, never a verdict.
    pub p_value: f64,
}

/// Drift beyond this many percent of TPS across the window, with p below
/// [`DRIFT_P_VALUE`], marks a trial as not steady.
pub const DRIFT_MIN_PCT: f64 = 5.0;
pub const DRIFT_P_VALUE: f64 = 0.01;

impl Drift {
    /// Whether the drift is both large and clear.
    pub fn unsteady(&self) -> bool {
        self.pct.abs() >= DRIFT_MIN_PCT && self.p_value < DRIFT_P_VALUE
    }
}

impl MakoReport {
    /// The linear trend of the per-second TPS samples after the warmup (the first
    /// `warmup_duration_s` samples are dropped); `None` with fewer than 5 samples left.
    pub fn drift(&self) -> Option<Drift> {
        use statrs::distribution::{ContinuousCDF, StudentsT};
        let skip = self.warmup_duration_s.round() as usize;
        let y = self.samples_tps.get(skip..)?;
        let n = y.len();
        if n < 5 {
            return None;
        }
        let nf = n as f64;
        let (mx, my) = ((nf - 1.0) / 2.0, y.iter().sum::<f64>() / nf);
        let sxx: f64 = (0..n).map(|i| (i as f64 - mx).powi(2)).sum();
        let sxy: f64 = y
            .iter()
            .enumerate()
            .map(|(i, v)| (i as f64 - mx) * (v - my))
            .sum();
        let slope = sxy / sxx;
        let resid: Vec<f64> = y
            .iter()
            .enumerate()
            .map(|(i, v)| v - my - slope * (i as f64 - mx))
            .collect();
        let sse: f64 = resid.iter().map(|e| e * e).sum();
        // Per-second samples are autocorrelated (a slow oscillation looks like a trend
        // over a short window): the lag-1 autocorrelation r1 of the residuals shrinks the
        // sample size to n (1 - r1) / (1 + r1) for the slope's standard error and degrees
        // of freedom (Santer et al. 2000, J. Geophys. Res. 105(D6), eq. 6).
        let r1 = if sse > 0.0 {
            resid.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / sse
        } else {
            0.0
        };
        let n_eff = if r1 > 0.0 {
            nf * (1.0 - r1) / (1.0 + r1)
        } else {
            nf
        };
        let se = (sse / (n_eff - 2.0) / sxx).sqrt();
        let p_value = if n_eff <= 3.0 {
            1.0 // too autocorrelated to tell a trend from noise
        } else if se > 0.0 {
            2.0 * StudentsT::new(0.0, 1.0, n_eff - 2.0)
                .ok()?
                .sf((slope / se).abs())
        } else if slope == 0.0 {
            1.0
        } else {
            0.0
        };
        Some(Drift {
            pct: 100.0 * slope * (nf - 1.0) / my,
            p_value,
        })
    }
}

/// TPS of the last per-second line (`OPS ... TPS Conflicts/s`) mako printed so far, for
/// progress display; `None` before the first one.
pub fn last_sample_tps(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("OPS "))?;
    let numbers: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    numbers.len().checked_sub(2).map(|i| numbers[i])
}

/// The summary block of mako's text report; its "Overall TPS" line is printed last, so its
/// presence means the report is complete.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextSummary {
    /// "Overall TPS", TPS (integer).
    pub overall_tps: u64,
    pub total_errors: u64,
    pub total_timeouts: u64,
}

impl TextSummary {
    pub fn parse(text: &str) -> Result<TextSummary> {
        let field = |key: &str| -> Result<u64> {
            let line = text
                .lines()
                .find_map(|l| l.trim_start().strip_prefix(key))
                .with_context(|| {
                    format!("no '{key}' line: the run did not finish (killed, or --verbose 0)")
                })?;
            let value = line.trim();
            value
                .parse()
                .with_context(|| format!("'{key}' is '{value}', not a whole number"))
        };
        Ok(TextSummary {
            overall_tps: field("Overall TPS:")?,
            total_errors: field("Total Errors:")?,
            total_timeouts: field("Total Timeouts:")?,
        })
    }
}

#[derive(Deserialize)]
struct RawReport {
    samples: Vec<RawSample>,
    results: RawResults,
}

#[derive(Deserialize)]
struct RawSample {
    tps: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawResults {
    run_duration: f64,
    warmup_duration: f64,
    total_duration: f64,
    total_xacts: u64,
    total_conflicts: u64,
    total_errors: u64,
    total_timeouts: u64,
    #[serde(rename = "overallTPS")]
    overall_tps: u64,
    tps: f64,
    #[serde(default)]
    num_samples: BTreeMap<String, u64>,
    #[serde(default)]
    min_latency: BTreeMap<String, f64>,
    #[serde(default)]
    avg_latency: BTreeMap<String, f64>,
    #[serde(default)]
    max_latency: BTreeMap<String, f64>,
    #[serde(default)]
    median_latency: BTreeMap<String, f64>,
    #[serde(default)]
    p95_latency: BTreeMap<String, f64>,
    #[serde(default)]
    p99_latency: BTreeMap<String, f64>,
    #[serde(default, rename = "p99.9Latency")]
    p999_latency: BTreeMap<String, f64>,
}

/// The last `n` error events (Severity 40, SevError) of fdbserver trace XML, as
/// `Type (Error: ErrorDescription)`; FDB writes one `<Event .../>` per line
/// (`flow/Trace.cpp`). For the failure text of a crashed server.
pub fn trace_errors(trace: &str, n: usize) -> Vec<String> {
    let attr = |line: &str, key: &str| -> Option<String> {
        let start = line.find(&format!(" {key}=\""))? + key.len() + 3;
        Some(line[start..].split('"').next()?.to_string())
    };
    let errors: Vec<String> = trace
        .lines()
        .filter(|l| attr(l, "Severity").as_deref() == Some("40"))
        .map(|l| {
            let kind = attr(l, "Type").unwrap_or_else(|| "?".into());
            match (attr(l, "Error"), attr(l, "ErrorDescription")) {
                (Some(e), Some(d)) => format!("{kind} ({e}: {d})"),
                (Some(e), None) => format!("{kind} ({e})"),
                _ => kind,
            }
        })
        .collect();
    errors[errors.len().saturating_sub(n)..].to_vec()
}

/// Knobs an fdbserver refused, from its stderr and trace files. fdbserver only warns and
/// runs with the default (`fdbserver/core/ServerKnobs.cpp`, knob setup): on stderr
/// `WARNING: Invalid knob option 'NAME'` or `WARNING: Invalid value 'V' for knob option
/// 'NAME'`, in the trace `InvalidKnobName`/`InvalidKnobValue` events with `Knob` and `Value`
/// attributes. Returns one sentence per refused knob, no duplicates.
pub fn knob_problems(stderr: &str, trace: &str) -> Vec<String> {
    let quoted = |s: &str| s.split('\'').nth(1).map(str::to_string);
    let mut problems = Vec::new();
    let mut add = |p: String| {
        if !problems.contains(&p) {
            problems.push(p);
        }
    };
    for line in stderr.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("WARNING: Invalid knob option ") {
            if let Some(name) = quoted(rest) {
                add(format!("unknown knob '{name}'"));
            }
        } else if let Some(rest) = line.strip_prefix("WARNING: Invalid value ") {
            let mut q = rest.split('\'');
            if let (Some(value), Some(name)) = (q.nth(1), q.nth(1)) {
                add(format!("invalid value '{value}' for knob '{name}'"));
            }
        }
    }
    for line in trace.lines() {
        let attr = |key: &str| {
            let start = line.find(&format!(" {key}=\""))? + key.len() + 3;
            Some(line[start..].split('"').next()?.to_string())
        };
        match (attr("Type").as_deref(), attr("Knob"), attr("Value")) {
            (Some("InvalidKnobName"), Some(name), _) => add(format!("unknown knob '{name}'")),
            (Some("InvalidKnobValue"), Some(name), Some(value)) => {
                add(format!("invalid value '{value}' for knob '{name}'"))
            }
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_TXT: &str = include_str!("../testdata/mako-run.txt");
    const RUN_JSON: &str = include_str!("../testdata/mako.json");

    fn parse(text: &str, json: &str) -> Result<MakoReport> {
        MakoReport::parse(text, "mako-run.txt", json, "mako.json")
    }

    #[test]
    fn real_report_gives_float_tps_samples_and_latency() {
        let r = parse(RUN_TXT, RUN_JSON).unwrap();
        assert_eq!(r.tps, 659.89);
        assert_eq!(r.overall_tps, 659);
        assert_eq!(
            (r.run_duration_s, r.warmup_duration_s, r.measured_duration_s),
            (10.097, 3.021, 7.075)
        );
        assert_eq!(r.total_xacts, 4669);
        assert_eq!(r.samples_tps.len(), 10);
        assert_eq!(r.samples_tps[0], 847.53);
        let txn = r.latency_us["TRANSACTION"];
        assert_eq!((txn.samples, txn.p50, txn.p99), (16, 22147.0, 22147.0));
        assert_eq!(r.latency_us["GET"].p99, 1411.0);
        assert!(r.validity().is_ok());
    }

    #[test]
    fn report_with_timeouts_is_complete_but_not_valid() {
        let r = parse(
            include_str!("../testdata/mako-run-errors.txt"),
            include_str!("../testdata/mako-errors.json"),
        )
        .unwrap();
        assert_eq!(r.total_timeouts, 2121);
        let why = r.validity().unwrap_err();
        assert!(why.contains("2121 timeouts"), "{why}");
    }

    #[test]
    fn verbose_zero_run_is_an_error_naming_the_file() {
        let err = parse(
            include_str!("../testdata/mako-run-verbose0.txt"),
            include_str!("../testdata/mako-verbose0.json"),
        )
        .unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("mako-run.txt is incomplete"), "{msg}");
        assert!(msg.contains("Overall TPS"), "{msg}");
        // The JSON of such a run is invalid on its own too.
        let err = parse(RUN_TXT, include_str!("../testdata/mako-verbose0.json")).unwrap_err();
        assert!(
            format!("{err:#}").contains("mako.json is not valid JSON"),
            "{err:#}"
        );
    }

    #[test]
    fn truncated_json_of_a_killed_run_is_an_error() {
        let cut = &RUN_JSON[..RUN_JSON.len() / 2];
        let err = format!("{:#}", parse(RUN_TXT, cut).unwrap_err());
        assert!(err.contains("mako.json is not valid JSON"), "{err}");
        assert!(err.contains("EOF"), "{err}");
    }

    #[test]
    fn text_cut_before_the_summary_is_incomplete() {
        let cut = RUN_TXT.split("Overall TPS").next().unwrap();
        assert!(parse(cut, RUN_JSON).is_err());
    }

    #[test]
    fn repeated_errors_key_in_samples_is_accepted() {
        let json = RUN_JSON.replacen(
            r#""tps": 847.53,"#,
            r#""errors": {"GET": 0}, "tps": 847.53, "errors": {"GET": 0},"#,
            1,
        );
        assert_ne!(json, RUN_JSON);
        assert_eq!(parse(RUN_TXT, &json).unwrap().samples_tps[0], 847.53);
    }

    #[test]
    fn text_and_json_from_different_runs_are_refused() {
        let text = RUN_TXT.replace("Overall TPS:            659", "Overall TPS:            700");
        let err = format!("{:#}", parse(&text, RUN_JSON).unwrap_err());
        assert!(err.contains("disagree"), "{err}");
    }

    #[test]
    fn refused_knobs_are_found_in_real_stderr_and_trace_events() {
        let stderr = include_str!("../testdata/fdbserver-stderr-invalid-knob.txt");
        let trace = include_str!("../testdata/trace-knob-events.txt");
        let want = ["unknown knob 'this_knob_does_not_exist'"];
        assert_eq!(knob_problems(stderr, ""), want);
        assert_eq!(knob_problems("", trace), want);
        assert_eq!(knob_problems(stderr, trace), want, "no duplicates");
        let bad_value = "WARNING: Invalid value 'lots' for knob option 'page_cache_4k'\n";
        assert_eq!(
            knob_problems(bad_value, ""),
            ["invalid value 'lots' for knob 'page_cache_4k'"]
        );
        let event =
            r#"<Event Severity="30" Type="InvalidKnobValue" Knob="page_cache_4k" Value="lots" />"#;
        assert_eq!(
            knob_problems("", event),
            ["invalid value 'lots' for knob 'page_cache_4k'"]
        );
        // ProgramStart's CommandLine names the knob too, but is no refusal.
        assert!(knob_problems("", trace.lines().nth(1).unwrap()).is_empty());
    }

    #[test]
    fn drift_is_the_trend_of_the_window_after_the_warmup() {
        let mut r = parse(RUN_TXT, RUN_JSON).unwrap();
        // Warmup 3 s: samples 3.. of the real run fall from 782.96 to 646.68 TPS.
        let d = r.drift().unwrap();
        assert!(d.pct < -10.0, "{d:?}");
        r.samples_tps = vec![100.0; 20];
        assert_eq!(
            r.drift().unwrap(),
            Drift {
                pct: 0.0,
                p_value: 1.0
            }
        );
        r.samples_tps = (0..20)
            .map(|i| {
                if i < 3 {
                    10.0
                } else {
                    1000.0 + 10.0 * i as f64
                }
            })
            .collect();
        let d = r.drift().unwrap();
        // Samples 3..19 are 1030..1190 TPS: 16 steps of 10 over a mean of 1110; a line.
        assert!((d.pct - 100.0 * 160.0 / 1110.0).abs() < 1e-9, "{d:?}");
        assert!(d.unsteady());
        r.samples_tps.truncate(7);
        assert_eq!(r.drift(), None, "4 samples after the warmup are too few");
        // A trend plus AR(1) noise (coefficient 0.8): the naive slope test gives p 8.8e-5,
        // the effective sample size (r1 0.745, n_eff 5.83 of 40) p 0.2388 (scipy).
        r.warmup_duration_s = 0.0;
        r.samples_tps = vec![
            694.88, 707.63, 703.39, 698.51, 682.61, 684.52, 712.85, 722.07, 741.99, 742.47, 746.07,
            745.06, 707.53, 728.23, 738.11, 746.16, 709.1, 678.71, 671.77, 674.95, 693.27, 701.2,
            719.18, 710.6, 723.05, 735.03, 723.8, 762.69, 770.88, 790.55, 770.23, 751.89, 745.43,
            745.32, 760.3, 764.91, 754.98, 737.14, 731.9, 762.84,
        ];
        let d = r.drift().unwrap();
        assert!((d.pct - 7.920220248).abs() < 1e-6, "{d:?}");
        assert!((d.p_value - 0.238774322).abs() < 1e-6, "{d:?}");
        assert!(!d.unsteady(), "an oscillation is not a trend");
    }

    #[test]
    fn the_last_per_second_tps_is_read_for_progress() {
        assert_eq!(last_sample_tps(RUN_TXT), Some(646.68));
        let first = RUN_TXT.lines().take(3).collect::<Vec<_>>().join("\n");
        assert_eq!(last_sample_tps(&first), Some(847.53));
        assert_eq!(last_sample_tps(""), None);
    }

    #[test]
    fn the_last_error_events_of_a_trace_are_named() {
        let trace = r#"<Event Severity="10" Type="ProgramStart" />
<Event Severity="40" Type="StorageServerFailed" Error="io_error" ErrorDescription="Disk i/o operation failed" />
<Event Severity="30" Type="InvalidKnobName" Knob="x" />
<Event Severity="40" Type="Crash" Signal="11" />"#;
        assert_eq!(
            trace_errors(trace, 5),
            [
                "StorageServerFailed (io_error: Disk i/o operation failed)",
                "Crash"
            ]
        );
        assert_eq!(trace_errors(trace, 1), ["Crash"]);
        assert!(trace_errors(include_str!("../testdata/trace-knob-events.txt"), 5).is_empty());
    }

    /// A deterministic stand-in for fuzzing: every prefix of the real reports, and every
    /// single-byte corruption at a stride, parses to a value or an error, never a panic.
    #[test]
    fn parsers_never_panic_on_truncated_or_corrupted_reports() {
        let status = include_str!("../testdata/status-json-available.json");
        let trace = include_str!("../testdata/trace-knob-events.txt");
        for (text, json) in [
            (RUN_TXT, RUN_JSON),
            (
                include_str!("../testdata/mako-run-errors.txt"),
                include_str!("../testdata/mako-errors.json"),
            ),
        ] {
            for cut in (0..json.len()).filter(|i| json.is_char_boundary(*i)) {
                let _ = MakoReport::parse(text, "t", &json[..cut], "j");
            }
            for cut in (0..text.len()).filter(|i| text.is_char_boundary(*i)) {
                let _ = MakoReport::parse(&text[..cut], "t", json, "j");
                let _ = last_sample_tps(&text[..cut]);
            }
            for (i, junk) in (0..json.len()).step_by(7).zip(
                [b'{', b'"', b'9', b'-', b'e', b'}', b' ', b'x']
                    .iter()
                    .cycle(),
            ) {
                let mut bytes = json.as_bytes().to_vec();
                bytes[i] = *junk;
                if let Ok(mutated) = String::from_utf8(bytes) {
                    if let Ok(r) = MakoReport::parse(text, "t", &mutated, "j") {
                        let _ = (r.validity(), r.drift());
                    }
                }
            }
        }
        for cut in (0..status.len())
            .step_by(3)
            .filter(|i| status.is_char_boundary(*i))
        {
            let _ = crate::cluster::parse_database_status(&status[..cut]);
        }
        for cut in 0..trace.len() {
            let _ = (
                knob_problems(&trace[..cut], &trace[..cut]),
                trace_errors(&trace[..cut], 3),
            );
        }
        for spec in [
            "",
            ":",
            "ir",
            "ir:",
            "ir:-",
            "g99999999999999999999999",
            "gr1:99999999999999999999999",
            "\u{e9}",
        ] {
            let _ = crate::config::transaction_ops(spec);
        }
    }

    #[test]
    fn build_mode_text_report_has_a_summary() {
        let s = TextSummary::parse(include_str!("../testdata/mako-build.txt")).unwrap();
        assert_eq!(
            (s.overall_tps, s.total_errors, s.total_timeouts),
            (401, 0, 0)
        );
    }
}
