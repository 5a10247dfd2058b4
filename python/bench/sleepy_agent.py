"""An agent that takes 200 ms per question, for the Ray bridge benchmark.

As a program it speaks the agent protocol (one request per stdin line, one
result line each, until end of input); ``answer`` is the same agent as a
Python function for ``python -m skill_evolve.ray sleepy_agent:answer``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict

#: Seconds each question takes.
THINK_SECS = 0.2


def answer(question: Dict[str, Any], skills: Dict[str, str]) -> Dict[str, Any]:
    """Waits ``THINK_SECS`` and answers with the number of skill documents it got."""
    time.sleep(THINK_SECS)
    return {"prediction": str(len(skills))}


def main() -> int:
    """Serves requests from stdin until it closes."""
    for line in sys.stdin:
        request = json.loads(line)
        skills_dir = request["workspace"]["skills_dir"]
        reply = answer(request["question"], {name: "" for name in os.listdir(skills_dir)})
        reply.update(type="result", question_id=request["question"]["question_id"])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
