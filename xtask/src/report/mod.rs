//! Report stage: judgements and trial records -> `summary.json`, `results.tsv`,
//! `junit.xml` and the terminal table.
//!
//! Each format is a pure function returning a `String` (golden-tested); `write` writes
//! the files. JUnit is written with quick-junit, not junit-report: junit-report 0.9.1 has
//! no `<properties>` and puts text in CDATA unescaped, so an ESC byte or `]]>` from a mako
//! or fdbserver log makes the file ill-formed XML; quick-junit escapes both and writes
//! properties.

use std::fmt::Write as _;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use schemars::JsonSchema;
use serde::Serialize;

mod chart;
pub mod history;
pub mod html;
pub mod sweep;
pub mod write;

use crate::{
    config::Direction,
    judge::{exit_code, ArmStats, Judgement, Metric, Verdict},
    results::{
        fs::json,
        trial::{Phase, TrialRecord},
    },
};

/// What `--json` prints when the run ends in an error before any verdict (a refused flag,
/// a missing tree, a failed build): an [`ErrorSummary`].
pub fn error_json(exit_code: u8, error: &str) -> String {
    serde_json::to_string(&ErrorSummary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        exit_code,
        error,
    })
    .expect("a struct of a number and a string serializes")
}

/// What `--json` prints for a run that ended before any verdict.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorSummary<'a> {
    /// [`SUMMARY_SCHEMA_VERSION`].
    #[schemars(extend("const" = SUMMARY_SCHEMA_VERSION))]
    pub schema_version: u32,
    /// 2 (an error) or 64 (a usage error).
    pub exit_code: u8,
    /// What went wrong and how to fix it.
    pub error: &'a str,
}

/// Either shape `summary.json` and `--json` take: a run's verdicts, or the error that
/// ended it before any.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "perfgate summary.json")]
pub enum SummaryFile<'a> {
    Run(Summary<'a>),
    Error(ErrorSummary<'a>),
}

/// The format version of `summary.json`, raised when a field changes meaning or goes
/// away. 2: each judgement's `mean_change_pct` (its metric's, was `tps_delta_pct`, TPS's in
/// every judgement), `direction` and `change`.
pub const SUMMARY_SCHEMA_VERSION: u32 = 2;

/// `summary.json`: the verdicts and the numbers behind them. Its JSON Schema is
/// [`summary_schema`], shipped as `docs/summary.schema.json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Summary<'a> {
    /// [`SUMMARY_SCHEMA_VERSION`]: raised when a field changes meaning or goes away. A
    /// reader of this schema reads this version only.
    #[schemars(extend("const" = SUMMARY_SCHEMA_VERSION))]
    pub schema_version: u32,
    /// The run's exit status (0, 1, 2).
    pub exit_code: i32,
    /// Whether SIGINT/SIGTERM cut the run short.
    pub interrupted: bool,
    /// Conditions that make the numbers less trustworthy (e.g. a disk-backed work dir).
    pub warnings: &'a [String],
    /// One per engine and judged metric, in report order.
    pub judgements: Vec<JudgementJson<'a>>,
    /// The simulation driver's differential profile per engine: the functions whose
    /// instructions per committed transaction changed most (absent under other drivers).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub profile_diff: &'a [crate::results::profile::ProfileDiff],
    /// The copies of the results (`--junit`, `--export-*`) that could not be written
    /// (absent when every copy was); any makes `exit_code` at least 2.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub copy_failures: &'a [CopyFailure],
}

/// A copy of a run's results (`--junit`, `--export-markdown`, `--export-*`) that could not
/// be written. The run's own files hold the results all the same; the run exits 2, since
/// the CI job reading the copy would find none, or an old one.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CopyFailure {
    /// The flag that named the copy, e.g. `--junit`.
    pub flag: String,
    /// The copy's path as given (lossy UTF-8).
    pub path: String,
    /// Why it could not be written, and what to do.
    pub error: String,
}

impl CopyFailure {
    /// The sentence the terminal, `run.log` and `summary.md` give it.
    pub fn sentence(&self) -> String {
        format!(
            "{} {} was not written: {}",
            self.flag, self.path, self.error
        )
    }
}

/// A run's exit status: its verdicts' ([`exit_code`]), and at least 2 when a copy of its
/// results could not be written.
pub fn run_exit_code(judgements: &[Judgement], interrupted: bool, copies: &[CopyFailure]) -> i32 {
    let code = exit_code(judgements, interrupted);
    if copies.is_empty() {
        code
    } else {
        code.max(2)
    }
}

/// A judgement as `summary.json` has it: every field of [`Judgement`], and the metric's
/// change in its own direction, for scripts that should not have to know which metrics
/// fall when they improve.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JudgementJson<'a> {
    #[serde(flatten)]
    pub judgement: &'a Judgement,
    /// Which way the metric improves.
    pub direction: Direction,
    /// The metric's own change, with its interval: a fall of TPS and a rise of latency or
    /// of CPU per transaction are both losses, negative for TPS and positive for latency.
    /// (`comparison` is oriented so that higher is better for every metric: the change of
    /// 1/value for a metric that falls when it improves.) `None` with too few trials.
    pub change: Option<Change>,
}

/// A metric's change, experiment against baseline, in the metric's own direction.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct Change {
    /// Estimated change, percent.
    pub pct: f64,
    /// Lower bound of its 95% interval, percent.
    pub ci95_low_pct: f64,
    /// Upper bound of its 95% interval, percent.
    pub ci95_high_pct: f64,
}

