"""Concurrent clients against one bundled store: writers to one scope never collide, and no
reader ever observes part of a batch or a scope over its cap."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.common.memory_store import AUTH, Store, fact, unique_scope


def _post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    with httpx.Client(base_url=url, headers=AUTH, timeout=20.0) as c:
        return c.post(path, json=body)


@pytest.mark.clause("MEM-CAP.4", "MEM-STORE.9")
def test_five_concurrent_batches_to_one_scope_get_unique_ids(store: Store) -> None:
    scope = unique_scope()
    barrier = threading.Barrier(5)
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        body = {"scopeKey": scope, "records": [fact(f"writer {n} a"), fact(f"writer {n} b")]}
        barrier.wait(timeout=10)
        r = _post(store.url, "/write", body)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert [r.status_code for r in results] == [200] * 5
    assert all(r.json()["inserted"] == 2 for r in results)
    recs = store.list(scope, 50)
    got = [r["id"] for r in recs]
    assert len(got) == len(set(got)) == 10
    assert sorted(int(i.rsplit(":", 1)[1]) for i in got) == list(range(1, 11))
    # each writer's two records are adjacent: the batches did not interleave
    by_seq = sorted(recs, key=lambda r: int(r["id"].rsplit(":", 1)[1]))
    writers = [r["text"].split()[1] for r in by_seq]
    assert all(writers[i] == writers[i + 1] for i in range(0, 10, 2))


@pytest.mark.clause("MEM-CAP.4", "MEM-CAP.1")
def test_readers_never_see_a_partial_batch_or_a_scope_over_its_cap(store: Store) -> None:
    scope = unique_scope()
    batch, cap, rounds = 5, 12, 12
    stop = threading.Event()
    violations: list[str] = []

    def writer() -> None:
        try:
            for n in range(rounds):
                r = _post(
                    store.url,
                    "/write",
                    {
                        "scopeKey": scope,
                        "records": [fact(f"round{n} item {i}") for i in range(batch)],
                        "cap": cap,
                    },
                )
                if r.status_code != 200:
                    violations.append(f"write {r.status_code}")
        finally:
            stop.set()

    def reader() -> None:
        with httpx.Client(base_url=store.url, headers=AUTH, timeout=20.0) as c:
            while not stop.is_set():
                recs = c.post("/list", json={"scopeKey": scope, "limit": 50}).json()["records"]
                if len(recs) > cap:
                    violations.append(f"{len(recs)} active > cap {cap}")
                per_round = Counter(r["text"].split()[0] for r in recs)
                newest = recs[0]["text"].split()[0] if recs else None
                for rnd, count in per_round.items():
                    # the newest round is always whole; older ones may be partly evicted
                    if rnd == newest and count != batch:
                        violations.append(f"partial batch {rnd}: {count}")

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert violations == []
    assert len(store.list(scope, 50)) == cap
