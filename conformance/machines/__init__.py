"""Differential state machines: Hypothesis drives model and target in lockstep.

A protocol's machine subclasses :class:`DifferentialMachine` and, in its rules, builds
:class:`~conformance.scenario.Step` objects and hands them to :meth:`DifferentialMachine.run_step`.
The step goes through the protocol's driver (model, target, oracle) exactly as a scenario step
would, and is recorded.  On a divergence the step raises, Hypothesis shrinks the run — every
shrink attempt is a fresh run against the target in fresh scopes — and the steps of the
minimal failing run become a replay :class:`~conformance.scenario.Scenario` that
``memspec replay`` (and the corpus) can run again.

:func:`run_machine` runs one protocol's machine under a profile and a seed and returns a
:class:`MachineResult`.  ``MACHINES`` maps a protocol to ``"module:Class"``.
"""

from __future__ import annotations

import importlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import HealthCheck, Phase, Verbosity, assume, settings
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from conformance.driver import Driver, StepOutcome
from conformance.machines.profiles import Profile
from conformance.scenario import Scenario, Step

MACHINES: dict[str, str] = {
    "memory": "conformance.machines.memory:MemoryMachine",
    "ledger": "conformance.machines.ledger:LedgerMachine",
}


class Divergence(AssertionError):
    """Raised by a rule when the target's answer is not one the model allows."""


@dataclass
class MachineSession:
    """What all examples of one machine run share: the driver, counters, the failure."""

    driver: Driver
    protocol: str
    shrink_budget_s: float = 30.0
    on_step: Callable[[StepOutcome], None] | None = None
    started: float = field(default_factory=time.monotonic)
    examples: int = 0
    steps: int = 0
    failure_steps: list[Step] | None = None
    failure: StepOutcome | None = None
    failures_seen: int = 0
    first_failure_at: float | None = None
    harness_error: BaseException | None = None
    shrink_cut: bool = False
    indeterminate: StepOutcome | None = None
    skipped: dict[str, int] = field(default_factory=dict)


class DifferentialMachine(RuleBasedStateMachine):
    """Base of every protocol machine.  Subclasses set ``protocol`` and write rules."""

    protocol: ClassVar[str] = ""
    #: Target capabilities the machine cannot run without; lacking one, it is skipped.
    requires: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, session: MachineSession) -> None:
        super().__init__()
        self.session = session
        self.driver = session.driver
        if session.harness_error is not None:
            assume(False)  # a bug in the harness itself: report it, do not shrink it
        if session.first_failure_at is not None and (
            time.monotonic() - session.first_failure_at > session.shrink_budget_s
        ):
            # Shrinking has had its time: every further candidate is rejected unseen, so
            # Hypothesis stops; the smallest failing run found so far is the replay.
            session.shrink_cut = True
            assume(False)
        session.examples += 1
        self.example_no = session.examples
        self.recorded: list[Step] = []
        self.driver.begin(f"{self.protocol}-machine example {self.example_no}")

    def run_step(self, step: Step) -> StepOutcome:
        """Run ``step`` through the driver, record it, and raise on a divergence."""
        if self.session.indeterminate is not None and self.session.failure is None:
            assume(False)  # the target stopped answering: stop exploring
        try:
            outcome = self.driver.execute(len(self.recorded), step)
        except Exception as exc:
            self.session.harness_error = exc
            raise
        self.recorded.append(step)
        self.session.steps += 1
        if self.session.on_step is not None:
            self.session.on_step(outcome)
        if outcome.verdict == "diverge":
            self.session.failures_seen += 1
            if self.session.first_failure_at is None:
                self.session.first_failure_at = time.monotonic()
            # Hypothesis replays the minimal failing run last, so the last one recorded is it.
            self.session.failure_steps = list(self.recorded)
            self.session.failure = outcome
            raise Divergence(f"step {outcome.index} ({outcome.op}): {outcome.reason}")
        if outcome.verdict == "indeterminate":
            if self.session.failure is None:
                self.session.indeterminate = outcome
            assume(False)
        if outcome.verdict == "skip":
            self.session.skipped[outcome.reason] = self.session.skipped.get(outcome.reason, 0) + 1
            self.recorded.pop()
            assume(False)
        return outcome


@dataclass
class MachineResult:
    protocol: str
    profile: str
    seed: int
    verdict: str  # pass | fail | indeterminate | skip
    examples: int
    steps: int
    elapsed_s: float
    reason: str = ""
    failure: StepOutcome | None = None
    replay: Scenario | None = None
    clauses: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)


def machine_class(protocol: str) -> type[DifferentialMachine]:
    module_name, _, attr = MACHINES[protocol].partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, attr)
    assert issubclass(cls, DifferentialMachine)
    return cls  # type: ignore[no-any-return]


BATCH = 10


def batch_seed(seed: int, batch_no: int) -> int:
    """The seed of one batch of examples (batch 0 uses the run's seed itself)."""
    return seed if batch_no == 0 else (seed * 1_000_003 + batch_no) % 2**32


def _run_batch(
    factory: Callable[[], DifferentialMachine], seed: int, size: int, base: settings
) -> BaseException | None:
    """One Hypothesis run of ``size`` examples; the exception it ended with, if any."""

    def make() -> DifferentialMachine:
        return factory()

    make._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    try:
        run_state_machine_as_test(make, settings=settings(base, max_examples=size))
    except Divergence:
        return None  # recorded in the session
    except (Flaky, HypothesisException, Exception) as exc:  # flaky target, rule or driver bug
        return exc
    return None


