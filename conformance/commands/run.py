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
import math
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.driver import Driver, RunContext, Secret, TargetConfig
from conformance.drivers import DRIVERS, driver_factory
from conformance.machines import machine_class, run_machine
from conformance.machines.profiles import PROFILES, get_profile
from conformance.report import RunReport, with_transcript, write_report
from conformance.report.console import print_summary
from conformance.report.expect import ExpectError, load_expectations
from conformance.report.model import now_iso
from conformance.report.progress import Progress
from conformance.runner import load_corpus, run_scenario, run_scenarios
from conformance.scenario import Scenario, ScenarioError
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
        "--allow-dirty",
        action="store_true",
        help="run even when a protocol that cannot be isolated by scope keys (the ledger) finds data in the target",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no live progress line")


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
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- the target


@dataclass
class TargetSession:
    config: TargetConfig
    bundled: bool
    handle: Any = None


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
    from conformance.cli import TargetUnreachable, UsageError

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
    if url:
        config = TargetConfig(
            url,
            token,
            timeout,
            declared=declared,
            denied=denied,
            label=url,
            ca_file=ca_file,
            token_source=source,
        )
        try:
            # Fail on a bad CA file here, as a usage error, not in the middle of a run.
            HttpTarget(config).close()
        except TargetError as exc:
            raise UsageError(str(exc)) from exc
        yield TargetSession(config, False)
        return
    secret = secrets.token_urlsafe(24)
    try:
        handle = start_bundled_store(secret)
    except OSError as exc:
        raise TargetUnreachable(f"cannot start the bundled store: {exc}") from exc
    try:
        config = TargetConfig(
            handle.url,
            Secret(secret),
            timeout,
            declared=declared,
            denied=denied,
            label="bundled store",
            token_source="the bundled store's token",
        )
        yield TargetSession(config, True, handle)
    finally:
        handle.stop()


def protocols_for(spec: str) -> list[str]:
    return list(DRIVERS) if spec == "all" else [spec]


def new_run_id() -> str:
    return "memspec-" + secrets.token_hex(4)


def build_drivers(
    ctx: RunContext, protocols: list[str], *, strict: bool, notes: list[str]
) -> dict[str, Driver]:
    """One driver per protocol.  ``strict`` (one protocol asked for): any failure is fatal;
    otherwise a protocol the target does not serve is left out with a note."""
    from conformance.cli import TargetUnreachable
    from conformance.cli import TokenRefused as CliTokenRefused

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
    from conformance.cli import UsageError

    expectations = []
    if getattr(args, "expect", None):
        try:
            expectations = load_expectations(args.expect)
        except ExpectError as exc:
            raise UsageError(str(exc)) from exc
    with open_target(args) as session:
        return run_pipeline(
            session.config,
            spec=args.spec,
            profile_name=getattr(args, "profile", "quick"),
            seed=getattr(args, "seed", None),
            max_examples=getattr(args, "examples", None),
            corpus=corpus,
            machines=machines,
            expectations=expectations,
            expect_file=getattr(args, "expect", None),
            report_dir=Path(args.report) if write and getattr(args, "report", None) else None,
            allow_dirty=bool(getattr(args, "allow_dirty", False)),
            quiet=bool(getattr(args, "quiet", False)),
            out=out,
        )


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
) -> RunOutcome:
    """Drivers, corpus, machines, report — against one already reachable target."""
    from conformance.cli import UsageError

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
    started = time.monotonic()
    run_id = new_run_id()
    progress = Progress(enabled=not quiet)
    replays: dict[str, Scenario] = {}
    ctx = RunContext(run_id=run_id, target=config, allow_dirty=allow_dirty, seed=seed)
    notes: list[str] = []
    drivers = build_drivers(ctx, protocols, strict=spec != "all", notes=notes)
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
        },
        expectations=list(expectations or []),
        expect_file=expect_file,
        notes=notes,
    )
    try:
        for protocol, driver in drivers.items():
            report.capabilities[protocol] = sorted(driver.capabilities())
        if scenarios:
            progress.set_phase("corpus")
            report.scenarios = run_scenarios(
                drivers,
                scenarios,
                on_step=lambda _r, o: progress.step(o),
                on_result=lambda _r: progress.scenario_done(),
            )
            for r in report.scenarios:
                if r.verdict in ("fail", "indeterminate"):
                    steps = [o.to_json() for o in r.outcomes]
                    replays[f"scenario:{r.name}"] = with_transcript(r.scenario, steps)
        if machines:
            for protocol, driver in drivers.items():
                progress.set_phase(f"{protocol} machine")
                try:
                    module = importlib.import_module(machine_class(protocol).__module__)
                except (ImportError, KeyError) as exc:
                    notes.append(f"{protocol}: no state machine ({exc})")
                    continue
                report.machine_clauses[protocol] = tuple(getattr(module, "MACHINE_CLAUSES", ()))
                target = getattr(driver, "target", None)
                if getattr(target, "gone", False):
                    notes.append(
                        f"{protocol} machine not run: the target stopped answering during the"
                        " corpus (see the indeterminate scenarios)"
                    )
                    continue
                result = run_machine(protocol, driver, profile, seed, on_step=progress.step)
                report.machines.append(result)
                if result.replay is not None:
                    # Run the shrunk scenario once more: it confirms the failure reproduces
                    # and records the transcript the report shows side by side.
                    confirm = run_scenario(
                        driver, result.replay, on_step=lambda _r, o: progress.step(o)
                    )
                    steps = [o.to_json() for o in confirm.outcomes]
                    result.details["replay_steps"] = steps
                    result.details["reproduced"] = confirm.verdict == "fail"
                    replays[f"machine:{protocol}-machine"] = with_transcript(result.replay, steps)
        for protocol, driver in drivers.items():
            report.scopes_written[protocol] = driver.scopes_written()
    finally:
        progress.close()
        for driver in drivers.values():
            driver.close()
    report.duration_s = time.monotonic() - started
    report.finished_at = now_iso()
    if report_dir is not None:
        data = write_report(report, report_dir, replays)
    else:
        data = report.to_json()
    print_summary(data, out, report_dir=str(report_dir) if report_dir else None)
    return RunOutcome(data["exit_code"], data, report, report_dir, replays)


def run(args: argparse.Namespace) -> int:
    return execute(args).exit_code
