"""Run every ``benchmarks/bench_*.py`` module's ``main()`` in turn (``python -m benchmarks``)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import benchmarks


def main() -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )
    failed = 0
    for name in names:
        print(f"== benchmarks.{name}")
        start = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            rc = module.main()
        except Exception as exc:  # report and keep going: one broken bench must not hide others
            print(f"   FAILED: {type(exc).__name__}: {exc}")
            failed += 1
            continue
        if rc not in (None, 0):
            failed += 1
        print(f"   ({time.perf_counter() - start:.1f} s)\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
