"""Concurrent clients against the bundled store: its histories are linearizable, and each race
mutant is caught with a counterexample of at most 6 operations naming one of its clauses."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from conformance.commands.run import start_bundled_store
from conformance.concurrent.run import run_concurrent
from conformance.driver import Secret, TargetConfig
from conformance.embedded.catalogue import ENTRIES, mutants

#: A race needs luck: a mutant gets this many whole runs (each up to the profile's rounds,
#: each round a fresh seed) before the test fails.  Every run is deterministic in its plan.
ATTEMPTS = 4
MAX_COUNTEREXAMPLE = 6


@contextmanager
def bundled(quirks: frozenset[str] = frozenset()) -> Iterator[TargetConfig]:
    token = secrets.token_urlsafe(16)
    handle = start_bundled_store(token, quirks)
    try:
        yield TargetConfig(handle.url, Secret(token), 10.0)
    finally:
        handle.stop()


@pytest.mark.clause("MEM-STORE.13", "MEM-CAP.4", "MEM-WRITE.1", "MEM-STORE.3", "MEM-STORE.9")
def test_the_bundled_memory_store_is_linearizable_with_8_clients() -> None:
    with bundled() as config:
        result = run_concurrent(config, run_id="memspec-lintest0", clients=8, seed=0, profile="ci")
    assert result.verdict == "linearizable", result.to_json()["partitions"]
    assert result.ops == 8 * 25 * result.rounds_run
    assert all(r.verdict == "ok" for r in result.partitions)


MEMORY_RACES = [m.name for m in mutants("memory", race=True)]


@pytest.mark.parametrize("name", MEMORY_RACES)
@pytest.mark.clause("MEM-STORE.13")
def test_each_memory_race_mutant_is_caught_with_a_small_counterexample(name: str) -> None:
    entry = ENTRIES[name]
    sizes = []
    with bundled(frozenset({name})) as config:
        for attempt in range(ATTEMPTS):
            result = run_concurrent(
                config, run_id=f"memspec-race{attempt}", clients=8, seed=attempt, profile="ci"
            )
            if result.verdict != "not linearizable":
                sizes.append(None)
                continue
            ce = result.counterexample
            assert ce is not None
            assert set(ce.clauses) & set(entry.clauses), (ce.clauses, entry.clauses)
            sizes.append(len(ce.events))
            if len(ce.events) <= MAX_COUNTEREXAMPLE:
                return
    pytest.fail(f"{name}: counterexample sizes over {ATTEMPTS} runs: {sizes}")


def test_race_mutants_are_declared_as_races() -> None:
    assert MEMORY_RACES, "no memory race mutants in the catalogue"
    assert all(ENTRIES[n].race and ENTRIES[n].kind == "mutant" for n in MEMORY_RACES)
