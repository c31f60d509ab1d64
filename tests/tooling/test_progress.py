"""Live progress of a run (harness UX; no spec clause of its own): in a CI log it prints a line
when a phase starts and when it is done, and otherwise at most one line per interval."""

from __future__ import annotations

import io

import pytest

from conformance.engine.progress import Progress
from conformance.vocabulary import StepOutcome


def outcome(verdict: str = "pass") -> StepOutcome:
    return StepOutcome(index=0, op="write", verdict=verdict, clauses=())  # type: ignore[arg-type]


@pytest.mark.clause()
def test_a_log_gets_phase_lines_and_throttled_progress() -> None:
    out = io.StringIO()
    p = Progress(out, interval_s=3600.0)
    p.phase_started("corpus")
    for _ in range(500):
        p.step(outcome())
    p.step(outcome("diverge"))
    p.scenario_done()
    p.phase_started("memory machine")
    p.checks_done()
    lines = out.getvalue().splitlines()
    assert [line.split(" | ")[0] for line in lines] == [
        "memspec corpus",
        "memspec corpus done",
        "memspec memory machine",
        "memspec memory machine done",
    ]  # 501 steps, but no line between phases within the interval
    assert "1 scenarios | 501 steps | 1 divergences" in lines[1]


@pytest.mark.clause()
def test_disabled_progress_writes_nothing() -> None:
    out = io.StringIO()
    p = Progress(out, enabled=False)
    p.phase_started("corpus")
    p.step(outcome())
    p.checks_done()
    assert out.getvalue() == ""


@pytest.mark.clause()
def test_progress_says_how_many_are_in_flight_from_many_lanes() -> None:
    import threading

    out = io.StringIO()
    p = Progress(out, interval_s=3600.0)
    p.phase_started("corpus")
    for _ in range(3):
        p.scenario_started()
    assert "(3 in flight)" in p.line()

    def lane() -> None:
        for _ in range(1000):
            p.step(outcome())

    threads = [threading.Thread(target=lane) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(3):
        p.scenario_done()
    assert p.steps == 4000 and p.in_flight == 0
    assert "3 scenarios | 4000 steps" in p.line() and "in flight" not in p.line()
