"""A request as the driver sent it, and its twin on the model side.

The driver sends target-space requests (the target's ids, the real bearer); the model is asked
the same request in model space: ids the run has seen go back through a world's bijection, an
id the run never saw becomes a same-length "ghost" that names no model record, and the
``Authorization`` header is rebuilt around a stand-in token (MEM-WIRE.3, MEM-STORE.9).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

from conformance.oracle.memory.clauses import ROUTE_CLAUSE
from conformance.oracle.memory.worlds import World
from reference.memory.wire import WireRequest

#: The bearer the model is told the server holds.  The real token never reaches the model: the
#: driver describes the Authorization header it sent by its form (right, wrong, absent …) and
#: :func:`model_auth_header` rebuilds the same form around this stand-in.
MODEL_TOKEN = "memspec-model-token"


@dataclass(frozen=True)
class SentRequest:
    """A request as the driver sent it (target space), described for the model."""

    method: str
    path: str
    body: Any  # parsed JSON of the body when it was JSON, else None
    raw: bytes  # the bytes sent
    content_length: str | None  # the Content-Length header value sent (None: absent)
    auth: Any
    extra_headers: tuple[tuple[str, str], ...] = ()


def model_auth_header(auth: Any) -> str | None:
    """The model-side ``Authorization`` for an auth form the driver used on the target."""
    if auth is False:
        return None
    if auth is True:
        return f"Bearer {MODEL_TOKEN}"
    if auth == "wrong":
        return f"Bearer {MODEL_TOKEN[:-1]}X"
    if auth == "scheme":
        return f"Basic {MODEL_TOKEN}"
    if auth == "empty":
        return "Bearer "
    if auth == "prefix":
        return f"Bearer {MODEL_TOKEN[:-1]}"
    if auth == "longer":
        return f"Bearer {MODEL_TOKEN}x"
    if auth == "case":
        return f"Bearer {MODEL_TOKEN.swapcase()}"
    raise ValueError(f"unknown auth form {auth!r}")


def model_request(world: World, sent: SentRequest) -> WireRequest:
    """The request the model is asked in ``world`` for what the driver sent."""
    body = sent.raw
    if isinstance(sent.body, dict) and sent.path in ROUTE_CLAUSE:
        translated = translate_ids(world, sent.body, sent.path)
        if translated is not sent.body:
            body = json.dumps(translated, ensure_ascii=False, separators=(",", ":")).encode()
    headers: list[tuple[str, str]] = list(sent.extra_headers)
    auth = model_auth_header(sent.auth)
    if auth is not None:
        headers.append(("Authorization", auth))
    if sent.content_length is not None:
        headers.append(("Content-Length", sent.content_length))
    return WireRequest(sent.method, sent.path, tuple(headers), body)


def translate_ids(world: World, body: dict[str, Any], route: str) -> dict[str, Any]:
    """The model-side body: target ids the run has seen become model ids; unseen ids that
    could be taken for a model id become same-length ghosts."""
    if route == "/forget" and isinstance(body.get("id"), str):
        new = model_id(world, body["id"])
        if new != body["id"]:
            return {**body, "id": new}
        return body
    if route == "/write" and isinstance(body.get("records"), list):
        changed = False
        recs = []
        for rec in body["records"]:
            if isinstance(rec, dict) and isinstance(rec.get("supersedes"), str):
                new = model_id(world, rec["supersedes"])
                if new != rec["supersedes"]:
                    rec = {**rec, "supersedes": new}
                    changed = True
            recs.append(rec)
        if changed:
            return {**body, "records": recs}
    return body


def model_id(world: World, target_id: str) -> str:
    """The model id a target id stands for in ``world`` (a ghost when the run never saw it)."""
    if len(target_id) > 200:  # refused by length on both sides whatever it names
        return target_id
    if target_id in world.t2m:
        return world.t2m[target_id]
    if target_id.startswith("mem:") and not any(_refusable(c) for c in target_id):
        return "~" * len(target_id)
    return target_id


def _refusable(c: str) -> bool:
    """A character some id rule may refuse (MEM-WIRE.15: whitespace, control; format,
    surrogate, private-use and unassigned are open): an id holding one is judged as sent, never
    ghosted into a printable one."""
    return c.isspace() or unicodedata.category(c) in (
        "Cc",
        "Cf",
        "Cs",
        "Co",
        "Cn",
        "Zs",
        "Zl",
        "Zp",
    )
