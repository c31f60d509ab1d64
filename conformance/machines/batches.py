"""Examples run in batches of at most :data:`BATCH`, each a Hypothesis run with a seed of its
own (:func:`batch_seed`): one batch explored in a session of its own (:func:`_explore_batch`),
folded into the exploration in batch order (:func:`_merge_batch`), and a round of batches run
side by side, one per driver (:func:`_run_round`) -- a driver being a thread lane of this
process or a lane in a worker process (:class:`conformance.workers.RemoteLane`), which runs the
same :func:`_explore_batch` there and sends the batch's session back."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.stateful import run_state_machine_as_test

from conformance.drivers.base import Driver
from conformance.machines.constants import pinned_local_constants
from conformance.machines.machine import DifferentialMachine
from conformance.machines.profiles import Profile
from conformance.machines.session import Divergence, MachineSession
from conformance.machines.shrink import _close_hunt
from conformance.vocabulary import Mispredicted

BATCH = 10


def batch_seed(seed: int, batch_no: int) -> int:
    """The seed of one batch of examples (batch 0 uses the run's seed itself)."""
    return seed if batch_no == 0 else (seed * 1_000_003 + batch_no) % 2**32


def machine_settings(profile: Profile) -> settings:
    """The Hypothesis settings of every batch of an exploration under ``profile`` (a worker
    process builds them from the profile alike)."""
    return settings(
        max_examples=BATCH,
        stateful_step_count=profile.step_count,
        deadline=None,
        database=None,
        derandomize=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )


def _run_batch(
    factory: Callable[[], DifferentialMachine], seed: int, size: int, base: settings
) -> BaseException | None:
    """One Hypothesis run of ``size`` examples; the exception it ended with, if any."""

    # A partial, not a function: Hypothesis digests the factory's source for its example
    # database (unused here) on every run, tokenizing the file; a partial has no source.
    make = functools.partial(factory)
    try:
        # No module-harvested constants: the examples follow the seed alone, whichever modules
        # are imported in this process (conformance.machines.constants).
        with pinned_local_constants():
            run_state_machine_as_test(  # Hypothesis accepts a factory as well as the class
                hypothesis_seed(seed)(make),  # type: ignore[arg-type]
                settings=settings(base, max_examples=size),
            )
    except Divergence:
        return None  # recorded in the session
    except (Flaky, HypothesisException, Exception) as exc:  # flaky target, rule or driver bug
        return exc
    return None


@dataclass
class _BatchRun:
    """What one batch found, before it is merged (in batch order) into the exploration."""

    batch_no: int
    session: MachineSession
    error: BaseException | None = None


def batch_session(main: MachineSession, driver: Driver) -> MachineSession:
    """A session of its own for one batch on ``driver``: ``main``'s protocol, budget, callbacks,
    and what ``main`` has found so far set aside (a worker's lane builds the same one)."""
    return MachineSession(
        driver,
        main.protocol,
        main.shrink_budget_s,
        main.on_step,
        is_expected=main.is_expected,
        set_aside=dict.fromkeys(main.set_aside, 0),
        window=main.window,
    )


def _explore_batch(
    batch_no: int,
    driver: Driver,
    main: MachineSession,
    cls: type[DifferentialMachine],
    seed: int,
    size: int,
    run_settings: settings,
    profile: Profile,
) -> _BatchRun:
    """One batch in a session of its own, setting aside what ``main`` has found so far; a new
    divergence it meets is shrunk and minimized on its own ``driver``."""
    in_turn: set[Any] = set()
    while True:
        session = batch_session(main, driver)
        session.in_turn = in_turn
        session.reruns = len(in_turn)
        if len(in_turn) >= MAX_RERUNS:
            session.window = 1  # a target this far from the model: one step at a time
        error, mispredicted = _run_window(session, driver, cls, seed, batch_no, size, run_settings)
        if mispredicted is None:
            break
        # A step sent ahead was judged otherwise than predicted: everything after it was chosen
        # from a state the one-at-a-time run would not have had.  The batch runs again (its
        # examples follow its seed), that step in turn; so the result is the one-at-a-time one.
        in_turn.add(mispredicted)
    if session.hunt.failure is not None:
        _close_hunt(session, driver, main.protocol, profile, seed, error)
        if isinstance(error, Flaky):
            error = None
    return _BatchRun(batch_no, session, error)


#: A batch mispredicted this many times runs once more with one step at a time.
MAX_RERUNS = 12


def _run_window(
    session: MachineSession,
    driver: Driver,
    cls: type[DifferentialMachine],
    seed: int,
    batch_no: int,
    size: int,
    run_settings: settings,
) -> tuple[BaseException | None, Any]:
    """One try of a batch with ``session.window`` steps in flight: (the exception the batch
    ended with, None) -- or (None, the key of the step judged otherwise than predicted)."""
    previous = getattr(driver, "window", None)
    if previous is not None:
        setattr(driver, "window", session.window)  # noqa: B010 (only drivers that have one)
        setattr(driver, "on_settled", session.settled)  # noqa: B010
    try:
        error = _run_batch(lambda: cls(session), batch_seed(seed, batch_no), size, run_settings)
        settle = getattr(driver, "settle", None)
        if settle is not None:
            settle()
        return error, None
    except Mispredicted as exc:
        driver.abandon()  # type: ignore[attr-defined]
        return None, exc.key
    finally:
        if previous is not None:
            setattr(driver, "window", previous)  # noqa: B010
            setattr(driver, "on_settled", None)  # noqa: B010


def _merge_batch(main: MachineSession, run: _BatchRun) -> None:
    """Fold one batch into the exploration, in batch order: counters add up, a divergence
    already found (by an earlier batch) counts as met again, a new one becomes a finding."""
    s = run.session
    if s.first_divergence is not None and main.first_divergence is None:
        main.first_divergence = {
            "elapsed_s": round(time.monotonic() - main.started, 3),
            "examples": main.examples + s.first_divergence["examples"],
            "steps": main.steps + s.first_divergence["steps"],
        }
    for finding in s.findings:
        if finding.signature in main.set_aside:
            main.set_aside[finding.signature] += 1
            continue
        finding.details["found_after"] = {
            "examples": main.explored + finding.details.get("found_after", {}).get("examples", 0),
            "steps": main.steps + finding.details.get("found_after", {}).get("steps", 0),
        }
        main.findings.append(finding)
        main.set_aside[finding.signature] = 0
    for sig, n in s.set_aside.items():
        if sig in main.set_aside:
            main.set_aside[sig] += n
    main.examples += s.examples
    main.explored += s.explored
    main.steps += s.steps
    main.reruns += s.reruns
    for reason, n in s.skipped.items():
        main.skipped[reason] = main.skipped.get(reason, 0) + n
    if main.indeterminate is None and s.indeterminate is not None:
        main.indeterminate = s.indeterminate
    if main.harness_error is None and s.harness_error is not None:
        main.harness_error = s.harness_error


def _run_round(
    batches: list[tuple[int, int]],
    drivers: list[Driver],
    main: MachineSession,
    cls: type[DifferentialMachine],
    seed: int,
    run_settings: settings,
    profile: Profile,
) -> list[_BatchRun]:
    """Explore ``batches`` (batch number, examples) side by side, one per driver, setting aside
    what ``main`` holds; the runs come back in batch order.  A driver that is a lane in a worker
    process explores its batch there (the same :func:`_explore_batch`)."""
    sizes = dict(batches)
    batch_nos = [b for b, _ in batches]

    def explore(b: int, d: Driver) -> _BatchRun:
        if getattr(d, "remote", False) is True:
            remote: Any = d
            run: _BatchRun = remote.explore_batch(b, main, cls, seed, sizes[b], profile)
            return run
        return _explore_batch(b, d, main, cls, seed, sizes[b], run_settings, profile)

    if len(drivers) == 1 or len(batch_nos) == 1:
        return [explore(b, drivers[0]) for b in batch_nos]
    results: dict[int, _BatchRun] = {}
    pending = list(batch_nos)
    lock = threading.Lock()

    def lane(d: Driver) -> None:
        while True:
            with lock:
                if not pending:
                    return
                b = pending.pop(0)
            run = explore(b, d)
            with lock:
                results[b] = run

    threads = [threading.Thread(target=lane, args=(d,), daemon=True) for d in drivers]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # a bounded wait, so that Ctrl-C is seen at once
            t.join(0.2)
    return [results[b] for b in batch_nos]