impl<'a> JudgementJson<'a> {
    pub fn of(j: &'a Judgement) -> JudgementJson<'a> {
        JudgementJson {
            judgement: j,
            direction: j.metric.direction(),
            change: j
                .change_pct()
                .map(|(pct, ci95_low_pct, ci95_high_pct)| Change {
                    pct,
                    ci95_low_pct,
                    ci95_high_pct,
                }),
        }
    }
}

/// The JSON Schema (draft 2020-12) of `summary.json`, derived from the types it is
/// written from; `docs/summary.schema.json` is this text (a test keeps them equal).
pub fn summary_schema() -> String {
    // Serialize contract: a field the gate leaves out when empty is not required.
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<SummaryFile<'static>>();
    // The descriptions are the doc comments: their rustdoc links ([`Item`]) read as code
    // names to a schema's reader.
    json(&schema).replace("[`", "`").replace("`]", "`")
}

/// `summary.json`'s text; `copy_failures` are the copies that could not be written.
pub fn summary_json(
    judgements: &[Judgement],
    interrupted: bool,
    warnings: &[String],
    profile_diff: &[crate::results::profile::ProfileDiff],
    copy_failures: &[CopyFailure],
) -> String {
    let s = Summary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        exit_code: run_exit_code(judgements, interrupted, copy_failures),
        interrupted,
        warnings,
        judgements: judgements.iter().map(JudgementJson::of).collect(),
        profile_diff,
        copy_failures,
    };
    json(&s)
}

/// The per-trial metrics `results.tsv` has a column of, named as [`Metric::name`]: every
/// metric a trial measures but TPS and p99 latency, which have columns of their own.
fn tsv_metrics() -> impl Iterator<Item = Metric> {
    Metric::ALL
        .into_iter()
        .filter(|m| !matches!(m, Metric::Tps | Metric::TxnLatencyP99 | Metric::KneeTps))
}

/// The header of `results.tsv`: each column's name ends with its unit (`_s`, `_us`,
/// `_pct`, `_bytes`, `_cores`, `_per_txn`, `tps`) unless it has none; docs/results.md lists
/// them (a test keeps the two equal).
pub fn results_tsv_header() -> Vec<String> {
    let head = [
        "index",
        "engine",
        "arm",
        "repetition",
        "outcome",
        "target_tps",
        "tps",
        "overall_tps",
        "measured_s",
        "total_xacts",
        "txn_latency_us_p50",
        "txn_latency_us_p99",
        "storage_cpu_cores",
        "cpu_bound",
    ];
    let tail = [
        "workdir_peak_bytes",
        "host_probe_s",
        "steal_pct",
        "failed_phase",
        "error",
    ];
    head.into_iter()
        .map(String::from)
        .chain(tsv_metrics().map(|m| m.name().to_string()))
        .chain(Phase::ALL.map(|p| format!("{}_s", p.to_string().replace('-', "_"))))
        .chain(tail.into_iter().map(String::from))
        .collect()
}

