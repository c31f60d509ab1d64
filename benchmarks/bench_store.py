"""How the bundled store scales (``python -m benchmarks.bench_store``).

Everything is measured through HTTP against ``start_server`` on loopback, after seeding the
SQLite file directly through ``MemoryStore.seed`` (fast, bypassing the write path):

* **retrieve** -- median latency of ``POST /retrieve`` (limit 8) on one scope holding N active
  records with Zipf-distributed words: a *common* query (two mid-frequency words, so the
  number of FTS matches grows with N) and a *selective* one (a token held by 5 records at
  every N, which the FTS index should find in ~constant time);
* **write** -- records/second of ``POST /write`` batches of 10 fresh records into a scope
  whose history holds N records (all but 2000 of them dead: superseded/evicted), under the
  cap, so a write must stay independent of how much history the scope carries;
* **floor** -- sequential ``GET /healthz`` requests/second on one keep-alive connection: the
  HTTP stack's own ceiling, against which the routes above can be read.

The sizes are measured in interleaved rounds (each round touches every size, then the floor),
so load drift on a shared machine affects every row alike; each figure is a median.  Only the
ratios to the 1k row (measured in this one run) mean anything.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from conformance.embedded.memory.store import MemoryStore
from conformance.embedded.server import start_server
from reference.memory.records import MemoryRecord

T0 = 1_780_000_000_000
TOKEN = "bench-token"
VOCAB = [f"w{i}" for i in range(5000)]
WEIGHTS = [1.0 / (i + 1) for i in range(len(VOCAB))]
ACTIVE_HISTORY = 2000
SIZES = (1_000, 10_000, 100_000)
ROUNDS = 6
WRITE_BATCH = 10


def _records(scope: str, n: int, rnd: random.Random, dead_until: int = 0) -> list[MemoryRecord]:
    out = []
    words = rnd.choices(VOCAB, WEIGHTS, k=8 * n)
    for i in range(n):
        text = " ".join(words[8 * i : 8 * i + 8])
        if i % (n // 5 or 1) == 0:
            text += " needle"  # the selective token: 5 records at every size
        out.append(
            MemoryRecord(
                id=f"mem:{scope}:{i + 1}",
                scope_key=scope,
                kind="fact",
                text=f"{text} #{i}",
                keywords=(),
                source_thread_key="bench:thread",
                source_run_id=None,
                created_at=T0 + i,
                last_used_at=None,
                use_count=0,
                confidence=None,
                supersedes=None,
                status="evicted" if i < dead_until else "active",
            )
        )
    return out


class _Target:
    """One seeded database behind its own server, measured a little at a time."""

    def __init__(self, n: int, workdir: Path) -> None:
        self.n = n
        self.rnd = random.Random(n)
        db = str(workdir / f"bench-{n}.sqlite3")
        seed = MemoryStore(db)
        seed.seed(_records("org:read", n, self.rnd))
        seed.seed(_records("org:write", n, self.rnd, dead_until=max(0, n - ACTIVE_HISTORY)))
        seed.close()
        self.handle = start_server(db=db, token=TOKEN)
        self.client = httpx.Client(
            base_url=self.handle.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        self.client.post("/list", json={"scopeKey": "org:read", "limit": 1})  # warm up
        self.common: list[float] = []
        self.selective: list[float] = []
        self.write_s: list[float] = []  # seconds per batch of WRITE_BATCH records
        self.batches = 0

    def _timed(self, path: str, body: dict[str, object]) -> tuple[float, httpx.Response]:
        t = time.perf_counter()
        r = self.client.post(path, json=body)
        return time.perf_counter() - t, r

    def round(self) -> None:
        for _ in range(5):
            a, b = self.rnd.sample(VOCAB[100:200], 2)
            dt, r = self._timed(
                "/retrieve", {"scopeKey": "org:read", "query": f"{a} {b}", "limit": 8}
            )
            assert r.status_code == 200
            self.common.append(dt)
            dt, r = self._timed(
                "/retrieve", {"scopeKey": "org:read", "query": "needle", "limit": 8}
            )
            assert r.status_code == 200 and len(r.json()["records"]) == 5
            self.selective.append(dt)
        for _ in range(4):
            self.batches += 1
            recs = [
                {
                    "kind": "fact",
                    "text": f"fresh {self.n} {self.batches} {i} {self.rnd.random()}",
                    "sourceThreadKey": "bench",
                }
                for i in range(WRITE_BATCH)
            ]
            dt, r = self._timed("/write", {"scopeKey": "org:write", "records": recs, "cap": 10000})
            assert r.status_code == 200 and r.json()["inserted"] == WRITE_BATCH
            self.write_s.append(dt)

    def result(self) -> dict[str, float]:
        return {
            "common": statistics.median(self.common) * 1000,
            "selective": statistics.median(self.selective) * 1000,
            "write": WRITE_BATCH / statistics.median(self.write_s),
        }

    def close(self) -> None:
        self.client.close()
        self.handle.stop()


def healthz_round(client: httpx.Client, seconds: float = 0.3) -> float:
    end = time.perf_counter() + seconds
    n = 0
    t = time.perf_counter()
    while time.perf_counter() < end:
        client.get("/healthz")
        n += 1
    return n / (time.perf_counter() - t)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_store")
    parser.add_argument(
        "--sizes", default=",".join(str(s) for s in SIZES), help="comma-separated record counts"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="memspec-bench-") as tmp:
        targets = [_Target(n, Path(tmp)) for n in sizes]
        try:
            with start_server(token=TOKEN) as bare, httpx.Client(base_url=bare.url) as hc:
                # Interleaved rounds: load drift on a shared machine hits every size alike.
                for _ in range(ROUNDS):
                    for target in targets:
                        target.round()
                    floors.append(healthz_round(hc))
            rows = {t.n: t.result() for t in targets}
        finally:
            for target in targets:
                target.close()
    floor = statistics.median(floors)
    base = rows[sizes[0]]
    print("bundled store over HTTP (ratios to the first row; one run)")
    print(
        f"{'records':>8} | {'retrieve common':>22} | {'retrieve selective':>22}"
        f" | {'write rec/s':>20}"
    )
    for n in sizes:
        r = rows[n]
        print(
            f"{n:>8} | {r['common']:8.2f} ms  x{r['common'] / base['common']:6.2f} | "
            f"{r['selective']:8.2f} ms  x{r['selective'] / base['selective']:6.2f} | "
            f"{r['write']:9.0f}  x{r['write'] / base['write']:6.2f}"
        )
    print(
        f"healthz floor: {floor:.0f} req/s sequential on one connection, median of rounds "
        f"(= {1000 / floor:.2f} ms per request)"
    )
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
