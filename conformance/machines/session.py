"""What one machine exploration shares across its runs (:class:`MachineSession`), the distinct
divergences it finds (:class:`Finding`), and how one divergence is told from another
(:func:`signature`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.drivers.base import Driver
from conformance.scenario import Scenario, Step
from conformance.scrub import shown
from conformance.vocabulary import Mispredicted, StepOutcome

#: At most this many distinct divergences are found and shrunk in one exploration.
MAX_FINDINGS = 8

Signature = str


class Divergence(AssertionError):
    """Raised by a rule when the target's answer is not one the model allows."""


def signature(step: Step, outcome: StepOutcome) -> Signature:
    """What tells one divergence from another: the first clause the oracle named for it.

    The clauses the machine attached to the step itself (a follow-up read carries the clauses
    of the step it checks) are left out, so one wrong answer is one divergence wherever it
    shows; and only the leading clause counts, so one mistake seen from two sides (a reversed
    ranking breaking a keyword-match order here and a recency tie there, both MEM-SCORE.1
    first) is one divergence, not two."""
    own = set(step.clauses)
    named = [c for c in outcome.clauses if c not in own] or list(outcome.clauses)
    return named[0] if named else f"{outcome.op}: {shown(outcome.reason, 60)}"


def noted(step: Step, outcome: StepOutcome) -> StepOutcome:
    """``outcome`` with the step's note (a check read says which step it checks) in front of
    its reason."""
    if not step.note or outcome.verdict == "pass" or outcome.reason.startswith(step.note):
        return outcome
    return dataclasses.replace(outcome, reason=f"{step.note}: {outcome.reason}")


@dataclass
class Finding:
    """One distinct divergence: the failing step and the (shrunk) steps that reach it."""

    signature: Signature
    failure: StepOutcome
    steps: list[Step]
    expected: bool = False  # an --expect entry names it: recorded as met, not shrunk
    replay: Scenario | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def clauses(self) -> tuple[str, ...]:
        return tuple(self.failure.clauses)

    @property
    def reason(self) -> str:
        return f"step {self.failure.index} ({self.failure.op}): {self.failure.reason}"


@dataclass
class Hunt:
    """The divergence a batch is shrinking: its signature, the last failing run Hypothesis
    replayed (it replays the minimal one last), when the divergence was first met and when its
    shrinking began, and whether the shrink budget cut shrinking short."""

    signature: Signature | None = None
    failure_steps: list[Step] | None = None
    failure: StepOutcome | None = None
    first_failure_at: float | None = None
    started: float = 0.0
    cut: bool = False


@dataclass
class MachineSession:  # long: the counters, findings and window state every example shares
    """What all examples of one machine exploration share: the driver, counters, findings."""

    driver: Driver
    protocol: str
    shrink_budget_s: float = 30.0
    on_step: Callable[[StepOutcome], None] | None = None
    #: whether an ``--expect`` entry names a divergence with these clauses
    is_expected: Callable[[tuple[str, ...]], bool] = lambda _clauses: False
    started: float = field(default_factory=time.monotonic)
    examples: int = 0  # every run, shrink attempts included
    explored: int = 0  # runs of exploration (the profile's max_examples bounds these)
    steps: int = 0
    #: the divergence the current batch is shrinking
    hunt: Hunt = field(default_factory=Hunt)
    # across the whole exploration
    findings: list[Finding] = field(default_factory=list)
    set_aside: dict[Signature, int] = field(default_factory=dict)  # met again after found
    first_divergence: dict[str, Any] | None = None
    harness_error: BaseException | None = None
    indeterminate: StepOutcome | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    #: steps in flight at once on one connection (``--window``; 1: one at a time)
    window: int = 1
    #: steps of this batch run in turn, not ahead: (example, step index) once mispredicted
    in_turn: set[Any] = field(default_factory=set)
    #: batches run again because a step sent ahead was mispredicted
    reruns: int = 0

    def settled(self, key: Any, step: Step | None, outcome: StepOutcome | None, ok: bool) -> None:
        """A step sent ahead has been judged (in order): counted as the one-at-a-time run
        counts it, or, judged otherwise than predicted, the batch is run again
        (:class:`Mispredicted`)."""
        if not ok:
            raise Mispredicted(key)
        if step is None or outcome is None:
            return  # an example's start (reset and clock pin), as predicted
        self.steps += 1
        if self.on_step is not None:
            self.on_step(noted(step, outcome))

    def met(self) -> None:
        """Note when the first divergence of the exploration was met (before any shrinking)."""
        if self.first_divergence is None:
            self.first_divergence = {
                "elapsed_s": round(time.monotonic() - self.started, 3),
                "examples": self.examples,
                "steps": self.steps,
            }