/// `results.tsv`: one line per trial, for spreadsheets and `awk`: tab-separated, a field
/// with a tab, a newline or a quote quoted as in RFC 4180 (the `csv` crate), an unmeasured
/// value empty. Columns: [`results_tsv_header`].
pub fn results_tsv(trials: &[TrialRecord]) -> String {
    let mut w = csv::WriterBuilder::new()
        .delimiter(b'\t')
        .from_writer(Vec::new());
    w.write_record(results_tsv_header())
        .expect("writing to memory");
    for t in trials {
        w.write_record(tsv_row(t)).expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("the fields are UTF-8")
}

/// One trial's fields of `results.tsv`, in [`results_tsv_header`]'s order.
fn tsv_row(t: &TrialRecord) -> Vec<String> {
    let opt =
        |v: Option<f64>, digits: usize| v.map(|v| format!("{v:.digits$}")).unwrap_or_default();
    let r = t.report.as_ref();
    let m = t.multitest.as_ref().map(|m| &m.result);
    let sample = crate::judge::samples::Sample::of_trial(t);
    let mut row = vec![
        t.index.to_string(),
        t.engine.to_string(),
        t.arm.to_string(),
        t.repetition.to_string(),
        serde_json::to_value(t.outcome)
            .expect("outcome")
            .as_str()
            .unwrap_or("")
            .to_string(),
        t.target_tps.map(|v| v.to_string()).unwrap_or_default(),
        opt(t.tps(), 2),
        r.map(|r| r.overall_tps.to_string()).unwrap_or_default(),
        opt(
            r.map(|r| r.measured_duration_s).or(m.map(|m| m.measured_s)),
            3,
        ),
        r.map(|r| r.total_xacts.to_string()).unwrap_or_default(),
        opt(t.txn_latency_us_p50(), 0),
        opt(t.txn_latency_us_p99(), 0),
        opt(t.storage_cpu_cores, 3),
        t.cpu_bound.map(|b| b.to_string()).unwrap_or_default(),
    ];
    row.extend(tsv_metrics().map(|m| opt(sample.value(m), 4)));
    row.extend(Phase::ALL.map(|p| {
        opt(
            t.phases.iter().find(|x| x.phase == p).map(|x| x.duration_s),
            3,
        )
    }));
    row.extend([
        t.workdir_peak_bytes
            .map(|b| b.to_string())
            .unwrap_or_default(),
        opt(t.host.as_ref().map(|h| (h.before_s + h.after_s) / 2.0), 4),
        opt(t.host.as_ref().and_then(|h| h.steal_pct), 2),
        t.failed_phase.map(|p| p.to_string()).unwrap_or_default(),
        t.error.clone().unwrap_or_default(),
    ]);
    row
}

/// Numbers of a judgement as `(name, value)` pairs: JUnit properties, failure text and
/// system-out all use them, since some CI systems ignore properties.
fn numbers(j: &Judgement) -> Vec<(String, String)> {
    let mut v = vec![("verdict".to_string(), j.verdict.to_string())];
    let mut push = |k: &str, x: Option<f64>, digits: usize| {
        if let Some(x) = x {
            v.push((k.to_string(), format!("{x:.digits$}")));
        }
    };
    for (arm, s) in [("baseline", &j.baseline), ("experiment", &j.experiment)] {
        push(
            &format!("{arm}_tps_mean"),
            s.as_ref().map(|s| s.tps_mean),
            2,
        );
        push(
            &format!("{arm}_tps_cv_pct"),
            s.as_ref().and_then(|s| s.tps_cv_pct),
            2,
        );
        push(
            &format!("{arm}_trials"),
            s.as_ref().map(|s| s.tps.len() as f64),
            0,
        );
        push(
            &format!("{arm}_storage_cpu_cores"),
            s.as_ref().and_then(|s| s.storage_cpu_cores_mean),
            3,
        );
        if j.metric != Metric::Tps {
            push(
                &format!("{arm}_{}_mean", j.metric.name()),
                s.as_ref().and_then(|s| s.mean(j.metric)),
                2,
            );
        }
        push(
            &format!("{arm}_trials_not_cpu_bound"),
            s.as_ref().map(|s| s.trials_not_cpu_bound as f64),
            0,
        );
        push(
            &format!("{arm}_trials_cpu_unmeasured"),
            s.as_ref().map(|s| s.trials_cpu_unmeasured as f64),
            0,
        );
        push(
            &format!("{arm}_workdir_peak_bytes"),
            s.as_ref()
                .and_then(|s| s.workdir_peak_bytes_max)
                .map(|b| b as f64),
            0,
        );
    }
    push("mean_change_pct", j.mean_change_pct, 2);
    if let (Some(c), Some((change, low, high))) = (&j.comparison, j.change_pct()) {
        let m = j.metric.name();
        push("pairs", Some(c.n_experiment as f64), 0);
        push(&format!("{m}_change_pct"), Some(change), 2);
        push(&format!("{m}_change_ci95_low_pct"), Some(low), 2);
        push(&format!("{m}_change_ci95_high_pct"), Some(high), 2);
        push("p_value", Some(c.p_value), 4);
        push("mde_pct", c.mde_pct, 2);
    }
    push("p_not_worse_adjusted", j.p_not_worse_adjusted, 4);
    push("p_slower_adjusted", j.p_slower_adjusted, 4);
    if j.family_size > 1 {
        push("holm_family_size", Some(j.family_size as f64), 0);
    }
    if j.looks > 1 {
        push("sequential_looks", Some(f64::from(j.looks)), 0);
    }
    push("max_regression_pct", Some(j.criteria.max_regression_pct), 2);
    push("slo_tps", j.criteria.slo_tps, 1);
    v
}

/// `junit.xml`: one test suite per engine, one test case per judged metric. For a gated
/// metric, REGRESSION and SLO-VIOLATION are `<failure>`, TIMEOUT and ERROR are `<error>`,
/// INCONCLUSIVE is `<skipped>` (with the MDE achieved in its message), or a `<failure>`
/// under `--strict` (the run exits 1 then, and a CI test tab must not show 0 failures).
/// What CI tools show was read off their own parsers (docs/ci.md, "What CI shows"): the
/// `message` is the one-line sentence `VERDICT (engine): reason`, since Jenkins ("Error Details")
/// and mikepenz/action-junit-report (the annotation) show the message alone; there is no
/// `type`, which no tool shows but dorny/test-reporter, as `type: message`, and that would
/// say the verdict twice. The body (what GitLab shows) starts with the same sentence, then
/// the numbers; `system-out` has the terminal table, and, for a passing case, the sentence
/// and numbers first. The engine's trial seconds are the `time` of its suite and of its
/// first case only (its other cases judge the same trials: tools that add up case times
/// would count them twice). A metric that does not gate passes, with its verdict in its
/// output. The suite's `file` is `run.file`, so that an annotation lands on the JUnit file
/// rather than on a source file a tool finds by the classname's last part (`redwood` finds
/// FDB's `documentation/sphinx/source/redwood.rst`).
pub fn junit(judgements: &[Judgement], table: &str, run: &JunitRun) -> String {
    let mut report = Report::new("perfgate");
    let mut suites: Vec<TestSuite> = Vec::new();
    for j in judgements {
        let numbers = numbers(j);
        let text: Vec<String> = numbers.iter().map(|(k, v)| format!("{k}={v}")).collect();
        // The verdict's sentence on the first line of every body: GitLab shows the body
        // and drops `message` when there is one, others show the message.
        // The engine is in it: mikepenz/action-junit-report titles an annotation by the
        // suite's file and the case, so two engines' `tps` cases read alike there.
        let sentence = format!(
            "{} ({}{}): {}",
            j.verdict,
            j.engine,
            if j.gating { "" } else { ", not gating" },
            j.reason
        );
        let engine = j.engine.to_string();
        let first_of_engine = !suites.iter().any(|s| s.name.as_str() == engine);
        let seconds = run.seconds.get(&j.engine).copied().unwrap_or(0.0);
        let mut status = match j.verdict {
            _ if !j.gating => TestCaseStatus::success(),
            Verdict::Measured => TestCaseStatus::success(),
            Verdict::Regression | Verdict::SloViolation => {
                TestCaseStatus::non_success(NonSuccessKind::Failure)
            }
            Verdict::Timeout | Verdict::Error => TestCaseStatus::non_success(NonSuccessKind::Error),
            Verdict::Inconclusive if j.criteria.strict => {
                TestCaseStatus::non_success(NonSuccessKind::Failure)
            }
            Verdict::Inconclusive => TestCaseStatus::skipped(),
        };
        let body = format!("{sentence}\n{}", text.join("\n"));
        let out = if j.gating && j.verdict != Verdict::Measured {
            status.set_message(xml_text(&sentence));
            status.set_description(xml_text(&body));
            table.to_string()
        } else {
            format!("{body}\n\n{table}")
        };
        let mut case = TestCase::new(j.metric.name(), status);
        case.set_classname(format!("perfgate.{}", j.engine));
        case.set_time(junit_time(if first_of_engine { seconds } else { 0.0 }));
        case.set_system_out(xml_text(&out));
        // Jenkins' junit-10.xsd has no properties in a test case: the numbers go to the
        // suite, named after the metric.
        let properties = numbers
            .into_iter()
            .map(|(k, v)| Property::new(format!("{}.{k}", j.metric.name()), v));
        let suite = match suites.iter_mut().position(|s| s.name.as_str() == engine) {
            Some(i) => &mut suites[i],
            None => {
                let mut suite = TestSuite::new(engine);
                suite.set_time(junit_time(seconds));
                suite.set_timestamp(utc(run.timestamp));
                suite.extra.insert(
                    "hostname".into(),
                    crate::process::printable(&run.hostname).into(),
                );
                suite
                    .extra
                    .insert("file".into(), crate::process::printable(&run.file).into());
                suites.push(suite);
                suites.last_mut().expect("just pushed")
            }
        };
        suite.add_properties(properties);
        suite.add_test_case(case);
    }
    report.set_time(junit_time(run.seconds.values().sum()));
    report.add_test_suites(suites);
    without_suites_skipped(&report.to_string().expect("JUnit serializes"))
}

/// What a JUnit file says of the run besides the verdicts: when it started, on which
/// host, and the seconds each engine's trials took (the sum of their phases).
#[derive(Debug, Clone)]
pub struct JunitRun {
    /// When the run started (`timestamp`).
    pub timestamp: std::time::SystemTime,
    /// The host's name (`hostname`).
    pub hostname: String,
    /// Seconds of trials per engine (`time` of its suite and first test case).
    pub seconds: std::collections::BTreeMap<fdb::Engine, f64>,
    /// The JUnit file as CI finds it (`--junit` as given, else `junit.xml`): each suite's
    /// `file`.
    pub file: String,
}

fn utc(t: std::time::SystemTime) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::<chrono::Utc>::from(t).fixed_offset()
}

