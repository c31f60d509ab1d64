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
import os
import resource
import sys
import threading
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


def _status_kb(pid: int | str, field: str) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


class TreeSampler:
    """The peak resident set of this process and every process it starts (the run's worker
    processes): every 10 ms, the sum of their current ``VmRSS``; the largest sum seen.  (Not
    the sum of each process's own peak: those need not coincide, and a process that parsed
    one large answer early keeps that peak while its memory is long given back.)  A spike
    shorter than 10 ms may be missed; this process's own ``VmHWM`` is reported beside it."""

    def __init__(self) -> None:
        self.peak_kb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.01):
            total = _status_kb(me, "VmRSS:")
            todo = _children(me)
            while todo:
                pid = todo.pop()
                todo += _children(pid)
                total += _status_kb(pid, "VmRSS:")
            self.peak_kb = max(self.peak_kb, total)

    def stop(self) -> float:
        """The tree's peak in KiB."""
        self._stop.set()
        self._thread.join()
        return self.peak_kb


def reset_peak() -> None:
    """Start this process's high-water mark afresh (Linux: ``clear_refs`` 5), so each mode's
    peak is its own."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def main() -> None:
    plan = json.loads(open(sys.argv[1], encoding="utf-8").read())
    from conformance.cli import main as memspec

    results = []
    for item in plan:
        out, err = io.StringIO(), io.StringIO()
        reset_peak()
        sampler = TreeSampler()
        started = time.monotonic()
        crashed = ""
        code = -1
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = memspec(item["argv"])
            except BaseException:  # noqa: BLE001 - recorded, the test fails on it
                crashed = traceback.format_exc()
        wall = time.monotonic() - started
        tree_mb = sampler.stop() / 1024
        rss_mb = peak_rss_kb() / 1024
        results.append(
            {
                "mode": item["mode"],
                "exit": code,
                "wall_s": round(wall, 2),
                "peak_rss_mb": round(rss_mb, 1),
                "tree_rss_mb": round(tree_mb, 1),
                "stdout": out.getvalue(),
                "stderr": err.getvalue(),
                "crashed": crashed,
            }
        )
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=True)


if __name__ == "__main__":
    main()
