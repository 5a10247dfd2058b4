"""The dispatcher: each request becomes a Ray task, each task's answer a result line.

One bridge process serves one lane of ``skill-evolve run`` (``[agent] mode =
"worker"``). It reads requests as they come, runs at most ``max_in_flight``
of them as Ray tasks at once, and writes each question's lines as soon as its
task ends. A task lost with its worker or node is retried by Ray
(``max_retries``); one whose retries ran out, that raised, or that passed its
timeout is answered with an infrastructure-failure result, never with a
wrong answer. At end of input the bridge answers what it was already asked
(``run``'s per-question mode closes stdin right after the request) and
exits; SIGTERM, or ``run`` no longer reading, cancels whatever still runs.
"""

from __future__ import annotations

import logging
import queue
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
import sys
from typing import IO, Any, Callable, Dict, List, Optional, Union

from . import node
from .protocol import AnswerWriter, Question, RequestError, answer_lines, infra_result
from .protocol import parse_request, question_id_of, read_line

#: How long a cancelled task gets to stop its agent before its worker is killed.
CANCEL_GRACE_SECS = 2.0
#: How long, after cancelling, the bridge waits for the cancellations to be seen.
WAITER_GRACE_SECS = 10.0
#: The protocol's default cap on what an agent writes for one question.
DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class CommandAgent:
    """The user's agent program, run once per question on the node (per-question mode)."""

    #: The program and its arguments, as on a command line.
    argv: List[str]
    #: The folder it runs in on the node (``None``: the Ray worker's own).
    cwd: Optional[str] = None


@dataclass(frozen=True)
class FunctionAgent:
    """A Python function ``answer(question: dict, skills: dict[str, str]) -> dict``.

    The function's module is shipped to the nodes by value, so every node
    runs the code this process loaded; what that module imports (other than
    itself) must be installed on the nodes.
    """

    #: ``module:function``, importable here.
    spec: str

    def load(self) -> Callable[..., Any]:
        """The function itself; ``ValueError`` when it cannot be loaded."""
        return node.load_function(self.spec)


Agent = Union[CommandAgent, FunctionAgent]


@dataclass
class BridgeOptions:
    """How the bridge reaches Ray and runs the agent."""

    agent: Agent
    #: Ray's address (``auto``, ``ray://host:10001``, ``host:6379``) or ``local``.
    address: str = "auto"
    #: With ``address = "local"``: the worker slots of the private Ray instance.
    num_workers: Optional[int] = None
    #: The most questions this bridge runs at once.
    max_in_flight: int = 1
    #: Seconds from a request to its answer; past them the task is cancelled.
    timeout_secs: float = 590.0
    #: How often Ray re-runs a task whose worker or node was lost.
    max_retries: int = 3
    #: CPUs each task reserves on its node.
    num_cpus_per_task: float = 1.0
    #: The most bytes a command agent may write for one question.
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    #: Passed to ``ray.init`` (for example ``{"working_dir": "."}``).
    runtime_env: Optional[Dict[str, Any]] = None
    #: Extra keyword arguments for ``ray.init`` (tests use them).
    init_kwargs: Dict[str, Any] = field(default_factory=dict)


class Stop(Exception):
    """Raised in the main thread by SIGTERM: cancel everything and exit."""


@dataclass
class _InFlight:
    """A question running as a Ray task."""

    question_id: str
    ref: Any
    deadline: float


