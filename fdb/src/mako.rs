//! mako's outputs and inputs: its text report and `--json_report` file -> a typed
//! [`MakoReport`], and its transaction spec (`-x`).
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
//!
//! mako's own limits on its inputs are here too: FDB's key and value sizes and the
//! transaction spec grammar (`parseTransaction`).
//! - mako exits 0 even when transactions failed: `totalErrors`/`totalTimeouts` tell.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::compact;

/// mako's name of the whole-transaction operation in its latency statistics
/// (`bindings/c/test/mako/operations.cpp`, the operation table).
pub const TRANSACTION: &str = "TRANSACTION";

/// Which fields a mako's reports carry, by release (`release::MakoCaps::format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// `Run Duration`/`Warmup Duration` and `runDuration`/`warmupDuration` (FDB 8.0, with
    /// `--warmup_seconds`); without them the whole run is the window.
    pub warmup_fields: bool,
    /// `Total Timeouts` and `totalTimeouts` (FDB 7.3); without them timeouts are 0 (mako
    /// had no transaction timeouts).
    pub timeouts: bool,
}

impl Format {
    /// FDB 8.0's mako.
    pub const V8_0: Format = Format {
        warmup_fields: true,
        timeouts: true,
    };
}

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
pub(crate) fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl MakoReport {
    /// Parses a run's text report (stdout) and JSON report together, as a mako of `format`
    /// writes them: a field of that format missing is an error; without warmup fields the
    /// whole run is the window (see [`MakoReport::measured_after`]). `text_name` and
    /// `json_name` are used in errors (file paths).
    pub fn parse(
        text: &str,
        text_name: &str,
        json: &str,
        json_name: &str,
        format: Format,
    ) -> Result<MakoReport> {
        let summary = TextSummary::parse(text)
            .with_context(|| format!("mako text report {text_name} is incomplete"))?;
        let raw: RawReport = serde_json::from_str(json).with_context(|| {
            format!(
                "mako JSON report {json_name} is not valid JSON (a killed run truncates it; \
                 --verbose 0 writes it invalid)"
            )
        })?;
        let r = Results::of(raw.results, format)
            .with_context(|| format!("mako JSON report {json_name} is incomplete"))?;
        check_same_run(&summary, &r, format, text_name, json_name)?;
        let figures = Figures::from(&r);
        let samples_tps: Vec<f64> = raw.samples.iter().map(|s| s.tps).collect();
        check_rate(&figures)
            .and_then(|()| check_samples(&samples_tps, &figures))
            .with_context(|| format!("mako JSON report {json_name} is not plausible"))?;
        check_same_counts(&summary, &r, text_name, json_name)?;
        let latency_us = latency_stats(&r);
        check_latencies(&latency_us, r.run_duration)
            .with_context(|| format!("mako JSON report {json_name} is not plausible"))?;
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
            samples_tps,
            latency_us,
        })
    }

    /// The report of the window after the first `warmup_s` seconds, for a mako without
    /// `--warmup_seconds` (FDB 7.1-7.4) that ran the whole `--seconds`: TPS is the mean of
    /// the per-second samples after the first `warmup_s` (rounded) ones, the window's
    /// transactions that TPS over the window's seconds. Errors, conflicts, timeouts and
    /// latency stay the whole run's (as 8.0's mako keeps latency: its report says so).
    ///
    /// Errors: the report already has a warmup, or fewer than 2 samples are left after it.
    pub fn measured_after(self, warmup_s: f64) -> Result<MakoReport> {
        if self.warmup_duration_s > 0.0 {
            bail!(
                "the report already excludes a warmup of {} s",
                self.warmup_duration_s
            );
        }
        let skip = warmup_s.round() as usize;
        let window = self.samples_tps.get(skip..).unwrap_or_default();
        if window.len() < 2 {
            bail!(
                "mako printed {} per-second samples: fewer than 2 after a warmup of {warmup_s} s",
                self.samples_tps.len()
            );
        }
        let tps = window.iter().sum::<f64>() / window.len() as f64;
        let measured = (self.run_duration_s - warmup_s).max(0.0);
        Ok(MakoReport {
            tps,
            overall_tps: tps as u64,
            warmup_duration_s: warmup_s,
            measured_duration_s: measured,
            total_xacts: (tps * measured).round() as u64,
            ..self
        })
    }

    /// Checks a report read back (a saved `trials.json` may have been edited) as
    /// [`MakoReport::parse`] checked it: TPS, transactions and window agree, the
    /// per-second samples agree with TPS, TPS is at most [`MAX_TPS`], and every latency
    /// lies within the run.
    ///
    /// Errors: the first figure that does not hold, named.
    pub fn check(&self) -> Result<()> {
        let figures = Figures {
            run_duration: self.run_duration_s,
            warmup_duration: self.warmup_duration_s,
            total_duration: self.measured_duration_s,
            tps: self.tps,
            total_xacts: self.total_xacts,
            overall_tps: self.overall_tps,
        };
        check_rate(&figures)?;
        check_samples(&self.samples_tps, &figures)?;
        check_latencies(&self.latency_us, self.run_duration_s)
    }

    /// The statistics of whole transactions (mako's `TRANSACTION` operation), when the
    /// run had any.
    pub fn transaction_latency(&self) -> Option<&LatencyStats> {
        self.latency_us.get(TRANSACTION)
    }

    /// A sentence when mako's transaction latency is one value over several samples
    /// (min = max): mako times one transaction in `--sampling` (1000 by default,
    /// `bindings/c/test/mako/mako.cpp`), and a short run's few samples can all be one
    /// transaction's (`testdata/mako.json`: 16 samples, min = max = 22094 us), so its
    /// p99 is no percentile. `None` otherwise.
    pub fn one_valued_latency(&self) -> Option<String> {
        let l = self.transaction_latency()?;
        (l.samples > 1 && l.min == l.max).then(|| {
            format!(
                "mako's transaction latency is one value over its {} samples (min = max = {} \
                 us, p99 {} us): mako times 1 transaction in --sampling (1000 by default), so \
                 this p99 is no percentile; do not judge latency on it (a longer --seconds \
                 gives more samples)",
                l.samples,
                compact(l.min),
                compact(l.p99)
            )
        })
    }

    /// `Err(reason)` when the run's durations are not the ones asked: a warmup of
    /// `warmup_s` seconds in a run of `run_s` seconds (mako's `--warmup_seconds`,
    /// `--seconds`). mako ends each phase on its per-second clock, so a phase may be off by
    /// about a second or a tenth, whichever is more; a shorter window (a mako that stopped
    /// early, or does not know `--warmup_seconds`) measured something else.
    pub fn window_matches(&self, run_s: f64, warmup_s: f64) -> Result<(), String> {
        let near = |got: f64, asked: f64| (got - asked).abs() <= f64::max(1.0, 0.1 * asked);
        let window_s = run_s - warmup_s;
        if near(self.run_duration_s, run_s)
            && near(self.warmup_duration_s, warmup_s)
            && near(self.measured_duration_s, window_s)
        {
            return Ok(());
        }
        // To the ms, and short whatever a file holds.
        let s = |v: f64| {
            if v.is_finite() && v.abs() < 1e12 {
                format!("{v:.3}")
            } else {
                compact(v)
            }
        };
        Err(format!(
            "not a valid measurement: mako ran {} s with a warmup of {} s and measured {} s, \
             but {run_s} s with a warmup of {warmup_s} s (a window of {window_s} s) was asked",
            s(self.run_duration_s),
            s(self.warmup_duration_s),
            s(self.measured_duration_s)
        ))
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
            return Err(format!(
                "not a valid measurement: TPS is {}",
                compact(self.tps)
            ));
        }
        Ok(())
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

