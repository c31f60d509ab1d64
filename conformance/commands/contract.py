"""``memspec contract``: the command and its options; the run itself is
:func:`conformance.contract.run_contract`."""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.commands.target import open_target
from conformance.contract import PROFILES, run_contract
from conformance.engine.config import DEFAULT_REPORT_DIR
from conformance.engine.options import add_target_options
from conformance.errors import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "contract",
        help="fuzz a store against the OpenAPI documents (auth, size fence, validation, shapes)",
        description=(
            "Generate valid and invalid requests from specs/*.openapi.yaml with schemathesis,"
            " probe auth and the size fence on every data route, and judge every answer against"
            " the documents.  Writes generated data: use a disposable store."
        ),
    )
    add_target_options(p)
    p.add_argument(
        "--spec", choices=["memory", "ledger", "all"], default="all", help="which protocol(s)"
    )
    p.add_argument(
        "--profile",
        choices=list(PROFILES),
        default="quick",
        help="examples per operation and mode: "
        + ", ".join(f"{k} {v}" for k, v in PROFILES.items()),
    )
    p.add_argument("--examples", type=int, metavar="N", help="examples per operation and mode")
    p.add_argument("--seed", type=int, help="seed of the generation (reproduces a run)")
    p.add_argument(
        "--report",
        metavar="DIR",
        default=DEFAULT_REPORT_DIR,
        help=f"report directory (default {DEFAULT_REPORT_DIR}/)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.examples is not None and args.examples < 1:
        raise UsageError("--examples must be at least 1")
    report_dir = Path(args.report) if args.report else None
    if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"--report {report_dir}: exists and is not a directory")
    with open_target(args) as session:
        data = run_contract(
            session.config,
            spec=args.spec,
            profile=args.profile,
            examples=args.examples,
            seed=args.seed,
            report_dir=report_dir,
            quiet=bool(args.quiet),
        )
    return int(data["exit_code"])
