//! Report stage: `report.html`, one self-contained page (no CDN, no script, no network):
//! the verdicts first, then charts drawn in Rust (plotters, SVG inlined), then every trial
//! and the run's provenance. Pure: returns a `String`.

use std::fmt::Write as _;

use html_escape::encode_text as esc;
use plotters::prelude::*;

use fdb::{Engine, Knob};

use super::chart::{
    arm_line, bounds, drawable, frame, marker, svg, Axis, BASELINE, EXPERIMENT, LEGEND,
};
use crate::results::profile::ProfileDiff;
use crate::{
    config::{Arm, DriverKind},
    judge::{Judgement, Metric, Verdict},
    plan::{Plan, PlannedTrial},
    results::trial::{MultitestReport, Outcome, TrialRecord},
};

/// When, where and how the run was started, for the page's head.
pub struct RunInfo {
    pub started: std::time::SystemTime,
    pub host: crate::results::host::Host,
    pub command_line: Vec<String>,
}

/// The page for a finished (or interrupted) run.
pub fn render(
    plan: &Plan,
    trials: &[TrialRecord],
    judgements: &[Judgement],
    warnings: &[String],
    profile_diff: &[ProfileDiff],
    run: &RunInfo,
) -> String {
    let mut s = page_head(judgements);
    s.push_str(&run_line(run));
    for w in warnings {
        let _ = writeln!(s, "<p class=\"warn\">WARNING: {}</p>", esc(w));
    }
    s.push_str(&verdict_table(judgements, trials));
    s.push_str(&chart_changes(judgements));
    s.push_str(LEGEND);
    for &engine in &plan.engines {
        let of: Vec<&TrialRecord> = trials.iter().filter(|t| t.engine == engine).collect();
        if of.is_empty() {
            continue;
        }
        let _ = writeln!(s, "<h2>{engine}</h2>");
        if plan.config.schedule.ladder().is_some() {
            // A sweep's trials differ by target on purpose: its own section shows them.
            s.push_str(&super::sweep::section(engine, trials));
            continue;
        }
        s.push_str(&chart_trials(
            engine,
            &of,
            ("TPS per trial", "throughput (TPS)"),
            TrialRecord::tps,
        ));
        if let DriverKind::Simulation(_) = plan.config.workload.driver_kind() {
            s.push_str(&simulation_section(engine, &of, profile_diff));
            continue;
        }
        if let DriverKind::Multitest(_) = plan.config.workload.driver_kind() {
            // ReadWrite prints no per-second TPS and no p99: its highest percentile is p98.
            s.push_str(&chart_trials(
                engine,
                &of,
                (
                    "p98 transaction latency per trial (ReadWrite's measured window)",
                    "p98 latency (µs)",
                ),
                |t| {
                    t.txn_latency_us_tail()
                        .map(|(v, _)| v)
                        .filter(|v| v.is_finite())
                },
            ));
            continue;
        }
        s.push_str(&chart_seconds(
            engine,
            &of,
            plan.config.workload.warmup_seconds as f64,
        ));
        s.push_str(&seconds_as_text(&of));
        s.push_str(&chart_trials(
            engine,
            &of,
            (
                "p99 transaction latency per trial (warmup included)",
                "p99 latency (µs)",
            ),
            |t| t.txn_latency_us_p99().filter(|v| v.is_finite()),
        ));
    }
    s.push_str(&trial_table(trials));
    s.push_str(&readwrite_table(trials));
    s.push_str(&provenance(plan));
    s.push_str("</body></html>\n");
    // Text from files (a record, CMakeCache.txt, trial errors) is in it.
    crate::process::printable(&s)
}

