"""The state-machine phase of a run: per protocol, the transport probes, then the
differential machine on the protocol's lanes, then each finding's shrunk scenario run once more
to confirm it -- protocols side by side when there are lanes to spare."""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from conformance.drivers.base import Driver
from conformance.engine.observer import Observer
from conformance.machines import finding_key, machine_class, run_machine
from conformance.machines.probes import run_probes
from conformance.machines.profiles import Profile
from conformance.report import with_transcript
from conformance.report.expect import Expectation, match
from conformance.runner import run_scenario
from conformance.scenario import Scenario
from conformance.shard import Shard


@dataclass
class Explored:
    """One protocol's probes and machine, as explored (possibly beside another protocol's)."""

    protocol: str
    probes: list[Any] = field(default_factory=list)
    result: Any = None
    clauses: tuple[str, ...] = ()
    replays: dict[str, Scenario] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: wall seconds of the probes and of the machine (its findings confirmed included)
    phases: dict[str, float] = field(default_factory=dict)


def explore(
    protocol: str,
    driver: Driver,
    *,
    profile: Profile,
    seed: int | None,
    shard: Shard,
    lanes: Sequence[Driver],
    expected: list[Expectation],
    observer: Observer,
    window: int = 1,
) -> Explored:
    """The transport probes (one step each, reported apart from the machine),
    then the machine on the protocol's lanes, then each finding confirmed."""
    done = Explored(protocol)
    started = time.monotonic()
    if shard.index == 1:  # the probes belong to one shard only
        done.probes = run_probes(protocol, driver, on_step=lambda _r, o: observer.step(o))
        done.phases[f"{protocol} probes"] = time.monotonic() - started
    for r in done.probes:
        if r.verdict in ("fail", "deviate", "indeterminate"):
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
    started = time.monotonic()

    def is_expected(clauses: tuple[str, ...]) -> bool:
        return match(expected, name, list(clauses)) is not None

    # The machine runs on the protocol's lanes (the first is ``driver`` itself, unless every
    # lane lives in a worker process); ``driver`` confirms the findings here.
    result = run_machine(
        protocol,
        lanes[0] if lanes else driver,
        profile,
        seed,
        on_step=observer.step,
        is_expected=is_expected,
        shard=(shard.index, shard.count),
        lanes=lanes[1:],
        window=window,
    )
    done.result = result
    _confirm(done, driver, observer)
    done.phases[f"{protocol} machine"] = time.monotonic() - started
    return done


def _confirm(done: Explored, driver: Driver, observer: Observer) -> None:
    """Run each shrunk scenario of ``done.result`` once more on ``driver``: it confirms the
    failure reproduces and records the transcript the report shows side by side."""
    result = done.result
    for n, finding in enumerate(result.findings):
        if finding.replay is None:
            continue
        confirm = run_scenario(driver, finding.replay, on_step=lambda _r, o: observer.step(o))
        steps = [o.to_json() for o in confirm.outcomes]
        finding.details["replay_steps"] = steps
        finding.details["reproduced"] = confirm.verdict in ("fail", "deviate")
        if finding.replay is result.replay:
            result.details["replay_steps"] = steps
            result.details["reproduced"] = confirm.verdict in ("fail", "deviate")
        key = f"machine:{finding_key(done.protocol, n)}"
        done.replays[key] = with_transcript(finding.replay, steps)


def explore_all(
    drivers: dict[str, Driver],
    lanes: dict[str, list[Driver]],
    *,
    jobs: int,
    profile: Profile,
    window: int = 1,
    seed: int | None,
    shard: Shard,
    expected: list[Expectation],
    observer: Observer,
) -> list[Explored]:
    """Every protocol explored, in the order of ``drivers``."""

    def one(protocol: str, driver: Driver) -> Explored:
        return explore(
            protocol,
            driver,
            profile=profile,
            seed=seed,
            shard=shard,
            lanes=lanes.get(protocol, [driver]),
            expected=expected,
            observer=observer,
            window=window,
        )

    if jobs > 1 and len(drivers) > 1:
        # Protocols explore side by side (each on its own lanes), reported in order.
        observer.phase_started("machines")
        with ThreadPoolExecutor(len(drivers), thread_name_prefix="memspec") as pool:
            futures = [pool.submit(one, p, d) for p, d in drivers.items()]
            while not all(f.done() for f in futures):  # bounded waits: Ctrl-C is seen at once
                wait(futures, timeout=0.2)
            return [f.result() for f in futures]
    explored = []
    for protocol, driver in drivers.items():
        observer.phase_started(f"{protocol} machine")
        explored.append(one(protocol, driver))
    return explored
