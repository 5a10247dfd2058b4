//! The patch engine: edits in SkillOpt's dict format, and the appendix and slow-update
//! regions.

use std::ops::Range;

use evolution_types::Edit;
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::Value;

use crate::PatchError;
use crate::convert::{into_python, to_json};

fn patch_error(err: impl ToString) -> PyErr {
    PatchError::new_err(err.to_string())
}

/// The edits of a Python list of dicts, each read on its own so an error names its edit.
fn edits_of(edits: &Bound<'_, PyAny>) -> PyResult<Vec<Edit>> {
    let Value::Array(items) = to_json(edits)? else {
        return Err(PatchError::new_err(
            "edits must be a list of dicts with `op`, `target` and `content`",
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value(item)
                .map_err(|err| PatchError::new_err(format!("edit {}: {err}", i + 1)))
        })
        .collect()
}

/// Applies `edits` to `document` in order, never touching a protected range, and reports
/// what happened to each: `(new_document, reports)`.
///
/// Edits and reports are SkillOpt's dicts (`op`, `target`, `content`; `index`, `op`,
/// `status`, `target`, `content_preview`); unknown operations are reported, not raised.
#[pyfunction]
#[pyo3(signature = (document, edits, protected_spans = Vec::new()))]
pub(crate) fn apply_patch_with_report<'py>(
    py: Python<'py>,
    document: String,
    edits: &Bound<'py, PyAny>,
    protected_spans: Vec<String>,
) -> PyResult<(String, Bound<'py, PyAny>)> {
    let edits = edits_of(edits)?;
    let (text, reports) = py.detach(|| {
        let spans: Vec<&str> = protected_spans.iter().map(String::as_str).collect();
        evolution_patch::apply_patch_with_report(&document, &edits, &spans)
    });
    Ok((text, into_python(py, &reports)?))
}

/// `document` with `notes` appended to its execution-notes appendix (created when absent;
/// notes already there are not repeated).
#[pyfunction]
pub(crate) fn append_to_appendix(document: &str, notes: Vec<String>) -> PyResult<String> {
    evolution_patch::append_to_appendix(document, &notes).map_err(patch_error)
}

/// The notes of the execution-notes appendix, without their `- ` bullets.
#[pyfunction]
pub(crate) fn extract_appendix_notes(document: &str) -> PyResult<Vec<String>> {
    evolution_patch::extract_appendix_notes(document).map_err(patch_error)
}

/// `document` with its appendix notes replaced by `notes` (an empty list removes the
/// appendix).
#[pyfunction]
pub(crate) fn replace_appendix_notes(document: &str, notes: Vec<String>) -> PyResult<String> {
    evolution_patch::replace_appendix_notes(document, &notes).map_err(patch_error)
}

/// `document` with the slow-update (long-term guidance) region holding `guidance`.
#[pyfunction]
pub(crate) fn replace_slow_update(document: &str, guidance: &str) -> PyResult<String> {
    evolution_patch::replace_slow_update(document, guidance).map_err(patch_error)
}

/// The guidance inside the slow-update region, or `None` when the document has none.
#[pyfunction]
pub(crate) fn slow_update_inner(document: &str) -> PyResult<Option<String>> {
    evolution_patch::slow_update_inner(document)
        .map(|inner| inner.map(str::to_owned))
        .map_err(patch_error)
}

/// `(start, end)` of the appendix region, markers included, as `str` indices; `None`
/// without one.
#[pyfunction]
pub(crate) fn appendix_region_bounds(document: &str) -> PyResult<Option<(usize, usize)>> {
    let range = evolution_patch::appendix_region_bounds(document).map_err(patch_error)?;
    Ok(range.map(|range| char_range(document, range)))
}

/// `(start, end)` of the slow-update region, markers included, as `str` indices; `None`
/// without one.
#[pyfunction]
pub(crate) fn slow_update_region_bounds(document: &str) -> PyResult<Option<(usize, usize)>> {
    let range = evolution_patch::slow_update_region_bounds(document).map_err(patch_error)?;
    Ok(range.map(|range| char_range(document, range)))
}

/// A byte range of `text` as Python's character indices.
fn char_range(text: &str, range: Range<usize>) -> (usize, usize) {
    let chars_before = |byte: usize| text.get(..byte).map_or(0, |s| s.chars().count());
    (chars_before(range.start), chars_before(range.end))
}

/// The edits as the patch engine reads them, written back as dicts: missing keys filled
/// in, unknown keys kept, a malformed edit raised before any document is touched.
#[pyfunction]
pub(crate) fn normalize_edits<'py>(
    py: Python<'py>,
    edits: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let edits = edits_of(edits)?;
    let list = PyList::empty(py);
    for edit in &edits {
        list.append(into_python(py, edit)?)?;
    }
    Ok(list)
}
