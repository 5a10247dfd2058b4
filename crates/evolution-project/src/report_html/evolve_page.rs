//! The page of an `evolve` session: the candidate(s) with the gate's
//! evidence when gated (the ln E chart per candidate, the quadrants) or a
//! plain "ungated" banner, what each phase used, the reflection rounds and
//! why they stopped, the slow update, and the diff. A pure function of the session's
//! `report.json`, drawn with the run page's stylesheet, chart and escapes.

use std::fmt::Write as _;

use evolution_types::template::truncate_chars;
use serde_json::Value;

use super::candidate::{diff_block, evidence_chart, quadrants};
use super::cells::{CHART_CLASS, e_from_ln, label, threshold};
use super::chart::line_chart;
use super::escape;
use super::model::{EvolveReport, EvolveVerdictView, RoundView};
use super::page::{STYLE, phase_table};

/// Longest free text shown in a cell (reasons, summaries, edit contents).
const MAX_CELL_CHARS: usize = 600;
/// Longest slow-update guidance shown.
const MAX_GUIDANCE_CHARS: usize = 20_000;

/// Run text cut to [`MAX_CELL_CHARS`] and escaped.
fn cell(raw: &str) -> String {
    escape::text(&truncate_chars(raw, MAX_CELL_CHARS))
}

