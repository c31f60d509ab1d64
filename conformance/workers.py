"""Lanes in worker processes, so that one run uses more than one core.

A ``--jobs`` lane is a driver with its own connection that runs one unit at a time: a corpus
scenario (:func:`conformance.runner.run_scenarios`) or a batch of machine examples
(:func:`conformance.machines.batches._run_round`).  Thread lanes share one interpreter and its
GIL; at loopback speed the harness is CPU-bound, so one process tops out at one core.  Here a
*worker* is a fresh Python process hosting some lanes (one thread each); in the parent each of
its lanes appears as a :class:`RemoteLane`, and where the runner would run a unit on a local
lane it hands the unit to the remote one and waits for the result.  Nothing else changes: the
units, their scopes (named after the corpus index or after the lane's own prefix, unique across
every lane of the run), their seeds and the order results are merged in are those of thread
lanes, so a run's verdict, divergences and replay files do not depend on where a lane lives.

The worker process:

* is started with ``subprocess`` (a fresh interpreter, like multiprocessing's ``spawn``; never
  ``fork``, the parent has threads) and talks to the parent over a private socket pair only
  (``pickle`` frames, :mod:`multiprocessing.connection`); its argv holds the socket's fd
  number, its environment is the parent's minus every variable that holds the token;
* gets the bearer token in a dedicated first message on that socket and wraps it in a
  :class:`~conformance.vocabulary.Secret` at once (a ``Secret`` refuses pickling, on
  purpose); then a :class:`WorkerSetup` -- the run context without the token, the
  capabilities the parent already probed, and one scope prefix per lane;
* streams each step's verdict back as it happens (the parent calls its progress callbacks from
  the thread that receives them), asks the parent whether an ``--expect`` entry names a
  divergence (the parent keeps the callable), and sends each unit's result as a picklable
  value: a :class:`~conformance.runner.ScenarioResult`, or a :class:`BatchResult` (the batch's
  session detached from its driver); an exception that does not pickle (Hypothesis's) comes
  back as a :class:`RemoteError` with the original type name, message and traceback text;
* ignores Ctrl-C (the parent handles it) and exits as soon as its socket closes, so it never
  outlives the parent, whatever ends it.

Each lane has at most one unit in flight and the parent consumes step events as they arrive,
so nothing queues without bound.  Only the memory protocol has worker lanes (its lanes share
one target); the ledger's lanes are separate store instances and stay threads in the parent.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.scenario import Scenario, Step
from conformance.vocabulary import RunContext, Secret, StepOutcome

if TYPE_CHECKING:
    from conformance.machines.batches import _BatchRun
    from conformance.machines.machine import DifferentialMachine
    from conformance.machines.profiles import Profile
    from conformance.machines.session import Finding, MachineSession
    from conformance.runner import OnStep, ScenarioResult

#: Protocols whose lanes can live in worker processes (lanes sharing one target).
WORKER_PROTOCOLS = frozenset({"memory"})
#: Seconds a worker gets to start (import, connect) before the run falls back to threads.
START_TIMEOUT_S = 60.0
#: A worker tells the parent of passing steps in batches: with the first step that comes this
#: long or more after its last message, and at the end of each unit (a step that does not pass
#: is told at once).  Progress then lags by about this much at loopback speed, and not at all
#: against a store whose steps take longer.
STEP_FLUSH_S = 0.05
#: Seconds a stopping worker gets before it is killed.
STOP_TIMEOUT_S = 5.0


class WorkerError(RuntimeError):
    """A worker could not be started, or stopped answering."""


class RemoteError(Exception):
    """An exception raised in a worker, as the parent sees it: ``type_name`` is the original
    type's name (the stand-in's class is named after it too), ``remote_traceback`` the lines of
    the worker's traceback."""

    type_name = "RemoteError"

    def __init__(self, message: str, remote_traceback: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.remote_traceback = list(remote_traceback)

    def __reduce__(self) -> Any:
        return (_remote_error, (self.type_name, str(self), self.remote_traceback))


def _remote_error(type_name: str, message: str, tb: Sequence[str]) -> RemoteError:
    cls = type(type_name, (RemoteError,), {"type_name": type_name})
    made: RemoteError = cls(message, tb)
    return made


def portable_error(exc: BaseException | None) -> BaseException | None:
    """``exc`` itself if it survives a pickle round trip, else a :class:`RemoteError` with the
    same type name and message; either way carrying the traceback's lines."""
    if exc is None:
        return None
    tb = traceback.format_exception(exc)
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and str(back) == str(exc):
            back.remote_traceback = tb  # type: ignore[attr-defined]
            kept: BaseException = back
            return kept
    except Exception:  # noqa: BLE001 -- any failure to pickle means: send a stand-in
        pass
    return _remote_error(type(exc).__name__, str(exc), tb)


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker builds its lanes from (everything but the token)."""

    protocol: str
    ctx: RunContext  # its target's token is None; the worker puts the Secret back
    caps: frozenset[str]
    prefixes: tuple[str, ...]  # one per lane: the scope prefix of what it begins untagged
    #: benchmark-only: "module:function" called with the worker's lane drivers, returning a
    #: function whose (picklable) value the parent collects at the end (:meth:`Worker.collect`)
    hook: str | None = None


@dataclass(frozen=True)
class BatchUnit:
    """One batch of machine examples, as a worker receives it."""

    batch_no: int
    size: int
    seed: int
    set_aside: tuple[str, ...]
    protocol: str
    shrink_budget_s: float
    machine: str  # "module:qualname" of the machine class
    profile: Profile
    window: int = 1  # the session's ``--window``


@dataclass
class BatchResult:
    """A batch's session, detached from its driver: what :func:`_merge_batch` reads."""

    findings: list[Finding] = field(default_factory=list)
    set_aside: dict[str, int] = field(default_factory=dict)
    first_divergence: dict[str, Any] | None = None
    examples: int = 0
    explored: int = 0
    steps: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    indeterminate: StepOutcome | None = None
    harness_error: BaseException | None = None
    error: BaseException | None = None


# --------------------------------------------------------------------------- the parent side


class RemoteLane:
    """A lane living in a worker process, as the runner sees it.  It runs whole units
    (:meth:`run_scenario`, :meth:`explore_batch`), never single steps."""

    remote = True

    def __init__(self, worker: Worker, index: int, protocol: str, caps: frozenset[str]) -> None:
        self.worker = worker
        self.index = index
        self.protocol = protocol
        self._caps = caps
        self._written: dict[str, None] = {}
        self._replies: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
        self._on_step: Callable[[StepOutcome], None] | None = None
        self._is_expected: Callable[[tuple[str, ...]], bool] | None = None

    # -- the Driver protocol (a remote lane runs units, not steps) -------------------------

    def capabilities(self) -> frozenset[str]:
        return self._caps

    def requirements(self, scenario: Scenario) -> set[str]:
        return set(scenario.requires)

    def begin(self, scenario_name: str, tag: str | None = None) -> None:
        raise TypeError("a remote lane runs whole units (run_scenario, explore_batch)")

    def execute(self, index: int, step: Step) -> StepOutcome:
        raise TypeError("a remote lane runs whole units (run_scenario, explore_batch)")

    def scopes_written(self) -> list[str]:
        return list(self._written)

    def close(self) -> None:
        """Nothing of its own: the pool stops the worker."""

    # -- units -----------------------------------------------------------------------------

    def _call(
        self,
        message: tuple[Any, ...],
        on_step: Callable[[StepOutcome], None] | None,
        is_expected: Callable[[tuple[str, ...]], bool] | None = None,
    ) -> Any:
        self._on_step, self._is_expected = on_step, is_expected
        try:
            self.worker.send(message)
            kind, value = self._replies.get()
        finally:
            self._on_step = self._is_expected = None
        if kind == "lost":
            raise WorkerError(value)
        if kind == "failed":
            raise value
        result, written = value
        self._written.update(dict.fromkeys(written))
        return result

    def run_scenario(
        self,
        scenario: Scenario,
        *,
        path: str | None = None,
        on_step: OnStep | None = None,
        tag: str | None = None,
    ) -> ScenarioResult:
        """:func:`conformance.runner.run_scenario` in the worker."""
        from conformance.runner import ScenarioResult

        shown = ScenarioResult(scenario, "pass", path=path)

        def step(outcome: StepOutcome) -> None:
            if on_step is not None:
                on_step(shown, outcome)

        try:
            result: ScenarioResult = self._call(("scenario", self.index, scenario, path, tag), step)
        except Exception as exc:  # a lost worker ends the scenario, never passes it
            return ScenarioResult(
                scenario, "indeterminate", path=path, reason=f"harness error: {exc}"
            )
        result.scenario = scenario  # the parent's own object, not a copy
        return result

    def explore_batch(
        self,
        batch_no: int,
        main: MachineSession,
        cls: type[DifferentialMachine],
        seed: int,
        size: int,
        profile: Profile,
    ) -> _BatchRun:
        """:func:`conformance.machines.batches._explore_batch` in the worker."""
        from conformance.machines.batches import _BatchRun, batch_session

        unit = BatchUnit(
            batch_no,
            size,
            seed,
            tuple(main.set_aside),
            main.protocol,
            main.shrink_budget_s,
            f"{cls.__module__}:{cls.__qualname__}",
            profile,
            main.window,
        )
        session = batch_session(main, self)
        try:
            got: BatchResult = self._call(
                ("batch", self.index, unit), main.on_step, main.is_expected
            )
        except Exception as exc:  # a lost worker is a harness error, never a pass
            session.harness_error = exc
            return _BatchRun(batch_no, session, None)
        session.findings = got.findings
        session.set_aside = got.set_aside
        session.first_divergence = got.first_divergence
        session.examples, session.explored, session.steps = got.examples, got.explored, got.steps
        session.skipped = got.skipped
        session.indeterminate = got.indeterminate
        session.harness_error = got.harness_error
        return _BatchRun(batch_no, session, got.error)

    # -- called from the worker's receiving thread -----------------------------------------

    def _step(self, outcome: StepOutcome) -> None:
        if self._on_step is not None:
            self._on_step(outcome)

    def _ask(self, clauses: tuple[str, ...]) -> bool:
        return bool(self._is_expected is not None and self._is_expected(clauses))


def _clean_env(token: str | None) -> dict[str, str]:
    """The parent's environment without any variable holding the token, and with this
    memspec's package directory first on the module path."""
    env = {k: v for k, v in os.environ.items() if not token or token not in v}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


_BOOT = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "from conformance.workers import worker_main; worker_main()"
)


