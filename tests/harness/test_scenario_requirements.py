"""A scenario needs what its steps use, declared or not: the drivers infer capabilities from the
steps, so a scenario whose steps need a control the target lacks is skipped with the reason
instead of being judged (memory ``cap``: MEM-WIRE.13; ledger test controls: LED-WIRE.7)."""

from __future__ import annotations

import pytest

from conformance.drivers.ledger import steps as ledger
from conformance.drivers.memory import steps as memory
from conformance.scenario import Scenario, Step
from conformance.targets.ledger import CLOCK, TEST_CONTROL
from conformance.targets.memory import CAP


def scenario(protocol: str, *steps: Step, requires: tuple[str, ...] = ()) -> Scenario:
    return Scenario(
        protocol=protocol,  # type: ignore[arg-type]
        name="s",
        clauses=["MEM-WIRE.13" if protocol == "memory" else "LED-WIRE.7"],
        requires=list(requires),
        steps=list(steps),
    )


@pytest.mark.clause("MEM-WIRE.13")
def test_a_write_with_a_cap_needs_the_cap_capability_undeclared() -> None:
    write = Step(op="write", args={"scopeKey": "{scope:a}", "records": [], "cap": 3})
    plain = Step(op="list", args={"scopeKey": "{scope:a}", "limit": 5})
    assert CAP in memory.infer_requires(scenario("memory", plain, write))
    assert CAP not in memory.infer_requires(scenario("memory", plain))
    assert "x" in memory.infer_requires(scenario("memory", plain, requires=("x",)))


@pytest.mark.clause("LED-WIRE.7")
def test_a_sweep_needs_test_controls_and_the_clock_undeclared() -> None:
    sweep = Step(op="sweep", args={"at": "2026-11-30T00:00:00.000Z"})
    save = Step(op="save", args={"body": "x"})
    assert {TEST_CONTROL, CLOCK} <= ledger.infer_requires(scenario("ledger", save, sweep))
    assert ledger.infer_requires(scenario("ledger", save)) == set()
