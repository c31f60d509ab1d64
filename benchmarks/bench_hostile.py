"""memspec against every hostile-target mode at a realistic setting: the table of
docs/hostile-targets.md (mode, exit code, wall time, peak RSS, token found).

Each mode runs ``memspec run --spec memory --profile ci --timeout 2`` in its own interpreter
(``tests/hostile/run_modes.py``) against ``tests/hostile/hostile_server.py`` in front of a
bundled store; peak RSS is that interpreter's ``ru_maxrss``; "token found" searches stdout,
stderr, report.json, report.html, junit.xml and every replay file for the token in every form.
The default test run checks the same with a small profile (tests/hostile/).

Run: ``.venv/bin/python -m benchmarks.bench_hostile``  (a few minutes).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HOSTILE = Path(__file__).resolve().parents[1] / "tests" / "hostile"


def main() -> int:
    sys.path.insert(0, str(HOSTILE))
    import test_hostile_targets as t  # noqa: PLC0415 - a test helper, found on sys.path
    from hostile_server import MODES, token_leaks  # noqa: PLC0415

    timeout_s = 2.0
    with tempfile.TemporaryDirectory() as d:
        runs = t.run_all(
            Path(d), timeout_s=timeout_s, examples=None, profile="ci", one_process_each=True
        )
        rows = []
        bad = 0
        for mode in MODES:
            r = runs[mode]
            leaks = sorted(
                {f for text in t._every_output(r).values() for f in token_leaks(t.TOKEN, text)}
            )
            problems = [p for p in t.check_mode(mode, r) if not p.startswith("took")]
            bad += bool(problems) or bool(leaks)
            rows.append(
                (mode, r["exit"], r["wall_s"], r["peak_rss_mb"], ", ".join(leaks) or "never")
            )
    print(f"memspec run --spec memory --profile ci --timeout {timeout_s:g} against each mode\n")
    print("| mode | exit | wall s | peak RSS MB | token found |")
    print("|---|---|---|---|---|")
    for mode, code, wall, rss, leak in rows:
        print(f"| {mode} | {code} | {wall:.1f} | {rss:.0f} | {leak} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
