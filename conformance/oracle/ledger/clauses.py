"""Which clauses an answer or a difference speaks for: by method, by refusal, by record field.

The HTTP status each error code travels as (CONTRACTS: "The ledger binding over HTTP") is here
too, since a wrong status is judged by the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reference.ledger.outcome import INVALID_PARAMS, METHOD_NOT_FOUND, REFUSED, Refused
from reference.ledger.wire import RECORD_FIELDS, RECORD_FIELDS_WHEN_SET

# --------------------------------------------------------------------------- wire vocabulary

REQUIRED_FIELDS = RECORD_FIELDS
OPTIONAL_FIELDS = RECORD_FIELDS_WHEN_SET
LIST_LIMIT = 50

#: HTTP status of each error code (CONTRACTS: "The ledger binding over HTTP").
CODE_STATUS: dict[int, int] = {INVALID_PARAMS: 400, REFUSED: 409, METHOD_NOT_FOUND: 404}

#: The clauses a method's answer as a whole speaks for (the "what was checked" of a step).
METHOD_CLAUSES: dict[str, tuple[str, ...]] = {
    "memory/save_memory_record": ("LED-SAVE.1", "LED-WIRE.6"),
    "memory/list_memory_records": ("LED-LIST.1", "LED-LIST.2", "LED-STATUS.4"),
    "memory/delete_memory_record": ("LED-FORGET.1", "LED-INT.4"),
    "memory/supersede_memory_record": ("LED-EDIT.1", "LED-INT.3"),
    "memory/approve_memory_record": ("LED-REVIEW.2",),
    "memory/reject_memory_record": ("LED-REVIEW.3",),
    "memory/list_memory_records_as_of": ("LED-ASOF.1",),
    "memory/get_consolidation_settings": ("LED-CONS.1", "LED-CONS.2"),
    "memory/update_consolidation_settings": ("LED-CONS.2",),
    "_test/reset": ("LED-WIRE.7",),
    "_test/set_clock": ("LED-WIRE.7",),
    "_test/sweep": ("LED-EXP.2",),
    "_test/propose": ("LED-REVIEW.1",),
    "_test/consolidate": ("LED-GATE.9", "LED-GATE.1"),
    "_test/packet": ("LED-PACKET.1", "LED-PACKET.5"),
}


def method_clauses(method: str) -> tuple[str, ...]:
    """The clauses a method's answer speaks for (unknown method: LED-WIRE.1)."""
    return METHOD_CLAUSES.get(method, ("LED-WIRE.1",))


_BAD_VALUE_CLAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory body can hold at most", ("LED-REC.6",)),
    ("memory body cannot be empty", ("LED-SAVE.3",)),
    ("scopeKey cannot be passed", ("LED-SAVE.2",)),
    ("kind", ("LED-REC.2",)),
    ("No memory record", ("LED-FORGET.2", "LED-EDIT.2")),
    ("expiresAt", ("LED-EXP.5",)),
    ("maxRecords", ("LED-CONS.3",)),
    ("debounceSeconds", ("LED-CONS.3",)),
    ("mode must", ("LED-CONS.1",)),
    ("harness", ("LED-CONS.3",)),
    ("model must", ("LED-CONS.3",)),
    ("status must", ("LED-LIST.1",)),
    ("scopeKey must", ("LED-LIST.3",)),
    ("RFC 3339", ("LED-WIRE.5", "LED-ASOF.3")),
    ("conflictGroup", ("LED-GROUP.5",)),
    ("confidenceBps", ("LED-REVIEW.1",)),
    ("rationale", ("LED-REVIEW.1",)),
    ("sessionId", ("LED-SAVE.1",)),
)


def refusal_clauses(method: str, refused: Refused) -> tuple[str, ...]:
    """Which clauses a refusal the model made is about (from its codes and its message)."""
    msg = refused.message
    if refused.code == METHOD_NOT_FOUND:
        return ("LED-WIRE.1",)
    if REFUSED not in refused.allowed_codes:
        if "scopeKey cannot be passed" in msg:
            return ("LED-SAVE.2", "LED-WIRE.2")
        return ("LED-WIRE.2",)
    if msg.startswith("Memory pins cannot store credentials"):
        return ("LED-CRED.2", "LED-CRED.1", "LED-WIRE.3")
    if msg.startswith("Memory scope '"):
        return ("LED-BUDGET.2", "LED-BUDGET.5", "LED-WIRE.3")
    if msg.startswith("Memory record '"):
        return ("LED-STATUS.3", "LED-WIRE.3")
    out: list[str] = []
    for needle, clauses in _BAD_VALUE_CLAUSES:
        if needle in msg:
            out.extend(clauses)
    return uniq(out + ["LED-WIRE.3"])