impl JunitRun {
    /// The run that measured `trials`, started at `timestamp` on `hostname`, whose JUnit
    /// is also copied to `junit` (`--junit`).
    pub fn new(
        trials: &[TrialRecord],
        timestamp: std::time::SystemTime,
        hostname: &str,
        junit: Option<&std::path::Path>,
    ) -> JunitRun {
        let mut seconds = std::collections::BTreeMap::new();
        for t in trials {
            let s: f64 = t
                .phases
                .iter()
                .map(|p| p.duration_s)
                .filter(|d| d.is_finite())
                .sum();
            *seconds.entry(t.engine).or_insert(0.0) += s.max(0.0);
        }
        JunitRun {
            timestamp,
            hostname: hostname.to_string(),
            seconds,
            file: junit.map_or("junit.xml".to_string(), |p| p.display().to_string()),
        }
    }
}

/// Jenkins' `junit-10.xsd` has no `skipped` attribute on `<testsuites>` (it has one on
/// `<testsuite>`), and its xunit plugin skips a file that does not validate; quick-junit
/// always writes it, so it is taken out of the root element here.
fn without_suites_skipped(xml: &str) -> String {
    let Some(start) = xml.find("<testsuites ") else {
        return xml.to_string();
    };
    let end = start + xml[start..].find('>').unwrap_or(0);
    let root = &xml[start..end];
    let Some(at) = root.find(" skipped=\"") else {
        return xml.to_string();
    };
    let close = at
        + 1
        + root[at + 1..]
            .find("\" ")
            .map_or(root.len() - at - 1, |i| i + 1);
    format!("{}{}{}", &xml[..start + at], &root[close..], &xml[end..])
}

/// Bytes of free text (a message, a body, an output) junit.xml holds per element.
pub const JUNIT_TEXT_BYTES: usize = 16 << 10;

/// Free text as junit.xml may hold it, whatever a child printed into it: characters XML 1.0
/// forbids (C0 controls but tab and newline, U+FFFE, U+FFFF: Xerces in Jenkins, expat and
/// xmllint reject the whole file) written as `\u{..}`, and at most [`JUNIT_TEXT_BYTES`]
/// (libxml2 without XML_PARSE_HUGE, as GitLab parses, refuses a 10 MB text node). Child
/// output reaches messages as a bounded `process::excerpt` already; this is the last guard.
pub fn xml_text(text: &str) -> String {
    crate::process::clean_text(text, JUNIT_TEXT_BYTES, &['\t', '\n'])
}

/// `junit.xml` for a run that failed outside its trials: before the first (a build tree
/// missing a binary, a build that failed or timed out; `case` "setup"), or writing its
/// results (`case` "results"): one `<error>` test case whose message and body are the
/// sentence `VERDICT: message` (ERROR or TIMEOUT), as in [`junit`].
pub fn junit_setup_error(case: &str, verdict: Verdict, message: &str) -> String {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    let sentence = xml_text(&format!("{verdict}: {message}"));
    status.set_message(sentence.clone());
    status.set_description(sentence);
    let mut case = TestCase::new(case, status);
    case.set_classname("perfgate");
    let mut suite = TestSuite::new("perfgate");
    suite.add_test_case(case);
    let mut report = Report::new("perfgate");
    report.add_test_suite(suite);
    without_suites_skipped(&report.to_string().expect("JUnit serializes"))
}

/// One row of [`table`]: engine, metric, the arms' means, change, p / MDE / pairs, verdict.
fn table_row(j: &Judgement) -> [String; 7] {
    let fmt_mean = |s: &Option<ArmStats>, m: Metric| {
        s.as_ref()
            .and_then(|s| match (m, s.tps_cv_pct) {
                (Metric::Tps, Some(cv)) => Some(format!("{:.1} ±{cv:.1}%", s.tps_mean)),
                _ => s.mean(m).map(|v| {
                    if v.abs() < 10.0 {
                        format!("{v:.3}")
                    } else {
                        format!("{v:.1}")
                    }
                }),
            })
            .unwrap_or_else(|| "-".to_string())
    };
    let change = j.change_pct().map_or_else(
        || {
            j.mean_change_pct
                .filter(|_| matches!(j.metric, Metric::Tps | Metric::KneeTps))
                .map(|d| format!("{d:+.2}%"))
                .unwrap_or_else(|| "-".into())
        },
        |(c, lo, hi)| format!("{c:+.2}% [{lo:+.2}, {hi:+.2}]"),
    );
    let p_mde = j.comparison.as_ref().map_or_else(
        || "-".into(),
        |c| {
            let mde = c.mde_pct.map_or("-".into(), |m| format!("{m:.2}%"));
            format!("{:.3} / {mde} / {}", c.p_value, c.n_experiment)
        },
    );
    // A sweep's knees stand where the arms' means do.
    let knee = |k: Option<u64>, ks: &crate::judge::knee::Knees| match k {
        None => format!("< {}", ks.first_step_tps),
        Some(k) if k >= ks.top_step_tps => format!("≥ {k}"),
        Some(k) => k.to_string(),
    };
    let (baseline, experiment) = match &j.knees {
        Some(k) if !k.has_baseline => ("-".into(), knee(k.experiment_tps, k)),
        Some(k) => (knee(k.baseline_tps, k), knee(k.experiment_tps, k)),
        None => (
            fmt_mean(&j.baseline, j.metric),
            fmt_mean(&j.experiment, j.metric),
        ),
    };
    [
        j.engine.to_string(),
        j.metric.unit_label().to_string(),
        baseline,
        experiment,
        change,
        p_mde,
        if j.gating {
            j.verdict.to_string()
        } else {
            format!("({}, not gating)", j.verdict)
        },
    ]
}

