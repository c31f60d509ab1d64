"""Full-text search, modelled as "the searchable bodies are the active bodies" (LED-FTS.1).

The store keeps an FTS5 index maintained by trigger; the model keeps no index at all and
derives the searchable set from statuses, so any status change (supersede, delete, expire,
reject, approve) moves a body in or out exactly as the trigger must.  Matching is token-based:
lower-cased runs of letters and digits; every query token must occur in the body.
"""

from __future__ import annotations

import re

from reference.ledger.records import LedgerRecord, LedgerState

_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Lower-cased runs of letters and digits (Unicode-aware)."""
    return _TOKEN.findall(text.lower())


def searchable(state: LedgerState, scope_key: str | None = None) -> list[LedgerRecord]:
    """The records whose body the index holds: exactly the active ones (LED-FTS.1)."""
    return [
        r
        for r in state.records
        if r.status == "active" and (scope_key is None or r.scope_key == scope_key)
    ]


def search(state: LedgerState, query: str, scope_key: str | None = None) -> list[LedgerRecord]:
    """Active records whose body contains every token of ``query``; an empty query finds
    nothing (LED-FTS.1, LED-STATUS.4)."""
    wanted = set(tokens(query))
    if not wanted:
        return []
    return [r for r in searchable(state, scope_key) if wanted <= set(tokens(r.body))]
