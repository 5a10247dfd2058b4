//! The small pieces of run text both report pages show the same way: labels cut and escaped,
//! e-values, thresholds, outcome badges, and the limits they are cut to.

use evolution_gate::ProbationVerdict;
use evolution_types::template::truncate_chars;

use super::escape;
use super::model::RecordView;

/// The CSS class of every evidence chart (one per gated candidate).
pub(super) const CHART_CLASS: &str = "gate-chart";
/// Longest candidate label or version shown; longer ones are cut with a marker.
pub(super) const MAX_LABEL_CHARS: usize = 200;
/// Most diff lines shown per diff; the rest is counted, not dropped silently.
pub(super) const MAX_DIFF_LINES: usize = 4_000;
/// Longest diff line shown.
pub(super) const MAX_DIFF_LINE_CHARS: usize = 2_000;

/// Run text cut to [`MAX_LABEL_CHARS`] and escaped.
pub(super) fn label(raw: &str) -> String {
    escape::text(&truncate_chars(raw, MAX_LABEL_CHARS))
}

/// An e-value from its logarithm: a plain number while it fits, else `e^x`.
pub(super) fn e_from_ln(ln_e: f64) -> String {
    if !ln_e.is_finite() {
        "n/a".to_owned()
    } else if ln_e < 40.0 {
        format!("{:.2}", ln_e.exp())
    } else {
        format!("e^{ln_e:.1}")
    }
}

/// A threshold that may be infinite (`None`).
pub(super) fn threshold(t: Option<f64>) -> String {
    match t {
        Some(t) if t.is_finite() => format!("{t:.2}"),
        _ => "∞".to_owned(),
    }
}

/// The candidate's outcome as a small badge.
pub(super) fn outcome_badge(record: &RecordView) -> String {
    let decision = record
        .validation
        .as_ref()
        .map_or("not gated", |v| v.verdict.decision.as_str());
    let probation = match record.probation.as_ref().and_then(|p| p.verdict) {
        Some(ProbationVerdict::Rollback) => ", rolled back on probation",
        Some(ProbationVerdict::Confirmed) => ", confirmed on probation",
        Some(ProbationVerdict::Unverified) => ", probation unverified",
        None if record.probation.is_some() => ", probation pending",
        None => "",
    };
    format!("<span class=\"badge\">{decision}{probation}</span>")
}