/// Checks that a text report and a JSON report are of one run, on what every mako prints:
/// the text has the `Total Timeouts:` line when `format` says this mako prints it, and
/// both give the same Overall TPS, errors and timeouts.
fn check_same_run(
    summary: &TextSummary,
    r: &Results,
    format: Format,
    text_name: &str,
    json_name: &str,
) -> Result<()> {
    if format.timeouts && summary.total_timeouts.is_none() {
        bail!(
            "mako text report {text_name} is incomplete: no 'Total Timeouts:' line, which \
             this mako prints (FDB 7.3 and later)"
        );
    }
    let summary_timeouts = summary.total_timeouts.unwrap_or(0);
    if summary.overall_tps != r.overall_tps {
        bail!(
            "mako reports disagree: {text_name} says Overall TPS {} but {json_name} says \
             overallTPS {}; they are not from the same run",
            summary.overall_tps,
            r.overall_tps
        );
    }
    if (summary.total_errors, summary_timeouts) != (r.total_errors, r.total_timeouts) {
        bail!(
            "mako reports disagree: {text_name} counts {} errors and {} timeouts but \
             {json_name} counts {} and {}; they are not from the same run",
            summary.total_errors,
            summary_timeouts,
            r.total_errors,
            r.total_timeouts
        );
    }
    Ok(())
}

