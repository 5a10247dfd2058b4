//! The report page: one self-contained HTML document (inline CSS and SVG,
//! no script, nothing fetched) drawn from [`Inputs`] by pure functions.
//!
//! Every text that came from the run — candidate labels, versions, diffs,
//! question ids — goes through [`escape::text`]; the page's own markup,
//! classes and anchors (`cand-<index>`) never contain run text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use evolution_gate::{GateDecision, ProbationVerdict, wald_lambda};
use evolution_harness::{Phase, StopReason};
use evolution_types::template::truncate_chars;

use super::chart::{Level, LineChart, Series, line_chart};
use super::escape;
use super::model::{
    ErrorControl, GateView, Inputs, RecordView, SavedReport, Score, StagedView, UsageView,
    ValidationView,
};

/// The CSS class of every evidence chart (one per gated candidate).
pub(crate) const CHART_CLASS: &str = "gate-chart";
/// Longest candidate label or version shown; longer ones are cut with a marker.
const MAX_LABEL_CHARS: usize = 200;
/// Most diff lines shown per diff; the rest is counted, not dropped silently.
const MAX_DIFF_LINES: usize = 4_000;
/// Longest diff line shown.
const MAX_DIFF_LINE_CHARS: usize = 2_000;

/// The page's stylesheet: readable on screen and on paper.
pub(super) const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1b1f24;max-width:980px;margin:2em auto;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:2em}
h3{margin-bottom:.3em}code,pre{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:13px}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.accepted{color:#1a7f37}.rejected{color:#cf222e}.rolled-back{color:#9a6700}.muted{color:#57606a}
.badge{display:inline-block;border-radius:1em;padding:0 .6em;font-size:.85em;border:1px solid currentColor}
ul.tree,ul.tree ul{list-style:none;margin:0;padding-left:1.4em}ul.tree{padding-left:0}
ul.tree li{position:relative;padding-left:1em;margin:.25em 0}
ul.tree ul>li::before{content:'';position:absolute;left:-.6em;top:.75em;width:1.2em;border-top:1px solid #8c959f}
ul.tree ul{border-left:1px solid #8c959f;margin-left:.4em}
.version{font-family:ui-monospace,Menlo,Consolas,monospace;font-weight:600}
.candidate{border:1px solid #d0d7de;border-radius:6px;padding:.4em 1em 1em;margin:1.2em 0;break-inside:avoid}
pre.diff{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.6em;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
pre.diff .add{color:#116329;background:#dafbe1;display:block}pre.diff .del{color:#82071e;background:#ffebe9;display:block}
pre.diff .hunk{color:#0550ae}pre.diff .head{font-weight:600}pre.diff span{display:block;min-height:1.2em}
table.quadrants td{text-align:center;min-width:7em}td.fixed{background:#dafbe1}td.broken{background:#ffebe9}
svg.gate-chart{max-width:100%;height:auto;display:block;margin:.6em 0}
svg .plot{fill:#fff;stroke:none}svg .grid{stroke:#eaeef2;stroke-width:1}svg .axis{stroke:#57606a;stroke-width:1}
svg text{font:11px system-ui,sans-serif;fill:#1b1f24}svg .tick{fill:#57606a}svg .axis-name{font-weight:600}
svg .s-lne{stroke:#0969da;stroke-width:2.5;fill:none}svg circle.s-lne{fill:#0969da}
svg .s-best{stroke:#8250df;stroke-width:1.5;stroke-dasharray:6 4;fill:none}svg circle.s-best{fill:#8250df}
svg .s-wald{stroke:#bc4c00;stroke-width:1.5;stroke-dasharray:2 3;fill:none}svg circle.s-wald{fill:#bc4c00}
svg .l-accept{stroke:#1a7f37;stroke-width:1.5}svg .l-provisional{stroke:#4ac26b;stroke-width:1.2;stroke-dasharray:8 3}
svg .l-directional{stroke:#cf222e;stroke-width:1.2;stroke-dasharray:4 3}
.banner{border:1px solid #d4a72c;background:#fff8c5;border-radius:6px;padding:.6em 1em;font-weight:600}
@media print{body{max-width:none;margin:0}a{color:inherit;text-decoration:none}h2{break-after:avoid}}
";

/// The whole page.
pub(crate) fn page(inputs: &Inputs) -> String {
    let report = &inputs.report;
    let run = label(&inputs.run);
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Run report: {run}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>Run report: {run}</h1>\n"
    );
    out.push_str(&summary(inputs));
    out.push_str(&lineage(report, &inputs.staged));
    out.push_str(&usage(inputs));
    out.push_str(&candidates(inputs));
    out.push_str("<h2 id=\"final-diff\">Diff, first to final version</h2>\n");
    if inputs.final_diff.is_empty() {
        out.push_str("<p>No change was accepted.</p>\n");
    } else {
        out.push_str(&diff_block(&inputs.final_diff));
    }
    out.push_str("</body>\n</html>\n");
    out
}

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

/// Why the run stopped, in words.
fn stop_reason(reason: &StopReason) -> String {
    match reason {
        StopReason::Budget(cap) => format!("a budget cap: {cap}"),
        StopReason::MaxEpochs => "the epoch limit was reached".to_owned(),
        StopReason::RepeatedEdits => "two epochs in a row proposed the same edits".to_owned(),
        StopReason::NoImprovement => {
            "two epochs in a row did not improve training accuracy".to_owned()
        }
    }
}

/// The 95% Wilson interval of `right` out of `scored`.
pub(crate) fn wilson(score: Score) -> Option<(f64, f64)> {
    if score.scored == 0 || score.right > score.scored {
        return None;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "question counts stay far below 2^53, where the cast is exact"
    )]
    let (r, n) = (score.right as f64, score.scored as f64);
    let z = 1.959_963_984_540_054_f64;
    let p = r / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// A holdout accuracy, with its counts and interval when known.
fn holdout_cell(accuracy: Option<f64>, score: Option<Score>) -> String {
    let Some(accuracy) = accuracy else {
        return "not measured (no holdout questions)".to_owned();
    };
    let mut cell = format!("{:.1}%", accuracy * 100.0);
    if let Some(score) = score
        && let Some((lo, hi)) = wilson(score)
    {
        let _ = write!(
            cell,
            " ({} of {}; 95% interval {:.1}%–{:.1}%)",
            score.right,
            score.scored,
            lo * 100.0,
            hi * 100.0
        );
    }
    cell
}

/// The run at a glance: why it stopped, versions, holdout, error control.
fn summary(inputs: &Inputs) -> String {
    let r = &inputs.report;
    let accepted = r.records.iter().filter(|c| c.accepted).count();
    let mut out = String::from("<table class=\"summary\">\n");
    let mut row = |name: &str, value: String| {
        let _ = writeln!(out, "<tr><th>{name}</th><td>{value}</td></tr>");
    };
    row(
        "stopped",
        format!(
            "{} after {} epoch(s)",
            escape::text(&stop_reason(&r.stop_reason)),
            r.epochs
        ),
    );
    row(
        "versions",
        format!(
            "<span class=\"version\">{}</span> → <span class=\"version\">{}</span>",
            label(&r.initial_version),
            label(&r.final_version)
        ),
    );
    row(
        "candidates",
        format!("{} gated, {accepted} accepted", r.records.len()),
    );
    let (before, after) = inputs.holdout.unzip();
    row("holdout before", holdout_cell(r.holdout_before, before));
    row("holdout after", holdout_cell(r.holdout_after, after));
    row(
        "error control",
        escape::text(&error_control(&r.error_control)),
    );
    out.push_str("</table>\n<p class=\"muted\">The holdout score is an estimate on questions the run never learned from; the gate's guarantee is about the candidates, not this number.</p>\n");
    out
}

/// The error control, in one sentence.
fn error_control(control: &ErrorControl) -> String {
    match control {
        ErrorControl::ELond { fdr_alpha, horizon } => format!(
            "e-LOND: the expected share of accepted candidates that are not better than what \
             they replaced is at most {fdr_alpha} over the run{}; every accept needed its own \
             e-LOND threshold (shown per candidate).",
            horizon.map_or_else(String::new, |h| format!(" (at most {h} candidates)"))
        ),
        ErrorControl::Off {
            e_confirm,
            e_provisional,
        } => format!(
            "off: each candidate that is not better is accepted with probability at most \
             1/{:.0}; nothing bounds the share of such accepts over the run.",
            e_confirm.min(*e_provisional)
        ),
    }
}

/// One child of a version in the lineage.
enum Child {
    /// A candidate that became a version.
    Accepted(usize),
    /// A candidate that did not.
    Rejected(usize),
}

/// The version lineage as a tree: each version with the candidates gated
/// against it, accepted ones carrying the versions they became.
fn lineage(report: &SavedReport, staged: &[StagedView]) -> String {
    let mut children: BTreeMap<&str, Vec<Child>> = BTreeMap::new();
    let mut current = report.initial_version.as_str();
    for (i, record) in report.records.iter().enumerate() {
        let parent = record
            .validation
            .as_ref()
            .map_or(current, |v| v.baseline_version.as_str());
        match (&record.new_version, record.accepted) {
            (Some(version), true) => {
                children.entry(parent).or_default().push(Child::Accepted(i));
                current = version.as_str();
                if let Some(p) = &record.probation
                    && p.verdict == Some(ProbationVerdict::Rollback)
                {
                    current = p.previous_version.as_str();
                }
            }
            _ => children.entry(parent).or_default().push(Child::Rejected(i)),
        }
    }
    let mut out = String::from(
        "<h2 id=\"lineage\">Version lineage</h2>\n<p class=\"muted\">Each version with the \
         candidates gated against it; a candidate links to its evidence and diff.</p>\n\
         <ul class=\"tree\">\n<li>",
    );
    let mut seen = BTreeSet::new();
    version_node(
        &mut out,
        report,
        staged,
        &children,
        &report.initial_version,
        &mut seen,
    );
    out.push_str("</li>\n</ul>\n");
    out
}

/// One version of the lineage and, below it, its children; a version is
/// drawn once even if a damaged report makes it its own descendant.
fn version_node<'a>(
    out: &mut String,
    report: &'a SavedReport,
    staged: &[StagedView],
    children: &BTreeMap<&str, Vec<Child>>,
    version: &'a str,
    seen: &mut BTreeSet<&'a str>,
) {
    let _ = write!(out, "<span class=\"version\">{}</span>", label(version));
    if version == report.initial_version {
        out.push_str(" <span class=\"badge muted\">first</span>");
    }
    if version == report.final_version {
        out.push_str(" <span class=\"badge\">final</span>");
        if version != report.initial_version && !staged.is_empty() {
            let docs: Vec<String> = staged
                .iter()
                .map(|d| match &d.adopted_as {
                    Some(v) => format!("{} (adopted as {})", label(&d.document), label(v)),
                    None => format!("{} (staged, not adopted yet)", label(&d.document)),
                })
                .collect();
            let _ = write!(out, " <span class=\"muted\">— {}</span>", docs.join(", "));
        }
    }
    if !seen.insert(version) {
        return;
    }
    let Some(kids) = children.get(version) else {
        return;
    };
    out.push_str("\n<ul>\n");
    for kid in kids {
        match *kid {
            Child::Accepted(i) => {
                let Some(record) = report.records.get(i) else {
                    continue;
                };
                let rolled_back = record
                    .probation
                    .as_ref()
                    .is_some_and(|p| p.verdict == Some(ProbationVerdict::Rollback));
                let class = if rolled_back {
                    "rolled-back"
                } else {
                    "accepted"
                };
                let _ = write!(
                    out,
                    "<li class=\"{class}\"><a href=\"#cand-{i}\">{}</a> {} → ",
                    label(&record.candidate),
                    outcome_badge(record)
                );
                if let Some(v) = &record.new_version {
                    version_node(out, report, staged, children, v, seen);
                }
                out.push_str("</li>\n");
            }
            Child::Rejected(i) => {
                let Some(record) = report.records.get(i) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "<li class=\"rejected\"><a href=\"#cand-{i}\">{}</a> {}</li>",
                    label(&record.candidate),
                    outcome_badge(record)
                );
            }
        }
    }
    out.push_str("</ul>\n");
}

/// The candidate's outcome as a small badge.
fn outcome_badge(record: &RecordView) -> String {
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

/// The header of a usage table.
const USAGE_HEADER: &str = "<table>\n<tr><th>phase</th><th>LLM calls</th><th>prompt tokens</th>\
     <th>completion tokens</th><th>cost</th><th>agent rollouts</th></tr>\n";

/// One row of a usage table; `name` is escaped.
fn usage_row(name: &str, u: &UsageView) -> String {
    let cost = u
        .cost
        .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.4}"));
    format!(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{cost}</td><td class=\"num\">{}</td></tr>\n",
        escape::text(name),
        u.llm_calls,
        u.prompt_tokens,
        u.completion_tokens,
        u.rollouts
    )
}

/// What each phase used, as a table: the known phases in the order of an
/// epoch (named in words), any other name after them, then `total` when
/// given.
pub(crate) fn phase_table(
    by_phase: &BTreeMap<String, UsageView>,
    total: Option<&UsageView>,
) -> String {
    let mut out = String::from(USAGE_HEADER);
    let known: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
    for phase in Phase::ALL {
        if let Some(u) = by_phase.get(phase.as_str()) {
            out.push_str(&usage_row(phase.label(), u));
        }
    }
    for (name, u) in by_phase
        .iter()
        .filter(|(n, _)| !known.contains(&n.as_str()))
    {
        out.push_str(&usage_row(name, u));
    }
    if let Some(total) = total {
        out.push_str(&usage_row("whole run", total));
    }
    out.push_str("</table>\n");
    out
}

/// What the run used, per phase (or, in reports written before phases were
/// recorded, by what the records tell), and the budget.
fn usage(inputs: &Inputs) -> String {
    let report = &inputs.report;
    let mut out = String::from("<h2 id=\"usage\">Usage</h2>\n");
    let Some(total) = report.usage else {
        out.push_str("<p class=\"muted\">This report was written before usage was recorded in report.json.</p>\n");
        return out;
    };
    let cost = total
        .cost
        .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.4}"));
    match &report.usage_by_phase {
        Some(by_phase) if !by_phase.is_empty() => {
            out.push_str(&phase_table(by_phase, Some(&total)));
        }
        _ => out.push_str(&usage_by_records(inputs, &total)),
    }
    out.push_str(&budget_line(report, &total, &cost));
    out
}

/// The usage table of a report without phases: the whole run, then what
/// the gate records and the run log tell (writing and gating the
/// candidates), the rest in one row.
fn usage_by_records(inputs: &Inputs, total: &UsageView) -> String {
    let report = &inputs.report;
    let gate_rollouts: u64 = report
        .records
        .iter()
        .filter_map(|r| r.validation.as_ref())
        .map(|v| v.rollouts)
        .fold(0, u64::saturating_add);
    let writing_calls: Option<u64> = (inputs.writing_calls.len() == report.records.len())
        .then(|| inputs.writing_calls.values().map(|c| u64::from(*c)).sum());
    let mut out = String::from(USAGE_HEADER);
    out.push_str(&usage_row("whole run", total));
    let _ = writeln!(
        out,
        "<tr><td>writing the candidates (evolve, rank)</td><td class=\"num\">{}</td>\
         <td>—</td><td>—</td><td>—</td><td class=\"num\">0</td></tr>",
        writing_calls.map_or_else(|| "n/a".to_owned(), |c| c.to_string())
    );
    let _ = writeln!(
        out,
        "<tr><td>gating the candidates (both arms)</td><td class=\"num\">0</td>\
         <td>—</td><td>—</td><td>—</td><td class=\"num\">{gate_rollouts}</td></tr>"
    );
    let _ = writeln!(
        out,
        "<tr><td>everything else (training runs, diagnosis, slow update, probation, holdout)</td>\
         <td class=\"num\">{}</td><td>—</td><td>—</td><td>—</td><td class=\"num\">{}</td></tr>",
        writing_calls.map_or_else(
            || "n/a".to_owned(),
            |c| total.llm_calls.saturating_sub(c).to_string()
        ),
        total.rollouts.saturating_sub(gate_rollouts)
    );
    out.push_str("</table>\n");
    out
}

/// The budget line under the usage table (empty in reports without caps).
fn budget_line(report: &SavedReport, total: &UsageView, cost: &str) -> String {
    let mut out = String::new();
    if let Some(budget) = report.budget {
        let of = |used: String, cap: Option<String>| match cap {
            Some(cap) => format!("{used} of {cap}"),
            None => format!("{used} (no cap)"),
        };
        let _ = writeln!(
            out,
            "<p><strong>Budget:</strong> LLM calls {} · tokens {} · cost {} · rollouts {}</p>",
            of(
                total.llm_calls.to_string(),
                budget.max_llm_calls.map(|c| c.to_string())
            ),
            of(
                total
                    .prompt_tokens
                    .saturating_add(total.completion_tokens)
                    .to_string(),
                budget.max_tokens.map(|c| c.to_string())
            ),
            of(cost.to_owned(), budget.max_cost.map(|c| format!("{c:.4}"))),
            of(
                total.rollouts.to_string(),
                budget.max_rollouts.map(|c| c.to_string())
            ),
        );
    }
    out
}

/// The overview table and one section per candidate.
fn candidates(inputs: &Inputs) -> String {
    let report = &inputs.report;
    let mut out = String::from("<h2 id=\"candidates\">Candidates</h2>\n");
    if report.records.is_empty() {
        out.push_str("<p>No candidate was gated.</p>\n");
        return out;
    }
    out.push_str(
        "<table>\n<tr><th>candidate</th><th>decision</th><th>W</th><th>L</th><th>paired</th>\
         <th>E</th><th>E needed</th><th>new version</th></tr>\n",
    );
    for (i, record) in report.records.iter().enumerate() {
        let (w, l, n, e) = record.validation.as_ref().map_or_else(
            || {
                (
                    "—".to_owned(),
                    "—".to_owned(),
                    "—".to_owned(),
                    "—".to_owned(),
                )
            },
            |v| {
                (
                    v.w.to_string(),
                    v.l.to_string(),
                    v.n_used.to_string(),
                    e_from_ln(v.verdict.ln_e_value),
                )
            },
        );
        let class = if record.accepted {
            "accepted"
        } else {
            "rejected"
        };
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td><a href=\"#cand-{i}\">{}</a></td><td>{}</td>\
             <td class=\"num\">{w}</td><td class=\"num\">{l}</td><td class=\"num\">{n}</td>\
             <td class=\"num\">{e}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            label(&record.candidate),
            outcome_badge(record),
            threshold(needed(record)),
            record.new_version.as_deref().map_or("—".to_owned(), label),
        );
    }
    out.push_str("</table>\n");
    for (i, record) in report.records.iter().enumerate() {
        out.push_str(&candidate(inputs, i, record));
    }
    out
}

/// The e-value a candidate's accept needed: its e-LOND threshold (`None`:
/// infinite), else the gate's `e_confirm`.
fn needed(record: &RecordView) -> Option<f64> {
    match (&record.level, &record.validation) {
        (Some(level), Some(v)) => match (level.threshold, v.e_confirm) {
            (Some(t), Some(c)) => Some(t.max(c)),
            (t, c) => t.or(c),
        },
        (Some(level), None) => level.threshold,
        (None, Some(v)) => v.e_confirm,
        (None, None) => None,
    }
}

/// One candidate: decision and why, the evidence chart, the quadrants,
/// probation and the diff.
fn candidate(inputs: &Inputs, i: usize, record: &RecordView) -> String {
    let gate = inputs.report.gate.as_ref();
    let class = if record.accepted {
        "accepted"
    } else {
        "rejected"
    };
    let mut out = format!(
        "<section class=\"candidate\" id=\"cand-{i}\">\n<h3 class=\"{class}\">{}</h3>\n",
        label(&record.candidate)
    );
    let _ = writeln!(
        out,
        "<p><strong>{}</strong> {}</p>",
        outcome_badge(record),
        escape::text(&why(record, gate))
    );
    if let Some(level) = &record.level {
        let _ = writeln!(
            out,
            "<p class=\"muted\">e-LOND: candidate {} of the run, level α<sub>t</sub> = {:.3e}, \
             so an accept needed E ≥ {}; {} accept(s) before it.</p>",
            level.index,
            level.alpha_t,
            threshold(level.threshold),
            level.discoveries_before
        );
    }
    if let Some(v) = &record.validation {
        let _ = writeln!(
            out,
            "<table>\n<tr><th>W (fixed)</th><th>L (broken)</th><th>paired</th><th>not reached</th>\
             <th>blocks</th><th>E</th><th>δ̂</th><th>Wald λ</th><th>rollouts</th><th>INFRA failures</th></tr>\n\
             <tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>\n</table>",
            v.w,
            v.l,
            v.n_used,
            v.n_remaining,
            v.blocks_used,
            e_from_ln(v.verdict.ln_e_value),
            v.verdict.delta_hat,
            v.verdict.wald_lambda,
            v.rollouts,
            v.infra_errors
        );
        out.push_str(&line_chart(
            &evidence_chart(&record.candidate, v, needed(record), gate),
            CHART_CLASS,
        ));
        if v.trajectory.is_empty() {
            out.push_str(
                "<p class=\"muted\">The per-block evidence was not recorded by the version \
                 that ran this candidate: the line joins the start to the final verdict.</p>\n",
            );
        }
        out.push_str(&quadrants(v));
    }
    if let Some(p) = &record.probation {
        let verdict = p.verdict.map_or("pending", ProbationVerdict::as_str);
        let _ = writeln!(
            out,
            "<p><strong>Probation:</strong> {verdict} on the held-back questions (W = {}, L = {}); \
             <span class=\"version\">{}</span> replaced <span class=\"version\">{}</span>{}.</p>",
            p.w,
            p.l,
            label(&p.version),
            label(&p.previous_version),
            if p.verdict == Some(ProbationVerdict::Rollback) {
                ", which was restored"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(out, "<h4 id=\"diff-{i}\">Diff</h4>");
    match inputs.diffs.get(&i) {
        Some(diff) if !diff.is_empty() => out.push_str(&diff_block(diff)),
        Some(_) => out.push_str("<p>The candidate changed nothing.</p>\n"),
        None => out.push_str(
            "<p class=\"muted\">Its text is not in the run folder (neither in the store nor in \
             the run log's evolution records).</p>\n",
        ),
    }
    out.push_str("</section>\n");
    out
}

/// Why the gate decided as it did, in one sentence.
fn why(record: &RecordView, gate: Option<&GateView>) -> String {
    let Some(v) = &record.validation else {
        return "Not gated: the run's e-LOND level for it was zero (it came after the most \
                candidates the run planned for), so no rollout was spent on it."
            .to_owned();
    };
    let e = e_from_ln(v.verdict.ln_e_value);
    let need = threshold(needed(record));
    let provisional = gate.map(|g| {
        let level = record.level.and_then(|l| l.threshold).unwrap_or(0.0);
        g.e_provisional.max(level)
    });
    match v.verdict.decision {
        GateDecision::AcceptConfirmed => format!(
            "Accepted: E = {e} reached the accept line {need} with δ̂ = {:.3}{}.",
            v.verdict.delta_hat,
            gate.map_or_else(String::new, |g| format!(" ≥ δ_min = {}", g.delta_min))
        ),
        GateDecision::AcceptProvisional => format!(
            "Accepted provisionally: the questions ran out with E = {e}{} and W − L = {}{}.",
            provisional.map_or_else(String::new, |p| format!(" ≥ {p:.2}")),
            i128::from(v.w) - i128::from(v.l),
            gate.map_or_else(String::new, |g| format!(" ≥ {}", g.w_net_min))
        ),
        GateDecision::RejectDirectional => format!(
            "Rejected: Wald's λ = {:.3} fell to the directional boundary{}: the candidate was \
             losing more than it won.",
            v.verdict.wald_lambda,
            gate.and_then(|g| g.lambda_dir)
                .map_or_else(String::new, |d| format!(" {d:.3}"))
        ),
        GateDecision::RejectFutility => format!(
            "Rejected: even winning all {} remaining questions would have left E below the \
             accept line {need} (E = {e} now).",
            v.n_remaining
        ),
        GateDecision::RejectInertia => format!(
            "Rejected: the questions ran out with E = {e}{} and W − L = {}; a provisional \
             accept needs both.",
            provisional.map_or_else(String::new, |p| format!(" (needed {p:.2})")),
            i128::from(v.w) - i128::from(v.l),
        ),
        GateDecision::Continue => {
            "Undecided: the validation stopped before the gate decided.".to_owned()
        }
    }
}

/// The evidence chart of one validation: ln E per block against the
/// paired questions, with the accept line, the best case still reachable
/// (futility: it falls below the accept line) and Wald's λ with the
/// directional boundary, where the gate's parameters are known.
pub(crate) fn evidence_chart(
    candidate: &str,
    v: &ValidationView,
    needed: Option<f64>,
    gate: Option<&GateView>,
) -> LineChart {
    let to_f = |n: u64| {
        #[expect(
            clippy::cast_precision_loss,
            reason = "question counts stay far below 2^53, where the cast is exact"
        )]
        let f = n as f64;
        f
    };
    // Reports from before the trajectory was kept: the final point alone.
    let fallback = [evolution_harness::GatePoint {
        n_used: v.n_used,
        n_remaining: v.n_remaining,
        w: v.w,
        l: v.l,
        ln_e_value: v.verdict.ln_e_value,
        decision: v.verdict.decision,
    }];
    let points: &[evolution_harness::GatePoint] = if v.trajectory.is_empty() {
        &fallback
    } else {
        &v.trajectory
    };
    let x_max = points
        .iter()
        .map(|p| p.n_used.saturating_add(p.n_remaining))
        .max()
        .unwrap_or(1);
    let mut series = vec![Series {
        label: "ln E (evidence that the candidate is better)".to_owned(),
        class: "s-lne",
        points: std::iter::once((0.0, 0.0))
            .chain(points.iter().map(|p| (to_f(p.n_used), p.ln_e_value)))
            .collect(),
        tooltips: std::iter::once("start: W = 0, L = 0, ln E = 0".to_owned())
            .chain(points.iter().enumerate().map(|(k, p)| {
                format!(
                    "after block {}: W = {}, L = {}, {} paired, ln E = {:.3}, {}",
                    k.saturating_add(1),
                    p.w,
                    p.l,
                    p.n_used,
                    p.ln_e_value,
                    p.decision.as_str()
                )
            }))
            .collect(),
    }];
    let mut levels = Vec::new();
    if let Some(needed) = needed.filter(|t| t.is_finite() && *t > 0.0) {
        levels.push(Level {
            label: format!("accept: ln E ≥ ln {needed:.2} = {:.3}", needed.ln()),
            class: "l-accept",
            y: needed.ln(),
        });
    }
    if let Some(gate) = gate {
        series.push(Series {
            label: "best case: ln E if every remaining question were won (futility below the accept line)"
                .to_owned(),
            class: "s-best",
            // Before the first block every question is still to be won.
            points: std::iter::once((0.0, gate.e_process.ln_e_value(x_max, 0)))
                .chain(points.iter().map(|p| {
                    (
                        to_f(p.n_used),
                        gate.e_process
                            .ln_e_value(p.w.saturating_add(p.n_remaining), p.l),
                    )
                }))
                .collect(),
            tooltips: std::iter::once(format!("start: all {x_max} questions still to win"))
                .chain(points.iter().enumerate().map(|(k, p)| {
                    format!(
                        "after block {}: winning the {} remaining would give ln E = {:.3}",
                        k.saturating_add(1),
                        p.n_remaining,
                        gate.e_process
                            .ln_e_value(p.w.saturating_add(p.n_remaining), p.l)
                    )
                }))
                .collect(),
        });
        let provisional = gate.e_provisional.max(needed.unwrap_or(0.0));
        if provisional.is_finite()
            && provisional > 0.0
            && needed.is_none_or(|n| (n - provisional).abs() > 1e-9)
        {
            levels.push(Level {
                label: format!(
                    "provisional accept when the questions run out: ln {provisional:.2} = {:.3}",
                    provisional.ln()
                ),
                class: "l-provisional",
                y: provisional.ln(),
            });
        }
        if let Some(dir) = gate.lambda_dir.filter(|d| d.is_finite()) {
            series.push(Series {
                label: "Wald's λ (directional exit at the boundary)".to_owned(),
                class: "s-wald",
                points: std::iter::once((0.0, 0.0))
                    .chain(
                        points
                            .iter()
                            .map(|p| (to_f(p.n_used), wald_lambda(p.w, p.l))),
                    )
                    .collect(),
                tooltips: Vec::new(),
            });
            levels.push(Level {
                label: format!("directional boundary: λ ≤ {dir:.3}"),
                class: "l-directional",
                y: dir,
            });
        }
    }
    LineChart {
        title: format!(
            "Evidence for {}: ln E against paired questions",
            truncate_chars(candidate, MAX_LABEL_CHARS)
        ),
        x_label: "paired questions",
        y_label: "ln E",
        x_max: to_f(x_max),
        series,
        levels,
    }
}

/// The four quadrants of the paired questions.
pub(super) fn quadrants(v: &ValidationView) -> String {
    let mut counts = [0_u64; 4];
    for (base, cand) in v.observed.values() {
        let slot = match (base, cand) {
            (true, true) => 0,
            (false, true) => 1,
            (true, false) => 2,
            (false, false) => 3,
        };
        if let Some(c) = counts.get_mut(slot) {
            *c = c.saturating_add(1);
        }
    }
    let [both_right, fixed, broken, both_wrong] = counts;
    format!(
        "<table class=\"quadrants\">\n<tr><th></th><th>candidate right</th><th>candidate wrong</th></tr>\n\
         <tr><th>baseline right</th><td>both right: {both_right}</td><td class=\"broken\">broken: {broken}</td></tr>\n\
         <tr><th>baseline wrong</th><td class=\"fixed\">fixed: {fixed}</td><td>both wrong: {both_wrong}</td></tr>\n\
         </table>\n"
    )
}

/// A unified diff, coloured by line kind, escaped, at most
/// [`MAX_DIFF_LINES`] lines (the rest counted).
pub(super) fn diff_block(diff: &str) -> String {
    let mut out = String::from("<pre class=\"diff\">");
    let total = diff.lines().count();
    for line in diff.lines().take(MAX_DIFF_LINES) {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "head"
        } else if line.starts_with("@@") {
            "hunk"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else {
            "ctx"
        };
        let _ = write!(
            out,
            "<span class=\"{class}\">{}</span>",
            escape::text(&truncate_chars(line, MAX_DIFF_LINE_CHARS))
        );
    }
    out.push_str("</pre>\n");
    if total > MAX_DIFF_LINES {
        let _ = writeln!(
            out,
            "<p class=\"muted\">… {} more diff line(s) not shown here; the run's store and \
             <code>staged/</code> hold the whole text.</p>",
            total - MAX_DIFF_LINES
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use evolution_gate::{EProcess, GateDecision};
    use evolution_harness::{GatePoint, StopReason};

    use super::*;
    use crate::report_html::model::{BudgetView, LevelView, ProbationView, UsageView, VerdictView};

    /// Every kind of hostile text a run could carry.
    const HOSTILE: &str =
        "<script>alert(1)</script>\"><img src=x onerror=alert(2)>\u{1b}[2J\0\u{202e}evil";

    fn validation(baseline: &str, w: u64, l: u64, decision: GateDecision) -> ValidationView {
        let gate = evolution_gate::Gate::calibrated();
        let points: Vec<GatePoint> = [(2_u64, 4_u64), (w, l)]
            .iter()
            .enumerate()
            .map(|(k, &(w, l))| {
                let n = (k as u64 + 1) * 6;
                GatePoint {
                    n_used: n,
                    n_remaining: 12 - n,
                    w,
                    l,
                    ln_e_value: gate.params().e_process.ln_e_value(w, l),
                    decision: if k == 1 {
                        decision
                    } else {
                        GateDecision::Continue
                    },
                }
            })
            .collect();
        ValidationView {
            baseline_version: baseline.to_owned(),
            w,
            l,
            n_used: 12,
            n_remaining: 0,
            blocks_used: 2,
            verdict: VerdictView {
                decision,
                ln_e_value: points[1].ln_e_value,
                wald_lambda: wald_lambda(w, l),
                delta_hat: (w as f64 - l as f64) / 12.0,
            },
            e_confirm: Some(20.0),
            observed: (0..12)
                .map(|i| (format!("{HOSTILE}{i}"), (i % 3 == 0, i % 2 == 0)))
                .collect(),
            infra_errors: 0,
            rollouts: 24,
            trajectory: points,
        }
    }

    fn inputs() -> Inputs {
        let v1 = format!("v1{HOSTILE}");
        let v2 = format!("v2{HOSTILE}");
        let records = vec![
            RecordView {
                candidate: format!("accepted {HOSTILE}"),
                level: Some(LevelView {
                    index: 1,
                    alpha_t: 0.05,
                    threshold: Some(20.0),
                    discoveries_before: 0,
                }),
                validation: Some(validation(&v1, 9, 0, GateDecision::AcceptConfirmed)),
                accepted: true,
                new_version: Some(v2.clone()),
                probation: Some(ProbationView {
                    version: v2.clone(),
                    previous_version: v1.clone(),
                    w: 0,
                    l: 3,
                    verdict: Some(ProbationVerdict::Rollback),
                }),
            },
            RecordView {
                candidate: format!("rejected {HOSTILE}"),
                level: None,
                validation: Some(validation(&v1, 1, 5, GateDecision::RejectDirectional)),
                accepted: false,
                new_version: None,
                probation: None,
            },
            RecordView {
                candidate: format!("late {HOSTILE}"),
                level: Some(LevelView {
                    index: 4,
                    alpha_t: 0.0,
                    threshold: None,
                    discoveries_before: 1,
                }),
                validation: None,
                accepted: false,
                new_version: None,
                probation: None,
            },
        ];
        let diff = format!(
            "--- a/{HOSTILE}\n+++ b/{HOSTILE}\n@@ -1 +1 @@\n-{HOSTILE}\n+{HOSTILE}\n {HOSTILE}\n"
        );
        Inputs {
            run: format!("run {HOSTILE}"),
            report: SavedReport {
                error_control: ErrorControl::ELond {
                    fdr_alpha: 0.05,
                    horizon: Some(3),
                },
                stop_reason: StopReason::MaxEpochs,
                epochs: 2,
                initial_version: v1,
                final_version: v2,
                holdout_before: Some(0.0),
                holdout_after: Some(0.75),
                records,
                usage: Some(UsageView {
                    llm_calls: 12,
                    prompt_tokens: 3000,
                    completion_tokens: 400,
                    cost: Some(0.25),
                    rollouts: 60,
                }),
                usage_by_phase: Some(BTreeMap::from([
                    ("rollout".to_owned(), phase_usage(0, 0, 20)),
                    ("diagnose".to_owned(), phase_usage(6, 1800, 0)),
                    ("propose".to_owned(), phase_usage(4, 1000, 0)),
                    ("gate".to_owned(), phase_usage(0, 0, 40)),
                    ("slow_update".to_owned(), phase_usage(1, 200, 0)),
                    (format!("later {HOSTILE}"), phase_usage(1, 0, 0)),
                ])),
                budget: Some(BudgetView {
                    max_llm_calls: Some(500),
                    max_tokens: None,
                    max_cost: None,
                    max_rollouts: Some(1000),
                }),
                gate: Some(GateView {
                    e_confirm: 20.0,
                    e_provisional: 3.0,
                    w_net_min: 2,
                    delta_min: 0.02,
                    lambda_dir: Some(-2.0),
                    e_process: EProcess::UniformMixture,
                }),
            },
            diffs: BTreeMap::from([(0, diff.clone()), (1, diff.clone())]),
            writing_calls: BTreeMap::from([(0, 3), (1, 3), (2, 3)]),
            final_diff: diff,
            staged: vec![StagedView {
                document: format!("doc {HOSTILE}"),
                adopted_as: Some(format!("v9 {HOSTILE}")),
            }],
            holdout: Some((
                Score {
                    right: 0,
                    scored: 4,
                },
                Score {
                    right: 3,
                    scored: 4,
                },
            )),
        }
    }

    /// What one phase used: calls, prompt tokens, rollouts.
    fn phase_usage(llm_calls: u64, prompt_tokens: u64, rollouts: u64) -> UsageView {
        UsageView {
            llm_calls,
            prompt_tokens,
            completion_tokens: 0,
            cost: Some(0.0),
            rollouts,
        }
    }

    #[test]
    fn usage_is_shown_per_phase_in_the_order_of_an_epoch() {
        let html = page(&inputs());
        let names = [
            "<tr><td>rollout</td>",
            "<tr><td>diagnose</td>",
            "<tr><td>propose</td>",
            "<tr><td>gate</td>",
            "<tr><td>slow update</td>",
            "<tr><td>later &lt;script&gt;",
            "<tr><td>whole run</td>",
        ];
        let at: Vec<usize> = names
            .iter()
            .map(|n| {
                html.find(n)
                    .unwrap_or_else(|| panic!("{n} missing: {html}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        assert!(
            html.contains(
                "<tr><td>diagnose</td><td class=\"num\">6</td><td class=\"num\">1800</td>"
            )
        );
        assert!(!html.contains("everything else"));
        // A report written before phases were recorded keeps the older table.
        let mut older = inputs();
        older.report.usage_by_phase = None;
        let html = page(&older);
        assert!(html.contains("everything else") && !html.contains("<tr><td>diagnose</td>"));
    }

    #[test]
    fn hostile_text_in_every_field_comes_out_escaped() {
        let html = page(&inputs());
        for raw in [
            "<script",
            "<img",
            "\u{1b}",
            "\0",
            "\u{202e}",
            "\"><img",
            "onerror=alert(2)>",
        ] {
            assert!(!html.contains(raw), "{raw:?} came out raw");
        }
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;\\x1b[2J\\x00\\u{202e}evil"));
        // Labels, versions, diff lines, staged names, question-free quadrants:
        // every hostile field shows up escaped, once per place it is used.
        assert!(html.matches("&lt;script&gt;").count() >= 15, "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn the_page_has_a_chart_per_gated_candidate_and_a_linked_lineage() {
        let html = page(&inputs());
        assert_eq!(
            html.matches(&format!("<svg class=\"{CHART_CLASS}\""))
                .count(),
            2
        );
        assert!(html.starts_with("<!DOCTYPE html>"));
        for anchor in ["cand-0", "cand-1", "cand-2"] {
            assert!(html.contains(&format!("href=\"#{anchor}\"")), "{anchor}");
            assert!(html.contains(&format!("id=\"{anchor}\"")), "{anchor}");
        }
        // The accepted candidate was rolled back on probation; the lineage says so.
        assert!(html.contains("<li class=\"rolled-back\"><a href=\"#cand-0\">"));
        assert!(html.contains("<li class=\"rejected\"><a href=\"#cand-1\">"));
        assert!(html.contains("rolled back on probation"));
        assert!(html.contains("(adopted as v9 &lt;script&gt;"));
        // The chart draws the accept line at ln 20, the directional boundary and the best case.
        assert!(html.contains("accept: ln E ≥ ln 20.00 = 2.996"));
        assert!(html.contains("directional boundary: λ ≤ -2.000"));
        assert!(html.contains("<polyline class=\"s-best\""));
        // Quadrants of twelve paired questions, holdout with its interval, the budget.
        assert!(
            html.contains("both right: 2</td><td class=\"broken\">broken: 2"),
            "{html}"
        );
        assert!(html.contains("fixed: 4</td><td>both wrong: 4"));
        assert!(
            html.contains("75.0% (3 of 4; 95% interval 30.1%–95.4%)"),
            "{html}"
        );
        assert!(html.contains("LLM calls 12 of 500 · tokens 3400 (no cap) · cost 0.2500 (no cap) · rollouts 60 of 1000"), "{html}");
        assert!(html.contains("Not gated: the run&#39;s e-LOND level"));
        assert!(html.contains("Wald&#39;s λ = -2.218 fell to the directional boundary -2.000"));
        assert!(html.contains("<span class=\"add\">+"));
        assert!(html.contains("<span class=\"del\">-"));
    }

    #[test]
    fn a_report_without_trajectories_or_facts_still_draws() {
        let mut inputs = inputs();
        inputs.report.gate = None;
        inputs.report.usage = None;
        inputs.report.budget = None;
        for r in &mut inputs.report.records {
            if let Some(v) = &mut r.validation {
                v.trajectory.clear();
            }
        }
        let html = page(&inputs);
        assert_eq!(
            html.matches(&format!("<svg class=\"{CHART_CLASS}\""))
                .count(),
            2
        );
        assert!(html.contains("per-block evidence was not recorded"));
        assert!(html.contains("written before usage was recorded"));
        assert!(!html.contains("<polyline class=\"s-best\""));
    }

    #[test]
    fn rendering_is_deterministic() {
        assert_eq!(page(&inputs()), page(&inputs()));
    }

    #[test]
    fn wilson_intervals_match_known_values() {
        let (lo, hi) = wilson(Score {
            right: 3,
            scored: 4,
        })
        .unwrap();
        assert!(
            (lo - 0.3006).abs() < 1e-3 && (hi - 0.9544).abs() < 1e-3,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(Score {
            right: 0,
            scored: 10,
        })
        .unwrap();
        assert!(lo.abs() < 1e-12 && (hi - 0.2775).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(
            wilson(Score {
                right: 0,
                scored: 0
            }),
            None
        );
        assert_eq!(
            wilson(Score {
                right: 5,
                scored: 4
            }),
            None
        );
    }
}
