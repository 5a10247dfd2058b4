"""skill-evolve for Python: evolve agent skills from evidence, without regressions.

The wheel puts the ``skill-evolve`` command on PATH and provides this package.
Its native part (``skill_evolve._native``, compiled from the Rust kernel) holds
the pieces a Python harness uses directly:

- the gate: ``Gate(preset="seed")`` or ``Gate(e_confirm=..., ...)``, then
  ``gate.decide(w, l, n_used, n_remaining)``, ``gate.probation(w, l)`` and
  ``gate.e_value(w, l)``;
- the patch engine: ``apply_patch_with_report(document, edits,
  protected_spans)`` on SkillOpt's edit dicts, and the appendix and
  slow-update region helpers;
- JSON extraction from LLM replies (``extract_json_from_response``,
  ``parse_json_object``, ``parse_llm_json``);
- the rule metrics (``extract_rule_metrics`` and the ``calc_*`` functions) and
  ``edit_budget_at``.

The project operations the ``skill-evolve`` command runs, in process and through the
same library: ``run(config, on_event)`` (the loop, with a callback of its events),
``status(project)``, ``adopt(run, confirm=...)`` (the diff first; writing needs
``confirm=True``) and ``harvest(source, ...)``. A problem with the user's input raises
``InputError`` (nothing written); a failure while working raises ``RuntimeError``.

The agent helper ``serve(answer)`` (and ``serve_async``) turns a function
``answer(question, skills)`` into an agent that ``skill-evolve run`` can drive.

Errors are ``ValueError`` subclasses under ``SkillEvolveError`` carrying the
kernel's one-line message.

The native names load on first use, so the pure-Python subpackages (such as
``skill_evolve.ray``) also work from a source checkout without a build.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, List

if TYPE_CHECKING:
    from .agent import serve, serve_async
    from ._native import (
        APPENDIX_END,
        APPENDIX_HEADING,
        APPENDIX_MAX_CHARS,
        APPENDIX_START,
        PRESET_NAMES,
        SLOW_UPDATE_END,
        SLOW_UPDATE_HEADING,
        SLOW_UPDATE_MAX_CHARS,
        SLOW_UPDATE_START,
        BudgetError,
        Gate,
        GateError,
        GateVerdict,
        InputError,
        JsonError,
        MetricsError,
        PatchError,
        SkillEvolveError,
        adopt,
        append_to_appendix,
        appendix_region_bounds,
        apply_patch_with_report,
        calc_budget_usage,
        calc_confidence_calibration,
        calc_format_compliance,
        calc_repeat_visit_rate,
        calc_search_keyword_repetition,
        calc_tool_usage,
        e_value,
        edit_budget_at,
        extract_appendix_notes,
        extract_json_from_response,
        extract_last_confidence,
        extract_rule_metrics,
        harvest,
        ln_e_value,
        normalize_edits,
        parse_json_object,
        parse_llm_json,
        replace_appendix_notes,
        replace_slow_update,
        run,
        slow_update_inner,
        slow_update_region_bounds,
        status,
        strip_think_blocks,
        wald_lambda,
    )

#: The names this package takes from its native module.
_NATIVE = (
    "APPENDIX_END",
    "APPENDIX_HEADING",
    "APPENDIX_MAX_CHARS",
    "APPENDIX_START",
    "PRESET_NAMES",
    "SLOW_UPDATE_END",
    "SLOW_UPDATE_HEADING",
    "SLOW_UPDATE_MAX_CHARS",
    "SLOW_UPDATE_START",
    "BudgetError",
    "Gate",
    "GateError",
    "GateVerdict",
    "InputError",
    "JsonError",
    "MetricsError",
    "PatchError",
    "SkillEvolveError",
    "adopt",
    "append_to_appendix",
    "appendix_region_bounds",
    "apply_patch_with_report",
    "calc_budget_usage",
    "calc_confidence_calibration",
    "calc_format_compliance",
    "calc_repeat_visit_rate",
    "calc_search_keyword_repetition",
    "calc_tool_usage",
    "e_value",
    "edit_budget_at",
    "extract_appendix_notes",
    "extract_json_from_response",
    "extract_last_confidence",
    "extract_rule_metrics",
    "harvest",
    "ln_e_value",
    "normalize_edits",
    "parse_json_object",
    "parse_llm_json",
    "replace_appendix_notes",
    "replace_slow_update",
    "run",
    "slow_update_inner",
    "slow_update_region_bounds",
    "status",
    "strip_think_blocks",
    "wald_lambda",
)

#: The names of the agent helper (``skill_evolve.agent``). They load on first access too:
#: importing the submodule here would make ``python -m skill_evolve.agent`` run a second
#: copy of a module already imported (and Python warns about it).
_AGENT = ("serve", "serve_async")

__all__: List[str] = ["__version__", *_AGENT, *_NATIVE]


def __getattr__(name: str) -> Any:
    """Loads a native name (or ``__version__``, or an agent helper) on first access."""
    if name in _AGENT:
        value = getattr(importlib.import_module(".agent", __name__), name)
        globals()[name] = value
        return value
    if name in _NATIVE or name == "__version__":
        native = importlib.import_module("._native", __name__)
        value = getattr(native, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))
