//! FDB's distributed test harness, `fdbserver -r multitest -f SPEC`, running the ReadWrite
//! workload on tester processes (`fdbserver -c test`): the spec the gate writes
//! ([`ReadWriteSpec`]) and the results it reads back ([`parse_stdout`], [`parse_trace`],
//! [`ReadWriteResult`]).
//!
//! Pure: callers read the files and pass their text. Sources, FDB 8.0 (main): the spec
//! parser `fdbserver/tester/TestSpecParser.cpp`, the run `fdbserver/tester/test.cpp`,
//! the metrics `fdbserver/tester/DatabaseMaintenance.cpp` (`aggregateMetrics`,
//! `logMetrics`) and `fdbserver/workloads/ReadWrite.cpp` (`getMetrics`); in 7.2-7.4 the
//! tester is `fdbserver/tester.actor.cpp` and the workload `workloads/ReadWrite.actor.cpp`,
//! with the same lines, events and metric names. The traps handled here, seen on a real
//! 8.0 run (`testdata/multitest/`):
//! - stdout has one `Metric (tester, index): NAME, VALUE, FORMATTED` line per tester and
//!   metric, and no whole-test figures; names hold ", " (`Median Latency (ms, averaged)`),
//!   so a line is split from the right. The whole test's figures are in the trace
//!   (`Metric` events after `TestFetchingMetrics`), to 6 significant digits; [`combine`]
//!   computes them from stdout as FDB does: a sum over testers, or a mean for the metrics
//!   FDB marks averaged (durations and every latency: a combined "98% latency" is the mean
//!   of the testers' 98th percentiles, not a percentile);
//! - `transactionsPerSecond` is the whole test's target, split over the testers;
//! - the process exits 0 when a test failed, or when the spec file cannot be opened: only
//!   the last line, `N tests passed; M tests failed.`, or `TestResults Passed="1"` tell;
//! - an unknown workload option fails the run (exit 1, `Fatal Error: Invalid test
//!   specification`) but only the testers' stderr names the option;
//! - the harness's defaults disturb a real cluster: it waits for quiescence (minutes),
//!   adds failure workloads (`Attrition` reboots processes) and a consistency check, so the
//!   spec turns all three off;
//! - overdriving a target prints nothing: the measured TPS stays below it, and a
//!   read-only load has no retries even then.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::mako::nan_if_null;

/// The ReadWrite workload of one test (`[[test]]` with one `[[test.workload]]`): a
/// transaction is type A with probability `1 - alpha`, else type B, each with its
/// number of point reads and writes of `key_bytes`/`value_bytes` rows among
/// `node_count` (option names and defaults: `fdbserver/workloads/ReadWrite.cpp`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadWriteSpec {
    /// `testTitle`: letters, digits, `-` and `_` only (it is printed back in the output).
    pub title: String,
    /// `testDuration`, seconds; the metrics cover its middle 75% (`discardEdgeMeasurements`).
    pub duration_s: f64,
    /// `transactionsPerSecond`: the whole test's target TPS, split over the testers.
    pub target_tps: f64,
    /// `actorCountPerTester`: concurrent transactions of each tester.
    pub actors_per_tester: u32,
    /// `nodeCount`: rows of the key space.
    pub node_count: u64,
    /// `keyBytes` (at least 16) and `valueBytes`.
    pub key_bytes: u32,
    pub value_bytes: u32,
    /// `readsPerTransactionA`, `writesPerTransactionA`, `readsPerTransactionB`,
    /// `writesPerTransactionB`.
    pub reads_a: u32,
    pub writes_a: u32,
    pub reads_b: u32,
    pub writes_b: u32,
    /// `alpha`: the probability of a type B transaction, 0 to 1.
    pub alpha: f64,
    /// `clearAfterTest`: clear every normal key when the test ends. FDB's default is
    /// true only in simulation (`g_network->isSimulated()`, `WorkloadUtils.h` of 8.0,
    /// `workloads.actor.h` of 7.3), so on a real cluster the rows stay unless asked.
    pub clear_after_test: bool,
}

