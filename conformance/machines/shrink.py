"""After Hypothesis has shrunk a divergence: :func:`minimize` deletes the steps that do nothing
for it, :func:`_close_hunt` turns it into a :class:`~conformance.machines.session.Finding` set
aside from then on, and :func:`_replay_scenario` is the replay scenario written for it."""

from __future__ import annotations

import time
from typing import Any

from hypothesis.errors import Flaky

from conformance.drivers.base import Driver
from conformance.machines.profiles import Profile
from conformance.machines.session import (
    Finding,
    Hunt,
    MachineSession,
    Signature,
    noted,
    signature,
)
from conformance.scenario import Scenario, Step
from conformance.vocabulary import StepOutcome


def minimize(
    driver: Driver,
    protocol: str,
    steps: list[Step],
    failure: StepOutcome,
    max_replays: int = 80,
    wanted: Signature | None = None,
) -> tuple[list[Step], StepOutcome, int]:
    """Delete steps from a failing run while it still fails the same way.

    Hypothesis's shrinker works within a budget (of calls, and here of time) and can leave
    steps that do nothing for the failure (a retrieve of an empty query between two writes).
    Runs of steps are deleted first — halves, quarters, … single steps — each candidate
    replayed as a scenario in fresh scopes; a step whose removal leaves a later ``$name``
    unbound makes the candidate fail to run, so it is kept.  "The same way": with the same
    signature when ``wanted`` is given (see :func:`signature`), else on one of the same
    clauses.  Returns the steps, the failing outcome of the last replay that failed, and how
    many steps were removed.
    """
    clauses = set(failure.clauses)
    current = list(steps)
    best = failure
    replays = 0
    chunk = max(1, (len(current) - 1) // 2)
    while replays < max_replays:
        removed = False
        end = len(current) - 1  # the last step is where it fails: never deleted
        while end > 0 and replays < max_replays:
            start = max(0, end - chunk)
            candidate = current[:start] + current[end:]
            replays += 1
            step = _fails_the_same(driver, protocol, clauses, wanted, candidate)
            if step is not None:
                current = candidate[: step.index + 1]
                best = step
                removed = True
                end = min(start, len(current) - 1)
            else:
                end = start
        if chunk == 1 and not removed:
            break
        chunk = max(1, chunk // 2)
    return current, best, len(steps) - len(current)


def _fails_the_same(
    driver: Driver,
    protocol: str,
    clauses: set[str],
    wanted: Signature | None,
    candidate: list[Step],
) -> StepOutcome | None:
    """Replay ``candidate`` as a scenario in fresh scopes: its failing step when it fails the
    way :func:`minimize` keeps (``wanted``'s signature, else one of ``clauses``), else None."""
    from conformance.runner import run_scenario  # local: the runner imports nothing from here

    scenario = Scenario(
        protocol=protocol,  # type: ignore[arg-type]
        name="minimize",
        clauses=list(clauses) or ["MEM-SEAM.2"],
        steps=candidate,
    )
    result = run_scenario(driver, scenario)
    step = result.failing_step
    if result.verdict != "fail" or step is None:
        return None
    if wanted is not None:
        return step if signature(candidate[step.index], step) == wanted else None
    return step if clauses & set(step.clauses) else None


def _replay_scenario(
    protocol: str, profile: Profile, seed: int, n: int, steps: list[Step], outcome: StepOutcome
) -> Scenario:
    suffix = "" if n == 0 else f"-divergence-{n + 1}"
    return Scenario(
        protocol=protocol,  # type: ignore[arg-type]
        name=f"{protocol}-machine-seed-{seed}{suffix}",
        description=(
            f"Shrunk counterexample found by the {protocol} state machine"
            f" (profile {profile.name}, seed {seed}, divergence {n + 1}): {outcome.reason}"
        ),
        clauses=list(outcome.clauses) or ["MEM-SEAM.2" if protocol == "memory" else "LED-WIRE.1"],
        steps=steps,
        origin=f"shrunk from the {protocol} machine, profile {profile.name}, seed {seed}",
    )


def _close_hunt(
    session: MachineSession, driver: Driver, protocol: str, profile: Profile, seed: int, error: Any
) -> Finding:
    """The divergence the last batch shrank, minimized further and set aside from now on."""
    assert session.hunt.failure is not None and session.hunt.failure_steps is not None
    sig = session.hunt.signature or signature(session.hunt.failure_steps[-1], session.hunt.failure)
    steps, outcome, removed = minimize(
        driver, protocol, session.hunt.failure_steps, session.hunt.failure, wanted=sig
    )
    if 0 <= outcome.index < len(steps):
        outcome = noted(steps[outcome.index], outcome)
    finding = Finding(sig, outcome, steps)
    finding.details["steps_removed_after_shrinking"] = removed
    finding.details["shrink_s"] = round(time.monotonic() - session.hunt.started, 3)
    finding.details["found_after"] = {"examples": session.explored, "steps": session.steps}
    if session.hunt.cut:
        finding.details["shrink_cut"] = True
        finding.details["note"] = (
            f"shrinking stopped after {profile.shrink_budget_s:g}s: the replay is the smallest"
            " failing run found by then"
        )
    elif isinstance(error, Flaky):
        finding.details["flaky"] = True
        finding.details["note"] = "the failure did not reproduce on every replay"
    session.findings.append(finding)
    session.set_aside[sig] = 0
    session.hunt = Hunt()
    return finding
