"""Python agents the Ray bridge tests run on the nodes (``answer(question, skills) -> dict``)."""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Tuple


def _rule(task_type: str, skills: Dict[str, str]) -> Tuple[str, str]:
    """The answer of the first ``RULE <task type> => <answer>`` line of the skills, and its file."""
    prefix = f"RULE {task_type} =>"
    for name in sorted(skills):
        for line in skills[name].splitlines():
            line = line.strip()
            if line.startswith(prefix):
                return line[len(prefix) :].strip(), name
    return "unknown", ""


def rule_answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Answers with the skills' rule for the question's task type.

    Its answer and trace are the example rule agent's (the demo's recorded
    LLM replies are keyed on them).
    """
    task_type = str(question.get("task_type", ""))
    prediction, source = _rule(task_type, skills)
    step = {
        "tool_name": "read_skill",
        "tool_input": {"file": source},
        "tool_output": prediction,
        "thought": f"looking for a rule about {task_type}",
    }
    return {"prediction": prediction, "answer_confidence": 0.9, "max_steps": 5, "steps": [step]}


def marked_rule_answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """``rule_answer``, after leaving ``<question id>.<pid>`` in ``$RAY_TEST_MARKS`` and a pause.

    The pause gives a test the time to kill the worker process the file names.
    """
    marks = os.environ["RAY_TEST_MARKS"]
    path = os.path.join(marks, f"{question['question_id']}.{os.getpid()}")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(str(time.time()))
    time.sleep(0.3)
    return rule_answer(question, skills)


def crash(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Takes its worker process down with it, every time."""
    os._exit(1)


def hang(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Never answers."""
    time.sleep(3600)
    return {}


def fail(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Raises, as a buggy agent would."""
    raise RuntimeError("the agent broke")


def echo_skills(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Answers with what it received, so a test can see what crossed the network."""
    return {"prediction": "seen", "question_seen": question, "skills_seen": skills}


def overlap_probe(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Records when it ran (start and end, in ``$RAY_TEST_MARKS``) so a test can count overlaps."""
    marks = os.environ["RAY_TEST_MARKS"]
    start = time.time()
    time.sleep(0.4)
    with open(os.path.join(marks, str(question["question_id"])), "w", encoding="utf-8") as handle:
        handle.write(f"{start} {time.time()}")
    return {"prediction": "ok"}
