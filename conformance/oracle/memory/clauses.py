"""Which clauses a difference names: by route, by status, by field, by the members that differ.

Also the oracle's one way to say "this allowed answer does not fit": :class:`Reject`, carrying
the clauses and a one-line reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reference.jsonvalues import json_equal
from reference.memory.wire import ErrorBody, Option, WireRequest

ROUTE_CLAUSE = {
    "/retrieve": "MEM-WIRE.11",
    "/write": "MEM-WIRE.12",
    "/list": "MEM-WIRE.14",
    "/forget": "MEM-WIRE.15",
    "/healthz": "MEM-WIRE.1",
}
STATUS_CLAUSE = {
    404: "MEM-WIRE.1",
    405: "MEM-WIRE.2",
    401: "MEM-WIRE.3",
    411: "MEM-WIRE.5",
    413: "MEM-WIRE.6",
}
#: Which clause a dead record seen alive points at, by the status the model gave it.
DEAD_CLAUSES: dict[str, tuple[str, ...]] = {
    "evicted": ("MEM-CAP.2", "MEM-CAP.1", "MEM-STORE.4"),
    "superseded": ("MEM-WRITE.3", "MEM-STORE.4", "MEM-RECORD.2"),
    "forgotten": ("MEM-STORE.8", "MEM-STORE.4", "MEM-RECORD.2"),
}
FIELD_CLAUSE = {
    "scopeKey": "MEM-WIRE.9",
    "query": None,  # the route's clause
    "limit": None,
    "records": "MEM-WIRE.12",
    "kind": "MEM-WIRE.12",
    "text": "MEM-WIRE.12",
    "sourceThreadKey": "MEM-WIRE.12",
    "keywords": "MEM-WIRE.12",
    "sourceRunId": "MEM-WIRE.12",
    "supersedes": "MEM-WIRE.12",
    "confidence": "MEM-WIRE.12",
    "cap": "MEM-WIRE.13",
    "id": "MEM-WIRE.15",
}


class Reject(Exception):
    """An allowed answer the target's answer does not fit: the clauses and why."""

    def __init__(self, clauses: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.clauses = clauses
        self.message = message


def route_clause(route: str) -> str:
    """The clause of a route (an unknown path: MEM-WIRE.1)."""
    return ROUTE_CLAUSE.get(route, "MEM-WIRE.1")


def exact_clauses(route: str, want: Any, got: Any, req: WireRequest) -> tuple[str, ...]:
    """The clauses an exact answer (write, forget) that differs touches, by the members that
    differ."""
    if route == "/forget":
        return ("MEM-STORE.8", "MEM-WIRE.15")
    if route != "/write" or not isinstance(want, dict) or not isinstance(got, dict):
        return (route_clause(route),)
    out: list[str] = []
    bad = {k for k in want if k not in got or not json_equal(want[k], got[k])}
    supersedes_sent = b'"supersedes"' in req.body
    if bad & {"inserted", "deduped"}:
        out += ["MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.7"]
        if supersedes_sent:
            out += ["MEM-WRITE.4", "MEM-WRITE.5"]
    if "superseded" in bad:
        out += ["MEM-WRITE.3", "MEM-WRITE.5"]
    if "evicted" in bad:
        out += ["MEM-CAP.1", "MEM-CAP.3"]
    if bad - {"inserted", "deduped", "superseded", "evicted"}:
        out += ["MEM-WIRE.13"]
    out.append("MEM-WRITE.6")
    return tuple(dict.fromkeys(out))


def status_clauses(
    options: Sequence[Option], got: int, route: str, fences: frozenset[int] = frozenset()
) -> tuple[str, ...]:
    """The clauses a status no allowed answer has touches: every allowed option's, and the
    status's own.  ``fences``: the statuses of every check before the body the request fails
    (``reference.memory.wire.fence_statuses``) — when the model answers one of them and the
    target another, only the order of the checks differs (MEM-WIRE.4, a reference clause)."""
    if got in fences and options and all(o.status in fences for o in options):
        return ("MEM-WIRE.4",)
    out: list[str] = []
    for o in options:
        if o.status in STATUS_CLAUSE:
            out.append(STATUS_CLAUSE[o.status])
        elif o.status == 400 and isinstance(o.body, ErrorBody):
            if o.body.reference_only:  # only bounds the seed does not give
                out.append("MEM-WIRE.21")
                continue
            if not o.body.fields:
                out.append("MEM-WIRE.7")
            for f in o.body.fields:
                c = FIELD_CLAUSE.get(f)
                out.append(c or ROUTE_CLAUSE.get(route, "MEM-WIRE.7"))
        elif o.status == 200:
            out.append(route_clause(route))
    if got in STATUS_CLAUSE:
        out.append(STATUS_CLAUSE[got])
    if got != 200 and got < 500 and any(o.status != got for o in options):
        out.append("MEM-WIRE.4")
    if not out:
        out.append(route_clause(route))
    return tuple(dict.fromkeys(out))
