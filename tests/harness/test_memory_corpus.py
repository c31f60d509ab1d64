"""The memory corpus: every wire-observable MEM clause has a scenario, each scenario is small and
named after what it proves, and every one passes against the bundled store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.clauses import load_clauses
from conformance.drivers.memory.driver import MemoryDriver
from conformance.drivers.memory.steps import infer_requires
from conformance.runner import CORPUS_DIR, run_scenario
from conformance.scenario import load_scenario
from tests.common.memory_harness import bundled_store, make_driver

ROOT = Path(__file__).resolve().parents[2]
MEMORY_CORPUS = sorted((CORPUS_DIR / "memory").glob("*.json"))

pytestmark = pytest.mark.clause(
    "MEM-SEAM.2", "MEM-RECORD.1", "MEM-RECORD.2", "MEM-RECORD.3", "MEM-RECORD.4", "MEM-RECORD.5",
    "MEM-SCOPE.5", "MEM-SCORE.1", "MEM-SCORE.2", "MEM-SCORE.3", "MEM-SCORE.4", "MEM-SCORE.5",
    "MEM-STORE.2", "MEM-STORE.3", "MEM-STORE.4", "MEM-STORE.5", "MEM-STORE.6", "MEM-STORE.7",
    "MEM-STORE.8", "MEM-STORE.9", "MEM-STORE.11", "MEM-CAP.1", "MEM-CAP.2", "MEM-CAP.3",
    "MEM-CAP.4", "MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.3", "MEM-WRITE.4", "MEM-WRITE.5",
    "MEM-WRITE.6", "MEM-WRITE.7", "MEM-WRITE.8", "MEM-WIRE.1", "MEM-WIRE.2", "MEM-WIRE.3",
    "MEM-WIRE.4", "MEM-WIRE.5", "MEM-WIRE.6", "MEM-WIRE.7", "MEM-WIRE.8", "MEM-WIRE.9",
    "MEM-WIRE.10", "MEM-WIRE.11", "MEM-WIRE.12", "MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.15",
    "MEM-WIRE.16",
)  # fmt: skip


@pytest.fixture(scope="module")
def driver() -> Iterator[MemoryDriver]:
    with bundled_store() as url:
        d = make_driver(url)
        try:
            yield d
        finally:
            d.close()


def test_corpus_is_not_empty() -> None:
    assert len(MEMORY_CORPUS) >= 40


@pytest.mark.parametrize("path", MEMORY_CORPUS, ids=[p.stem for p in MEMORY_CORPUS])
def test_corpus_scenario_passes_against_the_bundled_store(driver: MemoryDriver, path: Path) -> None:
    scenario = load_scenario(path)
    assert infer_requires(scenario) <= driver.capabilities(), (
        "the bundled store has every capability"
    )
    result = run_scenario(driver, scenario)
    assert result.verdict == "pass", result.reason
    assert len(result.outcomes) == len(scenario.steps)


def test_every_wire_observable_memory_clause_has_a_corpus_scenario() -> None:
    clauses = load_clauses(ROOT / "specs")
    wire = {
        c.id
        for c in clauses.values()
        if c.id.startswith("MEM-") and not c.retired and c.observable.lower().startswith("wire")
    }
    assert wire, "specs define wire-observable memory clauses"
    covered: set[str] = set()
    for path in MEMORY_CORPUS:
        covered |= set(load_scenario(path).all_clauses())
    assert sorted(wire - covered) == []
    unknown = {c for c in covered if c not in clauses}
    assert sorted(unknown) == [], "a scenario cites a clause no spec defines"


def test_corpus_scenarios_are_small_and_named_after_what_they_prove() -> None:
    for path in MEMORY_CORPUS:
        scenario = load_scenario(path)
        assert scenario.name == path.stem
        assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+){2,}", scenario.name), scenario.name
        assert scenario.description.strip()
        assert scenario.protocol == "memory"
        assert len(scenario.steps) <= 25, f"{scenario.name} is not small"
