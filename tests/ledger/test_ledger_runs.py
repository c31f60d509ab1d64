"""Consolidation runs as a pure state machine: debounce, settle once, off, budget skip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger import runs
from reference.ledger.consolidation import BatchReport, update_settings
from reference.ledger.lifecycle import propose
from reference.ledger.outcome import Refused
from reference.ledger.records import ConsolidationSettings, LedgerState, Run, empty_state
from tests.common.ledger_strategies import T0, ok, saved

LOCAL = "account:local"


def on(state: LedgerState, now: int = T0, **kw: int) -> LedgerState:
    state, s = update_settings(state, LOCAL, "propose", now, **kw)  # type: ignore[arg-type]
    assert isinstance(s, ConsolidationSettings)
    return state


def scheduled(state: LedgerState, now: int) -> tuple[LedgerState, Run]:
    state, run = runs.schedule_run(state, LOCAL, now)
    assert run is not None
    return state, run


@pytest.mark.clause("LED-RUN.2", "LED-RUN.4")
def test_nothing_is_scheduled_while_off() -> None:
    state, run = runs.schedule_run(empty_state(), LOCAL, T0)
    assert run is None and state == empty_state()


@pytest.mark.clause("LED-RUN.2")
def test_debounce_replaces_the_pending_run() -> None:
    state = on(empty_state(), debounce_seconds=60)
    state, r1 = scheduled(state, T0)
    assert r1.phase == "pending" and r1.due_at == T0 + 60_000
    state, r2 = scheduled(state, T0 + 5_000)
    assert r2.due_at == T0 + 65_000
    old = runs.find_run(state, r1.id)
    assert old is not None and old.outcome == "replaced" and old.settle_count == 1
    assert [r.id for r in state.runs if r.phase == "pending"] == [r2.id]
    state, started = runs.claim_due(state, T0 + 64_999)
    assert started == ()
    state, started = runs.claim_due(state, T0 + 65_000)
    assert [r.id for r in started] == [r2.id]


@pytest.mark.clause("LED-RUN.1")
def test_the_job_sees_only_the_scopes_active_records() -> None:
    state, (a, b, c) = saved(["a", "b", "c"])
    state, _ = ok(state, "memory/supersede_memory_record", {"recordId": a, "body": "a2"}, T0 + 5)
    state, _ = ok(state, "_test/propose", {"body": "proposal"}, T0 + 6)
    state, other = propose(state, "account:other", "elsewhere", T0 + 7)
    assert not isinstance(other, Refused)
    state = on(state, T0 + 8, debounce_seconds=30)
    state, _ = scheduled(state, T0 + 9)
    state, (run,) = runs.claim_due(state, T0 + 40_000)
    active = [r.id for r in state.records if r.scope_key == LOCAL and r.status == "active"]
    assert run.input_ids == tuple(active) and len(active) == 3 and a not in active
    assert run.model_called and run.phase == "running" and run.claimed_at == T0 + 40_000
    assert [r.id for r in runs.consolidation_input(state, LOCAL)] == active


@pytest.mark.clause("LED-RUN.5")
@pytest.mark.parametrize("lowered_to", [2, 1])
def test_no_budget_no_model_call(lowered_to: int) -> None:
    state, _ = saved(["a", "b"])
    state = on(state, T0 + 5, debounce_seconds=30, max_records=lowered_to)
    state, run = scheduled(state, T0 + 6)
    state, started = runs.claim_due(state, T0 + 31_000)
    assert started == ()
    settled = runs.find_run(state, run.id)
    assert settled is not None and settled.outcome == "skipped"
    assert settled.detail == "budget_exhausted" and not settled.model_called
    assert settled.settle_count == 1 and settled.settled_at == T0 + 31_000


@pytest.mark.clause("LED-RUN.4")
def test_turning_off_settles_queued_runs_but_not_running_ones() -> None:
    state, (a,) = saved(["a"])
    state = on(state, T0 + 1, debounce_seconds=30)
    state, r1 = scheduled(state, T0 + 2)
    state, (running,) = runs.claim_due(state, T0 + 40_000)
    state, r2 = scheduled(state, T0 + 40_001)
    state, s = update_settings(state, LOCAL, "off", T0 + 40_002)
    assert isinstance(s, ConsolidationSettings)
    queued = runs.find_run(state, r2.id)
    assert queued is not None and queued.outcome == "cancelled" and not queued.model_called
    assert runs.find_run(state, r1.id).phase == "running"  # type: ignore[union-attr]
    state, report = runs.complete_run(
        state, running.id, [{"operation": "correct", "targets": [a], "body": "a2"}], T0 + 50_000
    )
    assert isinstance(report, BatchReport) and report.counts.applied == 1


@pytest.mark.clause("LED-RUN.3", "LED-RUN.6", "LED-GATE.8")
def test_settle_exactly_once() -> None:
    state, (a,) = saved(["a"])
    state = on(state, T0 + 1, debounce_seconds=30)
    state, run = scheduled(state, T0 + 2)
    # Not running yet: cannot settle.
    s1, res = runs.complete_run(state, run.id, [], T0 + 3)
    assert isinstance(res, Refused) and s1 == state
    state, _ = runs.claim_due(state, T0 + 40_000)
    done_at = T0 + 41_000
    state, report = runs.complete_run(
        state,
        run.id,
        [
            {"operation": "correct", "targets": [a], "body": "a2"},
            {"operation": "keep", "targets": [a]},
        ],
        done_at,
        tokens=321,
        spend_micros=45,
    )
    assert isinstance(report, BatchReport)
    settled = runs.find_run(state, run.id)
    assert settled is not None and settled.outcome == "completed" and settled.settle_count == 1
    assert (settled.tokens, settled.spend_micros) == (321, 45)
    assert settled.counts is not None and (settled.counts.applied, settled.counts.refused) == (1, 1)
    assert state.records[-1].valid_from == done_at
    for again in (
        runs.complete_run(state, run.id, [], done_at + 1),
        runs.fail_run(state, run.id, "late", done_at + 1),
    ):
        s2, late = again
        assert isinstance(late, Refused) and s2 == state
    s3, res = runs.complete_run(state, "run-404", [], done_at)
    assert isinstance(res, Refused) and s3 == state


@pytest.mark.clause("LED-RUN.3", "LED-RUN.6")
def test_a_failed_run_records_its_spend() -> None:
    state = on(empty_state(), debounce_seconds=30)
    state, run = scheduled(state, T0)
    state, _ = runs.claim_due(state, T0 + 30_000)
    state, res = runs.fail_run(
        state, run.id, "wall-clock cap", T0 + 31_000, tokens=10, spend_micros=3
    )
    assert not isinstance(res, Refused)
    assert (res.outcome, res.detail, res.tokens, res.spend_micros) == (
        "failed",
        "wall-clock cap",
        10,
        3,
    )


@pytest.mark.clause("LED-RUN.2", "LED-RUN.3")
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["turn", "claim", "finish", "off", "on"]), st.integers(1, 900_000)
        ),
        max_size=30,
    )
)
def test_run_lifecycle_properties(plan: list[tuple[str, int]]) -> None:
    state, _ = saved(["a", "b"])
    state = on(state, T0 + 10, debounce_seconds=60)
    now = T0 + 10
    for action, dt in plan:
        now += dt
        if action == "turn":
            state, _ = runs.schedule_run(state, LOCAL, now)
        elif action == "claim":
            state, _ = runs.claim_due(state, now)
        elif action == "finish":
            for r in state.runs:
                if r.phase == "running":
                    state, _ = runs.complete_run(state, r.id, [], now)
        else:
            state, _ = update_settings(state, LOCAL, "off" if action == "off" else "propose", now)
        assert len([r for r in state.runs if r.phase == "pending"]) <= 1
        for r in state.runs:
            assert r.settle_count == (1 if r.phase == "settled" else 0)
            assert (r.outcome is None) == (r.phase != "settled")
            if r.outcome in ("replaced", "cancelled", "skipped"):
                assert not r.model_called


@pytest.mark.clause("LED-RUN.7")
@given(
    harness=st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12),
    model=st.text("abcdefghijklmnopqrstuvwxyz0123456789.-", min_size=1, max_size=12),
    later=st.text("xyz", min_size=1, max_size=5),
)
def test_a_run_is_a_tool_less_turn_on_the_configured_harness_and_model(
    harness: str, model: str, later: str
) -> None:
    state, _ = saved(["a"])
    state, s = update_settings(
        state, LOCAL, "propose", T0 + 1, harness=harness, model=model, debounce_seconds=30
    )
    assert isinstance(s, ConsolidationSettings)
    state, _ = scheduled(state, T0 + 2)
    state, (run,) = runs.claim_due(state, T0 + 40_000)
    assert (run.harness, run.model, run.tools) == (harness, model, ())
    # Settings changed after the claim do not move a run that is already running.
    state, _ = update_settings(state, LOCAL, "propose", T0 + 40_001, model=later + model)
    claimed = runs.find_run(state, run.id)
    assert claimed is not None and (claimed.harness, claimed.model) == (harness, model)
