"""Write an agent for ``skill-evolve run`` as one Python function.

``skill-evolve run`` talks to an agent over stdin and stdout, one JSON object
per line (``docs/agent-protocol.md``). This module speaks that protocol for
you: write a function that answers one question with the current version's
skill documents, hand it to :func:`serve`, and the process becomes an agent
that works in both of ``run``'s modes (a long-lived worker or a fresh process
per question: either way it answers requests until its input ends)::

    from skill_evolve.agent import serve

    def answer(question, skills):
        # question: the request's question object (never the reference answer)
        # skills:   file name -> text of every skill document of this version
        return {"prediction": "yes", "confidence": 0.8,
                "steps": [{"tool_name": "lookup", "tool_output": "found it"}]}

    if __name__ == "__main__":
        serve(answer)

An ``async def answer`` runs with ``asyncio.run(serve_async(answer))``, and
``python -m skill_evolve.agent module:function`` (or ``path/to/file.py:function``)
serves a function without a ``__main__`` block.

What the function returns is checked before anything is written: a return
that is not a dict, a field of the wrong type, a value JSON cannot hold, an
exception, or an answer larger than the protocol allows becomes a result line
that ``run`` counts as an infrastructure failure (``stop_reason`` ``"error"``
with an ``error`` that says what was wrong), never a wrong answer and never a
crashed worker. The traceback goes to stderr, whose tail ``run`` quotes.

While serving, stdout belongs to the protocol: ``print`` (and, when
:func:`serve` owns the process's stdout, anything the function's child
processes write to it) goes to stderr instead.

Standard library only; Python 3.9 or newer.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import IO, Any, Awaitable, Callable, Dict, Iterator, List, Optional, Tuple, Union

__all__ = [
    "Answer",
    "AsyncAnswer",
    "MAX_LINE_BYTES",
    "MAX_OUTPUT_BYTES",
    "MAX_STEPS",
    "MAX_DOCUMENT_BYTES",
    "MalformedAnswer",
    "load_function",
    "main",
    "read_skills",
    "serve",
    "serve_async",
]

#: The longest line either side may write (the protocol's limit, in bytes).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The most bytes one question's answer may take (``run``'s default ``[agent] max_output_bytes``).
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
#: The most trace steps one question may have (``run``'s default ``[agent] max_steps``).
MAX_STEPS = 1000
#: The largest skill document handed to the function.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
#: The longest error message put into a result line, in characters.
MAX_ERROR_CHARS = 2000

#: A function that answers one question: ``answer(question, skills) -> dict``.
Answer = Callable[[Dict[str, Any], Dict[str, str]], Dict[str, Any]]
#: The same as an ``async def``.
AsyncAnswer = Callable[[Dict[str, Any], Dict[str, str]], Awaitable[Dict[str, Any]]]

# The documented fields of a returned answer and of a step, with the JSON
# types they must have (``int`` fields are non-negative where ``run`` reads
# them as counts).
_STRING = "a string"
_NUMBER = "a number"
_COUNT = "a non-negative integer"
_BOOL = "true or false"
_RESULT_FIELDS = {
    "prediction": _STRING,
    "correct": _BOOL,
    "answer_confidence": _NUMBER,
    "steps_used": _COUNT,
    "max_steps": _COUNT,
    "stop_reason": _STRING,
    "error": _STRING,
}
_STEP_FIELDS = {
    "step": _COUNT,
    "tool_name": _STRING,
    "tool_output": _STRING,
    "thought": _STRING,
    "raw_content": _STRING,
}


class MalformedAnswer(ValueError):
    """What the answer function returned cannot be sent (the message says why)."""


@dataclass
class _Request:
    """One request, with the skill documents it points at read into memory."""

    question_id: str
    question: Dict[str, Any]
    skills: Dict[str, str] = field(default_factory=dict)


class _Refused(Exception):
    """A request that cannot be answered; ``question_id`` is ``""`` when unknown."""

    def __init__(self, question_id: str, message: str) -> None:
        super().__init__(message)
        self.question_id = question_id


def read_skills(folder: str) -> Dict[str, str]:
    """Every regular file of ``folder`` as file name -> UTF-8 text (``{}`` for no folder).

    Raises ``OSError`` or ``ValueError`` for a document that is unreadable,
    larger than :data:`MAX_DOCUMENT_BYTES` or not UTF-8: a document is never
    handed over cut or garbled.
    """
    if not folder or not os.path.isdir(folder):
        return {}
    documents: Dict[str, str] = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise ValueError(f"skill document {name!r} is larger than {MAX_DOCUMENT_BYTES} bytes")
        try:
            documents[name] = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"skill document {name!r} is not UTF-8 ({error})") from error
    return documents


def _parse_request(raw: bytes) -> _Request:
    """The request on one input line; ``_Refused`` when it cannot be answered."""
    try:
        message = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _Refused("", "the request line is not UTF-8") from None
    except ValueError as error:
        raise _Refused("", f"the request line is not JSON ({error})") from None
    if not isinstance(message, dict) or message.get("type") != "question":
        raise _Refused("", "the request is not a question message")
    question = message.get("question")
    workspace = message.get("workspace")
    if not isinstance(question, dict) or not isinstance(workspace, dict):
        raise _Refused("", "the request lacks its question or workspace object")
    question_id = question.get("question_id")
    if not isinstance(question_id, str):
        raise _Refused("", "the question has no question_id string")
    skills_dir = workspace.get("skills_dir", "")
    try:
        skills = read_skills(skills_dir if isinstance(skills_dir, str) else "")
    except (OSError, ValueError) as error:
        raise _Refused(question_id, f"cannot read the skill documents: {error}") from None
    return _Request(question_id=question_id, question=question, skills=skills)


def _cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more chars]"


def _failure(question_id: str, message: str) -> List[Dict[str, Any]]:
    """A result line that ``run`` counts as an infrastructure failure."""
    line: Dict[str, Any] = {"type": "result"}
    if question_id:
        line["question_id"] = question_id
    line["stop_reason"] = "error"
    line["error"] = _cut(message)
    return [line]


def _type_problem(value: Any, expected: str) -> bool:
    """Whether ``value`` is not of the documented JSON type ``expected``."""
    if expected == _STRING:
        return not isinstance(value, str)
    if expected == _BOOL:
        return not isinstance(value, bool)
    if expected == _COUNT:
        return isinstance(value, bool) or not isinstance(value, int) or value < 0
    # A number: bool is an int in Python but not a number in JSON.
    return isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)


def _kind(value: Any) -> str:
    """A short name of ``value``'s type for messages."""
    return type(value).__name__


