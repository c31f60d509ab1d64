"""Race mutants under the ``ci`` profile: caught, counterexample size and shrink cost.

For each race mutant of the bundled store (``conformance/embedded/catalogue/race_mutants.py``),
``RUNS`` whole ``--clients 8`` runs of the ``ci`` profile (seeds 0..RUNS-1, each up to the
profile's rounds): whether the run caught it, the counterexample's size (operations; goal: at
most 6), the shrink's re-checks and CPU seconds, and the run's wall seconds.  Counts and
distributions only -- never a timed test.  Run:
``.venv/bin/python -m benchmarks.bench_race_shrink [--runs N] [NAME ...]`` (a few minutes).
"""

from __future__ import annotations

import secrets
import sys
import time
from collections import Counter

from conformance.commands.target import start_bundled_store
from conformance.concurrent.run import run_concurrent
from conformance.embedded.catalogue import mutants
from conformance.vocabulary import Secret, TargetConfig

RUNS = 5
GOAL = 6


def measure(name: str, protocol: str, runs: int) -> None:
    token = secrets.token_urlsafe(16)
    handle = start_bundled_store(token, frozenset({name}))
    sizes: list[int | None] = []
    checks: list[int] = []
    reruns: list[int] = []
    missed: list[str] = []
    shrink_cpu: list[float] = []
    walls: list[float] = []
    try:
        config = TargetConfig(handle.url, Secret(token), 10.0)
        for seed in range(runs):
            started = time.perf_counter()
            result = run_concurrent(
                config,
                run_id=f"memspec-bshr{seed}-{secrets.token_hex(3)}",
                protocol=protocol,
                clients=8,
                seed=seed,
                profile="ci",
            )
            walls.append(time.perf_counter() - started)
            ce = result.counterexample
            if result.verdict != "not linearizable" or ce is None:
                sizes.append(None)
                missed.append(f"seed {seed}: {result.verdict} in {result.rounds_run} round(s)")
                continue
            reruns.append(ce.reruns)
            sizes.append(len(ce.events))
            checks.append(ce.shrink_checks)
            shrink_cpu.append(ce.shrink_s)
    finally:
        handle.stop()
    caught = [s for s in sizes if s is not None]
    dist = ", ".join(f"{k}:{v}" for k, v in sorted(Counter(caught).items()))
    good = sum(1 for s in caught if s <= GOAL)
    print(
        f"{name:30s} caught {len(caught)}/{runs}  <= {GOAL} ops {good}/{runs}"
        f"  sizes {{{dist}}}  raw {sizes}"
    )
    if caught:
        print(
            f"{'':30s} shrink checks max {max(checks)} mean {sum(checks) / len(checks):.0f};"
            f" shrink s max {max(shrink_cpu):.2f} mean {sum(shrink_cpu) / len(shrink_cpu):.2f};"
            f" run wall s max {max(walls):.1f} mean {sum(walls) / len(walls):.1f};"
            f" schedule re-runs {reruns}"
        )
    for m in missed:
        print(f"{'':30s} missed: {m}")
    sys.stdout.flush()


def main() -> int:
    args = sys.argv[1:]
    runs = RUNS
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        del args[i : i + 2]
    for m in mutants(race=True):
        if args and m.name not in args:
            continue
        measure(m.name, m.protocol, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
