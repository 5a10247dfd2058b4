"""The Ray bridge (``python -m skill_evolve.ray``) on a real two-node Ray cluster.

The cluster is a head and one worker node started with ``ray start`` on this
machine (loopback, no dashboard), each in a process session of its own so
that the finalizer stops exactly these processes, whatever happens.

The end-to-end tests run the offline demo with the ``skill-evolve`` binary
(``SKILL_EVOLVE_BIN``, else ``skill-evolve`` on PATH, else the cargo target
folder's ``debug/skill-evolve``), once with the example agent directly and
once through the bridge, and compare the decisions.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

HERE = Path(__file__).resolve().parent
PYTHON_ROOT = HERE.parent
REPO = PYTHON_ROOT.parent
DEMO = REPO / "crates/skill-evolve/examples/rule-agent-demo"
RULE_AGENT = REPO / "crates/skill-evolve/examples/agents/rule_agent.py"
#: Generous bounds for waiting on a loaded machine (never asserted as speed).
PATIENCE_SECS = 240.0

try:
    import ray  # noqa: F401

    RAY_MISSING: Optional[str] = None
except ImportError as error:
    RAY_MISSING = f"ray is not importable ({error}); install it (pip install 'ray==2.40.0')"

needs_ray = pytest.mark.skipif(RAY_MISSING is not None, reason=RAY_MISSING or "")


def bridge_env(**extra: str) -> Dict[str, str]:
    """This process's environment with the test agents importable (and the package: the
    installed one, or the source tree that conftest.py put on ``PYTHONPATH``)."""
    env = dict(os.environ)
    paths = [str(HERE)] + [p for p in [env.get("PYTHONPATH", "")] if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def bridge_argv(address: str, *args: str) -> List[str]:
    """The command line of a bridge on ``address`` with ``args``."""
    return [sys.executable, "-m", "skill_evolve.ray", "--address", address, *args]


def free_ports(count: int) -> List[int]:
    """``count`` distinct ports free on loopback right now."""
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class Cluster:
    """A Ray head and one worker node on this machine, each in its own session."""

    def __init__(self) -> None:
        """Prepares a private temporary folder; ``start`` starts the nodes."""
        # Ray's socket paths must stay short: a short folder under /tmp.
        self.temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")
        self.nodes: List[subprocess.Popen] = []
        self.address = ""

    def _ray(self) -> str:
        ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable))
        return ray_cli or "ray"

    def _start_node(self, args: List[str], log: str) -> None:
        ports = free_ports(6)
        argv = [
            self._ray(),
            "start",
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--disable-usage-stats",
            "--node-manager-port",
            str(ports[0]),
            "--object-manager-port",
            str(ports[1]),
            "--dashboard-agent-listen-port",
            str(ports[2]),
            "--dashboard-agent-grpc-port",
            str(ports[3]),
            "--metrics-export-port",
            str(ports[4]),
            "--runtime-env-agent-port",
            str(ports[5]),
            *args,
        ]
        with open(os.path.join(self.temp, log), "wb") as out:
            self.nodes.append(
                subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=bridge_env(RAY_USAGE_STATS_ENABLED="0"),
                )
            )

    def start(self) -> None:
        """Starts the head (2 CPUs) and a worker node (1 CPU) and waits for both."""
        port, dashboard = free_ports(2)
        self.address = f"127.0.0.1:{port}"
        self._start_node(
            [
                "--head",
                "--port",
                str(port),
                "--num-cpus",
                "2",
                "--include-dashboard",
                "false",
                "--dashboard-port",
                str(dashboard),
                "--temp-dir",
                self.temp,
            ],
            "head.log",
        )
        self._wait_for_nodes(1)
        self._start_node(["--address", self.address, "--num-cpus", "1"], "worker.log")
        self._wait_for_nodes(2)

    def _wait_for_nodes(self, count: int) -> None:
        probe = (
            "import ray; ray.init(address=%r, logging_level='ERROR'); "
            "print(sum(1 for n in ray.nodes() if n['Alive']))" % self.address
        )
        deadline = time.monotonic() + PATIENCE_SECS
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.poll() is not None:
                    raise RuntimeError(f"a Ray node exited early: {self.logs()}")
            done = subprocess.run(
                [sys.executable, "-c", probe],
                capture_output=True,
                text=True,
                env=bridge_env(),
                timeout=PATIENCE_SECS,
            )
            lines = done.stdout.split()
            if done.returncode == 0 and lines and int(lines[-1]) >= count:
                return
            time.sleep(1)
        raise RuntimeError(f"the Ray cluster did not come up: {self.logs()}")

    def logs(self) -> str:
        """The last lines of the nodes' logs."""
        text = []
        for name in ("head.log", "worker.log"):
            path = os.path.join(self.temp, name)
            if os.path.exists(path):
                text.append(name + ": " + Path(path).read_text(errors="replace")[-2000:])
        return "\n".join(text)

    def worker_pids(self) -> List[int]:
        """Every process of this cluster: started by the nodes or naming its folder."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                session = os.getsid(int(entry))
            except (OSError, ProcessLookupError):
                continue
            ours = session in [node.pid for node in self.nodes]
            if ours or self.temp.encode() in cmdline:
                pids.append(int(entry))
        return pids

    def stop(self) -> None:
        """Stops every process of this cluster and removes its folder."""
        for node in self.nodes:
            try:
                os.killpg(node.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for node in self.nodes:
            try:
                node.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        for pid in self.worker_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for node in self.nodes:
            if node.poll() is None:
                node.kill()
                node.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A running two-node cluster, stopped at the end whatever happened."""
    if RAY_MISSING is not None:
        pytest.skip(RAY_MISSING)
    running = Cluster()
    try:
        running.start()
        yield running
    finally:
        running.stop()