def _check_fields(fields: Dict[str, Any], documented: Dict[str, str], at: str) -> None:
    """Raises ``MalformedAnswer`` when a documented field of ``fields`` has the wrong type."""
    for key in fields:
        if not isinstance(key, str):
            raise MalformedAnswer(f"{at} has a key {key!r} that is not a string")
    for name, expected in documented.items():
        if name in fields and _type_problem(fields[name], expected):
            raise MalformedAnswer(
                f"{at}: {name} must be {expected}, not {_kind(fields[name])} {_cut(repr(fields[name]), 80)}"
            )


def _answer_lines(question_id: str, returned: Any) -> List[Dict[str, Any]]:
    """The step lines and the result line for what the function returned.

    Raises ``MalformedAnswer`` when the return is not the documented dict.
    """
    if inspect.isawaitable(returned):
        if inspect.iscoroutine(returned):
            returned.close()
        raise MalformedAnswer("the answer function returned an awaitable: serve it with serve_async")
    if not isinstance(returned, dict):
        raise MalformedAnswer(f"the answer function returned {_kind(returned)}, not a dict")
    fields = dict(returned)
    for reserved in ("type", "question_id"):
        fields.pop(reserved, None)
    if "confidence" in fields:
        if "answer_confidence" in fields:
            raise MalformedAnswer("the answer has both confidence and answer_confidence")
        fields["answer_confidence"] = fields.pop("confidence")
    if "prediction" not in fields and "error" not in fields:
        raise MalformedAnswer("the answer has no prediction (a string) and no error")
    _check_fields(fields, _RESULT_FIELDS, "the answer")
    confidence = fields.get("answer_confidence")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise MalformedAnswer(f"the answer: confidence must lie in [0, 1], not {confidence!r}")
    steps = fields.pop("steps", None)
    if steps is None:
        steps = []
    if not isinstance(steps, (list, tuple)):
        raise MalformedAnswer(f"the answer: steps must be a list of dicts, not {_kind(steps)}")
    if len(steps) > MAX_STEPS:
        raise MalformedAnswer(f"the answer has {len(steps)} steps, more than the {MAX_STEPS} allowed")
    lines: List[Dict[str, Any]] = []
    for index, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            raise MalformedAnswer(f"step {index} is {_kind(step)}, not a dict")
        _check_fields(step, _STEP_FIELDS, f"step {index}")
        line: Dict[str, Any] = {"type": "step", "question_id": question_id}
        line.update((k, v) for k, v in step.items() if k not in ("type", "question_id"))
        lines.append(line)
    result: Dict[str, Any] = {"type": "result", "question_id": question_id}
    result.update(fields)
    lines.append(result)
    return lines


