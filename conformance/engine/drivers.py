"""The drivers of one run: one per protocol (``build_drivers``), the extra lanes that let
``--jobs`` run scenarios side by side (``driver_lanes``, ``ledger_lanes``; with ``--procs``,
memory lanes live in worker processes: ``start_workers``), and the protocols of a ``--spec``."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

from conformance.drivers import DRIVERS, driver_factory
from conformance.drivers.base import Driver
from conformance.engine.config import MAX_JOBS
from conformance.errors import TargetError, TargetUnreachable, TokenRefused
from conformance.vocabulary import RunContext, TargetConfig
from conformance.workers import WORKER_PROTOCOLS, WorkerError, WorkerPool


def protocols_for(spec: str) -> list[str]:
    return list(DRIVERS) if spec == "all" else [spec]


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
        except TokenRefused:
            for d in drivers.values():
                d.close()
            raise
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


def default_procs(jobs: int, cpus: int | None = None) -> int:
    """Worker processes for ``jobs`` lanes when ``--procs`` is not given: one per core, at most
    two, and none for a single lane or a single core (see ``--procs`` in ``--help``)."""
    cpus = os.cpu_count() if cpus is None else cpus
    if jobs < 2 or (cpus or 1) < 2:
        return 0
    return min(2, cpus or 1, jobs)


def start_workers(
    procs: int, ctx: RunContext, protocols: list[str], notes: list[str]
) -> WorkerPool | None:
    """Start ``procs`` worker processes for the memory lanes (before the probe: they import
    while it runs).  ``None`` when no lane would live in one; a start that fails is a note,
    and the lanes stay threads."""
    if procs < 1 or not WORKER_PROTOCOLS & set(protocols):
        return None
    pool = WorkerPool()
    try:
        pool.start(procs, ctx.target.token)
    except (OSError, WorkerError) as exc:
        notes.append(f"worker processes could not start ({exc}); lanes run as threads")
        return None
    return pool


#: Lanes per ``--jobs`` for a protocol whose lanes share one target (memory), when a window is
#: open (``--window`` > 1).  A memory lane cannot send its mutating steps ahead of their
#: answers (the store stamps each with its own clock, and two on one scope must reach it
#: ``SPACING_S`` apart), so the steps the window keeps in flight are spread over more lanes,
#: each a connection of its own with its own scopes: twice the lanes take the ci profile's 20
#: batches per machine in one round.  Verdicts do not depend on the number of lanes
#: (``tests/harness/test_jobs.py``).
SHARED_LANES_PER_JOB = 2


def shared_lanes(jobs: int, window: int) -> int:
    """How many lanes a protocol whose lanes share one target gets for ``jobs`` and
    ``window``: ``jobs``, or :data:`SHARED_LANES_PER_JOB` times as many (at most ``MAX_JOBS``)
    when a window is open."""
    if jobs < 2 or window < 2:
        return jobs
    return min(MAX_JOBS, jobs * SHARED_LANES_PER_JOB)


def driver_lanes(
    drivers: dict[str, Driver],
    jobs: int,
    *,
    pool: WorkerPool | None = None,
    ctx: RunContext | None = None,
    notes: list[str] | None = None,
    hook: str | None = None,
) -> dict[str, list[Driver]]:
    """Each protocol's lanes: where the protocol can share one target (a ``lane`` method:
    per-run scopes), ``jobs`` lanes -- in ``pool``'s worker processes when there is one (the
    first driver then only probes and confirms), else the driver and ``jobs - 1`` more thread
    lanes on the same target; otherwise the driver alone."""
    lanes: dict[str, list[Driver]] = {}
    for protocol, driver in drivers.items():
        spawn = getattr(driver, "lane", None)
        lanes[protocol] = [driver]
        if not callable(spawn):
            continue
        if pool is not None and ctx is not None and protocol in WORKER_PROTOCOLS and jobs > 1:
            try:
                remote = pool.lanes(protocol, ctx, driver.capabilities(), jobs, hook=hook)
            except (OSError, WorkerError) as exc:
                if notes is not None:
                    notes.append(f"worker processes could not start ({exc}); lanes run as threads")
            else:
                lanes[protocol] = list(remote)
                continue
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