/// Checks that the transactions and the run's and warmup's durations agree between a text
/// report and a JSON report, to rounding, where the text prints them.
fn check_same_counts(
    summary: &TextSummary,
    r: &Results,
    text_name: &str,
    json_name: &str,
) -> Result<()> {
    for (what, text_value, json_value) in [
        (
            "transactions (Total Xacts)",
            summary.total_xacts,
            r.total_xacts,
        ),
        (
            "milliseconds of run (Run Duration)",
            summary.run_duration_ms,
            (r.run_duration * 1000.0).round() as u64,
        ),
        (
            "milliseconds of warmup (Warmup Duration)",
            summary.warmup_duration_ms,
            (r.warmup_duration * 1000.0).round() as u64,
        ),
    ] {
        // Older makos print fewer lines: a line that is not there is not compared.
        if let Some(t) = text_value {
            let j = json_value;
            if t.abs_diff(j) > 1 {
                bail!(
                    "mako reports disagree: {text_name} counts {t} {what} but {json_name} \
                     {j}; they are not from the same run"
                );
            }
        }
    }
    Ok(())
}

/// The latency statistics of each operation mako sampled at least once, NaN where its
/// JSON report gives no value.
fn latency_stats(r: &Results) -> BTreeMap<String, LatencyStats> {
    let stat = |m: &BTreeMap<String, f64>, op: &str| m.get(op).copied().unwrap_or(f64::NAN);
    r.num_samples
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
        .collect()
}

/// The summary block of mako's text report; its "Overall TPS" line is printed last, so its
/// presence means the report is complete.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextSummary {
    /// "Overall TPS", TPS (integer).
    pub overall_tps: u64,
    pub total_errors: u64,
    /// "Total Timeouts", when printed (FDB 7.3 and later).
    pub total_timeouts: Option<u64>,
    /// "Total Xacts", when printed.
    pub total_xacts: Option<u64>,
    /// "Run Duration", milliseconds, when printed.
    pub run_duration_ms: Option<u64>,
    /// "Warmup Duration", milliseconds, when printed.
    pub warmup_duration_ms: Option<u64>,
}

impl TextSummary {
    /// Parses the summary block of a `mako --mode run` text report.
    ///
    /// Errors: a line every mako prints (`Overall TPS:`, `Total Errors:`) is missing (the
    /// run did not finish), a value is not a number, or a line appears more
    /// than once with different values (output of something else mixed in: which one is
    /// the report's cannot be told).
    pub fn parse(text: &str) -> Result<TextSummary> {
        let values = |key: &str| -> Vec<&str> {
            text.lines()
                .filter_map(|l| l.trim_start().strip_prefix(key))
                .map(str::trim)
                .collect()
        };
        let the_one = |key: &str| -> Result<Option<&str>> {
            let all = values(key);
            match all.split_first() {
                None => Ok(None),
                Some((first, rest)) if rest.iter().all(|v| v == first) => Ok(Some(*first)),
                Some(_) => bail!(
                    "{} '{key}' lines with different values ({}): other output is mixed into \
                     the report",
                    all.len(),
                    all.join(", ")
                ),
            }
        };
        let whole = |key: &str| -> Result<Option<u64>> {
            the_one(key)?
                .map(|v| {
                    v.parse()
                        .with_context(|| format!("'{key}' is '{v}', not a whole number"))
                })
                .transpose()
        };
        let millis = |key: &str| -> Result<Option<u64>> {
            the_one(key)?
                .map(|v| match v.parse::<f64>() {
                    Ok(s) if s.is_finite() && s >= 0.0 => Ok((s * 1000.0).round() as u64),
                    _ => bail!("'{key}' is '{v}', not a number of seconds"),
                })
                .transpose()
        };
        let required = |key: &str| -> Result<u64> {
            whole(key)?.with_context(|| {
                format!("no '{key}' line: the run did not finish (killed, or --verbose 0)")
            })
        };
        Ok(TextSummary {
            overall_tps: required("Overall TPS:")?,
            total_errors: required("Total Errors:")?,
            total_timeouts: whole("Total Timeouts:")?,
            total_xacts: whole("Total Xacts:")?,
            run_duration_ms: millis("Run Duration:")?,
            warmup_duration_ms: millis("Warmup Duration:")?,
        })
    }
}

