//! Stage 2 statistics over Stage-1 output, one function per table of the
//! diagnosis: [`tool_stats`] (per tool's spans), [`task_stats`] (per task
//! type and correctness), [`adherence_stats`] (skill adherence per task
//! type) and [`behavior_stats`] (cross-task behaviour). Pure functions.

use std::collections::BTreeMap;

use evolution_types::{
    ConfidenceCalibration, ErrorAttribution, QuestionMetrics, SpanMetrics, Stats,
};
use serde_json::{Value, json};

use crate::rules::{mean, ratio};

/// Budget usage below which a wrong answer counts as an early submit.
pub const EARLY_SUBMIT_BUDGET: f64 = 0.3;

/// Tags listed per tool in [`tool_stats`], most frequent first.
const TOP_TAGS: usize = 5;

/// True for a wrong answer submitted with less than [`EARLY_SUBMIT_BUDGET`] of the budget used.
pub fn is_early_submit(metrics: &QuestionMetrics) -> bool {
    !metrics.correct && metrics.budget_usage < EARLY_SUBMIT_BUDGET
}

/// The `p`-th percentile (0–100) with linear interpolation between the
/// closest ranks; `None` for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (sorted.len() - 1) as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    let (a, b) = (sorted.get(low)?, sorted.get(high)?);
    Some(a + (b - a) * (rank - low as f64))
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, Value::from)
}

fn top_tags<'a>(tags: impl Iterator<Item = &'a String>) -> Value {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for tag in tags {
        *counts.entry(tag.as_str()).or_default() += 1;
    }
    let mut ranked: Vec<(&str, u64)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(TOP_TAGS)
        .map(|(tag, count)| json!({ "tag": tag, "count": count }))
        .collect()
}

/// Per-tool statistics (the diagnosis's `tool_stats`): one entry for every
/// tool the traces called or a judge scored.
///
/// `{tool: {n_calls, n_spans, avg_completeness, avg_hallucination,
/// p25_completeness, low_completeness_count, high_hallucination_count,
/// top_missed_info_tags, top_hallucination_tags}}`: `n_calls` counts the
/// tool's calls (its `tool_usage`), the rest are over its judged spans —
/// `n_spans` 0 and null averages for a tool that is not span-judged. `{}`
/// when no tool was called and no span judged. (The reference
/// implementation listed judged tools only and had no `n_calls`; a profile
/// that names no tool would leave it empty.)
pub fn tool_stats(metrics: &[QuestionMetrics]) -> Stats {
    let mut calls: BTreeMap<&str, u64> = BTreeMap::new();
    for (tool, n) in metrics.iter().flat_map(|m| &m.tool_usage) {
        *calls.entry(tool.as_str()).or_default() += u64::from(*n);
    }
    let mut by_tool: BTreeMap<&str, Vec<&SpanMetrics>> =
        calls.keys().map(|tool| (*tool, Vec::new())).collect();
    for span in metrics.iter().flat_map(|m| &m.span_metrics) {
        by_tool
            .entry(span.tool_name.as_str())
            .or_default()
            .push(span);
    }
    by_tool
        .into_iter()
        .map(|(tool, spans)| {
            let completeness: Vec<f64> = spans.iter().map(|s| s.extraction_completeness).collect();
            let stats = json!({
                "n_calls": calls.get(tool).copied().unwrap_or(0),
                "n_spans": spans.len(),
                "avg_completeness": opt(mean(completeness.iter().copied())),
                "avg_hallucination": opt(mean(spans.iter().map(|s| s.hallucination_rate))),
                "p25_completeness": opt(percentile(&completeness, 25.0)),
                "low_completeness_count": spans.iter().filter(|s| s.extraction_completeness < crate::attribution::LOW_COMPLETENESS).count(),
                "high_hallucination_count": spans.iter().filter(|s| s.hallucination_rate > crate::attribution::HIGH_HALLUCINATION).count(),
                "top_missed_info_tags": top_tags(spans.iter().flat_map(|s| &s.missed_info_tags)),
                "top_hallucination_tags": top_tags(spans.iter().flat_map(|s| &s.hallucination_tags)),
            });
            (tool.to_owned(), stats)
        })
        .collect()
}

fn group_stats(group: &[&QuestionMetrics]) -> Value {
    json!({
        "n": group.len(),
        // The reference implementation's key: it holds the mean budget usage, not a step count.
        "avg_steps": opt(mean(group.iter().map(|m| m.budget_usage))),
        "avg_confidence": opt(mean(group.iter().map(|m| m.confidence))),
        "avg_repeat_visit_rate": opt(mean(group.iter().filter_map(|m| m.repeat_visit_rate))),
        "avg_search_keyword_repetition": opt(mean(group.iter().filter_map(|m| m.search_keyword_repetition))),
        "avg_format_compliance": opt(mean(group.iter().map(|m| m.format_compliance))),
        "avg_adherence": opt(mean(group.iter().filter_map(|m| m.adherence_rate))),
        "avg_soft_score": opt(mean(group.iter().filter_map(|m| m.soft_score))),
    })
}

