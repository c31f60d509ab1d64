"""What ``memspec run`` and ``memspec fuzz`` share: their options read into a
:class:`~conformance.engine.RunConfig`, the target opened, the engine run with the console
watching.  Not a command of its own."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from conformance.commands.target import open_target
from conformance.engine import RunConfig, RunResult, run
from conformance.engine.options import CONTRACT, RUN, config_fields
from conformance.engine.progress import Progress
from conformance.errors import UsageError
from conformance.report.expect import Expectation, ExpectError, load_expectations, todo_warning
from conformance.shard import WHOLE, parse_shard


def execute(
    args: argparse.Namespace,
    *,
    corpus: bool = True,
    machines: bool = True,
    out: TextIO | None = None,
    write: bool = True,
) -> RunResult:
    """The whole run from command-line options (``write=False``: no report directory)."""
    config = run_config(args, corpus=corpus, machines=machines, write=write)
    with open_target(args) as session:
        observer = Progress(enabled=not getattr(args, "quiet", False), out=out)
        return run(config.on(session.config, session.ledger_extra), observer)


def run_config(
    args: argparse.Namespace, *, corpus: bool, machines: bool, write: bool = True
) -> RunConfig:
    """The run the options ask for (target still unopened); a mistake is a ``UsageError``."""
    update, prune = getattr(args, "expect_update", None), getattr(args, "expect_prune", False)
    expectations, expect_file = _expectations(getattr(args, "expect", None), update, prune)
    shard = WHOLE
    if getattr(args, "shard", None) is not None:
        try:
            shard = parse_shard(args.shard)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    fields = config_fields(vars(args), (*RUN, CONTRACT))
    report = getattr(args, "report", None)
    return RunConfig(
        **fields,
        corpus=corpus,
        machines=machines,
        expectations=tuple(expectations),
        expect_file=expect_file,
        expect_update=bool(update),
        report_dir=Path(report) if write and report else None,
        shard=shard,
    )


def _expectations(
    expect: str | None, update: str | None, prune: bool
) -> tuple[list[Expectation], str | None]:
    """``--expect``/``--expect-update``/``--expect-prune``: the entries and their file."""
    if update and expect and Path(expect) != Path(update):
        raise UsageError("--expect and --expect-update name different files")
    expect_file = update or expect
    if prune and not expect_file:
        raise UsageError("--expect-prune needs --expect FILE or --expect-update FILE")
    if not expect_file or (update and not Path(expect_file).exists()):
        return [], expect_file
    try:
        expectations = load_expectations(expect_file)
    except ExpectError as exc:
        raise UsageError(str(exc)) from exc
    warning = todo_warning(expect_file, expectations)
    if warning:
        print(f"memspec: {warning}", file=sys.stderr)
    return expectations, expect_file
