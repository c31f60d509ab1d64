"""Calls and answers of the Memory Worker on one scope, for hand-written histories of the
linearizability checker's tests."""

from __future__ import annotations

from typing import Any


class MemoryCalls:
    """Builders of requests and answers on ``scope``; a record's target id is
    ``mem:<scope>:<id_base + n>`` (an ``id_base`` other than 0 keeps the target's ids apart
    from the model's own numbering)."""

    def __init__(self, scope: str, id_base: int = 0) -> None:
        self.scope = scope
        self.id_base = id_base

    def rec(self, n: int, text: str, uses: Any = 0, used: bool = False) -> dict[str, Any]:
        """A record as the target answers it."""
        out: dict[str, Any] = {
            "id": f"mem:{self.scope}:{self.id_base + n}",
            "scopeKey": self.scope,
            "kind": "fact",
            "text": text,
            "keywords": text.split(),
            "sourceThreadKey": "t",
            "createdAt": 1,
            "useCount": uses,
            "status": "active",
        }
        if used:
            out["lastUsedAt"] = 2
        return out

    def write(self, *texts: str, cap: int | None = None) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "scopeKey": self.scope,
            "records": [{"kind": "fact", "text": t, "sourceThreadKey": "t"} for t in texts],
        }
        if cap is not None:
            body["cap"] = cap
        return "/write", body

    def listing(self, query: str | None = None) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"scopeKey": self.scope, "limit": 50}
        if query is not None:
            body["query"] = query
        return "/list", body

    def retrieve(self, query: str, limit: int = 5) -> tuple[str, dict[str, Any]]:
        return "/retrieve", {"scopeKey": self.scope, "query": query, "limit": limit}


def counts(ins: int, dup: int, sup: int = 0, evicted: int = 0) -> dict[str, Any]:
    """A write's answer."""
    return {"ok": True, "inserted": ins, "deduped": dup, "superseded": sup, "evicted": evicted}
