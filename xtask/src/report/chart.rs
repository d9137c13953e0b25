//! Report stage: what the charts of report.html share: the arms' colours and markers,
//! which values an axis can hold, and the frame and SVG every chart is drawn in.

use html_escape::encode_text as esc;
use plotters::{
    coord::{
        ranged1d::{DefaultFormatting, KeyPointHint},
        types::RangedCoordf64,
    },
    prelude::*,
};

use crate::config::Arm;

/// The arms' colours: dark blue and orange (Okabe-Ito), apart in hue for most colour
/// vision and in lightness in greyscale (see the test); the markers differ too (circle,
/// triangle) and the experiment's per-second line is dashed.
pub(super) const BASELINE: RGBColor = RGBColor(0, 68, 136);
pub(super) const EXPERIMENT: RGBColor = RGBColor(230, 159, 0);

/// An arm's colour on every chart of the report.
pub(super) fn color(arm: Arm) -> RGBColor {
    match arm {
        Arm::Baseline => BASELINE,
        Arm::Experiment => EXPERIMENT,
    }
}

/// An arm's marker at `p`: a circle for the baseline, a triangle for the experiment, so
/// the arms differ without their colours too.
pub(super) fn marker<DB: DrawingBackend>(
    arm: Arm,
    p: (f64, f64),
) -> DynElement<'static, DB, (f64, f64)> {
    match arm {
        Arm::Baseline => Circle::new(p, 5, color(arm).filled()).into_dyn(),
        Arm::Experiment => TriangleMarker::new(p, 7, color(arm).filled()).into_dyn(),
    }
}

/// The experiment's dashes: 6 px drawn, 4 px gap.
const DASH_PX: u32 = 6;
const GAP_PX: u32 = 4;

/// Draws `arm`'s line through `points` as [`LEGEND`] says: the baseline solid, the
/// experiment dashed. Every chart that joins an arm's points draws them with this.
pub(super) fn arm_line(chart: &mut Chart, arm: Arm, points: &[(f64, f64)]) -> DrawResult {
    let style = color(arm).stroke_width(2);
    match arm {
        Arm::Baseline => {
            chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
        }
        Arm::Experiment => {
            chart.draw_series(DashedLineSeries::new(
                points.iter().copied(),
                DASH_PX,
                GAP_PX,
                style,
            ))?;
        }
    }
    Ok(())
}

/// The legend of every chart of the page, above the first: each arm's colour, marker
/// ([`marker`]) and line ([`arm_line`]).
pub(super) const LEGEND: &str = "<p><span class=\"a\">&#9679; baseline (A), solid line</span> \
     &nbsp; <span class=\"b\">&#9650; experiment (B), dashed line</span></p>\n";

/// Whether a value can be placed on a chart's axis: finite and below 1e12 in magnitude.
/// plotters computes an axis's key points from its range and never ends on an infinite
/// one (`compute_f64_key_points`): a p99 of 1e308 or a change of +inf% must not reach it.
pub(super) fn drawable(v: f64) -> bool {
    v.is_finite() && v.abs() <= 1e12
}

/// Axis bounds with 5% room; a flat series gets +-1. Only [`drawable`] values.
pub(super) fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let pad = ((hi - lo) * 0.05).max(1.0);
    ((lo - pad).max(0.0), hi + pad)
}

pub(super) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Text sizes of every chart, CSS pixels as the page shows them: tick labels, axis titles,
/// captions. 13 px is the smallest a chart's text should be read at (the page's own text is
/// 16 px).
const TICK_PX: f64 = 13.0;
const AXIS_TITLE_PX: f64 = 14.0;
const CAPTION_PX: f64 = 16.0;

/// A font of at least `px` CSS pixels as plotters' SVG backend needs it: that backend
/// writes a font's size, rounded down to whole pixels, divided by 1.24 (`plotters-svg`,
/// `svg.rs`), so 12 given would be 9.7 px.
fn font(px: f64) -> (&'static str, f64) {
    ("sans-serif", (px * 1.24).ceil())
}

/// What an axis's ticks read: numbers with a fixed count of decimals, or one label per
/// row at rows 0.5, 1.5, ... from the bottom (the changes chart's metrics).
enum TickText {
    Decimals(usize),
    Rows(Vec<String>),
}

/// One axis of a chart: its range, the values it is ticked at and how those read, and its
/// title with the unit.
pub(super) struct Axis {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
    text: TickText,
    title: String,
}

impl Axis {
    /// An axis of a quantity that takes any value (TPS, latency, a change): ticks at a
    /// round step (1, 2 or 5 times a power of ten) with as many decimals as the step has.
    pub(super) fn values(range: std::ops::Range<f64>, title: &str) -> Axis {
        let step = round_step(range.end - range.start);
        // A step of 0.5 needs 1 decimal, 0.05 two; a step of 1 or more none.
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        Axis::stepped(range, step, TickText::Decimals(decimals), title)
    }

