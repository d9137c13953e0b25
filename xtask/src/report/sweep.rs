//! Report stage: a saturation sweep's section of report.html: per engine, one row per
//! step and arm with the reference report's columns, each arm's knee, measured TPS
//! against the target (the diagonal is a target followed exactly) and p98 latency
//! against the measured TPS. Latency reads in µs, as everywhere on the page.

use std::fmt::Write as _;

use fdb::Engine;
use html_escape::encode_text as esc;
use plotters::prelude::*;

use super::chart::{arm_line, bounds, drawable, frame, marker, svg, Axis};
use crate::{
    config::readwrite::FOLLOWED_SHARE,
    config::Arm,
    judge::knee::{knee, steps, Step, CONFIRM_TRIALS},
    results::trial::TrialRecord,
};

/// The sweep section of `engine` (empty without sweep trials).
pub fn section(engine: Engine, trials: &[TrialRecord]) -> String {
    let steps = steps(trials, engine);
    if steps.is_empty() {
        return String::new();
    }
    let mut s = format!("<h3>{engine}: saturation sweep</h3>\n<p>");
    for arm in [Arm::Baseline, Arm::Experiment] {
        if steps.iter().any(|st| st.arm == arm) {
            let k = knee(&steps, arm).map_or("below the first step".into(), |k| format!("{k} TPS"));
            let _ = write!(s, "{arm} knee: {} &nbsp; ", esc(&k));
        }
    }
    let _ = writeln!(
        s,
        "(the highest target followed: a majority of the arm's trials within {:.0}%, retries \
         at most 1% of transactions; a step the arms split on is run to {CONFIRM_TRIALS} \
         trials per arm)</p>",
        (1.0 - FOLLOWED_SHARE) * 100.0
    );
    s.push_str(&table(&steps));
    s.push_str(&chart(
        engine,
        &steps,
        (
            "measured TPS against the target (diagonal: followed)",
            "target (TPS)",
            "measured (TPS)",
        ),
        |st| Some((st.target_tps as f64, st.tps?)),
        true,
    ));
    s.push_str(&chart(
        engine,
        &steps,
        (
            "p98 transaction latency against the measured TPS",
            "measured (TPS)",
            "p98 latency (µs)",
        ),
        |st| Some((st.tps?, st.p98_ms? * 1000.0)),
        false,
    ));
    s
}

fn table(steps: &[Step]) -> String {
    let mut s = String::from(
        "<table><tr><th>target TPS</th><th>arm</th><th>trials</th><th>measured TPS</th>\
         <th>txn p50 µs</th><th>txn p98 µs</th><th>retries</th><th>followed</th></tr>\n",
    );
    let opt = |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or_default();
    for st in steps {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{} ({} measured)</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            st.target_tps,
            st.arm,
            st.trials,
            st.measured,
            opt(st.tps, 1),
            opt(st.p50_ms.map(|ms| ms * 1000.0), 0),
            opt(st.p98_ms.map(|ms| ms * 1000.0), 0),
            st.retries,
            match (st.followed, st.trials) {
                (true, 1) => "yes".to_string(),
                (false, 1) => "no".to_string(),
                (f, n) => format!(
                    "{} ({} of {n})",
                    if f { "yes" } else { "no" },
                    st.followed_trials
                ),
            }
        );
    }
    s.push_str("</table>\n");
    s
}

/// One line per arm through its steps' `(x, y)`, each arm's line and marker as the page's
/// legend shows them; with `diagonal`, the line y = x. `(title, x_title, y_title)` name
/// the chart and its axes (with their units).
fn chart(
    engine: Engine,
    steps: &[Step],
    (title, x_title, y_title): (&str, &str, &str),
    point: impl Fn(&Step) -> Option<(f64, f64)>,
    diagonal: bool,
) -> String {
    let series: Vec<(Arm, Vec<(f64, f64)>)> = [Arm::Baseline, Arm::Experiment]
        .into_iter()
        .map(|arm| {
            let pts = steps
                .iter()
                .filter(|st| st.arm == arm)
                .filter_map(&point)
                .filter(|(x, y)| drawable(*x) && drawable(*y))
                .collect::<Vec<_>>();
            (arm, pts)
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if series.is_empty() {
        return String::new();
    }
    let (x_lo, x_hi) = bounds(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)));
    let (y_lo, y_hi) = bounds(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let desc: Vec<String> = series
        .iter()
        .flat_map(|(arm, p)| p.iter().map(move |(x, y)| format!("{arm} {x:.0}: {y:.2}")))
        .collect();
    svg(&format!("{engine}: {title}"), &desc.join("; "), |root| {
        let caption = format!("{engine}: {title}");
        let (x, y) = (
            Axis::values(x_lo..x_hi, x_title),
            Axis::values(y_lo..y_hi, y_title),
        );
        let mut chart = frame(&root, &caption, &x, &y)?;
        if diagonal {
            let (lo, hi) = (x_lo.max(y_lo), x_hi.min(y_hi));
            chart.draw_series(DashedLineSeries::new(
                [(lo, lo), (hi, hi)],
                5,
                5,
                BLACK.mix(0.4).into(),
            ))?;
        }
        for (arm, pts) in &series {
            arm_line(&mut chart, *arm, pts)?;
            chart.draw_series(pts.iter().map(|&p| marker(*arm, p)))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(arm: Arm, target_tps: u64, tps: f64) -> Step {
        Step {
            engine: Engine::Redwood,
            arm,
            target_tps,
            trials: 1,
            measured: 1,
            tps: Some(tps),
            p50_ms: Some(0.686),
            p98_ms: Some(4.0),
            retries: 0.0,
            followed_trials: 1,
            followed: true,
        }
    }

    fn steps() -> Vec<Step> {
        [400, 600, 900]
            .into_iter()
            .flat_map(|t| {
                [
                    step(Arm::Baseline, t, t as f64),
                    step(Arm::Experiment, t, 0.9 * t as f64),
                ]
            })
            .collect()
    }

    /// Latency reads in µs, as in every other table and chart of the page (before: ms
    /// here and in ReadWrite's table, µs in the trials').
    #[test]
    fn the_sweeps_latency_reads_in_us() {
        let table = table(&steps());
        assert!(
            table.contains("<th>txn p50 µs</th><th>txn p98 µs</th>")
                && table.contains("<td>686</td><td>4000</td>"),
            "{table}"
        );
    }

    /// The page's legend says the experiment's line is dashed: so it is on the sweep's
    /// charts too (before: solid, as the baseline's).
    #[test]
    fn the_sweeps_lines_follow_the_legend() {
        let svg = chart(
            Engine::Redwood,
            &steps(),
            ("t", "target (TPS)", "measured (TPS)"),
            |st| Some((st.target_tps as f64, st.tps?)),
            true,
        );
        let lines = |colour: &str| svg.matches(&format!("stroke=\"{colour}\"")).count();
        assert_eq!(lines("#004488"), 1, "the baseline's one solid line");
        assert!(lines("#E69F00") > 20, "the experiment's dashes: {svg}");
    }
}