impl ReadWriteSpec {
    /// The spec as TOML for `fdbserver -r multitest -f FILE.toml`, with the harness's
    /// cluster-disturbing defaults turned off (`waitForQuiescence`, `runFailureWorkloads`,
    /// `runConsistencyCheck`). Errors: a value FDB would refuse or misread.
    pub fn to_toml(&self) -> Result<String> {
        self.check()?;
        Ok(format!(
            "[[test]]\ntestTitle = '{}'\nwaitForQuiescence = false\nrunConsistencyCheck = false\n\
             runFailureWorkloads = false\nclearAfterTest = {}\n\n    [[test.workload]]\n    testName = 'ReadWrite'\n\
             \x20   testDuration = {:?}\n    transactionsPerSecond = {:?}\n\
             \x20   actorCountPerTester = {}\n    nodeCount = {}\n    keyBytes = {}\n\
             \x20   valueBytes = {}\n    readsPerTransactionA = {}\n    writesPerTransactionA = {}\n\
             \x20   readsPerTransactionB = {}\n    writesPerTransactionB = {}\n    alpha = {:?}\n",
            self.title,
            self.clear_after_test,
            self.duration_s,
            self.target_tps,
            self.actors_per_tester,
            self.node_count,
            self.key_bytes,
            self.value_bytes,
            self.reads_a,
            self.writes_a,
            self.reads_b,
            self.writes_b,
            self.alpha,
        ))
    }

    fn check(&self) -> Result<()> {
        let title_ok = !self.title.is_empty()
            && self
                .title
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !title_ok {
            bail!("test title {:?}: use letters, digits, - and _", self.title);
        }
        // ReadWrite asserts keyBytes >= 16 (`ReadWriteCommon`'s constructor).
        if self.key_bytes < 16 {
            bail!(
                "keyBytes {} is below ReadWrite's minimum of 16",
                self.key_bytes
            );
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            bail!(
                "testDuration {} s is not a positive duration",
                self.duration_s
            );
        }
        if !(self.target_tps.is_finite() && self.target_tps > 0.0) {
            bail!(
                "transactionsPerSecond {} is not a positive rate",
                self.target_tps
            );
        }
        if !(0.0..=1.0).contains(&self.alpha) {
            bail!("alpha {} is not a probability (0 to 1)", self.alpha);
        }
        if self.actors_per_tester == 0 || self.node_count == 0 {
            bail!("actorCountPerTester and nodeCount must be at least 1");
        }
        Ok(())
    }
}

/// One test's metrics as printed on stdout: per tester (in tester order), metric name
/// (`ReadWrite.Transactions/sec`) -> value.
#[derive(Debug, Clone, PartialEq)]
pub struct TestMetrics {
    pub title: String,
    pub testers: Vec<BTreeMap<String, f64>>,
}

/// What `fdbserver -r multitest` printed on stdout.
#[derive(Debug, Clone, PartialEq)]
pub struct MultitestStdout {
    /// The tests whose metrics were fetched, in run order.
    pub tests: Vec<TestMetrics>,
    /// The last line's `N tests passed; M tests failed.`, if the run got that far.
    pub passed: Option<u32>,
    pub failed: Option<u32>,
}

impl MultitestStdout {
    /// Whether every test passed: the summary line is there and says 0 failed. (The
    /// process exits 0 also when a test failed.)
    pub fn all_passed(&self) -> bool {
        self.failed == Some(0) && self.passed.is_some_and(|p| p > 0)
    }
}

/// Parses multitest's stdout. Errors: a `Metric` line that does not read, or metric
/// lines before any `fetching metrics (TITLE)...` line.
pub fn parse_stdout(text: &str) -> Result<MultitestStdout> {
    let mut tests: Vec<TestMetrics> = Vec::new();
    let (mut passed, mut failed) = (None, None);
    for line in text.lines() {
        if let Some(title) = line
            .strip_prefix("fetching metrics (")
            .and_then(|r| r.strip_suffix(")..."))
        {
            tests.push(TestMetrics {
                title: title.to_string(),
                testers: Vec::new(),
            });
        } else if line.starts_with("Metric (") {
            let (tester, name, value) =
                metric_line(line).with_context(|| format!("multitest metric line {line:?}"))?;
            let Some(test) = tests.last_mut() else {
                bail!("multitest printed {line:?} before any 'fetching metrics' line");
            };
            if test.testers.len() <= tester {
                test.testers.resize(tester + 1, BTreeMap::new());
            }
            test.testers[tester].insert(name, value);
        } else if let Some((p, f)) = summary_line(line) {
            (passed, failed) = (Some(p), Some(f));
        }
    }
    Ok(MultitestStdout {
        tests,
        passed,
        failed,
    })
}

