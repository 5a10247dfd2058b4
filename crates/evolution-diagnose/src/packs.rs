//! Case packs: the evidence each evolution target receives.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use evolution_types::{
    CaseMetrics, CaseSample, CauseCategory, ConfidenceCalibration, ErrorAttribution, ErrorType,
    Prediction, Profile, QuestionMetrics, SkillCasePack, SkillStore, SpanSample, Stats, StoreError,
    SystemCasePack, ToolCasePack, TraceStep,
};
use serde_json::{Value, json};

use crate::DiagnoseError;
use crate::attribution::{HIGH_HALLUCINATION, LOW_COMPLETENESS};
use crate::stats::{EARLY_SUBMIT_BUDGET, behavior_stats, is_early_submit};

/// Failure cases kept per error type (skill) or behaviour pattern (system).
pub const TOP_PER_GROUP: usize = 2;
/// Most failure spans in one tool pack.
pub const MAX_FAILURE_SPANS: usize = 4;
/// Clean spans kept per tool pack.
pub const MAX_SUCCESS_SPANS: usize = 2;
/// Completeness at or above which a span with no hallucination is a clean example.
pub const CLEAN_COMPLETENESS: f64 = 0.9;
/// Accuracy at or below which a task's success examples favour the cheapest runs.
pub const LOW_ACCURACY: f64 = 0.3;
/// Budget band of a well-behaved success for the system pack.
pub const CALM_BUDGET: (f64, f64) = (0.3, 0.8);

/// One diagnosed question with everything the pack builders need.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiagnosedQuestion {
    /// The prediction.
    pub prediction: Prediction,
    /// The question text.
    pub question: String,
    /// The reference answer.
    pub answer: String,
    /// The trace, in step order.
    pub trace: Vec<TraceStep>,
    /// Stage-1 metrics.
    pub metrics: QuestionMetrics,
    /// D1 attribution, for wrong answers.
    pub attribution: Option<ErrorAttribution>,
}

/// Builds the case sample of a question: the fixed metric keys, the
/// untruncated trace and why it was chosen.
pub fn make_case_sample(question: &DiagnosedQuestion, selection_reason: &str) -> CaseSample {
    let m = &question.metrics;
    CaseSample {
        question_id: m.question_id.clone(),
        task_type: m.task_type.clone(),
        question: question.question.clone(),
        answer: question.answer.clone(),
        prediction: question.prediction.prediction.clone(),
        trace: question.trace.clone(),
        metrics: CaseMetrics {
            correct: m.correct,
            error_type: question.attribution.as_ref().map(|a| a.error_type),
            budget_usage: m.budget_usage,
            confidence_calibration: Some(m.confidence_calibration),
            repeat_visit_rate: m.repeat_visit_rate,
            tool_usage: m.tool_usage.clone(),
            missed_nodes: m.missed_nodes.clone(),
            adherence_rate: m.adherence_rate,
            confirmation_bias: m.confirmation_bias,
            evidence_sufficient: m.evidence_sufficient,
        },
        selection_reason: selection_reason.to_owned(),
    }
}

/// How bad a defect is, within its error type (higher is worse):
/// extraction — the worst span's `max(1 − completeness, hallucination)`;
/// search — the number of missed nodes; reasoning — the confidence of the
/// wrong answer; mixed — the budget used.
pub fn severity(metrics: &QuestionMetrics, error_type: ErrorType) -> f64 {
    let value = match error_type {
        ErrorType::ExtractionFailure => metrics
            .span_metrics
            .iter()
            .map(|s| (1.0 - s.extraction_completeness).max(s.hallucination_rate))
            .fold(0.0, f64::max),
        ErrorType::SearchFailure => metrics.missed_nodes.len() as f64,
        ErrorType::ReasoningFailure => metrics.confidence,
        ErrorType::Mixed => metrics.budget_usage,
    };
    if value.is_finite() { value } else { 0.0 }
}

