//! Stage 1 rule metrics: pure functions of a prediction and its trace.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use evolution_types::{
    ConfidenceCalibration, Prediction, Profile, QuestionMetrics, SpanMetrics, TraceStep,
};
use regex::Regex;
use serde_json::Value;

use crate::DiagnoseError;
use crate::json::parse_json_object;

/// Confidence used when neither the trace nor the prediction states one.
pub const DEFAULT_CONFIDENCE: f64 = 0.5;

/// Share of raw step outputs that read as a JSON object ([`parse_json_object`]).
///
/// No steps at all counts as fully compliant: 1.0.
pub fn calc_format_compliance<S: AsRef<str>>(raw_contents: &[S]) -> f64 {
    if raw_contents.is_empty() {
        return 1.0;
    }
    let ok = raw_contents
        .iter()
        .filter(|raw| parse_json_object(raw.as_ref()).is_some())
        .count();
    ratio(ok, raw_contents.len())
}

/// Steps used over the step budget.
///
/// The seed divides without a guard; here a budget of 0 (a log that did not
/// record one) gives 0.0 when no step was used and 1.0 otherwise — "the
/// whole budget" — so the value is never NaN or infinite.
pub fn calc_budget_usage(steps_used: u32, max_steps: u32) -> f64 {
    if max_steps == 0 {
        return if steps_used == 0 { 0.0 } else { 1.0 };
    }
    f64::from(steps_used) / f64::from(max_steps)
}

/// `high_conf_wrong` when `confidence ≥ high` and wrong, `low_conf_right`
/// when `confidence < low` and right, else `calibrated` (thresholds from the
/// profile: 0.7 and 0.5 by default). A NaN confidence is `calibrated`.
pub fn calc_confidence_calibration(
    confidence: f64,
    correct: bool,
    profile: &Profile,
) -> ConfidenceCalibration {
    if !correct && confidence >= profile.high_confidence {
        ConfidenceCalibration::HighConfWrong
    } else if correct && confidence < profile.low_confidence {
        ConfidenceCalibration::LowConfRight
    } else {
        ConfidenceCalibration::Calibrated
    }
}

/// `(visits − distinct nodes) / visits`; 0.0 without visits.
pub fn calc_repeat_visit_rate<S: AsRef<str>>(node_ids: &[S]) -> f64 {
    if node_ids.is_empty() {
        return 0.0;
    }
    let distinct: HashSet<&str> = node_ids.iter().map(AsRef::as_ref).collect();
    ratio(node_ids.len() - distinct.len(), node_ids.len())
}

/// Character trigrams of a query, lower-cased and trimmed.
fn trigrams(text: &str) -> BTreeSet<[char; 3]> {
    let chars: Vec<char> = text.trim().to_lowercase().chars().collect();
    chars
        .windows(3)
        .filter_map(|w| <[char; 3]>::try_from(w).ok())
        .collect()
}

/// The largest Jaccard similarity of character-trigram sets over all pairs
/// of queries (MAX, not mean); 0.0 with fewer than two queries. Two queries
/// too short to have a trigram have similarity 0.
pub fn calc_search_keyword_repetition<S: AsRef<str>>(queries: &[S]) -> f64 {
    let sets: Vec<BTreeSet<[char; 3]>> = queries.iter().map(|q| trigrams(q.as_ref())).collect();
    let mut best = 0.0_f64;
    for (i, a) in sets.iter().enumerate() {
        for b in sets.iter().skip(i + 1) {
            let union = a.union(b).count();
            if union == 0 {
                continue;
            }
            let jaccard = ratio(a.intersection(b).count(), union);
            best = best.max(jaccard);
        }
    }
    best
}

