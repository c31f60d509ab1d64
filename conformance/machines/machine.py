"""The base of every protocol machine (:class:`DifferentialMachine`) and the precondition of
every rule (:func:`live`): one run, its recorded steps, and what a divergence does to it."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from hypothesis import assume
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from conformance.machines.session import Divergence, Finding, MachineSession, noted, signature
from conformance.scenario import Step
from conformance.vocabulary import StepOutcome


def live(machine: DifferentialMachine) -> bool:
    """Precondition of every rule: this run has not been stopped."""
    return machine.stopped is None


def stopped(machine: DifferentialMachine) -> bool:
    """Precondition of :meth:`DifferentialMachine.stopped_run`: this run has been stopped.

    Preconditions are named functions, never lambdas: Hypothesis describes a lambda by parsing
    its source (``ast.parse``), which CPython 3.11 does not do safely from several threads at
    once (the lanes are threads): "AST constructor recursion depth mismatch", a flaky run."""
    return machine.stopped is not None


class DifferentialMachine(RuleBasedStateMachine):
    """Base of every protocol machine.  Subclasses set ``protocol`` and write rules, each
    under ``@precondition(live)``."""

    protocol: ClassVar[str] = ""
    #: Target capabilities the machine cannot run without; lacking one, it is skipped.
    requires: ClassVar[frozenset[str]] = frozenset()
    #: Ops that change nothing on the target: after a set-aside divergence on one of them the
    #: model still describes the target, so the run goes on.
    READ_ONLY_OPS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, session: MachineSession) -> None:
        super().__init__()
        self.session = session
        self.driver = session.driver
        if session.harness_error is not None:
            assume(False)  # a bug in the harness itself: report it, do not shrink it
        if session.hunt.first_failure_at is not None and (
            time.monotonic() - session.hunt.first_failure_at > session.shrink_budget_s
        ):
            # Shrinking has had its time: every further candidate is rejected unseen, so
            # Hypothesis stops; the smallest failing run found so far is the replay.
            session.hunt.cut = True
            assume(False)
        session.examples += 1
        if session.hunt.signature is None:
            session.explored += 1  # a run of exploration, not a shrink attempt
        self.example_no = session.examples
        self.recorded: list[Step] = []
        #: the outcome that stopped this run (nothing more is sent), or None
        self.stopped: StepOutcome | None = None
        name = f"{self.protocol}-machine example {self.example_no}"
        begin_ahead = getattr(self.driver, "begin_ahead", None)
        if begin_ahead is not None and self._goes_ahead((self.example_no, -1)):
            begin_ahead(name, (self.example_no, -1))
        else:
            self._settle()
            self.driver.begin(name)

    def _goes_ahead(self, key: tuple[int, int]) -> bool:
        """Whether this step may be sent ahead of the answers in flight (``--window``): never
        while shrinking, nor where an earlier try of this batch mispredicted."""
        session = self.session
        return (
            session.window > 1
            and session.hunt.signature is None
            and key not in session.in_turn
            and hasattr(self.driver, "ahead")
        )

    def _settle(self) -> None:
        """Judge every step still in flight (a driver that sends steps ahead)."""
        settle = getattr(self.driver, "settle", None)
        if settle is not None:
            settle()

    @precondition(stopped)
    @rule()
    def stopped_run(self) -> None:
        """The only rule left once a run is stopped: it sends nothing."""

    def _stop(self, outcome: StepOutcome) -> StepOutcome:
        self.stopped = outcome
        return outcome

    def run_step(self, step: Step) -> StepOutcome:
        """Run ``step`` through the driver and record it.

        A new divergence raises (Hypothesis shrinks it); one already found, or one an
        ``--expect`` entry names, is set aside: the run stops quietly (or goes on, after a
        read that changes nothing).  Rules use the outcome only when it passed."""
        session = self.session
        if self.stopped is not None:
            return self.stopped
        if session.indeterminate is not None and session.hunt.signature is None:
            return self._stop(session.indeterminate)  # the target stopped answering
        key = (self.example_no, len(self.recorded))
        try:
            if self._goes_ahead(key):
                ahead: Any = self.driver
                outcome, provisional = ahead.ahead(len(self.recorded), step, key)
                if provisional:
                    # A pass predicted by the model; the session counts it once judged
                    # (MachineSession.settled), or runs the batch again.
                    self.recorded.append(step)
                    return outcome  # type: ignore[no-any-return]
            else:
                self._settle()
                outcome = self.driver.execute(len(self.recorded), step)
        except Exception as exc:
            session.harness_error = exc
            raise
        self.recorded.append(step)
        outcome = noted(step, outcome)
        session.steps += 1
        if session.on_step is not None:
            session.on_step(outcome)
        if outcome.verdict != "pass":  # kept by the session: not the whole answer
            outcome = outcome.kept()
        if outcome.verdict == "diverge":
            return self._diverged(step, outcome)
        if outcome.verdict == "indeterminate":
            if session.hunt.signature is None:
                session.indeterminate = outcome
            return self._stop(outcome)
        if outcome.verdict == "skip":
            session.skipped[outcome.reason] = session.skipped.get(outcome.reason, 0) + 1
            self.recorded.pop()
            return self._stop(outcome)
        return outcome

    def _diverged(self, step: Step, outcome: StepOutcome) -> StepOutcome:
        """A divergence: set aside when already found or expected, this run stopped when it is
        another than the one being shrunk, else raised for Hypothesis to shrink."""
        session = self.session
        session.met()
        sig = signature(step, outcome)
        if sig in session.set_aside:
            session.set_aside[sig] += 1
            return self._set_aside(step, outcome)
        if session.hunt.signature is not None and sig != session.hunt.signature:
            # Another divergence met while shrinking this one: not this hunt's (a later
            # batch finds it); a shrink must not slip from one divergence to another.
            return self._stop(outcome)
        if session.is_expected(tuple(outcome.clauses)):
            session.findings.append(Finding(sig, outcome, list(self.recorded), expected=True))
            session.set_aside[sig] = 0
            return self._set_aside(step, outcome)
        if session.hunt.signature is None:
            session.hunt.signature = sig
            session.hunt.started = time.monotonic()
        if session.hunt.first_failure_at is None:
            session.hunt.first_failure_at = time.monotonic()
        # Hypothesis replays the minimal failing run last, so the last one recorded is it.
        session.hunt.failure_steps = list(self.recorded)
        session.hunt.failure = outcome
        raise Divergence(f"step {outcome.index} ({outcome.op}): {outcome.reason}")

    def _set_aside(self, step: Step, outcome: StepOutcome) -> StepOutcome:
        if step.op in self.READ_ONLY_OPS or outcome.details.get("state_kept"):
            # Nothing changed on the target (a read, or a call model and target both refused):
            # the run goes on as if the step had not been made (rules use no answer that did
            # not pass), so a replay of this run never stops at a divergence already reported.
            self.recorded.pop()
            return outcome
        return self._stop(outcome)