def skill_evolve_binary() -> Optional[str]:
    """The ``skill-evolve`` binary to run, if one can be found."""
    named = os.environ.get("SKILL_EVOLVE_BIN")
    if named:
        return named
    found = shutil.which("skill-evolve")
    if found:
        return found
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    built = os.path.join(target, "debug", "skill-evolve")
    return built if os.path.exists(built) else None


@pytest.fixture(scope="module")
def skill_evolve() -> str:
    """The binary, or a skip saying how to build it."""
    binary = skill_evolve_binary()
    if binary is None:
        pytest.skip(
            "no skill-evolve binary: build it with "
            "`cargo build -p skill-evolve --no-default-features` or set SKILL_EVOLVE_BIN"
        )
    return binary


# -- talking to a bridge directly --------------------------------------------


def workspace(root: Path, skills: Dict[str, str], prompts: Dict[str, str]) -> Dict[str, str]:
    """A request's workspace object with the documents written under ``root``."""
    for sub, documents in (("skills", skills), ("prompts", prompts)):
        (root / sub).mkdir(parents=True, exist_ok=True)
        for name, text in documents.items():
            (root / sub / name).write_text(text, encoding="utf-8")
    return {
        "version": "v000001",
        "dir": str(root),
        "skills_dir": str(root / "skills"),
        "prompts_dir": str(root / "prompts"),
    }


def request(question_id: str, space: Dict[str, str], **fields: str) -> str:
    """One request line, as ``run`` writes it."""
    question = {"question_id": question_id, "task_type": "qa", "question": "Is it?", **fields}
    line = {"type": "question", "run_id": "t_v000001", "workspace": space, "question": question}
    return json.dumps(line) + "\n"


