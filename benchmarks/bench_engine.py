"""The engine binding: what a run through a host process costs, and how strong each check is.

1. **export** -- ``memspec vectors export`` of every function: vectors, files, wall time.
2. **round trip** -- the exported vectors read back and run through the reference host
   (``memspec engine --vectors DIR --no-properties``): calls per second through the pipe, and
   the ratio to the same judging with the reference called in-process (the binding's price).
3. **properties** -- the host-against-reference properties at profile ``ci``: wall time.
4. **kill matrix** -- every engine mutant by the vectors alone and by the properties alone
   (profile ``ci``); every variant conformant.  Median time to the first divergence.

Figures, not pass/fail: nothing here is timed against a threshold.
Run: ``.venv/bin/python -m benchmarks.bench_engine [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.binding.catalogue import ENTRIES_LIST
from conformance.binding.check import PROPERTY_EXAMPLES, check_engine
from conformance.binding.functions import FUNCTIONS, outcome_of
from conformance.binding.host import EngineHost
from conformance.binding.judge import outcome_allowed
from conformance.binding.vectors import export, load_dir
from conformance.commands import selftest_engine

HOST = f"{sys.executable} -m conformance.engine_host"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_engine")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        index = export(Path(tmp))
        figures["export"] = {
            "vectors": index["vectors"], "files": len(index["files"]),
            "s": round(time.perf_counter() - t, 2),
        }  # fmt: skip
        loaded = load_dir(Path(tmp))
        vectors = {lf.function: lf.vectors for lf in loaded}
        t = time.perf_counter()
        for lf in loaded:  # the same judging, the reference in-process
            fn = next(f for f in FUNCTIONS if f.name == lf.function)
            for v in lf.vectors:
                assert outcome_allowed(outcome_of(fn.call, v.args), v.judged), v.id
        inproc = time.perf_counter() - t
        with EngineHost(HOST) as host:
            t = time.perf_counter()
            runs = check_engine(host, FUNCTIONS, vectors=vectors, properties=False)
            piped = time.perf_counter() - t
        fails = sum(1 for r in runs if r.vectors.verdict != "pass")
        figures["round_trip"] = {
            "calls": index["vectors"], "s": round(piped, 2),
            "calls_per_s": round(index["vectors"] / piped), "failures": fails,
            "in_process_s": round(inproc, 2), "pipe_over_in_process": round(piped / inproc, 1),
        }  # fmt: skip
    with EngineHost(HOST) as host:
        t = time.perf_counter()
        runs = check_engine(host, FUNCTIONS, vectors={f.name: [] for f in FUNCTIONS})
        figures["properties"] = {
            "examples_per_function": PROPERTY_EXAMPLES["ci"], "calls": host.calls,
            "s": round(time.perf_counter() - t, 2),
            "failures": sum(1 for r in runs if r.prop is not None and r.prop.verdict != "pass"),
        }  # fmt: skip
    matrix: dict[str, Any] = {}
    for mode, kw in (("vectors", {"properties": False}), ("properties", {"vectors": False})):
        rows = [selftest_engine.run_entry(e, "ci", **kw) for e in ENTRIES_LIST]
        mutants = [r for r in rows if r.kind == "mutant"]
        killed = [r for r in mutants if r.ok]
        firsts = [r.first_divergence_s for r in killed if r.first_divergence_s is not None]
        matrix[mode] = {
            "mutants": len(mutants), "killed": len(killed),
            "survivors": [r.name for r in mutants if not r.ok],
            "variants_conformant": f"{sum(r.ok for r in rows if r.kind == 'variant')}"
            f"/{sum(1 for r in rows if r.kind == 'variant')}",
            "median_first_divergence_s": round(statistics.median(firsts), 2) if firsts else None,
        }  # fmt: skip
    figures["kill_matrix"] = matrix
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