/// Tester indices a `Metric` line may name: far more testers than any cluster runs (the
/// gate starts at most 64, a qualification cluster's remote ones are tens). A larger
/// index is refused before it sizes the per-tester table.
pub const MAX_TESTER_INDEX: usize = 9_999;

/// `Metric (0, 14): ReadWrite.Median Latency (ms, averaged), 0.761967, 0.762` ->
/// (tester 0, name, value); the value may be `-inf` (an empty sample's maximum).
fn metric_line(line: &str) -> Result<(usize, String, f64)> {
    let rest = line.strip_prefix("Metric (").context("no 'Metric ('")?;
    let (indices, rest) = rest.split_once("): ").context("no '): '")?;
    let tester: usize = indices
        .split(", ")
        .next()
        .and_then(|t| t.trim().parse().ok())
        .context("no tester index")?;
    if tester > MAX_TESTER_INDEX {
        bail!(
            "tester index {tester} is beyond any multitest's testers (at most {MAX_TESTER_INDEX})"
        );
    }
    let mut fields = rest.rsplitn(3, ", ");
    let _formatted = fields.next().context("no formatted value")?;
    let value = fields.next().context("no value")?;
    let name = fields.next().context("no name")?;
    let value: f64 = value
        .trim()
        .parse()
        .with_context(|| format!("value {value:?} is not a number"))?;
    if name.is_empty() {
        bail!("empty metric name");
    }
    Ok((tester, name.to_string(), value))
}

/// `1 tests passed; 0 tests failed.` -> (1, 0).
fn summary_line(line: &str) -> Option<(u32, u32)> {
    let (p, rest) = line.split_once(" tests passed; ")?;
    let f = rest.strip_suffix(" tests failed.")?;
    Some((p.trim().parse().ok()?, f.trim().parse().ok()?))
}

/// Whether FDB averages metric `name` over the testers instead of summing it
/// (`Averaged::True` in ReadWrite's `getMetrics`): its durations and every latency.
pub fn is_averaged(name: &str) -> bool {
    let name = name.strip_prefix("ReadWrite.").unwrap_or(name);
    name == "Measured Duration" || name == "Mean load time (seconds)" || name.contains("Latency")
}

/// The whole test's metrics from the testers' (`aggregateMetrics`): each metric summed
/// over the testers that reported it, or averaged where [`is_averaged`].
pub fn combine(testers: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut all: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for t in testers {
        for (name, v) in t {
            all.entry(name).or_default().push(*v);
        }
    }
    all.into_iter()
        .map(|(name, vs)| {
            let sum: f64 = vs.iter().sum();
            let v = if is_averaged(name) {
                sum / vs.len() as f64
            } else {
                sum
            };
            (name.to_string(), v)
        })
        .collect()
}

/// One test's results in the multitest process's trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceTest {
    /// `TestFetchingMetrics WorkloadTitle`.
    pub title: String,
    /// `Metric` events (combined over testers, 6 significant digits), by name.
    pub metrics: BTreeMap<String, f64>,
    /// The `Reporting Clients` metric: testers that sent metrics.
    pub reporting_clients: Option<u32>,
    /// `TestResults Passed`, if the test got that far.
    pub passed: Option<bool>,
}

