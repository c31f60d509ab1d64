"""How much the harness costs: differential steps/s vs the raw request rate of the same requests.

1. Against a fresh bundled store, the memory corpus and a fixed-seed run of the memory state
   machine go through the driver (model, oracle, id and time correspondence, step spacing).
   Every request the driver sends is recorded.
2. Against another fresh bundled store, the very same requests are sent again by the same
   client, back to back, with no model, no oracle and no spacing.

The ratio (differential steps/s ÷ raw requests/s) is the fraction of the store's own speed a
conformance run keeps (goal ≥ 0.7).  The 3 ms spacing between mutating steps (the price of an
unambiguous event order, see ``conformance.oracle.memory``) is part of the differential side;
the time the driver slept for it is measured too, so a second ratio shows what model and oracle
alone cost.  Everything is measured in one run, on one machine.

Run: ``.venv/bin/python -m benchmarks.bench_harness``.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from conformance.driver import Exchange, RunContext, Secret, TargetConfig
from conformance.drivers.memory import MemoryDriver
from conformance.embedded.server import start_server
from conformance.machines import run_machine
from conformance.machines.profiles import Profile
from conformance.runner import load_corpus, run_scenario
from conformance.targets.base import HttpTarget

SEED = 424242
PROFILE = Profile("bench", max_examples=40, step_count=25, budget_s=1e9, fixed_seed=SEED)


@dataclass
class Sent:
    kind: str  # "request" | "raw"
    method: str
    path: str
    kwargs: dict[str, Any]


class Recorder:
    """Wraps a target's ``request``/``raw`` to keep every request for the raw replay."""

    def __init__(self, target: HttpTarget) -> None:
        self.sent: list[Sent] = []
        self._request = target.request
        self._raw = target.raw
        target.request = self.request  # type: ignore[method-assign]
        target.raw = self.raw  # type: ignore[method-assign]

    def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Exchange:
        self.sent.append(Sent("request", method, path, {"args": args, **kwargs}))
        return self._request(method, path, *args, **kwargs)

    def raw(self, method: str, path: str, **kwargs: Any) -> Exchange:
        self.sent.append(Sent("raw", method, path, kwargs))
        return self._raw(method, path, **kwargs)


def differential() -> tuple[int, float, float, float, list[Sent], str]:
    token = secrets.token_urlsafe(16)
    handle = start_server(token=token)
    try:
        ctx = RunContext("memspec-bench0001", TargetConfig(handle.url, Secret(token)))
        driver = MemoryDriver(ctx)
        rec = Recorder(driver.target)
        steps = 0
        cpu0 = time.process_time()
        started = time.perf_counter()
        for scenario, _ in load_corpus(["memory"]):
            result = run_scenario(driver, scenario)
            steps += len(result.outcomes)
            if result.verdict == "fail":
                raise SystemExit(f"corpus diverged against the bundled store: {result.reason}")
        m = run_machine("memory", driver, PROFILE, SEED)
        steps += m.steps
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu0
        driver.close()
        return steps, elapsed, cpu, driver.spacing_slept_s, rec.sent, m.verdict
    finally:
        handle.stop()


def raw_replay(sent: list[Sent]) -> tuple[float, float]:
    token = secrets.token_urlsafe(16)
    handle = start_server(token=token)
    try:
        target = HttpTarget(TargetConfig(handle.url, Secret(token)))
        cpu0 = time.process_time()
        started = time.perf_counter()
        for s in sent:
            if s.kind == "raw":
                target.raw(s.method, s.path, **s.kwargs)
            else:
                kwargs = dict(s.kwargs)
                args = kwargs.pop("args", ())
                target.request(s.method, s.path, *args, **kwargs)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu0
        target.close()
        return elapsed, cpu
    finally:
        handle.stop()


def main() -> int:
    steps, diff_s, diff_cpu, slept_s, sent, verdict = differential()
    raw_s, raw_cpu = raw_replay(sent)
    n = len(sent)
    diff_rate, raw_rate = n / diff_s, n / raw_s
    busy_rate = n / (diff_s - slept_s)
    print(f"{'':40} {'requests':>9} {'wall s':>8} {'req/s':>8} {'cpu s':>7}")
    print(
        f"{'differential (model + oracle + spacing)':40} {n:>9} {diff_s:>8.2f} {diff_rate:>8.0f} {diff_cpu:>7.2f}"
    )
    print(f"{'  of which spacing sleeps':40} {'':>9} {slept_s:>8.2f}")
    print(
        f"{'raw: the same requests, back to back':40} {n:>9} {raw_s:>8.2f} {raw_rate:>8.0f} {raw_cpu:>7.2f}"
    )
    print(f"steps judged: {steps} (machine verdict {verdict}); requests include the target probe")
    print("(store and harness share one process; cpu s counts both)")
    print(f"ratio differential / raw (wall):           {diff_rate / raw_rate:.2f}  (goal >= 0.7)")
    print(f"ratio without the spacing sleeps (wall):   {busy_rate / raw_rate:.2f}")
    print(f"ratio of CPU per request (raw / diff):     {raw_cpu / diff_cpu:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