fn by_key_then_id(a: (f64, &str), b: (f64, &str)) -> Ordering {
    a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1))
}

/// Resolves a task type's skill file: the profile's chosen file for it,
/// else its own file if the store lists it, else the profile's default file.
pub fn resolve_target_file(
    store: &dyn SkillStore,
    task_type: &str,
    profile: &Profile,
) -> Result<String, StoreError> {
    Ok(evolution_types::skill_file_for(
        &store.list_skill_files()?,
        task_type,
        &profile.task_skill_files,
        &profile.default_skill_file,
    ))
}

/// One pack per task type that has defect failures or lapse notes.
///
/// Failures are the defects (cause `defect`) grouped by error type, each
/// group's [`TOP_PER_GROUP`] most severe; a single defect is a failure case
/// like any other, so the proposer sees it. Lapse notes are trimmed; blank ones are dropped, duplicates kept once.
/// Successes: `max(2, failures / 2)` correct answers — the cheapest first
/// when the task's accuracy is ≤ 0.3, else the most adherent (then
/// cheapest) first.
pub fn build_skill_case_packs(
    questions: &[DiagnosedQuestion],
    task_stats: &Stats,
    adherence_stats: &Stats,
    skill_store: &dyn SkillStore,
    profile: &Profile,
) -> Result<Vec<SkillCasePack>, DiagnoseError> {
    let mut by_task: BTreeMap<&str, Vec<&DiagnosedQuestion>> = BTreeMap::new();
    for q in questions {
        by_task
            .entry(q.metrics.task_type.as_str())
            .or_default()
            .push(q);
    }
    let mut packs = Vec::new();
    for (task, group) in by_task {
        let mut lapse_notes: Vec<String> = Vec::new();
        let mut push_note = |note: &str| {
            let note = note.trim();
            if !note.is_empty() && !lapse_notes.iter().any(|n| n == note) {
                lapse_notes.push(note.to_owned());
            }
        };
        let mut defects: Vec<(&DiagnosedQuestion, ErrorType)> = Vec::new();
        for q in &group {
            let Some(a) = &q.attribution else { continue };
            match a.cause_category {
                Some(CauseCategory::Defect) => defects.push((q, a.error_type)),
                Some(CauseCategory::Lapse) => push_note(a.lapse_note.as_deref().unwrap_or("")),
                None => {}
            }
        }
        let mut by_type: BTreeMap<ErrorType, Vec<&DiagnosedQuestion>> = BTreeMap::new();
        for (q, error_type) in defects {
            by_type.entry(error_type).or_default().push(q);
        }
        let mut failure_cases = Vec::new();
        for (error_type, mut cases) in by_type {
            cases.sort_by(|a, b| {
                by_key_then_id(
                    (-severity(&a.metrics, error_type), &a.metrics.question_id),
                    (-severity(&b.metrics, error_type), &b.metrics.question_id),
                )
            });
            failure_cases.extend(
                cases
                    .into_iter()
                    .take(TOP_PER_GROUP)
                    .map(|q| make_case_sample(q, error_type.as_str())),
            );
        }
        if failure_cases.is_empty() && lapse_notes.is_empty() {
            continue;
        }
        let n_correct = group.iter().filter(|q| q.metrics.correct).count();
        let accuracy = crate::rules::ratio(n_correct, group.len());
        let mut successes: Vec<&DiagnosedQuestion> = group
            .iter()
            .copied()
            .filter(|q| q.metrics.correct)
            .collect();
        successes.sort_by(|a, b| {
            let (ma, mb) = (&a.metrics, &b.metrics);
            let primary = if accuracy <= LOW_ACCURACY {
                Ordering::Equal
            } else {
                let ra = ma.adherence_rate.unwrap_or(0.0);
                let rb = mb.adherence_rate.unwrap_or(0.0);
                rb.total_cmp(&ra)
            };
            primary.then_with(|| {
                by_key_then_id(
                    (ma.budget_usage, &ma.question_id),
                    (mb.budget_usage, &mb.question_id),
                )
            })
        });
        let n_success = TOP_PER_GROUP.max(failure_cases.len() / 2);
        let success_cases = successes
            .into_iter()
            .take(n_success)
            .map(|q| make_case_sample(q, "success"))
            .collect();
        let mut stats = Stats::new();
        stats.insert(
            "task".to_owned(),
            task_stats.get(task).cloned().unwrap_or(Value::Null),
        );
        stats.insert(
            "adherence".to_owned(),
            adherence_stats.get(task).cloned().unwrap_or(Value::Null),
        );
        packs.push(SkillCasePack {
            task_type: task.to_owned(),
            target_file: resolve_target_file(skill_store, task, profile)?,
            stats,
            failure_cases,
            success_cases,
            lapse_notes,
        });
    }
    Ok(packs)
}

