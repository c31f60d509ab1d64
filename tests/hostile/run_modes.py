"""Run ``memspec run`` against hostile targets, one after another, in this one process, and
write what happened: exit code, wall time, peak RSS (after the mode: the process's maximum so
far), the streams, and whether anything raised out of the CLI.

``python run_modes.py PLAN.json RESULTS.json`` — PLAN is ``[{mode, argv}]``.  Run as a
subprocess so its peak memory is its own.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time
import traceback


def peak_rss_kb() -> float:
    """This interpreter's peak resident set in KiB: ``VmHWM`` of its own address space.

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux keeps that high-water mark across
    ``execve``, so a process started from a large parent (a pytest worker of 300 MB) reports
    the parent's size, not its own.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    plan = json.loads(open(sys.argv[1], encoding="utf-8").read())
    from conformance.cli import main as memspec

    results = []
    for item in plan:
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        crashed = ""
        code = -1
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = memspec(item["argv"])
            except BaseException:  # noqa: BLE001 - recorded, the test fails on it
                crashed = traceback.format_exc()
        wall = time.monotonic() - started
        rss_mb = peak_rss_kb() / 1024
        results.append(
            {
                "mode": item["mode"],
                "exit": code,
                "wall_s": round(wall, 2),
                "peak_rss_mb": round(rss_mb, 1),
                "stdout": out.getvalue(),
                "stderr": err.getvalue(),
                "crashed": crashed,
            }
        )
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=True)


if __name__ == "__main__":
    main()
