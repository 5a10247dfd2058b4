//! Reading LLM replies (JSON extraction), the rule metrics of one question, and edit
//! budgets.

use evolution_diagnose::{json, rules};
use evolution_types::{Prediction, Profile, TraceStep};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::{dict_of, from_python, into_python};
use crate::{BudgetError, JsonError, MetricsError};

/// The JSON object in an LLM reply, however it is wrapped: the whole reply, a fenced block,
/// the outermost braces, then a repair of broken JSON (`<think>` blocks are dropped).
/// Raises `JsonError` when no object can be read.
#[pyfunction]
pub(crate) fn extract_json_from_response<'py>(
    py: Python<'py>,
    reply: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let object = json::extract_json_from_response(reply)
        .map_err(|err| JsonError::new_err(err.to_string()))?;
    dict_of(py, &object)
}

/// The JSON object of a reply read strictly, else repaired; `None` when there is none.
#[pyfunction]
pub(crate) fn parse_json_object<'py>(
    py: Python<'py>,
    reply: &str,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    json::parse_json_object(reply)
        .map(|object| dict_of(py, &object))
        .transpose()
}

/// The JSON object of an evolution reply: the whole reply, else the first `` ```json ``
/// block; no repair. `None` when neither is an object.
#[pyfunction]
pub(crate) fn parse_llm_json<'py>(
    py: Python<'py>,
    reply: &str,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    evolution_evolve::parse_llm_json(reply)
        .map(|object| dict_of(py, &object))
        .transpose()
}

/// The reply without its `<think>…</think>` blocks.
#[pyfunction]
pub(crate) fn strip_think_blocks(reply: &str) -> String {
    json::strip_think_blocks(reply).into_owned()
}

/// A profile from `None` (the neutral one), `"neutral"`, `"video_qa"` or a dict (missing
/// keys from the neutral profile), checked before use.
fn profile_of(profile: Option<&Bound<'_, PyAny>>) -> PyResult<Profile> {
    let profile = match profile {
        None => Profile::neutral(),
        Some(obj) => match obj.cast::<PyString>() {
            Ok(name) => match &*name.to_cow()? {
                "neutral" => Profile::neutral(),
                "video_qa" => Profile::video_qa(),
                other => {
                    return Err(MetricsError::new_err(format!(
                        "unknown profile {other:?} (known: neutral, video_qa; or pass a dict)"
                    )));
                }
            },
            Err(_) => from_python(obj, "profile", MetricsError::new_err)?,
        },
    };
    rules::check_profile(&profile).map_err(|err| MetricsError::new_err(err.to_string()))?;
    Ok(profile)
}

/// The seven rule metrics of one question (confidence, format compliance, budget usage,
/// confidence calibration, repeat visits, search repetition, level jumps) plus tool usage,
/// from its prediction and trace records (run-log dicts); judge fields stay empty.
#[pyfunction]
#[pyo3(signature = (prediction, trace, profile = None))]
pub(crate) fn extract_rule_metrics<'py>(
    py: Python<'py>,
    prediction: &Bound<'py, PyAny>,
    trace: &Bound<'py, PyAny>,
    profile: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let prediction: Prediction = from_python(prediction, "prediction", MetricsError::new_err)?;
    let trace: Vec<TraceStep> = from_python(trace, "trace", MetricsError::new_err)?;
    let profile = profile_of(profile)?;
    let metrics = rules::extract_rule_metrics(&prediction, &trace, &profile)
        .map_err(|err| MetricsError::new_err(err.to_string()))?;
    into_python(py, &metrics)
}

/// The share of raw step outputs that hold a JSON object (1.0 without steps).
#[pyfunction]
pub(crate) fn calc_format_compliance(raw_contents: Vec<String>) -> f64 {
    rules::calc_format_compliance(&raw_contents)
}

/// `steps_used / max_steps`, 0.0 or 1.0 when `max_steps` is 0.
#[pyfunction]
pub(crate) fn calc_budget_usage(steps_used: u32, max_steps: u32) -> f64 {
    rules::calc_budget_usage(steps_used, max_steps)
}

/// `high_conf_wrong`, `low_conf_right` or `calibrated`, with the profile's thresholds.
#[pyfunction]
#[pyo3(signature = (confidence, correct, profile = None))]
pub(crate) fn calc_confidence_calibration<'py>(
    py: Python<'py>,
    confidence: f64,
    correct: bool,
    profile: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let profile = profile_of(profile)?;
    into_python(
        py,
        &rules::calc_confidence_calibration(confidence, correct, &profile),
    )
}

/// `(visits − distinct nodes) / visits`; 0.0 without visits.
#[pyfunction]
pub(crate) fn calc_repeat_visit_rate(node_ids: Vec<String>) -> f64 {
    rules::calc_repeat_visit_rate(&node_ids)
}

/// The highest trigram Jaccard similarity between two search queries; 0.0 with fewer
/// than two.
#[pyfunction]
pub(crate) fn calc_search_keyword_repetition(queries: Vec<String>) -> f64 {
    rules::calc_search_keyword_repetition(&queries)
}

/// Tool name → number of calls (empty names not counted).
#[pyfunction]
pub(crate) fn calc_tool_usage(tool_names: Vec<String>) -> std::collections::BTreeMap<String, u32> {
    rules::calc_tool_usage(&tool_names)
}

/// `reflect.confidence` of the last step's JSON (a number or numeric string); 0.5 when it
/// is there but unusable, `fallback` when it is absent.
#[pyfunction]
#[pyo3(signature = (raw_contents, fallback = 0.5))]
pub(crate) fn extract_last_confidence(raw_contents: Vec<String>, fallback: f64) -> f64 {
    rules::extract_last_confidence(&raw_contents, fallback)
}

/// The edit budget at `step` of `total` steps, annealed linearly from `start` down to
/// `end` (rounded half to even). Raises `BudgetError` when `start < end`.
#[pyfunction]
pub(crate) fn edit_budget_at(step: u64, total: u64, start: usize, end: usize) -> PyResult<usize> {
    evolution_evolve::budget::edit_budget_at(step, total, start, end)
        .map_err(|err| BudgetError::new_err(err.to_string()))
}
