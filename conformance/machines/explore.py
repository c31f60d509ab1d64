""":func:`run_machine`: one protocol's machine explored under a profile and a seed, batch after
batch, into a :class:`MachineResult`; and the registry of machines (:data:`MACHINES`)."""

from __future__ import annotations

import importlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.drivers.base import Driver
from conformance.machines.batches import BATCH, _merge_batch, _run_round, machine_settings
from conformance.machines.machine import DifferentialMachine
from conformance.machines.profiles import Profile
from conformance.machines.session import MAX_FINDINGS, Finding, MachineSession
from conformance.machines.shrink import _replay_scenario
from conformance.scenario import Scenario
from conformance.scrub import shown
from conformance.vocabulary import ResultVerdict, StepOutcome

MACHINES: dict[str, str] = {
    "memory": "conformance.machines.memory:MemoryMachine",
    "ledger": "conformance.machines.ledger:LedgerMachine",
}


@dataclass
class MachineResult:
    protocol: str
    profile: str
    seed: int
    verdict: ResultVerdict
    examples: int
    steps: int
    elapsed_s: float
    reason: str = ""
    failure: StepOutcome | None = None  # the first finding's (kept for single-result readers)
    replay: Scenario | None = None
    clauses: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    #: every distinct divergence, in the order found (``failure``/``replay`` are the first's)
    findings: list[Finding] = field(default_factory=list)


def finding_key(protocol: str, n: int) -> str:
    """The report key of a machine's ``n``-th finding (0-based): the first keeps the name the
    report always used, later ones are numbered."""
    return f"{protocol}-machine" if n == 0 else f"{protocol}-machine-{n + 1}"


def machine_class(protocol: str) -> type[DifferentialMachine]:
    module_name, _, attr = MACHINES[protocol].partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, attr)
    assert issubclass(cls, DifferentialMachine)
    return cls  # type: ignore[no-any-return]


def pick_seed(profile: Profile, seed: int | None) -> int:
    if seed is not None:
        return seed
    if profile.fixed_seed is not None:
        return profile.fixed_seed
    return random.SystemRandom().randrange(2**32)


def run_machine(
    protocol: str,
    driver: Driver,
    profile: Profile,
    seed: int | None = None,
    *,
    on_step: Callable[[StepOutcome], None] | None = None,
    machine: type[DifferentialMachine] | None = None,
    shard: tuple[int, int] = (1, 1),
    is_expected: Callable[[tuple[str, ...]], bool] | None = None,
    max_findings: int = MAX_FINDINGS,
    lanes: Sequence[Driver] = (),
    window: int = 1,
) -> MachineResult:
    """Explore ``protocol`` against ``driver``'s target under ``profile``; shrink every
    distinct divergence (up to ``max_findings``).

    ``is_expected(clauses)``: an ``--expect`` entry names a divergence with these clauses (it
    is set aside, never shrunk).  ``shard`` (K, N): run only the batches ``b`` with
    ``b % N == K - 1`` (:mod:`conformance.shard`).  ``lanes``: more drivers of the same
    protocol (each with its own scopes or its own instance) that explore the next batches side
    by side with ``driver``; the result is the same with or without them.  ``window``: steps
    each driver may have in flight on its connection (pipelined; 1: one at a time), with the
    same result whatever its size.
    """
    cls = machine or machine_class(protocol)
    seed = pick_seed(profile, seed)
    missing = sorted(cls.requires - driver.capabilities())
    if missing:
        reason = f"the target lacks {', '.join(missing)}"
        return MachineResult(protocol, profile.name, seed, "skip", 0, 0, 0.0, reason=reason)
    session = MachineSession(driver, protocol, profile.shrink_budget_s, on_step, window=window)
    if is_expected is not None:
        session.is_expected = is_expected
    started, drivers, plan = time.monotonic(), [driver, *lanes], _batch_plan(profile, shard)
    error = _explore(plan, drivers, session, cls, seed, profile, started, shard, max_findings)
    elapsed = time.monotonic() - started
    result = MachineResult(
        protocol,
        profile.name,
        seed,
        "pass",
        session.examples,
        session.steps,
        elapsed,
        details={"skipped_steps": dict(session.skipped)},
        findings=session.findings,
    )
    result.details["explored"] = _explored_details(session)
    if window > 1:
        result.details["window"] = _window_details(window, session, drivers)
    for n, finding in enumerate(session.findings):
        finding.replay = _replay_scenario(
            protocol, profile, seed, n, finding.steps, finding.failure
        )
    if session.findings:
        _conclude_with_findings(result, session, error)
    else:
        _conclude_without_findings(result, session, error, plan, shard)
    return result


