"""The catalogue of broken ledger stores: each realistic mistake is caught by the corpus, and the
divergence names the clause the mistake breaks."""

from __future__ import annotations

import threading

import pytest

from conformance.drivers.ledger.driver import LedgerDriver
from conformance.embedded.ledger.service import LedgerService
from conformance.runner import load_corpus, run_scenario
from conformance.scenario import Scenario, Step
from conformance.vocabulary import RunContext, Secret, TargetConfig
from tests.common.ledger_harness import (
    BROKEN,
    MUTANTS,
    TOKEN,
    break_store,
    bundled_store,
    make_driver,
)


def oracle_only(scenario: Scenario) -> Scenario:
    """The scenario without its hand-written expectations: the model's verdict alone."""
    steps = [s.model_copy(update={"expect": None}) for s in scenario.steps]
    return scenario.model_copy(update={"steps": steps})


#: Broken stores whose mistake is a choice the seed leaves open (their clause is a reference
#: clause): the corpus notices them as deviations from the reference implementation, never
#: as failures.
REFERENCE_CHOICES = {"led-list-oldest-first", "credential_message_varies"}


def first_divergence(url: str, verdict: str = "fail") -> tuple[list[str], list[str]]:
    """Run the corpus (judged by the oracle alone) until three scenarios end with ``verdict``
    (``fail``, or ``deviate``); (their names, the clauses they named)."""
    driver = make_driver(url)
    failing: list[str] = []
    clauses: list[str] = []
    try:
        for scenario, _path in load_corpus(["ledger"]):
            result = run_scenario(driver, oracle_only(scenario))
            assert result.verdict != "indeterminate", (scenario.name, result.reason)
            if verdict == "deviate" and result.verdict == "fail":
                raise AssertionError(f"{scenario.name} fails: {result.reason}")
            if result.verdict == verdict:
                failing.append(scenario.name)
                clauses.extend(result.failed_clauses() or result.deviation_clauses())
                if len(failing) >= 3:
                    break
    finally:
        driver.close()
    return failing, clauses


@pytest.mark.clause(
    "LED-INT.3",
    "LED-BUDGET.2",
    "LED-BUDGET.5",
    "LED-FORGET.3",
    "LED-LIST.2",
    "LED-WIRE.4",
    "LED-REC.3",
    "LED-EXP.2",
    "LED-CRED.2",
    "LED-CRED.5",
)
@pytest.mark.parametrize("name", sorted(BROKEN) + sorted(MUTANTS))
def test_corpus_catches_the_broken_store(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A broken store of the harness (``BROKEN``) or a mutant of the catalogue (``MUTANTS``)."""
    mutants = (name,) if name in MUTANTS else ()
    clause = MUTANTS[name] if mutants else break_store(monkeypatch, name)
    with bundled_store(quirks=mutants) as url:
        failing, clauses = first_divergence(url, "deviate" if name in REFERENCE_CHOICES else "fail")
    assert failing, f"no corpus scenario noticed the {name} store"
    assert clause in clauses, f"{name}: divergences named {sorted(set(clauses))}, not {clause}"


@pytest.mark.clause("LED-WIRE.6", "LED-WIRE.3")
def test_a_store_answering_garbage_is_judged_not_crashed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong shapes, wrong codes and server errors are divergences with a reason; a store too
    slow to answer is indeterminate; the driver never raises."""
    orig = LedgerService.handle
    answers: dict[str, tuple[int, dict[str, object]]] = {
        "memory/save_memory_record": (200, {"record": "saved"}),
        "memory/delete_memory_record": (500, {"error": "boom"}),
        "memory/supersede_memory_record": (400, {"error": {"code": 1000, "message": "no"}}),
        "memory/reject_memory_record": (409, {"error": "lifecycle"}),
    }

    def garbage(self: LedgerService, method: str, raw: bytes) -> tuple[int, dict[str, object]]:
        if method == "memory/list_memory_records_as_of" and b"garbage" in raw:
            return 200, {"scopeKey": "garbage", "records": "all"}
        if method in answers and b"garbage" in raw:
            return answers[method]
        return orig(self, method, raw)

    monkeypatch.setattr(LedgerService, "handle", garbage)
    with bundled_store() as url:
        driver = make_driver(url)
        try:
            driver.begin("garbage")
            ok = driver.execute(0, Step(op="save", args={"body": "fine"}, bind={"r1": "id"}))
            assert ok.verdict == "pass", ok.reason
            cases = [
                Step(op="save", args={"body": "garbage"}),
                Step(op="delete", args={"recordId": "$r1", "garbage": 1}),
                Step(op="supersede", args={"recordId": "$r1", "body": "garbage"}),
                Step(op="reject", args={"recordId": "garbage"}),
                Step(op="list_as_of", args={"scopeKey": "garbage", "at": "2026-03-02T09:00:00Z"}),
            ]
            outcomes = [driver.execute(i + 1, s) for i, s in enumerate(cases)]
        finally:
            driver.close()
    for o in outcomes:
        assert o.verdict == "diverge", (o.op, o.verdict, o.reason)
        assert o.reason and o.clauses
    save, delete, supersede, reject, as_of = outcomes
    assert "LED-WIRE.4" in save.clauses or "LED-WIRE.6" in save.clauses
    assert "HTTP 500" in delete.reason or "500" in delete.reason
    assert "model accepts" in supersede.reason and "HTTP 400" in supersede.reason
    assert "LED-WIRE.3" in reject.clauses
    assert "LED-WIRE.6" in as_of.clauses


@pytest.mark.clause("LED-WIRE.1")
def test_a_target_that_does_not_answer_is_indeterminate(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    orig = LedgerService.handle

    def stuck(self: LedgerService, method: str, raw: bytes) -> tuple[int, dict[str, object]]:
        if b"stuck" in raw:
            release.wait(5)  # the server thread is held until the client gave up
        return orig(self, method, raw)

    monkeypatch.setattr(LedgerService, "handle", stuck)
    with bundled_store() as url:
        ctx = RunContext("memspec-ledgertest", TargetConfig(url, Secret(TOKEN), timeout_s=0.3))
        driver = LedgerDriver(ctx)
        try:
            driver.begin("stuck")
            outcome = driver.execute(0, Step(op="save", args={"body": "stuck"}))
        finally:
            release.set()
            driver.close()
    assert outcome.verdict == "indeterminate"
    assert "timeout" in outcome.reason
