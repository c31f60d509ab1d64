"""How strong the harness is: the kill matrix of the catalogue of altered stores.

Two passes over the whole catalogue (``conformance/embedded/catalogue/``), profile ``ci``, rows
in parallel over the cores, exactly as ``memspec selftest`` runs them:

1. **corpus + machines** -- ``memspec run``: the kill rate (goal 100 %), what killed each
   mutant, the median time from the start of a run to its first divergent step (goal <= 5 s)
   and the median length of the machine's shrunk replay (goal <= 4 steps); every variant and
   the unaltered store must be conformant.
2. **machines alone** -- ``memspec fuzz`` (no hand-written corpus): *exploration power*, the
   kill rate of the state machines alone (goal >= 90 %), and each survivor with its summary
   (what the machine would have to do to reach it).

These are figures, not pass/fail tests: nothing here is timed against a threshold.  The whole
benchmark takes long (two full matrices: about 30-60 min on 2 cores, depending on the load);
``--mode full`` or ``--mode machines`` runs one pass, ``--only NAME...`` a part,
``--json FILE`` keeps the figures for trend tracking.

Run: ``.venv/bin/python -m benchmarks.bench_selftest [--jobs N] [--mode full|machines|both]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

from conformance.commands.selftest import (
    Options,
    catalogue_cells,
    run_cells,
    select_cells,
    summarize,
)


def _pass(label: str, cells: list[Any], options: Options, jobs: int) -> dict[str, Any]:
    started = time.monotonic()

    def tick(row: Any, n: int, total: int) -> None:
        print(f"   [{label} {n}/{total}] {row.name}: {row.verdict} {row.killed_by}", flush=True)

    rows = run_cells(cells, options, jobs, tick)
    summary = summarize(rows)
    summary["duration_s"] = round(time.monotonic() - started, 1)
    return {"summary": summary, "rows": [r.to_json() for r in rows]}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_selftest")
    p.add_argument("--mode", choices=["both", "full", "machines"], default="both")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--only", nargs="+", default=[])
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv if argv is not None else [])
    cells = select_cells(catalogue_cells(), only=args.only)
    mutants = [c for c in cells if c.kind == "mutant"]
    entries = {c.name: c for c in cells}
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "jobs": args.jobs,
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    print(f"   {len(cells)} rows ({len(mutants)} mutants), {args.jobs} jobs, profile ci")
    if args.mode in ("both", "full"):
        full = _pass("full", cells, Options(profile="ci"), args.jobs)
        out["full"] = full
        s = full["summary"]
        print(
            f"   corpus + machines: kill rate {_pct(s['kill_rate'])} ({s['killed']}/{s['mutants']})"
        )
        print(
            f"     killed by corpus only {s['killed_by']['corpus']}, machine only"
            f" {s['killed_by']['machine']}, both {s['killed_by']['both']}"
        )
        print(
            f"     median time to first divergence {s['median_first_divergence_s']} s,"
            f" median shrunk replay {s['median_replay_steps']} steps"
        )
        print(
            f"     variants conformant {s['variants_conformant']}/{s['variants']},"
            f" unaltered store {s['unaltered']}"
        )
        print(f"     survivors: {', '.join(s['survivors']) or 'none'}")
        print(f"     kills blamed on another clause: {', '.join(s['blamed_elsewhere']) or 'none'}")
    if args.mode in ("both", "machines"):
        machines = _pass("machines", mutants, Options(profile="ci", machines_only=True), args.jobs)
        out["machines"] = machines
        s = machines["summary"]
        print(
            f"   machines alone: kill rate {_pct(s['kill_rate'])} ({s['killed']}/{s['mutants']}),"
            f" median first divergence {s['median_first_divergence_s']} s,"
            f" median shrunk replay {s['median_replay_steps']} steps"
        )
        for name in s["survivors"]:
            print(f"     survivor {name}: {entries[name].summary}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
