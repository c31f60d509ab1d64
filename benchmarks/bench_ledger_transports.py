"""The whole ledger run over each form of the binding: ``POST /ledger/<method>`` (HTTP, with
pipelining) against JSON-RPC over a WebSocket on 127.0.0.1 and on a Unix socket (one call at a
time), against the bundled store, the same seed for each.

An untimed HTTP run goes first (the model's caches filled for every form alike).  Prints each
form's wall time (corpus, probes and the ledger machine, ``--profile quick`` unless
``--profile`` says otherwise) and its ratio to HTTP, and each form's verdict.  One run each:
figures, not pass/fail.  Run: ``.venv/bin/python -m benchmarks.bench_ledger_transports``.
"""

from __future__ import annotations

import argparse
import io
import secrets
import tempfile
import time
from pathlib import Path

from conformance.commands.target import start_bundled_store
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine

SEED = 20_261_206


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_ledger_transports")
    parser.add_argument("--profile", default="quick", choices=["quick", "ci", "deep"])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument(
        "--no-warmup", action="store_true", help="no untimed run first (caches cold for HTTP)"
    )
    args = parser.parse_args(argv)
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            forms = {
                "http": handle.url,
                "ws": handle.serve_ledger_socket(),
                "ws+unix": handle.serve_ledger_socket(unix_path=str(Path(tmp) / "l.sock")),
            }
            walls: dict[str, float] = {}
            plan = list(forms.items())
            if not args.no_warmup:  # the first run fills the model's caches: not timed
                plan.insert(0, ("warm-up", handle.url))
            for form, url in plan:
                started = time.perf_counter()
                outcome = run_engine(
                    TargetConfig(url, Secret(token), 10.0),
                    spec="ledger",
                    profile=args.profile,
                    seed=SEED,
                    jobs=args.jobs,
                    quiet=True,
                    out=io.StringIO(),
                    allow_dirty=True,
                )
                walls[form] = time.perf_counter() - started
                if form == "warm-up":
                    continue
                machines = outcome.data["machines"]
                steps = sum(m["steps"] for m in machines)
                machine_s = sum(m["elapsed_s"] for m in machines)
                corpus = sum(len(s.get("steps") or []) for s in outcome.data["scenarios"])
                print(
                    f"{form:8} exit {outcome.exit_code}  {walls[form]:6.1f} s"
                    f"  ratio {walls[form] / walls['http']:.2f}  corpus steps {corpus}"
                    f"  machine steps {steps} in {machine_s:.1f} s"
                )
        finally:
            handle.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
