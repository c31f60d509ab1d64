"""How much the harness costs: differential steps/s vs the raw request rate of the same requests.

The run is split into ROUNDS interleaved rounds, so that a change of load on the machine
during the run hits both sides alike.  Each round:

1. *differential*: against a fresh bundled store, the memory corpus and a fixed-seed run of
   the memory state machine (seed differs per round) go through the driver — model, oracle,
   id and time correspondence, Hypothesis, and the spacing of mutating steps — the way
   ``memspec run`` runs them: on ``--jobs`` lanes (default: ``memspec run``'s default), each
   a driver with its own connection, corpus scenarios and machine batches side by side.
   Every request each lane sends is recorded (settling reads included; the target probe,
   which happens before the clock starts, is not).
2. *raw*: against another fresh bundled store, the very same requests are sent again by the
   same client class with the same concurrency — each lane's requests, in their order, on a
   connection of its own, the lanes side by side — with no model, no oracle, no Hypothesis
   and no spacing.

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

Run: ``.venv/bin/python -m benchmarks.bench_harness [--jobs N] [--store both|process|thread]``
(about 40–60 s with both; half that with one).
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
from typing import Any

from conformance.commands.run import DEFAULT_JOBS
from conformance.drivers.base import SPACING_S, Exchange, RunContext, Secret, TargetConfig
from conformance.drivers.memory import MemoryDriver
from conformance.embedded.server import start_server
from conformance.machines import run_machine
from conformance.machines.profiles import Profile
from conformance.oracle.memory import MemoryOracle
from conformance.runner import load_corpus, run_scenarios
from conformance.scenario import Scenario
from conformance.targets.base import HttpTarget

SEED = 424242
ROUNDS = 3
EXAMPLES_PER_LANE = 8  # examples per round: this many per lane (each lane has work)
STEPS_PER_EXAMPLE = 25
GOAL = 0.7


@dataclass
class Sent:
    kind: str  # "request" | "raw"
    method: str
    path: str
    kwargs: dict[str, Any]


class Recorder:
    """Wraps a target's ``request``/``raw``: keeps every request and the time spent in HTTP."""

    def __init__(self, target: HttpTarget) -> None:
        self.sent: list[Sent] = []
        self.http_s = 0.0
        self._request = target.request
        self._raw = target.raw
        target.request = self.request  # type: ignore[method-assign]
        target.raw = self.raw  # type: ignore[method-assign]

    def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Exchange:
        self.sent.append(Sent("request", method, path, {"args": args, **kwargs}))
        t = time.perf_counter()
        try:
            return self._request(method, path, *args, **kwargs)
        finally:
            self.http_s += time.perf_counter() - t

    def raw(self, method: str, path: str, **kwargs: Any) -> Exchange:
        self.sent.append(Sent("raw", method, path, kwargs))
        t = time.perf_counter()
        try:
            return self._raw(method, path, **kwargs)
        finally:
            self.http_s += time.perf_counter() - t