/// The tests of a multitest process's trace XML (one `<Event .../>` per line): each from
/// its `TestFetchingMetrics` through the `Metric` events to its `TestResults`.
pub fn parse_trace(trace: &str) -> Vec<TraceTest> {
    let mut tests: Vec<TraceTest> = Vec::new();
    for line in trace.lines() {
        match crate::trace::attr(line, "Type").as_deref() {
            Some("TestFetchingMetrics") => tests.push(TraceTest {
                title: crate::trace::attr(line, "WorkloadTitle").unwrap_or_default(),
                metrics: BTreeMap::new(),
                reporting_clients: None,
                passed: None,
            }),
            Some("Metric") => {
                let (Some(test), Some(name), Some(value)) = (
                    tests.last_mut(),
                    crate::trace::attr(line, "Name"),
                    crate::trace::attr(line, "Value").and_then(|v| v.parse::<f64>().ok()),
                ) else {
                    continue;
                };
                if name == "Reporting Clients" {
                    test.reporting_clients = Some(value as u32);
                } else {
                    test.metrics.insert(xml_unescape(&name), value);
                }
            }
            Some("TestResults") => {
                if let Some(test) = tests.last_mut() {
                    test.passed = crate::trace::attr(line, "Passed").map(|p| p == "1");
                }
            }
            _ => {}
        }
    }
    tests
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Transaction latencies of ReadWrite, milliseconds, whole test (each the mean of the
/// testers' figure); NaN where FDB printed none (saved as JSON null).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    #[serde(deserialize_with = "nan_if_null")]
    pub mean_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p50_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p90_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p98_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub max_ms: f64,
}

/// A ReadWrite test's whole-test results, from [`combine`] or [`TraceTest::metrics`];
/// NaN where FDB printed none (saved as JSON null).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadWriteResult {
    /// `Transactions/sec`: committed (or, read-only, completed) transactions per second
    /// over the measured window, summed over testers.
    #[serde(deserialize_with = "nan_if_null")]
    pub tps: f64,
    /// `Retries`: transaction attempts retried in the window (conflicts, too old); above 0
    /// the load was more than the cluster took without contention.
    #[serde(deserialize_with = "nan_if_null")]
    pub retries: f64,
    /// `Measured Duration`, seconds: the nominal window (75% of `testDuration`).
    #[serde(deserialize_with = "nan_if_null")]
    pub measured_s: f64,
    /// Whole-transaction latency, retries included (`Mean Latency`, `Median`, `90%`,
    /// `98%`, `Max Latency (ms, averaged)`).
    pub latency: Latencies,
    /// `Mean`/`Median Row Read Latency (ms)`: one point read.
    #[serde(deserialize_with = "nan_if_null")]
    pub read_mean_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub read_p50_ms: f64,
    /// `Mean`/`Median GRV Latency (ms)`: getting a read version.
    #[serde(deserialize_with = "nan_if_null")]
    pub grv_mean_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub grv_p50_ms: f64,
    /// `Mean`/`Median Commit Latency (ms)`: successful commits only (0 for read-only).
    #[serde(deserialize_with = "nan_if_null")]
    pub commit_mean_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub commit_p50_ms: f64,
}

impl ReadWriteResult {
    /// The figures of `metrics` (names with or without the `ReadWrite.` prefix). Errors:
    /// a figure missing, named.
    pub fn from_metrics(metrics: &BTreeMap<String, f64>) -> Result<ReadWriteResult> {
        let get = |name: &str| -> Result<f64> {
            metrics
                .get(&format!("ReadWrite.{name}"))
                .or_else(|| metrics.get(name))
                .copied()
                .with_context(|| format!("the ReadWrite results have no '{name}'"))
        };
        Ok(ReadWriteResult {
            tps: get("Transactions/sec")?,
            retries: get("Retries")?,
            measured_s: get("Measured Duration")?,
            latency: Latencies {
                mean_ms: get("Mean Latency (ms)")?,
                p50_ms: get("Median Latency (ms, averaged)")?,
                p90_ms: get("90% Latency (ms, averaged)")?,
                p98_ms: get("98% Latency (ms, averaged)")?,
                max_ms: get("Max Latency (ms, averaged)")?,
            },
            read_mean_ms: get("Mean Row Read Latency (ms)")?,
            read_p50_ms: get("Median Row Read Latency (ms, averaged)")?,
            grv_mean_ms: get("Mean GRV Latency (ms)")?,
            grv_p50_ms: get("Median GRV Latency (ms, averaged)")?,
            commit_mean_ms: get("Mean Commit Latency (ms)")?,
            commit_p50_ms: get("Median Commit Latency (ms, averaged)")?,
        })
    }
}