/// mako's summary figures, as its JSON report names them; what [`check_rate`] and
/// [`check_samples`] judge, of a fresh report or a saved one.
struct Figures {
    run_duration: f64,
    warmup_duration: f64,
    total_duration: f64,
    tps: f64,
    total_xacts: u64,
    overall_tps: u64,
}

impl From<&Results> for Figures {
    fn from(r: &Results) -> Figures {
        Figures {
            run_duration: r.run_duration,
            warmup_duration: r.warmup_duration,
            total_duration: r.total_duration,
            tps: r.tps,
            total_xacts: r.total_xacts,
            overall_tps: r.overall_tps,
        }
    }
}

/// What mako's numbers must satisfy among themselves (`printReport` in mako.cpp computes
/// `tps = totalXacts / totalDuration` and `overallTPS` as its integer part): durations
/// finite and non-negative, `tps` finite, and both TPS figures the transactions over the
/// window, within rounding (durations are printed to the millisecond, `tps` to 2 decimals).
fn check_rate(r: &Figures) -> Result<()> {
    for (name, v) in [
        ("runDuration", r.run_duration),
        ("warmupDuration", r.warmup_duration),
        ("totalDuration", r.total_duration),
        ("tps", r.tps),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{name} is {}", compact(v));
        }
    }
    let (xacts, window) = (r.total_xacts as f64, r.total_duration);
    // The window's last printed digit (0.5 ms) and the tps's (0.005) bound the error.
    let slack = r.tps * 0.0005 + 0.005 * window + 1.0;
    if (r.tps * window - xacts).abs() > slack + 0.001 * xacts {
        bail!(
            "tps {} over totalDuration {window} s would be {} transactions, but totalXacts \
             is {}",
            compact(r.tps),
            compact((r.tps * window).round()),
            r.total_xacts
        );
    }
    if (r.overall_tps as f64 - r.tps).abs() >= 1.01 {
        bail!(
            "overallTPS {} is not tps {} without its fraction",
            r.overall_tps,
            compact(r.tps)
        );
    }
    Ok(())
}

/// More TPS than any FDB cluster commits (its largest published deployments commit
/// millions of transactions per second; a single host tens of thousands).
pub const MAX_TPS: f64 = 1e9;

/// The per-second samples agree with the run's TPS: their mean over the measurement window
/// (the samples after the warmup's seconds) is within a quarter of `tps`. mako cuts the
/// phases on its per-second clock, so the window's samples and `totalDuration` can differ
/// by a second's edge, never by a multiple. Also `tps` at most [`MAX_TPS`]. Fewer than 3
/// window samples are not compared.
fn check_samples(samples: &[f64], r: &Figures) -> Result<()> {
    if r.tps > MAX_TPS {
        bail!(
            "tps {} is more than any FDB cluster commits ({})",
            compact(r.tps),
            compact(MAX_TPS)
        );
    }
    if let Some(bad) = samples.iter().find(|s| !(s.is_finite() && **s >= 0.0)) {
        bail!("a per-second sample's tps is {}", compact(*bad));
    }
    let skip = (r.warmup_duration.round() as usize).min(samples.len());
    let window = &samples[skip..];
    if window.len() < 3 {
        return Ok(());
    }
    let mean = window.iter().sum::<f64>() / window.len() as f64;
    if (mean - r.tps).abs() > 0.25 * r.tps + 1.0 {
        bail!(
            "its {} per-second samples after the warmup average {} TPS, but tps is {}",
            window.len(),
            compact((mean * 100.0).round() / 100.0),
            compact(r.tps)
        );
    }
    Ok(())
}

