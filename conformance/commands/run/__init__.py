"""``memspec run``: the corpus and the state machines against a target, clause by clause.

With no ``--target`` the bundled store is started in-process on ``127.0.0.1`` (an ephemeral
port, a random token, test controls on) and stopped at the end -- ``target`` is the one place
that wires ``conformance.embedded`` in; the harness itself only ever speaks HTTP.

The parts: ``options`` (the target and run option groups), ``target`` (opening the target, the
bundled store), ``drivers`` (one driver per protocol, the ``--jobs`` lanes, run ids) and
``explore`` (the probes and the state machines of one run); this module holds the command and
the pipeline (corpus, machines, contract, report).  The helpers (target options, the bundled
store, building drivers, the whole pipeline) are shared by ``replay``, ``fuzz`` and
``selftest``, which import them from here.  ``selftest`` swaps :class:`Progress` in this
module's namespace to watch a run: :func:`run_pipeline` reads it from here.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.commands.run.drivers import (
    build_drivers,
    default_procs,
    driver_lanes,
    ledger_lanes,
    new_run_id,
    protocols_for,
    start_workers,
)
from conformance.commands.run.explore import explore_all
from conformance.commands.run.options import (
    DEFAULT_JOBS,
    DEFAULT_REPORT_DIR,
    MAX_JOBS,
    add_run_options,
    add_target_options,
)
from conformance.commands.run.target import (
    BUNDLED_LEDGER_LANES,
    TargetSession,
    open_target,
    start_bundled_store,
)
from conformance.drivers.base import Driver
from conformance.errors import UsageError
from conformance.machines.profiles import get_profile
from conformance.report import RunReport, with_transcript, write_report
from conformance.report.console import print_summary
from conformance.report.expect import (
    ExpectError,
    checked_from_report,
    load_expectations,
    maintain,
    todo_warning,
)
from conformance.report.merge import mark_shard_finished, mark_shard_started, shard_report_options
from conformance.report.model import now_iso
from conformance.report.progress import Progress as Progress
from conformance.runner import load_corpus, run_scenarios
from conformance.scenario import Scenario, ScenarioError
from conformance.shard import WHOLE, Shard, base_run_id, parse_shard, select_scenarios, shard_run_id
from conformance.sources import DEFAULT_LEVEL
from conformance.vocabulary import RunContext, TargetConfig

__all__ = [
    "BUNDLED_LEDGER_LANES",
    "DEFAULT_JOBS",
    "DEFAULT_REPORT_DIR",
    "MAX_JOBS",
    "Progress",
    "RunOutcome",
    "TargetSession",
    "add_run_options",
    "add_target_options",
    "build_drivers",
    "driver_lanes",
    "execute",
    "ledger_lanes",
    "load_corpus",
    "new_run_id",
    "open_target",
    "protocols_for",
    "register",
    "run",
    "run_pipeline",
    "start_bundled_store",
]


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
    p.add_argument(
        "--contract",
        metavar="PROFILE",
        choices=("quick", "ci", "deep"),
        help="also fuzz the OpenAPI contract (as `memspec contract --profile PROFILE`); its "
        "findings join the report under their clauses, each with a curl line",
    )
    p.set_defaults(func=run)


@dataclass
class RunOutcome:
    exit_code: int
    data: dict[str, Any]
    report: RunReport
    report_dir: Path | None
    replays: dict[str, Scenario] = field(default_factory=dict)


def execute(
    args: argparse.Namespace,
    *,
    corpus: bool = True,
    machines: bool = True,
    out: Any = None,
    write: bool = True,
) -> RunOutcome:
    """The whole run from command-line options.  Shared by run and fuzz."""
    expectations = []
    update, prune = getattr(args, "expect_update", None), getattr(args, "expect_prune", False)
    if update and args.expect and Path(args.expect) != Path(update):
        raise UsageError("--expect and --expect-update name different files")
    expect_file = update or getattr(args, "expect", None)
    if prune and not expect_file:
        raise UsageError("--expect-prune needs --expect FILE or --expect-update FILE")
    if expect_file and (not update or Path(expect_file).exists()):
        try:
            expectations = load_expectations(expect_file)
        except ExpectError as exc:
            raise UsageError(str(exc)) from exc
        warning = todo_warning(expect_file, expectations)
        if warning:
            print(f"memspec: {warning}", file=sys.stderr)
    shard = WHOLE
    if getattr(args, "shard", None) is not None:
        try:
            shard = parse_shard(args.shard)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    run_id = getattr(args, "run_id", None)
    if run_id is not None and not re.fullmatch(r"memspec-[a-z0-9]{4,20}", run_id):
        raise UsageError(f"--run-id {run_id!r}: expected memspec-[a-z0-9]{{4,20}}")
    if getattr(args, "clients", None) is not None:
        from conformance.commands.replay_concurrent import check_clients

        check_clients(args.clients)
    with open_target(args) as session:
        outcome = run_pipeline(
            session.config,
            spec=args.spec,
            profile_name=getattr(args, "profile", "quick"),
            seed=getattr(args, "seed", None),
            max_examples=getattr(args, "examples", None),
            corpus=corpus,
            machines=machines,
            expectations=expectations,
            expect_file=expect_file,
            report_dir=Path(args.report) if write and getattr(args, "report", None) else None,
            allow_dirty=bool(getattr(args, "allow_dirty", False)),
            quiet=bool(getattr(args, "quiet", False)),
            out=out,
            shard=shard,
            run_id=run_id,
            jobs=int(getattr(args, "jobs", 1) or 1),
            window=int(getattr(args, "window", 1) or 1),
            procs=getattr(args, "procs", None),
            ledger_targets=session.ledger_extra,
            contract=getattr(args, "contract", None),
            level=getattr(args, "level", DEFAULT_LEVEL),
        )
        if getattr(args, "clients", None):
            from conformance.commands.replay_concurrent import attach_concurrent

            attach_concurrent(outcome, session.config, args, out)
    if expect_file and (update or prune):
        results = checked_from_report(outcome.data)
        maintain(expect_file, results, update=bool(update), prune=prune, out=out or sys.stdout)
    return outcome


def run_pipeline(
    config: TargetConfig,
    *,
    spec: str = "all",
    profile_name: str = "quick",
    seed: int | None = None,
    max_examples: int | None = None,
    corpus: bool = True,
    machines: bool = True,
    expectations: list[Any] | None = None,
    expect_file: str | None = None,
    report_dir: Path | None = None,
    allow_dirty: bool = False,
    quiet: bool = False,
    out: Any = None,
    corpus_dir: Path | None = None,
    shard: Shard = WHOLE,
    run_id: str | None = None,
    jobs: int = 1,
    window: int = 1,
    procs: int | None = None,
    ledger_targets: list[TargetConfig] | None = None,
    contract: str | None = None,
    level: str = DEFAULT_LEVEL,
) -> RunOutcome:
    """Drivers, corpus, machines, report — against one already reachable target.

    ``procs``: worker processes the memory lanes live in (``None``: :func:`default_procs`)."""
    out = out or sys.stdout
    protocols = protocols_for(spec)
    scenarios: list[tuple[Scenario, str]] = []
    if corpus:
        try:
            scenarios = (
                load_corpus(protocols) if corpus_dir is None else load_corpus(protocols, corpus_dir)
            )
        except ScenarioError as exc:
            raise UsageError(f"corpus: {exc}") from exc
    if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"--report {report_dir}: exists and is not a directory")
    profile = get_profile(profile_name)
    if max_examples is not None:
        if max_examples < 1:
            raise UsageError("--examples must be at least 1")
        profile = dataclasses.replace(profile, max_examples=max_examples)
    scenarios = select_scenarios(scenarios, shard)
    if shard.count > 1 and machines and seed is None:
        if profile.fixed_seed is None:
            raise UsageError(
                f"--shard with --profile {profile.name} needs --seed N (one seed for all shards)"
            )
        seed = profile.fixed_seed
    started = time.monotonic()
    shard_options = {"spec": spec, "profile": profile.name, "examples": profile.max_examples,
                     "corpus": corpus, "machines": machines, "count": shard.count}  # fmt: skip
    base = run_id or (base_run_id(seed or 0, shard_options) if shard.count > 1 else None)
    run_id = shard_run_id(base, shard) if base else new_run_id()
    if shard.count > 1 and report_dir is not None:
        mark_shard_started(report_dir, shard, base or run_id)
    progress = Progress(enabled=not quiet)
    replays: dict[str, Scenario] = {}
    ctx = RunContext(run_id=run_id, target=config, allow_dirty=allow_dirty, seed=seed)
    notes: list[str] = []
    procs = default_procs(jobs) if procs is None else min(procs, jobs)
    # The workers start first: their interpreters import while the target is probed.
    pool = start_workers(procs if jobs > 1 and (corpus or machines) else 0, ctx, protocols, notes)
    try:
        drivers = build_drivers(ctx, protocols, strict=spec != "all", notes=notes)
    except BaseException:
        if pool is not None:
            pool.close()
        raise
    if shard.count > 1 and "ledger" in drivers:
        notes.append(f"shard {shard.label}: the ledger needs a store instance of its own per shard")
    report = RunReport(
        run_id=run_id,
        target=config.public(),
        options={
            "spec": spec,
            "profile": profile.name if machines else None,
            "seed": seed,
            "allow_dirty": allow_dirty,
            "expect": expect_file,
            "corpus": corpus,
            "machines": machines,
            **shard_report_options(shard, base, profile.max_examples),
            "jobs": jobs,
            "window": window,
            "procs": procs if pool is not None else 0,
        },
        expectations=list(expectations or []),
        expect_file=expect_file,
        notes=notes,
        level=level,
    )
    extra: list[Driver] = []
    try:
        for protocol, driver in drivers.items():
            report.capabilities[protocol] = sorted(driver.capabilities())
        lanes = driver_lanes(drivers, jobs, pool=pool, ctx=ctx, notes=notes)
        if pool is not None and not any(
            getattr(d, "remote", False) for d in lanes.get("memory", [])
        ):
            report.options["procs"] = 0  # the workers did not start: thread lanes (noted)
        if "ledger" in drivers and ledger_targets:
            lanes["ledger"] += ledger_lanes(ctx, ledger_targets, notes)
        extra = [d for ds in lanes.values() for d in ds[1:]]
        for d in [d for ds in lanes.values() for d in ds]:
            if hasattr(d, "ahead"):  # a driver that can send steps ahead (the ledger's)
                d.window = window  # type: ignore[attr-defined]
        if scenarios:
            progress.set_phase("corpus")
            report.scenarios = run_scenarios(
                lanes,
                scenarios,
                on_step=lambda _r, o: progress.step(o),
                on_result=lambda _r: progress.scenario_done(),
                on_begin=lambda _s: progress.scenario_started(),
            )
            for r in report.scenarios:
                if r.verdict in ("fail", "deviate", "indeterminate"):
                    steps = [o.to_json() for o in r.outcomes]
                    replays[f"scenario:{r.name}"] = with_transcript(r.scenario, steps)
        if machines:
            explored = explore_all(
                drivers,
                lanes,
                jobs=jobs,
                window=window,
                profile=profile,
                seed=seed,
                shard=shard,
                expected=list(expectations or []),
                progress=progress,
            )
            for done in explored:
                report.scenarios.extend(done.probes)
                replays.update(done.replays)
                notes.extend(done.notes)
                if done.result is not None:
                    report.machine_clauses[done.protocol] = done.clauses
                    report.machines.append(done.result)
        if contract is not None and shard.index == 1:
            progress.set_phase("contract")
            from conformance.commands.contract import as_results, run_contract

            contract_data = run_contract(
                config,
                spec=spec,
                profile=contract,
                seed=seed,
                report_dir=report_dir / "contract" if report_dir is not None else None,
                out=io.StringIO(),
                quiet=True,
            )
            report.scenarios.extend(as_results(contract_data))
        for protocol, driver in drivers.items():
            written = dict.fromkeys(driver.scopes_written())
            for lane in lanes.get(protocol, []):
                if lane is not driver and getattr(lane, "remote", False):
                    written.update(dict.fromkeys(lane.scopes_written()))
            report.scopes_written[protocol] = list(written)
    finally:
        progress.close()
        for driver in [*drivers.values(), *extra]:
            driver.close()
        if pool is not None:
            pool.close()
    report.duration_s = time.monotonic() - started
    report.finished_at = now_iso()
    if report_dir is not None:
        data = write_report(report, report_dir, replays)
        if shard.count > 1:
            mark_shard_finished(report_dir, shard, base or run_id)
    else:
        data = report.to_json()
    print_summary(data, out, report_dir=str(report_dir) if report_dir else None)
    return RunOutcome(data["exit_code"], data, report, report_dir, replays)


def run(args: argparse.Namespace) -> int:
    return execute(args).exit_code