def ask(
    address: str, args: List[str], lines: List[str], env: Optional[Dict[str, str]] = None
) -> List[dict]:
    """Runs a bridge with ``args``, sends ``lines``, closes stdin; the lines it answered."""
    done = subprocess.run(
        bridge_argv(address, *args),
        input="".join(lines),
        capture_output=True,
        text=True,
        env=env or bridge_env(),
        timeout=PATIENCE_SECS,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def results(lines: List[dict]) -> Dict[str, dict]:
    """The result lines by question id."""
    return {line.get("question_id", ""): line for line in lines if line["type"] == "result"}


@needs_ray
def test_bad_command_lines_are_refused_on_one_line_with_status_2() -> None:
    for args in (
        [],
        ["no_such_module_here:answer"],
        ["ray_agents:no_such_function"],
        ["--num-workers", "2", "ray_agents:rule_answer"],
        ["--max-in-flight", "0", "ray_agents:rule_answer"],
        ["--runtime-env", "[1]", "ray_agents:rule_answer"],
        ["ray_agents:rule_answer", "--"],
    ):
        done = subprocess.run(
            bridge_argv("auto", *args),
            capture_output=True,
            text=True,
            env=bridge_env(),
            stdin=subprocess.DEVNULL,
            timeout=PATIENCE_SECS,
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
        assert done.stderr.startswith("python -m skill_evolve.ray: "), done.stderr


@needs_ray
def test_an_address_where_nothing_listens_is_one_line_and_status_1() -> None:
    (port,) = free_ports(1)
    done = subprocess.run(
        bridge_argv(f"127.0.0.1:{port}", "ray_agents:rule_answer"),
        capture_output=True,
        text=True,
        env=bridge_env(),
        stdin=subprocess.DEVNULL,
        timeout=PATIENCE_SECS,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"python -m skill_evolve.ray: cannot reach Ray at '127.0.0.1:{port}': "
        f"nothing answers at 127.0.0.1:{port} ([Errno 111] Connection refused)"
    ]


def test_only_contents_travel_and_every_answer_comes_back(
    cluster: Cluster, tmp_path: Path
) -> None:
    space = workspace(tmp_path, {"default-strategy.md": "RULE qa => yes\n"}, {"p.md": "Be brief."})
    lines = [request(f"q{i}", space, difficulty="easy") for i in range(3)]
    lines.insert(1, "this is not JSON\n")
    answered = ask(cluster.address, ["ray_agents:echo_skills"], lines)
    by_id = results(answered)
    assert sorted(by_id) == ["", "q0", "q1", "q2"] or sorted(by_id) == ["q0", "q1", "q2"]
    refused = [line for line in answered if line.get("question_id", "") == ""]
    assert len(refused) == 1 and refused[0]["stop_reason"] == "error", answered
    for qid in ("q0", "q1", "q2"):
        seen = by_id[qid]
        # The node got the documents' contents and the question, no local path.
        assert seen["skills_seen"] == {"default-strategy.md": "RULE qa => yes\n"}
        assert seen["question_seen"]["question_id"] == qid
        assert seen["question_seen"]["difficulty"] == "easy"
        assert str(tmp_path) not in json.dumps(seen)


def test_a_command_agent_answers_in_per_question_mode_on_the_nodes(
    cluster: Cluster, tmp_path: Path
) -> None:
    space = workspace(tmp_path, {"default-strategy.md": "RULE qa => yes\n"}, {})
    answered = ask(
        cluster.address,
        ["--max-in-flight", "3", "--", sys.executable, str(RULE_AGENT)],
        [request(f"q{i}", space) for i in range(4)],
    )
    by_id = results(answered)
    assert {qid: r["prediction"] for qid, r in by_id.items()} == {f"q{i}": "yes" for i in range(4)}
    steps = [line for line in answered if line["type"] == "step"]
    assert sorted(s["question_id"] for s in steps) == [f"q{i}" for i in range(4)]
    assert all(s["tool_name"] == "read_skill" for s in steps)


def test_a_lost_worker_whose_retries_ran_out_is_infra_not_a_wrong_answer(
    cluster: Cluster, tmp_path: Path
) -> None:
    space = workspace(tmp_path, {"default-strategy.md": "RULE qa => yes\n"}, {})
    crashed = results(ask(cluster.address, ["--max-retries", "1", "ray_agents:crash"], [request("q0", space)]))
    assert crashed["q0"]["stop_reason"] == "error"
    assert "retries ran out" in crashed["q0"]["error"]
    assert "prediction" not in crashed["q0"]
    failed = results(ask(cluster.address, ["ray_agents:fail"], [request("q1", space)]))
    assert failed["q1"]["stop_reason"] == "error"
    assert "the agent broke" in failed["q1"]["error"]


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(condition, what: str) -> None:
    """Polls ``condition`` until it holds; fails saying ``what`` after ``PATIENCE_SECS``."""
    deadline = time.monotonic() + PATIENCE_SECS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting: {what}")
        time.sleep(0.2)


def test_a_question_past_its_timeout_is_infra_and_its_agent_is_killed(
    cluster: Cluster, tmp_path: Path
) -> None:
    space = workspace(tmp_path, {}, {})
    marker = tmp_path / "agent.pid"
    # A warm-up question answered at once, so that the timed question's task
    # starts on a ready worker: the agent hangs on every other question.
    script = (
        "read line; case $line in *warm-up*) "
        "echo '{\"type\": \"result\", \"prediction\": \"ready\"}';; "
        f"*) echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; exec sleep 3600;; esac"
    )
    by_id = results(
        ask(
            cluster.address,
            ["--timeout", "8", "--", "sh", "-c", script],
            [request("warm-up", space), request("q0", space)],
        )
    )
    assert by_id["warm-up"]["prediction"] == "ready"
    assert by_id["q0"]["stop_reason"] == "error"
    assert "no answer within" in by_id["q0"]["error"]
    pid = int(marker.read_text())
    wait_until(lambda: not pid_alive(pid), "the timed-out agent to be killed")
    hung = results(ask(cluster.address, ["--timeout", "2", "ray_agents:hang"], [request("q1", space)]))
    assert "no answer within" in hung["q1"]["error"]


def start_hanging_question(address: str, tmp_path: Path) -> Tuple[subprocess.Popen, int]:
    """A bridge whose command agent hangs on its question; the bridge and the agent's pid."""
    space = workspace(tmp_path, {}, {})
    marker = tmp_path / "agent.pid"
    agent = ["sh", "-c", f"echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; exec sleep 3600"]
    bridge = subprocess.Popen(
        bridge_argv(address, "--", *agent),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env(),
    )
    assert bridge.stdin is not None
    bridge.stdin.write(request("q0", space).encode())
    bridge.stdin.flush()
    try:
        wait_until(marker.exists, "the agent to start on a node")
    except BaseException:
        bridge.kill()
        bridge.wait()
        raise
    return bridge, int(marker.read_text())


def test_sigterm_cancels_the_question_in_flight(cluster: Cluster, tmp_path: Path) -> None:
    bridge, pid = start_hanging_question(cluster.address, tmp_path)
    try:
        bridge.send_signal(signal.SIGTERM)
        out, errors = bridge.communicate(timeout=PATIENCE_SECS)
        assert bridge.returncode == 143, errors.decode(errors="replace")[-3000:]
        assert out == b""
        wait_until(lambda: not pid_alive(pid), "the cancelled agent to be killed")
    finally:
        if bridge.poll() is None:
            bridge.kill()
            bridge.wait()


def test_a_bridge_killed_outright_leaves_no_agent_behind(
    cluster: Cluster, tmp_path: Path
) -> None:
    bridge, pid = start_hanging_question(cluster.address, tmp_path)
    bridge.kill()
    bridge.communicate()
    wait_until(lambda: not pid_alive(pid), "the orphaned agent to be killed")


def test_max_in_flight_caps_the_tasks_running_at_once(cluster: Cluster, tmp_path: Path) -> None:
    space = workspace(tmp_path, {}, {})
    marks = tmp_path / "marks"
    marks.mkdir()
    env_json = json.dumps({"env_vars": {"RAY_TEST_MARKS": str(marks)}})
    answered = ask(
        cluster.address,
        ["--max-in-flight", "2", "--runtime-env", env_json, "ray_agents:overlap_probe"],
        [request(f"q{i}", space) for i in range(6)],
    )
    assert sorted(results(answered)) == [f"q{i}" for i in range(6)]
    spans = [tuple(map(float, p.read_text().split())) for p in marks.iterdir()]
    assert len(spans) == 6
    most = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    # The cluster has 3 CPUs: only the bridge's cap keeps a third task out.
    assert most <= 2, spans


# -- the whole run: direct versus through Ray --------------------------------


def demo_folder(root: Path, command: List[str]) -> Path:
    """The shipped demo copied into ``root`` with ``command`` as its agent."""
    root.mkdir(parents=True)
    (root / "skills").mkdir()
    for name in ("questions.jsonl", "demo.cassette", "skills/default-strategy.md"):
        shutil.copy(DEMO / name, root / name)
    config = (DEMO / "evolve.toml").read_text()
    replaced = config.replace('command = ["rule-agent"]', f"command = {json.dumps(command)}")
    assert replaced != config
    (root / "evolve.toml").write_text(replaced)
    return root


@dataclass
class DemoRun:
    """What a demo run decided and answered."""

    #: The gate rows of the report: candidate, accepted, W, L, pairs, E, decision.
    decisions: List[str]
    #: Every rollout: (run id, question id) → (prediction, correct, stop reason).
    answers: Dict[Tuple[str, str], Tuple[str, bool, str]]


def run_demo(binary: str, folder: Path, env: Dict[str, str]) -> DemoRun:
    """Runs the demo in ``folder`` and reads its report and run log."""
    env = dict(env, NO_COLOR="1")
    for name in list(env):
        if name.startswith("SKILL_EVOLVE_") and name != "SKILL_EVOLVE_BIN":
            env.pop(name)
    done = subprocess.run(
        [binary, "run", "--config", "evolve.toml"],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=PATIENCE_SECS * 2,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = folder / ".skill-evolve/runs/demo"
    report = (runs / "report.md").read_text()
    rows = [
        line
        for line in report.splitlines()
        if line.startswith("| ") and (" | yes | " in line or " | no | " in line)
    ]
    assert rows, report
    answers = {}
    with closing(sqlite3.connect(runs / "runlog.sqlite")) as db:
        for run_id, question_id, record in db.execute(
            "SELECT run_id, question_id, record FROM predictions"
        ):
            fields = json.loads(record)
            answers[(run_id, question_id)] = (
                fields.get("prediction", ""),
                bool(fields.get("correct")),
                fields.get("stop_reason", ""),
            )
    assert answers
    return DemoRun(rows, answers)


@pytest.fixture(scope="module")
def direct_run(skill_evolve: str, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The demo with the example agent run as a local subprocess (no Ray)."""
    folder = demo_folder(
        tmp_path_factory.mktemp("direct") / "demo", [sys.executable, str(RULE_AGENT)]
    )
    return run_demo(skill_evolve, folder, bridge_env())


def test_through_ray_the_demo_gets_the_direct_runs_answers_and_decisions(
    cluster: Cluster, skill_evolve: str, direct_run: DemoRun, tmp_path: Path
) -> None:
    timeout = ["--timeout", "25"]
    function = bridge_argv(cluster.address, *timeout, "ray_agents:rule_answer")
    command = bridge_argv(cluster.address, *timeout, "--", sys.executable, str(RULE_AGENT))
    for name, agent in (("function", function), ("command", command)):
        through_ray = run_demo(skill_evolve, demo_folder(tmp_path / name, agent), bridge_env())
        assert through_ray.decisions == direct_run.decisions, name
        assert through_ray.answers == direct_run.answers, name


def test_a_worker_killed_mid_run_is_retried_and_the_run_completes(
    cluster: Cluster, skill_evolve: str, direct_run: DemoRun, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    env_json = json.dumps({"env_vars": {"RAY_TEST_MARKS": str(marks)}})
    agent = bridge_argv(
        cluster.address,
        "--timeout",
        "25",
        "--runtime-env",
        env_json,
        "ray_agents:marked_rule_answer",
    )
    killed: List[int] = []
    stop = threading.Event()

    def kill_the_first_worker() -> None:
        """Kills the Ray worker process answering the first question seen."""
        while not stop.is_set():
            for mark in sorted(marks.iterdir()):
                pid = int(mark.name.rsplit(".", 1)[1])
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(pid)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_first_worker, daemon=True)
    killer.start()
    try:
        run = run_demo(skill_evolve, demo_folder(tmp_path / "killed", agent), bridge_env())
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was killed"
    # Every rollout was answered, none became an infrastructure failure: the
    # killed question ran again on another worker.
    assert run.answers == direct_run.answers
    assert run.decisions == direct_run.decisions
    assert len({mark.name.rsplit(".", 1)[1] for mark in marks.iterdir()}) >= 2
