"""``python -m skill_evolve.ray``: the bridge as a protocol-speaking worker.

Usage, as the ``[agent] command`` of a run config (``mode = "worker"``)::

    python -m skill_evolve.ray --address auto -- python3 my_agent.py
    python -m skill_evolve.ray --address auto my_package.agent:answer

Stdout carries the protocol only; everything else (Ray's own messages
included) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, NoReturn, Optional, Sequence

from .bridge import Agent, Bridge, BridgeOptions, CommandAgent, FunctionAgent
from .node import load_function

PROG = "python -m skill_evolve.ray"


class UsageError(Exception):
    """Bad command-line input; reported on one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a ``UsageError``."""

    def error(self, message: str) -> NoReturn:
        """Raises instead of printing the usage block."""
        raise UsageError(message)


def _parser() -> _Parser:
    parser = _Parser(
        prog=PROG,
        description="Answer skill-evolve's agent protocol by running each question as a Ray task.",
        epilog="After '--': the agent command, run once per question on a node. "
        "Without '--': module:function, a Python function answer(question, skills) -> dict.",
    )
    parser.add_argument(
        "--address",
        default="auto",
        help="the Ray cluster (auto, HOST:PORT, ray://HOST:10001) or 'local' for a private "
        "instance on this machine (default: auto)",
    )
    parser.add_argument(
        "--num-workers",
        type=int,
        default=None,
        help="with --address local: how many tasks the private instance runs at once",
    )
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=1,
        help="the most questions this bridge runs at once (default 1: skill-evolve run sends "
        "one question at a time per worker, so [agent] concurrency bounds the total)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=590.0,
        help="seconds per question before its task is cancelled and the question reported as "
        "an infrastructure failure; keep it below [agent] timeout_secs (default 590)",
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        default=3,
        help="how often a task lost with its worker or node is run again (default 3)",
    )
    parser.add_argument(
        "--num-cpus-per-task", type=float, default=1.0, help="CPUs a task reserves (default 1)"
    )
    parser.add_argument(
        "--max-output-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="the most a command agent may write for one question (default 16 MiB)",
    )
    parser.add_argument(
        "--cwd", default=None, help="the folder a command agent runs in on the node"
    )
    parser.add_argument(
        "--runtime-env",
        default=None,
        help='a JSON object passed to ray.init as runtime_env, e.g. \'{"working_dir": "."}\'',
    )
    parser.add_argument("agent", nargs="*", help="module:function (without '--')")
    return parser


def parse_args(argv: Sequence[str]) -> BridgeOptions:
    """The bridge's options from the command line; ``UsageError`` for bad input."""
    argv = list(argv)
    command: Optional[List[str]] = None
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    args = _parser().parse_args(argv)
    agent: Agent
    if command is not None:
        if args.agent:
            raise UsageError("give either an agent command after '--' or module:function, not both")
        if not command:
            raise UsageError("no agent command after '--'")
        agent = CommandAgent(argv=command, cwd=args.cwd)
    else:
        if len(args.agent) != 1:
            raise UsageError("give the agent command after '--', or one module:function")
        spec = args.agent[0]
        try:
            load_function(spec)
        except ValueError as error:
            raise UsageError(str(error)) from error
        agent = FunctionAgent(spec=spec)
    if args.num_workers is not None:
        if args.address != "local":
            raise UsageError("--num-workers sizes a private instance: use it with --address local")
        if args.num_workers < 1:
            raise UsageError("--num-workers must be at least 1")
    if args.max_in_flight < 1:
        raise UsageError("--max-in-flight must be at least 1")
    if not args.timeout > 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.max_retries < 0:
        raise UsageError("--max-retries must be 0 or more")
    if args.max_output_bytes < 1:
        raise UsageError("--max-output-bytes must be at least 1")
    runtime_env = None
    if args.runtime_env is not None:
        try:
            runtime_env = json.loads(args.runtime_env)
        except ValueError as error:
            raise UsageError(f"--runtime-env is not JSON: {error}") from error
        if not isinstance(runtime_env, dict):
            raise UsageError("--runtime-env must be a JSON object")
    return BridgeOptions(
        agent=agent,
        address=args.address,
        num_workers=args.num_workers,
        max_in_flight=args.max_in_flight,
        timeout_secs=args.timeout,
        max_retries=args.max_retries,
        num_cpus_per_task=args.num_cpus_per_task,
        max_output_bytes=args.max_output_bytes,
        runtime_env=runtime_env,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the bridge on this process's stdin and stdout; returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        options = parse_args(argv)
    except UsageError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    # Stdout belongs to the protocol: keep it for answers and send anything
    # else written there (Ray's start-up messages, a library's print) to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    bridge = Bridge(options)
    try:
        try:
            bridge.connect()
        except Exception as error:  # Ray's connection errors have no common base
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            print(f"{PROG}: cannot reach Ray at {options.address!r}: {first}", file=sys.stderr)
            return 1
        return bridge.serve(sys.stdin.buffer, answers)
    finally:
        bridge.close()
        answers.close()