def _encode(lines: List[Dict[str, Any]]) -> bytes:
    """``lines`` as JSON lines, checked against the protocol's size limits.

    Raises ``MalformedAnswer`` for a value JSON cannot hold (a set, NaN, a
    lone surrogate, …) or for output past :data:`MAX_LINE_BYTES` per line or
    :data:`MAX_OUTPUT_BYTES` in all.
    """
    encoded = []
    total = 0
    for line in lines:
        try:
            text = json.dumps(line, ensure_ascii=False, allow_nan=False)
            data = text.encode("utf-8") + b"\n"
        except (TypeError, ValueError) as error:
            # UnicodeEncodeError is a ValueError.
            what = "the result" if line.get("type") == "result" else f"step {len(encoded) + 1}"
            raise MalformedAnswer(f"{what} cannot be written as JSON: {error}") from None
        if len(data) - 1 > MAX_LINE_BYTES:
            raise MalformedAnswer(
                f"a line of the answer is {len(data) - 1} bytes, more than the {MAX_LINE_BYTES} allowed"
            )
        total += len(data)
        encoded.append(data)
    if total > MAX_OUTPUT_BYTES:
        raise MalformedAnswer(
            f"the answer is {total} bytes, more than the {MAX_OUTPUT_BYTES} allowed per question"
        )
    return b"".join(encoded)


def _read_lines(stream: IO[bytes]) -> Iterator[Tuple[Optional[bytes], str]]:
    """Each request line (without its line end) with ``""``, or ``None`` and why it is unusable."""
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            # Skip the rest of the oversized line so that the next one starts cleanly.
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(MAX_LINE_BYTES)
            yield None, f"a request line longer than {MAX_LINE_BYTES} bytes"
            continue
        line = raw.rstrip(b"\r\n")
        if line.strip():
            yield line, ""


class _Session:
    """The state ``serve`` and ``serve_async`` share: the streams and the writing."""

    def __init__(self, output: IO[bytes], errors: IO[str]) -> None:
        self.output = output
        self.errors = errors

    def write(self, lines: List[Dict[str, Any]]) -> None:
        """Writes one question's lines together and flushes them."""
        try:
            data = _encode(lines)
        except MalformedAnswer as error:
            question_id = str(lines[-1].get("question_id", "")) if lines else ""
            self.log(f"skill_evolve.agent: {error}")
            data = _encode(_failure(question_id, str(error)))
        self.output.write(data)
        self.output.flush()

    def log(self, message: str) -> None:
        """One message on the error stream (never on the protocol's)."""
        try:
            self.errors.write(message.rstrip("\n") + "\n")
            self.errors.flush()
        except (OSError, ValueError):
            pass

    def failed(self, question_id: str, error: BaseException) -> List[Dict[str, Any]]:
        """The failure lines for an exception of the answer function (traceback to stderr)."""
        if isinstance(error, MalformedAnswer):
            self.log(f"skill_evolve.agent: question {question_id!r}: {error}")
            return _failure(question_id, str(error))
        self.log(
            f"skill_evolve.agent: question {question_id!r}: the answer function raised\n"
            + "".join(traceback.format_exception(type(error), error, error.__traceback__))
        )
        return _failure(question_id, f"the answer function raised {_kind(error)}: {error}")

    def requests(self, stream: IO[bytes]) -> Iterator[Union[_Request, List[Dict[str, Any]]]]:
        """Each request, or the failure lines that answer a request that cannot be answered."""
        for raw, problem in _read_lines(stream):
            if raw is None:
                self.log(f"skill_evolve.agent: {problem}")
                yield _failure("", problem)
                continue
            try:
                yield _parse_request(raw)
            except _Refused as refused:
                self.log(f"skill_evolve.agent: {refused}")
                yield _failure(refused.question_id, str(refused))


@contextlib.contextmanager
def _protocol_streams(
    stdin: Optional[IO[bytes]], stdout: Optional[IO[bytes]], stderr: Optional[IO[str]]
) -> Iterator[Tuple[IO[bytes], IO[bytes], IO[str]]]:
    """The streams to serve on, with ``print`` kept off the protocol while serving.

    Without an explicit ``stdout`` the protocol takes over the process's file
    descriptor 1 and points descriptor 1 at stderr, so that child processes
    cannot write into the protocol either; both are restored afterwards.
    """
    errors = stderr if stderr is not None else sys.stderr
    source = stdin if stdin is not None else sys.stdin.buffer
    with contextlib.ExitStack() as stack:
        if stdout is not None:
            output = stdout
        else:
            sys.stdout.flush()
            saved = os.dup(1)
            stack.callback(os.close, saved)
            output = stack.enter_context(os.fdopen(os.dup(saved), "wb", closefd=True))
            os.dup2(2, 1)
            stack.callback(os.dup2, saved, 1)
        stack.enter_context(contextlib.redirect_stdout(errors))
        yield source, output, errors