class OracleTimer:
    """Times ``MemoryOracle.allowed`` and ``judge`` (the model runs inside them)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> OracleTimer:
        for name in ("allowed", "judge"):
            original = MemoryOracle.__dict__.get(name)
            if original is None:
                continue
            self._saved[name] = original
            setattr(MemoryOracle, name, self._timed(original))
        return self

    def _timed(self, fn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t

        return timed

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(MemoryOracle, name, original)


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
    round_no: int, corpus: list[Scenario], side: Side, jobs: int, separate: bool
) -> list[list[Sent]]:
    token = secrets.token_urlsafe(16)
    seed = SEED + round_no
    profile = Profile(
        "bench",
        max_examples=EXAMPLES_PER_LANE * jobs,
        step_count=STEPS_PER_EXAMPLE,
        budget_s=1e9,
        fixed_seed=seed,
    )
    with store(token, separate) as st:
        ctx = RunContext(f"memspec-bench{round_no:04d}", TargetConfig(st.url, Secret(token)))
        driver = MemoryDriver(ctx)
        lanes = [driver, *(driver.lane() for _ in range(jobs - 1))]
        recs = [Recorder(d.target) for d in lanes]
        steps = 0
        with OracleTimer() as timer:
            store0 = st.cpu()
            cpu0, tcpu0 = time.process_time(), time.thread_time()
            started = time.perf_counter()
            for result in run_scenarios({"memory": lanes}, [(sc, "") for sc in corpus]):
                steps += len(result.outcomes)
                if result.verdict == "fail":
                    raise SystemExit(f"corpus diverged against the bundled store: {result.reason}")
            m = run_machine("memory", driver, profile, seed, lanes=lanes[1:])
            steps += m.steps
            elapsed = time.perf_counter() - started
            cpu, tcpu = time.process_time() - cpu0, time.thread_time() - tcpu0
            store1 = st.cpu()
        for d in lanes:
            d.close()
    if m.verdict != "pass":
        raise SystemExit(f"the machine did not pass against the bundled store: {m.reason}")
    side.requests += sum(len(r.sent) for r in recs)
    side.steps += steps
    side.wall_s += elapsed
    side.cpu_s += cpu
    side.thread_cpu_s += tcpu
    if store0 is not None and store1 is not None:
        side.store_cpu_s += store1 - store0
    side.slept_s += sum(d.spacing_slept_s for d in lanes)
    side.http_s += sum(r.http_s for r in recs)
    side.oracle_s += timer.seconds
    side.per_round.append(elapsed)
    return [r.sent for r in recs]


def _replay(target: HttpTarget, sent: list[Sent]) -> None:
    for s in sent:
        if s.kind == "raw":
            target.raw(s.method, s.path, **s.kwargs)
        else:
            kwargs = dict(s.kwargs)
            args = kwargs.pop("args", ())
            target.request(s.method, s.path, *args, **kwargs)


def raw_replay(per_lane: list[list[Sent]], side: Side, separate: bool) -> None:
    """Each lane's requests in order on a connection of its own, the lanes side by side."""
    token = secrets.token_urlsafe(16)
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
    side.requests += sum(len(sent) for sent in per_lane)
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
    busy_s = diff.wall_s - diff.slept_s
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
    if separate:
        print(
            f"CPU, harness process: {diff.cpu_s / diff.steps * 1000:.3f} ms per differential step,"
            f" {raw.cpu_s / n * 1000:.3f} ms per raw request (the client alone)"
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
        "--store",
        choices=sorted(ARRANGEMENTS),
        default="both",
        help="where the store runs: its own process (the headline), a thread of the"
        " benchmark's process, or both in the same rounds (default)",
    )
    args = ap.parse_args(argv if argv is not None else [])
    jobs = max(1, args.jobs)
    arrangements = ARRANGEMENTS[args.store]
    sides = {separate: (Side(), Side()) for separate in arrangements}
    run_started = time.perf_counter()
    corpus = [scenario for scenario, _ in load_corpus(["memory"])]  # parsed once, untimed
    for r in range(ROUNDS):
        for separate in arrangements:
            diff, raw = sides[separate]
            sent = differential(r, corpus, diff, jobs, separate)
            raw_replay(sent, raw, separate)
    total_s = time.perf_counter() - run_started

    print(
        f"memspec harness benchmark: {ROUNDS} interleaved rounds (corpus + machine,"
        f" {EXAMPLES_PER_LANE * jobs}x{STEPS_PER_EXAMPLE} steps), spacing {SPACING_S * 1000:g} ms,"
        f" {jobs} lane(s) on each side"
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
        ratios[separate] = report(title, diff, raw, jobs, separate)
    headline = arrangements[0]  # the store in its own process, unless only in-process was run
    met = "met" if ratios[headline] >= GOAL else "NOT met"
    where = "in its own process" if headline else "in-process"
    also = f"; store in-process: {ratios[False]:.2f}" if headline and False in ratios else ""
    print(f"HEADLINE ratio, store {where}: {ratios[headline]:.2f}  (goal >= {GOAL}: {met}){also}")
    print(f"(total run {total_s:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