/// Every latency mako gives (NaN: none) lies between 0 and the run's length: no operation
/// of the run took longer than the run, plus a second for the clocks' granularity.
fn check_latencies(latency_us: &BTreeMap<String, LatencyStats>, run_s: f64) -> Result<()> {
    let longest_us = (run_s + 1.0) * 1e6;
    for (op, l) in latency_us {
        for (name, v) in [
            ("min", l.min),
            ("avg", l.avg),
            ("max", l.max),
            ("p50", l.p50),
            ("p95", l.p95),
            ("p99", l.p99),
            ("p99.9", l.p99_9),
        ] {
            if !v.is_nan() && !(0.0..=longest_us).contains(&v) {
                bail!(
                    "{op} {name} latency is {} us, outside 0 to {longest_us:.0} us (the run \
                     lasted {run_s} s)",
                    compact(v)
                );
            }
        }
    }
    Ok(())
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
    run_duration: Option<f64>,
    warmup_duration: Option<f64>,
    total_duration: f64,
    total_xacts: u64,
    total_conflicts: u64,
    total_errors: u64,
    total_timeouts: Option<u64>,
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

/// `results` of a JSON report with the fields its [`Format`] lacks filled in.
struct Results {
    run_duration: f64,
    warmup_duration: f64,
    total_timeouts: u64,
    raw: RawResults,
}

impl std::ops::Deref for Results {
    type Target = RawResults;
    fn deref(&self) -> &RawResults {
        &self.raw
    }
}

impl Results {
    /// Errors: a field `format` has is missing.
    fn of(raw: RawResults, format: Format) -> Result<Results> {
        let need = |v: Option<f64>, key: &str| -> Result<f64> {
            v.with_context(|| format!("no results.{key}, which this mako writes (FDB 8.0)"))
        };
        let (run_duration, warmup_duration) = if format.warmup_fields {
            (
                need(raw.run_duration, "runDuration")?,
                need(raw.warmup_duration, "warmupDuration")?,
            )
        } else {
            (raw.total_duration, 0.0)
        };
        let total_timeouts = match (raw.total_timeouts, format.timeouts) {
            (Some(n), _) => n,
            (None, false) => 0,
            (None, true) => {
                bail!("no results.totalTimeouts, which this mako writes (FDB 7.3 and later)")
            }
        };
        Ok(Results {
            run_duration,
            warmup_duration,
            total_timeouts,
            raw,
        })
    }
}

/// FDB's largest key, bytes.
pub const MAX_KEY_BYTES: u32 = 10_000;
/// FDB's largest value, bytes.
pub const MAX_VALUE_BYTES: u32 = 100_000;

/// One operation of a mako transaction spec: its name, count and, for range operations,
/// the range (`ir3:10`: 3 insert ranges of 10 keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnOp {
    pub name: &'static str,
    pub count: u64,
    pub range: Option<u64>,
}

