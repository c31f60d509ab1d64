"""Concurrent clients against the bundled store: its histories are linearizable, and each race
mutant is caught with a counterexample of at most 6 operations naming one of its clauses."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from conformance.commands.target import start_bundled_store
from conformance.concurrent.run import run_concurrent
from conformance.embedded.catalogue import ENTRIES, mutants
from conformance.vocabulary import Secret, TargetConfig

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
        result = run_concurrent(
            config, run_id="memspec-lintest0", clients=8, seed=0, profile="ci", rounds=2
        )
    assert result.verdict == "linearizable", result.to_json()["partitions"]
    assert result.ops == 8 * 12 * result.rounds_run == 8 * 12 * 2
    assert all(r.verdict == "ok" for r in result.partitions)


@pytest.mark.clause("LED-REC.7", "LED-BUDGET.2", "LED-EDIT.1", "LED-FORGET.2")
def test_the_bundled_ledger_is_linearizable_with_8_clients() -> None:
    with bundled() as config:
        result = run_concurrent(
            config,
            run_id="memspec-lintest1",
            protocol="ledger",
            clients=8,
            seed=0,
            profile="ci",
            rounds=2,
        )
    assert result.verdict == "linearizable", result.to_json()["partitions"]
    assert result.scopes_written == ["account:local"]
    # The workload reaches the budget: some saves were refused, so the check saw the race window.
    assert result.history is not None
    assert any(e.status == 409 for e in result.history.events)


RACES = [(m.protocol, m.name) for m in mutants(race=True)]


@pytest.mark.parametrize(("protocol", "name"), RACES, ids=[n for _, n in RACES])
@pytest.mark.clause("MEM-STORE.13", "LED-REC.7")
def test_each_race_mutant_is_caught_with_a_small_counterexample(protocol: str, name: str) -> None:
    """A race needs luck (to strike, and to strike again when the shrinker re-runs part of its
    schedule): up to ATTEMPTS runs, until one catches the mutant with a small counterexample."""
    entry = ENTRIES[name]
    sizes: list[str | None] = []
    with bundled(frozenset({name})) as config:
        for attempt in range(ATTEMPTS):
            result = run_concurrent(
                config,
                run_id=f"memspec-race{attempt}",
                protocol=protocol,
                clients=8,
                seed=attempt,
                profile="ci",
            )
            if result.verdict != "not linearizable":
                sizes.append(None)
                continue
            ce = result.counterexample
            assert ce is not None
            assert set(ce.clauses) & set(entry.clauses), (ce.clauses, entry.clauses)
            sizes.append(f"{len(ce.events)} (from {ce.full_ops}, {ce.reruns} re-runs)")
            if len(ce.events) <= MAX_COUNTEREXAMPLE:
                return
    pytest.fail(f"{name}: counterexamples over {ATTEMPTS} runs: {sizes}")


@pytest.mark.clause()
def test_both_protocols_have_race_mutants() -> None:
    assert {p for p, _ in RACES} == {"memory", "ledger"}
    assert all(ENTRIES[n].race and ENTRIES[n].kind == "mutant" for _, n in RACES)
