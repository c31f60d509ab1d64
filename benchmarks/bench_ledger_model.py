"""How the ledger reference model scales (``python -m benchmarks.bench_ledger_model``).

* random-op steps/second through ``wire.handle`` (saves, edits, forgets, proposals and
  reviews, expiry and sweeps, consolidation batches, listings and as-of reads), starting from a
  ledger of ~50 and of ~1k records;
* ``list_as_of`` (and, for context, ``list_records`` and ``build_packet``) on a scope holding
  1k and 10k records (about a third of them superseded or forgotten), with the growth ratio
  10k/1k — linear scaling is ~10x.

Only ratios measured in this one run mean anything; absolute times depend on the machine.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from reference.ledger.intervals import list_as_of
from reference.ledger.lifecycle import delete, list_records, save, supersede
from reference.ledger.outcome import Ok, Refused
from reference.ledger.packet import build_packet
from reference.ledger.records import (
    SCOPE_LOCAL,
    ConsolidationSettings,
    LedgerState,
    empty_state,
    with_settings,
)
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import handle

T0 = 1_767_225_600_000
DAY = 86_400_000
WORDS = "tea coffee deploy friday vim rust dark mode tabs spaces review ship staging prod".split()


def _body(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 8)))


def build(n: int, seed: int = 7) -> tuple[LedgerState, int]:
    """A local scope with ``n`` records written through the model: ~2/3 active."""
    rnd = random.Random(seed)
    state = with_settings(empty_state(), SCOPE_LOCAL, ConsolidationSettings(max_records=10_000))
    now = T0
    active: list[str] = []
    while len(state.records) < n:
        now += rnd.randint(1, 1000)
        roll = rnd.random()
        if roll < 0.12 and active:
            rid = active.pop(rnd.randrange(len(active)))
            state, rec = supersede(state, SCOPE_LOCAL, rid, _body(rnd), now)
            assert not isinstance(rec, Refused), rec
            active.append(rec.id)
        elif roll < 0.2 and active:
            rid = active.pop(rnd.randrange(len(active)))
            state, _ = delete(state, SCOPE_LOCAL, rid, now)
        else:
            state, rec = save(state, _body(rnd), now)
            assert not isinstance(rec, Refused), rec
            active.append(rec.id)
    return state, now


def random_steps(state: LedgerState, now: int, steps: int, seed: int = 11) -> float:
    """Steps per second of a random mix of binding calls."""
    rnd = random.Random(seed)
    start = time.perf_counter()
    for _ in range(steps):
        now += rnd.randint(1, 3_600_000)
        ids = [r.id for r in state.records[-40:]]
        rid = rnd.choice(ids) if ids else "none"
        roll = rnd.random()
        method: str
        params: dict[str, object]
        if roll < 0.25:
            method, params = "memory/save_memory_record", {"body": _body(rnd)}
        elif roll < 0.35:
            method, params = "memory/supersede_memory_record", {"recordId": rid, "body": _body(rnd)}
        elif roll < 0.42:
            method, params = "memory/delete_memory_record", {"recordId": rid}
        elif roll < 0.50:
            method, params = (
                "_test/propose",
                {"body": _body(rnd)},
            )
        elif roll < 0.56:
            method, params = "memory/approve_memory_record", {"recordId": rid}
        elif roll < 0.60:
            method, params = "memory/reject_memory_record", {"recordId": rid}
        elif roll < 0.65:
            element = {"operation": "expire", "targets": [rid], "afterDays": 1}
            method, params = "_test/consolidate", {"operations": [element]}
        elif roll < 0.70:
            method, params = "_test/sweep", {"at": format_rfc3339(now)}
        elif roll < 0.76:
            ops: list[object] = [
                {"operation": "merge", "targets": ids[-2:], "body": _body(rnd)},
                {"operation": "keep", "targets": ids[-3:-2]},
                {"operation": "expire", "targets": ids[-4:-3], "afterDays": 3},
            ]
            method, params = "_test/consolidate", {"operations": ops}
        elif roll < 0.88:
            method, params = "memory/list_memory_records", {"scopeKey": SCOPE_LOCAL}
        else:
            at = format_rfc3339(now - rnd.randint(0, 30 * DAY))
            method, params = "memory/list_memory_records_as_of", {"scopeKey": SCOPE_LOCAL, "at": at}
        state, out = handle(state, method, params, now)
        assert isinstance(out, Ok) or out.allowed_codes
    return steps / (time.perf_counter() - start)


def per_call(fn: Callable[[], object], min_time: float = 0.4) -> float:
    """Mean seconds per call, repeating until ``min_time`` has passed."""
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / calls


def main() -> int:
    print("random binding steps/second")
    print(f"  {'start size':>10}  {'steps/s':>9}")
    for size, steps in ((50, 3000), (1000, 1500)):
        state, now = build(size)
        print(f"  {size:>10}  {random_steps(state, now, steps):>9.0f}")

    print("\nreads on one scope (ms per call); growth ratio 10k/1k (linear ~10x)")
    print(f"  {'read':<12} {'1k':>9} {'10k':>9} {'ratio':>7}")
    small, small_now = build(1_000)
    large, large_now = build(10_000)
    worst = 0.0
    reads: dict[str, Callable[[LedgerState, int], object]] = {
        "list_as_of": lambda s, now: list_as_of(s, SCOPE_LOCAL, now - DAY),
        "list_records": lambda s, now: list_records(s, SCOPE_LOCAL),
        "build_packet": lambda s, now: build_packet(s, SCOPE_LOCAL),
    }
    for name, read in reads.items():
        t1 = per_call(lambda read=read: read(small, small_now))  # type: ignore[misc]
        t10 = per_call(lambda read=read: read(large, large_now))  # type: ignore[misc]
        ratio = t10 / t1
        if name == "list_as_of":
            worst = ratio
        print(f"  {name:<12} {t1 * 1e3:>9.2f} {t10 * 1e3:>9.2f} {ratio:>6.1f}x")
    print(f"\nlist_as_of growth 10k/1k: {worst:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
