"""How the memory reference model scales (``python -m benchmarks.bench_memory_model``).

* random-op steps/second of the in-process store model (writes with dedup/supersede/cap,
  retrieves, lists, forgets over three scopes), at two preloaded scope sizes;
* ``rank_records`` and a one-candidate ``store_write`` on one scope of 1k / 10k / 100k
  active records, with the growth ratios 10k/1k and 100k/1k (linear scaling is ~10x / ~100x).

Only ratios measured in this one run mean anything; absolute times depend on the machine.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from functools import partial
from types import MappingProxyType

from reference.memory.engine import rank_records
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.store import (
    StoreState,
    active_records,
    store_forget,
    store_list,
    store_retrieve,
    store_write,
)

T0 = 1_780_000_000_000
DAY = 24 * 3600 * 1000
SCOPE = "org:bench"
VOCAB = [
    "deploy", "make", "ship", "ci", "push", "postgres", "db", "cache", "redis", "lint",
    "test", "build", "docker", "k8s", "helm", "staging", "prod", "review", "branch", "merge",
    "release", "tag", "api", "auth", "token", "queue", "worker", "cron", "log", "metrics",
]  # fmt: skip


def _text(rnd: random.Random) -> str:
    return (
        " ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(3, 9))) + f" #{rnd.randint(0, 10**9)}"
    )


def _records(n: int, rnd: random.Random) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=f"mem:{SCOPE}:{i + 1}",
            scope_key=SCOPE,
            kind="fact",
            text=_text(rnd),
            keywords=tuple(rnd.sample(VOCAB, 2)),
            source_thread_key="slack:C1:1",
            source_run_id=None,
            created_at=T0 + rnd.randint(0, 30 * DAY),
            last_used_at=None,
            use_count=0,
            confidence=None,
            supersedes=None,
            status="active",
        )
        for i in range(n)
    ]


def _best_of(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def random_ops(state: StoreState, steps: int, rnd: random.Random) -> float:
    """Steps/second of a random operation mix against ``state``."""
    scopes = [SCOPE, "user:slack:U1", "channel:slack:C1"]
    now = T0 + 31 * DAY
    ids: list[str] = [r.id for r in active_records(state, SCOPE)[-50:]]
    start = time.perf_counter()
    for _ in range(steps):
        now += rnd.randint(0, 60_000)
        scope = rnd.choice(scopes)
        op = rnd.random()
        if op < 0.4:
            cands = [
                MemoryCandidate(
                    kind="fact",
                    text=_text(rnd) if rnd.random() < 0.7 else rnd.choice(VOCAB),
                    source_thread_key="slack:C1:2",
                    supersedes=rnd.choice(ids) if ids and rnd.random() < 0.2 else None,
                )
                for _ in range(rnd.randint(1, 4))
            ]
            before = len(state.records(scope))
            state, _ = store_write(state, scope, cands, now, cap=rnd.choice([50, 500, 10_000]))
            ids.extend(r.id for r in state.records(scope)[before:])
        elif op < 0.75:
            query = " ".join(rnd.sample(VOCAB, 2))
            state, _ = store_retrieve(state, scope, query, rnd.randint(1, 8), now)
        elif op < 0.9:
            store_list(state, scope, 20, rnd.choice([None, rnd.choice(VOCAB)]))
        elif ids:
            state, _ = store_forget(state, scope, rnd.choice(ids))
    return steps / (time.perf_counter() - start)


def main() -> int:
    rnd = random.Random(0)
    sizes = [1_000, 10_000, 100_000]
    rank_t: dict[int, float] = {}
    write_t: dict[int, float] = {}
    for n in sizes:
        recs = _records(n, rnd)
        now = T0 + 31 * DAY
        rank_t[n] = _best_of(partial(rank_records, recs, "deploy postgres cache", 8, now), 3)
        state = StoreState(scopes=MappingProxyType({SCOPE: tuple(recs)}))
        cand = [MemoryCandidate(kind="fact", text="a brand new fact", source_thread_key="t")]
        write_t[n] = _best_of(partial(store_write, state, SCOPE, cand, now, cap=10**9), 3)

    print(f"{'records in scope':>18} {'rank_records ms':>16} {'store_write ms':>15}")
    for n in sizes:
        print(f"{n:>18,} {rank_t[n] * 1000:>16.2f} {write_t[n] * 1000:>15.2f}")
    print(
        f"{'ratio 10k/1k':>18} {rank_t[10_000] / rank_t[1_000]:>16.1f} "
        f"{write_t[10_000] / write_t[1_000]:>15.1f}"
    )
    print(
        f"{'ratio 100k/1k':>18} {rank_t[100_000] / rank_t[1_000]:>16.1f} "
        f"{write_t[100_000] / write_t[1_000]:>15.1f}"
    )

    print()
    print(f"{'preloaded records':>18} {'random ops/s':>16}")
    rates: dict[int, float] = {}
    for n in (0, 1_000):
        state = StoreState(scopes=MappingProxyType({SCOPE: tuple(_records(n, rnd))}))
        rates[n] = random_ops(state, 2_000, random.Random(1))
        print(f"{n:>18,} {rates[n]:>16,.0f}")
    print(f"{'ratio 0/1k':>18} {rates[0] / rates[1_000]:>16.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
