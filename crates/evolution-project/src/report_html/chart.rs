//! A line chart on the SVG writer: series of points, horizontal reference
//! levels, axes with round ticks and a legend, all styled by CSS classes.

use super::svg::{Anchor, Scale, Svg, num, ticks};

/// One line of points (data units), optionally with a dot and a tooltip per point.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Series {
    /// The legend's text.
    pub label: String,
    /// The CSS class of the line and its dots.
    pub class: &'static str,
    /// The points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// One tooltip per point; dots are drawn only when this is not empty.
    pub tooltips: Vec<String>,
}

/// A horizontal reference line across the plot, such as a decision boundary.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Level {
    /// The legend's text.
    pub label: String,
    /// The CSS class of the line.
    pub class: &'static str,
    /// Where it is, in data units.
    pub y: f64,
}

/// What a chart shows.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LineChart {
    /// The accessible name of the chart.
    pub title: String,
    /// The horizontal axis' name.
    pub x_label: &'static str,
    /// The vertical axis' name.
    pub y_label: &'static str,
    /// The horizontal axis runs from 0 to this.
    pub x_max: f64,
    /// The lines, drawn in order.
    pub series: Vec<Series>,
    /// The reference levels, drawn under the lines.
    pub levels: Vec<Level>,
}

/// Canvas width.
const WIDTH: f64 = 640.0;
/// Left margin (the vertical axis' ticks and name).
const LEFT: f64 = 60.0;
/// Right margin.
const RIGHT: f64 = 16.0;
/// Top margin.
const TOP: f64 = 14.0;
/// Plot height.
const PLOT: f64 = 220.0;
/// Height of the horizontal axis' ticks and name.
const X_AXIS: f64 = 46.0;
/// Height of one legend row.
const ROW: f64 = 18.0;

/// The chart as one `<svg>` element of class `class`.
pub(super) fn line_chart(chart: &LineChart, class: &'static str) -> String {
    let finite = |v: &f64| v.is_finite();
    let ys: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(chart.levels.iter().map(|l| l.y))
        .chain([0.0])
        .filter(finite)
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(0.25);
    let (lo, hi) = (lo - pad, hi + pad);
    let x_max = if chart.x_max.is_finite() && chart.x_max > 0.0 {
        chart.x_max
    } else {
        1.0
    };
    let x = Scale::new(0.0, x_max, LEFT, WIDTH - RIGHT);
    let y = Scale::new(lo, hi, TOP + PLOT, TOP);
    let rows = chart.series.len().saturating_add(chart.levels.len());
    #[expect(
        clippy::cast_precision_loss,
        reason = "a chart has a handful of legend rows"
    )]
    let height = TOP + PLOT + X_AXIS + ROW * rows as f64 + 6.0;
    let mut svg = Svg::new(WIDTH, height);

    svg.rect((LEFT, TOP), (WIDTH - RIGHT - LEFT, PLOT), "plot");
    for t in ticks(lo, hi) {
        svg.line((LEFT, y.at(t)), (WIDTH - RIGHT, y.at(t)), "grid");
        svg.text((LEFT - 6.0, y.at(t) + 4.0), Anchor::End, "tick", &short(t));
    }
    for t in ticks(0.0, x_max) {
        svg.line((x.at(t), TOP + PLOT), (x.at(t), TOP + PLOT + 4.0), "axis");
        svg.text(
            (x.at(t), TOP + PLOT + 17.0),
            Anchor::Middle,
            "tick",
            &short(t),
        );
    }
    svg.line((LEFT, TOP + PLOT), (WIDTH - RIGHT, TOP + PLOT), "axis");
    svg.line((LEFT, TOP), (LEFT, TOP + PLOT), "axis");
    svg.text(
        ((LEFT + WIDTH - RIGHT) / 2.0, TOP + PLOT + 36.0),
        Anchor::Middle,
        "axis-name",
        chart.x_label,
    );
    svg.text((4.0, TOP + 10.0), Anchor::Start, "axis-name", chart.y_label);

    for level in chart.levels.iter().filter(|l| l.y.is_finite()) {
        svg.line(
            (LEFT, y.at(level.y)),
            (WIDTH - RIGHT, y.at(level.y)),
            level.class,
        );
    }
    for series in &chart.series {
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|p| (x.at(p.0), y.at(p.1)))
            .collect();
        svg.polyline(&points, series.class);
        for (point, tip) in points.iter().zip(&series.tooltips) {
            svg.circle(*point, 3.5, series.class, tip);
        }
    }

    let mut row_y = TOP + PLOT + X_AXIS;
    let legend = chart
        .series
        .iter()
        .map(|s| (s.class, s.label.as_str()))
        .chain(chart.levels.iter().map(|l| (l.class, l.label.as_str())));
    for (class, label) in legend {
        svg.line((LEFT, row_y), (LEFT + 24.0, row_y), class);
        svg.text((LEFT + 32.0, row_y + 4.0), Anchor::Start, "legend", label);
        row_y += ROW;
    }
    svg.finish(class, &chart.title)
}

/// A tick value: an integer without decimals, else two decimals.
fn short(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        num(v)
            .trim_end_matches("00")
            .trim_end_matches('.')
            .to_owned()
    } else {
        num(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> LineChart {
        LineChart {
            title: "evidence".to_owned(),
            x_label: "paired questions",
            y_label: "ln E",
            x_max: 12.0,
            series: vec![Series {
                label: "ln E <&>".to_owned(),
                class: "s-lne",
                points: vec![(0.0, 0.0), (6.0, 2.9), (f64::NAN, 1.0)],
                tooltips: vec!["start".to_owned(), "after block 1".to_owned()],
            }],
            levels: vec![
                Level {
                    label: "accept".to_owned(),
                    class: "l-accept",
                    y: 20_f64.ln(),
                },
                Level {
                    label: "never".to_owned(),
                    class: "l-never",
                    y: f64::INFINITY,
                },
            ],
        }
    }

    #[test]
    fn a_chart_draws_its_series_levels_axes_and_legend() {
        let out = line_chart(&chart(), "gate-chart");
        assert_eq!(out.matches("<svg").count(), 1);
        assert!(out.starts_with("<svg class=\"gate-chart\""));
        assert_eq!(out.matches("<polyline class=\"s-lne\"").count(), 1);
        // Two dots with tooltips; the point that is not finite is left out.
        assert_eq!(out.matches("<circle class=\"s-lne\"").count(), 2);
        assert!(out.contains("<title>after block 1</title>"));
        // The accept level is drawn and in the legend; the infinite one only in the legend.
        assert_eq!(out.matches("<line class=\"l-accept\"").count(), 2);
        assert_eq!(out.matches("<line class=\"l-never\"").count(), 1);
        assert!(out.contains(">ln E &lt;&amp;&gt;</text>"));
        assert!(out.contains(">paired questions</text>"));
        assert!(!out.contains("NaN") && !out.contains("inf"));
    }

    #[test]
    fn ticks_read_as_integers_where_they_are() {
        assert_eq!(short(4.0), "4");
        assert_eq!(short(-2.0), "-2");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(2.5), "2.50");
        assert_eq!(short(10.0), "10");
        assert_eq!(short(100.0), "100");
    }
}