/// Per task type × correctness statistics (the diagnosis's `task_stats`).
///
/// `{task_type: {n, n_correct, accuracy, correct: {...}, incorrect: {...},
/// error_types: {error_type: count}}}`; each group holds `n`, `avg_steps`
/// (the reference implementation's name for the mean *budget usage*, kept for fidelity),
/// `avg_confidence`, `avg_repeat_visit_rate`, `avg_search_keyword_repetition`,
/// `avg_format_compliance`, `avg_adherence`, `avg_soft_score` (null where
/// no question of the group has the metric).
pub fn task_stats(metrics: &[QuestionMetrics], attributions: &[ErrorAttribution]) -> Stats {
    let mut by_task: BTreeMap<&str, Vec<&QuestionMetrics>> = BTreeMap::new();
    for m in metrics {
        by_task.entry(m.task_type.as_str()).or_default().push(m);
    }
    by_task
        .into_iter()
        .map(|(task, group)| {
            let (correct, incorrect): (Vec<&QuestionMetrics>, Vec<&QuestionMetrics>) =
                group.iter().partition(|m| m.correct);
            let mut error_types: BTreeMap<&str, u64> = BTreeMap::new();
            for a in attributions.iter().filter(|a| a.task_type == task) {
                *error_types.entry(a.error_type.as_str()).or_default() += 1;
            }
            let stats = json!({
                "n": group.len(),
                "n_correct": correct.len(),
                "accuracy": ratio(correct.len(), group.len()),
                "correct": group_stats(&correct),
                "incorrect": group_stats(&incorrect),
                "error_types": error_types,
            });
            (task.to_owned(), stats)
        })
        .collect()
}

/// Skill adherence per task type, over questions whose adherence was judged
/// (the diagnosis's `adherence_stats`).
///
/// `{task_type: {n_judged, avg_adherence, avg_adherence_correct,
/// avg_adherence_incorrect, unfollowed_steps: [{step, count}]}}` (the five
/// most often unfollowed steps).
pub fn adherence_stats(metrics: &[QuestionMetrics]) -> Stats {
    let mut by_task: BTreeMap<&str, Vec<&QuestionMetrics>> = BTreeMap::new();
    for m in metrics.iter().filter(|m| m.adherence_rate.is_some()) {
        by_task.entry(m.task_type.as_str()).or_default().push(m);
    }
    by_task
        .into_iter()
        .map(|(task, group)| {
            let rate = |keep: &dyn Fn(&QuestionMetrics) -> bool| {
                opt(mean(
                    group
                        .iter()
                        .filter(|m| keep(m))
                        .filter_map(|m| m.adherence_rate),
                ))
            };
            let mut unfollowed: BTreeMap<&str, u64> = BTreeMap::new();
            for step in group
                .iter()
                .flat_map(|m| &m.skill_adherence)
                .filter(|s| !s.followed)
            {
                *unfollowed.entry(step.step.as_str()).or_default() += 1;
            }
            let mut ranked: Vec<(&str, u64)> = unfollowed.into_iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let steps: Vec<Value> = ranked
                .into_iter()
                .take(TOP_TAGS)
                .map(|(step, count)| json!({ "step": step, "count": count }))
                .collect();
            let stats = json!({
                "n_judged": group.len(),
                "avg_adherence": rate(&|_| true),
                "avg_adherence_correct": rate(&|m| m.correct),
                "avg_adherence_incorrect": rate(&|m| !m.correct),
                "unfollowed_steps": steps,
            });
            (task.to_owned(), stats)
        })
        .collect()
}

/// Cross-task behaviour (the diagnosis's `behavior_stats`).
///
/// Counts and rates of `early_submit` ([`is_early_submit`]),
/// `high_conf_wrong`, `low_conf_right` and `confirmation_bias`, plus mean
/// budget usage, repeat-visit rate, keyword repetition and format
/// compliance. With no questions every count, rate and mean is 0; the
/// repeat-visit rate and keyword repetition are null when questions exist
/// but none computed them (the profile names no visit or search tool).
pub fn behavior_stats(metrics: &[QuestionMetrics]) -> Stats {
    let n = metrics.len();
    let count = |f: &dyn Fn(&QuestionMetrics) -> bool| metrics.iter().filter(|m| f(m)).count();
    let early = count(&is_early_submit);
    let high = count(&|m| m.confidence_calibration == ConfidenceCalibration::HighConfWrong);
    let low = count(&|m| m.confidence_calibration == ConfidenceCalibration::LowConfRight);
    let bias = count(&|m| m.confirmation_bias == Some(true));
    let avg = |f: &dyn Fn(&QuestionMetrics) -> f64| mean(metrics.iter().map(f)).unwrap_or(0.0);
    let avg_computed =
        |f: &dyn Fn(&QuestionMetrics) -> Option<f64>| match mean(metrics.iter().filter_map(f)) {
            Some(v) => Value::from(v),
            None if n == 0 => Value::from(0.0),
            None => Value::Null,
        };
    let stats = json!({
        "n": n,
        "early_submit_count": early,
        "early_submit_rate": ratio(early, n),
        "high_conf_wrong_count": high,
        "high_conf_wrong_rate": ratio(high, n),
        "low_conf_right_count": low,
        "low_conf_right_rate": ratio(low, n),
        "confirmation_bias_count": bias,
        "confirmation_bias_rate": ratio(bias, n),
        "avg_budget_usage": avg(&|m| m.budget_usage),
        "avg_repeat_visit_rate": avg_computed(&|m| m.repeat_visit_rate),
        "avg_search_keyword_repetition": avg_computed(&|m| m.search_keyword_repetition),
        "avg_format_compliance": avg(&|m| m.format_compliance),
    });
    match stats {
        Value::Object(map) => map,
        _ => Stats::new(),
    }
}
