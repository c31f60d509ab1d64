"""What a run tells whoever watches it: the :class:`Observer` protocol and :class:`NullObserver`.

Lanes report from their own threads, so an observer takes its calls from any thread.  The
console's :class:`~conformance.engine.progress.Progress` is one; ``memspec selftest`` watches
for the first divergent step with another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from conformance.engine.pipeline import RunResult
    from conformance.vocabulary import StepOutcome


class Observer(Protocol):
    def phase_started(self, phase: str) -> None:
        """A phase begins: ``corpus``, ``<protocol> machine``, ``machines``, ``contract``."""

    def scenario_started(self) -> None:
        """A corpus scenario is begun on some lane."""

    def scenario_done(self) -> None:
        """A corpus scenario has its result."""

    def step(self, outcome: StepOutcome) -> None:
        """One step was judged (corpus, probe, machine or a finding's confirmation)."""

    def checks_done(self) -> None:
        """Every phase is over; the report is being written."""

    def report_written(self, result: RunResult) -> None:
        """The report exists (``result.data``; on disk when ``result.report_dir`` is set)."""

    def say(self, line: str) -> None:
        """A line for the reader after the report (the concurrent check, expectation upkeep)."""


class NullObserver:
    """Watches nothing."""

    def phase_started(self, phase: str) -> None:
        pass

    def scenario_started(self) -> None:
        pass

    def scenario_done(self) -> None:
        pass

    def step(self, outcome: StepOutcome) -> None:
        pass

    def checks_done(self) -> None:
        pass

    def report_written(self, result: RunResult) -> None:
        pass

    def say(self, line: str) -> None:
        pass