    /// An axis of whole numbers (trials, seconds, target TPS): ticks on whole numbers only,
    /// read without decimals.
    pub(super) fn counts(range: std::ops::Range<f64>, title: &str) -> Axis {
        let step = round_step(range.end - range.start).max(1.0);
        Axis::stepped(range, step, TickText::Decimals(0), title)
    }

    /// An axis of `labels` as rows, the first on top: row i of n spans n-1-i .. n-i.
    pub(super) fn rows(labels: Vec<String>, title: &str) -> Axis {
        let n = labels.len();
        Axis {
            range: 0.0..n as f64,
            ticks: (0..n).map(|i| i as f64 + 0.5).collect(),
            text: TickText::Rows(labels.into_iter().rev().collect()),
            title: title.to_string(),
        }
    }

    fn stepped(range: std::ops::Range<f64>, step: f64, text: TickText, title: &str) -> Axis {
        // Each tick a whole multiple of the step, so that no rounding error adds up.
        let (first, last) = ((range.start / step).ceil(), (range.end / step).floor());
        let ticks = (first as i64..=last as i64)
            .map(|k| k as f64 * step)
            .collect();
        Axis {
            range,
            ticks,
            text,
            title: title.to_string(),
        }
    }

    /// What the tick at `v` reads.
    fn tick(&self, v: f64) -> String {
        match &self.text {
            TickText::Decimals(d) => {
                // -0 would read "-0".
                let v = if v.abs() < 1e-9 { 0.0 } else { v };
                format!("{v:.d$}")
            }
            TickText::Rows(labels) => labels
                .get(v.floor().max(0.0) as usize)
                .cloned()
                .unwrap_or_default(),
        }
    }

    fn coord(&self) -> Ticked {
        Ticked {
            inner: self.range.clone().into(),
            ticks: self.ticks.clone(),
        }
    }
}

/// An [`Axis`] as plotters' coordinate: its range, with grid lines and labels at the
/// axis's ticks only (plotters' own would put them at 0.5 steps on a range of 3 trials).
pub(super) struct Ticked {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    // The tick text comes from the axis's formatter: this one is never read.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // No light grid lines between the ticks.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// The round step (1, 2 or 5 times a power of ten) that ticks `span` about 5 to 10 times.
fn round_step(span: f64) -> f64 {
    let raw = if span.is_finite() && span > 0.0 {
        span / 8.0
    } else {
        1.0
    };
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A chart of the report: both axes ticked by [`Axis`].
pub(super) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// An x-y chart of the report on `root`: `caption` above, axes `x` by `y`, each with its
/// ticks and its title. Every chart of the report is drawn on one.
pub(super) fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    x: &Axis,
    y: &Axis,
) -> Result<Chart<'a, 'b>, Box<dyn std::error::Error>> {
    // Room for the longest tick label beside the y axis, and its title.
    let y_chars = y.ticks.iter().map(|&v| y.tick(v).chars().count()).max();
    let y_area = (y_chars.unwrap_or(1) as f64 * TICK_PX * 0.6 + 2.5 * AXIS_TITLE_PX) as u32;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, font(CAPTION_PX))
        .margin(10)
        .x_label_area_size((2.0 * TICK_PX + 2.0 * AXIS_TITLE_PX) as u32)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x.coord(), y.coord())?;
    let (x_tick, y_tick) = (|v: &f64| x.tick(*v), |v: &f64| y.tick(*v));
    chart
        .configure_mesh()
        .x_desc(&x.title)
        .y_desc(&y.title)
        .x_label_formatter(&x_tick)
        .y_label_formatter(&y_tick)
        .label_style(font(TICK_PX))
        .axis_desc_style(font(AXIS_TITLE_PX))
        .draw()?;
    Ok(chart)
}

