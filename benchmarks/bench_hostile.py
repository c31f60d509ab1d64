"""memspec against every hostile-target mode at a realistic setting: the table of
docs/hostile-targets.md (mode, protocol, exit code, wall time, peak RSS of the whole process
tree, report size, token found).

Each mode runs ``memspec run --spec <protocol> --profile ci --timeout 2`` (default ``--jobs``
and ``--procs``: two worker processes) in its own interpreter (``tests/hostile/run_modes.py``)
against ``tests/hostile/hostile_server.py`` in front of a bundled store.  Every mode runs with
the memory protocol; the modes that bloat every answer (1 M tiny records, 4 MiB of text) run
with the ledger protocol too.

* **peak RSS (tree)**: the largest sum of the resident sets of the harness and its worker
  processes, sampled every 10 ms (``run_modes.TreeSampler``); goal <= 320 MB;
* **report**: the bytes of the whole report folder (report.json, junit.xml, report.html,
  replays); goal <= 50 MB;
* **token found**: any run of 6 characters of the token, in any encoding
  (``hostile_server.token_fragments``), in stdout, stderr or any report file.

Run: ``.venv/bin/python -m benchmarks.bench_hostile [--profile quick] [--modes a,b]``
(about 15 minutes with the ci profile).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HOSTILE = Path(__file__).resolve().parents[1] / "tests" / "hostile"
TREE_GOAL_MB = 320
REPORT_GOAL_MB = 50


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HOSTILE))
    import test_hostile_targets as t  # noqa: PLC0415 - a test helper, found on sys.path
    from hostile_server import BLOAT_MODES, MODES  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="bench_hostile")
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--modes", default="", help="comma-separated modes (default: all)")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m] or list(MODES)
    plan = [("memory", modes), ("ledger", [m for m in modes if m in BLOAT_MODES])]
    rows = []
    bad = 0
    for protocol, chosen in plan:
        if not chosen:
            continue
        with tempfile.TemporaryDirectory() as d:
            runs = t.run_all(
                Path(d),
                modes=chosen,
                timeout_s=args.timeout,
                examples=None,
                profile=args.profile,
                one_process_each=True,
                protocol=protocol,
            )
            for mode in chosen:
                r = runs[mode]
                leaks = sorted({f for found in t.leaks(mode, r).values() for f in found})
                problems = [p for p in t.check_mode(mode, r) if not p.startswith("took")]
                size_mb = t.report_bytes(r) / 1e6
                bad += bool(problems) or bool(leaks)
                if problems:
                    print(f"{mode} ({protocol}): {problems[:3]}", file=sys.stderr)
                rows.append(
                    (
                        mode,
                        protocol,
                        r["exit"],
                        r["wall_s"],
                        # the sampled sum, or the harness's own exact peak if larger (a
                        # 10 ms sample can miss a short peak of a run without workers)
                        max(r["tree_rss_mb"], r["peak_rss_mb"]),
                        r["peak_rss_mb"],
                        size_mb,
                        "yes: " + ", ".join(leaks[:3]) if leaks else "never",
                    )
                )
    print(
        f"memspec run --profile {args.profile} --timeout {args.timeout:g} against each mode"
        f" (goals: process tree <= {TREE_GOAL_MB} MB, report <= {REPORT_GOAL_MB} MB)\n"
    )
    print(
        "| mode | protocol | exit | wall s | peak RSS, process tree MB | harness process MB"
        " | report MB | token found |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for mode, protocol, code, wall, tree, own, size, leak in rows:
        print(
            f"| {mode} | {protocol} | {code} | {wall:.1f} | {tree:.0f} | {own:.0f}"
            f" | {size:.1f} | {leak} |"
        )
    worst_tree = max(r[4] for r in rows)
    worst_report = max(r[6] for r in rows)
    print(
        f"\nworst process tree {worst_tree:.0f} MB ({worst_tree / TREE_GOAL_MB:.2f} of the goal),"
        f" largest report {worst_report:.1f} MB ({worst_report / REPORT_GOAL_MB:.2f} of the goal)"
    )
    return 1 if bad or worst_tree > TREE_GOAL_MB or worst_report > REPORT_GOAL_MB else 0


if __name__ == "__main__":
    sys.exit(main())
