"""The ledger corpus: every wire-observable LED clause has a scenario, and every scenario passes
against the bundled store — with its clock pinned (times compared exactly) and without (times
compared by their relationships)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.clauses import load_clauses
from conformance.drivers.ledger.driver import LedgerDriver
from conformance.drivers.ledger.steps import infer_requires
from conformance.runner import CORPUS_DIR, run_scenario
from conformance.scenario import load_scenario
from conformance.targets.ledger import CLOCK
from tests.common.ledger_harness import bundled_store, make_driver

ROOT = Path(__file__).resolve().parents[2]
LEDGER_CORPUS = sorted((CORPUS_DIR / "ledger").glob("*.json"))


@pytest.fixture(scope="module")
def driver() -> Iterator[LedgerDriver]:
    with bundled_store() as url:
        d = make_driver(url)
        try:
            yield d
        finally:
            d.close()


@pytest.fixture(scope="module")
def clockless_driver() -> Iterator[LedgerDriver]:
    with bundled_store() as url:
        d = make_driver(url, without=(CLOCK,))
        try:
            yield d
        finally:
            d.close()


@pytest.mark.clause("LED-WIRE.1", "LED-WIRE.4", "LED-WIRE.6", "LED-WIRE.7")
def test_every_wire_observable_ledger_clause_has_a_corpus_scenario() -> None:
    clauses = load_clauses(ROOT / "specs")
    covered: set[str] = set()
    for path in LEDGER_CORPUS:
        covered |= set(load_scenario(path).all_clauses())
    wire = {
        c.id
        for c in clauses.values()
        if c.id.startswith("LED-") and not c.retired and c.observable.startswith("wire")
    }
    assert wire, "specs/ledger.md defines no wire-observable clause?"
    assert sorted(wire - covered) == []
    assert sorted(covered - set(clauses)) == [], "a scenario cites a clause no spec defines"


@pytest.mark.clause("LED-WIRE.7")
@pytest.mark.parametrize("path", LEDGER_CORPUS, ids=lambda p: p.stem)
def test_scenario_file_is_well_formed(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.protocol == "ledger"
    assert scenario.name == path.stem, "a corpus file is named after its scenario"
    assert scenario.origin == "corpus"
    # What the steps need is declared, so a target without it skips the scenario up front.
    assert infer_requires(scenario) <= set(scenario.requires)


@pytest.mark.clause(
    "LED-REC.1",
    "LED-REC.3",
    "LED-INT.3",
    "LED-ASOF.1",
    "LED-LIST.2",
    "LED-GATE.9",
    "LED-PACKET.5",
    "LED-WIRE.2",
    "LED-WIRE.3",
    "LED-WIRE.4",
    "LED-WIRE.5",
    "LED-WIRE.8",
)
@pytest.mark.parametrize("path", LEDGER_CORPUS, ids=lambda p: p.stem)
def test_corpus_scenario_passes_against_the_bundled_store(driver: LedgerDriver, path: Path) -> None:
    result = run_scenario(driver, load_scenario(path))
    assert result.verdict == "pass", result.reason
    assert len(result.outcomes) == len(result.scenario.steps)


@pytest.mark.clause("LED-INT.3", "LED-GATE.8", "LED-ASOF.1", "LED-WIRE.5")
def test_corpus_passes_without_a_pinned_clock(clockless_driver: LedgerDriver) -> None:
    """Without ``ledger.clock`` the store stamps with its own clock; times are compared through
    the monotone correspondence, and only scenarios that place instants themselves skip."""
    passed = 0
    for path in LEDGER_CORPUS:
        scenario = load_scenario(path)
        result = run_scenario(clockless_driver, scenario)
        if CLOCK in scenario.requires:
            assert result.verdict == "skip" and CLOCK in result.reason, (path.stem, result.reason)
        else:
            assert result.verdict == "pass", (path.stem, result.reason)
            passed += 1
    assert passed >= 40  # most of the corpus does not depend on a controllable clock
