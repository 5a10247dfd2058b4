//! A small SVG writer for the report's charts: shapes with a CSS class,
//! text escaped, numbers written with two decimals (a value that is not
//! finite is drawn at 0, never written as `NaN`), and a linear scale.
//!
//! The report needs lines, polylines, circles and text on one canvas, with
//! the colours left to the page's stylesheet; a plotting crate would bring
//! fonts, raster back ends and far more than these few elements, so the
//! writer is the project's own.

use std::fmt::Write as _;

use super::escape;

/// How a text is anchored at its point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

impl Anchor {
    /// The `text-anchor` value.
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being drawn: shapes are appended in order (later ones on
/// top), then [`Svg::finish`] wraps them.
#[derive(Debug, Clone)]
pub(super) struct Svg {
    /// Canvas width in user units.
    width: f64,
    /// Canvas height in user units.
    height: f64,
    /// The shapes so far.
    body: String,
}

/// A number as SVG writes it: two decimals, 0 for a value that is not finite.
pub(super) fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    // `-0.00` and `0.00` are the same coordinate; write one of them.
    let text = format!("{v:.2}");
    if text == "-0.00" {
        "0.00".to_owned()
    } else {
        text
    }
}

impl Svg {
    /// An empty canvas of `width` × `height`.
    pub(super) fn new(width: f64, height: f64) -> Self {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    /// A straight line from `a` to `b`.
    pub(super) fn line(&mut self, a: (f64, f64), b: (f64, f64), class: &'static str) {
        let _ = writeln!(
            self.body,
            r#"<line class="{class}" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
            num(a.0),
            num(a.1),
            num(b.0),
            num(b.1)
        );
    }

    /// A line through `points` in order; nothing for fewer than two points.
    pub(super) fn polyline(&mut self, points: &[(f64, f64)], class: &'static str) {
        if points.len() < 2 {
            return;
        }
        let coords: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
            .collect();
        let _ = writeln!(
            self.body,
            r#"<polyline class="{class}" points="{}"/>"#,
            coords.join(" ")
        );
    }

    /// A circle of radius `r` at `centre`, with a tooltip when `title` is not empty.
    pub(super) fn circle(&mut self, centre: (f64, f64), r: f64, class: &'static str, title: &str) {
        if title.is_empty() {
            let _ = writeln!(
                self.body,
                r#"<circle class="{class}" cx="{}" cy="{}" r="{}"/>"#,
                num(centre.0),
                num(centre.1),
                num(r)
            );
        } else {
            let _ = writeln!(
                self.body,
                r#"<circle class="{class}" cx="{}" cy="{}" r="{}"><title>{}</title></circle>"#,
                num(centre.0),
                num(centre.1),
                num(r),
                escape::text(title)
            );
        }
    }

    /// A rectangle with its top-left corner at `corner`.
    pub(super) fn rect(&mut self, corner: (f64, f64), size: (f64, f64), class: &'static str) {
        let _ = writeln!(
            self.body,
            r#"<rect class="{class}" x="{}" y="{}" width="{}" height="{}"/>"#,
            num(corner.0),
            num(corner.1),
            num(size.0.max(0.0)),
            num(size.1.max(0.0))
        );
    }

    /// `content` (escaped) at `at`.
    pub(super) fn text(
        &mut self,
        at: (f64, f64),
        anchor: Anchor,
        class: &'static str,
        content: &str,
    ) {
        let _ = writeln!(
            self.body,
            r#"<text class="{class}" x="{}" y="{}" text-anchor="{}">{}</text>"#,
            num(at.0),
            num(at.1),
            anchor.as_str(),
            escape::text(content)
        );
    }

    /// The finished document: an `<svg>` element of class `class` whose
    /// accessible name is `title` (escaped). Inline in HTML, so it names no
    /// namespace (nothing in the page refers to the network).
    pub(super) fn finish(self, class: &'static str, title: &str) -> String {
        format!(
            "<svg class=\"{class}\" viewBox=\"0 0 {w} {h}\" \
             width=\"{w}\" height=\"{h}\" role=\"img\">\n<title>{}</title>\n{}</svg>\n",
            escape::text(title),
            self.body,
            w = num(self.width),
            h = num(self.height),
        )
    }
}

/// A linear map from a data interval onto a pixel interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Scale {
    /// Data value drawn at `r0`.
    d0: f64,
    /// Data value drawn at `r1`.
    d1: f64,
    /// Pixel position of `d0`.
    r0: f64,
    /// Pixel position of `d1`.
    r1: f64,
}

impl Scale {
    /// Maps `[d0, d1]` onto `[r0, r1]`; an empty data interval is widened by one.
    pub(super) fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Self {
        let d1 = if (d1 - d0).abs() < f64::EPSILON {
            d0 + 1.0
        } else {
            d1
        };
        Scale { d0, d1, r0, r1 }
    }

    /// The pixel position of `v`.
    pub(super) fn at(&self, v: f64) -> f64 {
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// About five evenly spaced round values (1, 2 or 5 × 10^k apart) covering `[lo, hi]`.
pub(super) fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let rough = (hi - lo) / 5.0;
    let magnitude = 10_f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(magnitude * 10.0);
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    let mut out = Vec::new();
    let mut k = first;
    // At most a few dozen ticks: `step` ≥ (hi − lo) / 5.
    while k <= last && out.len() < 64 {
        out.push(k * step);
        k += 1.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_carry_their_class_and_numbers_are_finite() {
        let mut svg = Svg::new(100.0, 50.0);
        svg.line((0.0, f64::NAN), (10.0, f64::INFINITY), "axis");
        svg.polyline(&[(0.0, 0.0), (1.234, -0.001)], "s-lne");
        svg.polyline(&[(0.0, 0.0)], "s-none");
        svg.circle((1.0, 2.0), 3.0, "dot", "W=1 <b>");
        svg.text((5.0, 5.0), Anchor::End, "label", "<script>");
        let out = svg.finish("gate-chart", "ln E & more");
        assert!(out.starts_with("<svg class=\"gate-chart\""), "{out}");
        assert!(out.contains(r#"<line class="axis" x1="0.00" y1="0.00" x2="10.00" y2="0.00"/>"#));
        assert!(out.contains(r#"points="0.00,0.00 1.23,0.00""#), "{out}");
        assert!(!out.contains("s-none"));
        assert!(out.contains("<title>W=1 &lt;b&gt;</title>"));
        assert!(out.contains(">&lt;script&gt;</text>"));
        assert!(out.contains("<title>ln E &amp; more</title>"));
        assert!(!out.contains("NaN") && !out.contains("inf"));
        assert_eq!(out.matches("<svg").count(), 1);
    }

    #[test]
    fn scales_map_linearly_and_survive_an_empty_interval() {
        let s = Scale::new(0.0, 10.0, 100.0, 0.0);
        assert!((s.at(0.0) - 100.0).abs() < 1e-12);
        assert!((s.at(5.0) - 50.0).abs() < 1e-12);
        let flat = Scale::new(3.0, 3.0, 0.0, 10.0);
        assert!(flat.at(3.0).is_finite() && flat.at(4.0).is_finite());
    }

    #[test]
    fn ticks_are_round_and_inside_the_interval() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(-1.7, 3.2);
        assert!(t.iter().all(|v| (-1.7..=3.2).contains(v)), "{t:?}");
        assert_eq!(t, vec![-1.0, 0.0, 1.0, 2.0, 3.0]);
        assert_eq!(ticks(2.0, 2.0), vec![2.0]);
        assert_eq!(ticks(f64::NAN, 1.0).len(), 1);
    }
}