def _batch_plan(profile: Profile, shard: tuple[int, int]) -> list[tuple[int, int]]:
    """The batches this shard owes, each ``(b, examples)``.

    Examples run in batches of at most BATCH, each batch a Hypothesis run with its own seed
    derived from the run's seed.  A batch never looks at the clock, so a batch is exactly
    reproducible.  The plan (batch b: its seed and min(BATCH, max_examples - b * BATCH)
    examples) is fixed up front, so that N shards, each taking every N-th batch, run exactly
    the batches of one run."""
    return [
        (b, min(BATCH, profile.max_examples - b * BATCH))
        for b in range(-(-profile.max_examples // BATCH))
        if b % shard[1] == shard[0] - 1
    ]


def _explore(
    plan: list[tuple[int, int]],
    drivers: list[Driver],
    session: MachineSession,
    cls: type[DifferentialMachine],
    seed: int,
    profile: Profile,
    started: float,
    shard: tuple[int, int],
    max_findings: int,
) -> BaseException | None:
    """Run the batches of ``plan`` on ``drivers`` into ``session``; the error that stopped a
    batch, if any.

    A batch that meets a new divergence ends there and shrinks it; later batches set it aside,
    and batches past the plan (appended to ``plan``) make up the runs it left.  The time
    budget (quick/deep only) is checked between windows of batches."""
    run_settings = machine_settings(profile)
    error: BaseException | None = None
    owed = sum(n for _, n in plan)  # runs of exploration this shard owes
    i = 0
    while i < len(plan) or (plan and session.explored < owed):
        if i >= len(plan):
            # Batches that ended at a divergence left runs unexplored: make them up with
            # batches past the plan, in this shard's own numbering.
            plan.append((plan[-1][0] + shard[1], min(BATCH, owed - session.explored)))
        if i and profile.fixed_seed is None and time.monotonic() - started > profile.budget_s:
            break
        # Speculation: the next batches run side by side, each setting aside what is found so
        # far.  They are taken in batch order; once one finds something new, the later ones
        # ran with too little set aside, so they are dropped and run again -- the result is
        # exactly that of one batch after the other, whatever the number of lanes.
        batches = plan[i : i + len(drivers)]
        runs = _run_round(batches, drivers, session, cls, seed, run_settings, profile)
        before = session.examples
        stop = False
        for run in runs:
            _merge_batch(session, run)
            i += 1
            error = error or run.error
            stop = (
                session.indeterminate is not None
                or error is not None
                or session.harness_error is not None
                or len(session.findings) >= max_findings
            )
            if stop or run.session.findings:
                break
        if stop or session.examples == before:  # stopped, or nothing could run at all
            break
    return error


def _explored_details(session: MachineSession) -> dict[str, Any]:
    """The report's ``explored`` details: how much ran, and how much after the first
    divergence and what was set aside."""
    explored: dict[str, Any] = {
        "examples": session.examples,
        "exploring_examples": session.explored,
        "steps": session.steps,
    }
    if session.first_divergence is not None:
        first = session.first_divergence
        explored["first_divergence"] = first
        explored["after_first"] = {
            "examples": session.examples - first["examples"],
            "steps": session.steps - first["steps"],
        }
        explored["set_aside"] = dict(session.set_aside)
    return explored


def _conclude_with_findings(
    result: MachineResult, session: MachineSession, error: BaseException | None
) -> None:
    """A ``fail`` verdict: the first unexpected finding speaks for the machine in
    single-result views; what ended exploration early is not hidden by a finding."""
    lead = next((f for f in session.findings if not f.expected), session.findings[0])
    result.verdict = "fail"
    result.failure = lead.failure
    result.clauses = lead.clauses
    result.replay = lead.replay
    result.reason = lead.reason + (f" ({lead.details['note']})" if "note" in lead.details else "")
    result.details.update({k: v for k, v in lead.details.items() if k != "note"})
    if len(session.findings) > 1:
        result.reason += f" — and {len(session.findings) - 1} more distinct divergence(s)"
    stopped_by = session.harness_error or error
    if stopped_by is not None:
        result.details["stopped_by"] = shown(f"{type(stopped_by).__name__}: {stopped_by}")
    if session.indeterminate is not None:
        result.details["stopped_by"] = shown(f"indeterminate: {session.indeterminate.reason}")


def _conclude_without_findings(
    result: MachineResult,
    session: MachineSession,
    error: BaseException | None,
    plan: list[tuple[int, int]],
    shard: tuple[int, int],
) -> None:
    """The verdict of a run with no finding: ``indeterminate`` (a step, or a harness error),
    ``skip`` (no step ran) or the ``pass`` it already holds."""
    if session.indeterminate is not None:
        outcome = session.indeterminate
        result.verdict = "indeterminate"
        result.failure = outcome
        result.clauses = tuple(outcome.clauses)
        result.reason = f"step {outcome.index} ({outcome.op}): {outcome.reason}"
        return
    error = session.harness_error or error
    if error is not None:
        import traceback

        # (an error from a worker process carries the worker's own traceback)
        lines = getattr(error, "remote_traceback", None) or traceback.format_exception(error)
        result.details["traceback"] = list(lines)[-6:]
        result.verdict = "indeterminate"
        first_line = str(error).splitlines()[0] if str(error) else ""
        result.reason = f"harness error: {type(error).__name__}: {first_line}"
        return
    if session.steps == 0:
        result.verdict = "skip"
        result.reason = (
            "no step could run against this target"
            if plan
            else f"no batch of examples falls in shard {shard[0]}/{shard[1]}"
        )


def _window_details(window: int, session: MachineSession, drivers: list[Driver]) -> dict[str, Any]:
    """What the report says of ``--window``: its size, how many batches were run again after
    a step sent ahead was mispredicted, and why a target's pipelining was turned off (then its
    steps went one at a time)."""
    details: dict[str, Any] = {"size": window, "reruns": session.reruns}
    offs = {
        off for d in drivers if (off := getattr(getattr(d, "target", None), "pipelining_off", ""))
    }
    if offs:
        details["pipelining_off"] = sorted(offs)
    return details