/// An engine's simulation trials: storage server instructions per transaction per trial,
/// and the differential profile.
fn simulation_section(engine: Engine, of: &[&TrialRecord], profile_diff: &[ProfileDiff]) -> String {
    let mut s = chart_trials(
        engine,
        of,
        (
            "storage server instructions per transaction per trial (simulation)",
            "instructions per transaction",
        ),
        |t| {
            t.simulation
                .as_ref()?
                .per_transaction(fdb::simulation::SimRole::Storage)
        },
    );
    if let Some(d) = profile_diff.iter().find(|d| d.engine == engine) {
        s.push_str(&profile_table(d));
    }
    s
}

/// The differential profile of one engine: the functions whose instructions per
/// transaction changed most between the arms.
fn profile_table(d: &ProfileDiff) -> String {
    let mut s = format!(
        "<h3>Instructions per transaction by function, experiment - baseline</h3>\n<p>{} \
         pairs of seeds, {} with the same simulated path (same unseed).</p>\n<table><tr>\
         <th>change</th><th>baseline</th><th>experiment</th><th>role</th><th>function</th>\
         <th>file</th></tr>\n",
        d.pairs, d.exact_pairs
    );
    for f in &d.functions {
        let _ = writeln!(
            s,
            "<tr><td>{:+.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td><code>{}</code></td>\
             <td>{}</td></tr>",
            f.change_per_txn,
            f.baseline_per_txn,
            f.experiment_per_txn,
            f.role.as_str(),
            esc(&f.function),
            esc(&f.file)
        );
    }
    s.push_str("</table>\n");
    s
}

/// When and where the run started, the gate's version and its command line.
fn run_line(run: &RunInfo) -> String {
    format!(
        "<p>Started {} on {} ({}), perfgate {}: <code>{}</code></p>\n",
        humantime::format_rfc3339_seconds(run.started),
        esc(&run.host.hostname),
        esc(&run.host.class()),
        esc(crate::version::LINE.as_str()),
        esc(&run.command_line.join(" "))
    )
}

/// The verdicts: per engine and metric, each arm's mean, the change, p, MDE, the verdict
/// and why; a failed engine's row links to its first failed trial's files.
fn verdict_table(judgements: &[Judgement], trials: &[TrialRecord]) -> String {
    let mut s = String::from("<h2>Verdicts</h2><table><tr><th>engine</th><th>metric</th><th>baseline</th><th>experiment</th><th>verdict</th><th>change [95% CI]</th><th>p</th><th>MDE</th><th>why</th></tr>\n");
    for j in judgements {
        let (change, p, mde) = match (j.change_pct(), &j.comparison) {
            (Some((c, lo, hi)), Some(cmp)) => (
                format!("{c:+.2}% [{lo:+.2}%, {hi:+.2}%]"),
                format!("{:.3}", cmp.p_value),
                cmp.mde_pct.map_or("-".into(), |m| format!("{m:.2}%")),
            ),
            _ => ("-".into(), "-".into(), "-".into()),
        };
        let row = super::table_row(j);
        let failed = trials
            .iter()
            .find(|t| t.engine == j.engine && t.error.is_some())
            .map(|t| {
                format!(
                    " (<a href=\"{}/\">trial {} files</a>)",
                    esc(&t.artifacts.to_string_lossy()),
                    t.index
                )
            })
            .filter(|_| matches!(j.verdict, Verdict::Error | Verdict::Timeout))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\"><b>{}</b>{}</td><td>{change}</td><td>{p}</td><td>{mde}</td><td>{}{failed}</td></tr>",
            j.engine,
            esc(&row[1]),
            esc(&row[2]),
            esc(&row[3]),
            j.verdict,
            j.verdict,
            if j.gating { "" } else { " (not gating)" },
            esc(&j.reason)
        );
        for note in &j.notes {
            let _ = writeln!(s, "<tr><td colspan=\"9\">note: {}</td></tr>", esc(note));
        }
    }
    s.push_str("</table>\n");
    s
}