/// The one ReadWrite test of a multitest run with `testers` testers, from its stdout.
/// Errors, each saying what happened: the run did not finish (no summary line), a test
/// failed (the process exits 0 even then), the stdout holds no test or more than one, a
/// metric is missing, or another number of testers reported than were started (multitest
/// uses every tester-class process of the cluster, so a stray tester would take a share of
/// the load).
pub fn read_run(stdout: &str, testers: usize) -> Result<ReadWriteResult> {
    let out = parse_stdout(stdout)?;
    match (out.passed, out.failed) {
        (None, _) | (_, None) => bail!(
            "multitest printed no 'N tests passed; M tests failed.' line: the run did not finish"
        ),
        (Some(p), Some(f)) if f > 0 || p == 0 => {
            bail!("multitest reported {p} tests passed and {f} failed")
        }
        _ => {}
    }
    let [test] = out.tests.as_slice() else {
        bail!(
            "multitest printed the metrics of {} tests; the gate runs exactly one",
            out.tests.len()
        );
    };
    if test.testers.len() != testers || test.testers.iter().any(BTreeMap::is_empty) {
        bail!(
            "test {} has metrics from {} testers, but {testers} were started: another \
             tester-class process joined the cluster (multitest uses every one it finds)",
            test.title,
            test.testers.iter().filter(|t| !t.is_empty()).count()
        );
    }
    ReadWriteResult::from_metrics(&combine(&test.testers))
        .with_context(|| format!("test {}", test.title))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/testdata/multitest/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// Relative difference within the trace's 6 significant digits.
    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() <= 5e-6 * a.abs().max(b.abs())
    }

    #[test]
    fn a_real_point_read_run_reads_per_tester_and_combined() {
        let out = parse_stdout(&data("pointread-stdout.txt")).unwrap();
        assert!(out.all_passed(), "{out:?}");
        assert_eq!((out.passed, out.failed), (Some(1), Some(0)));
        assert_eq!(out.tests.len(), 1);
        let test = &out.tests[0];
        assert_eq!(test.title, "PointRead");
        assert_eq!(test.testers.len(), 2);
        assert_eq!(test.testers[0].len(), 30);
        assert_eq!(test.testers[0]["ReadWrite.Transactions/sec"], 999.4);
        assert_eq!(test.testers[1]["ReadWrite.Transactions/sec"], 1008.733333);
        assert_eq!(
            test.testers[0]["ReadWrite.Max Commit Latency (ms, averaged)"],
            f64::NEG_INFINITY
        );
        let all = combine(&test.testers);
        let r = ReadWriteResult::from_metrics(&all).unwrap();
        assert!(close(r.tps, 2008.133333), "{r:?}");
        assert_eq!(r.retries, 0.0);
        assert_eq!(r.measured_s, 15.0);
        // Latencies are the mean of the testers' figures.
        assert!(
            close(r.latency.max_ms, (11.746645 + 14.306307) / 2.0),
            "{r:?}"
        );
        assert!(r.latency.p50_ms < r.latency.p90_ms && r.latency.p90_ms < r.latency.p98_ms);
    }

    #[test]
    fn combining_stdout_as_fdb_does_gives_the_traces_whole_test_figures() {
        // FDB's own aggregation, traced, against ours from the per-tester lines, on four
        // real runs: a point-read load, an overdriven one, a contended read-write one with
        // retries, and a spec of two tests.
        for run in ["pointread", "overdriven", "contention", "two-tests"] {
            let out = parse_stdout(&data(&format!("{run}-stdout.txt"))).unwrap();
            let traced = parse_trace(&data(&format!("{run}-trace.xml")));
            assert_eq!(out.tests.len(), traced.len(), "{run}");
            for (test, t) in out.tests.iter().zip(&traced) {
                assert_eq!(test.title, t.title, "{run}");
                assert_eq!(t.passed, Some(true), "{run}");
                assert_eq!(t.reporting_clients, Some(test.testers.len() as u32));
                let ours = combine(&test.testers);
                assert_eq!(
                    ours.keys().collect::<Vec<_>>(),
                    t.metrics.keys().collect::<Vec<_>>(),
                    "{run}"
                );
                for (name, v) in &ours {
                    assert!(
                        close(*v, t.metrics[name]),
                        "{run} {name}: {v} vs {}",
                        t.metrics[name]
                    );
                }
            }
        }
    }

    #[test]
    fn retries_and_a_missed_target_are_in_the_figures() {
        // Contention: 100 keys, 2 reads and 2 writes per transaction, 2 testers.
        let out = parse_stdout(&data("contention-stdout.txt")).unwrap();
        let r = ReadWriteResult::from_metrics(&combine(&out.tests[0].testers)).unwrap();
        assert!(r.retries > 0.0 && r.commit_mean_ms > 0.0, "{r:?}");
        // Overdriven: a 200000 TPS target met by 16 actors per tester.
        let out = parse_stdout(&data("overdriven-stdout.txt")).unwrap();
        let r = ReadWriteResult::from_metrics(&combine(&out.tests[0].testers)).unwrap();
        assert!(r.tps < 0.5 * 200_000.0 && r.retries == 0.0, "{r:?}");
    }

    #[test]
    fn a_tester_index_no_cluster_has_is_refused_not_allocated() {
        // Found by the fuzzer (ci/fuzz.sh, multitest_results): index 777777777777777770
        // sized the per-tester table and aborted on capacity overflow.
        let line = "Metric (777777777777777770, 21): ReadWrite.Transactions/sec, 5.0, 5.0";
        let text = format!("fetching metrics (PointReadA)...\n{line}\n");
        let e = format!("{:#}", parse_stdout(&text).unwrap_err());
        assert!(
            e.contains("tester index 777777777777777770 is beyond any multitest's testers"),
            "{e}"
        );
        let last = line.replace("777777777777777770", &MAX_TESTER_INDEX.to_string());
        let out = parse_stdout(&format!("fetching metrics (PointReadA)...\n{last}\n")).unwrap();
        assert_eq!(out.tests[0].testers.len(), MAX_TESTER_INDEX + 1);
    }

    #[test]
    fn a_spec_fdb_refused_has_no_metrics_and_no_summary() {
        let out = parse_stdout(&data("bad-option-stdout.txt")).unwrap();
        assert!(out.tests.is_empty() && !out.all_passed(), "{out:?}");
        assert_eq!(out.passed, None);
        // The option's name is only on the testers' stderr.
        assert!(data("bad-option-tester-stderr.txt").contains("'actorCountPerClient'"));
        assert!(data("bad-option-stderr.txt").contains("Invalid test specification"));
    }

    #[test]
    fn broken_metric_lines_are_errors_that_quote_the_line() {
        for bad in [
            "fetching metrics (T)...\nMetric (0, 1): ReadWrite.Transactions/sec, fast, 1",
            "fetching metrics (T)...\nMetric (x, 1): A, 1.0, 1",
            "Metric (0, 1): ReadWrite.Transactions/sec, 1.0, 1",
            "fetching metrics (T)...\nMetric (0, 1): , 1.0, 1",
        ] {
            let err = format!("{:#}", parse_stdout(bad).unwrap_err());
            assert!(
                err.contains("Metric (") || err.contains("metric"),
                "{bad}: {err}"
            );
        }
        let missing = BTreeMap::from([("ReadWrite.Transactions/sec".to_string(), 1.0)]);
        let err = ReadWriteResult::from_metrics(&missing).unwrap_err();
        assert!(format!("{err:#}").contains("'Retries'"), "{err:#}");
    }

    #[test]
    fn a_run_is_read_only_when_it_finished_passed_and_had_the_testers_started() {
        let ok = read_run(&data("pointread-stdout.txt"), 2).unwrap();
        assert!(close(ok.tps, 2008.133333), "{ok:?}");
        // The real run had two testers: one asked for means a stray one joined.
        let err = format!(
            "{:#}",
            read_run(&data("pointread-stdout.txt"), 1).unwrap_err()
        );
        assert!(err.contains("from 2 testers, but 1 were started"), "{err}");
        let err = format!(
            "{:#}",
            read_run(&data("two-tests-stdout.txt"), 2).unwrap_err()
        );
        assert!(err.contains("the metrics of 2 tests"), "{err}");
        let err = format!(
            "{:#}",
            read_run(&data("bad-option-stdout.txt"), 2).unwrap_err()
        );
        assert!(err.contains("did not finish"), "{err}");
        let failed = data("pointread-stdout.txt").replace(
            "1 tests passed; 0 tests failed.",
            "0 tests passed; 1 tests failed.",
        );
        let err = format!("{:#}", read_run(&failed, 2).unwrap_err());
        assert!(err.contains("0 tests passed and 1 failed"), "{err}");
        // Retries are read, not judged, here.
        let r = read_run(&data("contention-stdout.txt"), 2).unwrap();
        assert!(r.retries > 0.0, "{r:?}");
    }

    #[test]
    fn a_real_fdb_7_3_run_reads_the_same() {
        // FDB 7.3.79 through the gate (1 tester, 20 s): 7.3 prints no `Test complete` and
        // one `test clients passed` line (tester.actor.cpp), the metrics as 8.0.
        let text = data("pointread-7.3-stdout.txt");
        assert!(!text.contains("Test complete"));
        let r = read_run(&text, 1).unwrap();
        assert!(close(r.tps, 36867.066667), "{r:?}");
        assert_eq!((r.retries, r.measured_s), (0.0, 15.0));
        assert!(
            r.latency.p50_ms > 0.0 && r.latency.p50_ms < r.latency.p98_ms,
            "{r:?}"
        );
        assert_eq!(r.commit_mean_ms, 0.0, "read-only");
    }

    #[test]
    fn a_result_survives_json_with_an_empty_statistic() {
        let mut r = read_run(&data("pointread-stdout.txt"), 2).unwrap();
        r.commit_p50_ms = f64::NAN;
        let back: ReadWriteResult =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert!(back.commit_p50_ms.is_nan() && back.tps == r.tps, "{back:?}");
    }

    #[test]
    fn the_spec_is_the_one_that_ran_for_real() {
        let spec = ReadWriteSpec {
            title: "PointRead".into(),
            duration_s: 20.0,
            target_tps: 2000.0,
            actors_per_tester: 16,
            node_count: 10_000,
            key_bytes: 16,
            value_bytes: 100,
            reads_a: 1,
            writes_a: 0,
            reads_b: 1,
            writes_b: 9,
            alpha: 0.0,
            clear_after_test: false,
        };
        let toml = spec.to_toml().unwrap();
        assert!(toml.contains("clearAfterTest = false\n"), "{toml}");
        // Every line of the spec of the real run (testdata) is in ours; ours adds the
        // type B mix, which alpha 0 never runs, and writes rates as floats.
        for line in data("pointread.toml").lines() {
            let line = line
                .replace(
                    "transactionsPerSecond = 2000",
                    "transactionsPerSecond = 2000.0",
                )
                .replace("alpha = 0", "alpha = 0.0");
            assert!(toml.contains(&line), "{line:?} missing from\n{toml}");
        }
        for (bad, why) in [
            (
                ReadWriteSpec {
                    key_bytes: 8,
                    ..spec.clone()
                },
                "minimum of 16",
            ),
            (
                ReadWriteSpec {
                    title: "a b'".into(),
                    ..spec.clone()
                },
                "test title",
            ),
            (
                ReadWriteSpec {
                    alpha: 1.5,
                    ..spec.clone()
                },
                "probability",
            ),
            (
                ReadWriteSpec {
                    target_tps: f64::NAN,
                    ..spec.clone()
                },
                "positive rate",
            ),
        ] {
            let err = format!("{:#}", bad.to_toml().unwrap_err());
            assert!(err.contains(why), "{err}");
        }
    }
}