/// The behaviour patterns of the system pack, in selection order.
pub const BEHAVIOR_PATTERNS: [&str; 3] = ["early_submit", "high_conf_wrong", "confirmation_bias"];

fn shows_pattern(m: &QuestionMetrics, pattern: &str) -> bool {
    match pattern {
        "early_submit" => is_early_submit(m),
        "high_conf_wrong" => m.confidence_calibration == ConfidenceCalibration::HighConfWrong,
        "confirmation_bias" => m.confirmation_bias == Some(true),
        _ => false,
    }
}

/// Sort key of a pattern's examples (lower first): earliest submits, most
/// confident wrong answers, biased wrong answers before biased right ones.
fn pattern_key(m: &QuestionMetrics, pattern: &str) -> f64 {
    match pattern {
        "early_submit" => m.budget_usage,
        "high_conf_wrong" => -m.confidence,
        _ => f64::from(u8::from(m.correct)) - m.confidence.clamp(0.0, 1.0) / 2.0,
    }
}

/// The system pack, when a behaviour pattern occurs at least
/// `profile.min_pattern_count` times.
///
/// Each pattern that reaches the threshold contributes its
/// [`TOP_PER_GROUP`] worst examples (a question is used once). Successes:
/// correct, calibrated, no confirmation bias (unjudged counts as none) and
/// budget usage within [`CALM_BUDGET`], closest to half the budget first;
/// `max(2, failures / 2)` of them. Stats: [`crate::stats::behavior_stats`] plus `pattern_counts`.
pub fn build_system_case_pack(
    questions: &[DiagnosedQuestion],
    profile: &Profile,
) -> Option<SystemCasePack> {
    let counts: BTreeMap<&str, usize> = BEHAVIOR_PATTERNS
        .iter()
        .map(|&p| {
            let n = questions
                .iter()
                .filter(|q| shows_pattern(&q.metrics, p))
                .count();
            (p, n)
        })
        .collect();
    let active: Vec<&str> = BEHAVIOR_PATTERNS
        .iter()
        .copied()
        .filter(|p| counts.get(p).copied().unwrap_or(0) >= profile.min_pattern_count)
        .collect();
    if active.is_empty() {
        return None;
    }
    let mut used: BTreeSet<&str> = BTreeSet::new();
    let mut failure_cases = Vec::new();
    for pattern in active {
        let mut cases: Vec<&DiagnosedQuestion> = questions
            .iter()
            .filter(|q| shows_pattern(&q.metrics, pattern))
            .filter(|q| !used.contains(q.metrics.question_id.as_str()))
            .collect();
        cases.sort_by(|a, b| {
            by_key_then_id(
                (pattern_key(&a.metrics, pattern), &a.metrics.question_id),
                (pattern_key(&b.metrics, pattern), &b.metrics.question_id),
            )
        });
        for q in cases.into_iter().take(TOP_PER_GROUP) {
            used.insert(q.metrics.question_id.as_str());
            failure_cases.push(make_case_sample(q, pattern));
        }
    }
    let mut successes: Vec<&DiagnosedQuestion> = questions
        .iter()
        .filter(|q| {
            let m = &q.metrics;
            m.correct
                && m.confidence_calibration == ConfidenceCalibration::Calibrated
                && m.confirmation_bias != Some(true)
                && (CALM_BUDGET.0..=CALM_BUDGET.1).contains(&m.budget_usage)
        })
        .collect();
    successes.sort_by(|a, b| {
        by_key_then_id(
            ((a.metrics.budget_usage - 0.5).abs(), &a.metrics.question_id),
            ((b.metrics.budget_usage - 0.5).abs(), &b.metrics.question_id),
        )
    });
    let n_success = TOP_PER_GROUP.max(failure_cases.len() / 2);
    let success_cases = successes
        .into_iter()
        .take(n_success)
        .map(|q| make_case_sample(q, "success"))
        .collect();
    let metrics: Vec<QuestionMetrics> = questions.iter().map(|q| q.metrics.clone()).collect();
    let mut stats = behavior_stats(&metrics);
    stats.insert("pattern_counts".to_owned(), json!(counts));
    stats.insert("early_submit_budget".to_owned(), json!(EARLY_SUBMIT_BUDGET));
    Some(SystemCasePack {
        stats,
        failure_cases,
        success_cases,
    })
}