class Worker:
    """One worker process and the parent's end of its socket."""

    def __init__(self, number: int, token: Secret | None) -> None:
        self.number = number
        self.lanes: list[RemoteLane] = []
        self.cpu_s: float | None = None
        self.collected: Any = None
        self._send_lock = threading.Lock()
        self._ready: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._lost: str | None = None
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        secret = token.reveal() if token is not None else None
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else subprocess.DEVNULL,
                env=_clean_env(secret),
                close_fds=True,
            )
        except BaseException:
            self.conn.close()
            raise
        finally:
            theirs.close()
        # The token goes first, alone, as bytes: never in argv, never in the environment.
        self.send_bytes(b"\x00" if secret is None else b"\x01" + secret.encode())
        self._receiver: threading.Thread | None = None

    def send(self, message: Any) -> None:
        with self._send_lock:
            if self._lost is not None:
                raise WorkerError(self._lost)
            self.conn.send(message)

    def send_bytes(self, data: bytes) -> None:
        with self._send_lock:
            self.conn.send_bytes(data)

    def setup(self, setup: WorkerSetup) -> None:
        self.lanes = [
            RemoteLane(self, i, setup.protocol, setup.caps) for i in range(len(setup.prefixes))
        ]
        self.send(("setup", setup))
        self._receiver = threading.Thread(
            target=self._receive, name=f"memspec-worker-{self.number}", daemon=True
        )
        self._receiver.start()

    def wait_ready(self, timeout: float) -> None:
        try:
            kind, value = self._ready.get(timeout=timeout)
        except queue.Empty:
            raise WorkerError(f"worker {self.number} did not start within {timeout:g}s") from None
        if kind != "ready":
            raise WorkerError(f"worker {self.number} did not start: {value}")

    def _receive(self) -> None:
        reason = "the worker process ended"
        try:
            while True:
                msg = self.conn.recv()
                kind = msg[0]
                if kind == "s":  # steps: (s, lane, [(index, op, verdict, clauses, reason)])
                    _, lane, steps = msg
                    for index, op, verdict, clauses, why in steps:
                        self.lanes[lane]._step(
                            StepOutcome(
                                index=index, op=op, verdict=verdict, clauses=clauses, reason=why
                            )
                        )
                elif kind == "ask":
                    _, lane, clauses = msg
                    self.send(("answer", lane, self.lanes[lane]._ask(clauses)))
                elif kind in ("done", "failed"):
                    self.lanes[msg[1]]._replies.put((kind, msg[2]))
                elif kind in ("ready", "broken"):
                    self._ready.put((kind, msg[1]))
                elif kind == "bye":
                    self.cpu_s, self.collected = msg[1], msg[2]
                    reason = "the worker stopped"
                    return
        except (EOFError, OSError) as exc:
            reason = f"worker {self.number} ended: {type(exc).__name__}"
        except Exception as exc:  # noqa: BLE001 -- an unreadable message ends the worker
            reason = f"worker {self.number}: unreadable message: {type(exc).__name__}: {exc}"
        finally:
            with self._send_lock:
                self._lost = reason
            self._ready.put(("broken", reason))
            for lane in self.lanes:
                try:
                    lane._replies.put_nowait(("lost", reason))
                except queue.Full:
                    pass

    def stop(self) -> None:
        """Ask the worker to stop (it sends its CPU time and what a hook collected), then make
        sure it is gone."""
        try:
            self.send(("stop",))
        except (WorkerError, OSError):
            pass
        if self._receiver is not None:
            self._receiver.join(STOP_TIMEOUT_S)
        self.kill()

    def kill(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


class WorkerPool:
    """The worker processes of one run.  Start them early (:meth:`start`: the interpreters
    import while the parent probes the target), give them their lanes once the capabilities
    are known (:meth:`lanes`), and :meth:`close` at the end -- always, in a ``finally``."""

    def __init__(self) -> None:
        self.workers: list[Worker] = []
        self.started_s = 0.0  # from start() to every worker ready

    def start(self, procs: int, token: Secret | None) -> None:
        self._t0 = time.perf_counter()
        try:
            for n in range(procs):
                self.workers.append(Worker(n + 1, token))
        except BaseException:
            self.close()
            raise

    def lanes(
        self,
        protocol: str,
        ctx: RunContext,
        caps: frozenset[str],
        jobs: int,
        *,
        hook: str | None = None,
    ) -> list[RemoteLane]:
        """``jobs`` lanes spread evenly over the workers (the first ones get one more),
        lane ``k`` of worker ``w`` naming its scopes ``w<w>l<k>.<count>``.  Raises
        :class:`WorkerError` if a worker does not start (the pool is closed then)."""
        public = dataclasses.replace(ctx, target=dataclasses.replace(ctx.target, token=None))
        count = len(self.workers)
        try:
            for w in self.workers:
                n = jobs // count + (1 if w.number <= jobs % count else 0)
                prefixes = tuple(f"w{w.number}l{k + 1}." for k in range(n))
                w.setup(WorkerSetup(protocol, public, caps, prefixes, hook))
            deadline = time.perf_counter() + START_TIMEOUT_S
            for w in self.workers:
                w.wait_ready(max(0.1, deadline - time.perf_counter()))
        except BaseException:
            self.close()
            raise
        self.started_s = time.perf_counter() - self._t0
        # Interleave: lane 1 of each worker first, so a window of fewer units than lanes is
        # spread over the processes.
        by_worker = [w.lanes for w in self.workers]
        width = max((len(ls) for ls in by_worker), default=0)
        return [ls[k] for k in range(width) for ls in by_worker if k < len(ls)]

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers]

    def cpu_s(self) -> float:
        """The workers' CPU seconds (known once they stopped)."""
        return sum(w.cpu_s or 0.0 for w in self.workers)

    def collected(self) -> list[Any]:
        return [w.collected for w in self.workers]

    def close(self) -> None:
        """Stop every worker (in parallel); idempotent."""
        threads = [threading.Thread(target=w.stop, daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for w in self.workers:  # a stop that raised still leaves no process behind
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()


# --------------------------------------------------------------------------- the worker side


def _lane_driver(setup: WorkerSetup, ctx: RunContext, prefix: str) -> Any:
    """One lane's driver, with the parent's probed capabilities and its own scope prefix."""
    if setup.protocol != "memory":
        raise WorkerError(f"no worker lanes for the {setup.protocol} protocol")
    from conformance.drivers.memory.driver import MemoryDriver

    driver = MemoryDriver(ctx, probed=setup.caps)
    driver._lane_prefix = prefix  # as MemoryDriver.lane() names its lanes
    return driver


class _WorkerLane:
    def __init__(self, index: int, driver: Any, out: Callable[[Any], None]) -> None:
        self.index = index
        self.driver = driver
        self.out = out
        self.inbox: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
        self.answers: queue.Queue[bool] = queue.Queue()
        self.reported = 0  # scopes written already sent to the parent
        self._steps: list[tuple[Any, ...]] = []  # steps not yet told to the parent
        self._flushed = time.monotonic()

    def step(self, outcome: StepOutcome) -> None:
        """Tell the parent of a step: passing ones in batches (:data:`STEP_FLUSH_S`; one
        message instead of one per step at loopback speed), any other at once."""
        quiet = outcome.verdict == "pass"
        self._steps.append(
            (
                outcome.index,
                outcome.op,
                outcome.verdict,
                () if quiet else tuple(outcome.clauses),
                "" if quiet else outcome.reason,
            )
        )
        if not quiet or time.monotonic() - self._flushed >= STEP_FLUSH_S:
            self.flush()

    def flush(self) -> None:
        """Send the steps not yet told (before any other message of this lane, so the parent
        sees every step of a unit before its result or a question about it)."""
        self._flushed = time.monotonic()
        if self._steps:
            steps, self._steps = self._steps, []
            self.out(("s", self.index, steps))

    def is_expected(self, clauses: tuple[str, ...]) -> bool:
        self.flush()
        self.out(("ask", self.index, tuple(clauses)))
        return self.answers.get()

    def new_scopes(self) -> list[str]:
        written: list[str] = self.driver.scopes_written()
        fresh = written[self.reported :]
        self.reported = len(written)
        return fresh

    def run(self) -> None:
        while True:
            msg = self.inbox.get()
            if msg is None:
                return
            try:
                result = self.unit(msg)
            except BaseException as exc:  # noqa: BLE001 -- reported, the lane goes on
                self.flush()
                self.out(("failed", self.index, portable_error(exc)))
                continue
            self.flush()
            self.out(("done", self.index, (result, self.new_scopes())))

    def unit(self, msg: tuple[Any, ...]) -> Any:
        if msg[0] == "scenario":
            from conformance.runner import run_scenario

            _, _, scenario, path, tag = msg
            result = run_scenario(
                self.driver, scenario, path=path, on_step=lambda _r, o: self.step(o), tag=tag
            )
            return result
        unit: BatchUnit = msg[2]
        return self.batch(unit)

    def batch(self, unit: BatchUnit) -> BatchResult:
        from conformance.machines.batches import _explore_batch, machine_settings
        from conformance.machines.session import MachineSession

        module_name, _, qualname = unit.machine.partition(":")
        cls: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        main = MachineSession(
            self.driver,
            unit.protocol,
            unit.shrink_budget_s,
            self.step,
            is_expected=self.is_expected,
            set_aside=dict.fromkeys(unit.set_aside, 0),
            window=unit.window,
        )
        run = _explore_batch(
            unit.batch_no,
            self.driver,
            main,
            cls,
            unit.seed,
            unit.size,
            machine_settings(unit.profile),
            unit.profile,
        )
        s = run.session
        return BatchResult(
            findings=s.findings,
            set_aside=s.set_aside,
            first_divergence=s.first_divergence,
            examples=s.examples,
            explored=s.explored,
            steps=s.steps,
            skipped=s.skipped,
            indeterminate=s.indeterminate,
            harness_error=portable_error(s.harness_error),
            error=portable_error(run.error),
        )


def worker_main(argv: Sequence[str] | None = None) -> None:
    """The worker process: ``python -c <boot> FD``."""
    args = list(sys.argv[1:] if argv is None else argv)
    conn = Connection(int(args[0]))
    lock = threading.Lock()

    def out(message: Any) -> None:
        with lock:
            conn.send(message)

    try:
        first = conn.recv_bytes()
        token = Secret(first[1:].decode()) if first[:1] == b"\x01" else None
        del first
        # Load what every unit needs while the parent still probes the target.
        importlib.import_module("conformance.runner")
        importlib.import_module("conformance.machines.batches")
        setup: WorkerSetup = conn.recv()[1]
        importlib.import_module("conformance.machines.memory")
        ctx = dataclasses.replace(
            setup.ctx, target=dataclasses.replace(setup.ctx.target, token=token)
        )
        lanes = [
            _WorkerLane(i, _lane_driver(setup, ctx, prefix), out)
            for i, prefix in enumerate(setup.prefixes)
        ]
        collect: Callable[[], Any] | None = None
        if setup.hook:
            module_name, _, attr = setup.hook.partition(":")
            collect = getattr(importlib.import_module(module_name), attr)(
                [ln.driver for ln in lanes]
            )
    except EOFError:
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 -- told to the parent, which falls back
        try:
            out(("broken", f"{type(exc).__name__}: {exc}"))
        finally:
            os._exit(1)
    # Everything loaded so far lives as long as the worker: out of the collector's sight, a
    # full collection (Hypothesis makes one when a lane first runs it) walks only what the
    # run makes.  Measured by benchmarks/bench_harness.py: 3-5 % less CPU per step.
    gc.freeze()
    threads = [threading.Thread(target=ln.run, daemon=True) for ln in lanes]
    for t in threads:
        t.start()
    out(("ready", os.getpid()))
    _serve(conn, lanes)
    _stop_lanes(lanes, threads)
    try:
        out(("bye", time.process_time(), collect() if collect is not None else None))
    except Exception as exc:  # noqa: BLE001 -- a hook that fails must not hide the run
        out(("bye", time.process_time(), f"hook failed: {type(exc).__name__}: {exc}"))
    conn.close()
    os._exit(0)


def _serve(conn: Connection, lanes: list[_WorkerLane]) -> None:
    """Hand the parent's messages to the lanes until it says stop; the worker exits at once
    when the parent is gone."""
    try:
        while True:
            msg = conn.recv()
            if msg[0] in ("scenario", "batch"):
                lanes[msg[1]].inbox.put(msg)
            elif msg[0] == "answer":
                lanes[msg[1]].answers.put(msg[2])
            elif msg[0] == "stop":
                break
    except (EOFError, OSError):
        os._exit(0)  # the parent is gone: so is this worker, at once


def _stop_lanes(lanes: list[_WorkerLane], threads: list[threading.Thread]) -> None:
    """Tell every lane to stop and wait a moment for them; their drivers are closed once all
    have stopped."""
    for ln in lanes:
        ln.inbox.put(None)
    # At the end of a run the lanes are idle; after an interrupt a lane may be mid-unit, whose
    # result nobody waits for any more: it is cut short by the exit below.
    deadline = time.monotonic() + 1.0
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    for ln in lanes:
        if not any(t.is_alive() for t in threads):
            ln.driver.close()


def is_remote(lane: object) -> bool:
    return getattr(lane, "remote", False) is True


__all__ = [
    "WORKER_PROTOCOLS",
    "BatchResult",
    "BatchUnit",
    "RemoteError",
    "RemoteLane",
    "Worker",
    "WorkerError",
    "WorkerPool",
    "WorkerSetup",
    "is_remote",
    "portable_error",
]
