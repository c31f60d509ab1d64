"""How memspec's wall time grows with the distance to the store.

A loopback delay proxy (:mod:`benchmarks.delay_proxy`) sits in front of a fresh bundled store
and delays every byte by a one-way latency of 0, 5, 10 and 25 ms.  At each, ``memspec run``
(both protocols, the ``ci`` profile's fixed seed) runs as a subprocess against the proxy, and
the wall time is reported as a ratio to a *direct* run against a fresh store on loopback with
the same flags (no proxy: the baseline a user compares with) -- and, apart, to the proxy at
0 ms, whose own cost (0 ms proxy / direct) is reported on its own line.  All measured in one
run, on one machine, never as an absolute goal.  Goals (one store): at most 1.5x at 10 ms and
2x at 25 ms against the direct run, with the same verdict at every distance.  Each row also
shows where its time went: the wall seconds of each phase of the run (``report.json``
``phases``: corpus, each protocol's probes and machine; phases may overlap).  ``--repeat N``
runs the whole set N times, to see the noise of a shared machine.  Peak resident memory of the
harness is reported too: it must stay bounded whatever ``--jobs`` is.  It is the high-water
mark of the harness's process plus those of its worker processes (``--procs``; ``VmHWM`` of
``/proc/<pid>/status`` of each, read while it runs), not ``RUSAGE_CHILDREN``: Linux carries
``ru_maxrss`` across ``execve``, so a child of a large parent would report the parent's size.
Each row carries the load average when it started, since the machine may be shared.

The store and the proxies run in this process, the harness in its own, so the two share the
machine's cores the way a real remote target would not: the ratios are an upper bound.

``--tls``: the same over https.  TLS sits between the harness and the delay: harness ->
delay proxy -> TLS terminator (:class:`~benchmarks.delay_proxy.TlsTerminator`, a ``trustme``
certificate, ``--ca-cert``) -> store, so the TLS records and the handshake cross the delayed
link as they would to a store behind a distant edge (a terminator on the far side of the delay
would make a reconnect look cheaper than it is).  Pipelining is on for https as for http.
The https rows have their own direct and 0 ms bases (direct: through the terminator only); an
https run skips the ``raw_http`` probes.

Run: ``.venv/bin/python -m benchmarks.bench_latency [--profile ci] [--jobs N] [--delays 10,25]
[--ledger-instances N] [--one-store] [--window N] [--tls] [--repeat N]`` (ledger instances
default to ``--jobs``: one lane each).  ``--one-store``: one store instance, as a user with
one deployed store has -- the memory lanes share it and the ledger machine runs on its one
instance, so only ``--window`` (steps in flight on one connection) hides the distance.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.delay_proxy import DelayProxy, TlsTerminator
from conformance.embedded.server import start_server
from conformance.engine.config import DEFAULT_JOBS, DEFAULT_WINDOW

#: The most a one-way delay may cost, as a ratio to the direct loopback run.
GOALS = {10: 1.5, 25: 2.0}
TOKEN_ENV = "MEMSPEC_BENCH_TOKEN"


def peak_rss_kb(pid: int) -> float | None:
    """``VmHWM`` (peak resident set, KiB) of process ``pid``, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def child_pids(pid: int) -> list[int]:
    """The children of ``pid`` (memspec's worker processes), from ``/proc``."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def run_harness(cmd: list[str], env: dict[str, str]) -> tuple[int, str, float, float]:
    """Run ``cmd``; its exit code, the tail of its output, wall seconds and peak RSS (KiB) of
    the harness *with its worker processes* (the sum of each one's high-water mark: an upper
    bound of what they held at once), sampled every 50 ms while it runs (a high-water mark only
    grows, so the last sample read is the peak but for the final 50 ms)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        peaks: dict[int, float] = {}
        while proc.poll() is None:
            for pid in [proc.pid, *child_pids(proc.pid)]:
                seen = peak_rss_kb(pid)
                peaks[pid] = max(peaks.get(pid, 0.0), seen or 0.0)
            if time.perf_counter() - started > 3600:
                proc.kill()
            time.sleep(0.05)
        wall = time.perf_counter() - started
        out.seek(0)
        tail = out.read()[-2000:]
    return proc.returncode, tail, wall, sum(peaks.values())


