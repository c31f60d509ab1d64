"""``memspec run``: the corpus and the state machines against a target, clause by clause.

With no ``--target`` the bundled store is started in-process on ``127.0.0.1`` (an ephemeral
port, a random token, test controls on) and stopped at the end
(:mod:`conformance.commands.target`); the run itself is the engine's (:mod:`conformance.engine`),
reached through :mod:`conformance.commands.launch`.
"""

from __future__ import annotations

import argparse

from conformance.commands.launch import execute
from conformance.engine.options import CONTRACT, add_options, add_run_options, add_target_options


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="check a store: the scenario corpus and the state machines",
        description=(
            "Replay the scenario corpus and explore with the differential state machines against a"
            " target (default: the bundled store), print the clause table and write a report."
        ),
    )
    add_target_options(p)
    add_run_options(p)
    add_options(p, (CONTRACT,))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return execute(args).exit_code