/// The per-second TPS of each measured trial as text: what the chart shows, for a screen
/// reader or a copy.
fn seconds_as_text(trials: &[&TrialRecord]) -> String {
    let mut s = String::from("<details><summary>TPS per second, as text</summary><table>\n");
    for t in trials.iter().filter(|t| t.outcome == Outcome::Measured) {
        let Some(r) = &t.report else { continue };
        let values: Vec<String> = r.samples_tps.iter().map(|v| format!("{v:.0}")).collect();
        let _ = writeln!(
            s,
            "<tr><th>trial {} ({})</th><td>{}</td></tr>",
            t.index,
            t.arm,
            values.join(" ")
        );
    }
    s.push_str("</table></details>\n");
    s
}

/// The page up to its heading: the title and the heading both say the headline
/// ([`headline`]), the heading with its verdict in the verdict's colour.
fn page_head(judgements: &[Judgement]) -> String {
    let (worst, headline) = headline(judgements);
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} - perfgate</title>\n<style>\
         body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:left}}.MEASURED{{color:#070}}\
         .REGRESSION,.SLO-VIOLATION,.ERROR,.TIMEOUT{{color:#b00}}.INCONCLUSIVE{{color:#a60}}\
         .warn{{background:#fee;padding:.5em}}.a{{color:#004488}}.b{{color:#e69f00}}</style></head><body>\n",
        esc(&headline)
    );
    // The verdict's word in its colour; the rest of the heading as the title has it.
    let rest = headline
        .strip_prefix(&worst.to_string())
        .unwrap_or(&headline);
    let _ = writeln!(
        s,
        "<h1><span class=\"{worst}\">{worst}</span>{}</h1>",
        esc(rest)
    );
    s
}

/// The page's headline and its verdict: the worst gating verdict, the metric that decided
/// it and that metric's change with its 95% interval, as "REGRESSION: redwood TPS -4.98%
/// [-6.10%, -3.90%]" (with one arm, its mean); "and N more" when more metrics share that
/// verdict. Plain text.
fn headline(judgements: &[Judgement]) -> (Verdict, String) {
    let gating: Vec<&Judgement> = judgements.iter().filter(|j| j.gating).collect();
    let Some(worst) = gating.iter().map(|j| j.verdict).max() else {
        return (Verdict::Error, "ERROR: no metric judged".into());
    };
    let deciding: Vec<&&Judgement> = gating.iter().filter(|j| j.verdict == worst).collect();
    let j = deciding[0];
    let change = match (j.change_pct(), j.mean_change_pct) {
        // Two decimals, as the verdict table's: a simulation's interval is a few 0.01%.
        (Some((c, lo, hi)), _) => format!(" {c:+.2}% [{lo:+.2}%, {hi:+.2}%]"),
        // A knee, or a TPS against an SLO without a baseline, has no interval.
        (None, Some(d)) if matches!(j.metric, Metric::Tps | Metric::KneeTps) => {
            format!(" {d:+.2}%")
        }
        // One arm (an existing cluster, a record without one): its mean.
        (None, _) if j.baseline.is_none() => j
            .experiment
            .as_ref()
            .and_then(|s| s.mean(j.metric))
            .map_or(String::new(), |m| format!(" {m:.1}, one arm")),
        (None, _) => String::new(),
    };
    let more = match deciding.len() - 1 {
        0 => String::new(),
        n => format!(", and {n} more"),
    };
    (
        worst,
        format!(
            "{worst}: {} {}{change}{more}",
            j.engine,
            j.metric.unit_label()
        ),
    )
}

/// Each judgement's change with its 95% interval, against 0 and the tolerance (for TPS
/// the loss -M, for latency the rise +M), a row per judgement named on the y axis.
fn chart_changes(judgements: &[Judgement]) -> String {
    let rows = change_rows(judgements);
    if rows.is_empty() {
        return String::new();
    }
    let extent = rows
        .iter()
        .flat_map(|r| [r.2.abs(), r.3.abs(), r.4.abs()])
        .fold(1.0, f64::max)
        * 1.15;
    let n = rows.len() as f64;
    let desc: Vec<String> = rows
        .iter()
        .map(|r| format!("{}: {:+.2}% [{:+.2}%, {:+.2}%]", r.0, r.1, r.2, r.3))
        .collect();
    svg("change with its 95% interval", &desc.join("; "), |root| {
        let x = Axis::values(-extent..extent, "change, experiment vs baseline (%)");
        let y = Axis::rows(rows.iter().map(|r| r.0.clone()).collect(), "metric");
        let caption = "change with its 95% interval (dashed: the tolerance; orange: for the worse)";
        let mut chart = frame(&root, caption, &x, &y)?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (0.0, n)],
            BLACK,
        )))?;
        for (i, (_, c, lo, hi, limit)) in rows.iter().enumerate() {
            // The first row on top, as the verdict table lists them.
            let (bottom, y) = (n - 1.0 - i as f64, n - 0.5 - i as f64);
            // Orange (the experiment's colour) when the change is for the worse (TPS down,
            // latency up), blue when for the better; the caption says so.
            let tone = if (*c < 0.0) == (*limit < 0.0) {
                EXPERIMENT
            } else {
                BASELINE
            };
            chart.draw_series(DashedLineSeries::new(
                vec![(*limit, bottom), (*limit, bottom + 1.0)],
                4,
                3,
                RGBColor(120, 120, 120).into(),
            ))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(*lo, y), (*hi, y)],
                tone.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Circle::new((*c, y), 5, tone.filled())))?;
        }
        Ok(())
    })
}

