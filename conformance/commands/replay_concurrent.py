"""``memspec replay-concurrent FILE``: re-run a concurrent counterexample's schedule (saved by
``memspec run --clients N``, :mod:`conformance.engine.concurrent`) and check it again."""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.commands.target import open_target
from conformance.concurrent.run import ReplayError, load_replay, replay_once
from conformance.engine.options import add_target_options
from conformance.errors import UsageError
from conformance.session import new_run_id


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay-concurrent",
        help="re-run a concurrent counterexample's schedule and check it again",
        description=(
            "Re-run the concurrent schedule saved by `memspec run --clients N` (same clients, same"
            " operations, same invocation offsets) on fresh scopes and check the new history."
            " A race needs luck: the schedule is re-run up to --attempts times until the history"
            " is not linearizable."
        ),
    )
    add_target_options(p)
    p.add_argument("file", help="replays/concurrent-<protocol>.json from a report directory")
    p.add_argument(
        "--attempts", type=int, default=20, metavar="N", help="re-runs at most (default 20)"
    )
    p.set_defaults(func=replay_command)


def replay_command(args: argparse.Namespace) -> int:
    if args.attempts < 1:
        raise UsageError("--attempts must be at least 1")
    try:
        data = load_replay(Path(args.file))
    except ReplayError as exc:
        raise UsageError(str(exc)) from exc
    run_id = new_run_id()
    with open_target(args) as session:
        verdict = "linearizable"
        for attempt in range(1, args.attempts + 1):
            verdict, history, _ = replay_once(session.config, data, run_id, attempt)
            if verdict == "not linearizable":
                print(
                    f"replay-concurrent: NOT LINEARIZABLE on attempt {attempt}"
                    f" ({len(history.events)} operations;"
                    f" clauses {', '.join(data.get('clauses', []))})"
                )
                return 1
        print(
            f"replay-concurrent: {verdict} in all {args.attempts} attempt(s)"
            " (the race did not reproduce)"
        )
        return 0