/// Parses a mako transaction spec (`-x`) as mako does (`bindings/c/test/mako/mako.cpp`,
/// `parseTransaction`): operation names matched longest first, an optional count (1 when
/// omitted), and for range operations `:` an optional `-` (reverse) and the range.
pub fn transaction_ops(spec: &str) -> Result<Vec<TxnOp>, String> {
    // In mako's matching order; range operations take ":<range>".
    const OPS: [(&str, bool); 15] = [
        ("grv", false),
        ("gr", true),
        ("g", false),
        ("sj", false),
        ("sgr", true),
        ("sg", false),
        ("u", false),
        ("ir", true),
        ("i", false),
        ("o", false),
        ("cr", true),
        ("c", false),
        ("scr", true),
        ("sc", false),
        ("bg", true),
    ];
    let mut ops = Vec::new();
    let mut rest = spec;
    while !rest.is_empty() {
        let (name, range_op) = OPS
            .iter()
            .find(|(n, _)| rest.starts_with(n))
            .ok_or_else(|| format!("unknown operation at '{rest}'"))?;
        rest = &rest[name.len()..];
        // Digits, if any: `Ok(None)` when there are none; too many is an error, not a
        // silent default.
        let number = |s: &mut &str| -> Result<Option<u64>, String> {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let digits = &s[..end];
            *s = &s[end..];
            if digits.is_empty() {
                return Ok(None);
            }
            digits
                .parse()
                .map(Some)
                .map_err(|_| format!("'{name}{digits}': {digits} is too large"))
        };
        let count = number(&mut rest)?.unwrap_or(1);
        if count == 0 {
            return Err(format!(
                "'{name}0': an operation's count must be at least 1"
            ));
        }
        let range = if *range_op {
            rest = rest
                .strip_prefix(':')
                .ok_or_else(|| format!("'{name}' needs ':<range>'"))?;
            rest = rest.strip_prefix('-').unwrap_or(rest);
            Some(number(&mut rest)?.ok_or_else(|| format!("'{name}' needs a number after ':'"))?)
        } else {
            None
        };
        ops.push(TxnOp { name, count, range });
    }
    if ops.is_empty() {
        return Err("it is empty".into());
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_TXT: &str = include_str!("../testdata/mako-run.txt");
    const RUN_JSON: &str = include_str!("../testdata/mako.json");

    fn parse(text: &str, json: &str) -> Result<MakoReport> {
        MakoReport::parse(text, "mako-run.txt", json, "mako.json", Format::V8_0)
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
        // Its 16 samples are one value: said, or p99 would look like the quietest metric.
        let said = r.one_valued_latency().expect("one value");
        assert!(
            said.contains("one value over its 16 samples (min = max = 22094 us, p99 22147 us)"),
            "{said}"
        );
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
    fn error_counts_that_differ_between_text_and_json_are_refused() {
        // The text counts failures the JSON does not: one of the two is not this run's.
        let text = RUN_TXT
            .replace("Total Errors:             0", "Total Errors:             7")
            .replace("Total Timeouts:           0", "Total Timeouts:           3");
        assert_ne!(text, RUN_TXT);
        let err = format!("{:#}", parse(&text, RUN_JSON).unwrap_err());
        assert!(
            err.contains("counts 7 errors and 3 timeouts but mako.json counts 0 and 0"),
            "{err}"
        );
    }

    #[test]
    fn a_tps_the_transactions_do_not_add_up_to_is_refused() {
        for (from, to, says) in [
            // TPS 1e308: no u64 count of transactions over 7 s makes it.
            (
                r#""tps": 659.89"#,
                r#""tps": 1e308"#,
                "tps 1e308 over totalDuration",
            ),
            (
                r#""totalXacts": 4669"#,
                r#""totalXacts": 46690"#,
                "totalXacts is 46690",
            ),
            (
                r#""overallTPS": 659"#,
                r#""overallTPS": 700"#,
                "overallTPS 700 is not tps 659.89",
            ),
            (
                r#""totalDuration":  7.075"#,
                r#""totalDuration": -7.075"#,
                "totalDuration is -7.075",
            ),
        ] {
            let json = RUN_JSON.replace(from, to);
            assert_ne!(json, RUN_JSON, "{from}");
            // The text's Overall TPS follows the JSON's, so only the rate check can fail.
            let text =
                RUN_TXT.replace("Overall TPS:            659", "Overall TPS:            700");
            let text = if from.contains("overallTPS") {
                text
            } else {
                RUN_TXT.to_string()
            };
            let err = format!("{:#}", parse(&text, &json).unwrap_err());
            assert!(err.contains(says), "{from} -> {err}");
        }
    }

    #[test]
    fn a_report_consistent_with_itself_but_impossible_is_refused() {
        // TPS, transactions and both Overall TPS lines scaled alike, so that every figure
        // agrees with every other but the per-second samples.
        let scaled = |factor: u64| {
            let json = RUN_JSON
                .replace(
                    r#""tps": 659.89"#,
                    &format!(r#""tps": {}"#, 659.89 * factor as f64),
                )
                .replace(
                    r#""totalXacts": 4669"#,
                    &format!(r#""totalXacts": {}"#, 4669 * factor),
                )
                .replace(
                    r#""overallTPS": 659"#,
                    &format!(r#""overallTPS": {}"#, 65989 * factor / 100),
                );
            let text = RUN_TXT
                .replace(
                    "Overall TPS:            659",
                    &format!("Overall TPS:            {}", 65989 * factor / 100),
                )
                .replace(
                    "Total Xacts:           4669",
                    &format!("Total Xacts:           {}", 4669 * factor),
                );
            format!("{:#}", parse(&text, &json).unwrap_err())
        };
        let err = scaled(1000);
        assert!(
            err.contains("7 per-second samples after the warmup average 660.47 TPS"),
            "{err}"
        );
        let err = scaled(1_000_000_000);
        assert!(err.contains("more than any FDB cluster commits"), "{err}");
    }

    #[test]
    fn text_totals_and_durations_that_differ_from_the_json_are_refused() {
        for (from, to, says) in [
            (
                "Total Xacts:           4669",
                "Total Xacts:           4000",
                "counts 4000 transactions (Total Xacts) but mako.json 4669",
            ),
            (
                "Run Duration:        10.097",
                "Run Duration:        20.097",
                "counts 20097 milliseconds of run",
            ),
            (
                "Warmup Duration:      3.021",
                "Warmup Duration:      0.000",
                "counts 0 milliseconds of warmup",
            ),
        ] {
            let text = RUN_TXT.replace(from, to);
            assert_ne!(text, RUN_TXT, "{from}");
            let err = format!("{:#}", parse(&text, RUN_JSON).unwrap_err());
            assert!(err.contains(says), "{from} -> {err}");
        }
    }

    #[test]
    fn a_stray_overall_tps_line_is_refused_not_taken() {
        // An "Overall TPS:" line may be printed by something else: two that differ are
        // refused, not the first one taken.
        let text = format!("Overall TPS:            99999\n{RUN_TXT}");
        let err = format!("{:#}", parse(&text, RUN_JSON).unwrap_err());
        assert!(
            err.contains("2 'Overall TPS:' lines with different values (99999, 659)"),
            "{err}"
        );
        // The same line twice is the same report.
        let twice = format!("{RUN_TXT}\nOverall TPS:            659\n");
        assert!(parse(&twice, RUN_JSON).is_ok());
    }

    #[test]
    fn a_latency_longer_than_the_run_is_refused() {
        // A p99 of 1e308 us would reach the report's chart as +inf%.
        let json = RUN_JSON.replace(
            r#""p99Latency": {"GET": 1411"#,
            r#""p99Latency": {"GET": 1e308"#,
        );
        assert_ne!(json, RUN_JSON);
        let err = format!("{:#}", parse(RUN_TXT, &json).unwrap_err());
        assert!(
            err.contains("GET p99 latency is 1e308 us, outside 0 to 11097000 us"),
            "{err}"
        );
        let json = RUN_JSON.replace(
            r#""minLatency": {"GET": 342"#,
            r#""minLatency": {"GET": -1"#,
        );
        assert!(parse(RUN_TXT, &json).is_err());
    }

    #[test]
    fn a_window_other_than_the_one_asked_is_not_a_valid_measurement() {
        let r = parse(RUN_TXT, RUN_JSON).unwrap();
        // The fixture asked --seconds 10 --warmup_seconds 3 and measured 7.075 s.
        assert_eq!(r.window_matches(10.0, 3.0), Ok(()));
        let why = r.window_matches(60.0, 10.0).unwrap_err();
        assert!(
            why.contains("measured 7.075 s, but 60 s with a warmup of 10 s (a window of 50 s)"),
            "{why}"
        );
        // A mako that ignores the warmup (measures from 0 s) is caught too.
        assert!(r.window_matches(10.0, 5.0).is_err());
        // 0.2 s measured with no warmup where 4 s and 2 s were asked.
        let short = MakoReport {
            run_duration_s: 0.2,
            warmup_duration_s: 0.0,
            measured_duration_s: 0.2,
            ..r
        };
        assert!(short.window_matches(4.0, 2.0).is_err());
    }

    #[test]
    fn the_last_per_second_tps_is_read_for_progress() {
        assert_eq!(last_sample_tps(RUN_TXT), Some(646.68));
        let first = RUN_TXT.lines().take(3).collect::<Vec<_>>().join("\n");
        assert_eq!(last_sample_tps(&first), Some(847.53));
        assert_eq!(last_sample_tps(""), None);
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
                let _ = MakoReport::parse(text, "t", &json[..cut], "j", Format::V8_0);
            }
            for cut in (0..text.len()).filter(|i| text.is_char_boundary(*i)) {
                let _ = MakoReport::parse(&text[..cut], "t", json, "j", Format::V8_0);
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
                    if let Ok(r) = MakoReport::parse(text, "t", &mutated, "j", Format::V8_0) {
                        let _ = r.validity();
                    }
                }
            }
        }
        for cut in (0..status.len())
            .step_by(3)
            .filter(|i| status.is_char_boundary(*i))
        {
            let _ = crate::status::parse_database_status(&status[..cut]);
        }
        for cut in 0..trace.len() {
            let _ = (
                crate::trace::knob_problems(&trace[..cut], &trace[..cut]),
                crate::trace::trace_errors(&trace[..cut], 3),
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
            let _ = transaction_ops(spec);
        }
    }

    #[test]
    fn build_mode_text_report_has_a_summary() {
        let s = TextSummary::parse(include_str!("../testdata/mako-build.txt")).unwrap();
        assert_eq!(
            (s.overall_tps, s.total_errors, s.total_timeouts),
            (401, 0, Some(0))
        );
    }

    fn release_fixture(name: &str) -> String {
        let path = format!("{}/testdata/releases/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    const OLDER: Format = Format {
        warmup_fields: false,
        timeouts: false,
    };
    const V7_3: Format = Format {
        warmup_fields: false,
        timeouts: true,
    };

    /// Each release's report, built from its printing code
    /// (`testdata/releases/`), read as that release writes it.
    #[test]
    fn each_releases_report_is_read_with_its_own_fields() {
        for (release, format, xacts, tps) in [
            ("7.1", OLDER, 14622, 1385),
            ("7.2", OLDER, 14277, 1412),
            ("7.3", V7_3, 14199, 1405),
            ("7.4", V7_3, 14259, 1411),
        ] {
            let text = release_fixture(&format!("mako-run-{release}.txt"));
            let json = release_fixture(&format!("mako-json-{release}.json"));
            let r = MakoReport::parse(&text, "t", &json, "j", format)
                .unwrap_or_else(|e| panic!("{release}: {e:#}"));
            assert_eq!(r.total_xacts, xacts, "{release}");
            assert_eq!(r.overall_tps, tps, "{release}");
            assert_eq!(r.warmup_duration_s, 0.0, "{release}");
            assert_eq!(r.run_duration_s, r.measured_duration_s, "{release}");
            assert_eq!(r.total_timeouts, 0, "{release}");
            assert!(r.transaction_latency().is_some(), "{release}");
            r.check().unwrap();
            // Read as 8.0's, the missing fields are named, not defaulted.
            let err = MakoReport::parse(&text, "t", &json, "j", Format::V8_0).unwrap_err();
            assert!(
                format!("{err:#}").contains("no results.runDuration"),
                "{err:#}"
            );
            // The window after a 3 s warmup: the mean of the samples after the third.
            let w = r.clone().measured_after(3.0).unwrap();
            let samples = &r.samples_tps[3..];
            let mean = samples.iter().sum::<f64>() / samples.len() as f64;
            assert_eq!(w.tps, mean);
            assert_eq!(w.warmup_duration_s, 3.0);
            assert!((w.measured_duration_s - (r.run_duration_s - 3.0)).abs() < 1e-9);
            w.check().unwrap();
            assert!(w.window_matches(10.0, 3.0).is_ok(), "{release}");
        }
        // 7.3 prints timeouts: a report without them is incomplete there.
        let text = release_fixture("mako-run-7.1.txt");
        let json = release_fixture("mako-json-7.1.json");
        let err = MakoReport::parse(&text, "t", &json, "j", V7_3).unwrap_err();
        assert!(format!("{err:#}").contains("totalTimeouts"), "{err:#}");
        let json = release_fixture("mako-json-7.3.json");
        let text = release_fixture("mako-run-7.3.txt").replace("Total Timeouts:           0\n", "");
        let err = MakoReport::parse(&text, "t", &json, "j", V7_3).unwrap_err();
        assert!(
            format!("{err:#}").contains("no 'Total Timeouts:' line"),
            "{err:#}"
        );
        // And 8.0's own report, with its warmup.
        let r = MakoReport::parse(
            &release_fixture("mako-run-8.0.txt"),
            "t",
            &release_fixture("mako-json-8.0.json"),
            "j",
            Format::V8_0,
        )
        .unwrap();
        assert!(r.warmup_duration_s > 0.0);
        assert!(r.clone().measured_after(3.0).is_err());
    }
}
