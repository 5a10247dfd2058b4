//! The report page: one self-contained HTML document (inline CSS and SVG,
//! no script, nothing fetched) drawn from [`Inputs`] by pure functions.
//!
//! Every text that came from the run — candidate labels, versions, diffs,
//! question ids — goes through [`escape::text`]; the page's own markup,
//! classes and anchors (`cand-<index>`) never contain run text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use evolution_gate::ProbationVerdict;
use evolution_harness::StopReason;

use super::candidate::{candidates, diff_block};
use super::cells::{label, outcome_badge};
use super::escape;
use super::model::{DroppedView, ErrorControl, Inputs, SavedReport, Score, StagedView};
pub(super) use super::usage::phase_table;
use super::usage::usage;

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
pub(super) fn page(inputs: &Inputs) -> String {
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
    out.push_str(&failures(&report.infra_by_phase));
    out.push_str(&candidates(inputs));
    out.push_str(&dropped(&report.dropped));
    out.push_str("<h2 id=\"final-diff\">Diff, first to final version</h2>\n");
    if inputs.final_diff.is_empty() {
        out.push_str("<p>No change was accepted.</p>\n");
    } else {
        out.push_str(&diff_block(&inputs.final_diff));
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The failed rollouts of each part of the run: a table, or nothing when the report has
/// none recorded (a report of an older version).
fn failures(parts: &[crate::run::failures::PartFailures]) -> String {
    if parts.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2 id=\"failures\">Failed rollouts (INFRA) by phase</h2>\n\
         <p class=\"muted\">A rollout fails when the agent never started, crashed, broke the \
         protocol, timed out or reported an error, or when the rubric judge (the run's LLM) \
         gave no verdict on its answer.</p>\n\
         <table>\n<tr><th>phase</th><th>rollouts</th><th>agent failed</th>\
         <th>judge gave no verdict</th><th>first error</th></tr>\n",
    );
    for p in parts {
        let first = [
            p.first_agent_error
                .as_deref()
                .map(|e| format!("agent: {e}")),
            p.first_judge_error
                .as_deref()
                .map(|e| format!("judge: {e}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape::text(&p.phase),
            p.rollouts,
            p.agent_failures,
            p.judge_failures,
            if first.is_empty() {
                "—".to_owned()
            } else {
                escape::text(&first)
            }
        );
    }
    out.push_str("</table>\n");
    out
}

/// The proposals dropped before their gate for breaking the project's house rules: a
/// table, or nothing when none was.
fn dropped(dropped: &[DroppedView]) -> String {
    if dropped.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2 id=\"dropped\">Dropped before the gate</h2>\n\
         <p class=\"muted\">These proposals were not gated, so none of the run's level was \
         spent on them.</p>\n\
         <table>\n<tr><th>proposal</th><th>epoch</th><th>why</th></tr>\n",
    );
    for d in dropped {
        let reasons = d
            .reasons
            .iter()
            .map(|r| escape::text(r))
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape::text(&d.candidate),
            d.epoch,
            if reasons.is_empty() {
                "—".to_owned()
            } else {
                reasons
            }
        );
    }
    out.push_str("</table>\n");
    out
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
pub(super) fn wilson(score: Score) -> Option<(f64, f64)> {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use evolution_gate::{EProcess, GateDecision};
    use evolution_harness::{GatePoint, StopReason};

    use super::*;
    use crate::report_html::cells::CHART_CLASS;
    use crate::report_html::model::RecordView;
    use crate::report_html::model::{BudgetView, LevelView, ProbationView, UsageView, VerdictView};
    use crate::report_html::model::{GateView, ValidationView};
    use evolution_gate::wald_lambda;

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
                ledger: Some(LevelView {
                    index: 7,
                    alpha_t: 0.005,
                    threshold: Some(200.0),
                    discoveries_before: 2,
                }),
            },
            RecordView {
                candidate: format!("rejected {HOSTILE}"),
                level: None,
                validation: Some(validation(&v1, 1, 5, GateDecision::RejectDirectional)),
                accepted: false,
                new_version: None,
                probation: None,
                ledger: None,
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
                ledger: None,
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
                infra_by_phase: vec![crate::run::failures::PartFailures {
                    phase: format!("training {HOSTILE}"),
                    rollouts: 8,
                    agent_failures: 2,
                    judge_failures: 1,
                    first_agent_error: Some(format!("crashed {HOSTILE}")),
                    first_judge_error: Some(format!("unreadable {HOSTILE}")),
                }],
                dropped: vec![DroppedView {
                    candidate: format!("dropped {HOSTILE}"),
                    epoch: 1,
                    reasons: vec![format!("breaks preference 'max_lines = 3' {HOSTILE}")],
                }],
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
    fn a_ledger_test_is_shown_and_raises_what_an_accept_needed() {
        let report = inputs();
        let html = page(&report);
        assert!(
            html.contains("Ledger kept across runs: test 7 of this skill"),
            "{html}"
        );
        let first = &report.report.records[0];
        assert_eq!(super::super::candidate::needed(first), Some(200.0));
        let mut lower = first.clone();
        lower.ledger.as_mut().unwrap().threshold = Some(5.0);
        assert_eq!(super::super::candidate::needed(&lower), Some(20.0));
        let mut infinite = first.clone();
        infinite.ledger.as_mut().unwrap().threshold = None;
        assert_eq!(super::super::candidate::needed(&infinite), None);
        assert_eq!(html.matches("Ledger kept across runs").count(), 1);
    }

    #[test]
    fn proposals_dropped_before_the_gate_are_listed_with_their_reasons() {
        let html = page(&inputs());
        assert!(html.contains("<h2 id=\"dropped\">Dropped before the gate</h2>"));
        assert!(html.contains("breaks preference &#39;max_lines = 3&#39; &lt;script&gt;"));
        let mut none = inputs();
        none.report.dropped.clear();
        assert!(!page(&none).contains("id=\"dropped\""));
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
