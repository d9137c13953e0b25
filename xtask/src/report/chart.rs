//! Report stage: what the charts of report.html share: the arms' colours and markers,
//! which values an axis can hold, and the frame and SVG every chart is drawn in.

use html_escape::encode_text as esc;
use plotters::{coord::types::RangedCoordf64, prelude::*};

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

/// An x-y chart of the report on `root`: `caption` above, axes `x` by `y`, the mesh drawn
/// with `x_desc` under the x axis. Every chart but the changes chart (which has no y
/// axis) is drawn on one.
pub(super) fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_desc: &str,
) -> Result<
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    Box<dyn std::error::Error>,
> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)?;
    chart.configure_mesh().x_desc(x_desc).draw()?;
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
        let root = SVGBackend::with_string(&mut out, (800, 300)).into_drawing_area();
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
}