/// `summary.md` (and `--export-markdown`): the verdict table as Markdown for a CI job
/// summary (GitHub's step summary, a GitLab MR note): a heading with the run's outcome and
/// exit status, one row per engine and metric with each arm's mean, the change and its 95%
/// interval, p, MDE and pairs, and the verdict; then each verdict's reason, its notes and
/// the run's warnings. Text from the run is escaped for Markdown tables (`|`, newlines).
/// `copy_failures`: the copies of the results that could not be written, each a line.
pub fn markdown(
    judgements: &[Judgement],
    interrupted: bool,
    warnings: &[String],
    copy_failures: &[CopyFailure],
) -> String {
    let cell = |t: &str| t.replace('|', "\\|").replace(['\n', '\r'], " ");
    let code = run_exit_code(judgements, interrupted, copy_failures);
    let worst = judgements
        .iter()
        .filter(|j| j.gating)
        .map(|j| j.verdict)
        // Verdicts are ordered by severity, as report.html's heading takes them.
        .max();
    let mut s = format!(
        "## perfgate: {}{} (exit {code})\n\n",
        worst.map_or_else(|| "no verdict".to_string(), |v| v.to_string()),
        if interrupted { ", interrupted" } else { "" }
    );
    s.push_str("| engine | metric | baseline | experiment | change [95% CI] | p / MDE / pairs | verdict |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---|\n");
    for j in judgements {
        let mut row = table_row(j).map(|c| cell(&c));
        if j.gating && j.verdict != Verdict::Measured {
            row[6] = format!("**{}**", row[6]);
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s.push('\n');
    for j in judgements {
        let what = if j.gating {
            format!("{} {}", j.engine, j.verdict)
        } else {
            format!(
                "{} {} (not gating) {}",
                j.engine,
                j.metric.name(),
                j.verdict
            )
        };
        let _ = writeln!(s, "- **{what}**: {}", cell(&j.reason));
        for note in &j.notes {
            let _ = writeln!(s, "  - note: {}", cell(note));
        }
    }
    for w in warnings {
        let _ = writeln!(s, "- **WARNING**: {}", cell(w));
    }
    for f in copy_failures {
        let _ = writeln!(s, "- **ERROR**: {}", cell(&f.sentence()));
    }
    crate::process::printable(&s)
}

/// The terminal table: one row per engine, aligned, then each verdict's reason and the
/// run's warnings.
pub fn table(judgements: &[Judgement], warnings: &[String]) -> String {
    let rows: Vec<[String; 7]> = judgements.iter().map(table_row).collect();
    let header = [
        "engine",
        "metric",
        "baseline",
        "experiment",
        "change [95% CI]",
        "p / MDE / pairs",
        "verdict",
    ]
    .map(String::from);
    let mut width = header.clone().map(|h| h.len());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = r
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    }
    if rows
        .iter()
        .any(|r| r[2].contains('±') || r[3].contains('±'))
    {
        let _ = writeln!(
            s,
            "(TPS: the arm's mean ±its coefficient of variation, the trials' standard \
             deviation / mean)"
        );
    }
    for j in judgements {
        if j.gating && j.metric == Metric::Tps {
            let _ = writeln!(s, "{} {}: {}", j.engine, j.verdict, j.reason);
        } else if j.gating {
            // A gated ratio's line says which metric it judged.
            let name = j.metric.name();
            let _ = writeln!(s, "{} {name} {}: {}", j.engine, j.verdict, j.reason);
        } else {
            let _ = writeln!(
                s,
                "{} {} (not gating) {}: {}",
                j.engine,
                j.metric.name(),
                j.verdict,
                j.reason
            );
        }
        for note in &j.notes {
            let _ = writeln!(s, "{} note: {note}", j.engine);
        }
    }
    for w in warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    // Reasons quote trial errors, which `compare` reads back from trials.json.
    crate::process::printable(&s)
}

/// A JUnit time from seconds: what cannot be a duration (negative, NaN, beyond
/// `Duration`) is 0, never a panic (saved runs are checked before, this is the backstop).
fn junit_time(seconds: f64) -> std::time::Duration {
    std::time::Duration::try_from_secs_f64(seconds).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        config::Arm,
        judge::{
            judge,
            tests::{interleaved, CRITERIA},
            Criteria,
        },
        results::trial::{Outcome, Phase, PhaseTiming},
    };
    use expect_test::expect;
    use fdb::Engine;

    /// A run of 2 minutes of redwood trials at 2026-12-01T10:00:00Z on host ci-1.
    pub(super) fn test_run() -> JunitRun {
        JunitRun {
            timestamp: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_119_200),
            hostname: "ci-1".into(),
            seconds: [(Engine::Redwood, 120.5)].into_iter().collect(),
            file: "junit.xml".into(),
        }
    }

    /// Three pairs of redwood trials, the experiment's TPS 5% lower and p99 latency higher.
    pub(super) fn run() -> (Vec<TrialRecord>, Vec<Judgement>) {
        let mut trials = interleaved(&[1000.0, 1010.0, 990.0], &[950.0, 960.5, 945.0]);
        for (k, t) in trials.iter_mut().enumerate() {
            let p99 =
                4000.0 + 100.0 * k as f64 + if t.arm == Arm::Experiment { 300.0 } else { 0.0 };
            t.report.as_mut().unwrap().latency_us.insert(
                "TRANSACTION".into(),
                fdb::mako::LatencyStats {
                    samples: 9,
                    min: 1.0,
                    avg: 2.0,
                    max: 3.0,
                    p50: 2000.0,
                    p95: 2.0,
                    p99,
                    p99_9: 3.0,
                },
            );
        }
        let j = judge(
            &trials,
            &[Engine::Redwood],
            Criteria {
                slo_tps: None,
                ..CRITERIA
            },
            false,
        );
        (trials, j)
    }

    #[test]
    fn the_shipped_schema_is_the_one_the_types_give() {
        expect_test::expect_file!["../../../docs/summary.schema.json"].assert_eq(&summary_schema());
    }

    /// A summary of every verdict, with and without the numbers a verdict may lack, and
    /// the error shape, against the shipped schema.
    #[test]
    fn a_summary_of_every_verdict_validates_against_the_schema() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/summary.schema.json")).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let valid = |text: &str| {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{errors:?}\n{text}");
        };
        let (_, j) = run();
        for v in [
            Verdict::Measured,
            Verdict::Inconclusive,
            Verdict::Regression,
            Verdict::SloViolation,
            Verdict::Error,
            Verdict::Timeout,
        ] {
            let mut j = j.clone();
            j[0].verdict = v;
            valid(&summary_json(&j, false, &[], &[], &[]));
            j[1].comparison = None;
            j[1].baseline = None;
            j[1].mean_change_pct = None;
            valid(&summary_json(&j, true, &["a warning".into()], &[], &[]));
        }
        valid(&error_json(64, "--trials: invalid value"));
        // And the schema can fail: a verdict it does not know.
        let mut wrong: serde_json::Value =
            serde_json::from_str(&summary_json(&j, false, &[], &[], &[])).unwrap();
        wrong["judgements"][0]["verdict"] = "PASSED".into();
        assert!(!validator.is_valid(&wrong));
        // A copy that failed is part of the summary, and it makes the run an error.
        let failed = [CopyFailure {
            flag: "--junit".into(),
            path: "/full/junit.xml".into(),
            error: "No space left on device".into(),
        }];
        let text = summary_json(&j, false, &[], &[], &failed);
        valid(&text);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["exit_code"], 2, "{v}");
        assert_eq!(v["copy_failures"][0]["flag"], "--junit", "{v}");
        // Only the version this schema describes: a reader of version 2 knows no other.
        for version in [1, 3] {
            let mut other = v.clone();
            other["schema_version"] = version.into();
            assert!(!validator.is_valid(&other), "{version}");
            let mut error: serde_json::Value = serde_json::from_str(&error_json(64, "x")).unwrap();
            error["schema_version"] = version.into();
            assert!(!validator.is_valid(&error), "{version}");
        }
    }

    #[test]
    fn table_golden() {
        let (_, j) = run();
        expect![[r#"
            engine   metric  baseline      experiment   change [95% CI]         p / MDE / pairs     verdict
            redwood  TPS     1000.0 ±1.0%  951.8 ±0.8%  -4.82% [-5.48, -4.15]   0.001 / 2.37% / 3   REGRESSION
            redwood  p99 µs  4233.3        4566.7       +7.89% [+0.12, +16.26]  0.049 / 18.87% / 3  (REGRESSION, not gating)
            (TPS: the arm's mean ±its coefficient of variation, the trials' standard deviation / mean)
            redwood REGRESSION: TPS -4.82% [-5.48%, -4.15%] over 3 pairs, p=0.001: significantly slower, and the estimated change exceeds the 2.00% tolerance
            redwood txn_latency_p99 (not gating) REGRESSION: p99 transaction latency +7.89% [+0.12%, +16.26%] over 3 pairs, p=0.049: significantly higher in latency, and the estimated change exceeds the 2.00% tolerance
            WARNING: WORK DIR /x IS NOT A RAM DISK
        "#]]
        .assert_eq(&table(&j, &["WORK DIR /x IS NOT A RAM DISK".into()]));
    }

    #[test]
    fn tsv_golden() {
        let (mut t, _) = run();
        t[3].outcome = Outcome::Timeout;
        t[3].report = None;
        t[3].failed_phase = Some(Phase::Configure);
        t[3].error = Some("configure: did not\tfinish\n\"quoted\"".into());
        t[0].target_tps = Some(1200);
        t[0].phases = vec![
            PhaseTiming {
                phase: Phase::ClusterStart,
                duration_s: 1.25,
            },
            PhaseTiming {
                phase: Phase::Teardown,
                duration_s: 0.5,
            },
        ];
        let text = results_tsv(&t);
        // A reader of tab-separated values gets every field back as it was.
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(b'\t')
            .from_reader(text.as_bytes());
        let header = reader.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        let field = |row: usize, name: &str| {
            rows[row][header.iter().position(|h| h == name).unwrap()].to_string()
        };
        assert_eq!(rows.len(), 6);
        assert_eq!(field(3, "error"), "configure: did not\tfinish\n\"quoted\"");
        assert_eq!(
            (
                field(0, "target_tps"),
                field(0, "cluster_start_s"),
                field(0, "teardown_s")
            ),
            ("1200".into(), "1.250".into(), "0.500".into())
        );
        expect![[r#"
            index	engine	arm	repetition	outcome	target_tps	tps	overall_tps	measured_s	total_xacts	txn_latency_us_p50	txn_latency_us_p99	storage_cpu_cores	cpu_bound	storage_to_client_cpu	storage_cpu_us_per_txn	log_cpu_us_per_txn	stateless_cpu_us_per_txn	client_cpu_us_per_txn	storage_instructions_per_txn	log_instructions_per_txn	stateless_instructions_per_txn	client_instructions_per_txn	instructions_per_txn	cluster_start_s	configure_s	available_s	mako_build_s	mako_run_s	multitest_s	simulation_s	teardown_s	workdir_peak_bytes	host_probe_s	steal_pct	failed_phase	error
            1	redwood	baseline	1	measured	1200	1000.00	1000	5.000	5000	2000	4000	0.970	true											1.250							0.500	1048576				
            2	redwood	experiment	1	measured		950.00	950	5.000	4750	2000	4400	0.970	true																			1048576				
            3	redwood	experiment	2	measured		960.50	960	5.000	4802	2000	4500	0.970	true																			1048576				
            4	redwood	baseline	2	timeout								0.970	true																			1048576			configure	"configure: did not	finish
            ""quoted"""
            5	redwood	baseline	3	measured		990.00	990	5.000	4950	2000	4400	0.970	true																			1048576				
            6	redwood	experiment	3	measured		945.00	945	5.000	4725	2000	4800	0.970	true																			1048576				
        "#]]
        .assert_eq(&text);
    }

    /// docs/results.md lists the columns of `results.tsv`, one table row each.
    #[test]
    fn the_documented_tsv_columns_are_the_written_ones() {
        let docs = include_str!("../../../docs/results.md");
        let section = &docs[docs.find("### results.tsv").expect("a results.tsv section")..];
        let documented: Vec<String> = section
            .lines()
            .skip_while(|l| !l.starts_with("| column"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .flat_map(|l| {
                let names = l.split('|').nth(1).unwrap_or("").to_string();
                names
                    .split(',')
                    .map(|n| n.trim().trim_matches('`').to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(documented, results_tsv_header());
    }

    #[test]
    fn junit_golden_with_escaped_log_text() {
        let (_, j) = run();
        let xml = junit(
            &j,
            "table with \x1b[31mESC\x1b[0m and ]]> inside",
            &test_run(),
        );
        expect![[r#"
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="perfgate" tests="2" failures="1" errors="0" time="120.500">
                <testsuite name="redwood" tests="2" skipped="0" errors="0" failures="1" timestamp="2026-12-01T10:00:00.000+00:00" time="120.500" hostname="ci-1" file="junit.xml">
                    <properties>
                        <property name="tps.verdict" value="REGRESSION"/>
                        <property name="tps.baseline_tps_mean" value="1000.00"/>
                        <property name="tps.baseline_tps_cv_pct" value="1.00"/>
                        <property name="tps.baseline_trials" value="3"/>
                        <property name="tps.baseline_storage_cpu_cores" value="0.970"/>
                        <property name="tps.baseline_trials_not_cpu_bound" value="0"/>
                        <property name="tps.baseline_trials_cpu_unmeasured" value="0"/>
                        <property name="tps.baseline_workdir_peak_bytes" value="1048576"/>
                        <property name="tps.experiment_tps_mean" value="951.83"/>
                        <property name="tps.experiment_tps_cv_pct" value="0.83"/>
                        <property name="tps.experiment_trials" value="3"/>
                        <property name="tps.experiment_storage_cpu_cores" value="0.970"/>
                        <property name="tps.experiment_trials_not_cpu_bound" value="0"/>
                        <property name="tps.experiment_trials_cpu_unmeasured" value="0"/>
                        <property name="tps.experiment_workdir_peak_bytes" value="1048576"/>
                        <property name="tps.mean_change_pct" value="-4.82"/>
                        <property name="tps.pairs" value="3"/>
                        <property name="tps.tps_change_pct" value="-4.82"/>
                        <property name="tps.tps_change_ci95_low_pct" value="-5.48"/>
                        <property name="tps.tps_change_ci95_high_pct" value="-4.15"/>
                        <property name="tps.p_value" value="0.0011"/>
                        <property name="tps.mde_pct" value="2.37"/>
                        <property name="tps.p_not_worse_adjusted" value="0.9984"/>
                        <property name="tps.p_slower_adjusted" value="0.0006"/>
                        <property name="tps.max_regression_pct" value="2.00"/>
                        <property name="txn_latency_p99.verdict" value="REGRESSION"/>
                        <property name="txn_latency_p99.baseline_tps_mean" value="1000.00"/>
                        <property name="txn_latency_p99.baseline_tps_cv_pct" value="1.00"/>
                        <property name="txn_latency_p99.baseline_trials" value="3"/>
                        <property name="txn_latency_p99.baseline_storage_cpu_cores" value="0.970"/>
                        <property name="txn_latency_p99.baseline_txn_latency_p99_mean" value="4233.33"/>
                        <property name="txn_latency_p99.baseline_trials_not_cpu_bound" value="0"/>
                        <property name="txn_latency_p99.baseline_trials_cpu_unmeasured" value="0"/>
                        <property name="txn_latency_p99.baseline_workdir_peak_bytes" value="1048576"/>
                        <property name="txn_latency_p99.experiment_tps_mean" value="951.83"/>
                        <property name="txn_latency_p99.experiment_tps_cv_pct" value="0.83"/>
                        <property name="txn_latency_p99.experiment_trials" value="3"/>
                        <property name="txn_latency_p99.experiment_storage_cpu_cores" value="0.970"/>
                        <property name="txn_latency_p99.experiment_txn_latency_p99_mean" value="4566.67"/>
                        <property name="txn_latency_p99.experiment_trials_not_cpu_bound" value="0"/>
                        <property name="txn_latency_p99.experiment_trials_cpu_unmeasured" value="0"/>
                        <property name="txn_latency_p99.experiment_workdir_peak_bytes" value="1048576"/>
                        <property name="txn_latency_p99.mean_change_pct" value="7.87"/>
                        <property name="txn_latency_p99.pairs" value="3"/>
                        <property name="txn_latency_p99.txn_latency_p99_change_pct" value="7.89"/>
                        <property name="txn_latency_p99.txn_latency_p99_change_ci95_low_pct" value="0.12"/>
                        <property name="txn_latency_p99.txn_latency_p99_change_ci95_high_pct" value="16.26"/>
                        <property name="txn_latency_p99.p_value" value="0.0485"/>
                        <property name="txn_latency_p99.mde_pct" value="18.87"/>
                        <property name="txn_latency_p99.p_not_worse_adjusted" value="0.9577"/>
                        <property name="txn_latency_p99.p_slower_adjusted" value="0.0243"/>
                        <property name="txn_latency_p99.max_regression_pct" value="2.00"/>
                    </properties>
                    <testcase name="tps" classname="perfgate.redwood" time="120.500">
                        <failure message="REGRESSION (redwood): TPS -4.82% [-5.48%, -4.15%] over 3 pairs, p=0.001: significantly slower, and the estimated change exceeds the 2.00% tolerance">REGRESSION (redwood): TPS -4.82% [-5.48%, -4.15%] over 3 pairs, p=0.001: significantly slower, and the estimated change exceeds the 2.00% tolerance
            verdict=REGRESSION
            baseline_tps_mean=1000.00
            baseline_tps_cv_pct=1.00
            baseline_trials=3
            baseline_storage_cpu_cores=0.970
            baseline_trials_not_cpu_bound=0
            baseline_trials_cpu_unmeasured=0
            baseline_workdir_peak_bytes=1048576
            experiment_tps_mean=951.83
            experiment_tps_cv_pct=0.83
            experiment_trials=3
            experiment_storage_cpu_cores=0.970
            experiment_trials_not_cpu_bound=0
            experiment_trials_cpu_unmeasured=0
            experiment_workdir_peak_bytes=1048576
            mean_change_pct=-4.82
            pairs=3
            tps_change_pct=-4.82
            tps_change_ci95_low_pct=-5.48
            tps_change_ci95_high_pct=-4.15
            p_value=0.0011
            mde_pct=2.37
            p_not_worse_adjusted=0.9984
            p_slower_adjusted=0.0006
            max_regression_pct=2.00</failure>
                        <system-out>table with \u{1b}[31mESC\u{1b}[0m and ]]&gt; inside</system-out>
                    </testcase>
                    <testcase name="txn_latency_p99" classname="perfgate.redwood" time="0.000">
                        <system-out>REGRESSION (redwood, not gating): p99 transaction latency +7.89% [+0.12%, +16.26%] over 3 pairs, p=0.049: significantly higher in latency, and the estimated change exceeds the 2.00% tolerance
            verdict=REGRESSION
            baseline_tps_mean=1000.00
            baseline_tps_cv_pct=1.00
            baseline_trials=3
            baseline_storage_cpu_cores=0.970
            baseline_txn_latency_p99_mean=4233.33
            baseline_trials_not_cpu_bound=0
            baseline_trials_cpu_unmeasured=0
            baseline_workdir_peak_bytes=1048576
            experiment_tps_mean=951.83
            experiment_tps_cv_pct=0.83
            experiment_trials=3
            experiment_storage_cpu_cores=0.970
            experiment_txn_latency_p99_mean=4566.67
            experiment_trials_not_cpu_bound=0
            experiment_trials_cpu_unmeasured=0
            experiment_workdir_peak_bytes=1048576
            mean_change_pct=7.87
            pairs=3
            txn_latency_p99_change_pct=7.89
            txn_latency_p99_change_ci95_low_pct=0.12
            txn_latency_p99_change_ci95_high_pct=16.26
            p_value=0.0485
            mde_pct=18.87
            p_not_worse_adjusted=0.9577
            p_slower_adjusted=0.0243
            max_regression_pct=2.00

            table with \u{1b}[31mESC\u{1b}[0m and ]]&gt; inside</system-out>
                    </testcase>
                </testsuite>
            </testsuites>
        "#]]
        .assert_eq(&xml);
    }

    #[test]
    fn a_hostname_read_back_reaches_junit_escaped_not_dropped_or_raw() {
        // `compare` writes JUnit from a saved run's meta.json, which anyone may have edited.
        let t = interleaved(&[1000.0, 1100.0, 950.0], &[1050.0, 980.0, 990.0]);
        let j = judge(&t, &[Engine::Redwood], CRITERIA, false);
        let mut run = test_run();
        run.hostname = "vm\u{1b}]0;x\u{7}RED\u{202e}".into();
        let xml = junit(&j, "", &run);
        assert!(
            xml.contains(r#"hostname="vm\u{1b}]0;x\u{7}RED\u{202e}""#),
            "{xml}"
        );
        assert!(!xml.contains('\u{202e}') && !xml.contains('\u{1b}'));
    }

    #[test]
    fn inconclusive_is_skipped_in_junit_with_the_mde() {
        let t = interleaved(&[1000.0, 1100.0, 950.0], &[1050.0, 980.0, 990.0]);
        let j = judge(&t, &[Engine::Redwood], CRITERIA, false);
        let xml = junit(&j, "", &test_run());
        // The message is the one-line sentence, verdict first (Jenkins and mikepenz show
        // it alone), and so is the body's first line (GitLab shows the body); no type, which
        // dorny would print before the message a second time.
        assert!(
            xml.contains("<skipped message=\"INCONCLUSIVE (redwood): TPS ")
                && !xml.contains(" type=\""),
            "{xml}"
        );
        assert!(xml.contains(">INCONCLUSIVE (redwood): TPS "), "{xml}");
        assert!(
            xml.contains("(MDE: 80% power, the noise at its 80% upper bound)"),
            "{xml}"
        );
        assert!(xml.contains(r#"skipped="1""#), "{xml}");
        // Under --strict the run exits 1, and the file says so (CI would otherwise show a
        // failed job with 0 failures).
        let strict = Criteria {
            strict: true,
            ..CRITERIA
        };
        let j = judge(&t, &[Engine::Redwood], strict, false);
        assert_eq!(exit_code(&j, false), 1);
        let xml = junit(&j, "", &test_run());
        assert!(
            xml.contains("<failure message=\"INCONCLUSIVE (redwood): TPS ")
                && xml.contains(r#"failures="1""#),
            "{xml}"
        );
    }

    #[test]
    fn summary_exit_code_follows_the_worst_verdict_or_the_interrupt() {
        let (_, j) = run();
        let v: serde_json::Value =
            serde_json::from_str(&summary_json(&j, false, &[], &[], &[])).unwrap();
        assert_eq!(v["exit_code"], 1);
        assert_eq!(v["judgements"][0]["verdict"], "REGRESSION");
        let v: serde_json::Value =
            serde_json::from_str(&summary_json(&j, true, &["w".into()], &[], &[])).unwrap();
        assert_eq!(v["exit_code"], 2);
    }
}
