"""The model + oracle's CPU per differential step, replayed without HTTP or Hypothesis.

One round as ``bench_harness`` runs it (the memory corpus and a fixed-seed run of the memory
state machine against a fresh bundled store, one lane) is recorded at the oracle's edge: every
``MemoryOracle`` made, and every ``allowed`` / ``judge`` / ``commit`` asked of it with its
arguments (the requests sent, the target's answers, the model times).  The calls are then
replayed on fresh oracles, in a tight loop:

* *memoized*: as a run makes them (the model's memo caches emptied before each pass, so a pass
  meets every value for the first time, as a run does);
* *cleared every call*: every memo cache emptied before each single oracle call, so no answer
  is ever taken from a cache made by an earlier step.

Printed: CPU (``time.thread_time``) per judged step of each (minimum over the passes), their
ratio — what the memoization saves on this data — and a check that both passes judged every
step alike (verdict, clauses, expected text, reason, worlds left).  Only the ratio and the
check mean anything across machines; the absolute figures help compare two checkouts on one
machine (``PYTHONPATH=<checkout> python -m benchmarks.bench_oracle``).

Run: ``.venv/bin/python -m benchmarks.bench_oracle`` (about 10-20 s).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import conformance.oracle.memory
import reference.memory
from conformance.drivers.memory.driver import MemoryDriver
from conformance.embedded.server import start_server
from conformance.machines import run_machine
from conformance.machines.profiles import Profile
from conformance.oracle.memory import MemoryOracle
from conformance.runner import load_corpus, run_scenarios
from conformance.vocabulary import RunContext, Secret, TargetConfig

SEED = 424242
EXAMPLES = 8
STEPS_PER_EXAMPLE = 25
PASSES = 5

#: One oracle's calls: its ``cap_default``, then ("allowed", sent, now) | ("judge", sent, ex,
#: now, with_allowed) | ("commit",) in order.
Calls = list[Any]


@contextmanager
def recording() -> Iterator[list[Calls]]:
    """Record every oracle made inside the block and every call asked of it."""
    log: list[Calls] = []
    saved = {n: MemoryOracle.__dict__[n] for n in ("__init__", "allowed", "judge", "commit")}

    def init(self: Any, cap_default: int = 500) -> None:
        saved["__init__"](self, cap_default)
        self._bench_calls = [cap_default]
        log.append(self._bench_calls)

    def allowed(self: Any, sent: Any, now: int) -> Any:
        self._bench_calls.append(("allowed", sent, now))
        return saved["allowed"](self, sent, now)

    def judge(self: Any, sent: Any, ex: Any, now: int, allowed: Any = None) -> Any:
        self._bench_calls.append(("judge", sent, ex, now, allowed is not None))
        return saved["judge"](self, sent, ex, now, allowed)

    def commit(self: Any, judgement: Any) -> None:
        self._bench_calls.append(("commit",))
        saved["commit"](self, judgement)

    for name, fn in (("__init__", init), ("allowed", allowed), ("judge", judge)):
        setattr(MemoryOracle, name, fn)
    MemoryOracle.commit = commit  # type: ignore[method-assign]
    try:
        yield log
    finally:
        for name, fn in saved.items():
            setattr(MemoryOracle, name, fn)


def record_round() -> list[Calls]:
    """The oracle calls of one corpus + machine round against a fresh bundled store."""
    token = secrets.token_urlsafe(16)
    corpus = [(scenario, "") for scenario, _ in load_corpus(["memory"])]
    profile = Profile(
        "bench", max_examples=EXAMPLES, step_count=STEPS_PER_EXAMPLE, budget_s=1e9, fixed_seed=SEED
    )
    with start_server(token=token) as handle, recording() as log:
        driver = MemoryDriver(
            RunContext("memspec-bench-oracle", TargetConfig(handle.url, Secret(token)))
        )
        try:
            for result in run_scenarios({"memory": [driver]}, corpus):
                if result.verdict == "fail":
                    raise SystemExit(
                        f"the corpus diverged against the bundled store: {result.reason}"
                    )
            machine = run_machine("memory", driver, profile, SEED)
            if machine.verdict != "pass":
                raise SystemExit(f"the machine did not pass: {machine.reason}")
        finally:
            driver.close()
    return log


def memo_caches() -> list[Callable[[], None]]:
    """``cache_clear`` of every memoized function of the memory model and oracle."""
    clears: dict[int, Callable[[], None]] = {}
    for pkg in (reference.memory, conformance.oracle.memory):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)) and getattr(
                    value, "__module__", ""
                ).startswith(("reference.", "conformance.")):
                    clears[id(value)] = value.cache_clear
    return list(clears.values())


def replay(
    log: list[Calls], clear: list[Callable[[], None]], every_call: bool
) -> tuple[float, list[str]]:
    """CPU seconds of one pass over ``log``, and each judgement in words."""
    for c in clear:
        c()
    seen: list[str] = []
    spent = 0.0
    for calls in log:
        oracle = MemoryOracle(calls[0])
        last: Any = None
        judgement: Any = None
        for call in calls[1:]:
            if every_call:
                for c in clear:
                    c()
            t = time.thread_time()
            if call[0] == "allowed":
                last = oracle.allowed(call[1], call[2])
            elif call[0] == "judge":
                judgement = oracle.judge(call[1], call[2], call[3], last if call[4] else None)
                last = None
            else:
                oracle.commit(judgement)
            spent += time.thread_time() - t
            if call[0] == "judge":
                seen.append(
                    repr(
                        (
                            judgement.verdict,
                            judgement.clauses,
                            judgement.expected,
                            judgement.reason,
                            len(judgement.worlds),
                        )
                    )
                )
    return spent, seen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_oracle")
    ap.add_argument("--passes", type=int, default=PASSES)
    args = ap.parse_args(argv if argv is not None else [])
    log = record_round()
    steps = sum(1 for calls in log for call in calls[1:] if call[0] == "judge")
    clear = memo_caches()
    memo, cleared = [], []
    memo_seen: list[str] = []
    cleared_seen: list[str] = []
    for _ in range(max(1, args.passes)):
        s, memo_seen = replay(log, clear, every_call=False)
        memo.append(s)
        s, cleared_seen = replay(log, clear, every_call=True)
        cleared.append(s)
    same = memo_seen == cleared_seen
    per = 1000 / steps
    print(
        f"model + oracle, replayed: {steps} judged steps of one corpus + machine round,"
        f" {len(clear)} memo caches, {args.passes} passes"
    )
    print(
        f"  memoized (as a run):       {min(memo) * per:.4f} ms CPU/step"
        f" (median {statistics.median(memo) * per:.4f})"
    )
    print(
        f"  caches cleared every call: {min(cleared) * per:.4f} ms CPU/step"
        f" (median {statistics.median(cleared) * per:.4f})"
    )
    print(f"  ratio memoized / cleared:  {min(memo) / min(cleared):.2f}")
    print(f"  every step judged alike both ways: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
