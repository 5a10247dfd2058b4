//! The candidates' part of the report page: the overview table and one section per
//! candidate (its gate's evidence chart, the quadrants of its paired questions, its probation,
//! why it was accepted or rejected, and its diff).

use std::fmt::Write as _;

use evolution_gate::{GateDecision, ProbationVerdict, wald_lambda};
use evolution_types::template::truncate_chars;

use super::cells::{
    CHART_CLASS, MAX_DIFF_LINE_CHARS, MAX_DIFF_LINES, MAX_LABEL_CHARS, e_from_ln, label,
    outcome_badge, threshold,
};
use super::chart::{Level, LineChart, Series, line_chart};
use super::escape;
use super::model::{GateView, Inputs, RecordView, ValidationView};

/// The overview table and one section per candidate.
pub(super) fn candidates(inputs: &Inputs) -> String {
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

/// The e-value a candidate's accept needed: the highest of its e-LOND threshold, its
/// ledger's threshold (`None`: infinite) and the gate's `e_confirm`.
pub(super) fn needed(record: &RecordView) -> Option<f64> {
    let run = match (&record.level, &record.validation) {
        (Some(level), Some(v)) => match (level.threshold, v.e_confirm) {
            (Some(t), Some(c)) => Some(t.max(c)),
            (t, c) => t.or(c),
        },
        (Some(level), None) => level.threshold,
        (None, Some(v)) => v.e_confirm,
        (None, None) => None,
    };
    let Some(ledger) = &record.ledger else {
        return run;
    };
    let run_is_infinite = record.level.is_some_and(|l| l.threshold.is_none());
    match (ledger.threshold, run) {
        (None, _) => None,
        (Some(_), None) if run_is_infinite => None,
        (Some(t), run) => Some(run.map_or(t, |r| r.max(t))),
    }
}

/// The e-value a provisional accept of the candidate needed when the questions ran out: the
/// gate's `e_provisional`, raised to its e-LOND level's and its ledger's thresholds (but not to
/// `e_confirm`, which binds only a confirmed accept).
pub(super) fn provisional_needed(record: &RecordView, gate: Option<&GateView>) -> Option<f64> {
    let gate = gate?;
    let level = record.level.and_then(|l| l.threshold).unwrap_or(0.0);
    let ledger = record
        .ledger
        .as_ref()
        .map_or(Some(0.0), |ledger| ledger.threshold)?;
    Some(gate.e_provisional.max(level).max(ledger))
}

/// One candidate: decision and why, the evidence chart, the quadrants,
/// probation and the diff.
pub(super) fn candidate(inputs: &Inputs, i: usize, record: &RecordView) -> String {
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
    if let Some(ledger) = &record.ledger {
        let _ = writeln!(
            out,
            "<p class=\"muted\">Ledger kept across runs: test {} of this skill, level \
             α<sub>t</sub> = {:.3e}, so an accept needed E ≥ {} too; {} accept(s) before it.</p>",
            ledger.index,
            ledger.alpha_t,
            threshold(ledger.threshold),
            ledger.discoveries_before
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
            &evidence_chart(
                &record.candidate,
                v,
                needed(record),
                provisional_needed(record, gate),
                gate,
            ),
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
pub(super) fn why(record: &RecordView, gate: Option<&GateView>) -> String {
    let Some(v) = &record.validation else {
        return "Not gated: the run's e-LOND level for it was zero (it came after the most \
                candidates the run planned for), so no rollout was spent on it."
            .to_owned();
    };
    let e = e_from_ln(v.verdict.ln_e_value);
    let need = threshold(needed(record));
    let provisional = provisional_needed(record, gate);
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
        GateDecision::RejectInfra => format!(
            "Rejected: more questions than the INFRA guard allows could not be compared (both \
             versions failed on them — the agent, or the rubric judge that gave no verdict on \
             an answer —, or the agent never started); E = {e} on the {} paired.",
            v.n_used
        ),
        GateDecision::Continue => {
            "Undecided: the validation stopped before the gate decided.".to_owned()
        }
    }
}

/// The evidence chart of one validation: ln E per block against the
/// paired questions, with the accept line, the best case still reachable
/// (futility: it falls below the accept line) and Wald's λ with the
/// directional boundary, where the gate's parameters are known; the provisional accept's
/// line at `provisional` when it differs from the accept line.
pub(super) fn evidence_chart(
    candidate: &str,
    v: &ValidationView,
    needed: Option<f64>,
    provisional: Option<f64>,
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
        if let Some(provisional) = provisional
            && provisional.is_finite()
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