/// Each judgement's `(label, change, low, high, tolerance)` in percent, for the changes
/// chart: only judgements whose numbers an axis can hold ([`drawable`]).
fn change_rows(judgements: &[Judgement]) -> Vec<(String, f64, f64, f64, f64)> {
    judgements
        .iter()
        .filter_map(|j| {
            let (c, lo, hi) = j.change_pct()?;
            let tol = j.criteria.max_regression_pct;
            let limit = if j.metric.lower_is_better() {
                tol
            } else {
                -tol
            };
            // The table gives every number; the chart only those it can draw.
            if ![c, lo, hi, limit].into_iter().all(drawable) {
                return None;
            }
            Some((
                format!("{} {}", j.engine, j.metric.unit_label()),
                c,
                lo,
                hi,
                limit,
            ))
        })
        .collect()
}

/// A point per measured trial, x = trial index, colored by arm; `(title, y_title)` names
/// the chart and its y axis (with the unit).
fn chart_trials(
    engine: Engine,
    trials: &[&TrialRecord],
    (title, y_title): (&str, &str),
    value: impl Fn(&TrialRecord) -> Option<f64>,
) -> String {
    let points: Vec<(f64, f64, Arm)> = trials
        .iter()
        .filter(|t| t.outcome == Outcome::Measured)
        .filter_map(|t| Some((t.index as f64, value(t)?, t.arm)))
        .filter(|p| drawable(p.1))
        .collect();
    if points.is_empty() {
        return String::new();
    }
    let (lo, hi) = bounds(points.iter().map(|p| p.1));
    let last = trials.iter().map(|t| t.index).max().unwrap_or(1) as f64;
    let desc: Vec<String> = points
        .iter()
        .map(|(x, y, arm)| format!("trial {x} ({arm}): {y:.1}"))
        .collect();
    svg(&format!("{engine}: {title}"), &desc.join("; "), |root| {
        let caption = format!("{engine}: {title}");
        // Trials are whole numbers: the axis is ticked at trials 1, 2, ... only.
        let x = Axis::counts(0.5..last + 0.5, "trial (run order)");
        let mut chart = frame(&root, &caption, &x, &Axis::values(lo..hi, y_title))?;
        let of = |arm: Arm| points.iter().filter(move |p| p.2 == arm);
        for arm in [Arm::Baseline, Arm::Experiment] {
            chart.draw_series(of(arm).map(|&(x, y, arm)| marker(arm, (x, y))))?;
        }
        Ok(())
    })
}