/// The tree levels of the visited nodes, as `L1→L2→L2`.
///
/// A node's level is the first capture group of `level_pattern` (the whole
/// match when the pattern has no group); nodes without a match are skipped
/// and every visit counts, so repeated levels show as repeats.
pub fn calc_level_jump_pattern<S: AsRef<str>>(node_ids: &[S], level_pattern: &Regex) -> String {
    node_ids
        .iter()
        .filter_map(|id| {
            let caps = level_pattern.captures(id.as_ref())?;
            let level = caps.get(1).or_else(|| caps.get(0))?;
            Some(format!("L{}", level.as_str()))
        })
        .collect::<Vec<_>>()
        .join("→")
}

/// Tool name → number of calls; steps without a tool are not counted.
pub fn calc_tool_usage<S: AsRef<str>>(tool_names: &[S]) -> BTreeMap<String, u32> {
    let mut usage = BTreeMap::new();
    for name in tool_names
        .iter()
        .map(AsRef::as_ref)
        .filter(|n| !n.is_empty())
    {
        let count: &mut u32 = usage.entry(name.to_owned()).or_default();
        *count = count.saturating_add(1);
    }
    usage
}

/// The confidence the agent stated in its last step: `reflect.confidence`
/// of the last raw output read as JSON.
///
/// `fallback` when the last step holds no such field; 0.5 when the field is
/// there but unusable (not a finite number or numeric string) — the reference implementation's
/// "any exception gives 0.5".
pub fn extract_last_confidence<S: AsRef<str>>(raw_contents: &[S], fallback: f64) -> f64 {
    let Some(last) = raw_contents.last() else {
        return fallback;
    };
    let Some(object) = parse_json_object(last.as_ref()) else {
        return fallback;
    };
    let Some(value) = object.get("reflect").and_then(|r| r.get("confidence")) else {
        return fallback;
    };
    number(value).unwrap_or(DEFAULT_CONFIDENCE)
}

/// A finite number, or a string holding one.
pub(crate) fn number(value: &Value) -> Option<f64> {
    let n = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    n.is_finite().then_some(n)
}

/// The profile's level pattern, compiled; `None` when it names none.
///
/// Compiling a regex costs far more than applying it (`\d` is a Unicode
/// class), so compiled patterns are kept in a small process-wide cache.
/// They are shared through an `Arc` rather than cloned: a cloned `Regex`
/// starts with an empty match cache, which would cost as much as compiling.
pub(crate) fn level_regex(profile: &Profile) -> Result<Option<Arc<Regex>>, DiagnoseError> {
    type Cache = Mutex<Vec<(String, Arc<Regex>)>>;
    static CACHE: LazyLock<Cache> = LazyLock::new(Mutex::default);
    const CACHE_SIZE: usize = 8;
    let Some(pattern) = profile.level_pattern.as_deref() else {
        return Ok(None);
    };
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, re)) = cache.iter().find(|(p, _)| p == pattern) {
        return Ok(Some(Arc::clone(re)));
    }
    let re = Regex::new(pattern).map_err(|e| DiagnoseError::InvalidProfile {
        field: "level_pattern",
        message: e.to_string(),
    })?;
    let re = Arc::new(re);
    if cache.len() >= CACHE_SIZE {
        cache.remove(0);
    }
    cache.push((pattern.to_owned(), Arc::clone(&re)));
    Ok(Some(re))
}

/// Checks a profile before use: the level pattern compiles, and
/// [`Profile::problems`] finds nothing (thresholds in `[0, 1]`, a pattern
/// count of at least 1, plain names).
///
/// # Errors
/// [`DiagnoseError::InvalidProfile`] naming the first field at fault.
pub fn check_profile(profile: &Profile) -> Result<(), DiagnoseError> {
    level_regex(profile)?;
    match profile.problems().into_iter().next() {
        Some((field, message)) => Err(DiagnoseError::InvalidProfile { field, message }),
        None => Ok(()),
    }
}

