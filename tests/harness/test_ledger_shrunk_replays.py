"""The ledger machine finds a broken store, shrinks the run, and writes it as a replay scenario
that names the broken clause, fails the same way on the broken store and passes on a healthy
one."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.machines import run_machine
from conformance.machines.profiles import Profile
from conformance.runner import run_scenario
from conformance.scenario import Scenario, dump_scenario, load_scenario
from tests.common.ledger_harness import MUTANTS, break_store, bundled_store, make_driver

PROFILE = Profile(
    # shrinking to its end on a loaded machine too (a quiet one ends well within it)
    "ledger-broken",
    max_examples=120,
    step_count=15,
    budget_s=30.0,
    shrink_budget_s=180.0,
)


def hunt(
    monkeypatch: pytest.MonkeyPatch, name: str, seed: int, tmp_path: Path
) -> tuple[str, Scenario]:
    """Run the machine against the broken store (a mutant of the catalogue, or a broken store
    of the harness); check the replay on it; return it."""
    mutants = (name,) if name in MUTANTS else ()
    clause = MUTANTS[name] if mutants else break_store(monkeypatch, name)
    with bundled_store(quirks=mutants) as url:
        driver = make_driver(url)
        try:
            # the first divergence is the point here (every distinct one: test_exploration.py)
            result = run_machine("ledger", driver, PROFILE, seed=seed, max_findings=1)
            assert result.verdict == "fail", result.reason
            assert clause in result.clauses, (result.clauses, result.reason)
            assert result.replay is not None
            # The replay is a scenario file like any other: written, read back, replayed.
            path = tmp_path / f"{name}.json"
            dump_scenario(result.replay, path)
            replay = load_scenario(path)
            assert clause in replay.clauses
            again = run_scenario(driver, replay)
            assert again.verdict == "fail", again.reason
            assert clause in again.failed_clauses()
            assert again.failing_step is not None
            assert again.failing_step.index == len(replay.steps) - 1  # fails at its last step
        finally:
            driver.close()
    return clause, replay


def passes_on_a_healthy_store(replay: Scenario) -> None:
    with bundled_store() as url:
        driver = make_driver(url)
        try:
            result = run_scenario(driver, replay)
        finally:
            driver.close()
    assert result.verdict == "pass", result.reason


@pytest.mark.slow
@pytest.mark.clause("LED-INT.3", "LED-EDIT.1", "LED-ASOF.1")
def test_a_gap_at_supersession_is_shrunk_to_a_small_replay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clause, replay = hunt(monkeypatch, "led-supersede-leaves-gap", 20261130, tmp_path)
    ops = [s.op for s in replay.steps]
    assert len(ops) <= 8, ops
    assert "supersede" in ops or "consolidate" in ops or "approve" in ops
    assert ops[-1] in ("list_as_of", "list", "delete", "supersede")
    monkeypatch.undo()
    passes_on_a_healthy_store(replay)


@pytest.mark.slow
@pytest.mark.clause("LED-BUDGET.2", "LED-BUDGET.5")
def test_a_store_that_evicts_at_its_budget_is_shrunk_to_a_small_replay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clause, replay = hunt(monkeypatch, "led-budget-evicts-oldest", 20261130, tmp_path)
    ops = [s.op for s in replay.steps]
    assert len(ops) <= 10, ops
    assert ops[-1] == "save"  # the save the store should have refused
    monkeypatch.undo()
    passes_on_a_healthy_store(replay)


@pytest.mark.slow
@pytest.mark.clause("LED-ASOF.1", "LED-INT.1")
def test_a_history_read_off_by_one_millisecond_is_found_at_the_boundary(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only a read one millisecond before an interval closes shows this mistake: the machine
    aims its history reads at interval boundaries."""
    _clause, replay = hunt(monkeypatch, "as_of_misses_the_last_millisecond", 20261130, tmp_path)
    assert replay.steps[-1].op == "list_as_of"
    assert len(replay.steps) <= 8
    monkeypatch.undo()
    passes_on_a_healthy_store(replay)