def message_clauses(refused: Refused) -> tuple[str, ...]:
    """The clause of a refusal's exact words, when the spec fixes them (LED-BUDGET.6,
    LED-CRED.5: reference clauses), else ()."""
    if refused.message.startswith("Memory pins cannot store credentials"):
        return ("LED-CRED.5",)
    if refused.message.startswith("Memory scope '"):
        return ("LED-BUDGET.6",)
    return ()


def field_clauses(name: str, model_rec: dict[str, Any]) -> tuple[str, ...]:
    """The clauses a difference in one record field touches, given the model's record."""
    status = model_rec.get("status")
    prov = model_rec.get("provenance")
    if name == "id":
        return ("LED-REC.3",)
    if name == "scopeKey":
        return ("LED-REC.5",)
    if name == "kind":
        # the model's own default where the call named none (LED-REC.8, a reference clause)
        return ("LED-REC.8",) if model_rec.get("kind") == "preference" else ("LED-REC.2",)
    if name == "body":
        return ("LED-FORGET.3",) if status == "deleted" else ("LED-REC.6",)
    if name == "provenance":
        return {
            "user_explicit": ("LED-PROV.1",),
            "model_proposal": ("LED-PROV.2",),
            "model_consolidation": ("LED-PROV.3",),
        }.get(str(prov), ("LED-PROV.1",))
    if name == "status":
        return ("LED-STATUS.2", "LED-STATUS.1")
    if name == "validTo":
        return {
            "superseded": ("LED-INT.3",),
            "deleted": ("LED-INT.4",),
            "expired": ("LED-EXP.2",),
            "proposed": ("LED-INT.2",),
            "rejected": ("LED-INT.2",),
        }.get(str(status), ("LED-INT.1",))
    if name == "validFrom":
        return ("LED-INT.3", "LED-INT.1") if model_rec.get("supersedes") else ("LED-INT.1",)
    if name == "expiresAt":
        if "expiresAt" in model_rec:  # an expiry the model set too, at another instant
            return ("LED-EXP.5", "LED-VOCAB.4")
        return ("LED-EXP.1", "LED-EXP.5", "LED-VOCAB.4")
    if name == "conflictGroup":
        return ("LED-GROUP.4", "LED-VOCAB.5")
    if name == "supersedes":
        return ("LED-VOCAB.2", "LED-VOCAB.3") if prov == "model_consolidation" else ("LED-EDIT.1",)
    if name in ("confidenceBps", "rationale"):
        return ("LED-REVIEW.1",)
    if name == "sourceSessionId":
        return ("LED-SAVE.1", "LED-REVIEW.1")
    if name in ("createdAt", "updatedAt"):
        return ()
    return ("LED-WIRE.4",)


def presence_clauses(where: str) -> tuple[str, ...]:
    """Which clauses a record present or missing where it should not be touches."""
    if where.startswith("as_of"):
        return ("LED-ASOF.1",)
    return ("LED-LIST.1", "LED-STATUS.4")


def missing_clauses(model_rec: dict[str, Any]) -> tuple[str, ...]:
    """What a missing model record points at: a live record lost (budget) or any record lost."""
    return ("LED-BUDGET.5", "LED-REC.4") if model_rec.get("status") == "active" else ("LED-REC.4",)


def error_code(body: Any) -> Any:
    """The ``error.code`` of an error answer (None when the body has none)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("code")
    return None


def refusal_reason_clauses(body: Any) -> tuple[str, ...]:
    """What a refusal the model does not make is about, judged by the store's own words."""
    err = body.get("error") if isinstance(body, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    if not isinstance(message, str):
        return ()
    if message.startswith("Memory scope '"):
        return ("LED-BUDGET.1", "LED-BUDGET.3")
    if message.startswith("Memory pins cannot store credentials"):
        return ("LED-CRED.3", "LED-CRED.4")
    return ()


def unexpected_error_clauses(status: int, code: Any) -> tuple[str, ...]:
    """Which clauses an error answer the model does not give touches, by its code and status."""
    if code == REFUSED:
        return ("LED-WIRE.3",)
    if code == INVALID_PARAMS or status == 400:
        return ("LED-WIRE.2",)
    if status == 404:
        return ("LED-WIRE.1",)
    return ("LED-WIRE.6",)


def uniq(items: Sequence[str]) -> tuple[str, ...]:
    """The items in their order, each once."""
    return tuple(dict.fromkeys(items))
