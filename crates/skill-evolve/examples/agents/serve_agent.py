#!/usr/bin/env python3
"""The rule agent of `rule_agent.py`, written on top of the Python helper.

`skill_evolve.agent.serve` speaks the agent protocol (docs/agent-protocol.md)
and hands each question to `answer()` together with the skill documents of
the version under test, so the agent is just the function: it looks through
the documents for a line `RULE <task type> => <answer>`, reports the lookup
as one trace step, and answers with the rule's answer (or `unknown`).

Run it with the `skill_evolve` package importable (installed, or
`PYTHONPATH=python` in a source checkout); in a run config:

    [agent]
    command = ["python3", "serve_agent.py"]
"""

from skill_evolve.agent import serve


def rule_answer(skills, task_type):
    """The answer the skills give for `task_type`, and the document it came from."""
    prefix = f"RULE {task_type} =>"
    for name in sorted(skills):
        for line in skills[name].splitlines():
            line = line.strip()
            if line.startswith(prefix):
                return line[len(prefix):].strip(), name
    return "unknown", ""


def answer(question, skills):
    """Answers one question from the skill documents, with the lookup as its trace."""
    task_type = question.get("task_type", "")
    prediction, source = rule_answer(skills, task_type)
    return {
        "prediction": prediction,
        "confidence": 0.9,
        "max_steps": 5,
        "steps": [
            {
                "tool_name": "read_skill",
                "tool_input": {"file": source},
                "tool_output": prediction,
                "thought": f"looking for a rule about {task_type}",
            }
        ],
    }


if __name__ == "__main__":
    serve(answer)
