"""What runs on a Ray node: one question answered by the user's agent.

This module uses the standard library only and imports nothing else of
``skill_evolve``: the bridge ships it to the nodes by value, so a node needs
Ray but not this package.

Both entry points return a plain dict, never raise for the agent's own
failures, and never depend on which node they ran on:

- ``{"steps": [...], "result": {...}}`` for an answer;
- ``{"error": "..."}`` when the agent failed (the bridge reports it as an
  infrastructure failure, never as a wrong answer).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

#: How long a per-question agent may take to exit after its result line.
EXIT_GRACE_SECS = 2.0
#: How much of an agent's stderr is quoted when it fails.
STDERR_TAIL_CHARS = 2000
#: Linux's prctl option that signals a process when its parent dies.
PR_SET_PDEATHSIG = 1
#: The longest error message a task returns.
MAX_ERROR_CHARS = 4000


def _cut(text: str, limit: int) -> str:
    """``text`` cut to its last ``limit`` characters, the cut marked."""
    if len(text) <= limit:
        return text
    return "…" + text[-limit:]


def _safe_name(name: str) -> bool:
    """Whether ``name`` is a plain file name (no folder, not empty, no NUL)."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


def write_documents(root: str, skills: Dict[str, str], prompts: Dict[str, str]) -> Dict[str, str]:
    """Writes the documents into ``root`` as the protocol lays them out.

    Returns the ``workspace`` object of a request pointing at them. A
    document name that is not a plain file name raises ``ValueError``.
    """
    layout = {}
    for sub, documents in (("skills", skills), ("prompts", prompts)):
        folder = os.path.join(root, sub)
        os.mkdir(folder)
        layout[sub] = folder
        for name, text in documents.items():
            if not _safe_name(name):
                raise ValueError(f"document name {name!r} is not a plain file name")
            with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
                handle.write(text)
    return {"dir": root, "skills_dir": layout["skills"], "prompts_dir": layout["prompts"]}


def parse_agent_output(
    lines: List[str], question_id: str
) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]], Optional[str]]:
    """Reads an agent's protocol lines: ``(result, steps, error)``.

    ``result`` is ``None`` when no result line came; ``error`` says what was
    wrong with the output (not JSON, an unknown type, another question's id).
    """
    steps: List[Dict[str, Any]] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            return None, steps, f"garbage output line: {line[:200]!r}"
        if not isinstance(message, dict):
            return None, steps, f"garbage output line: {line[:200]!r}"
        named = message.get("question_id")
        if named is not None and named != question_id:
            return None, steps, f"answer for question {named!r} while {question_id!r} was asked"
        kind = message.get("type")
        if kind == "step":
            steps.append(message)
        elif kind == "result":
            return message, steps, None
        else:
            return None, steps, f"unknown message: {line[:200]!r}"
    return None, steps, None


def _kill_group(process: "subprocess.Popen[bytes]") -> None:
    """Kills ``process`` and everything it started (it leads its own group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.kill()
    except ProcessLookupError:
        pass


def _die_with_parent() -> None:
    """In the agent's process, before it starts: on Linux, be killed when the Ray worker dies.

    A Ray worker killed outright (a forced cancel, its driver gone) runs no
    clean-up; this keeps its agent from living on. Elsewhere it does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_command_question(
    command: List[str],
    request: Dict[str, Any],
    skills: Dict[str, str],
    prompts: Dict[str, str],
    timeout_secs: float,
    max_output_bytes: int,
    cwd: Optional[str] = None,
) -> Dict[str, Any]:
    """Answers one question with the user's agent command in per-question mode.

    The skill and prompt documents are written to a fresh folder on this
    node, the request (with its workspace pointing there) goes to the
    command's stdin, stdin is closed, and stdout is read up to the result
    line. The command leads its own process group, which is killed when the
    question ends, times out, or this task is cancelled.
    """
    question_id = str(request.get("question", {}).get("question_id", ""))
    root = tempfile.mkdtemp(prefix="skill-evolve-ray-")
    process: Optional["subprocess.Popen[bytes]"] = None
    timer: Optional[threading.Timer] = None
    timed_out = threading.Event()
    try:
        try:
            workspace = write_documents(root, skills, prompts)
        except (OSError, ValueError) as error:
            return {"error": f"could not write the documents on this node: {error}"}
        shown = dict(request)
        shown["workspace"] = dict(request.get("workspace", {}), **workspace)
        line = json.dumps(shown, ensure_ascii=False) + "\n"
        stderr = tempfile.TemporaryFile(dir=root)
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as error:
            return {"error": f"could not start the agent {command[0]!r}: {error}"}

        def expire() -> None:
            timed_out.set()
            _kill_group(process)

        timer = threading.Timer(timeout_secs, expire)
        timer.daemon = True
        timer.start()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(line.encode("utf-8"))
            process.stdin.close()
        except OSError:
            pass  # the agent exited early; its output says why
        lines: List[str] = []
        used = 0
        result: Optional[Dict[str, Any]] = None
        steps: List[Dict[str, Any]] = []
        problem: Optional[str] = None
        while True:
            raw = process.stdout.readline(max_output_bytes - used + 1)
            if not raw:
                break
            used += len(raw)
            if used > max_output_bytes:
                problem = f"the agent wrote more than {max_output_bytes} bytes"
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                problem = "garbage output: a line that is not UTF-8"
                break
            lines.append(text.rstrip("\r\n"))
            result, steps, problem = parse_agent_output(lines, question_id)
            if result is not None or problem is not None:
                break
        if result is not None and problem is None:
            try:
                process.wait(timeout=EXIT_GRACE_SECS)
            except subprocess.TimeoutExpired:
                pass
            return {"steps": steps, "result": result}
        _kill_group(process)
        process.wait()
        if timed_out.is_set():
            problem = f"no answer within {timeout_secs:.3f} s on this node; agent killed"
        if problem is None:
            problem = f"agent ended before answering: exit status {process.returncode}"
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", "replace")
        if tail.strip():
            problem += "; stderr: " + _cut(tail, STDERR_TAIL_CHARS)
        return {"error": _cut(problem, MAX_ERROR_CHARS)}
    finally:
        # Also reached when Ray cancels this task (KeyboardInterrupt).
        if timer is not None:
            timer.cancel()
        if process is not None and process.poll() is None:
            _kill_group(process)
        shutil.rmtree(root, ignore_errors=True)


def load_function(spec: str) -> Callable[..., Any]:
    """The function a ``module:function`` spec names; ``ValueError`` when it cannot be loaded."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{spec!r} is not of the form module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any import-time failure of user code
        raise ValueError(f"cannot import {module_name!r}: {error}") from error
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ValueError(f"{module_name!r} has no function {attribute!r}")
    return function


def run_function_question(
    function: Callable[..., Any], spec: str, question: Dict[str, Any], skills: Dict[str, str]
) -> Dict[str, Any]:
    """Answers one question with the user's ``answer(question, skills) -> dict``.

    ``spec`` (``module:function``) names the function in messages. The
    returned dict becomes the result line (its ``steps`` list, if any,
    carries the trace inline). An exception or a value that is not a dict is
    an agent failure.
    """
    try:
        reply = function(dict(question), dict(skills))
    except Exception as error:  # the user's code failed; reported, not raised
        return {"error": _cut(f"{spec} raised {type(error).__name__}: {error}", MAX_ERROR_CHARS)}
    if not isinstance(reply, dict):
        return {"error": f"{spec} returned {type(reply).__name__}, not a dict"}
    return {"steps": [], "result": reply}
