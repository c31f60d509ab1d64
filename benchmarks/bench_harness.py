"""How much the harness costs: differential steps/s vs the raw request rate of the same requests.

The run is split into ROUNDS interleaved rounds, so that a change of load on the machine
during the run hits both sides alike.  Each round:

1. *differential*: against a fresh bundled store, the memory corpus and a fixed-seed run of
   the memory state machine (seed differs per round) go through the driver — model, oracle,
   id and time correspondence, Hypothesis, and the spacing of mutating steps — the way
   ``memspec run`` runs them: on its lanes for ``--jobs`` and ``--window`` (defaults:
   ``memspec run``'s; with a window open, two lanes per job and the check ``/list`` written in
   the same write as its step), each a driver with its own connection, corpus scenarios and
   machine batches side by side.
   Every request each lane sends is recorded (settling reads included; the target probe,
   which happens before the clock starts, is not).
2. *raw*: against another fresh bundled store, the very same requests are sent again by the
   same client class with the same concurrency — each lane's requests, in their order, on a
   connection of its own, the lanes side by side, a pair written in one write written so
   again — with no model, no oracle, no Hypothesis and no spacing.

The ratio is (differential steps / differential wall seconds) ÷ (raw requests / raw wall
seconds): the numerator is the rate at which the harness gets steps judged, the denominator
the rate at which the same client can merely send the same requests over the same number of
connections.  ``--jobs 1`` gives the figure of a single driver (the definition before lanes).

**Where the store runs** (``--store``).  ``process`` (the headline): each side's fresh store is
a process of its own (``start_server`` in a child ``python``, ephemeral 127.0.0.1 port), as a
deployed store is, so the harness's CPU and the store's overlap on the cores and neither holds
the other's GIL.  This is the honest figure for "a harness against a store": no user points
memspec at a store inside memspec's own interpreter.  It is also the stricter one: the raw
client does little, so the raw side runs at about the store's own pace (client and store
overlap on two cores), while the differential side runs at the pace of the harness's CPU per
step (one GIL for every lane) — the ratio is close to the store's CPU per request ÷ the
harness's CPU per step.  ``thread`` (what ``memspec run`` does with the bundled store, and the
only figure before this option): the store is a thread of the benchmark's process, one GIL for
both, so each side runs at the pace of client (or harness) *plus* store — the store's CPU is
added to both sides and dilutes the harness's share.  ``both`` (the default) runs the two
arrangements in the same interleaved rounds and prints both, the out-of-process ratio as the
headline.

Reported per arrangement, summed over the rounds: the issue's ratio (differential steps/s ÷ raw
requests/s, goal ≥ 0.7), the same with the spacing sleeps taken out, where the differential
time goes (spacing sleeps, HTTP, model + oracle, the rest — Hypothesis, the runner, the
driver), and CPU: with the store in its own process, the benchmark's process CPU is the
harness alone, so the harness's CPU per step, the raw client's per request and the store's
per request (the child's own CPU) are printed; with the store in-process, the whole process
(store thread included) and the harness's main thread.  The spacing (3 ms between mutating
steps on one scope, see ``conformance.oracle.memory``) is the price of an unambiguous event
order and is part of the differential side.

Run: ``.venv/bin/python -m benchmarks.bench_harness [--jobs N] [--window N]
[--store both|process|thread]`` (about 40–60 s with both; half that with one).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from benchmarks.lane_recorder import OracleTimer, Recorder, Sent
from conformance.drivers.base import Driver
from conformance.drivers.memory.driver import MemoryDriver
from conformance.embedded.server import start_server
from conformance.engine.config import DEFAULT_JOBS, DEFAULT_WINDOW
from conformance.engine.drivers import default_procs, shared_lanes
from conformance.machines import run_machine
from conformance.machines.profiles import Profile
from conformance.runner import load_corpus, run_scenarios
from conformance.scenario import Scenario
from conformance.targets.base import HttpTarget
from conformance.vocabulary import SPACING_S, RunContext, Secret, TargetConfig
from conformance.workers import WorkerPool

SEED = 424242
ROUNDS = 3
EXAMPLES_PER_LANE = 8  # examples per round: this many per lane (each lane has work)
STEPS_PER_EXAMPLE = 25
GOAL = 0.7
#: One token for every store of the run: each new token registered with conformance.scrub
#: rebuilds its pattern over every token so far, a cost a real run (one token) never pays.
TOKEN = secrets.token_urlsafe(16)


@dataclass
class Side:
    """Totals of one side over the rounds."""

    requests: int = 0
    steps: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0  # the benchmark's process (with an in-process store: its thread too)
    thread_cpu_s: float = 0.0  # the harness (main) thread alone
    store_cpu_s: float = 0.0  # the store's own process (store in a process of its own only)
    slept_s: float = 0.0
    http_s: float = 0.0
    oracle_s: float = 0.0
    worker_cpu_s: float = 0.0  # the worker processes' CPU (lanes in workers only)
    worker_start_s: list[float] = field(default_factory=list)  # start to every worker ready
    per_round: list[float] = field(default_factory=list)  # wall seconds


class Store:
    """A fresh bundled store for one side of one round: ``url``, and ``cpu()`` — the CPU
    seconds its own process has used so far (``None`` for a store in the harness's process,
    whose CPU cannot be told apart from the harness's)."""

    def __init__(self, url: str, child: subprocess.Popen[str] | None = None) -> None:
        self.url = url
        self._child = child

    def cpu(self) -> float | None:
        if self._child is None:
            return None
        assert self._child.stdin is not None and self._child.stdout is not None
        self._child.stdin.write("cpu\n")
        self._child.stdin.flush()
        return float(self._child.stdout.readline())


#: The out-of-process store: prints its URL, then answers each line on stdin with its own CPU
#: seconds; stops at the end of stdin.  Run with ``python -c`` (nothing of the harness loaded).
_SERVE = """
import os, sys, time
from conformance.embedded.server import start_server
with start_server(token=os.environ["MEMSPEC_BENCH_TOKEN"]) as handle:
    print(handle.url, flush=True)
    for _line in sys.stdin:
        print(time.process_time(), flush=True)
"""


@contextmanager
def store(token: str, separate: bool) -> Iterator[Store]:
    """A fresh bundled store: a thread of this process, or (``separate``) a process of its own
    on an ephemeral 127.0.0.1 port, as a deployed store is."""
    if not separate:
        with start_server(token=token) as handle:
            yield Store(handle.url)
        return
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMSPEC_BENCH_TOKEN": token},
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        url = child.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise SystemExit(f"the out-of-process store did not start (it said {url!r})")
        yield Store(url, child)
    finally:
        child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()


def differential(
    round_no: int,
    corpus: list[Scenario],
    side: Side,
    jobs: int,
    procs: int,
    separate: bool,
    window: int = 1,
) -> list[list[Sent]]:
    """One round's differential side, arranged as ``memspec run`` arranges its lanes for
    ``--jobs jobs --window window``: its lanes (``shared_lanes``), in ``procs`` worker processes
    (0: threads of this process), the machine with ``window`` steps in flight.  Every lane's
    requests are recorded -- in a worker by the ``benchmarks.lane_recorder`` hook -- and returned
    per lane, in lane order."""
    lane_count = shared_lanes(jobs, window)
    token = TOKEN
    seed = SEED + round_no
    profile = Profile(
        "bench",
        max_examples=EXAMPLES_PER_LANE * jobs,  # the same work whatever the window
        step_count=STEPS_PER_EXAMPLE,
        budget_s=1e9,
        fixed_seed=seed,
    )
    with store(token, separate) as st:
        ctx = RunContext(f"memspec-bench{round_no:04d}", TargetConfig(st.url, Secret(token)))
        pool: WorkerPool | None = None
        if procs > 0:
            pool = WorkerPool()
            pool.start(procs, ctx.target.token)  # the workers import while the driver probes
        driver = MemoryDriver(ctx)
        lanes: list[Driver]
        recs: list[Recorder] = []
        try:
            if pool is not None:
                lanes = list(
                    pool.lanes(
                        "memory", ctx, driver.capabilities(), lane_count,
                        hook="benchmarks.lane_recorder:install",
                    )
                )  # fmt: skip
                side.worker_start_s.append(pool.started_s)
            else:
                lanes = [driver, *(driver.lane() for _ in range(lane_count - 1))]
                recs = [Recorder(d.target) for d in lanes]  # type: ignore[attr-defined]
            steps = 0
            with OracleTimer() as timer:
                store0 = st.cpu()
                cpu0, tcpu0 = time.process_time(), time.thread_time()
                started = time.perf_counter()
                for result in run_scenarios({"memory": lanes}, [(sc, "") for sc in corpus]):
                    steps += len(result.outcomes)
                    if result.verdict == "fail":
                        raise SystemExit(
                            f"corpus diverged against the bundled store: {result.reason}"
                        )
                m = run_machine("memory", lanes[0], profile, seed, lanes=lanes[1:], window=window)
                steps += m.steps
                elapsed = time.perf_counter() - started
                cpu, tcpu = time.process_time() - cpu0, time.thread_time() - tcpu0
                store1 = st.cpu()
        finally:
            if pool is not None:
                pool.close()
            for d in [driver, *lanes[1:]] if pool is None else [driver]:
                d.close()
    if m.verdict != "pass":
        raise SystemExit(f"the machine did not pass against the bundled store: {m.reason}")
    if pool is not None:
        got = pool.collected()
        if not all(isinstance(g, dict) for g in got):
            raise SystemExit(f"a worker's recorder failed: {got}")
        sent = [lane_sent for g in got for lane_sent in g["sent"]]
        side.http_s += sum(g["http_s"] for g in got)
        side.oracle_s += sum(g["oracle_s"] for g in got)
        side.slept_s += sum(g["slept_s"] for g in got)
        side.worker_cpu_s += sum(g["cpu_s"] for g in got)
    else:
        sent = [r.sent for r in recs]
        side.http_s += sum(r.http_s for r in recs)
        side.oracle_s += timer.seconds
        side.slept_s += sum(d.spacing_slept_s for d in lanes)  # type: ignore[attr-defined]
    side.requests += sum(s.count for x in sent for s in x)
    side.steps += steps
    side.wall_s += elapsed
    side.cpu_s += cpu
    side.thread_cpu_s += tcpu
    if store0 is not None and store1 is not None:
        side.store_cpu_s += store1 - store0
    side.per_round.append(elapsed)
    return sent


def _replay(target: HttpTarget, sent: list[Sent]) -> None:
    """One lane's requests in order; a group written ahead is written in one write again, and
    its answers read right after."""
    for s in sent:
        if s.kind == "ahead":
            requests = s.kwargs["requests"]
            if target.write_ahead(requests):
                for _ in requests:
                    target.read_ahead()
            else:
                for method, path, body in requests:
                    target.request(method, path, body)
        elif s.kind == "raw":
            target.raw(s.method, s.path, **s.kwargs)
        else:
            kwargs = dict(s.kwargs)
            args = kwargs.pop("args", ())
            target.request(s.method, s.path, *args, **kwargs)


def raw_replay(per_lane: list[list[Sent]], side: Side, separate: bool) -> None:
    """Each lane's requests in order on a connection of its own, the lanes side by side."""
    token = TOKEN
    with store(token, separate) as st:
        targets = [HttpTarget(TargetConfig(st.url, Secret(token))) for _ in per_lane]
        threads = [
            threading.Thread(target=_replay, args=(t, sent), daemon=True)
            for t, sent in zip(targets, per_lane, strict=True)
            if sent
        ]
        store0 = st.cpu()
        cpu0, tcpu0 = time.process_time(), time.thread_time()
        started = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - started
        cpu, tcpu = time.process_time() - cpu0, time.thread_time() - tcpu0
        store1 = st.cpu()
        for t in targets:
            t.close()
    side.requests += sum(s.count for sent in per_lane for s in sent)
    side.wall_s += elapsed
    side.cpu_s += cpu
    side.thread_cpu_s += tcpu
    if store0 is not None and store1 is not None:
        side.store_cpu_s += store1 - store0
    side.http_s += elapsed
    side.per_round.append(elapsed)


def ratio_of(diff: Side, raw: Side) -> float:
    """Differential steps/s ÷ raw requests/s."""
    return (diff.steps / diff.wall_s) / (raw.requests / raw.wall_s)


def report(title: str, diff: Side, raw: Side, jobs: int, separate: bool) -> float:
    """Print one arrangement's figures; returns its ratio."""
    n = diff.requests
    steps_rate = diff.steps / diff.wall_s
    raw_rate = n / raw.wall_s
    # the sleeps are summed over the lanes, which sleep side by side: a lane's average share
    busy_s = diff.wall_s - diff.slept_s / jobs
    ratio = ratio_of(diff, raw)
    ratio_busy = (diff.steps / busy_s) / raw_rate
    # per round, on that round's requests: raw seconds / differential seconds
    per_round = [
        raw_s / diff_s for raw_s, diff_s in zip(raw.per_round, diff.per_round, strict=True)
    ]
    rest_s = jobs * diff.wall_s - diff.slept_s - diff.http_s - diff.oracle_s

    print(f"-- {title}")
    print(f"{'':40} {'steps':>6} {'requests':>9} {'wall s':>7} {'rate/s':>7} {'cpu s':>6}")
    print(
        f"{'differential (model+oracle+spacing)':40} {diff.steps:>6} {n:>9}"
        f" {diff.wall_s:>7.2f} {steps_rate:>7.0f} {diff.cpu_s:>6.2f}   (steps/s)"
    )
    print(
        f"{'raw: same requests, back to back':40} {'':>6} {n:>9}"
        f" {raw.wall_s:>7.2f} {raw_rate:>7.0f} {raw.cpu_s:>6.2f}   (requests/s)"
    )
    print(
        f"differential time, by where it goes (summed over the lanes, as a share of {jobs} x wall):"
        if jobs > 1
        else "differential wall time, by where it goes:"
    )
    for label, secs in (
        ("HTTP (the same requests)", diff.http_s),
        ("spacing sleeps (3 ms per scope)", diff.slept_s),
        ("model + oracle", diff.oracle_s),
        ("Hypothesis, runner, driver, waiting", rest_s),
    ):
        print(
            f"  {label:38} {secs:>7.2f} s  {secs / (jobs * diff.wall_s):>4.0%}"
            f"  {secs / diff.steps * 1000:>6.3f} ms/step"
        )
    print(
        f"ratio differential steps/s / raw requests/s:  {ratio:.2f}"
        f"  (goal >= {GOAL}: {'met' if ratio >= GOAL else 'NOT met'})"
    )
    print(
        f"  per round, requests/s vs requests/s:        "
        f"{min(per_round):.2f} .. {max(per_round):.2f} (median {statistics.median(per_round):.2f})"
    )
    print(f"ratio without the spacing sleeps:             {ratio_busy:.2f}")
    if diff.worker_start_s:
        print(
            f"CPU, worker processes (the lanes): {diff.worker_cpu_s / diff.steps * 1000:.3f} ms"
            f" per differential step; parent process: {diff.cpu_s / diff.steps * 1000:.3f} ms"
            " (it hands out units" + (")" if separate else "; and the store's thread)")
        )
        print(
            f"worker start (interpreter, imports, lanes ready): "
            f"{statistics.median(diff.worker_start_s):.2f} s median per round (untimed)"
        )
    if separate:
        harness_cpu = diff.cpu_s + diff.worker_cpu_s
        print(
            f"CPU, harness (all its processes): {harness_cpu / diff.steps * 1000:.3f} ms per"
            f" differential step, {raw.cpu_s / n * 1000:.3f} ms per raw request (the client alone)"
        )
        print(
            f"CPU, store process:   {diff.store_cpu_s / n * 1000:.3f} ms per request"
            f" (differential side), {raw.store_cpu_s / n * 1000:.3f} ms (raw side)"
        )
    else:
        print(
            f"CPU ratio, whole process (raw / diff per request): {raw.cpu_s / diff.cpu_s:.2f}"
            "  (the store's thread included)"
        )
        print(
            f"CPU ratio, harness thread (raw / diff per request): "
            f"{raw.thread_cpu_s / diff.thread_cpu_s:.2f}"
        )
    return ratio


ARRANGEMENTS = {
    "process": [True],
    "thread": [False],
    "both": [True, False],
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_harness")
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="lanes (memspec run --jobs)")
    ap.add_argument(
        "--procs",
        type=int,
        default=None,
        help="worker processes for the lanes (memspec run --procs; default: its default)",
    )
    ap.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        help="steps in flight per lane (memspec run --window; default: its default)",
    )
    ap.add_argument(
        "--store",
        choices=sorted(ARRANGEMENTS),
        default="both",
        help="where the store runs: its own process (the headline), a thread of the"
        " benchmark's process, or both in the same rounds (default)",
    )
    args = ap.parse_args(argv if argv is not None else [])
    jobs = max(1, args.jobs)
    window = max(1, args.window)
    lane_count = shared_lanes(jobs, window)
    procs = default_procs(jobs) if args.procs is None else min(max(0, args.procs), jobs)
    arrangements = ARRANGEMENTS[args.store]
    sides = {separate: (Side(), Side()) for separate in arrangements}
    run_started = time.perf_counter()
    corpus = [scenario for scenario, _ in load_corpus(["memory"])]  # parsed once, untimed
    for r in range(ROUNDS):
        for separate in arrangements:
            diff, raw = sides[separate]
            sent = differential(r, corpus, diff, jobs, procs, separate, window)
            raw_replay(sent, raw, separate)
    total_s = time.perf_counter() - run_started

    print(
        f"memspec harness benchmark: {ROUNDS} interleaved rounds (corpus + machine,"
        f" {EXAMPLES_PER_LANE * jobs}x{STEPS_PER_EXAMPLE} steps), spacing {SPACING_S * 1000:g} ms,"
        f" {lane_count} lane(s) on each side"
    )
    print(
        f"differential arrangement (as memspec run --jobs {jobs} --procs {procs}"
        f" --window {window}): "
        + (
            f"{procs} worker process(es) x {lane_count // procs}"
            + (f"-{-(-lane_count // procs)}" if lane_count % procs else "")
            + " lanes (threads), the parent hands out units"
            if procs
            else f"1 process x {jobs} lanes (threads)"
        )
        + f"; raw side: {lane_count} connections, threads of one process, the requests written"
        " ahead written ahead again"
    )
    ratios: dict[bool, float] = {}
    for separate in arrangements:
        diff, raw = sides[separate]
        assert diff.requests == raw.requests
        title = (
            "store in a process of its own (as deployed)"
            if separate
            else "store in the harness's process (a thread; one GIL for both)"
        )
        ratios[separate] = report(title, diff, raw, lane_count, separate)
    headline = arrangements[0]  # the store in its own process, unless only in-process was run
    met = "met" if ratios[headline] >= GOAL else "NOT met"
    where = "in its own process" if headline else "in-process"
    also = f"; store in-process: {ratios[False]:.2f}" if headline and False in ratios else ""
    print(f"HEADLINE ratio, store {where}: {ratios[headline]:.2f}  (goal >= {GOAL}: {met}){also}")
    print(f"(total run {total_s:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
