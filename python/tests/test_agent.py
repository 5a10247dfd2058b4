"""The Python helper (``skill_evolve.agent``) driven with in-memory streams.

Every test feeds request lines to ``serve`` or ``serve_async`` (most run
with both) and reads back the protocol lines they write: the messages of
``docs/agent-protocol.md``, the skill documents handed in, what happens to
malformed returns, exceptions and oversized answers, and the end of input.
The last tests start ``python -m skill_evolve.agent`` as ``run`` would.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import pytest

# The installed package, or this source tree's when none is installed (see conftest.py).
from skill_evolve import agent
from skill_evolve.agent import MAX_LINE_BYTES, MAX_OUTPUT_BYTES, MAX_STEPS, serve, serve_async

PYTHON_ROOT = Path(__file__).resolve().parent.parent

MIB = 1024 * 1024


def request(question_id: str = "q1", skills_dir: str = "", **question: Any) -> Dict[str, Any]:
    """A request as ``run`` sends it."""
    return {
        "type": "question",
        "run_id": "demo_gate_p1_v000001",
        "workspace": {"version": "v000001", "dir": "/nowhere", "skills_dir": skills_dir, "prompts_dir": ""},
        "question": {"question_id": question_id, "task_type": "qa", **question},
    }


Line = Union[bytes, Dict[str, Any]]


def drive(
    answer: Callable[..., Any], lines: List[Line], mode: str = "sync"
) -> Tuple[List[Dict[str, Any]], str, int]:
    """Serves ``lines`` with ``answer``; returns the lines written, the error text and the exit code."""
    raw = b"".join(line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines)
    stdin, stdout, stderr = io.BytesIO(raw), io.BytesIO(), io.StringIO()
    if mode == "sync":
        code = serve(answer, stdin=stdin, stdout=stdout, stderr=stderr)
    else:
        code = asyncio.run(serve_async(answer, stdin=stdin, stdout=stdout, stderr=stderr))
    written = stdout.getvalue().decode("utf-8")
    assert written == "" or written.endswith("\n")
    return [json.loads(line) for line in written.splitlines()], stderr.getvalue(), code


def as_async(answer: Callable[..., Any]) -> Callable[..., Any]:
    """``answer`` as an ``async def``."""

    async def wrapped(question: Dict[str, Any], skills: Dict[str, str]) -> Any:
        await asyncio.sleep(0)
        return answer(question, skills)

    return wrapped


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[..., Tuple[List[Dict[str, Any]], str, int]]:
    """``drive`` through ``serve`` or through ``serve_async`` with an async function."""
    mode = request.param

    def go(answer: Callable[..., Any], lines: List[Line]) -> Tuple[List[Dict[str, Any]], str, int]:
        return drive(answer if mode == "sync" else as_async(answer), lines, mode)

    return go


def is_failure(line: Dict[str, Any], question_id: Optional[str], needle: str) -> None:
    """Asserts that ``line`` is a result ``run`` counts as INFRA, with ``needle`` in its error."""
    assert line["type"] == "result", line
    assert line.get("question_id") == question_id, line
    assert line["stop_reason"] == "error", line
    assert needle in line["error"], line
    assert "prediction" not in line


def good(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    return {"prediction": "yes", "confidence": 0.75}


# --- the messages -------------------------------------------------------------


def test_a_question_is_answered_with_its_steps_then_one_result(run: Callable[..., Any]) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        return {
            "prediction": "42",
            "confidence": 0.5,
            "correct": True,
            "steps_used": 2,
            "max_steps": 5,
            "stop_reason": "",
            "note": {"kept": True},
            "steps": [
                {"tool_name": "search", "tool_input": {"q": question["question"]}, "tool_output": "found",
                 "thought": "look it up", "raw_content": "call search", "step": 1, "extra": [1]},
                {"tool_name": "submit", "tool_output": "42"},
            ],
        }

    lines, _, code = run(answer, [request("qa-03", question="What?")])
    assert code == 0
    assert lines == [
        {"type": "step", "question_id": "qa-03", "tool_name": "search", "tool_input": {"q": "What?"},
         "tool_output": "found", "thought": "look it up", "raw_content": "call search", "step": 1, "extra": [1]},
        {"type": "step", "question_id": "qa-03", "tool_name": "submit", "tool_output": "42"},
        {"type": "result", "question_id": "qa-03", "prediction": "42", "answer_confidence": 0.5, "correct": True,
         "steps_used": 2, "max_steps": 5, "stop_reason": "", "note": {"kept": True}},
    ]


def test_the_function_gets_the_question_as_sent_and_cannot_redirect_its_lines(run: Callable[..., Any]) -> None:
    seen: List[Dict[str, Any]] = []

    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        seen.append(question)
        return {"prediction": "x", "answer_confidence": 1, "type": "step", "question_id": "other",
                "steps": [{"type": "result", "question_id": "other"}]}

    lines, _, _ = run(answer, [request("q7", difficulty="hard", context={"a": 1})])
    assert seen == [{"question_id": "q7", "task_type": "qa", "difficulty": "hard", "context": {"a": 1}}]
    assert [(line["type"], line["question_id"]) for line in lines] == [("step", "q7"), ("result", "q7")]
    assert lines[1]["answer_confidence"] == 1


def test_an_error_the_function_reports_is_passed_on_as_its_own(run: Callable[..., Any]) -> None:
    lines, _, _ = run(lambda q, s: {"error": "the video is gone", "stop_reason": "error"}, [request()])
    is_failure(lines[0], "q1", "the video is gone")


def test_a_worker_answers_requests_in_order_until_the_input_ends(run: Callable[..., Any]) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        return {"prediction": question["question_id"].upper()}

    ids = [f"q{i}" for i in range(5)]
    lines, _, code = run(answer, [request(i) for i in ids])
    assert code == 0
    assert [(line["question_id"], line["prediction"]) for line in lines] == [(i, i.upper()) for i in ids]


def test_a_per_question_process_gets_one_request_answers_it_and_returns(run: Callable[..., Any]) -> None:
    lines, _, code = run(good, [request("only")])
    assert code == 0
    assert lines == [{"type": "result", "question_id": "only", "prediction": "yes", "answer_confidence": 0.75}]


def test_no_input_means_no_output_and_a_clean_exit(run: Callable[..., Any]) -> None:
    assert run(good, []) == ([], "", 0)


def test_blank_lines_and_crlf_line_ends_are_tolerated(run: Callable[..., Any]) -> None:
    body = json.dumps(request("crlf")).encode()
    lines, _, _ = run(good, [b"\n", b"   \n", body + b"\r\n", request("after")])
    assert [line["question_id"] for line in lines] == ["crlf", "after"]


# --- the skill documents ------------------------------------------------------------


def test_the_skills_are_the_documents_of_the_requests_folder(tmp_path: Path, run: Callable[..., Any]) -> None:
    first, second = tmp_path / "v1", tmp_path / "v2"
    for folder, text in [(first, "RULE qa => yes"), (second, "RULE qa => no ✓")]:
        (folder / "nested").mkdir(parents=True)
        (folder / "default-strategy.md").write_text(text, encoding="utf-8")
        (folder / "nested" / "ignored.md").write_text("not a document", encoding="utf-8")
    (second / "other.md").write_text("", encoding="utf-8")
    seen: List[Dict[str, str]] = []

    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        seen.append(dict(skills))
        return {"prediction": "ok"}

    run(answer, [request("a", str(first)), request("b", str(second)), request("c", str(tmp_path / "absent"))])
    assert seen == [
        {"default-strategy.md": "RULE qa => yes"},
        {"default-strategy.md": "RULE qa => no ✓", "other.md": ""},
        {},
    ]


def test_a_document_that_is_not_utf8_fails_the_question_not_the_worker(tmp_path: Path, run: Callable[..., Any]) -> None:
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe broken")
    lines, errors, _ = run(good, [request("bad", str(tmp_path)), request("next")])
    is_failure(lines[0], "bad", "'bad.md' is not UTF-8")
    assert "not UTF-8" in errors
    assert lines[1]["prediction"] == "yes"


# --- requests that cannot be answered --------------------------------------------------


@pytest.mark.parametrize(
    "line, needle",
    [
        (b"not json\n", "not JSON"),
        (b"\xff\xfe\n", "not UTF-8"),
        (b"[1, 2]\n", "not a question message"),
        (json.dumps({"type": "shutdown"}).encode() + b"\n", "not a question message"),
        (json.dumps({"type": "question", "question": {"question_id": "q"}}).encode() + b"\n", "lacks its"),
        (json.dumps({"type": "question", "workspace": {}, "question": {"question_id": 3}}).encode() + b"\n",
         "no question_id"),
    ],
)
def test_a_request_that_cannot_be_read_is_a_failure_and_the_next_one_is_answered(
    line: bytes, needle: str, run: Callable[..., Any]
) -> None:
    lines, errors, code = run(good, [line, request("next")])
    assert code == 0
    is_failure(lines[0], None, needle)
    assert needle in errors
    assert lines[1] == {"type": "result", "question_id": "next", "prediction": "yes", "answer_confidence": 0.75}


def test_a_request_line_past_the_limit_is_skipped_whole(run: Callable[..., Any]) -> None:
    huge = b'{"type": "question", "pad": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n'
    lines, _, _ = run(good, [huge, request("next")])
    is_failure(lines[0], None, f"longer than {MAX_LINE_BYTES} bytes")
    assert lines[1]["question_id"] == "next"
    assert len(lines) == 2


# --- malformed returns and exceptions -------------------------------------------------


MALFORMED: List[Tuple[Any, str]] = [
    (None, "returned NoneType, not a dict"),
    ("yes", "returned str, not a dict"),
    ([{"prediction": "yes"}], "returned list, not a dict"),
    ({}, "no prediction"),
    ({"confidence": 0.5}, "no prediction"),
    ({"prediction": 3}, "prediction must be a string, not int 3"),
    ({"prediction": None}, "prediction must be a string, not NoneType"),
    ({"prediction": "y", "confidence": 1.5}, "confidence must lie in [0, 1]"),
    ({"prediction": "y", "confidence": "high"}, "answer_confidence must be a number, not str"),
    ({"prediction": "y", "confidence": True}, "answer_confidence must be a number, not bool"),
    ({"prediction": "y", "confidence": float("nan")}, "answer_confidence must be a number"),
    ({"prediction": "y", "confidence": 0.1, "answer_confidence": 0.2}, "both confidence and answer_confidence"),
    ({"prediction": "y", "correct": "yes"}, "correct must be true or false"),
    ({"prediction": "y", "steps_used": -1}, "steps_used must be a non-negative integer"),
    ({"prediction": "y", "max_steps": 2.5}, "max_steps must be a non-negative integer"),
    ({"prediction": "y", "stop_reason": 0}, "stop_reason must be a string"),
    ({"prediction": "y", "error": ["x"]}, "error must be a string"),
    ({"prediction": "y", "steps": "read it"}, "steps must be a list of dicts, not str"),
    ({"prediction": "y", "steps": [{"tool_name": "a"}, "b"]}, "step 2 is str, not a dict"),
    ({"prediction": "y", "steps": [{"tool_name": 5}]}, "step 1: tool_name must be a string, not int"),
    ({"prediction": "y", "steps": [{"tool_output": {"a": 1}}]}, "step 1: tool_output must be a string"),
    ({"prediction": "y", "steps": [{"step": "one"}]}, "step 1: step must be a non-negative integer"),
    ({"prediction": "y", "steps": [{1: "x"}]}, "step 1 has a key 1 that is not a string"),
    ({"prediction": "y", 2: "x"}, "has a key 2 that is not a string"),
    ({"prediction": "y", "extra": {1, 2}}, "the result cannot be written as JSON"),
    ({"prediction": "y", "extra": float("inf")}, "the result cannot be written as JSON"),
    ({"prediction": "\ud800"}, "the result cannot be written as JSON"),
    ({"prediction": "y", "steps": [{"tool_input": object()}]}, "step 1 cannot be written as JSON"),
]


@pytest.mark.parametrize("returned, needle", MALFORMED, ids=[needle for _, needle in MALFORMED])
def test_a_malformed_return_is_an_infrastructure_failure_and_the_worker_goes_on(
    returned: Any, needle: str, run: Callable[..., Any]
) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Any:
        return returned if question["question_id"] == "bad" else good(question, skills)

    lines, errors, code = run(answer, [request("bad"), request("next")])
    assert code == 0
    assert len(lines) == 2, lines
    is_failure(lines[0], "bad", needle)
    assert needle in errors
    assert lines[1]["prediction"] == "yes"


def test_an_exception_is_reported_with_its_type_and_its_traceback_goes_to_stderr(run: Callable[..., Any]) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        if question["question_id"] == "bad":
            raise KeyError("no such tool")
        return good(question, skills)

    lines, errors, _ = run(answer, [request("bad"), request("next")])
    is_failure(lines[0], "bad", "the answer function raised KeyError: 'no such tool'")
    assert "Traceback (most recent call last)" in errors
    assert "raise KeyError" in errors
    assert lines[1]["prediction"] == "yes"


def test_an_error_message_is_cut_to_a_readable_length(run: Callable[..., Any]) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        raise RuntimeError("e" * 100_000)

    lines, _, _ = run(answer, [request()])
    error = lines[0]["error"]
    assert len(error) < agent.MAX_ERROR_CHARS + 50
    assert error.endswith("more chars]")


def test_interrupts_are_not_swallowed(run: Callable[..., Any]) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(answer, [request()])


# --- size limits ---------------------------------------------------------------------


def test_an_answer_past_the_protocols_limits_is_replaced_by_a_failure(run: Callable[..., Any]) -> None:
    big = "x" * (MAX_LINE_BYTES + 1)
    third = "y" * (MAX_OUTPUT_BYTES // 3)
    cases = {
        "line": {"prediction": "y", "steps": [{"tool_output": big}]},
        "total": {"prediction": "y", "steps": [{"tool_output": third}] * 3 + [{"tool_output": "z"}]},
        "steps": {"prediction": "y", "steps": [{"tool_name": "t"}] * (MAX_STEPS + 1)},
        "result": {"prediction": big},
    }

    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        return cases.get(question["question_id"]) or good(question, skills)

    lines, _, _ = run(answer, [request(i) for i in cases] + [request("next")])
    assert len(lines) == len(cases) + 1
    is_failure(lines[0], "line", f"more than the {MAX_LINE_BYTES} allowed")
    is_failure(lines[1], "total", f"more than the {MAX_OUTPUT_BYTES} allowed per question")
    is_failure(lines[2], "steps", f"{MAX_STEPS + 1} steps, more than the {MAX_STEPS} allowed")
    is_failure(lines[3], "result", f"more than the {MAX_LINE_BYTES} allowed")
    assert lines[4]["prediction"] == "yes"


def test_an_answer_just_inside_the_limits_is_written(run: Callable[..., Any]) -> None:
    steps = [{"tool_name": "t"}] * MAX_STEPS

    lines, _, _ = run(lambda q, s: {"prediction": "y", "steps": steps}, [request()])
    assert len(lines) == MAX_STEPS + 1
    assert lines[-1]["type"] == "result"


# --- streams and shutdown ----------------------------------------------------------------


def test_print_inside_the_function_goes_to_stderr_not_the_protocol(run: Callable[..., Any]) -> None:
    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        print("thinking out loud")
        return good(question, skills)

    lines, errors, _ = run(answer, [request()])
    assert [line["type"] for line in lines] == ["result"]
    assert "thinking out loud" in errors


class ClosedPipe(io.BytesIO):
    """An output stream whose reader has gone."""

    def write(self, data: Any) -> int:
        raise BrokenPipeError("reader gone")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_closed_output_ends_serving_quietly(mode: str) -> None:
    stdin = io.BytesIO(json.dumps(request()).encode() + b"\n")
    calls: List[str] = []

    def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        calls.append(question["question_id"])
        return good(question, skills)

    if mode == "sync":
        code = serve(answer, stdin=stdin, stdout=ClosedPipe(), stderr=io.StringIO())
    else:
        code = asyncio.run(serve_async(answer, stdin=stdin, stdout=ClosedPipe(), stderr=io.StringIO()))
    assert code == 0
    assert calls == ["q1"]


def test_serve_refuses_an_async_function_and_names_serve_async() -> None:
    async def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
        return {"prediction": "y"}

    with pytest.raises(TypeError, match="serve_async"):
        serve(answer, stdin=io.BytesIO(), stdout=io.BytesIO(), stderr=io.StringIO())


def test_an_awaitable_returned_to_serve_is_a_failure_naming_serve_async() -> None:
    async def later() -> Dict[str, Any]:
        return {"prediction": "y"}

    lines, _, _ = drive(lambda q, s: later(), [request()])
    is_failure(lines[0], "q1", "serve it with serve_async")


def test_serve_async_also_serves_a_plain_function_and_keeps_the_loop_running() -> None:
    ticks: List[int] = []

    async def main() -> int:
        async def ticker() -> None:
            while True:
                ticks.append(1)
                await asyncio.sleep(0.001)

        task = asyncio.ensure_future(ticker())

        class SlowInput(io.BytesIO):
            def readline(self, size: int = -1) -> bytes:
                import time

                time.sleep(0.05)
                return super().readline(size)

        stdin = SlowInput(json.dumps(request()).encode() + b"\n")
        stdout = io.BytesIO()
        code = await serve_async(good, stdin=stdin, stdout=stdout, stderr=io.StringIO())
        task.cancel()
        assert json.loads(stdout.getvalue())["prediction"] == "yes"
        return code

    assert asyncio.run(main()) == 0
    # The ticker ran while the request was being read on another thread.
    assert len(ticks) > 3


# --- python -m skill_evolve.agent ----------------------------------------------------------


def start(args: List[str], cwd: Path, stdin: bytes, module: bool = True) -> subprocess.CompletedProcess:
    """Runs ``python -m skill_evolve.agent ARGS`` (or ``python ARGS``) with this process's
    package (conftest.py puts the source tree on ``PYTHONPATH`` when none is installed)."""
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, *(["-m", "skill_evolve.agent"] if module else []), *args],
        cwd=cwd, input=stdin, capture_output=True, env=env, timeout=60,
    )


AGENT_MODULE = textwrap.dedent(
    """
    import asyncio, os, subprocess, sys

    def answer(question, skills):
        print("to stderr")
        subprocess.run([sys.executable, "-c", "print('child output')"], check=True)
        os.write(1, b"raw write\\n")
        return {"prediction": ",".join(sorted(skills)), "confidence": 1.0}

    async def answer_async(question, skills):
        await asyncio.sleep(0)
        return {"prediction": "async " + question["question_id"]}

    not_callable = 3
    """
)


@pytest.mark.parametrize("spec", ["my_agent:answer", "my_agent.py:answer"])
def test_the_module_runs_a_named_function_and_keeps_stdout_for_the_protocol(tmp_path: Path, spec: str) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT_MODULE, encoding="utf-8")
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "s.md").write_text("RULE", encoding="utf-8")
    body = (json.dumps(request("q1", str(tmp_path / "skills"))) + "\n").encode()
    done = start([spec], tmp_path, body * 2)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert lines == [{"type": "result", "question_id": "q1", "prediction": "s.md", "answer_confidence": 1.0}] * 2
    errors = done.stderr.decode()
    for noise in ["to stderr", "child output", "raw write"]:
        assert errors.count(noise) == 2, errors


def test_the_module_serves_an_async_function(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT_MODULE, encoding="utf-8")
    done = start(["my_agent:answer_async"], tmp_path, (json.dumps(request("a1")) + "\n").encode())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"type": "result", "question_id": "a1", "prediction": "async a1"}


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "usage: python -m skill_evolve.agent"),
        (["my_agent"], "does not name a function"),
        (["no_such_module:answer"], "cannot import 'no_such_module'"),
        (["missing.py:answer"], "no Python file 'missing.py'"),
        (["my_agent:absent"], "'my_agent' has no 'absent'"),
        (["my_agent:not_callable"], "is not a function"),
    ],
)
def test_the_module_says_in_one_line_what_it_cannot_serve(tmp_path: Path, args: List[str], needle: str) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT_MODULE, encoding="utf-8")
    done = start(args, tmp_path, b"")
    assert done.returncode == 2
    assert done.stdout == b""
    assert needle in done.stderr.decode()
    if args:
        assert len(done.stderr.decode().strip().splitlines()) == 1


# --- the page's example ----------------------------------------------------------------------


def test_the_example_on_the_protocol_page_runs_as_shown(tmp_path: Path) -> None:
    import re
    import shlex

    page = (PYTHON_ROOT.parent / "docs/agent-protocol.md").read_text(encoding="utf-8")
    section = page.split("## The Python helper", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    command = re.search(r"Try it by hand: `(.*?)`", section)
    assert code and command, section
    (tmp_path / "agent.py").write_text(code.group(1), encoding="utf-8")
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "default.md").write_text("# Rules\nRULE qa => yes\n", encoding="utf-8")
    echo, pipe = command.group(1).split(" | ")
    assert shlex.split(pipe) == ["python3", "agent.py"]
    done = start(["agent.py"], tmp_path, shlex.split(echo)[1].encode() + b"\n", module=False)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [line["type"] for line in lines] == ["step", "result"]
    assert lines[1] == {"type": "result", "question_id": "q1", "prediction": "yes", "answer_confidence": 0.9}
