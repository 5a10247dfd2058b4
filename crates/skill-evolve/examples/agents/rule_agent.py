#!/usr/bin/env python3
"""A complete agent for `skill-evolve run`, in plain Python (standard library only).

It speaks the agent protocol (docs/agent-protocol.md): one JSON object per
line on stdin and stdout. For each question it looks through the skill
documents of the workspace for a line `RULE <task type> => <answer>`, reports
the lookup as one trace step, and answers with the rule's answer (or
`unknown`). It serves questions until stdin closes, so it works both as a
long-lived worker (`mode = "worker"`) and once per question.

Replace `answer()` with your own agent: keep stdout for protocol lines and
write logs to stderr.
"""

import json
import os
import sys


def rule_answer(skills_dir, task_type):
    """The answer the skills give for `task_type`, and the file it came from."""
    prefix = f"RULE {task_type} =>"
    try:
        names = sorted(os.listdir(skills_dir))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(skills_dir, name)
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            line = line.strip()
            if line.startswith(prefix):
                return line[len(prefix):].strip(), name
    return "unknown", ""


def answer(request):
    """The protocol lines (steps, then the result) that answer one request."""
    question = request.get("question", {})
    qid = question.get("question_id", "")
    task_type = question.get("task_type", "")
    skills_dir = request.get("workspace", {}).get("skills_dir", "")
    prediction, source = rule_answer(skills_dir, task_type)
    step = {
        "type": "step",
        "question_id": qid,
        "tool_name": "read_skill",
        "tool_input": {"file": source},
        "tool_output": prediction,
        "thought": f"looking for a rule about {task_type}",
    }
    result = {
        "type": "result",
        "question_id": qid,
        "prediction": prediction,
        "answer_confidence": 0.9,
        "max_steps": 5,
    }
    return [step, result]


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            print("rule_agent.py: unreadable request", file=sys.stderr)
            return 2
        for message in answer(request):
            sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