/// The calls of `tool` in the trace, each input's `field`; `None` when no
/// tool is named.
fn tool_inputs(trace: &[TraceStep], tool: Option<&str>, field: &str) -> Option<Vec<String>> {
    let tool = tool?;
    Some(
        trace
            .iter()
            .filter(|s| s.tool_name == tool)
            .filter_map(|s| input_field(s, field))
            .collect(),
    )
}

/// The node a visit-tool call visited: the `node_id` field of its input (or
/// the input itself when it is a plain string).
pub(crate) fn input_field(step: &TraceStep, field: &str) -> Option<String> {
    match &step.tool_input {
        Value::Object(map) => map.get(field).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// Extracts the seven rule metrics of a question from its prediction and trace.
///
/// The result is the question's [`QuestionMetrics`] as far as rules can tell:
/// the prediction's identity fields (question id, task type, source id,
/// correctness, stop reason) and the rule metrics, with every judge field
/// empty and `degraded` false. Node visits are the calls of `profile.visit_tool` (their input's
/// `node_id`), searches the calls of `profile.search_tool` (their input's
/// `query`); a metric whose tool the profile does not name is `None` (not
/// computed), and the level-jump pattern is empty without a visit tool or a
/// level pattern. Fails only on an invalid `level_pattern`.
pub fn extract_rule_metrics(
    prediction: &Prediction,
    trace: &[TraceStep],
    profile: &Profile,
) -> Result<QuestionMetrics, DiagnoseError> {
    let level = level_regex(profile)?;
    let raw: Vec<&str> = trace.iter().map(|s| s.raw_content.as_str()).collect();
    let fallback = prediction
        .answer_confidence
        .filter(|c| c.is_finite())
        .unwrap_or(DEFAULT_CONFIDENCE);
    let confidence = extract_last_confidence(&raw, fallback);
    let visits = tool_inputs(trace, profile.visit_tool.as_deref(), "node_id");
    let queries = tool_inputs(trace, profile.search_tool.as_deref(), "query");
    let level_jump_pattern = match (&visits, &level) {
        (Some(visits), Some(level)) => calc_level_jump_pattern(visits, level),
        _ => String::new(),
    };
    let tools: Vec<&str> = trace.iter().map(|s| s.tool_name.as_str()).collect();
    Ok(QuestionMetrics {
        question_id: prediction.question_id.clone(),
        task_type: prediction.task_type.clone(),
        video_id: prediction.video_id.clone(),
        correct: prediction.correct,
        stop_reason: prediction.stop_reason.clone(),
        confidence,
        format_compliance: calc_format_compliance(&raw),
        budget_usage: calc_budget_usage(prediction.steps_used, prediction.max_steps),
        confidence_calibration: calc_confidence_calibration(
            confidence,
            prediction.correct,
            profile,
        ),
        repeat_visit_rate: visits.as_deref().map(calc_repeat_visit_rate),
        search_keyword_repetition: queries.as_deref().map(calc_search_keyword_repetition),
        level_jump_pattern,
        tool_usage: calc_tool_usage(&tools),
        ..QuestionMetrics::default()
    })
}

/// Quality of one span: `completeness × (1 − hallucination)`, both clamped to `[0, 1]`.
pub fn span_quality(span: &SpanMetrics) -> f64 {
    clamp01(span.extraction_completeness) * (1.0 - clamp01(span.hallucination_rate))
}

/// Mean [`span_quality`] over a question's judged spans; `None` without spans.
pub fn question_soft_score(spans: &[SpanMetrics]) -> Option<f64> {
    mean(spans.iter().map(span_quality))
}

/// Mean of the scores that exist; `None` when none does.
pub fn aggregate_soft(scores: &[Option<f64>]) -> Option<f64> {
    mean(scores.iter().flatten().copied().filter(|s| s.is_finite()))
}

/// A value clamped to `[0, 1]`; NaN becomes 0.
pub(crate) fn clamp01(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// Mean of the values; `None` when there are none.
pub(crate) fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// `part / whole` as a float; 0.0 when `whole` is 0.
pub(crate) fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}
