"""Validity intervals and as-of reads (LED-INT.*, LED-ASOF.*).

A record holds over the half-open interval ``[valid_from, valid_to)``; ``valid_to`` None is an
open end.  A record that never became active holds an empty interval (``valid_to ==
valid_from``), so no instant is inside it.
"""

from __future__ import annotations

from reference.ledger.records import LedgerRecord, LedgerState


def interval_contains(rec: LedgerRecord, at: int) -> bool:
    """True when ``at`` lies in ``[valid_from, valid_to)`` (LED-INT.1)."""
    return rec.valid_from <= at and (rec.valid_to is None or at < rec.valid_to)


def list_as_of(state: LedgerState, scope_key: str, at: int) -> list[LedgerRecord]:
    """The scope's records whose interval contains ``at``, newest ``valid_from`` first.

    Tombstoned records are included (their body is already wiped, LED-FORGET.3); a store may
    leave them out (LED-ASOF.2).  The order is the model's; a store's is implementation-defined
    (LED-ASOF.3).  Read at ``now`` this is exactly the active set (LED-ASOF.1).
    """
    hits = [r for r in state.records if r.scope_key == scope_key and interval_contains(r, at)]
    hits.sort(key=lambda r: (r.valid_from, r.seq), reverse=True)
    return hits