def minimize(
    driver: Driver, protocol: str, steps: list[Step], failure: StepOutcome, max_replays: int = 60
) -> tuple[list[Step], StepOutcome, int]:
    """Delete single steps from a failing run while it still fails on one of the same clauses.

    Hypothesis's shrinker works within a fixed budget of calls and can leave steps that do
    nothing for the failure (a retrieve of an empty query between two writes).  Each candidate
    is replayed as a scenario in fresh scopes; a step whose removal leaves a later ``$name``
    unbound makes the candidate fail to run, so it is kept.  Returns the steps, the failing
    outcome of the last replay that failed, and how many steps were removed.
    """
    from conformance.runner import run_scenario  # local: the runner imports nothing from here

    wanted = set(failure.clauses)
    current = list(steps)
    best = failure
    replays = 0
    changed = True
    while changed and replays < max_replays:
        changed = False
        for i in reversed(range(len(current) - 1)):  # the last step is where it fails
            if replays >= max_replays:
                break
            candidate = current[:i] + current[i + 1 :]
            scenario = Scenario(
                protocol=protocol,
                name="minimize",
                clauses=list(wanted) or ["MEM-SEAM.2"],
                steps=candidate,
            )  # type: ignore[arg-type]
            replays += 1
            result = run_scenario(driver, scenario)
            step = result.failing_step
            if result.verdict == "fail" and step is not None and wanted & set(step.clauses):
                current = candidate[: step.index + 1]
                best = step
                changed = True
                break
    return current, best, len(steps) - len(current)


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
) -> MachineResult:
    """Explore ``protocol`` against ``driver``'s target under ``profile``; shrink a failure.

    ``shard`` (K, N): run only the batches ``b`` with ``b % N == K - 1`` (conformance.shard)."""
    cls = machine or machine_class(protocol)
    seed = pick_seed(profile, seed)
    missing = sorted(cls.requires - driver.capabilities())
    if missing:
        return MachineResult(
            protocol,
            profile.name,
            seed,
            "skip",
            0,
            0,
            0.0,
            reason=f"the target lacks {', '.join(missing)}",
        )
    session = MachineSession(driver, protocol, profile.shrink_budget_s, on_step)

    def factory() -> DifferentialMachine:
        return cls(session)

    run_settings = settings(
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
    started = time.monotonic()
    error: BaseException | None = None
    ran = 0
    # Examples run in batches of at most BATCH, each batch a Hypothesis run with its own seed
    # derived from the run's seed.  A batch never looks at the clock, so a batch is exactly
    # reproducible; the time budget (quick/deep only) is checked between batches.  The plan
    # (batch b: its seed and min(BATCH, max_examples - b * BATCH) examples) is fixed up front,
    # so that N shards, each taking every N-th batch, run exactly the batches of one run.
    for batch_no in range(-(-profile.max_examples // BATCH)):
        if batch_no % shard[1] != shard[0] - 1:
            continue
        if ran and profile.fixed_seed is None and time.monotonic() - started > profile.budget_s:
            break
        size = min(BATCH, profile.max_examples - batch_no * BATCH)
        before = session.examples
        error = _run_batch(factory, batch_seed(seed, batch_no), size, run_settings)
        ran += 1
        if session.failure is not None or session.indeterminate is not None or error is not None:
            break
        if session.examples == before:  # nothing could run at all
            break
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
    )
    if session.failure is not None and session.failure_steps is not None:
        result.verdict = "fail"
        steps, outcome, removed = minimize(driver, protocol, session.failure_steps, session.failure)
        result.failure = outcome
        result.clauses = tuple(outcome.clauses)
        result.reason = f"step {outcome.index} ({outcome.op}): {outcome.reason}"
        result.details["steps_removed_after_shrinking"] = removed
        if session.shrink_cut:
            result.details["shrink_cut"] = True
            result.reason += (
                f" (shrinking stopped after {profile.shrink_budget_s:g}s: the replay is the"
                " smallest failing run found by then)"
            )
        elif isinstance(error, Flaky):
            result.details["flaky"] = True
            result.reason += " (the failure did not reproduce on every replay)"
        result.replay = Scenario(
            protocol=protocol,  # type: ignore[arg-type]
            name=f"{protocol}-machine-seed-{seed}",
            description=(
                f"Shrunk counterexample found by the {protocol} state machine"
                f" (profile {profile.name}, seed {seed}): {outcome.reason}"
            ),
            clauses=list(outcome.clauses)
            or ["MEM-SEAM.2" if protocol == "memory" else "LED-WIRE.1"],
            steps=steps,
            origin=f"shrunk from the {protocol} machine, profile {profile.name}, seed {seed}",
        )
        return result
    if session.indeterminate is not None:
        outcome = session.indeterminate
        result.verdict = "indeterminate"
        result.failure = outcome
        result.clauses = tuple(outcome.clauses)
        result.reason = f"step {outcome.index} ({outcome.op}): {outcome.reason}"
        return result
    error = session.harness_error or error
    if error is not None:
        import traceback

        result.details["traceback"] = traceback.format_exception(error)[-6:]
        result.verdict = "indeterminate"
        result.reason = f"harness error: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        return result
    if session.steps == 0:
        result.verdict = "skip"
        result.reason = (
            "no step could run against this target"
            if ran
            else f"no batch of examples falls in shard {shard[0]}/{shard[1]}"
        )
    return result
