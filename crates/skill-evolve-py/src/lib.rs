//! The Python API of the evolution kernel: the extension module `skill_evolve._native`,
//! shipped in the `skill-evolve` wheel beside the `skill-evolve` command.
//!
//! It gives a Python harness the parts it wants without the command: the gate (`Gate`,
//! built once from a preset or thresholds, then `decide`, `probation`, `e_value`), the
//! patch engine (`apply_patch_with_report` on SkillOpt's edit dicts, the appendix and
//! slow-update region helpers), JSON extraction from LLM replies, the rule metrics and
//! `edit_budget_at`; and the project operations the `skill-evolve` command runs, in process
//! (`run` with a callback of events, `status`, `adopt` with an explicit confirmation,
//! `harvest`), through the same library functions.
//!
//! Key design choice: the wrappers are thin. Every dict crosses through the kernel type's
//! serde form (Python value → JSON value → kernel type and back), so the dicts are exactly
//! the JSON the run log, the CLI and SkillOpt write, and no rule is restated here. Errors
//! are `ValueError` subclasses (`GateError`, `PatchError`, `JsonError`, `BudgetError`,
//! `MetricsError`, all under `SkillEvolveError`) carrying the kernel's one-line message;
//! values with no JSON form raise `TypeError`. Built against the stable ABI (abi3), one
//! wheel serves every CPython from 3.9.

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod convert;
mod gate;
mod patch;
mod project;
mod text;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    skill_evolve._native,
    SkillEvolveError,
    PyValueError,
    "Base class of the errors this module raises: a kernel function refused its input."
);
pyo3::create_exception!(
    skill_evolve._native,
    GateError,
    SkillEvolveError,
    "The gate refused its parameters or counts."
);
pyo3::create_exception!(
    skill_evolve._native,
    PatchError,
    SkillEvolveError,
    "A malformed edit, malformed region markers, or a region text over its limit."
);
pyo3::create_exception!(
    skill_evolve._native,
    JsonError,
    SkillEvolveError,
    "No JSON object could be read from an LLM reply."
);
pyo3::create_exception!(
    skill_evolve._native,
    BudgetError,
    SkillEvolveError,
    "An edit budget schedule that grows (start below end)."
);
pyo3::create_exception!(
    skill_evolve._native,
    MetricsError,
    SkillEvolveError,
    "An unusable prediction, trace or profile given to the rule metrics."
);

pyo3::create_exception!(
    skill_evolve._native,
    InputError,
    SkillEvolveError,
    "A problem with the user's input (a file, a configuration, an option); nothing was written."
);

/// The module `skill_evolve._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    for (name, class) in [
        ("SkillEvolveError", py.get_type::<SkillEvolveError>()),
        ("GateError", py.get_type::<GateError>()),
        ("PatchError", py.get_type::<PatchError>()),
        ("JsonError", py.get_type::<JsonError>()),
        ("BudgetError", py.get_type::<BudgetError>()),
        ("MetricsError", py.get_type::<MetricsError>()),
        ("InputError", py.get_type::<InputError>()),
    ] {
        m.add(name, class)?;
    }

    m.add_class::<gate::Gate>()?;
    m.add_class::<gate::GateVerdict>()?;
    m.add("PRESET_NAMES", evolution_gate::PRESET_NAMES.to_vec())?;
    m.add_function(wrap_pyfunction!(gate::e_value, m)?)?;
    m.add_function(wrap_pyfunction!(gate::ln_e_value, m)?)?;
    m.add_function(wrap_pyfunction!(gate::wald_lambda, m)?)?;

    m.add("APPENDIX_START", evolution_patch::APPENDIX_START)?;
    m.add("APPENDIX_END", evolution_patch::APPENDIX_END)?;
    m.add("APPENDIX_HEADING", evolution_patch::APPENDIX_HEADING)?;
    m.add("APPENDIX_MAX_CHARS", evolution_patch::APPENDIX_MAX_CHARS)?;
    m.add("SLOW_UPDATE_START", evolution_patch::SLOW_UPDATE_START)?;
    m.add("SLOW_UPDATE_END", evolution_patch::SLOW_UPDATE_END)?;
    m.add("SLOW_UPDATE_HEADING", evolution_patch::SLOW_UPDATE_HEADING)?;
    m.add(
        "SLOW_UPDATE_MAX_CHARS",
        evolution_patch::SLOW_UPDATE_MAX_CHARS,
    )?;
    m.add_function(wrap_pyfunction!(patch::apply_patch_with_report, m)?)?;
    m.add_function(wrap_pyfunction!(patch::normalize_edits, m)?)?;
    m.add_function(wrap_pyfunction!(patch::append_to_appendix, m)?)?;
    m.add_function(wrap_pyfunction!(patch::extract_appendix_notes, m)?)?;
    m.add_function(wrap_pyfunction!(patch::replace_appendix_notes, m)?)?;
    m.add_function(wrap_pyfunction!(patch::replace_slow_update, m)?)?;
    m.add_function(wrap_pyfunction!(patch::slow_update_inner, m)?)?;
    m.add_function(wrap_pyfunction!(patch::appendix_region_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(patch::slow_update_region_bounds, m)?)?;

    m.add_function(wrap_pyfunction!(text::extract_json_from_response, m)?)?;
    m.add_function(wrap_pyfunction!(text::parse_json_object, m)?)?;
    m.add_function(wrap_pyfunction!(text::parse_llm_json, m)?)?;
    m.add_function(wrap_pyfunction!(text::strip_think_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(text::extract_rule_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(text::calc_format_compliance, m)?)?;
    m.add_function(wrap_pyfunction!(text::calc_budget_usage, m)?)?;
    m.add_function(wrap_pyfunction!(text::calc_confidence_calibration, m)?)?;
    m.add_function(wrap_pyfunction!(text::calc_repeat_visit_rate, m)?)?;
    m.add_function(wrap_pyfunction!(text::calc_search_keyword_repetition, m)?)?;
    m.add_function(wrap_pyfunction!(text::calc_tool_usage, m)?)?;
    m.add_function(wrap_pyfunction!(text::extract_last_confidence, m)?)?;
    m.add_function(wrap_pyfunction!(text::edit_budget_at, m)?)?;

    m.add_function(wrap_pyfunction!(project::run, m)?)?;
    m.add_function(wrap_pyfunction!(project::status, m)?)?;
    m.add_function(wrap_pyfunction!(project::adopt, m)?)?;
    m.add_function(wrap_pyfunction!(project::harvest, m)?)?;
    Ok(())
}
