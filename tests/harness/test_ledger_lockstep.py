"""The ledger state machine against the bundled store: model and store agree for a bounded run,
and the run actually reaches the states the clauses are about (a degenerate alphabet would pass
vacuously)."""

from __future__ import annotations

from collections import Counter

import pytest

from conformance.machines import run_machine
from conformance.machines.ledger import LedgerMachine
from conformance.machines.profiles import Profile
from conformance.targets.ledger import CLOCK
from conformance.vocabulary import StepOutcome
from tests.common.ledger_harness import bundled_store, make_driver

PROFILE = Profile("ledger-test", max_examples=40, step_count=25, budget_s=25.0)


class Census:
    """What a machine run did, step by step."""

    def __init__(self) -> None:
        self.verdicts: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()

    def __call__(self, o: StepOutcome) -> None:
        self.verdicts[o.verdict] += 1
        ex = o.exchange
        if ex is None or ex.status is None:
            return
        body = ex.body if isinstance(ex.body, dict) else {}
        self.seen[f"{o.op}:{ex.status}"] += 1
        err = body.get("error")
        if isinstance(err, dict) and "nothing was written" in str(err.get("message")):
            self.seen["budget refusal"] += 1
        if isinstance(err, dict) and str(err.get("message", "")).startswith("Memory pins cannot"):
            self.seen["credential refusal"] += 1
        if o.op == "consolidate" and ex.status == 200:
            for key in ("applied", "invalid", "refused", "declined"):
                self.seen[f"consolidate {key}"] += int(body.get(key) or 0)
        if o.op == "sweep" and ex.status == 200 and body.get("expired"):
            self.seen["expired"] += 1
        if o.op == "list_as_of" and ex.status == 200:
            statuses = {r.get("status") for r in body.get("records", []) if isinstance(r, dict)}
            for s in statuses - {"active"}:
                self.seen[f"history {s}"] += 1
        if o.op == "packet" and ex.status == 200 and body.get("lines"):
            self.seen["packet lines"] += 1


@pytest.mark.clause(
    "LED-REC.1",
    "LED-REC.2",
    "LED-REC.3",
    "LED-REC.6",
    "LED-PROV.1",
    "LED-PROV.2",
    "LED-PROV.3",
    "LED-STATUS.2",
    "LED-STATUS.3",
    "LED-STATUS.4",
    "LED-SAVE.1",
    "LED-SAVE.2",
    "LED-SAVE.3",
    "LED-LIST.1",
    "LED-LIST.2",
    "LED-FORGET.1",
    "LED-FORGET.2",
    "LED-FORGET.3",
    "LED-EDIT.1",
    "LED-EDIT.2",
    "LED-EDIT.3",
    "LED-REVIEW.1",
    "LED-REVIEW.2",
    "LED-REVIEW.3",
    "LED-REVIEW.4",
    "LED-CRED.2",
    "LED-CRED.3",
    "LED-INT.1",
    "LED-INT.2",
    "LED-INT.3",
    "LED-INT.4",
    "LED-INT.5",
    "LED-ASOF.1",
    "LED-ASOF.2",
    "LED-EXP.2",
    "LED-EXP.3",
    "LED-EXP.5",
    "LED-GROUP.1",
    "LED-GROUP.2",
    "LED-GROUP.4",
    "LED-BUDGET.2",
    "LED-BUDGET.3",
    "LED-BUDGET.4",
    "LED-BUDGET.5",
    "LED-CONS.2",
    "LED-VOCAB.1",
    "LED-VOCAB.8",
    "LED-GATE.1",
    "LED-GATE.2",
    "LED-GATE.3",
    "LED-GATE.5",
    "LED-GATE.6",
    "LED-GATE.9",
    "LED-PACKET.1",
    "LED-PACKET.3",
    "LED-PACKET.5",
    "LED-WIRE.1",
    "LED-WIRE.2",
    "LED-WIRE.3",
    "LED-WIRE.4",
    "LED-WIRE.5",
    "LED-WIRE.8",
)
def test_machine_agrees_with_the_bundled_store_and_reaches_the_interesting_states() -> None:
    census = Census()
    with bundled_store() as url:
        driver = make_driver(url)
        try:
            result = run_machine("ledger", driver, PROFILE, seed=20261130, on_step=census)
        finally:
            driver.close()
    assert result.verdict == "pass", result.reason
    assert result.examples >= 20 and result.steps >= 300
    assert census.verdicts["diverge"] == census.verdicts["indeterminate"] == 0
    seen = census.seen
    # Writes that succeed and writes that are refused, for every reason the spec names.
    for key in (
        "save:200",
        "supersede:200",
        "delete:200",
        "approve:200",
        "reject:200",
        "propose:200",
        "budget refusal",
        "credential refusal",
        "supersede:409",
        "delete:409",
        "save:400",
    ):
        assert seen[key] > 0, f"the machine never produced {key!r}: {dict(seen)}"
    # Raw JSON-RPC bodies (unknown method, non-object params) are transport probes now, run
    # once each apart from the machine (tests/harness/test_exploration.py).
    assert not any(k.startswith("raw:") for k in seen), dict(seen)
    # Consolidation elements of every verdict, expiry, history of closed records, packets.
    for key in (
        "consolidate applied",
        "consolidate invalid",
        "consolidate refused",
        "expired",
        "history superseded",
        "packet lines",
    ):
        assert seen[key] > 0, f"the machine never produced {key!r}: {dict(seen)}"


@pytest.mark.clause("LED-INT.3", "LED-ASOF.1", "LED-WIRE.5", "LED-GATE.8")
def test_machine_agrees_without_a_pinned_clock() -> None:
    """Without ``ledger.clock`` the machine leaves out the rules that place instants, and the
    store's own timestamps are judged through the monotone time correspondence."""
    census = Census()
    with bundled_store() as url:
        driver = make_driver(url, without=(CLOCK,))
        try:
            assert CLOCK not in driver.capabilities()
            result = run_machine(
                "ledger",
                driver,
                Profile("ledger-test-noclock", max_examples=20, step_count=20, budget_s=15.0),
                seed=7,
                on_step=census,
            )
        finally:
            driver.close()
    assert result.verdict == "pass", result.reason
    assert result.steps >= 100
    for op in ("set_clock", "sweep"):
        assert not any(k.startswith(op + ":") for k in census.seen), census.seen
    assert census.seen["supersede:200"] > 0 and census.seen["history superseded"] > 0


@pytest.mark.clause("LED-WIRE.7")
def test_machine_without_test_controls_does_not_run() -> None:
    """The machine needs ``ledger.test_control``: against a store without it nothing is judged
    and nothing passes vacuously."""
    with bundled_store(test_control=False) as url:
        driver = make_driver(url)
        try:
            result = run_machine(
                "ledger", driver, Profile("t", max_examples=5, step_count=5, budget_s=5.0), seed=1
            )
        finally:
            driver.close()
    assert result.verdict == "skip"  # skipped with its reason: never a vacuous pass
    assert "ledger.test_control" in result.reason
    assert result.steps == 0


def test_machine_class_is_registered() -> None:
    from conformance.machines import machine_class

    assert machine_class("ledger") is LedgerMachine
