"""How memspec's wall time grows with the distance to the store.

A loopback delay proxy (:mod:`benchmarks.delay_proxy`) sits in front of a fresh bundled store
and delays every byte by a one-way latency of 0, 5, 10 and 25 ms.  At each, ``memspec run``
(both protocols, the ``ci`` profile's fixed seed) runs as a subprocess against the proxy, and
the wall time is reported as a ratio to the 0 ms run of the same benchmark — measured in one
run, on one machine, never as an absolute goal.  Goals (issue 11): at most 2x at 10 ms and 3x
at 25 ms.  Peak resident memory of the harness process is reported too: it must stay bounded
whatever ``--jobs`` is.

The store and the proxies run in this process, the harness in its own, so the two share the
machine's cores the way a real remote target would not: the ratios are an upper bound.

Run: ``.venv/bin/python -m benchmarks.bench_latency [--profile ci] [--jobs N] [--delays 0,10]``
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.delay_proxy import DelayProxy
from conformance.embedded.server import start_server

GOALS = {10: 2.0, 25: 3.0}
TOKEN_ENV = "MEMSPEC_BENCH_TOKEN"


def run_once(delay_ms: int, profile: str, jobs: int, spec: str, extra: list[str]) -> dict:
    token = secrets.token_urlsafe(24)
    # A ledger has one account scope: its lanes need instances of their own (--ledger-target).
    stores = [start_server(port=0, token=token, test_control=True) for _ in range(max(1, jobs))]
    proxies = [DelayProxy(s.url, delay_ms / 1000) for s in stores]
    proxy = proxies[0]
    if spec != "memory":
        extra = [*extra, *(a for p in proxies[1:] for a in ("--ledger-target", p.url))]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [
                sys.executable, "-m", "conformance.cli", "run",
                "--target", proxy.url, "--token-env", TOKEN_ENV,
                "--spec", spec, "--profile", profile, "--jobs", str(jobs),
                "--report", str(Path(tmp) / "report"), "--quiet", "--timeout", "30",
                *extra,
            ]  # fmt: skip
            env = {**os.environ, TOKEN_ENV: token}
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            started = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
            wall = time.perf_counter() - started
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    finally:
        for p in proxies:
            p.stop()
        for s in stores:
            s.stop()
    verdict = "CONFORMANT" if proc.returncode == 0 else f"exit {proc.returncode}"
    if proc.returncode not in (0, 1):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        verdict += ": " + " / ".join(tail)
    return {
        "delay_ms": delay_ms,
        "wall_s": wall,
        "verdict": verdict,
        "peak_rss_mb": max(peak, before) / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_latency")
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--spec", default="all")
    ap.add_argument("--jobs", type=int, default=None, help="memspec run --jobs (default: its own)")
    ap.add_argument("--delays", default="0,5,10,25", help="one-way delays in ms")
    args = ap.parse_args(argv if argv is not None else [])
    delays = [int(d) for d in args.delays.split(",")]
    if 0 not in delays:
        delays.insert(0, 0)
    extra: list[str] = []
    jobs = args.jobs if args.jobs is not None else 0
    rows = []
    for d in delays:
        row = run_once(d, args.profile, jobs or 4, args.spec, extra)
        rows.append(row)
        print(
            f"   one-way {d:>3} ms: {row['wall_s']:7.1f} s  {row['verdict']}"
            f"  (peak RSS {row['peak_rss_mb']:.0f} MB)",
            flush=True,
        )
    base = rows[0]["wall_s"]
    failed = 0
    print(f"   profile {args.profile}, spec {args.spec}, jobs {jobs or 4}; ratio to 0 ms:")
    for row in rows[1:]:
        ratio = row["wall_s"] / base
        goal = GOALS.get(row["delay_ms"])
        mark = (
            "" if goal is None else (f"  goal <= {goal}x " + ("ok" if ratio <= goal else "MISSED"))
        )
        failed += goal is not None and ratio > goal
        print(f"   {row['delay_ms']:>3} ms: {ratio:5.2f}x{mark}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