fn span_sample(q: &DiagnosedQuestion, span: &evolution_types::SpanMetrics) -> SpanSample {
    let step = q.trace.iter().find(|s| s.step == span.step);
    SpanSample {
        question_id: q.metrics.question_id.clone(),
        task_type: q.metrics.task_type.clone(),
        tool_input: step.map(|s| s.tool_input.clone()).unwrap_or_default(),
        tool_output: step.map(|s| s.tool_output.clone()).unwrap_or_default(),
        thought: step.map(|s| s.thought.clone()).unwrap_or_default(),
        metrics: span.clone(),
    }
}

/// One pack per span-judged tool with judged spans.
///
/// Failures: the [`TOP_PER_GROUP`] lowest-completeness spans (< 0.5) and the
/// [`TOP_PER_GROUP`] most hallucinated spans (> 0.5), without duplicates, at
/// most [`MAX_FAILURE_SPANS`]. Successes: up to [`MAX_SUCCESS_SPANS`] spans
/// with completeness ≥ 0.9 and no hallucination, most complete first.
/// Target files come from `profile.tool_target_files` (`<tool>_extract.md` and
/// `<tool>_verify.md` for a tool without an entry); stats are the tool's entry of [`crate::stats::tool_stats`].
pub fn build_tool_case_packs(
    questions: &[DiagnosedQuestion],
    tool_stats: &Stats,
    profile: &Profile,
) -> Vec<ToolCasePack> {
    let mut by_tool: BTreeMap<&str, Vec<(&DiagnosedQuestion, &evolution_types::SpanMetrics)>> =
        BTreeMap::new();
    for q in questions {
        for span in &q.metrics.span_metrics {
            if profile.span_eval_tools.contains(&span.tool_name) {
                by_tool
                    .entry(span.tool_name.as_str())
                    .or_default()
                    .push((q, span));
            }
        }
    }
    let id = |(q, s): &(&DiagnosedQuestion, &evolution_types::SpanMetrics)| {
        (q.metrics.question_id.clone(), s.step)
    };
    by_tool
        .into_iter()
        .map(|(tool, spans)| {
            let mut low: Vec<_> = spans
                .iter()
                .filter(|(_, s)| s.extraction_completeness < LOW_COMPLETENESS)
                .collect();
            low.sort_by(|a, b| {
                a.1.extraction_completeness
                    .total_cmp(&b.1.extraction_completeness)
                    .then_with(|| id(a).cmp(&id(b)))
            });
            let mut high: Vec<_> = spans
                .iter()
                .filter(|(_, s)| s.hallucination_rate > HIGH_HALLUCINATION)
                .collect();
            high.sort_by(|a, b| {
                b.1.hallucination_rate
                    .total_cmp(&a.1.hallucination_rate)
                    .then_with(|| id(a).cmp(&id(b)))
            });
            let mut chosen: Vec<(String, u32)> = Vec::new();
            let mut failure_spans = Vec::new();
            for entry in low
                .into_iter()
                .take(TOP_PER_GROUP)
                .chain(high.into_iter().take(TOP_PER_GROUP))
            {
                let key = id(entry);
                if chosen.contains(&key) || failure_spans.len() >= MAX_FAILURE_SPANS {
                    continue;
                }
                chosen.push(key);
                failure_spans.push(span_sample(entry.0, entry.1));
            }
            let mut clean: Vec<_> = spans
                .iter()
                .filter(|(_, s)| {
                    s.extraction_completeness >= CLEAN_COMPLETENESS && s.hallucination_rate == 0.0
                })
                .collect();
            clean.sort_by(|a, b| {
                b.1.extraction_completeness
                    .total_cmp(&a.1.extraction_completeness)
                    .then_with(|| id(a).cmp(&id(b)))
            });
            let success_spans = clean
                .into_iter()
                .take(MAX_SUCCESS_SPANS)
                .map(|(q, s)| span_sample(q, s))
                .collect();
            let mut stats = Stats::new();
            if let Some(Value::Object(entry)) = tool_stats.get(tool) {
                stats.extend(entry.clone());
            }
            ToolCasePack {
                tool_name: tool.to_owned(),
                target_files: profile
                    .tool_target_files
                    .get(tool)
                    .cloned()
                    .unwrap_or_else(|| {
                        vec![format!("{tool}_extract.md"), format!("{tool}_verify.md")]
                    }),
                stats,
                failure_spans,
                success_spans,
            }
        })
        .collect()
}

