"""The linearizability checker's cost, and the concurrent driver's throughput.

1. **Checker growth.**  Synthetic linearizable histories of 1k, 10k and 100k operations by 8
   clients over 10 scopes (each client picks a scope per operation, as ``memspec run
   --clients`` does; its plan generator, the last scope capped so that writes evict), from
   :mod:`conformance.concurrent.synthetic` (built in time linear in their length): every op
   gets an invocation time, a duration and a linearization point inside its interval, and its
   answer is what the reference answers at that point (so the history is linearizable and the
   search must find the order).  Reported: check time per size (CPU seconds of the process --
   the machine may be shared -- and wall seconds), the growth ratios (goal: near-linear, i.e.
   about 10× per 10× operations; well under a second for 10k), and how many partitions had a
   step whose allowed successors were cut (``cut``: there a violation would be "unknown").
   At 100k each scope holds ~10k operations and the uncapped scopes pass the default cap
   (500 actives): every write then evicts one of ~500 records, and the model -- one clock,
   no LRU order -- may pick any: the search branches there (and cuts at 64 choices).
   Every measurement starts from cold caches (``clear_caches``).
2. **Scope scaling.**  1 scope vs 10 scopes with the *same work per scope*: each scope its own
   2 clients and 1k operations drawn alike (``independent_scopes_history``; the 1-scope
   history is the first scope of the 10).  Goal: about 10× (scopes are independent
   partitions).  (Until 2026-12-01 this compared 1 client alone on 1 scope -- a sequential
   history without a capped scope -- with 10 clients over 10 scopes, one of them capped; the
   17× it showed came mostly from the garbage collector walking the larger history's heap,
   not from the partitions.)  Then the hard case: 2, 4 and 8 clients all on *one* scope
   (see docs/linearizability.md, limits).
3. **Driver throughput.**  One plan (8 clients × 40 ops over 4 scopes) run against the bundled
   store by 8 client threads at once, and the same operations sent back to back by one client:
   operations per second of each and their ratio.

Ratios only, measured in one run; never a timed test.  Run:
``.venv/bin/python -m benchmarks.bench_linearizability`` (a few minutes on a loaded 2-core
machine; ``--quick`` skips 100k).
"""

from __future__ import annotations

import secrets
import sys
import time
from dataclasses import replace

from conformance.concurrent.analysis import MEMORY, check_events
from conformance.concurrent.driver import Event, run_plan
from conformance.concurrent.memory_answers import clear_caches
from conformance.concurrent.memory_model import MemoryModel, make_model
from conformance.concurrent.synthetic import independent_scopes_history, synthetic_history
from conformance.concurrent.workload import generate_plan
from conformance.drivers.base import Secret, TargetConfig
from conformance.embedded.server import start_server

CLIENTS = 8
SCOPES = 10


def _time_check(events: list[Event]) -> tuple[float, float, str, int, int]:
    """(CPU seconds, wall seconds, verdicts, configurations, partitions with cut steps) of
    checking ``events`` from cold caches -- the conversion of events into model calls
    (request validation) included."""
    models: list[MemoryModel] = []

    def model_for(scope: str) -> MemoryModel:
        models.append(make_model(scope))
        return models[-1]

    clear_caches()
    proto = replace(MEMORY, model_for=model_for)
    start, cpu = time.perf_counter(), time.process_time()
    results = check_events(events, proto, max_states=10_000_000, max_seconds=600)
    cpu = time.process_time() - cpu
    elapsed = time.perf_counter() - start
    verdicts = {r.verdict for r in results}
    cut = sum(1 for m in models if m.incomplete)
    return cpu, elapsed, "/".join(sorted(verdicts)), sum(r.states for r in results), cut


def checker_growth(sizes: list[int]) -> None:
    print(f"checker on synthetic linearizable histories ({CLIENTS} clients over {SCOPES} scopes)")
    print("(CPU seconds of this process: the machine may be shared; wall seconds beside)")
    print(
        f"{'ops':>8} {'cpu s':>8} {'wall s':>8} {'configs':>9} {'cut':>4} {'verdict':>8}"
        f" {'ratio':>7}"
    )
    prev: float | None = None
    for n in sizes:
        events = synthetic_history(n, SCOPES)
        cpu, secs, verdict, states, cut = _time_check(events)
        ratio = f"{cpu / prev:.1f}x" if prev else "-"
        print(
            f"{len(events):>8} {cpu:>8.3f} {secs:>8.3f} {states:>9} {cut:>4} {verdict:>8}"
            f" {ratio:>7}"
        )
        prev = cpu
    one = _time_check(independent_scopes_history(1, 1000))[0]
    ten = _time_check(independent_scopes_history(10, 1000))[0]
    print(
        f"1k ops per scope, 2 clients each: 1 scope {one:.3f}s, 10 scopes {ten:.3f}s"
        f" -> {ten / one:.1f}x for 10x scopes (goal: about 10x)"
    )


def dense_scope() -> None:
    """The hard case: many clients on ONE scope (every op overlaps up to 7 others)."""
    print("one scope, 240 ops, N clients all on it (bounded search: 200k configurations, 20 s)")
    for clients in (2, 4, 8):
        events = synthetic_history(240, 1, clients=clients, seed=3)
        start = time.perf_counter()
        results = check_events(events, MEMORY, max_states=200_000, max_seconds=20)
        secs = time.perf_counter() - start
        r = results[0]
        print(f"  {clients} clients: {r.verdict:>7} {r.states:>7} configurations {secs:7.2f}s")


def driver_throughput() -> None:
    token = secrets.token_urlsafe(16)
    plan = generate_plan(7, CLIENTS, 40, 4)
    handle = start_server(host="127.0.0.1", port=0, token=token)
    try:
        config = TargetConfig(handle.url, Secret(token), 10.0)
        conc = run_plan(config, plan, [f"org:memspec-bthr-c-{i}" for i in range(4)])
        # The same operations, one client, back to back (client 0 sends everything in order).
        flat = [replace(op, client=0) for ops in plan for op in ops]
        seq = run_plan(config, [flat], [f"org:memspec-bthr-s-{i}" for i in range(4)])
    finally:
        handle.stop()
    c_rate = len(conc.events) / conc.wall_s
    s_rate = len(seq.events) / seq.wall_s
    print(f"driver against the bundled store: {len(conc.events)} ops")
    print(
        f"  8 clients: {c_rate:8.0f} ops/s   1 client: {s_rate:8.0f} ops/s"
        f"   ratio {c_rate / s_rate:.2f}x"
    )


def main() -> int:
    quick = "--quick" in sys.argv
    checker_growth([1000, 10_000] if quick else [1000, 10_000, 100_000])
    dense_scope()
    driver_throughput()
    return 0


if __name__ == "__main__":
    sys.exit(main())
