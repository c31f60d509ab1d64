"""Consolidation runs as a pure state machine (LED-RUN.*).

A run is ``pending`` (queued, waiting out the debounce), ``running`` (claimed, the model was
called with the scope's active records) or ``settled`` with one outcome:

* ``completed`` — the batch went through the gate; counts, tokens and spend recorded;
* ``failed`` — the single turn produced nothing usable or hit the wall-clock cap;
* ``replaced`` — a newer turn replaced it while it was pending (debounce);
* ``cancelled`` — consolidation was turned off while it was pending;
* ``skipped`` — the scope was at or over budget when it was claimed (detail
  ``budget_exhausted``), and the model was never called.

Every run settles exactly once; a second settlement is refused and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reference.ledger.budget import has_room
from reference.ledger.consolidation import BatchReport, apply_batch
from reference.ledger.outcome import Refused, refusal
from reference.ledger.records import LedgerRecord, LedgerState, Run, active_records, settings_for


def _put_run(state: LedgerState, run: Run) -> LedgerState:
    return replace(state, runs=tuple(run if r.id == run.id else r for r in state.runs))


def find_run(state: LedgerState, run_id: str) -> Run | None:
    """The run with this id, or None."""
    for r in state.runs:
        if r.id == run_id:
            return r
    return None


def pending_run(state: LedgerState, scope_key: str) -> Run | None:
    """The scope's queued run; there is never more than one (LED-RUN.2)."""
    for r in state.runs:
        if r.scope_key == scope_key and r.phase == "pending":
            return r
    return None


def _settle(run: Run, outcome: str, now: int, **fields: object) -> Run:
    return replace(
        run,
        phase="settled",
        outcome=outcome,
        settled_at=now,
        settle_count=run.settle_count + 1,
        **fields,  # type: ignore[arg-type]
    )


def consolidation_input(state: LedgerState, scope_key: str) -> list[LedgerRecord]:
    """What the job sees: the scope's active records and nothing else (LED-RUN.1)."""
    return active_records(state, scope_key)


def schedule_run(state: LedgerState, scope_key: str, now: int) -> tuple[LedgerState, Run | None]:
    """A turn ended in the scope: queue a run due after the debounce (LED-RUN.2, LED-RUN.4).

    A pending run of the scope is replaced (settled ``replaced``), never queued behind.  With
    the mode off nothing is scheduled.
    """
    settings = settings_for(state, scope_key)
    if settings.mode == "off":
        return state, None
    old = pending_run(state, scope_key)
    if old is not None:
        state = _put_run(state, _settle(old, "replaced", now))
    run = Run(
        id=f"run-{state.next_run}",
        scope_key=scope_key,
        phase="pending",
        queued_at=now,
        due_at=now + settings.debounce_seconds * 1000,
    )
    return replace(state, runs=state.runs + (run,), next_run=state.next_run + 1), run


def cancel_pending(state: LedgerState, scope_key: str, now: int) -> LedgerState:
    """Settle the scope's queued runs as ``cancelled`` at ``now`` without executing them
    (LED-RUN.4).  Called when the mode is turned off."""
    for r in state.runs:
        if r.scope_key == scope_key and r.phase == "pending":
            state = _put_run(state, _settle(r, "cancelled", now))
    return state


def claim_due(state: LedgerState, now: int) -> tuple[LedgerState, tuple[Run, ...]]:
    """Claim every pending run due at ``now`` (LED-RUN.1, LED-RUN.5, LED-RUN.7).

    A scope at or over budget settles its run ``skipped`` with detail ``budget_exhausted`` and
    no model call; otherwise the run starts with the scope's active records as its input, in a
    hidden session with no tools, on the harness and model the scope's settings name at the
    claim (LED-RUN.7).  Returns the runs now running.
    """
    started: list[Run] = []
    for r in state.runs:
        if r.phase != "pending" or r.due_at > now:
            continue
        if not has_room(state, r.scope_key):
            state = _put_run(state, _settle(r, "skipped", now, detail="budget_exhausted"))
            continue
        ids = tuple(rec.id for rec in consolidation_input(state, r.scope_key))
        settings = settings_for(state, r.scope_key)
        running = replace(
            r,
            phase="running",
            claimed_at=now,
            model_called=True,
            input_ids=ids,
            harness=settings.harness,
            model=settings.model,
            tools=(),
        )
        state = _put_run(state, running)
        started.append(running)
    return state, tuple(started)


def complete_run(
    state: LedgerState,
    run_id: str,
    operations: Sequence[object],
    now: int,
    *,
    tokens: int = 0,
    spend_micros: int = 0,
) -> tuple[LedgerState, BatchReport | Refused]:
    """Settle a running run ``completed``: its batch goes through the gate at ``now``, the one
    instant of every stamp it makes (LED-RUN.3, LED-RUN.6, LED-GATE.8)."""
    run = find_run(state, run_id)
    if run is None or run.phase != "running":
        return state, _not_running(run_id, run)
    state, report = apply_batch(state, run.scope_key, operations, now)
    settled = _settle(
        run, "completed", now, counts=report.counts, tokens=tokens, spend_micros=spend_micros
    )
    return _put_run(state, settled), report


def fail_run(
    state: LedgerState,
    run_id: str,
    detail: str,
    now: int,
    *,
    tokens: int = 0,
    spend_micros: int = 0,
) -> tuple[LedgerState, Run | Refused]:
    """Settle a running run ``failed`` (one turn, no repair) with what it spent (LED-RUN.3,
    LED-RUN.6)."""
    run = find_run(state, run_id)
    if run is None or run.phase != "running":
        return state, _not_running(run_id, run)
    settled = _settle(run, "failed", now, detail=detail, tokens=tokens, spend_micros=spend_micros)
    return _put_run(state, settled), settled


def _not_running(run_id: str, run: Run | None) -> Refused:
    what = "unknown" if run is None else run.phase
    return refusal(f"Consolidation run '{run_id}' is {what}; only a running run can settle.")
