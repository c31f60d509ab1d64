"""``memspec run``: the corpus and the state machines against a target, clause by clause.

With no ``--target`` the bundled store is started in-process on ``127.0.0.1`` (an ephemeral
port, a random token, test controls on) and stopped at the end — this module is the one place
that wires ``conformance.embedded`` in; the harness itself only ever speaks HTTP.

The helpers here (target options, the bundled store, building drivers, the whole pipeline)
are shared by ``replay``, ``fuzz`` and ``selftest``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import io
import math
import re
import secrets
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers import DRIVERS, driver_factory
from conformance.drivers.base import Driver, RunContext, Secret, TargetConfig
from conformance.errors import TargetUnreachable, UsageError
from conformance.errors import TokenRefused as CliTokenRefused
from conformance.machines import finding_key, machine_class, run_machine
from conformance.machines.probes import run_probes
from conformance.machines.profiles import PROFILES, get_profile
from conformance.report import RunReport, with_transcript, write_report
from conformance.report.console import print_summary
from conformance.report.expect import (
    ExpectError,
    checked_from_report,
    load_expectations,
    maintain,
    match,
    todo_warning,
)
from conformance.report.merge import mark_shard_finished, mark_shard_started, shard_report_options
from conformance.report.model import now_iso
from conformance.report.progress import Progress as Progress
from conformance.runner import load_corpus, run_scenario, run_scenarios
from conformance.scenario import Scenario, ScenarioError
from conformance.shard import WHOLE, Shard, base_run_id, parse_shard, select_scenarios, shard_run_id
from conformance.targets.base import (
    HttpTarget,
    TargetError,
    TokenRefused,
    check_url,
    load_target_profile,
    load_token,
)

DEFAULT_REPORT_DIR = "memspec-report"


# --------------------------------------------------------------------------- options


def add_target_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("target")
    g.add_argument(
        "--target", metavar="URL", help="base URL of the store (default: start the bundled store)"
    )
    tok = g.add_mutually_exclusive_group()
    tok.add_argument(
        "--token-env", metavar="VAR", help="environment variable holding the bearer token"
    )
    tok.add_argument(
        "--token-file", metavar="FILE", help="file whose first line is the bearer token"
    )
    g.add_argument(
        "--target-profile",
        metavar="FILE",
        help="TOML file: [target] url/token_env/token_file/timeout_s, [capabilities]",
    )
    g.add_argument(
        "--with",
        dest="with_caps",
        metavar="CAP",
        action="append",
        default=[],
        help="declare a capability present (repeatable)",
    )
    g.add_argument(
        "--without",
        dest="without_caps",
        metavar="CAP",
        action="append",
        default=[],
        help="declare a capability absent (repeatable)",
    )
    g.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="deadline in seconds for each whole request, answer included (default 10)",
    )
    g.add_argument(
        "--ca-cert",
        metavar="FILE",
        help="PEM file of certificate authorities to trust for an https:// target",
    )
    g.add_argument(
        "--ledger-target",
        dest="ledger_targets",
        metavar="URL",
        action="append",
        default=[],
        help="another instance of the same ledger store (same token; repeatable).  A ledger "
        "has one account scope, so its work runs one step at a time per instance: ledger "
        "scenarios and machine runs are spread over --target and these",
    )


def add_run_options(p: argparse.ArgumentParser, *, machines: bool = True) -> None:
    p.add_argument(
        "--spec",
        choices=["memory", "ledger", "all"],
        default="all",
        help="which protocol(s) to check",
    )
    if machines:
        p.add_argument(
            "--profile",
            choices=list(PROFILES),
            default="quick",
            help="state-machine exploration profile",
        )
        p.add_argument(
            "--seed", type=int, help="seed of the state machines (reproduces a run exactly)"
        )
        p.add_argument(
            "--examples",
            type=int,
            metavar="N",
            help="number of state-machine runs (default: the profile's)",
        )
    p.add_argument(
        "--report",
        metavar="DIR",
        default=DEFAULT_REPORT_DIR,
        help=f"report directory (default {DEFAULT_REPORT_DIR}/)",
    )
    p.add_argument(
        "--expect",
        metavar="FILE",
        help="YAML/JSON list of expected divergences {clause|scenario, reason}",
    )
    p.add_argument(
        "--expect-update",
        metavar="FILE",
        help="record every divergence FILE does not accept yet as an entry with reason: TODO"
        " (FILE is created if missing, and used as --expect)",
    )
    p.add_argument(
        "--expect-prune",
        action="store_true",
        help="drop the expectations this run checked and did not reproduce",
    )
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run even when a protocol that cannot be isolated by scope keys (the ledger) finds"
        " data in the target",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"scenarios in flight at once against one target (default {DEFAULT_JOBS}; 1 = one "
        "at a time). Each works in its own run-unique scopes; the verdict, divergences and "
        "replays do not depend on N",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no live progress line")
    p.add_argument(
        "--clients",
        type=int,
        metavar="N",
        help="also run N concurrent clients and check the histories are linearizable",
    )
    if machines:
        p.add_argument(
            "--shard",
            metavar="K/N",
            help="run shard K of N: a deterministic part of the corpus and of the machines'"
            " examples (merge the N reports with `memspec report merge`)",
        )
        p.add_argument(
            "--run-id",
            metavar="ID",
            help="base run id every shard shares (memspec-[a-z0-9]{4,20}; default: derived from"
            " the seed and the options)",
        )


#: Lanes in one run.  Enough to hide a distant target's round trip behind the others' work
#: without flooding it (each lane is one connection with one request in flight: ten requests at
#: a time is light for any deployed HTTP service), and matched to the ``ci`` profile: 200
#: examples per machine are 20 batches of 10, which 10 lanes take in two windows (8 would take
#: three, the last half empty).  On loopback the run is CPU-bound and more lanes cost nothing
#: but a thread each (they share one process and its GIL).
DEFAULT_JOBS = 10
#: At most this many bundled stores are started to carry the ledger's lanes: on loopback the
#: ledger's work is CPU-bound, and each bundled instance is one more server in this process.
BUNDLED_LEDGER_LANES = 4
MAX_JOBS = 64


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number, not {text!r}") from None
    if not 1 <= n <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"--jobs must be from 1 to {MAX_JOBS}, not {n}")
    return n


def driver_lanes(drivers: dict[str, Driver], jobs: int) -> dict[str, list[Driver]]:
    """Each protocol's driver plus, where the protocol can share one target (a ``lane``
    method: per-run scopes), ``jobs - 1`` more lanes on the same target."""
    lanes: dict[str, list[Driver]] = {}
    for protocol, driver in drivers.items():
        spawn = getattr(driver, "lane", None)
        lanes[protocol] = [driver]
        if callable(spawn):
            lanes[protocol] += [spawn() for _ in range(jobs - 1)]
    return lanes


def ledger_lanes(ctx: RunContext, targets: list[TargetConfig], notes: list[str]) -> list[Driver]:
    """A ledger driver for each further instance of the ledger store (one lane each)."""

    def connect(config: TargetConfig) -> Driver | TargetError:
        try:
            return driver_factory("ledger")(dataclasses.replace(ctx, target=config))
        except TargetError as exc:
            return exc

    # Each instance is probed and checked clean in a few round trips: all at once, not one
    # after the other (against a distant store these add up).
    with ThreadPoolExecutor(max(1, min(len(targets), MAX_JOBS))) as pool:
        made = list(pool.map(connect, targets))
    out = [d for d in made if not isinstance(d, TargetError)]
    for config, got in zip(targets, made, strict=True):
        if isinstance(got, TargetError):
            for d in out:
                d.close()
            raise TargetUnreachable(f"ledger instance {config.label}: {got}") from got
    if out:
        notes.append(f"ledger work spread over {len(out) + 1} instances of the store")
    return out


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


# --------------------------------------------------------------------------- the target


@dataclass
class TargetSession:
    config: TargetConfig
    #: more instances of the ledger store (``--ledger-target``, or bundled ones for ``--jobs``)
    ledger_extra: list[TargetConfig] = field(default_factory=list)


def start_bundled_store(token: str, quirks: frozenset[str] = frozenset()) -> Any:
    """Start the bundled store (the only import of ``conformance.embedded`` in the harness).

    ``quirks`` names catalogue entries (allowed variants, mutants) to run it with; ``selftest``
    uses it, a normal run never does.
    """
    server = importlib.import_module("conformance.embedded.server")
    catalogue = importlib.import_module("conformance.embedded.catalogue")
    return server.start_server(
        host="127.0.0.1", port=0, token=token, test_control=True, quirks=catalogue.Quirks(quirks)
    )


@contextmanager
def open_target(args: argparse.Namespace) -> Iterator[TargetSession]:
    """The target the options name, or a freshly started bundled store (stopped on exit)."""
    profile = None
    try:
        if getattr(args, "target_profile", None):
            profile = load_target_profile(args.target_profile)
        url = args.target or (profile.url if profile else None)
        token_env = args.token_env or (
            profile.token_env if profile and not args.token_file else None
        )
        token_file = args.token_file or (
            profile.token_file if profile and not args.token_env else None
        )
        if token_env and token_file:
            raise TargetError("the profile names both token_env and token_file")
        timeout = args.timeout if args.timeout is not None else None
        if timeout is None:
            timeout = (profile.timeout_s if profile else None) or 10.0
        if not math.isfinite(timeout) or timeout <= 0:
            raise TargetError(f"--timeout must be a positive number of seconds, not {timeout}")
        ca_file = getattr(args, "ca_cert", None)
        if ca_file is not None and not Path(ca_file).is_file():
            raise TargetError(f"--ca-cert {ca_file}: no such file")
        declared = frozenset(args.with_caps) | (profile.declared if profile else frozenset())
        denied = frozenset(args.without_caps) | (profile.denied if profile else frozenset())
        if declared & denied:
            raise TargetError(
                f"capability declared both present and absent: {sorted(declared & denied)}"
            )
        if url:
            url = check_url(url)
            token = load_token(token_env, token_file)
            source = (
                f"the token in ${token_env}"
                if token_env
                else (f"the token in {token_file}" if token_file else "")
            )
            if ca_file is not None and not url.startswith("https://"):
                raise TargetError("--ca-cert is for an https:// target")
        elif token_env or token_file:
            raise TargetError(
                "--token-env/--token-file need --target (the bundled store makes its own token)"
            )
    except TargetError as exc:
        raise UsageError(str(exc)) from exc
    extra_urls: list[str] = list(getattr(args, "ledger_targets", None) or [])
    if extra_urls and not url:
        raise UsageError("--ledger-target needs --target (the bundled store starts its own)")
    try:
        extra_urls = [check_url(u) for u in extra_urls]
    except TargetError as exc:
        raise UsageError(str(exc)) from exc
    if url:

        def remote(u: str) -> TargetConfig:
            return TargetConfig(
                u, token, timeout, declared=declared, denied=denied, label=u,
                ca_file=ca_file, token_source=source,
            )  # fmt: skip

        config = remote(url)
        try:
            # Fail on a bad CA file here, as a usage error, not in the middle of a run.
            HttpTarget(config).close()
        except TargetError as exc:
            raise UsageError(str(exc)) from exc
        yield TargetSession(config, ledger_extra=[remote(u) for u in extra_urls])
        return
    secret = secrets.token_urlsafe(24)
    handles: list[Any] = []
    try:
        # The ledger's work runs one step at a time per instance: give --jobs some instances.
        for _ in range(min(BUNDLED_LEDGER_LANES, max(1, int(getattr(args, "jobs", 1) or 1)))):
            handles.append(start_bundled_store(secret))
    except OSError as exc:
        for h in handles:
            h.stop()
        raise TargetUnreachable(f"cannot start the bundled store: {exc}") from exc
    try:

        def bundled(h: Any) -> TargetConfig:
            return TargetConfig(
                h.url, Secret(secret), timeout, declared=declared, denied=denied,
                label="bundled store", token_source="the bundled store's token",
            )  # fmt: skip

        yield TargetSession(bundled(handles[0]), ledger_extra=[bundled(h) for h in handles[1:]])
    finally:
        for h in handles:
            h.stop()


def protocols_for(spec: str) -> list[str]:
    return list(DRIVERS) if spec == "all" else [spec]


def new_run_id() -> str:
    return "memspec-" + secrets.token_hex(4)


def build_drivers(
    ctx: RunContext, protocols: list[str], *, strict: bool, notes: list[str]
) -> dict[str, Driver]:
    """One driver per protocol.  ``strict`` (one protocol asked for): any failure is fatal;
    otherwise a protocol the target does not serve is left out with a note."""
    drivers: dict[str, Driver] = {}
    errors: list[str] = []
    for protocol in protocols:
        try:
            factory = driver_factory(protocol)
        except ModuleNotFoundError as exc:
            if strict:
                raise TargetUnreachable(f"no {protocol} driver in this memspec: {exc}") from exc
            notes.append(f"{protocol}: driver not available ({exc.name})")
            continue
        try:
            drivers[protocol] = factory(ctx)
        except TokenRefused as exc:
            for d in drivers.values():
                d.close()
            raise CliTokenRefused(str(exc)) from exc
        except TargetError as exc:
            errors.append(f"{protocol}: {exc}")
            if strict:
                break
            notes.append(f"{protocol} not checked: {exc}")
    if strict and errors or not drivers:
        for d in drivers.values():
            d.close()
        raise TargetUnreachable(errors[0] if errors else "no protocol could be checked")
    return drivers


# --------------------------------------------------------------------------- the pipeline


@dataclass
class _Explored:
    """One protocol's probes and machine, as explored (possibly beside another protocol's)."""

    protocol: str
    probes: list[Any] = field(default_factory=list)
    result: Any = None
    clauses: tuple[str, ...] = ()
    replays: dict[str, Scenario] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


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
        from conformance.concurrent.command import check_clients

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
            ledger_targets=session.ledger_extra,
            contract=getattr(args, "contract", None),
        )
        if getattr(args, "clients", None):
            from conformance.concurrent.command import attach_concurrent

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
    ledger_targets: list[TargetConfig] | None = None,
    contract: str | None = None,
) -> RunOutcome:
    """Drivers, corpus, machines, report — against one already reachable target."""
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
    drivers = build_drivers(ctx, protocols, strict=spec != "all", notes=notes)
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
        },
        expectations=list(expectations or []),
        expect_file=expect_file,
        notes=notes,
    )
    extra: list[Driver] = []
    try:
        for protocol, driver in drivers.items():
            report.capabilities[protocol] = sorted(driver.capabilities())
        lanes = driver_lanes(drivers, jobs)
        if "ledger" in drivers and ledger_targets:
            lanes["ledger"] += ledger_lanes(ctx, ledger_targets, notes)
        extra = [d for ds in lanes.values() for d in ds[1:]]
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
                if r.verdict in ("fail", "indeterminate"):
                    steps = [o.to_json() for o in r.outcomes]
                    replays[f"scenario:{r.name}"] = with_transcript(r.scenario, steps)
        if machines:
            expected = list(expectations or [])

            def explore(protocol: str, driver: Driver) -> _Explored:
                """The transport probes (one step each, reported apart from the machine),
                then the machine on the protocol's lanes, then each finding confirmed."""
                done = _Explored(protocol)
                if shard.index == 1:  # the probes belong to one shard only
                    done.probes = run_probes(
                        protocol, driver, on_step=lambda _r, o: progress.step(o)
                    )
                for r in done.probes:
                    if r.verdict in ("fail", "indeterminate"):
                        steps = [o.to_json() for o in r.outcomes]
                        done.replays[f"scenario:{r.name}"] = with_transcript(r.scenario, steps)
                try:
                    module = importlib.import_module(machine_class(protocol).__module__)
                except (ImportError, KeyError) as exc:
                    done.notes.append(f"{protocol}: no state machine ({exc})")
                    return done
                done.clauses = tuple(getattr(module, "MACHINE_CLAUSES", ()))
                if getattr(getattr(driver, "target", None), "gone", False):
                    done.notes.append(
                        f"{protocol} machine not run: the target stopped answering (see the"
                        " indeterminate scenarios)"
                    )
                    return done
                name = finding_key(protocol, 0)

                def is_expected(clauses: tuple[str, ...]) -> bool:
                    return match(expected, name, list(clauses)) is not None

                result = run_machine(
                    protocol,
                    driver,
                    profile,
                    seed,
                    on_step=progress.step,
                    is_expected=is_expected,
                    shard=(shard.index, shard.count),
                    lanes=lanes.get(protocol, [driver])[1:],
                )
                done.result = result
                for n, finding in enumerate(result.findings):
                    if finding.replay is None:
                        continue
                    # Run each shrunk scenario once more: it confirms the failure reproduces
                    # and records the transcript the report shows side by side.
                    confirm = run_scenario(
                        driver, finding.replay, on_step=lambda _r, o: progress.step(o)
                    )
                    steps = [o.to_json() for o in confirm.outcomes]
                    finding.details["replay_steps"] = steps
                    finding.details["reproduced"] = confirm.verdict == "fail"
                    if finding.replay is result.replay:
                        result.details["replay_steps"] = steps
                        result.details["reproduced"] = confirm.verdict == "fail"
                    done.replays[f"machine:{finding_key(protocol, n)}"] = with_transcript(
                        finding.replay, steps
                    )
                return done

            if jobs > 1 and len(drivers) > 1:
                # Protocols explore side by side (each on its own lanes), reported in order.
                progress.set_phase("machines")
                with ThreadPoolExecutor(len(drivers), thread_name_prefix="memspec") as pool:
                    futures = [pool.submit(explore, p, d) for p, d in drivers.items()]
                    explored = [f.result() for f in futures]
            else:
                explored = []
                for protocol, driver in drivers.items():
                    progress.set_phase(f"{protocol} machine")
                    explored.append(explore(protocol, driver))
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
            report.scopes_written[protocol] = driver.scopes_written()
    finally:
        progress.close()
        for driver in [*drivers.values(), *extra]:
            driver.close()
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
