"""One memory operation as the checker's memory model reads it (:class:`MemoryCall`, from a
recorded request and answer), and what the shrinker's closed-world guard asks of a call: what it
writes, shows, may use, needs written first and which target ids it sends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reference.memory.engine import DEFAULT_SCOPE_CAP
from reference.memory.scoring import tokenize
from reference.memory.wire import (
    ForgetBody,
    ListBody,
    RetrieveBody,
    WireError,
    WriteBody,
    validate_forget,
    validate_list,
    validate_retrieve,
    validate_write,
)

#: The suffix of the id the concurrent driver sends for a record its client never saw.
UNSEEN_SUFFIX = ":999999999"

_VALIDATE = {
    "/write": validate_write,
    "/retrieve": validate_retrieve,
    "/list": validate_list,
    "/forget": validate_forget,
}


@dataclass(frozen=True)
class MemoryCall:
    """One operation as the model reads it: the parsed request and the answer (``None``:
    indeterminate)."""

    route: str
    body: WriteBody | RetrieveBody | ListBody | ForgetBody
    status: int | None
    answer: Any
    determinate: bool


def parse_call(
    route: str, request: Any, status: int | None, answer: Any, determinate: bool
) -> MemoryCall:
    """Validate the request as the wire model does; a request the harness sends is valid."""
    parsed = _VALIDATE[route](request)
    if isinstance(parsed, WireError):
        raise ValueError(
            f"{route}: the concurrent workload sent an invalid request: {parsed.reason}"
        )
    assert isinstance(parsed, WriteBody | RetrieveBody | ListBody | ForgetBody)
    return MemoryCall(route, parsed, status, answer, determinate)


def candidate_texts(call: MemoryCall) -> list[str]:
    """What a call writes, as ``text NUL sourceThreadKey`` (for the shrinker's closed-world
    guard: a record shown must have been written by a kept write of the same client)."""
    if isinstance(call.body, WriteBody):
        return [f"{c.text}\x00{c.source_thread_key}" for c in call.body.candidates]
    return []


def shown_records(call: MemoryCall) -> list[Mapping[str, Any]]:
    """Records an answer shows (for the shrinker's closed-world guard)."""
    if call.determinate and call.route in ("/list", "/retrieve") and isinstance(call.answer, dict):
        recs = call.answer.get("records")
        if isinstance(recs, list):
            return [r for r in recs if isinstance(r, dict)]
    return []


def may_use(call: MemoryCall, text: str) -> bool:
    """Could this call bump the usage of a record with ``text`` (a retrieve that may match it)?"""
    if isinstance(call.body, RetrieveBody):
        return bool(set(tokenize(call.body.query)) & set(tokenize(text)))
    return False


def needs_written(call: MemoryCall) -> list[tuple[int, list[str] | None]]:
    """What a write's answer needs written first by *other* calls (for the shrinker's
    closed-world guard): more dedups than its own repeated candidates explain need that many
    of its texts; an eviction needs the scope to have held ``cap + evicted - inserted``
    records (any texts)."""
    if not (
        call.determinate and isinstance(call.body, WriteBody) and isinstance(call.answer, dict)
    ):
        return []
    out: list[tuple[int, list[str] | None]] = []
    texts = [c.text for c in call.body.candidates]
    deduped = call.answer.get("deduped")
    if isinstance(deduped, int) and deduped > len(texts) - len(set(texts)):
        out.append((deduped - (len(texts) - len(set(texts))), texts))
    evicted, inserted = call.answer.get("evicted"), call.answer.get("inserted")
    if isinstance(evicted, int) and evicted > 0 and isinstance(inserted, int):
        cap = DEFAULT_SCOPE_CAP if call.body.cap is None else call.body.cap
        if cap + evicted - inserted > 0:
            out.append((cap + evicted - inserted, None))
    return out


def sent_ids(call: MemoryCall) -> list[str]:
    """Target ids a request names."""
    if isinstance(call.body, ForgetBody):
        return [call.body.id]
    if isinstance(call.body, WriteBody):
        return [c.supersedes for c in call.body.candidates if c.supersedes]
    return []
