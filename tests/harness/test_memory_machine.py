"""The memory state machine against the bundled store: it passes, it is reproducible from its
seed, it shrinks a failure to a short replay naming the broken clause, and it alone reaches
mutants of the catalogue that need its targeted rules (bounds, twins, long queries, invalid
batch tails)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.embedded.catalogue import Quirks
from conformance.embedded.server import start_server
from conformance.machines import run_machine
from conformance.machines.memory import MACHINE_CLAUSES
from conformance.machines.profiles import Profile
from conformance.runner import run_scenario
from conformance.targets.memory import CAP, FORGET, LIST
from tests.common.memory_harness import (
    TOKEN,
    bundled_store,
    dedup_disabled,
    make_driver,
)

SMALL = Profile("test", max_examples=12, step_count=15, budget_s=60.0, fixed_seed=7)


@pytest.mark.clause(*MACHINE_CLAUSES)
def test_memory_machine_passes_against_the_bundled_store() -> None:
    with bundled_store() as url:
        driver = make_driver(url)
        ops: dict[str, int] = {}
        texts: list[str] = []
        keywords: list[str] = []
        queries: list[str] = []

        def seen(outcome: Any) -> None:
            ops[outcome.op] = ops.get(outcome.op, 0) + 1
            body = outcome.exchange.request_body if outcome.exchange is not None else None
            if not isinstance(body, dict):
                return
            for rec in body.get("records", []) if isinstance(body.get("records"), list) else []:
                if isinstance(rec, dict):
                    texts.append(str(rec.get("text", "")))
                    keywords.extend(map(str, rec.get("keywords", [])))
            if isinstance(body.get("query"), str):
                queries.append(str(body.get("query", "")))

        try:
            result = run_machine("memory", driver, SMALL, on_step=seen)
        finally:
            driver.close()
    assert result.verdict == "pass", result.reason
    assert result.examples >= SMALL.max_examples
    assert result.steps >= 50
    # the alphabet really is mixed: every kind of request ran — transport probes ("raw") are
    # not the machine's any more (conformance.machines.probes runs them once each)
    assert {"write", "retrieve", "list", "forget"} <= set(ops), ops
    assert "raw" not in ops, ops
    # and its texts, keywords and queries leave ASCII (the tokenizer's separators)
    for name, sent in (("text", texts), ("keyword", keywords), ("query", queries)):
        assert any(not s.isascii() for s in sent), f"no non-ASCII {name} was sent: {sent}"


@pytest.mark.clause("MEM-WRITE.1", "MEM-SEAM.2")
def test_the_same_seed_replays_the_same_run() -> None:
    runs: list[list[Any]] = []
    for _ in range(2):
        sent: list[Any] = []
        runs.append(sent)
        with bundled_store() as url:
            driver = make_driver(url, run_id="memspec-sameseed")
            try:
                run_machine(
                    "memory",
                    driver,
                    Profile("t", 4, 10, 60.0, fixed_seed=99),
                    on_step=sent.append,
                )
            finally:
                driver.close()
    runs = [[(o.op, o.exchange and o.exchange.request_body) for o in run] for run in runs]
    assert runs[0] == runs[1]
    assert len(runs[0]) > 10


@pytest.mark.clause("MEM-WRITE.1")
def test_a_store_that_never_dedups_is_shrunk_to_a_short_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with dedup_disabled(monkeypatch), bundled_store() as url:
        driver = make_driver(url)
        try:
            # the first divergence is the point here (every distinct one: test_exploration.py)
            result = run_machine(
                "memory", driver, Profile("t", 60, 10, 60.0, fixed_seed=8), max_findings=1
            )
            assert result.verdict == "fail"
            assert result.replay is not None
            assert "MEM-WRITE.1" in result.clauses
            assert len(result.replay.steps) <= 3, [s.op for s in result.replay.steps]
            replay = run_scenario(driver, result.replay)  # the shrunk run reproduces
            assert replay.verdict == "fail"
            assert "MEM-WRITE.1" in replay.failed_clauses()
        finally:
            driver.close()


@pytest.mark.clause("MEM-SCORE.1", "MEM-SCORE.5")
def test_a_store_that_reverses_rankings_is_caught_by_the_machine() -> None:
    with bundled_store(quirks=("mem-retrieve-reversed",)) as url:
        driver = make_driver(url)
        try:
            result = run_machine(
                "memory",
                driver,
                Profile("t", 60, 10, 60.0, fixed_seed=2, shrink_budget_s=30.0),
                max_findings=1,
            )
        finally:
            driver.close()
    assert result.verdict == "fail", result.reason
    assert any(c.startswith("MEM-SCORE.") for c in result.clauses), result.clauses
    assert result.replay is not None
    assert len(result.replay.steps) <= 3, [s.op for s in result.replay.steps]


# --------------------------------------------------------------------------- mutants it reaches


def _hunt(mutant: str, seed: int, examples: int = 30) -> Any:
    """The machine alone (first divergence only) against the bundled store with ``mutant``."""
    with start_server(token=TOKEN, quirks=Quirks(frozenset({mutant}))) as handle:
        driver = make_driver(handle.url)
        try:
            return run_machine(
                "memory",
                driver,
                # shrinking to its end on a loaded machine too (a quiet one ends in a few seconds)
                Profile("t", examples, 15, 60.0, fixed_seed=seed, shrink_budget_s=120.0),
                max_findings=1,
            )
        finally:
            driver.close()


@pytest.mark.slow
@pytest.mark.clause("MEM-WIRE.12", "MEM-CAP.4")
def test_the_machine_finds_a_batch_half_applied() -> None:
    """A batch whose last candidate is invalid is refused whole: the list after the 400 shows
    what the store wrote anyway (rule ``write_with_an_invalid_last``)."""
    result = _hunt("mem-batch-half-applied", seed=2)
    assert result.verdict == "fail", result.reason
    assert "MEM-WIRE.12" in result.clauses, result.clauses
    assert result.replay is not None
    assert [s.op for s in result.replay.steps] == ["write", "list"]
    assert len(result.replay.steps[0].args["records"]) >= 2


@pytest.mark.slow
@pytest.mark.clause("MEM-STORE.5", "MEM-STORE.2")
def test_the_machine_finds_a_prefilter_keeping_the_shortest_tokens() -> None:
    """Past 24 distinct query tokens the prefilter keeps the longest: a query of 24 two-letter
    tokens and one word must still find the word (rule ``retrieve_past_24_tokens``)."""
    result = _hunt("mem-prefilter-keeps-shortest-tokens", seed=1)
    assert result.verdict == "fail", result.reason
    assert "MEM-STORE.5" in result.clauses, result.clauses
    assert result.replay is not None and len(result.replay.steps) <= 3
    assert len(set(result.replay.steps[-1].args["query"].split())) == 25


@pytest.mark.slow
@pytest.mark.clause("MEM-WRITE.2", "MEM-WRITE.5", "MEM-WRITE.1")
def test_the_machine_makes_twins_and_finds_the_newest_one_bumped() -> None:
    """Two active records with one text exist only through the collision guard; a restatement
    then bumps the earliest of them (rule ``correct_into_a_twin``)."""
    result = _hunt("mem-dedup-latest-wins", seed=3)
    assert result.verdict == "fail", result.reason
    assert "MEM-WRITE.1" in result.clauses, result.clauses
    assert result.replay is not None and len(result.replay.steps) <= 6
    assert any(r.get("supersedes") for s in result.replay.steps for r in s.args.get("records", []))


@pytest.mark.slow
@pytest.mark.clause("MEM-WIRE.11")
def test_the_machine_finds_a_query_length_counted_in_code_points() -> None:
    """Bounds at max + 1: a query of 4001 UTF-16 units that is only 4000 code points (its last
    character astral) is refused (rule ``invalid_request``; cap 10001 is its sibling)."""
    result = _hunt("mem-query-length-in-code-points", seed=3)  # a seed whose run draws it
    assert result.verdict == "fail", result.reason
    assert result.clauses == ("MEM-WIRE.11",)
    assert result.replay is not None and len(result.replay.steps) == 1


@pytest.mark.slow
@pytest.mark.clause("MEM-STORE.9", "MEM-RECORD.3")
def test_an_id_handed_out_again_after_forget_is_blamed_on_id_reuse() -> None:
    """A store that mints the forgotten newest record's id again: the next list shows that id
    with other content, which the oracle names as id reuse, not as a dead record returned."""
    result = _hunt("mem-ids-reused-after-forget", seed=2)
    assert result.verdict == "fail", result.reason
    assert result.clauses[0] == "MEM-STORE.9", result.clauses
    assert result.replay is not None and len(result.replay.steps) <= 6
    assert [s.op for s in result.replay.steps][-3:] == ["forget", "write", "list"]


@pytest.mark.clause("MEM-WIRE.14", "MEM-WIRE.15", "MEM-WIRE.13")
def test_rules_needing_a_missing_capability_are_never_drawn() -> None:
    """A target without list, forget or cap: no rule sends what it cannot take (a drawn step
    that skips would end the run), and the machine still explores and passes."""
    sent: list[Any] = []
    with bundled_store() as url:
        driver = make_driver(url, denied=(LIST, FORGET, CAP))
        try:
            result = run_machine("memory", driver, SMALL, on_step=sent.append)
        finally:
            driver.close()
    assert result.verdict == "pass", result.reason
    assert result.details.get("skipped_steps") == {}, result.details
    assert {o.op for o in sent} <= {"write", "retrieve"}, {o.op for o in sent}
    bodies = [o.exchange.request_body for o in sent if o.exchange is not None]
    assert not any(isinstance(b, dict) and "cap" in b for b in bodies)
    assert len(sent) >= 50