/// Draws into an SVG string; a drawing error becomes a visible note, not a lost report.
pub(super) fn svg(
    title: &str,
    desc: &str,
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> DrawResult,
) -> String {
    let mut out = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut out, (800, 320)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| draw(root.clone()).map_err(|e| e.to_string()))
            .and_then(|()| root.present().map_err(|e| e.to_string()))
    };
    match result {
        // A title and description for screen readers (and a tooltip), first in the SVG.
        Ok(()) => {
            let head = out.find('>').map_or(0, |i| i + 1);
            let (open, rest) = out.split_at(head);
            format!(
                "<div>{open}<title>{}</title><desc>{}</desc>{rest}</div>\n",
                esc(title),
                esc(desc)
            )
        }
        Err(e) => format!("<p class=\"warn\">chart not drawn: {}</p>\n", esc(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arms_are_told_apart_in_greyscale_and_by_their_marks() {
        // The arms' colours must differ in a greyscale print. Rec. 601 luma, 0-255.
        let luma =
            |c: RGBColor| 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
        assert!(
            (luma(EXPERIMENT) - luma(BASELINE)).abs() > 80.0,
            "{} vs {}",
            luma(BASELINE),
            luma(EXPERIMENT)
        );
        let svg = svg("t", "d <&>", |root| {
            let mut chart = ChartBuilder::on(&root).build_cartesian_2d(0f64..3.0, 0f64..3.0)?;
            chart.draw_series(std::iter::once(Circle::new(
                (1.0, 1.0),
                5,
                BASELINE.filled(),
            )))?;
            chart.draw_series(std::iter::once(TriangleMarker::new(
                (2.0, 2.0),
                7,
                EXPERIMENT.filled(),
            )))?;
            Ok(())
        });
        assert!(
            svg.contains("<title>t</title><desc>d &lt;&amp;&gt;</desc>"),
            "{svg}"
        );
        assert!(svg.contains("<circle") && svg.contains("<polygon"), "{svg}");
    }

    /// Each `<text>` of `svg`: its font size, whether it is rotated, and its text.
    pub(crate) fn texts(svg: &str) -> Vec<(f64, bool, String)> {
        svg.split("<text ")
            .skip(1)
            .map(|t| {
                let (attrs, rest) = t.split_once('>').unwrap();
                let size = attrs.split("font-size=\"").nth(1).unwrap();
                let size = size[..size.find('"').unwrap()].parse().unwrap();
                let text = rest[..rest.find("</text>").unwrap()].trim().to_string();
                (size, attrs.contains("rotate("), text)
            })
            .collect()
    }

    #[test]
    fn axes_tick_whole_trials_and_read_with_their_steps_decimals() {
        let ticks = |a: &Axis| -> Vec<String> { a.ticks.iter().map(|&v| a.tick(v)).collect() };
        // Three trials: plotters' own ticks were 0.0, 0.5, ... 3.5.
        assert_eq!(ticks(&Axis::counts(0.5..3.5, "trial")), ["1", "2", "3"]);
        assert_eq!(
            ticks(&Axis::counts(0.5..40.5, "trial")),
            ["5", "10", "15", "20", "25", "30", "35", "40"]
        );
        assert_eq!(
            ticks(&Axis::values(3997.0..4003.0, "p99 latency (µs)")),
            ["3997", "3998", "3999", "4000", "4001", "4002", "4003"]
        );
        assert_eq!(
            ticks(&Axis::values(0.95..1.05, "ratio")),
            ["0.96", "0.98", "1.00", "1.02", "1.04"]
        );
        assert_eq!(ticks(&Axis::values(-2.3..2.3, "change (%)"))[2], "0");
        assert_eq!(
            ticks(&Axis::rows(vec!["top".into(), "bottom".into()], "metric")),
            ["bottom", "top"]
        );
    }

    #[test]
    fn a_frame_names_both_axes_and_its_text_is_readable() {
        let svg = svg("t", "d", |root| {
            let x = Axis::counts(0.5..6.5, "trial (run order)");
            frame(
                &root,
                "c",
                &x,
                &Axis::values(900.0..1000.0, "throughput (TPS)"),
            )?;
            Ok(())
        });
        let texts = texts(&svg);
        let rotated: Vec<&str> = texts.iter().filter(|t| t.1).map(|t| t.2.as_str()).collect();
        assert_eq!(rotated, ["throughput (TPS)"], "the y axis's title");
        assert!(texts.iter().any(|t| t.2 == "trial (run order)"), "{svg}");
        // Before: plotters' default, 12 given and 9.7 px written.
        assert!(texts.iter().all(|t| t.0 >= 13.0), "{texts:?}");
        let numbers: Vec<&str> = texts
            .iter()
            .map(|t| t.2.as_str())
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert!(numbers.contains(&"6") && !numbers.iter().any(|n| n.contains('.')));
    }

    #[test]
    fn the_experiments_line_is_dashed_and_the_baselines_solid() {
        let points = [(0.0, 0.0), (10.0, 10.0)];
        let svg = svg("t", "d", |root| {
            let (x, y) = (Axis::values(0.0..10.0, "x"), Axis::values(0.0..10.0, "y"));
            let mut chart = frame(&root, "c", &x, &y)?;
            arm_line(&mut chart, Arm::Baseline, &points)?;
            arm_line(&mut chart, Arm::Experiment, &points)?;
            Ok(())
        });
        let lines = |colour: &str| svg.matches(&format!("stroke=\"{colour}\"")).count();
        assert_eq!(lines("#004488"), 1, "one solid line");
        assert!(lines("#E69F00") > 20, "dashes: {svg}");
    }
}
