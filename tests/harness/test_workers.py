"""Lanes in worker processes (``--procs``): the token reaches a worker only over its private
socket, a worker never outlives the run (Ctrl-C included), a worker's exception comes back
with its type name, and a worker that cannot start leaves the lanes as threads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conformance.scenario import Scenario, Step
from conformance.vocabulary import RunContext, Secret, TargetConfig
from conformance.workers import RemoteLane, WorkerPool, portable_error
from tests.common.engine import run_engine
from tests.common.memory_harness import TOKEN, bundled_store, make_driver

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def worker_lanes(run_id: str, lanes: int) -> Iterator[tuple[WorkerPool, list[Any]]]:
    """A bundled store, a driver that probed it, and one worker process holding ``lanes``
    lanes on it; all stopped at the end."""
    with bundled_store() as url:
        driver = make_driver(url)
        ctx = RunContext(run_id, TargetConfig(url, Secret(TOKEN), 10.0))
        pool = WorkerPool()
        try:
            pool.start(1, ctx.target.token)
            yield pool, pool.lanes("memory", ctx, driver.capabilities(), lanes)
        finally:
            pool.close()
            driver.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.clause("MEM-WIRE.3")
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_token_reaches_the_worker_only_over_its_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSPEC_TEST_TOKEN_VAR", TOKEN)  # as --token-env leaves it
    with worker_lanes("memspec-memtest01", 1) as (pool, (lane,)):
        for pid in pool.pids():
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert TOKEN.encode() not in argv
            assert TOKEN.encode() not in environ
            assert b"MEMSPEC_TEST_TOKEN_VAR" not in environ
        # ... and yet the worker holds it: an authenticated write passes there.
        scenario = Scenario(
            protocol="memory",
            name="w",
            clauses=["MEM-WIRE.2"],
            steps=[
                Step(
                    op="write",
                    args={
                        "scopeKey": "{scope:a}",
                        "records": [{"kind": "fact", "text": "deploy prod"}],
                    },
                )
            ],
        )
        assert isinstance(lane, RemoteLane)
        result = lane.run_scenario(scenario, tag="c0")
        assert result.verdict == "pass", result.reason
        assert lane.scopes_written() == ["org:memspec-memtest01-c0-a"]
    assert not any(_alive(pid) for pid in pool.pids())


@pytest.mark.clause()
def test_an_exception_that_does_not_pickle_keeps_its_name() -> None:
    class Unpicklable(Exception):
        def __init__(self, a: int, b: int) -> None:
            super().__init__(f"broke at {a}/{b}")

    try:
        raise Unpicklable(1, 2)
    except Unpicklable as exc:
        back = portable_error(exc)
    assert back is not None
    assert type(back).__name__ == "Unpicklable"
    assert str(back) == "broke at 1/2"
    assert any("raise Unpicklable" in line for line in getattr(back, "remote_traceback", []))
    import pickle

    again = pickle.loads(pickle.dumps(back))
    assert type(again).__name__ == "Unpicklable" and str(again) == "broke at 1/2"


@pytest.mark.clause()
def test_workers_that_cannot_start_leave_thread_lanes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("conformance.workers._BOOT", "import sys; sys.exit(3)")
    with bundled_store() as url:
        config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store")
        data = run_engine(
            config, spec="memory", machines=False, report_dir=None, quiet=True, jobs=3, procs=2
        ).data
    assert data["exit_code"] == 0
    assert data["options"]["procs"] == 0
    assert any("lanes run as threads" in n for n in data["notes"])


@pytest.mark.clause()
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_no_worker_outlives_ctrl_c(tmp_path: Path) -> None:
    """``memspec run`` in a session of its own, Ctrl-C to the whole group (as a terminal
    sends it) once its workers run: the run ends, and so do they."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "run", "--spec", "memory", "--profile",
         "deep", "--jobs", "4", "--procs", "2", "--quiet", "--report", str(tmp_path / "r")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.2)
            workers = [
                int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == proc.pid
            ]
        assert len(workers) == 2, "the run did not start its workers"
        time.sleep(1.0)  # lanes at work
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return int(f.read().split(")")[-1].split()[1])
    except (FileNotFoundError, ValueError, IndexError):
        return None


@pytest.mark.clause()
def test_a_worker_that_dies_makes_its_unit_indeterminate_not_a_pass() -> None:
    with worker_lanes("memspec-memtest01", 1) as (pool, (lane,)):
        scenario = Scenario(
            protocol="memory",
            name="dies-mid-unit",
            clauses=["MEM-WIRE.1"],
            steps=[Step(op="healthz", args={}), Step(op="pause_ms", args={"ms": 20_000})],
        )
        assert isinstance(lane, RemoteLane)
        # the worker dies while the unit runs (in its pause): the lane must not wait on
        kill = threading.Timer(1.0, pool.workers[0].proc.kill)
        kill.start()
        started = time.monotonic()
        result = lane.run_scenario(scenario, tag="c0")
        kill.join()
        assert time.monotonic() - started < 15
    assert result.verdict == "indeterminate"
    assert result.reason.startswith("harness error: worker 1 ended")


@pytest.mark.clause()
def test_progress_hears_of_every_step_a_worker_ran_before_its_result() -> None:
    """Passing steps reach the parent in batches (conformance.workers.STEP_FLUSH_S), but every
    step of every unit reaches the progress callback, in order, before the unit's result; a step
    that does not pass arrives on its own with its clauses."""
    from conformance.runner import load_corpus, run_scenarios

    corpus = [(sc, p) for sc, p in load_corpus(["memory"])][:12]
    seen: list[tuple[str, int, str]] = []
    at_result: dict[str, int] = {}

    def on_step(result: object, outcome: object) -> None:
        seen.append((result.scenario.name, outcome.index, outcome.verdict))  # type: ignore[attr-defined]

    def on_result(result: object) -> None:
        name = result.scenario.name  # type: ignore[attr-defined]
        at_result[name] = sum(1 for n, _, _ in seen if n == name)

    with worker_lanes("memspec-memtest02", 2) as (_pool, lanes):
        results = run_scenarios({"memory": lanes}, corpus, on_step=on_step, on_result=on_result)
    assert len(results) == len(corpus)
    for result in results:
        name = result.scenario.name
        mine = [(i, v) for n, i, v in seen if n == name]
        assert mine == [(o.index, o.verdict) for o in result.outcomes], name
        assert at_result[name] == len(result.outcomes), name
