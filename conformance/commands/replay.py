"""``memspec replay FILE``: run one scenario and show model and target side by side.

Each step prints what was sent, every answer the model allows, and what the target said; the
replay stops at the first step where they differ (exit 1), or ends conformant (exit 0).  A
scenario that needs a capability the target lacks is reported as skipped (exit 0, says so).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from pathlib import Path
from typing import TextIO

from conformance.commands.target import open_target
from conformance.engine.drivers import build_drivers
from conformance.engine.options import add_level_option, add_target_options
from conformance.errors import UsageError
from conformance.jsonutil import short_json
from conformance.report.console import said_line, sent_line
from conformance.runner import run_scenario
from conformance.scenario import ScenarioError, load_scenario
from conformance.scrub import REASON_LIMIT, shown
from conformance.session import new_run_id
from conformance.vocabulary import RunContext, StepOutcome


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay one scenario file, model and target side by side",
        description="Run one scenario (a corpus file or a shrunk counterexample) step by step,"
        " printing the model's allowed answers and the target's answer side by side, and stop"
        " at the first difference.",
    )
    p.add_argument("file", type=Path, help="scenario JSON file")
    add_target_options(p)
    p.add_argument("--allow-dirty", action="store_true", help="see memspec run --help")
    p.add_argument("--width", type=int, default=0, help="column width (default: fit the terminal)")
    add_level_option(p)
    p.set_defaults(func=run)


def _wrap(text: str, width: int) -> list[str]:
    out: list[str] = []
    for line in text.splitlines() or [""]:
        out.extend(
            textwrap.wrap(line, width, break_long_words=True, replace_whitespace=False) or [""]
        )
    return out


def print_side_by_side(o: StepOutcome, out: TextIO, width: int) -> None:
    ex = o.exchange
    mark = {
        "pass": "ok",
        "diverge": "DIFFERS",
        "deviate": "DIFFERS FROM THE REFERENCE",
        "indeterminate": "INDETERMINATE",
        "skip": "skipped",
    }[o.verdict]
    out.write(
        f"\n── step {o.index}: {o.op} ── {mark}"
        + (f"  [{', '.join(o.clauses)}]" if o.verdict != "pass" else "")
        + "\n"
    )
    if ex is not None:
        out.write(f"   sent: {sent_line(ex.to_json())}\n")
    left = _wrap(o.expected or "(nothing: the step did not run)", width)
    if ex is None:
        said = "(no request)"
    elif ex.transport_error or ex.body is None:
        said = said_line(ex.to_json())
    elif (
        isinstance(ex.body, dict)
        and set(ex.body) == {"records"}
        and isinstance(ex.body["records"], list)
    ):
        lines = [f"{ex.status} records:" if ex.body["records"] else f"{ex.status} records: none"]
        for i, r in enumerate(ex.body["records"]):
            if isinstance(r, dict):
                used = f", last used {short_json(r['lastUsedAt'], 60)}" if "lastUsedAt" in r else ""
                rid, text = short_json(r.get("id"), 200), short_json(r.get("text"), 500)
                lines.append(
                    f"  {i + 1}. {rid} {text} useCount {short_json(r.get('useCount'), 40)}{used}"
                )
            else:
                lines.append(f"  {i + 1}. {short_json(r, 200, sort_keys=True)}")
        said = "\n".join(lines)
    else:
        said = f"{ex.status} {short_json(ex.body, 2000, sort_keys=True)}"
    right = _wrap(said, width)
    out.write(f"   {'the model allows':<{width}} │ the target said\n")
    out.write(f"   {'─' * width}─┼─{'─' * width}\n")
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        out.write(f"   {a:<{width}} │ {b}\n")
    if o.reason:
        out.write(f"   → {shown(o.reason, REASON_LIMIT)}\n")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        scenario = load_scenario(args.file)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from exc
    width = args.width or max(30, (shutil.get_terminal_size((160, 20)).columns - 8) // 2)
    out.write(f"replaying {scenario.name} ({scenario.protocol}, {len(scenario.steps)} steps)\n")
    if scenario.description:
        out.write(f"  {scenario.description}\n")
    with open_target(args) as session:
        ctx = RunContext(run_id=new_run_id(), target=session.config, allow_dirty=args.allow_dirty)
        drivers = build_drivers(ctx, [scenario.protocol], strict=True, notes=[])
        driver = drivers[scenario.protocol]
        try:
            result = run_scenario(
                driver, scenario, on_step=lambda _r, o: print_side_by_side(o, out, width)
            )
        finally:
            driver.close()
    out.write("\n")
    if result.verdict == "pass":
        out.write(f"conformant: all {len(result.outcomes)} steps match the model\n")
        return 0
    if result.verdict == "skip":
        out.write(f"skipped: {result.reason}\n")
        return 0
    if result.verdict == "deviate":
        level = getattr(args, "level", "seed")
        out.write(
            f"conformant at the seed level; {result.reason} (a reference clause only"
            + (": fails at --level reference)\n" if level == "reference" else ")\n")
        )
        return 1 if level == "reference" else 0
    out.write(f"{'diverges' if result.verdict == 'fail' else 'indeterminate'} at {result.reason}\n")
    return 1
