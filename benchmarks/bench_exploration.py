"""Exploration power of the state machines, ``--profile ci``: runs and steps explored, and —
against a store with three independent mutants of the catalogue (``/forget`` lies, ``/list``
oldest first, ``/retrieve`` reversed; see tests/harness/test_exploration.py) — every distinct
divergence with the time to the first one and the length of each shrunk replay.

1. ``memspec fuzz --profile ci`` against the bundled store: runs/steps per machine (must be
   conformant);
2. ``memspec fuzz --spec memory --profile ci`` against the three-mutant store: the divergences
   found, time to first divergence, runs/steps in total and after the first, replay lengths.

Run: ``.venv/bin/python -m benchmarks.bench_exploration``  (about a minute).
"""

from __future__ import annotations

import io
import secrets
import statistics
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from conformance.commands.target import start_bundled_store
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine
from tests.harness.test_exploration import THREE_MUTANTS  # the test's three mutants


def _fuzz(url: str, token: str, spec: str, out_dir: Path) -> dict[str, Any]:
    config = TargetConfig(url, Secret(token), 10.0, label=url)
    res = run_engine(
        config,
        spec=spec,
        profile="ci",
        corpus=False,
        machines=True,
        report_dir=out_dir,
        quiet=True,
        out=io.StringIO(),
    )
    return res.data


def main() -> int:
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token)
    ok = True
    try:
        with TemporaryDirectory() as tmp:
            started = time.monotonic()
            clean = _fuzz(handle.url, token, "all", Path(tmp) / "clean")
            print(f"bundled store, --profile ci ({time.monotonic() - started:.1f} s):")
            for m in clean["machines"]:
                print(
                    f"  {m['name']}: {m['verdict']}, {m['examples']} runs, {m['steps']} steps"
                    f" ({m['elapsed_s']:.1f} s)"
                )
            probes = clean["summary"].get("probes", {})
            print(f"  transport probes: {probes}")
            ok &= clean["exit_code"] == 0
            three = start_bundled_store(token, quirks=frozenset(THREE_MUTANTS))
            try:
                started = time.monotonic()
                broken = _fuzz(three.url, token, "memory", Path(tmp) / "three")
            finally:
                three.stop()
            (m,) = broken["machines"]
            explored = m["details"]["explored"]
            first = explored.get("first_divergence") or {}
            print(
                f"three mutants, --spec memory --profile ci ({time.monotonic() - started:.1f} s):"
            )
            print(
                f"  {len(m['divergences'])} distinct divergence(s); first after"
                f" {first.get('elapsed_s')} s, {first.get('examples')} runs,"
                f" {first.get('steps')} steps"
            )
            after = explored.get("after_first", {})
            print(
                f"  explored {m['examples']} runs / {m['steps']} steps in total"
                f" ({explored['exploring_examples']} runs of exploration), {after.get('examples')}"
                f" runs / {after.get('steps')} steps after the first divergence"
            )
            lengths = []
            for d in m["divergences"]:
                n = d["steps"]
                lengths.append(n)
                shrink = d["details"].get("shrink_s")
                print(f"  {d['clauses'][0]:<12} replay {n} step(s), shrinking {shrink} s")
            if lengths:
                print(f"  median replay length {statistics.median(lengths)}")
            leading = {d["clauses"][0] for d in m["divergences"]}
            ok &= {"MEM-STORE.7", "MEM-STORE.8", "MEM-SCORE.1"} <= leading
            ok &= all(n <= 5 for n in lengths)
    finally:
        handle.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
