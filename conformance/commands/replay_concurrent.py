"""``memspec replay-concurrent FILE``, and the CLI side of the concurrent check that
``memspec run/fuzz --clients N`` attach.

``run``/``fuzz`` call :func:`attach_concurrent` once, after their usual pipeline, against the
same target: it runs the concurrent check per protocol, writes the counterexample's replay
file and timeline into the report directory, adds a ``concurrent`` section to
``report.json`` (drawn in ``report.html``, a counterexample as a timeline) and turns the exit
code to 1 when a history is not linearizable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from conformance.concurrent.run import (
    PROTOCOLS,
    ConcurrentResult,
    ReplayError,
    load_replay,
    replay_once,
    run_concurrent,
    save_replay,
)
from conformance.errors import UsageError
from conformance.report.html import report_html
from conformance.report.timeline import timeline_page
from conformance.scrub import clean, dumps, scrub_text
from conformance.vocabulary import TargetConfig

MAX_CLIENTS = 64


def check_clients(n: int | None) -> None:
    if n is not None and not 1 <= n <= MAX_CLIENTS:
        raise UsageError(f"--clients must be 1-{MAX_CLIENTS}")


def concurrent_checks(
    config: TargetConfig,
    *,
    protocols: list[str],
    clients: int,
    seed: int,
    profile: str,
    run_id: str,
    report_dir: Path | None,
) -> list[ConcurrentResult]:
    out: list[ConcurrentResult] = []
    for protocol in protocols:
        if protocol not in PROTOCOLS:
            continue
        result = run_concurrent(
            config, run_id=run_id, protocol=protocol, clients=clients, seed=seed, profile=profile
        )
        if report_dir is not None:
            report_dir.mkdir(parents=True, exist_ok=True)
            if result.counterexample is not None:
                save_replay(result, report_dir / "replays" / f"concurrent-{protocol}.json")
                events = result.counterexample.to_json()["events"]
                title = f"{protocol}: smallest non-linearizable sub-history found"
                note = (
                    f"{len(events)} operations of scope {result.counterexample.partition}"
                    f" (from {result.counterexample.full_ops}); faded bars: answer not needed."
                )
            elif result.history is not None:
                events = result.history.to_json()
                title, note = f"{protocol}: last concurrent history ({result.verdict})", ""
            else:  # pragma: no cover
                continue
            path = report_dir / f"concurrent-{protocol}.html"
            page = timeline_page(events, title=title, note=note)
            path.write_text(scrub_text(page), encoding="utf-8")
            result.timeline_path = str(path)
        out.append(result)
    return out


def attach_concurrent(
    outcome: Any, config: TargetConfig, args: argparse.Namespace, out: Any = None
) -> None:
    """The one call ``run``/``fuzz`` make when ``--clients N`` is given."""
    from conformance.commands.run import protocols_for

    out = out or sys.stdout
    clients = int(args.clients)
    check_clients(clients)
    seed = getattr(args, "seed", None)
    run_id = str(outcome.data.get("run_id") or outcome.report.run_id)
    results = concurrent_checks(
        config,
        protocols=protocols_for(args.spec),
        clients=clients,
        seed=seed if seed is not None else 0,
        profile=getattr(args, "profile", "ci") or "ci",
        run_id=run_id,
        report_dir=outcome.report_dir,
    )
    section = [r.to_json() for r in results]
    outcome.data["concurrent"] = section
    for r in results:
        line = (
            f"concurrent {r.protocol}: {r.clients} clients, {r.ops} operations in {r.rounds_run}"
            f" round(s): {r.verdict.upper()}"
        )
        if r.counterexample is not None:
            ce = r.counterexample
            line += f" — counterexample of {len(ce.events)} operations ({', '.join(ce.clauses)})"
            if r.replay_path:
                line += f", replay {r.replay_path}"
        print(line, file=out)
        if r.verdict == "not linearizable":
            outcome.exit_code = 1
            outcome.data["exit_code"] = 1
    if outcome.report_dir is not None:
        path = Path(outcome.report_dir) / "report.json"
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            data["concurrent"] = clean(section)
            if outcome.exit_code == 1:
                data["exit_code"] = 1
            path.write_text(dumps(data, indent=2) + "\n", encoding="utf-8")
            # report.html draws the section (and a counterexample's timeline) too.
            html_path = Path(outcome.report_dir) / "report.html"
            html_path.write_text(scrub_text(report_html(data)), encoding="utf-8")


# --------------------------------------------------------------------------- replay-concurrent


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from conformance.commands.run import add_target_options

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
    from conformance.commands.run import new_run_id, open_target

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
