"""``memspec fuzz``: the differential state machines only (no corpus), same report as ``run``."""

from __future__ import annotations

import argparse

from conformance.commands.launch import execute
from conformance.engine.options import add_run_options, add_target_options


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "fuzz",
        help="explore a store with the differential state machines only",
        description="Drive model and target in lockstep with Hypothesis state machines; every"
        " distinct divergence is shrunk to its own minimal replay file in the report directory,"
        " and exploration goes on with it set aside.  The transport probes (auth, methods,"
        " fences) run once each, reported apart.",
    )
    add_target_options(p)
    add_run_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return execute(args, corpus=False, machines=True).exit_code