def _tls_contexts(tmp: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a ``trustme`` certificate for 127.0.0.1, and the CA file."""
    import trustme  # a test dependency: only the https rows need it

    ca = trustme.CA()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    ca_file = tmp / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return ctx, ca_file


def run_once(
    delay_ms: int | None,
    profile: str,
    jobs: int,
    spec: str,
    extra: list[str],
    instances: int,
    tls: bool = False,
) -> dict[str, Any]:
    token = secrets.token_urlsafe(24)
    tmp_dir = tempfile.TemporaryDirectory()
    tmp = Path(tmp_dir.name)
    # A ledger has one account scope: its lanes need instances of their own (--ledger-target).
    stores = [start_server(port=0, token=token, test_control=True) for _ in range(instances)]
    terminators: list[TlsTerminator] = []
    if tls:
        ctx, ca_file = _tls_contexts(tmp)
        terminators = [TlsTerminator(s.url, ctx) for s in stores]
        upstreams = [f"http://127.0.0.1:{t.port}" for t in terminators]  # TCP: TLS passes through
        extra = [*extra, "--ca-cert", str(ca_file)]
    else:
        upstreams = [s.url for s in stores]
    # delay None: the direct run, no proxy in the path (over https: the terminator only)
    proxies = [] if delay_ms is None else [DelayProxy(u, delay_ms / 1000) for u in upstreams]
    scheme = "https" if tls else "http"
    ports = [int(u.rsplit(":", 1)[1]) for u in upstreams]
    if proxies:
        ports = [p.sock.getsockname()[1] for p in proxies]
    urls = [f"{scheme}://127.0.0.1:{port}" for port in ports]
    if spec != "memory":
        extra = [*extra, *(a for u in urls[1:] for a in ("--ledger-target", u))]
    try:
        cmd = [
            sys.executable, "-m", "conformance.cli", "run",
            "--target", urls[0], "--token-env", TOKEN_ENV,
            "--spec", spec, "--profile", profile, "--jobs", str(jobs),
            "--report", str(tmp / "report"), "--quiet", "--timeout", "30",
            *extra,
        ]  # fmt: skip
        env = {**os.environ, TOKEN_ENV: token}
        load = os.getloadavg()[0]
        code, tail, wall, peak = run_harness(cmd, env)
        phases = _phases(tmp / "report" / "report.json")
        if (
            code != 0 and (tmp / "report").is_dir()
        ):  # keep the report of a run that was not CONFORMANT, to look at
            where = "direct" if delay_ms is None else f"{delay_ms}ms"
            kept = Path(tempfile.mkdtemp(prefix=f"bench-latency-{scheme}-{where}-"))
            shutil.copytree(tmp / "report", kept / "report", dirs_exist_ok=True)
            tail += f"\nreport kept in {kept / 'report'}"
    finally:
        for p in proxies:
            p.stop()
        for t in terminators:
            t.stop()
        for s in stores:
            s.stop()
        tmp_dir.cleanup()
    verdict = "CONFORMANT" if code == 0 else f"exit {code}"
    if code != 0:
        verdict += ": " + " / ".join(tail.strip().splitlines()[-3:])
    return {
        "scheme": scheme,
        "delay_ms": delay_ms,
        "wall_s": wall,
        "verdict": verdict,
        "peak_rss_mb": peak / 1024,
        "load": load,
        "phases": phases,
    }


def _phases(path: Path) -> dict[str, float]:
    """The wall seconds of each phase a run's ``report.json`` records (none: unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    phases = data.get("phases")
    return {str(k): float(v) for k, v in phases.items()} if isinstance(phases, dict) else {}


def _row_line(row: dict[str, Any]) -> str:
    d = row["delay_ms"]
    where = "direct        " if d is None else f"one-way {d:>3} ms"
    phases = ", ".join(f"{k} {v:.1f}" for k, v in row["phases"].items())
    return (
        f"   {row['scheme']:<5} {where}: {row['wall_s']:7.1f} s  {row['verdict']}"
        f"  (peak RSS with workers {row['peak_rss_mb']:.0f} MB,"
        f" load average {row['load']:.1f})" + (f"\n         phases (s): {phases}" if phases else "")
    )


def _ratios(rows: list[dict[str, Any]]) -> dict[int, tuple[float, float]]:
    """Per delay: (wall / direct, wall / proxy at 0 ms); key -1: the proxy's own cost
    (0 ms / direct, twice)."""
    direct = rows[0]["wall_s"]
    zero = rows[1]["wall_s"]
    out = {-1: (zero / direct, zero / direct)}
    for row in rows[2:]:
        out[row["delay_ms"]] = (row["wall_s"] / direct, row["wall_s"] / zero)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_latency")
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--spec", default="all")
    ap.add_argument("--jobs", type=int, default=None, help="memspec run --jobs (default: its own)")
    ap.add_argument("--delays", default="0,5,10,25", help="one-way delays in ms")
    ap.add_argument(
        "--ledger-instances", type=int, default=None, help="ledger store instances (default: jobs)"
    )
    ap.add_argument("--tls", action="store_true", help="over https (TLS before the delay)")
    ap.add_argument(
        "--one-store",
        action="store_true",
        help="ONE store instance: the memory lanes share it and the ledger has no other"
        " instance (what a user with one deployed store has; same as --ledger-instances 1)",
    )
    ap.add_argument(
        "--window", type=int, default=None, help="memspec run --window (default: its own)"
    )
    ap.add_argument("--repeat", type=int, default=1, help="run the whole set N times")
    args = ap.parse_args(argv if argv is not None else [])
    delays = [int(d) for d in args.delays.split(",") if int(d) != 0]
    extra: list[str] = [] if args.window is None else ["--window", str(args.window)]
    jobs = args.jobs if args.jobs is not None else DEFAULT_JOBS
    instances = 1 if args.one_store else max(1, args.ledger_instances or jobs)
    rounds: list[dict[int, tuple[float, float]]] = []
    verdicts: set[str] = set()
    for n in range(args.repeat):
        if args.repeat > 1:
            print(f"   round {n + 1} of {args.repeat}", flush=True)
        rows = []
        for d in [None, 0, *delays]:
            row = run_once(d, args.profile, jobs, args.spec, extra, instances, tls=args.tls)
            rows.append(row)
            verdicts.add(row["verdict"])
            print(_row_line(row), flush=True)
        rounds.append(_ratios(rows))
    print(
        f"   profile {args.profile}, spec {args.spec}, jobs {jobs}, window"
        f" {args.window or DEFAULT_WINDOW}, {instances} ledger instance(s),"
        f" {os.cpu_count()} cores; ratio to the direct run (and to the proxy at 0 ms)"
        + (f", median of {len(rounds)} rounds [each round]" if len(rounds) > 1 else "")
        + ":"
    )
    failed = 0
    for key in rounds[0]:
        vs_direct = statistics.median(r[key][0] for r in rounds)
        vs_zero = statistics.median(r[key][1] for r in rounds)
        each = ", ".join(f"{r[key][0]:.2f}" for r in rounds) if len(rounds) > 1 else ""
        if key == -1:
            print(
                f"   proxy at 0 ms (its own cost): {vs_direct:5.2f}x"
                + (f" [{each}]" if each else "")
            )
            continue
        goal = GOALS.get(key)
        mark = (
            ""
            if goal is None
            else f"  goal <= {goal}x " + ("ok" if vs_direct <= goal else "MISSED")
        )
        failed += goal is not None and vs_direct > goal
        print(
            f"   {key:>3} ms: {vs_direct:5.2f}x direct ({vs_zero:5.2f}x the proxy at 0 ms)"
            + (f" [{each}]" if each else "")
            + mark
        )
    if len(verdicts) > 1:
        print(f"   verdicts differ between the rows: {sorted(verdicts)}")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
