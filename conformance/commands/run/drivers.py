"""The drivers of one run: one per protocol (``build_drivers``), the extra lanes that let
``--jobs`` run scenarios side by side (``driver_lanes``, ``ledger_lanes``), and run ids."""

from __future__ import annotations

import dataclasses
import secrets
from concurrent.futures import ThreadPoolExecutor

from conformance.commands.run.options import MAX_JOBS
from conformance.drivers import DRIVERS, driver_factory
from conformance.drivers.base import Driver, RunContext, TargetConfig
from conformance.errors import TargetUnreachable
from conformance.errors import TokenRefused as CliTokenRefused
from conformance.targets.base import TargetError, TokenRefused


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