/// mako's per-second TPS of each measured trial, warmup shaded.
fn chart_seconds(engine: Engine, trials: &[&TrialRecord], warmup_s: f64) -> String {
    let series: Vec<(Arm, Vec<(f64, f64)>)> = trials
        .iter()
        .filter(|t| t.outcome == Outcome::Measured)
        .filter_map(|t| {
            let r = t.report.as_ref()?;
            Some((
                t.arm,
                r.samples_tps
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i as f64 + 1.0, *v))
                    .filter(|p| drawable(p.1))
                    .collect(),
            ))
        })
        .filter(|(_, v): &(Arm, Vec<(f64, f64)>)| !v.is_empty())
        .collect();
    if series.is_empty() {
        return String::new();
    }
    let (lo, hi) = bounds(series.iter().flat_map(|(_, v)| v.iter().map(|p| p.1)));
    let x_max = series.iter().map(|(_, v)| v.len()).max().unwrap_or(1) as f64 + 1.0;
    let desc = format!(
        "{} trials' per-second TPS (baseline solid, experiment dashed); the values are in \
         the table below the chart",
        series.len()
    );
    svg(&format!("{engine}: TPS per second"), &desc, |root| {
        let caption = format!("{engine}: TPS per second (warmup shaded)");
        let x = Axis::counts(0.0..x_max, "time into the run (s)");
        let mut chart = frame(
            &root,
            &caption,
            &x,
            &Axis::values(lo..hi, "throughput (TPS)"),
        )?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, lo), (warmup_s.min(x_max), hi)],
            RGBColor(235, 235, 235).filled(),
        )))?;
        for (arm, points) in &series {
            arm_line(&mut chart, *arm, points)?;
        }
        Ok(())
    })
}

fn trial_table(trials: &[TrialRecord]) -> String {
    let mut s = String::from(
        "<h2>Trials</h2><table><tr><th>#</th><th>engine</th><th>arm</th><th>rep</th><th>outcome</th><th>TPS</th>\
         <th>tail latency µs (mako p99, ReadWrite p98)</th><th>storage CPU (cores)</th><th>work dir peak (MiB)</th><th>phases (s)</th><th>error</th></tr>\n",
    );
    for t in trials {
        let opt = |v: Option<f64>, d: usize| {
            v.filter(|v| v.is_finite())
                .map(|v| format!("{v:.d$}"))
                .unwrap_or_default()
        };
        let phases: Vec<String> = t
            .phases
            .iter()
            .map(|p| format!("{} {:.1}", p.phase, p.duration_s))
            .collect();
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            t.index,
            t.engine,
            t.arm,
            t.repetition,
            serde_json::to_value(t.outcome).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
            opt(t.tps(), 1),
            t.txn_latency_us_tail()
                .filter(|(v, _)| v.is_finite())
                .map(|(v, name)| format!("{v:.0} ({name})"))
                .unwrap_or_default(),
            opt(t.storage_cpu_cores, 2),
            opt(t.workdir_peak_bytes.map(|b| b as f64 / 1048576.0), 1),
            esc(&phases.join(", ")),
            esc(t.error.as_deref().unwrap_or(""))
        );
    }
    s.push_str("</table>\n");
    s
}

