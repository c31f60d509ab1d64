"""The module path ``memspec run``'s arguments travel, from ``cli.main`` to the first scenario.

``python -m benchmarks.trace_run_path [memspec run options]`` runs ``memspec run`` (default:
``--spec memory --jobs 1 --quiet`` against the bundled store) under ``sys.setprofile`` from
the moment ``cli.main`` hands the parsed arguments to the command (``args.func(args)`` in
``cli._main``) up to the call of ``conformance.runner.run_scenario``, and follows the call
stack of the orchestration modules of ``conformance`` (leaf modules -- targets, drivers,
oracle, scrubbing -- and module imports are left out: the path is the one the options take,
not the one a request takes).  It prints each call from one module into another in the order
first made, and marks a *climb back up*: a call into a module that is already on the stack
above (a module calling back into one of its callers).  A call that returns to its caller is
no climb.  Not a benchmark: a map, measured.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from types import FrameType
from typing import Any

#: The orchestration level: where a run's options are read, turned into a run and driven.
LEVELS = (
    "conformance.cli",
    "conformance.commands",
    "conformance.engine",
    "conformance.session",
    "conformance.runner",
    "conformance.workers",
    "conformance.report",
    "conformance.shard",
)


def _module(frame: FrameType | None) -> str | None:
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("conformance."):
            return name if name.startswith(LEVELS) else None
        frame = frame.f_back
    return None


def main(argv: list[str]) -> None:
    calls: list[tuple[str, str, bool]] = []  # (caller, callee, a climb back up)
    stacks: dict[int, list[str]] = {}  # per thread: the orchestration module of each frame
    lock = threading.Lock()
    started = threading.Event()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return") or _importing(frame):
            return
        if not started.is_set():
            caller = frame.f_back
            if not (
                event == "call"
                and caller is not None
                and caller.f_code.co_name == "_main"
                and caller.f_globals.get("__name__") == "conformance.cli"
                and frame.f_globals.get("__name__", "").startswith("conformance.commands")
            ):
                return
            started.set()
        name = frame.f_globals.get("__name__", "")
        here = name if name.startswith(LEVELS) else None
        with lock:
            stack = stacks.setdefault(threading.get_ident(), ["conformance.cli"])
            if event == "return":
                if here is not None and len(stack) > 1 and stack[-1] == here:
                    stack.pop()
                return
            if here is None:
                return
            if name == "conformance.runner" and frame.f_code.co_name == "run_scenario":
                _add(calls, stack[-1], here, here in stack[:-1])
                report(calls)
                os._exit(0)
            _add(calls, stack[-1], here, here in stack[:-1])
            stack.append(here)

    from conformance.cli import main as memspec

    with tempfile.TemporaryDirectory() as report_dir:
        args = argv or ["--spec", "memory", "--jobs", "1", "--quiet"]
        threading.setprofile(profile)
        sys.setprofile(profile)
        memspec(["run", *args, "--report", report_dir])
    sys.setprofile(None)
    print("no scenario was run", file=sys.stderr)
    sys.exit(1)


def _add(calls: list[tuple[str, str, bool]], caller: str, callee: str, climb: bool) -> None:
    """Record one call between two modules (each distinct call once, in the order first made)."""
    if caller != callee and (caller, callee, climb) not in calls:
        calls.append((caller, callee, climb))


def _importing(frame: FrameType | None) -> bool:
    """Whether the frame runs inside a module's import (its top-level code)."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False


def report(calls: list[tuple[str, str, bool]]) -> None:
    modules = {m for caller, callee, _ in calls for m in (caller, callee)}
    for caller, callee, climb in calls:
        mark = "  ↑ climbs back up" if climb else ""
        print(f"  {caller} -> {callee}{mark}", file=sys.__stdout__)
    climbs = sum(climb for _, _, climb in calls)
    print(
        f"{len(calls)} distinct calls between {len(modules)} modules; {climbs} climb(s) back up",
        file=sys.__stdout__,
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
