"""The ledger driver's isolation: the check that a ledger is fresh before a run writes to it,
the model started from the settings a target has, and — without ``ledger.test_control`` —
forgetting what a scenario left (see "Isolation" in :mod:`conformance.drivers.ledger.driver`).
"""

from __future__ import annotations

from typing import Any

from conformance.drivers.ledger.steps import START_MS
from conformance.errors import TargetError
from conformance.jsonutil import short_json
from conformance.targets.ledger import NO_PARAMS, LedgerClient
from reference.ledger.outcome import Ok
from reference.ledger.records import SCOPE_LOCAL, LedgerState, empty_state, settings_for
from reference.ledger.wire import handle, settings_to_wire


def check_clean(
    target: LedgerClient, *, control: bool, allow_dirty: bool
) -> tuple[frozenset[str], dict[str, Any] | None]:
    """Refuse a ledger that holds records unless ``--allow-dirty``; return the ids found
    (ignored by the oracle when the ledger cannot be reset) and the settings baseline."""
    held: list[str] = []
    for status in ("active", "proposed"):
        ex = target.call("memory/list_memory_records", {"scopeKey": SCOPE_LOCAL, "status": status})
        records = ex.body.get("records") if isinstance(ex.body, dict) else None
        if ex.status != 200 or not isinstance(records, list):
            raise TargetError(
                f"{target.url}: cannot list {status} ledger records"
                f" (HTTP {ex.status} {short_json(ex.body or ex.transport_error)})"
            )
        held += [str(r.get("id")) for r in records if isinstance(r, dict)]
    if held and not allow_dirty:
        reset = " (its test controls would reset it)" if control else ""
        raise TargetError(
            f"{target.url}: the ledger already holds {len(held)}+ active or proposed"
            " record(s); a ledger run needs a fresh instance"
            + reset
            + ". Pass --allow-dirty to run anyway."
        )
    baseline: dict[str, Any] | None = None
    foreign: frozenset[str] = frozenset()
    if not control:
        ex = target.call("memory/get_consolidation_settings", NO_PARAMS)
        if ex.status == 200 and isinstance(ex.body, dict):
            baseline = ex.body
        if held:
            far = target.call(
                "memory/list_memory_records_as_of",
                {"scopeKey": SCOPE_LOCAL, "at": "9999-12-31T23:59:59.999Z"},
            )
            recs = far.body.get("records") if isinstance(far.body, dict) else None
            if isinstance(recs, list):
                held += [str(r.get("id")) for r in recs if isinstance(r, dict)]
            foreign = frozenset(held)
    return foreign, baseline


def model_with_settings(wire: dict[str, Any]) -> LedgerState:
    params = {
        k: wire[k]
        for k in ("mode", "harness", "model", "maxRecords", "allowRemoval", "debounceSeconds")
        if k in wire
    }
    state, outcome = handle(empty_state(), "memory/update_consolidation_settings", params, START_MS)
    return state if isinstance(outcome, Ok) else empty_state()


def forget_previous(
    target: LedgerClient, foreign: frozenset[str], baseline: dict[str, Any] | None
) -> str | None:
    """Without reset: tombstone every active record and reject every proposal the target
    holds that did not predate the run, and put the settings back as they were found.
    Judged by what the target lists (not by the model, which may have diverged); a message
    when the ledger refuses."""
    for status, method in (
        ("active", "memory/delete_memory_record"),
        ("proposed", "memory/reject_memory_record"),
    ):
        for _round in range(200):  # a listing shows 50 at a time
            ex = target.call(
                "memory/list_memory_records", {"scopeKey": SCOPE_LOCAL, "status": status}
            )
            records = ex.body.get("records") if isinstance(ex.body, dict) else None
            if ex.status != 200 or not isinstance(records, list):
                return f"listing {status} records answered {ex.status}"
            ours = [
                r["id"]
                for r in records
                if isinstance(r, dict) and isinstance(r.get("id"), str) and r["id"] not in foreign
            ]
            if not ours:
                break
            for rid in ours:
                done = target.call(method, {"recordId": rid})
                if done.status != 200:
                    return f"{method} {rid} answered {done.status}"
    wanted = baseline or settings_to_wire(SCOPE_LOCAL, settings_for(empty_state(), SCOPE_LOCAL))
    now = target.call("memory/get_consolidation_settings", NO_PARAMS)
    # Only the settings the update takes: an answer may carry more (heldRecords, LED-CONS.2).
    settable = ("mode", "harness", "model", "maxRecords", "allowRemoval", "debounceSeconds")
    wanted = {k: v for k, v in wanted.items() if k in settable or k == "scopeKey"}
    shown = now.body if isinstance(now.body, dict) else {}
    if now.status != 200 or {k: v for k, v in shown.items() if k in wanted} != wanted:
        params = {k: v for k, v in wanted.items() if k != "scopeKey"}
        ex = target.call("memory/update_consolidation_settings", params)
        if ex.status != 200:
            return f"restoring the consolidation settings answered {ex.status}"
    return None