/// The multitest driver's figures per trial, as the FDB 7.3 qualification report lists
/// them: testers, target, actors, measured TPS, transaction p50/p90/p98, read, GRV and
/// commit p50, retries, and whether the target was followed. Empty without multitest
/// trials. ReadWrite prints latency in ms with 3 decimals; it reads in µs here, as
/// everywhere on the page, which loses nothing.
fn readwrite_table(trials: &[TrialRecord]) -> String {
    let rows: Vec<(&TrialRecord, &MultitestReport)> = trials
        .iter()
        .filter_map(|t| Some((t, t.multitest.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h2>ReadWrite per trial</h2><table><tr><th>#</th><th>arm</th><th>testers</th>\
         <th>actors per tester</th><th>target TPS</th><th>measured TPS</th><th>txn p50 µs</th><th>txn p90 µs</th>\
         <th>txn p98 µs</th><th>read p50 µs</th><th>GRV p50 µs</th><th>commit p50 µs</th>\
         <th>retries</th><th>target followed</th></tr>\n",
    );
    let us = |ms: f64| ms * 1000.0;
    for (t, m) in rows {
        let r = &m.result;
        let followed = match (m.followed(), m.measured()) {
            (true, _) => "yes",
            (false, Ok(())) => "no (saturated)",
            (false, Err(_)) => "no (nothing completed)",
        };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.1}</td><td>{:.0}</td>\
             <td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td>\
             <td>{followed}</td></tr>",
            t.index,
            t.arm,
            m.testers,
            m.actors_per_tester,
            m.target_tps,
            r.tps,
            us(r.latency.p50_ms),
            us(r.latency.p90_ms),
            us(r.latency.p98_ms),
            us(r.read_p50_ms),
            us(r.grv_p50_ms),
            us(r.commit_p50_ms),
            r.retries
        );
    }
    s.push_str("</table>\n");
    s
}

/// The knobs of each arm (and, with `per_engine`, of each engine: RocksDB engines get
/// knobs of their own on tmpfs), once each, in run order.
/// The provenance rows of the trials' knobs, per arm (and engine, `per_engine`); `whose`
/// names whose they are when not the servers' ("tester " against a cluster the gate did
/// not start).
fn knob_rows(trials: &[PlannedTrial], per_engine: bool, whose: &str) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = Vec::new();
    for t in trials {
        let label = if per_engine {
            format!("{whose}knobs ({} {})", t.engine, t.arm)
        } else {
            format!("{whose}knobs ({})", t.arm)
        };
        if !rows.iter().any(|(l, _)| *l == label) {
            let knobs: Vec<String> = t.knobs.iter().map(Knob::arg).collect();
            rows.push((label, knobs.join(" ")));
        }
    }
    rows
}

