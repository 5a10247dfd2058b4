"""Run an agent's rollouts on a Ray cluster.

``python -m skill_evolve.ray`` speaks the agent protocol of ``skill-evolve
run`` (use it as ``[agent] command`` with ``mode = "worker"``) and answers
each question as a Ray task: see ``docs/ray.md``. Ray is needed only when a
bridge connects; importing this package does not import it.
"""

from .bridge import Bridge, BridgeOptions, CommandAgent, FunctionAgent
from .cli import main, parse_args

__all__ = ["Bridge", "BridgeOptions", "CommandAgent", "FunctionAgent", "main", "parse_args"]