class Bridge:
    """Serves the agent protocol on a pair of byte streams, answering through Ray."""

    def __init__(self, options: BridgeOptions) -> None:
        """Checks ``options``; connect with ``connect`` before ``serve``."""
        if options.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if options.timeout_secs <= 0:
            raise ValueError("timeout_secs must be positive")
        if options.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.options = options
        self._ray: Any = None
        self._remote: Any = None
        self._function: Optional[Callable[..., Any]] = None
        self._events: "queue.Queue[tuple]" = queue.Queue()
        self._in_flight: Dict[str, _InFlight] = {}
        self._waiters: List[threading.Thread] = []

    def connect(self) -> None:
        """Joins the Ray cluster (or starts a private instance for ``local``)."""
        import ray  # optional dependency: imported only when used

        self._ray = ray
        # Ship the node code by value: the nodes need Ray, not this package.
        ray.cloudpickle.register_pickle_by_value(node)
        kwargs: Dict[str, Any] = {
            "log_to_driver": False,
            "logging_level": logging.WARNING,
            "include_dashboard": False,
        }
        if self.options.address == "local":
            if self.options.num_workers is not None:
                kwargs["num_cpus"] = self.options.num_workers
        else:
            check_reachable(self.options.address)
            kwargs["address"] = self.options.address
            kwargs.pop("include_dashboard")
        if self.options.runtime_env:
            kwargs["runtime_env"] = self.options.runtime_env
        kwargs.update(self.options.init_kwargs)
        ray.init(**kwargs)
        agent = self.options.agent
        if isinstance(agent, FunctionAgent):
            self._function = agent.load()
            module = sys.modules.get(getattr(self._function, "__module__", "") or "")
            if module is not None and module.__name__ != "__main__":
                ray.cloudpickle.register_pickle_by_value(module)
            target = node.run_function_question
        else:
            target = node.run_command_question
        self._remote = ray.remote(target).options(
            max_retries=self.options.max_retries,
            retry_exceptions=False,
            num_cpus=self.options.num_cpus_per_task,
        )

    def close(self) -> None:
        """Cancels what still runs and leaves the cluster."""
        self._cancel_all()
        if self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()

    # -- serving -----------------------------------------------------------

    def serve(self, requests: IO[bytes], answers: IO[bytes]) -> int:
        """Answers requests until end of input (then drains) or SIGTERM; returns the exit status."""
        writer = AnswerWriter(answers)
        reader = threading.Thread(target=self._read, args=(requests,), daemon=True)
        reader.start()
        waiting: List[Question] = []
        ended = False
        previous = signal.getsignal(signal.SIGTERM)
        on_main_thread = threading.current_thread() is threading.main_thread()
        if on_main_thread:
            signal.signal(signal.SIGTERM, _raise_stop)
        try:
            while True:
                while waiting and len(self._in_flight) < self.options.max_in_flight:
                    question = waiting.pop(0)
                    try:
                        self._submit(question)
                    except Exception as error:  # Ray refused the task; the question fails alone
                        message = f"could not submit the question to Ray: {_first_line(error)}"
                        writer.write([infra_result(question.question_id, message)])
                if ended and not waiting and not self._in_flight:
                    return 0
                event = self._next_event()
                kind = event[0]
                if kind == "eof":
                    ended = True
                if kind == "question":
                    waiting.append(event[1])
                elif kind == "refused":
                    writer.write([infra_result(event[1], event[2])])
                elif kind == "done":
                    flight = self._in_flight.pop(event[1], None)
                    if flight is not None:
                        writer.write(answer_lines(flight.question_id, event[2]))
        except Stop:
            return 143
        except BrokenPipeError:
            return 0
        finally:
            if on_main_thread:
                # A second SIGTERM must not interrupt the cancellation itself.
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self._cancel_all()
            if on_main_thread:
                signal.signal(signal.SIGTERM, previous)

    def _next_event(self) -> tuple:
        """The next event; wakes up now and then so a SIGTERM is handled promptly."""
        while True:
            try:
                return self._events.get(timeout=0.5)
            except queue.Empty:
                continue

    def _read(self, requests: IO[bytes]) -> None:
        """Reader thread: turns request lines into events (documents read here)."""
        while True:
            try:
                line = read_line(requests)
            except RequestError as error:
                self._events.put(("refused", "", str(error)))
                continue
            except (OSError, ValueError):
                line = None
            if line is None:
                self._events.put(("eof",))
                return
            if not line.strip():
                continue
            try:
                self._events.put(("question", parse_request(line)))
            except RequestError as error:
                self._events.put(("refused", question_id_of(line), str(error)))

    def _submit(self, question: Question) -> None:
        """Starts ``question``'s task and the thread that waits for it."""
        options = self.options
        agent = options.agent
        if isinstance(agent, CommandAgent):
            ref = self._remote.remote(
                agent.argv,
                question.node_request(),
                question.skills,
                question.prompts,
                options.timeout_secs,
                options.max_output_bytes,
                agent.cwd,
            )
        else:
            ref = self._remote.remote(
                self._function, agent.spec, question.question, question.skills
            )
        flight = _InFlight(question.question_id, ref, time.monotonic() + options.timeout_secs)
        key = ref.hex()
        self._in_flight[key] = flight
        self._waiters = [waiter for waiter in self._waiters if waiter.is_alive()]
        waiter = threading.Thread(target=self._await, args=(key, flight), daemon=True)
        self._waiters.append(waiter)
        waiter.start()

    def _await(self, key: str, flight: _InFlight) -> None:
        """Waiter thread: the task's answer, or an infrastructure failure saying why."""
        ray = self._ray
        remaining = max(0.0, flight.deadline - time.monotonic())
        try:
            answer = ray.get(flight.ref, timeout=remaining)
            if not isinstance(answer, dict):
                answer = {"error": "the node returned something that is not an answer"}
        except ray.exceptions.GetTimeoutError:
            self._cancel(flight.ref)
            answer = {
                "error": f"no answer within {self.options.timeout_secs:.3f} s; Ray task cancelled"
            }
        except ray.exceptions.TaskCancelledError:
            answer = {"error": "the Ray task was cancelled"}
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as error:
            answer = {
                "error": f"the Ray worker was lost {self.options.max_retries + 1} times "
                f"(retries ran out): {_first_line(error)}"
            }
        except ray.exceptions.RayError as error:
            answer = {"error": f"Ray could not run the question: {_first_line(error)}"}
        self._events.put(("done", key, answer))

    def _cancel(self, ref: Any) -> None:
        """Cancels one task: first politely (its agent is killed), then its worker."""
        ray = self._ray
        try:
            ray.cancel(ref, force=False)
            ready, _ = ray.wait([ref], timeout=CANCEL_GRACE_SECS)
            if not ready:
                ray.cancel(ref, force=True)
        except Exception as error:  # cancelling is best effort; never hide the answer
            logging.getLogger(__name__).warning("could not cancel a task: %s", error)

    def _cancel_all(self) -> None:
        """Cancels every task still in flight and waits for their waiter threads.

        Leaving Ray while a thread still waits on a task can abort the
        process, so the waiters are given the time to see the cancellation.
        """
        flights = list(self._in_flight.values())
        self._in_flight.clear()
        if flights and self._ray is not None:
            self._cancel_refs([flight.ref for flight in flights])
        waiters, self._waiters = self._waiters, []
        deadline = time.monotonic() + CANCEL_GRACE_SECS + WAITER_GRACE_SECS
        for waiter in waiters:
            waiter.join(timeout=max(0.0, deadline - time.monotonic()))

    def _cancel_refs(self, refs: List[Any]) -> None:
        """Cancels ``refs``: politely first, then by killing the workers still running them."""
        ray = self._ray
        for ref in refs:
            try:
                ray.cancel(ref, force=False)
            except Exception:  # best effort, see _cancel
                pass
        try:
            _, pending = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_SECS)
            for ref in pending:
                ray.cancel(ref, force=True)
        except Exception:  # best effort, see _cancel
            pass


def check_reachable(address: str, timeout_secs: float = 10.0) -> None:
    """Raises ``ConnectionError`` when a ``HOST:PORT`` or ``ray://HOST:PORT`` address refuses.

    Ray itself waits minutes on an address where nothing listens (and can
    crash doing so); a plain connection attempt says so at once. Other
    addresses (``auto``) are left to Ray.
    """
    target = address[len("ray://") :] if address.startswith("ray://") else address
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_secs):
            pass
    except OSError as error:
        raise ConnectionError(f"nothing answers at {host}:{port} ({error})") from error


def _raise_stop(signum: int, frame: Any) -> None:
    """SIGTERM handler: unwinds ``serve``, which cancels what is in flight."""
    raise Stop()


def _first_line(error: BaseException) -> str:
    """The first non-empty line of an exception's text."""
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()[:500]
    return type(error).__name__
