"""``memspec engine --host "CMD"``: check an engine in any language through its host process.

The host speaks the engine binding (``specs/engine-binding.md``): JSON lines on stdin/stdout.
memspec runs every vector (built now, or read back from ``--vectors DIR``), then Hypothesis
properties comparing the host with the reference model, and reports as ``memspec run`` does:
the clause table, ``report.json``/``junit.xml``/``report.html`` (``--report``), ``--expect``,
exit 0 (conformant) / 1 (a divergence, or a host that failed) / 2 (usage).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from conformance.errors import UsageError
from conformance.sources import DEFAULT_LEVEL, LEVELS

if TYPE_CHECKING:
    from conformance.binding.functions import Fn
    from conformance.binding.vectors import Vector
    from conformance.report import RunReport

PROFILES = ("quick", "ci", "deep")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "engine",
        help="check an engine (any language) through a JSON-lines host process",
        description="Start CMD as the engine host, run every exported vector and the"
        " host-against-reference properties through it, print the clause table and write a"
        " report like memspec run.",
    )
    p.add_argument("--host", required=True, metavar="CMD", help="the host command line")
    p.add_argument("--spec", choices=["memory", "ledger", "all"], default="all")
    p.add_argument("--only", nargs="+", default=[], metavar="FN", help="check these functions")
    p.add_argument("--vectors", metavar="DIR", help="run the vectors of an exported DIR")
    p.add_argument("--profile", choices=PROFILES, default="ci", help="property examples")
    p.add_argument("--examples", type=int, metavar="N", help="property examples per function")
    p.add_argument("--seed", type=int, default=0, help="property seed (default 0)")
    p.add_argument("--no-properties", action="store_true", help="vectors only")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per call (default 5)")
    p.add_argument(
        "--startup-grace",
        type=float,
        default=15.0,
        metavar="S",
        help="seconds added to the first call after the host starts (default 15)",
    )
    p.add_argument("--report", metavar="DIR", default="memspec-report", help="report directory")
    p.add_argument("--no-report", action="store_true", help="write no report files")
    p.add_argument("--expect", metavar="FILE", help="known divergences, each with a reason")
    p.add_argument(
        "--level",
        choices=LEVELS,
        default=DEFAULT_LEVEL,
        help="seed (default): an answer only a reference rule forbids is a deviation, reported"
        " and passing; reference: deviations fail too (as memspec run --level)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def _functions(args: argparse.Namespace) -> tuple[list[Fn], dict[str, list[Vector]] | None]:
    """The functions ``--spec``/``--only``/``--vectors`` keep, and the vectors read back from
    ``--vectors DIR`` (``None``: build them now)."""
    from conformance.binding.functions import FUNCTIONS
    from conformance.binding.vectors import load_dir

    functions = [f for f in FUNCTIONS if args.spec == "all" or f.spec == args.spec]
    if args.only:
        known = {f.name for f in FUNCTIONS}
        unknown = [n for n in args.only if n not in known]
        if unknown:
            raise UsageError(f"--only: unknown function(s) {', '.join(unknown)}")
        functions = [f for f in functions if f.name in args.only]
    vectors = None
    if args.vectors:
        try:
            loaded = load_dir(Path(args.vectors))
        except ValueError as exc:
            raise UsageError(f"--vectors: {exc}") from exc
        vectors = {lf.function: lf.vectors for lf in loaded}
        functions = [f for f in functions if f.name in vectors]
    return functions, vectors


def _new_report(args: argparse.Namespace, examples: int) -> RunReport:
    """The run's report before any result: the host, the options and ``--expect``'s entries."""
    from conformance.report import RunReport
    from conformance.report.expect import ExpectError, load_expectations

    expectations = []
    if args.expect:
        try:
            expectations = load_expectations(args.expect)
        except ExpectError as exc:
            raise UsageError(str(exc)) from exc
    return RunReport(
        run_id=f"memspec-{uuid.uuid4().hex[:8]}",
        target={"url": None, "label": "engine host", "host": args.host, "token": "none"},
        options={
            "spec": args.spec,
            "profile": args.profile,
            "seed": args.seed,
            "examples": examples,
            "properties": not args.no_properties,
            "vectors": args.vectors,
            "expect": args.expect,
            "level": args.level,
        },
        expectations=list(expectations),
        expect_file=args.expect,
        level=args.level,
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from conformance.binding.check import PROPERTY_EXAMPLES, check_engine
    from conformance.binding.host import EngineHost
    from conformance.report import write_report
    from conformance.report.console import print_summary
    from conformance.report.model import now_iso

    out = out or sys.stdout
    if args.timeout <= 0 or args.startup_grace < 0:
        raise UsageError("--timeout must be positive and --startup-grace not negative")
    examples = args.examples if args.examples is not None else PROPERTY_EXAMPLES[args.profile]
    if examples < 1:
        raise UsageError("--examples must be at least 1")
    functions, vectors = _functions(args)
    report = _new_report(args, examples)
    started = time.perf_counter()
    progress = None if args.quiet else sys.stderr

    def on_result(r: object) -> None:
        if progress is not None:
            name, verdict = getattr(r, "name", "?"), getattr(r, "verdict", "?")
            progress.write(f"  {name}: {verdict} ({getattr(r, 'elapsed_s', 0.0):.2f}s)\n")
            progress.flush()

    with EngineHost(args.host, timeout_s=args.timeout, startup_grace_s=args.startup_grace) as host:
        runs = check_engine(
            host,
            functions,
            vectors=vectors,
            examples=examples,
            seed=args.seed,
            properties=not args.no_properties,
            on_result=on_result,
        )
        report.notes.extend(f"host {f}" for f in host.failures[:20])
        report.notes.append(f"{host.calls} calls, host started {host.starts} time(s)")
    for r in runs:
        report.scenarios.append(r.vectors)
        if r.prop is not None:
            report.scenarios.append(r.prop)
    report.finished_at = now_iso()
    report.duration_s = time.perf_counter() - started
    data = write_report(report, Path(args.report), {}) if not args.no_report else report.to_json()
    print_summary(data, out, report_dir=None if args.no_report else args.report)
    return int(data["exit_code"])