def _refuse_coroutine_function(answer: Callable[..., Any]) -> None:
    if inspect.iscoroutinefunction(answer):
        raise TypeError("serve() needs a plain function; run an async def with asyncio.run(serve_async(answer))")


def serve(
    answer: Answer,
    *,
    stdin: Optional[IO[bytes]] = None,
    stdout: Optional[IO[bytes]] = None,
    stderr: Optional[IO[str]] = None,
) -> int:
    """Answers ``run``'s requests with ``answer`` until the input ends; returns 0.

    ``answer(question, skills)`` gets the request's question object (every
    field of its line in the question set except the reference answer) and
    the skill documents of the version under test (file name -> text), and
    returns a dict:

    - ``prediction`` (str): the answer;
    - ``confidence`` or ``answer_confidence`` (number in [0, 1]), optional;
    - ``steps`` (list of dicts), optional: the trace, each with ``tool_name``,
      ``tool_input`` (any JSON), ``tool_output``, ``thought``, ``raw_content``
      as the protocol's step message has them;
    - any other field of the protocol's result message (``correct``,
      ``steps_used``, ``max_steps``, ``stop_reason``, ``error``) or of your own
      (kept with the answer).

    ``stdin``/``stdout`` are binary streams (default: the process's);
    ``stderr`` is a text stream for messages and tracebacks (default:
    ``sys.stderr``). ``print`` goes to ``stderr`` while serving.
    """
    _refuse_coroutine_function(answer)
    with _protocol_streams(stdin, stdout, stderr) as (source, output, errors):
        session = _Session(output, errors)
        try:
            for request in session.requests(source):
                if isinstance(request, list):
                    session.write(request)
                    continue
                try:
                    lines = _answer_lines(request.question_id, answer(request.question, request.skills))
                except Exception as error:  # noqa: BLE001 - any failure of the function is reported
                    lines = session.failed(request.question_id, error)
                session.write(lines)
        except BrokenPipeError:
            # run stopped listening (it stopped this agent): nothing left to answer.
            pass
    return 0


async def serve_async(
    answer: Union[AsyncAnswer, Answer],
    *,
    stdin: Optional[IO[bytes]] = None,
    stdout: Optional[IO[bytes]] = None,
    stderr: Optional[IO[str]] = None,
) -> int:
    """Like :func:`serve`, for ``async def answer(question, skills)``; returns 0 at end of input.

    Run it with ``asyncio.run(serve_async(answer))``. Input is read on a
    worker thread, so other tasks of the event loop keep running while the
    agent waits for its next question. A plain function works too.
    """
    with _protocol_streams(stdin, stdout, stderr) as (source, output, errors):
        session = _Session(output, errors)
        requests = session.requests(source)
        done = object()
        try:
            while True:
                request = await asyncio.get_running_loop().run_in_executor(None, next, requests, done)
                if request is done:
                    break
                if not isinstance(request, _Request):
                    session.write(request)
                    continue
                try:
                    returned = answer(request.question, request.skills)
                    if inspect.isawaitable(returned):
                        returned = await returned
                    lines = _answer_lines(request.question_id, returned)
                except Exception as error:  # noqa: BLE001 - any failure of the function is reported
                    lines = session.failed(request.question_id, error)
                session.write(lines)
        except BrokenPipeError:
            pass
    return 0


def load_function(spec: str) -> Callable[..., Any]:
    """The function ``spec`` names: ``module:function`` or ``path/to/file.py:function``.

    Raises ``ValueError`` with a one-line message when it cannot be found.
    """
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"{spec!r} does not name a function: write module:function or file.py:function")
    try:
        if target.endswith(".py"):
            module_spec = importlib.util.spec_from_file_location("_served_agent", target)
            if module_spec is None or module_spec.loader is None or not os.path.isfile(target):
                raise ValueError(f"no Python file {target!r}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules["_served_agent"] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except ImportError as error:
        raise ValueError(f"cannot import {target!r}: {error}") from None
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ValueError(f"{target!r} has no {name!r}")
    if not callable(found):
        raise ValueError(f"{name!r} in {target!r} is not a function")
    return found


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m skill_evolve.agent module:function``: serves that function on stdin/stdout."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(
            "usage: python -m skill_evolve.agent module:function | file.py:function\n"
            "Answers skill-evolve run's agent protocol on stdin/stdout with that function.",
            file=sys.stderr,
        )
        return 0 if args and args[0] in ("-h", "--help") else 2
    # Like `python -m`, make modules beside the working folder importable.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        function = load_function(args[0])
    except ValueError as error:
        print(f"skill_evolve.agent: {error}", file=sys.stderr)
        return 2
    try:
        if inspect.iscoroutinefunction(function):
            return asyncio.run(serve_async(function))
        return serve(function)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
