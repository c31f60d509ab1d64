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
from conformance.concurrent.memory.answers import clear_caches
from conformance.concurrent.memory.model import MemoryModel, make_model
from conformance.concurrent.synthetic import independent_scopes_history, synthetic_history
from conformance.concurrent.workload import generate_plan
from conformance.embedded.server import start_server
from conformance.vocabulary import Secret, TargetConfig

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
    """8 clients at once vs the same operations back to back by one client, against the bundled
    store in this process and in its own process (``memspec serve``): after a warm-up run,
    ``REPS`` alternating pairs; medians of operations per second and CPU ms per operation
    (this process: harness, plus the store when it runs here; the store's process beside).
    The store serialises every request under one lock, and in this process shares the GIL
    with the client threads: the ratio cannot exceed about 1 there (one core busy at most);
    in its own process it can exceed 1 only with a free core for each side ("cores busy":
    CPU seconds of both per second of the run)."""
    import os
    import socket
    import statistics
    import subprocess
    from collections.abc import Callable

    reps = 5
    token = secrets.token_urlsafe(16)
    plan = generate_plan(7, CLIENTS, 40, 4)
    flat = [replace(op, client=0) for ops in plan for op in ops]  # client 0 sends all in order

    def measure(config: TargetConfig, store_cpu: Callable[[], float], where: str) -> None:
        run_plan(config, plan, [f"org:memspec-bthr-{where}-w-{i}" for i in range(4)])  # warm-up
        rows: dict[str, list[tuple[float, float, float]]] = {"conc": [], "seq": []}
        for r in range(reps):
            for tag, p in (("conc", plan), ("seq", [flat]))[:: 1 if r % 2 else -1]:
                cpu, scpu = time.process_time(), store_cpu()
                h = run_plan(
                    config, p, [f"org:memspec-bthr-{where}-{tag}{r}-{i}" for i in range(4)]
                )
                n = len(h.events)
                rows[tag].append(
                    (
                        n / h.wall_s,
                        (time.process_time() - cpu) / n * 1e3,
                        (store_cpu() - scpu) / n * 1e3,
                    )
                )
        med = {t: [statistics.median(x[k] for x in v) for k in range(3)] for t, v in rows.items()}
        ratios = [c[0] / s[0] for c, s in zip(rows["conc"], rows["seq"], strict=True)]
        print(f"  store {where}:")
        for tag, label in (("conc", f"{CLIENTS} clients"), ("seq", "1 client")):
            rate, cpu_ms, store_ms = med[tag]
            extra = f", store process {store_ms:.2f}" if where != "in this process" else ""
            busy = rate * (cpu_ms + store_ms) / 1000  # CPU seconds used per second: cores busy
            print(
                f"    {label:>9}: {rate:6.0f} ops/s  cpu ms/op: this process {cpu_ms:.2f}{extra}"
                f"  ({busy:.2f} cores busy)"
            )
        print(
            f"    ratio {med['conc'][0] / med['seq'][0]:.2f}x (per pair:"
            f" {', '.join(f'{x:.2f}' for x in ratios)})"
        )

    print(f"driver against the bundled store: {CLIENTS}x40 ops over 4 scopes, {reps} pairs")
    handle = start_server(host="127.0.0.1", port=0, token=token)
    try:
        measure(TargetConfig(handle.url, Secret(token), 10.0), lambda: 0.0, "in this process")
    finally:
        handle.stop()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "conformance.cli", "serve", "--port", str(port)]
    proc = subprocess.Popen(
        [*cmd, "--db", ":memory:", "--quiet"],
        env={**os.environ, "MEMSPEC_TOKEN": token},
        stderr=subprocess.DEVNULL,
    )
    tick = os.sysconf("SC_CLK_TCK")

    def store_cpu() -> float:  # utime + stime of the store's process (Linux; else 0)
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / tick

    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        measure(
            TargetConfig(f"http://127.0.0.1:{port}", Secret(token), 10.0),
            store_cpu,
            "in its own process",
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    quick = "--quick" in sys.argv
    checker_growth([1000, 10_000] if quick else [1000, 10_000, 100_000])
    dense_scope()
    driver_throughput()
    return 0


if __name__ == "__main__":
    sys.exit(main())