fn provenance(plan: &Plan) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    for a in plan.baseline.iter().chain([&plan.experiment]) {
        let build = a
            .build_config
            .as_ref()
            .map(|c| {
                let compiler = match (c.cxx_compiler.as_str(), c.cxx_compiler_version.as_str()) {
                    ("", "") => String::new(),
                    (path, "") | ("", path) => format!(", {path}"),
                    (path, version) => format!(", {version} ({path})"),
                };
                format!(", {} build{compiler}", c.build_type)
            })
            .unwrap_or_default();
        rows.push((
            a.arm.to_string(),
            format!(
                "{} ({}, source version {}{build})",
                a.tree.root.display(),
                a.version.release,
                a.version.source_version
            ),
        ));
    }
    if let Some(r) = &plan.recorded {
        rows.push((
            "record".into(),
            format!("recorded baseline {}", r.summary()),
        ));
    }
    rows.push(("workload".into(), plan.config.workload.summary()));
    rows.push((
        "work dir".into(),
        format!(
            "{} ({}, filesystem {}, chosen by {})",
            plan.workdir.path.display(),
            plan.workdir.kind(),
            plan.workdir.fs_type,
            plan.workdir.chosen_by
        ),
    ));
    rows.push(("trial order seed".into(), plan.config.seed.to_string()));
    let whose = plan.config.cluster.knob_owner();
    rows.extend(knob_rows(&plan.trials, plan.engines.len() > 1, whose));
    let mut s = String::from("<h2>Provenance</h2><table>\n");
    for (k, v) in rows {
        let _ = writeln!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&v));
    }
    s.push_str("</table>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values no axis can hold (+inf, 1e308, NaN) in the trials and the change: plotters
    /// would spin forever on them, after the verdict is printed.
    #[test]
    fn values_no_axis_can_hold_never_reach_a_chart() {
        use crate::judge::tests::{interleaved, trial, CRITERIA};
        let mut trials = [
            trial(1, Arm::Baseline, 1000.0),
            trial(2, Arm::Experiment, f64::INFINITY),
            trial(3, Arm::Experiment, 1e308),
            trial(4, Arm::Baseline, f64::NAN),
        ];
        trials[1].report.as_mut().unwrap().samples_tps =
            vec![f64::INFINITY, 1e308, f64::NAN, 900.0];
        let refs: Vec<&TrialRecord> = trials.iter().collect();
        let tps = chart_trials(Engine::Redwood, &refs, ("TPS", "TPS"), |t| {
            t.report.as_ref().map(|r| r.tps)
        });
        let seconds = chart_seconds(Engine::Redwood, &refs, 1.0);
        for chart in [&tps, &seconds] {
            assert!(
                chart.contains("<svg") && !chart.contains("not drawn"),
                "{chart}"
            );
        }
        // A judgement whose change is +inf% (and one with a NaN bound) keeps its table row
        // but gets no bar; the finite one is drawn.
        let mut judgements = crate::judge::judge(
            &interleaved(&[1000.0, 1010.0, 990.0], &[900.0, 905.0, 895.0]),
            &[Engine::Redwood],
            CRITERIA,
            false,
        );
        let finite = judgements[0].clone();
        for bad in [f64::INFINITY, f64::NAN, 1e308] {
            let mut j = finite.clone();
            j.comparison.as_mut().unwrap().ci_high_pct = bad;
            judgements.push(j);
        }
        let changes = chart_changes(&judgements);
        assert!(changes.contains("<svg"), "{changes}");
        assert_eq!(
            changes.matches("<circle").count(),
            1,
            "only the finite change"
        );
    }

    /// The heading says the verdict, the metric that decided it and that metric's change
    /// with its interval, in words (before: "REGRESSION (redwood tps REGRESSION; 1
    /// metric(s) shown, not gating)").
    #[test]
    fn the_headline_is_the_verdict_and_the_change_that_decided_it() {
        use crate::judge::tests::{interleaved, CRITERIA};
        let trials = interleaved(&[1000.0, 1010.0, 990.0], &[950.0, 960.5, 945.0]);
        let mut judgements = crate::judge::judge(&trials, &[Engine::Redwood], CRITERIA, false);
        let (verdict, text) = headline(&judgements);
        assert_eq!(verdict, Verdict::Regression);
        assert_eq!(text, "REGRESSION: redwood TPS -4.82% [-5.48%, -4.15%]");
        // Two engines with that verdict: the first, and how many more.
        let mut other = judgements[0].clone();
        other.engine = Engine::Rocksdb;
        judgements.push(other);
        let (_, text) = headline(&judgements);
        assert!(text.ends_with("[-5.48%, -4.15%], and 1 more"), "{text}");
        // Nothing gating was judged.
        judgements.iter_mut().for_each(|j| j.gating = false);
        assert_eq!(headline(&judgements).1, "ERROR: no metric judged");
    }

    #[test]
    fn every_engine_and_arm_shows_its_knobs_once() {
        let trial = |engine, arm, knob: &str| PlannedTrial {
            index: 0,
            engine,
            arm,
            repetition: 1,
            knobs: vec![Knob::auto(knob, "1")],
            target_tps: None,
            pinning: None,
            rerun: false,
        };
        let trials = [
            trial(Engine::Redwood, Arm::Baseline, "a"),
            trial(Engine::Redwood, Arm::Experiment, "a"),
            trial(Engine::Redwood, Arm::Baseline, "a"),
            trial(Engine::Rocksdb, Arm::Experiment, "r"),
            trial(Engine::Rocksdb, Arm::Baseline, "r"),
        ];
        let rows = knob_rows(&trials, true, "");
        let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "knobs (redwood baseline)",
                "knobs (redwood experiment)",
                "knobs (rocksdb experiment)",
                "knobs (rocksdb baseline)"
            ]
        );
        assert_eq!(rows[2].1, "--knob_r=1");
        assert_eq!(knob_rows(&trials[..2], false, "").len(), 2);
    }
}
