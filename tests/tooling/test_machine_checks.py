"""The clauses each state-machine rule declares (``@checks``): every rule of every machine
declares at least one, every declared id is a live clause of its protocol's spec, and a
machine's ``MACHINE_CLAUSES`` is exactly what its rules declare, in spec order."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis.stateful import RuleBasedStateMachine, rule

from conformance.clauses import load_clauses
from conformance.machines import MACHINES, DifferentialMachine, machine_class
from conformance.machines.checks import checks, machine_clauses, machine_rules

ROOT = Path(__file__).resolve().parents[2]
SPECS = load_clauses(ROOT / "specs")
PREFIX = {"memory": "MEM-", "ledger": "LED-"}


@pytest.mark.clause()
@pytest.mark.parametrize("protocol", sorted(MACHINES))
def test_every_rule_declares_live_clauses_of_its_spec(protocol: str) -> None:
    machine = machine_class(protocol)
    rules = machine_rules(machine)
    assert len(rules) > 10, [r.name for r in rules]
    # the base's one rule sends nothing once a run is stopped
    own = [r for r in rules if r.name not in vars(DifferentialMachine)]
    undeclared = [r.name for r in own if not r.clauses]
    assert undeclared == [], f"rules without @checks: {undeclared}"
    for r in own:
        for cid in r.clauses:
            assert cid in SPECS, f"{r.qualname}: {cid} is defined in no spec"
            assert not SPECS[cid].retired, f"{r.qualname}: {cid} is retired"
            assert cid.startswith(PREFIX[protocol]), f"{r.qualname}: {cid}"
            assert r.clauses.count(cid) == 1, f"{r.qualname}: {cid} twice"


@pytest.mark.clause()
@pytest.mark.parametrize("protocol", sorted(MACHINES))
def test_machine_clauses_are_the_rules_declarations_in_spec_order(protocol: str) -> None:
    machine = machine_class(protocol)
    module = __import__(machine.__module__, fromlist=["MACHINE_CLAUSES"])
    declared = {c for r in machine_rules(machine) for c in r.clauses}
    order = list(SPECS)
    assert module.MACHINE_CLAUSES == tuple(sorted(declared, key=order.index))


@pytest.mark.clause()
def test_a_rule_s_declaration_survives_hypothesis_s_wrappers_and_names_where_it_is() -> None:
    class Tiny(RuleBasedStateMachine):
        @checks("MEM-STORE.7")
        @rule()
        def above(self) -> None:
            pass

        @rule()
        @checks("MEM-STORE.8", "MEM-STORE.7")
        def below(self) -> None:
            pass

        @rule()
        def bare(self) -> None:
            pass

        def helper(self) -> None:
            pass

    by_name = {r.name: r for r in machine_rules(Tiny)}
    assert set(by_name) == {"above", "below", "bare"}
    assert by_name["above"].clauses == ("MEM-STORE.7",)
    assert by_name["below"].clauses == ("MEM-STORE.8", "MEM-STORE.7")
    assert by_name["bare"].clauses == ()
    assert by_name["above"].qualname.endswith("Tiny.above")
    assert by_name["above"].path == __file__
    assert machine_clauses(Tiny) == ("MEM-STORE.7", "MEM-STORE.8")
    with pytest.raises(ValueError):
        checks()
