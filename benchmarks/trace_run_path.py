"""The module path ``memspec run``'s arguments travel, from ``cli.main`` to the first scenario.

``python -m benchmarks.trace_run_path [memspec run options]`` runs ``memspec run`` (default:
``--spec memory --jobs 1 --quiet`` against the bundled store) under ``sys.setprofile`` and
prints, in order, the orchestration modules of ``conformance`` the thread of control is in
(each call and each return that changes module), from the moment ``cli.main`` hands the parsed
arguments to the command (``args.func(args)`` in ``cli._main``) up to the call of
``conformance.runner.run_scenario``; then how many times the path climbs back to a module it
already passed.  Leaf modules (targets, drivers, oracle, scrubbing, ...) are left out: the path
is the one the options take, not the one a request takes; module imports are left out too.  A
back-and-forth between the same two modules in a loop (A B A B A) counts once (A B A).
Not a benchmark: a map, measured.
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
    path: list[str] = []
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
            path.append("conformance.cli")
        if (
            event == "call"
            and frame.f_code.co_name == "run_scenario"
            and (frame.f_globals.get("__name__") == "conformance.runner")
        ):
            with lock:
                if path[-1] != "conformance.runner":
                    path.append("conformance.runner")
                report(path)
            os._exit(0)
        here = _module(frame if event == "call" else frame.f_back)
        if here is None:
            return
        with lock:
            if path[-1] == here:
                return
            if len(path) >= 3 and path[-2] == here and path[-3] == path[-1]:
                path.pop()  # A B A + B: the loop goes on, A B A stands for it
                return
            path.append(here)

    from conformance.cli import main as memspec

    with tempfile.TemporaryDirectory() as report_dir:
        args = argv or ["--spec", "memory", "--jobs", "1", "--quiet"]
        threading.setprofile(profile)
        sys.setprofile(profile)
        memspec(["run", *args, "--report", report_dir])
    sys.setprofile(None)
    print("no scenario was run", file=sys.stderr)
    sys.exit(1)


def _importing(frame: FrameType | None) -> bool:
    """Whether the frame runs inside a module's import (its top-level code)."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False


def report(path: list[str]) -> None:
    seen: set[str] = set()
    climbs = 0
    for i, module in enumerate(path):
        back = module in seen
        climbs += back
        seen.add(module)
        print(f"{i + 1:3} {'↑ ' if back else '  '}{module}", file=sys.__stdout__)
    print(
        f"{len(path)} hops through {len(seen)} modules; {climbs} climb(s) back to a module"
        " already passed",
        file=sys.__stdout__,
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
