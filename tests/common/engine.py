"""``run_engine``: one run of the engine against an already reachable target, watched by the
console observer (``quiet``: no progress line; ``out``: where the summary goes)."""

from __future__ import annotations

from typing import Any, TextIO

from conformance.engine import RunConfig, RunResult, run
from conformance.engine.progress import Progress
from conformance.vocabulary import TargetConfig


def run_engine(
    config: TargetConfig, *, quiet: bool = False, out: TextIO | None = None, **fields: Any
) -> RunResult:
    """``fields`` are :class:`RunConfig` fields (``spec``, ``machines``, ``report_dir``, ...)."""
    if "expectations" in fields:
        fields["expectations"] = tuple(fields["expectations"])
    return run(RunConfig(target=config, **fields), Progress(enabled=not quiet, out=out))
