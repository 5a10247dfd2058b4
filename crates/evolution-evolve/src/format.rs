//! Prompt rendering and the text blocks the evolve prompts are filled with.

use std::fmt::Write as _;

use evolution_types::{CaseSample, RejectedEdit, SpanSample};

/// Characters of a tool output shown per trace step or span (the seed's
/// `tool_output[:500]`).
pub const TOOL_OUTPUT_CHARS: usize = 500;

/// Fills `{{name}}` placeholders of `template` from `vars`.
///
/// One left-to-right pass: a value is inserted verbatim and never scanned
/// again, so a case text that happens to contain `{{skill_content}}` cannot
/// inject anything. Whitespace inside the braces is ignored
/// (`{{ name }}` works). A placeholder whose name is not in `vars`, and any
/// unmatched `{{`, stay in the output unchanged, so a template written for a
/// newer engine still renders.
pub fn render_template(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let (before, from_open) = rest.split_at(open);
        out.push_str(before);
        let after_open = from_open.strip_prefix("{{").unwrap_or(from_open);
        let Some((inner, after_close)) = after_open.split_once("}}") else {
            out.push_str(from_open);
            return out;
        };
        match vars.iter().find(|(key, _)| *key == inner.trim()) {
            Some((_, value)) => {
                out.push_str(value);
                rest = after_close;
            }
            None => {
                // Keep the braces and continue after them, so `{{{{x}}` still finds `{{x}}`.
                out.push_str("{{");
                rest = after_open;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` cut to at most `max` characters, with a visible marker saying how
/// many characters were left out. Never splits a code point.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let (kept, rest) = text.split_at(cut);
            format!("{kept}…[{} more chars]", rest.chars().count())
        }
    }
}

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
/// `- [op] target: "…" content: "…" — reason (W=3 L=5 E=0.42 δ̂=-0.125)`.
///
/// The gate evidence `W=… L=… E=… δ̂=…` (E with two decimals, δ̂ signed with
/// three) is shown for the fields that are present; edits rejected before
/// the gate have none. Targets and contents are cut to 200 characters. An
/// empty list renders as `(none)`.
pub fn format_rejected_edits(rejected: &[RejectedEdit]) -> String {
    if rejected.is_empty() {
        return "(none)".to_owned();
    }
    let mut out = String::new();
    for r in rejected {
        let mut evidence = Vec::new();
        if let Some(w) = r.gate_w {
            evidence.push(format!("W={w}"));
        }
        if let Some(l) = r.gate_l {
            evidence.push(format!("L={l}"));
        }
        if let Some(e) = r.gate_e {
            evidence.push(format!("E={e:.2}"));
        }
        if let Some(d) = r.gate_delta_hat {
            evidence.push(format!("δ̂={d:+.3}"));
        }
        let _ = write!(
            out,
            "- [{op}] target: {target:?} content: {content:?} — {reason}",
            op = r.edit.op,
            target = truncate_chars(&r.edit.target, 200),
            content = truncate_chars(r.edit.content.trim(), 200),
            reason = r.reason
        );
        if !evidence.is_empty() {
            let _ = write!(out, " ({})", evidence.join(" "));
        }
        out.push('\n');
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_is_single_pass_and_keeps_unknown_names() {
        let out = render_template(
            "a {{x}} b {{ y }} c {{unknown}} d {{x",
            &[("x", "{{y}}"), ("y", "Y")],
        );
        assert_eq!(out, "a {{y}} b Y c {{unknown}} d {{x");
    }

    #[test]
    fn render_handles_brace_runs() {
        assert_eq!(render_template("{{{{x}}}}", &[("x", "1")]), "{{1}}");
        assert_eq!(render_template("{{}}", &[]), "{{}}");
        assert_eq!(render_template("}}{{", &[]), "}}{{");
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate_chars("日本語テキスト", 3), "日本語…[4 more chars]");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("", 0), "");
    }
}
