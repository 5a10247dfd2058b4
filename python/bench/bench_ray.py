"""Rollouts per second through the Ray bridge against local subprocess agents.

The agent takes 200 ms per question. For 1, 2 and 4 lanes (what ``[agent]
concurrency`` sets in a run config) the benchmark drives the agent the way
``skill-evolve run`` does, one question at a time per lane:

- ``local``: the agent as a long-lived local subprocess per lane (worker mode);
- ``ray function``: a bridge per lane answering with ``sleepy_agent:answer``;
- ``ray command``: a bridge per lane running ``sleepy_agent.py`` once per
  question on the node (per-question mode).

The Ray cluster is a head node started here on loopback with 4 CPUs and
stopped at the end. Each lane answers one warm-up question first (its
bridge's connection and the Ray workers' start), reported separately; the
measured questions follow. Overhead per rollout is the mean time a lane
spent per question minus the agent's 200 ms.

Usage: ``python python/bench/bench_ray.py [--questions N]`` with Ray installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
PYTHON_ROOT = HERE.parent
AGENT = HERE / "sleepy_agent.py"
THINK_SECS = 0.2


def environment() -> Dict[str, str]:
    """This environment with the package and the benchmark's agent importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PYTHON_ROOT), str(HERE)] + [p for p in [env.get("PYTHONPATH", "")] if p]
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def free_port() -> int:
    """A port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Head:
    """A one-node Ray cluster in a session of its own."""

    def __init__(self, cpus: int) -> None:
        """Starts the node with ``cpus`` CPUs and waits until it answers."""
        self.temp = tempfile.mkdtemp(prefix="rb", dir="/tmp")
        self.address = f"127.0.0.1:{free_port()}"
        ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"
        argv = [ray_cli, "start", "--head", "--block", "--node-ip-address", "127.0.0.1"]
        argv += ["--port", self.address.rsplit(":", 1)[1], "--num-cpus", str(cpus)]
        argv += ["--include-dashboard", "false", "--dashboard-port", str(free_port())]
        argv += ["--disable-usage-stats", "--temp-dir", self.temp]
        self.log = open(os.path.join(self.temp, "head.log"), "wb")
        self.process = subprocess.Popen(
            argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        probe = f"import ray; ray.init(address={self.address!r}, logging_level='ERROR')"
        for _ in range(120):
            if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0:
                return
            time.sleep(1)
        raise RuntimeError("the Ray head did not start")

    def stop(self) -> None:
        """Stops the node's processes (its session) and removes its folder."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.getsid(int(entry)) == self.process.pid:
                        os.kill(int(entry), signal.SIGKILL)
                except (OSError, ProcessLookupError):
                    pass
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)


def request(question_id: str, space: str) -> bytes:
    """One request line as ``run`` writes it."""
    workspace = {
        "version": "v1",
        "dir": space,
        "skills_dir": os.path.join(space, "skills"),
        "prompts_dir": os.path.join(space, "prompts"),
    }
    question = {"question_id": question_id, "task_type": "qa", "question": "?"}
    line = {"type": "question", "run_id": "bench", "workspace": workspace, "question": question}
    return (json.dumps(line) + "\n").encode()


def lane(argv: List[str], questions: int, space: str, out: List[Tuple[float, float]]) -> None:
    """One lane: a warm-up question, then ``questions`` more; appends (warm-up s, measured s)."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment(),
    )
    assert process.stdin is not None and process.stdout is not None

    def ask(question_id: str) -> None:
        process.stdin.write(request(question_id, space))
        process.stdin.flush()
        while True:
            line = json.loads(process.stdout.readline())
            if line["type"] == "result":
                if "error" in line:
                    raise RuntimeError(line["error"])
                return

    started = time.perf_counter()
    ask("warm-up")
    warmed = time.perf_counter()
    for index in range(questions):
        ask(f"q{index}")
    out.append((warmed - started, time.perf_counter() - warmed))
    process.stdin.close()
    process.wait()


def measure(argv: List[str], lanes: int, questions: int, space: str) -> Dict[str, float]:
    """Runs ``lanes`` lanes of ``questions`` questions each; the figures."""
    timings: List[Tuple[float, float]] = []
    threads = [
        threading.Thread(target=lane, args=(argv, questions, space, timings))
        for _ in range(lanes)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(timings) != lanes:
        raise RuntimeError("a lane failed")
    wall = max(measured for _, measured in timings)
    per_question = sum(measured for _, measured in timings) / (lanes * questions)
    return {
        "rollouts_per_s": lanes * questions / wall,
        "overhead_ms": (per_question - THINK_SECS) * 1000,
        "warm_up_s": max(warm for warm, _ in timings),
    }


def main() -> int:
    """Prints one table row per (agent, lanes)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=25, help="questions per lane")
    args = parser.parse_args()
    space = tempfile.mkdtemp(prefix="bench-ws-")
    os.mkdir(os.path.join(space, "skills"))
    os.mkdir(os.path.join(space, "prompts"))
    Path(space, "skills", "default.md").write_text("RULE qa => yes\n")
    head = Head(cpus=4)
    try:
        bridge = [sys.executable, "-m", "skill_evolve.ray", "--address", head.address]
        agents = {
            "local": [sys.executable, str(AGENT)],
            "ray function": bridge + ["sleepy_agent:answer"],
            "ray command": bridge + ["--", sys.executable, str(AGENT)],
        }
        print(f"{'agent':<14} {'lanes':>5} {'rollouts/s':>10} {'overhead ms':>11} {'warm-up s':>9}")
        for lanes in (1, 2, 4):
            for name, argv in agents.items():
                row = measure(argv, lanes, args.questions, space)
                print(
                    f"{name:<14} {lanes:>5} {row['rollouts_per_s']:>10.2f} "
                    f"{row['overhead_ms']:>11.1f} {row['warm_up_s']:>9.1f}",
                    flush=True,
                )
    finally:
        head.stop()
        shutil.rmtree(space, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