/// The whole page of an `evolve` session named `run`.
pub(super) fn page(run: &str, report: &EvolveReport) -> String {
    let skill = label(&report.skill);
    let mut out = String::with_capacity(32 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Evolve report: {skill}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>Evolve report: {skill}</h1>\n<p class=\"muted\">session {}</p>\n",
        label(run)
    );
    out.push_str(&summary(report));
    if let Some(by_phase) = report.usage_by_phase.as_ref().filter(|p| !p.is_empty()) {
        out.push_str("<h2 id=\"usage\">Usage by phase</h2>\n");
        out.push_str(&phase_table(by_phase, None));
    }
    out.push_str(&gate(report));
    out.push_str(&rounds(report));
    out.push_str(&slow_update(report));
    out.push_str("<h2 id=\"diff\">Diff, original to candidate</h2>\n");
    match report.diff.as_deref().filter(|d| !d.is_empty()) {
        Some(diff) => out.push_str(&diff_block(diff)),
        None if report.changed => {
            out.push_str("<p class=\"muted\">This report does not hold the diff.</p>\n");
        }
        None => out.push_str("<p>The rounds proposed no change.</p>\n"),
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// What the session did, in one table.
fn summary(report: &EvolveReport) -> String {
    let outcome = match (&report.version, report.written, report.changed) {
        (Some(v), true, _) => format!("<span class=\"accepted\">written as {}</span>", label(v)),
        (_, _, false) => "no change proposed".to_owned(),
        _ => "<span class=\"rejected\">not written</span>".to_owned(),
    };
    let candidate = report
        .candidate
        .as_deref()
        .map(|c| {
            format!(
                "<tr><th>candidate saved at</th><td><code>{}</code></td></tr>\n",
                label(c)
            )
        })
        .unwrap_or_default();
    format!(
        "<h2 id=\"summary\">Summary</h2>\n<table>\n\
         <tr><th>outcome</th><td>{outcome}</td></tr>\n\
         <tr><th>failure trajectories</th><td class=\"num\">{}</td></tr>\n\
         <tr><th>passing trajectories left out</th><td class=\"num\">{}</td></tr>\n\
         <tr><th>rounds</th><td class=\"num\">{}</td></tr>\n\
         <tr><th>stopped because</th><td>{}</td></tr>\n\
         <tr><th>LLM calls</th><td class=\"num\">{}</td></tr>\n\
         <tr><th>proposer</th><td>{}</td></tr>\n{candidate}</table>\n",
        report.failures,
        report.passed_trajectories,
        report.rounds.len(),
        cell(&report.stop_reason),
        report.llm_calls,
        label(&report.provider),
    )
}

/// The gate's section: a banner when ungated, else each candidate's evidence.
fn gate(report: &EvolveReport) -> String {
    let g = &report.gate;
    let mut out = String::from("<h2 id=\"gate\">Gate</h2>\n");
    if g.mode != "gated" {
        let _ = writeln!(
            out,
            "<p class=\"banner ungated\">Ungated: this candidate was never tested against an \
             agent; nothing shows it is better than the original.</p>\n<p class=\"muted\">{}</p>",
            cell(&g.note)
        );
        return out;
    }
    let _ = writeln!(out, "<p>{}</p>", cell(&g.note));
    if g.verdicts.is_empty() {
        out.push_str("<p>No candidate reached the gate.</p>\n");
    }
    for (i, verdict) in g.verdicts.iter().enumerate() {
        out.push_str(&candidate(report, i, verdict));
    }
    out
}

/// One gated candidate: its verdict, the evidence chart and the quadrants.
fn candidate(report: &EvolveReport, i: usize, v: &EvolveVerdictView) -> String {
    let (class, word) = if v.passed {
        ("accepted", "passed")
    } else {
        ("rejected", "failed")
    };
    let mut out = format!(
        "<div class=\"candidate\" id=\"cand-{i}\">\n<h3>{} <span class=\"badge {class}\">{word}</span></h3>\n\
         <p>{}</p>\n",
        label(&v.candidate),
        cell(&v.decision)
    );
    if let Some(p) = &v.probation {
        let _ = writeln!(out, "<p><strong>Probation:</strong> {}</p>", cell(p));
    }
    match &v.validation {
        Some(val) => {
            let _ = writeln!(
                out,
                "<table>\n<tr><th>W (fixed)</th><th>L (broken)</th><th>paired</th>\
                 <th>not reached</th><th>E</th><th>needed</th><th>rollouts</th></tr>\n\
                 <tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td></tr>\n</table>",
                val.w,
                val.l,
                val.n_used,
                val.n_remaining,
                e_from_ln(val.verdict.ln_e_value),
                threshold(v.e_confirm),
                val.rollouts
            );
            let needed = v.e_confirm.or(val.e_confirm);
            let gate = report.gate.params.as_ref();
            // An accept line above the gate's own `e_confirm` is an e-LOND level's, which
            // binds a provisional accept too.
            let provisional = gate.map(|g| match needed {
                Some(n) if n > g.e_confirm => g.e_provisional.max(n),
                _ => g.e_provisional,
            });
            let chart = evidence_chart(&v.candidate, val, needed, provisional, gate);
            out.push_str(&line_chart(&chart, CHART_CLASS));
            out.push_str(&quadrants(val));
        }
        None => out.push_str("<p class=\"muted\">The gate ran no question for it.</p>\n"),
    }
    out.push_str("</div>\n");
    out
}

/// The reflection rounds: what each proposed and what the meta-reflection said.
fn rounds(report: &EvolveReport) -> String {
    let mut out = format!(
        "<h2 id=\"rounds\">Reflection rounds</h2>\n<p><strong>Stopped:</strong> {}</p>\n",
        cell(&report.stop_reason)
    );
    for round in &report.rounds {
        out.push_str(&round_section(round));
    }
    out
}

/// One round.
fn round_section(round: &RoundView) -> String {
    let budget = round
        .budget
        .map_or_else(|| "no limit".to_owned(), |b| b.to_string());
    let (class, word) = if round.accepted {
        ("accepted", "kept")
    } else {
        ("rejected", "dropped")
    };
    let m = &round.meta;
    let mut out = format!(
        "<h3>Round {} <span class=\"badge {class}\">{word}</span></h3>\n<p>{} failure(s) \
         reflected on; {} edit(s) proposed, {} selected (budget {budget}); {} failure(s) \
         addressed.</p>\n",
        round.round,
        round.trajectories,
        round.proposed,
        round.selected.len(),
        m.addressed.len()
    );
    if !m.summary.is_empty() {
        let _ = writeln!(out, "<p>{}</p>", cell(&m.summary));
    }
    if !round.selected.is_empty() {
        out.push_str("<table>\n<tr><th>op</th><th>target</th><th>why</th><th>content</th></tr>\n");
        for edit in &round.selected {
            let why = ["reason", "why"]
                .iter()
                .find_map(|k| edit.extra.get(*k).and_then(Value::as_str))
                .unwrap_or("");
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                cell(&edit.op.to_string()),
                cell(&edit.target),
                cell(why),
                cell(&edit.content)
            );
        }
        out.push_str("</table>\n");
    }
    for why in &round.dropped {
        let _ = writeln!(out, "<p class=\"rejected\">{}</p>", cell(why));
    }
    for error in &m.validation_errors {
        let _ = writeln!(out, "<p class=\"rejected\">validation: {}</p>", cell(error));
    }
    for breach in &round.breaches {
        let _ = writeln!(
            out,
            "<p class=\"rejected\">house rules: {}</p>",
            cell(&breach.to_string())
        );
    }
    if !m.unaddressed.is_empty() {
        out.push_str("<ul>\n");
        for (id, why) in &m.unaddressed {
            let _ = writeln!(
                out,
                "<li>still open: <code>{}</code>: {}</li>",
                cell(id),
                cell(why)
            );
        }
        out.push_str("</ul>\n");
    }
    out
}

/// What `--slow-update` did, when it was asked for.
fn slow_update(report: &EvolveReport) -> String {
    let Some(slow) = &report.slow_update else {
        return String::new();
    };
    let what = if slow.updated {
        "new long-term guidance in the slow-update region"
    } else {
        "the previous guidance kept"
    };
    let mut out = format!("<h2 id=\"slow-update\">Slow update</h2>\n<p>{what}</p>\n");
    if let Some(note) = &slow.note {
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", cell(note));
    }
    if !slow.compared_on.is_empty() {
        let _ = writeln!(out, "<p>Compared on {}</p>", cell(&slow.compared_on));
    }
    if !slow.guidance.is_empty() {
        let _ = writeln!(
            out,
            "<pre class=\"diff\">{}</pre>",
            escape::text(&truncate_chars(&slow.guidance, MAX_GUIDANCE_CHARS))
        );
    }
    out
}