fn per_step(stats: impl Iterator<Item = Stats>) -> Stats {
    let mut wrapped = Stats::new();
    wrapped.insert(
        "per_step".to_owned(),
        Value::Array(stats.map(Value::Object).collect()),
    );
    wrapped
}

/// Merges the system packs of several diagnosis steps into one.
///
/// Stats are wrapped as `{"per_step": [stats, ...]}`, never combined
/// numerically; cases are concatenated in order. `None` for no packs.
pub fn merge_system_packs(packs: &[SystemCasePack]) -> Option<SystemCasePack> {
    if packs.is_empty() {
        return None;
    }
    Some(SystemCasePack {
        stats: per_step(packs.iter().map(|p| p.stats.clone())),
        failure_cases: packs.iter().flat_map(|p| p.failure_cases.clone()).collect(),
        success_cases: packs.iter().flat_map(|p| p.success_cases.clone()).collect(),
    })
}

/// Merges tool packs of several diagnosis steps: one pack per tool (in
/// order of first appearance), stats wrapped as `{"per_step": [...]}`,
/// spans concatenated, target files united in order.
pub fn merge_tool_packs(packs: &[ToolCasePack]) -> Vec<ToolCasePack> {
    let mut order: Vec<&str> = Vec::new();
    for p in packs {
        if !order.contains(&p.tool_name.as_str()) {
            order.push(p.tool_name.as_str());
        }
    }
    order
        .into_iter()
        .map(|tool| {
            let group: Vec<&ToolCasePack> = packs.iter().filter(|p| p.tool_name == tool).collect();
            let mut target_files: Vec<String> = Vec::new();
            for file in group.iter().flat_map(|p| &p.target_files) {
                if !target_files.contains(file) {
                    target_files.push(file.clone());
                }
            }
            ToolCasePack {
                tool_name: tool.to_owned(),
                target_files,
                stats: per_step(group.iter().map(|p| p.stats.clone())),
                failure_spans: group.iter().flat_map(|p| p.failure_spans.clone()).collect(),
                success_spans: group.iter().flat_map(|p| p.success_spans.clone()).collect(),
            }
        })
        .collect()
}
