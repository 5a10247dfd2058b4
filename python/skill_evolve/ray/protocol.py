"""The bridge's side of the agent protocol: requests in, answer lines out.

``skill-evolve run`` writes one request per line on the bridge's stdin; the
bridge answers each with zero or more ``step`` lines and one ``result`` line
on stdout (see ``docs/agent-protocol.md``). This module reads requests,
collects the documents a request points at (their contents travel to the
node, never their paths) and writes answers, one question's lines at a time.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Optional

#: The largest request line the bridge reads (the protocol's line limit).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The largest document the bridge sends to a node.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


class RequestError(ValueError):
    """A request line the bridge cannot answer (not JSON, not a question, unreadable documents)."""


@dataclass
class Question:
    """One request, with the documents it points at read into memory."""

    question_id: str
    run_id: str
    version: str
    #: The question as ``run`` sent it (never holds the reference answer).
    question: Dict[str, Any]
    #: Skill documents: file name → text.
    skills: Dict[str, str] = field(default_factory=dict)
    #: Prompt documents: file name → text.
    prompts: Dict[str, str] = field(default_factory=dict)

    def node_request(self) -> Dict[str, Any]:
        """The request a per-question agent gets on the node (its workspace is filled in there)."""
        return {
            "type": "question",
            "run_id": self.run_id,
            "workspace": {"version": self.version},
            "question": self.question,
        }


def read_documents(folder: str) -> Dict[str, str]:
    """Every regular file of ``folder`` as name → UTF-8 text (an absent folder is empty).

    Raises ``RequestError`` for an unreadable, oversized or non-UTF-8 file:
    a document is never sent cut or garbled.
    """
    if not folder or not os.path.isdir(folder):
        return {}
    documents = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        try:
            if os.path.getsize(path) > MAX_DOCUMENT_BYTES:
                raise RequestError(f"document {name!r} is larger than {MAX_DOCUMENT_BYTES} bytes")
            with open(path, encoding="utf-8") as handle:
                documents[name] = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            raise RequestError(f"cannot read document {name!r}: {error}") from error
    return documents


def question_id_of(line: str) -> str:
    """The question id of a request line, or ``""`` when it has none that can be read."""
    try:
        message = json.loads(line)
        return str(message["question"]["question_id"])
    except (ValueError, KeyError, TypeError):
        return ""


def parse_request(line: str) -> Question:
    """The question a request line asks, with its documents read; ``RequestError`` otherwise."""
    try:
        message = json.loads(line)
    except ValueError as error:
        raise RequestError(f"request is not JSON: {error}") from error
    if not isinstance(message, dict) or message.get("type") != "question":
        raise RequestError("request is not a question message")
    question = message.get("question")
    workspace = message.get("workspace")
    if not isinstance(question, dict) or not isinstance(workspace, dict):
        raise RequestError("request lacks its question or workspace object")
    question_id = question.get("question_id")
    if not isinstance(question_id, str):
        raise RequestError("question has no question_id string")
    return Question(
        question_id=question_id,
        run_id=str(message.get("run_id", "")),
        version=str(workspace.get("version", "")),
        question=question,
        skills=read_documents(str(workspace.get("skills_dir", ""))),
        prompts=read_documents(str(workspace.get("prompts_dir", ""))),
    )


def infra_result(question_id: str, message: str) -> Dict[str, Any]:
    """A result line that ``run`` counts as an infrastructure failure, never a wrong answer."""
    line: Dict[str, Any] = {"type": "result"}
    if question_id:
        line["question_id"] = question_id
    line.update(stop_reason="error", error=message)
    return line


def answer_lines(question_id: str, answer: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The protocol lines for what a node returned (see ``node``): steps, then one result."""
    error = answer.get("error")
    if error is not None:
        return [infra_result(question_id, str(error))]
    result = answer.get("result")
    if not isinstance(result, dict):
        return [infra_result(question_id, "the node returned no result")]
    lines: List[Dict[str, Any]] = []
    for step in answer.get("steps") or []:
        if isinstance(step, dict):
            lines.append(_addressed("step", question_id, step))
    lines.append(_addressed("result", question_id, result))
    return lines


def _addressed(kind: str, question_id: str, fields: Dict[str, Any]) -> Dict[str, Any]:
    """A protocol line of ``kind`` for ``question_id`` carrying ``fields``."""
    line: Dict[str, Any] = {"type": kind, "question_id": question_id}
    line.update((k, v) for k, v in fields.items() if k not in ("type", "question_id"))
    return line


class AnswerWriter:
    """Writes answers to the protocol stream, one question's lines together."""

    def __init__(self, stream: IO[bytes]) -> None:
        """Writes to ``stream`` (binary; flushed after each question)."""
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, lines: List[Dict[str, Any]]) -> None:
        """Writes ``lines`` as JSON lines and flushes them."""
        payload = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        with self._lock:
            self._stream.write(payload.encode("utf-8"))
            self._stream.flush()


def read_line(stream: IO[bytes]) -> Optional[str]:
    """The next request line without its newline; ``None`` at end of input.

    Raises ``RequestError`` for a line over ``MAX_LINE_BYTES`` or not UTF-8.
    """
    raw = stream.readline(MAX_LINE_BYTES + 1)
    if not raw:
        return None
    if len(raw) > MAX_LINE_BYTES:
        # Skip the rest of the oversized line so the next one starts cleanly.
        while raw and not raw.endswith(b"\n"):
            raw = stream.readline(MAX_LINE_BYTES)
        raise RequestError(f"request line longer than {MAX_LINE_BYTES} bytes")
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise RequestError("request line is not UTF-8") from error
