//! Prompt rendering and the text blocks the evolve prompts are filled with.

use std::fmt::Write as _;

use evolution_types::template::truncate_chars;
use evolution_types::{CaseSample, RejectedEdit, SpanSample};

/// Characters of a tool output shown per trace step or span (the reference implementation's
/// `tool_output[:500]`).
pub const TOOL_OUTPUT_CHARS: usize = 500;

/// Renders case samples for the skill and system prompts.
///
/// Each case shows its question, answers, selection reason, metrics (as
/// compact JSON) and trace; tool outputs are cut to [`TOOL_OUTPUT_CHARS`]
/// characters, thoughts are shown whole. An empty list renders as `(none)`.
pub fn format_case_samples(cases: &[CaseSample]) -> String {
    if cases.is_empty() {
        return "(none)".to_owned();
    }
    let mut out = String::new();
    for (i, case) in cases.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let metrics = serde_json::to_string(&case.metrics).unwrap_or_default();
        let _ = writeln!(
            out,
            "### Case {n}: {id} ({task})",
            n = i.saturating_add(1),
            id = case.question_id,
            task = case.task_type
        );
        let _ = writeln!(out, "Question: {}", case.question);
        let _ = writeln!(out, "Reference answer: {}", case.answer);
        let _ = writeln!(out, "Agent answer: {}", case.prediction);
        if !case.selection_reason.is_empty() {
            let _ = writeln!(out, "Selected because: {}", case.selection_reason);
        }
        let _ = writeln!(out, "Metrics: {metrics}");
        if case.trace.is_empty() {
            let _ = writeln!(out, "Trace: (empty)");
            continue;
        }
        let _ = writeln!(out, "Trace:");
        for step in &case.trace {
            let input = serde_json::to_string(&step.tool_input).unwrap_or_default();
            let _ = writeln!(out, "- step {}: {}({input})", step.step, step.tool_name);
            if !step.thought.is_empty() {
                let _ = writeln!(out, "  thought: {}", step.thought);
            }
            let _ = writeln!(
                out,
                "  output: {}",
                truncate_chars(&step.tool_output, TOOL_OUTPUT_CHARS)
            );
        }
    }
    out
}

/// Renders tool-call spans for the tool prompt: input, thought, the span
/// judge's scores and tags, and the output cut to [`TOOL_OUTPUT_CHARS`]
/// characters. An empty list renders as `(none)`.
pub fn format_spans(spans: &[SpanSample]) -> String {
    if spans.is_empty() {
        return "(none)".to_owned();
    }
    let mut out = String::new();
    for (i, span) in spans.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let m = &span.metrics;
        let input = serde_json::to_string(&span.tool_input).unwrap_or_default();
        let _ = writeln!(
            out,
            "### Span {n}: {id} step {step} ({task})",
            n = i.saturating_add(1),
            id = span.question_id,
            step = m.step,
            task = span.task_type
        );
        let _ = writeln!(out, "Call: {}({input})", m.tool_name);
        if !span.thought.is_empty() {
            let _ = writeln!(out, "Thought: {}", span.thought);
        }
        let _ = writeln!(
            out,
            "Completeness: {:.2}  Hallucination: {:.2}",
            m.extraction_completeness, m.hallucination_rate
        );
        if !m.missed_info_tags.is_empty() {
            let _ = writeln!(out, "Missed: {}", m.missed_info_tags.join(", "));
        }
        if !m.hallucination_tags.is_empty() {
            let _ = writeln!(out, "Hallucinated: {}", m.hallucination_tags.join(", "));
        }
        let _ = writeln!(
            out,
            "Output: {}",
            truncate_chars(&span.tool_output, TOOL_OUTPUT_CHARS)
        );
    }
    out
}

/// Renders the blacklist of rejected edits, one line each:
/// `- [op] target: "…" content: "…" — reason`.
///
/// The reason is the entry's own (`rejected by the gate` for a gate reject: no gate outcome
/// ever reaches a prompt, see [`evolution_types::GATE_REJECTED_REASON`]). Targets and
/// contents are cut to 200 characters. An empty list renders as `(none)`.
pub fn format_rejected_edits(rejected: &[RejectedEdit]) -> String {
    if rejected.is_empty() {
        return "(none)".to_owned();
    }
    let mut out = String::new();
    for r in rejected {
        let _ = writeln!(
            out,
            "- [{op}] target: {target:?} content: {content:?} — {reason}",
            op = r.edit.op,
            target = truncate_chars(&r.edit.target, 200),
            content = truncate_chars(r.edit.content.trim(), 200),
            reason = r.reason
        );
    }
    out
}

/// Renders a budget for a prompt: a number, or `unlimited` for `usize::MAX`.
pub(crate) fn budget_text(budget: usize) -> String {
    if budget == usize::MAX {
        "unlimited".to_owned()
    } else {
        budget.to_string()
    }
}
