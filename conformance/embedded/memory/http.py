"""The Memory Worker's four data routes: body parsing, field validation and serialization.

The transport (routing, auth, the size fence, keep-alive) lives in ``server.py``; this module
starts from the raw body bytes of an authenticated, length-fenced ``POST`` and returns the
status and JSON body.  Everything is validated before storage is touched (seed §16, §26,
§29); a 400 reason always starts with the offending field's name.

This is deliberately an independent implementation of the wire rules -- it does not import
``reference.memory.wire`` -- so that the model and the bundled store can keep each other
honest.  It calls the pure engine only through ``MemoryStore``.

Rules (CLARIFICATIONS "Limits", seed §16):

* lengths are JavaScript string lengths (UTF-16 code units); a lone surrogate anywhere in a
  string the store would keep or compare is refused (it is not valid Unicode text);
* integers follow JavaScript: ``5.0`` is 5, ``true`` is not a number;
* an optional field sent as JSON ``null`` is treated as absent;
* unknown fields are ignored.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.embedded.memory.store import MemoryStore
from reference.memory.records import MemoryCandidate, MemoryRecord

MAX_KEY = 200
MAX_QUERY = 4000
MAX_TEXT = 4000
MAX_BATCH = 50
MAX_LIMIT = 50
MAX_KEYWORDS = 20
MAX_KEYWORD = 64
MAX_CAP = 10000
KINDS = ("fact", "summary")

# ECMAScript WhiteSpace + LineTerminator (what JavaScript's \s and String.prototype.trim use).
_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_WS_RE = re.compile(f"[{_JS_WS}]")
_JS_BLANK_RE = re.compile(f"[{_JS_WS}]*")


class BadRequest(Exception):
    """A 400: ``reason`` names the offending field first."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Reply:
    """What a route answers, plus the access-log fields (never text, bodies or tokens)."""

    status: int
    body: dict[str, Any]
    log: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- primitives


def js_length(s: str) -> int:
    """JavaScript ``String.length``: UTF-16 code units (astral characters count 2)."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def _has_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)


def _has_space_or_control(s: str, *, format_chars: bool, surrogates: bool = True) -> bool:
    """Whitespace (JavaScript's and Unicode's Zs/Zl/Zp) or control (Cc) characters; with
    ``format_chars`` also format characters (Cf), with ``surrogates`` lone surrogates (Cs)."""
    for ch in s:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Zs", "Zl", "Zp"):
            return True
        if (format_chars and cat == "Cf") or (surrogates and cat == "Cs"):
            return True
        if ch.isspace() or _JS_WS_RE.match(ch):
            return True
    return False


def _js_integer(v: Any) -> int | None:
    """The integer a JSON value denotes under JavaScript semantics, or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def _present(body: Mapping[str, Any], name: str) -> bool:
    return name in body and body[name] is not None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_body(raw: bytes) -> dict[str, Any]:
    """Strict JSON object from UTF-8 bytes (a leading BOM is ignored, as fetch's .json())."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRequest("body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BadRequest("body must be a JSON object")
    return value


# --------------------------------------------------------------------------- fields


def scope_key(body: Mapping[str, Any], *, whitespace_only: bool = False) -> str:
    """``scopeKey``, validated (``whitespace_only``: the mutant's ``/\\s/`` test alone)."""
    v = body.get("scopeKey")
    if (
        not isinstance(v, str)
        or not 1 <= js_length(v) <= MAX_KEY
        or (
            any(ch.isspace() or _JS_WS_RE.match(ch) for ch in v)
            if whitespace_only
            else _has_space_or_control(v, format_chars=True)
        )
    ):
        raise BadRequest(
            "scopeKey must be a string of 1-200 characters without whitespace,"
            " control or format characters"
        )
    return v


def limit(body: Mapping[str, Any]) -> int:
    n = _js_integer(body.get("limit"))
    if n is None or not 1 <= n <= MAX_LIMIT:
        raise BadRequest("limit must be an integer from 1 to 50")
    return n


def query(body: Mapping[str, Any], *, required: bool) -> str | None:
    if not required and not _present(body, "query"):
        return None
    v = body.get("query")
    if not isinstance(v, str) or js_length(v) > MAX_QUERY:
        raise BadRequest("query must be a string of at most 4000 characters")
    return v


def cap(body: Mapping[str, Any]) -> int | None:
    if not _present(body, "cap"):
        return None
    n = _js_integer(body["cap"])
    if n is None or not 1 <= n <= MAX_CAP:
        raise BadRequest("cap must be an integer from 1 to 10000")
    return n


def forget_id(body: Mapping[str, Any], *, whitespace_only: bool = False) -> str:
    """``id`` of ``/forget``, validated (``whitespace_only``: the mutant's ``/\\s/`` test)."""
    v = body.get("id")
    if (
        not isinstance(v, str)
        or not 1 <= js_length(v) <= MAX_KEY
        or (
            any(ch.isspace() or _JS_WS_RE.match(ch) for ch in v)
            if whitespace_only
            else _has_space_or_control(v, format_chars=False, surrogates=False)
        )
    ):
        raise BadRequest(
            "id must be a string of 1-200 characters without whitespace or control characters"
        )
    return v


def _opt_string(rec: Mapping[str, Any], name: str, where: str, max_len: int) -> str | None:
    if not _present(rec, name):
        return None
    v = rec[name]
    if not isinstance(v, str) or js_length(v) > max_len or _has_surrogate(v):
        raise BadRequest(f"{where}.{name} must be a string of at most {max_len} characters")
    return v


def candidate(rec: Any, i: int) -> MemoryCandidate:
    where = f"records[{i}]"
    if not isinstance(rec, dict):
        raise BadRequest(f"{where} must be an object")
    kind = rec.get("kind")
    if kind not in KINDS or not isinstance(kind, str):
        raise BadRequest(f"{where}.kind must be 'fact' or 'summary'")
    text = rec.get("text")
    if (
        not isinstance(text, str)
        or js_length(text) > MAX_TEXT
        or _JS_BLANK_RE.fullmatch(text)
        or _has_surrogate(text)
    ):
        raise BadRequest(f"{where}.text must be a non-blank string of at most 4000 characters")
    thread = rec.get("sourceThreadKey")
    if (
        not isinstance(thread, str)
        or not 1 <= js_length(thread) <= MAX_KEY
        or _has_surrogate(thread)
    ):
        raise BadRequest(f"{where}.sourceThreadKey must be a string of 1-200 characters")
    keywords: tuple[str, ...] | None = None
    if _present(rec, "keywords"):
        kws = rec["keywords"]
        if (
            not isinstance(kws, list)
            or len(kws) > MAX_KEYWORDS
            or not all(
                isinstance(k, str) and 1 <= js_length(k) <= MAX_KEYWORD and not _has_surrogate(k)
                for k in kws
            )
        ):
            raise BadRequest(
                f"{where}.keywords must be an array of at most 20 strings of 1-64 characters"
            )
        keywords = tuple(kws)
    run_id = _opt_string(rec, "sourceRunId", where, MAX_KEY)
    supersedes = _opt_string(rec, "supersedes", where, MAX_KEY)
    confidence: float | None = None
    if _present(rec, "confidence"):
        c = rec["confidence"]
        if (
            isinstance(c, bool)
            or not isinstance(c, int | float)
            or not math.isfinite(c)
            or not 0 <= c <= 1
        ):
            raise BadRequest(f"{where}.confidence must be a number from 0 to 1")
        confidence = float(c)
    return MemoryCandidate(
        kind=kind,
        text=text,
        source_thread_key=thread,
        keywords=keywords,
        source_run_id=run_id,
        confidence=confidence,
        supersedes=supersedes,
    )


def _tighter_caps(cands: list[MemoryCandidate]) -> None:
    """A store capping the fields §16 gives no number for below the reference's bounds:
    ``sourceThreadKey``, ``sourceRunId`` and ``supersedes`` at 100, a keyword at 32."""
    for i, c in enumerate(cands):
        for name, value in (
            ("sourceThreadKey", c.source_thread_key),
            ("sourceRunId", c.source_run_id),
            ("supersedes", c.supersedes),
        ):
            if value is not None and js_length(value) > 100:
                raise BadRequest(f"records[{i}].{name} must be at most 100 characters")
        if any(js_length(k) > 32 for k in c.keywords or ()):
            raise BadRequest(f"records[{i}].keywords must be strings of at most 32 characters")


def candidates(body: Mapping[str, Any]) -> list[MemoryCandidate]:
    recs = body.get("records")
    if not isinstance(recs, list) or len(recs) > MAX_BATCH:
        raise BadRequest("records must be an array of at most 50 candidates")
    return [candidate(r, i) for i, r in enumerate(recs)]


# --------------------------------------------------------------------------- serialization


_OPTIONAL_ANSWER = ("sourceRunId", "lastUsedAt", "confidence", "supersedes")


def record_json(r: MemoryRecord) -> dict[str, Any]:
    """A record on the wire: camelCase, optional fields absent (never null)."""
    out: dict[str, Any] = {
        "id": r.id,
        "scopeKey": r.scope_key,
        "kind": r.kind,
        "text": r.text,
        "keywords": list(r.keywords),
        "sourceThreadKey": r.source_thread_key,
    }
    if r.source_run_id is not None:
        out["sourceRunId"] = r.source_run_id
    out["createdAt"] = r.created_at
    if r.last_used_at is not None:
        out["lastUsedAt"] = r.last_used_at
    out["useCount"] = r.use_count
    if r.confidence is not None:
        c = r.confidence
        out["confidence"] = int(c) if float(c).is_integer() else c
    if r.supersedes is not None:
        out["supersedes"] = r.supersedes
    out["status"] = r.status
    return out


# --------------------------------------------------------------------------- routes


def _retrieve(store: MemoryStore, body: Mapping[str, Any]) -> Reply:
    key = scope_key(body, whitespace_only=store.quirks("mem-scope-key-controls-accepted"))
    raw_q = body.get("query")
    if store.quirks("mem-query-4001-accepted") and isinstance(raw_q, str):
        body = {**body, "query": ""} if js_length(raw_q) <= MAX_QUERY + 1 else body
    if store.quirks("mem-query-length-in-code-points") and isinstance(raw_q, str):
        body = {**body, "query": ""} if len(raw_q) <= MAX_QUERY else body
    q = query(body, required=True)
    n = 51 if store.quirks("mem-limit-51-accepted") and body.get("limit") == 51 else limit(body)
    assert q is not None
    found = store.retrieve(key, raw_q if isinstance(raw_q, str) else q, n)
    records = [record_json(r) for r in found]
    if store.quirks("mem-optional-fields-null"):  # mutant: unset optionals sent as null
        records = [{**dict.fromkeys(_OPTIONAL_ANSWER), **r} for r in records]
    return Reply(200, {"records": records}, {"scopeKey": key, "records": len(found)})


def _write(store: MemoryStore, body: Mapping[str, Any]) -> Reply:
    key = scope_key(body, whitespace_only=store.quirks("mem-scope-key-controls-accepted"))
    recs = body.get("records")
    if store.quirks("mem-batch-half-applied") and isinstance(recs, list) and len(recs) > 1:
        try:  # mutant: the last candidate is validated after the others were written
            candidate(recs[-1], len(recs) - 1)
        except BadRequest:
            store.write(key, candidates({**body, "records": recs[:-1]}), cap(body))
            raise
    if store.quirks("mem-confidence-untyped") and isinstance(recs, list):
        for rec in recs:  # mutant: the range compared before the type (a string raises: a 500)
            if isinstance(rec, dict) and rec.get("confidence") is not None:
                _ = 0 <= rec["confidence"] <= 1
    cands = candidates(body)
    if store.quirks("mem-tighter-field-caps"):  # mutant: its own, tighter caps (MEM-WIRE.21)
        _tighter_caps(cands)
    c = 10001 if store.quirks("mem-cap-10001-accepted") and body.get("cap") == 10001 else None
    if store.quirks("mem-cap-0-accepted") and body.get("cap") == 0:
        c = 0  # mutant: the cap's lower bound is 0 (then an over-cap batch evicts everything)
    c = cap(body) if c is None else c
    if store.quirks("mem-cap-silently-ignored"):
        c = None  # mutant: the cap is validated, then ignored (the default always applies)
    if c is None and store.quirks("mem-default-cap-ignored"):
        c = 10**9  # mutant: a write without cap is never evicted (no default of 500)
    counts = store.write(key, cands, c)
    result = {
        "ok": True,
        "inserted": counts.inserted,
        "deduped": counts.deduped,
        "superseded": counts.superseded,
        "evicted": counts.evicted,
    }
    log = {
        "scopeKey": key,
        "candidates": len(cands),
        **{k: v for k, v in result.items() if k != "ok"},
    }
    # variant: 201 Created when the batch inserted a record (any 2xx is a success)
    status = 201 if counts.inserted and store.quirks("write-201-on-insert") else 200
    return Reply(status, result, log)


def _list(store: MemoryStore, body: Mapping[str, Any]) -> Reply:
    key = scope_key(body, whitespace_only=store.quirks("mem-scope-key-controls-accepted"))
    n = limit(body)
    q = query(body, required=False)
    found = store.list(key, n, q)
    records = [record_json(r) for r in found]
    if store.quirks("mem-optional-fields-null"):  # mutant: unset optionals sent as null
        records = [{**dict.fromkeys(_OPTIONAL_ANSWER), **r} for r in records]
    return Reply(
        200,
        {"records": records},
        {"scopeKey": key, "records": len(found), "filtered": q is not None},
    )


def _forget(store: MemoryStore, body: Mapping[str, Any]) -> Reply:
    key = scope_key(body, whitespace_only=store.quirks("mem-scope-key-controls-accepted"))
    rid = forget_id(body, whitespace_only=store.quirks("mem-forget-id-controls-accepted"))
    # An id holding a lone surrogate names no stored record (none can hold one): false.
    ok = False if _has_surrogate(rid) else store.forget(key, rid)
    if store.quirks("mem-forget-always-true"):  # mutant: the answer ignores the outcome
        ok = True
    return Reply(200, {"ok": True, "forgotten": ok}, {"scopeKey": key, "id": rid, "forgotten": ok})


ROUTES: dict[str, Callable[[MemoryStore, Mapping[str, Any]], Reply]] = {
    "/retrieve": _retrieve,
    "/write": _write,
    "/list": _list,
    "/forget": _forget,
}


def handle(store: MemoryStore, path: str, raw: bytes) -> Reply:
    """Answer one authenticated, length-fenced ``POST`` to a data route."""
    route = ROUTES[path]
    try:
        if store.quirks("bom-refused") and raw.startswith(b"\xef\xbb\xbf"):
            raise BadRequest("body starts with a byte-order mark")
        body = _routed_scope_key(store, parse_body(raw))
        if store.quirks("null-optional-refused"):
            _refuse_nulls(body)
        return route(store, body)
    except BadRequest as exc:
        if store.quirks("error-reasons-reworded"):
            field_name, _, _ = exc.reason.partition(" ")
            return Reply(400, {"error": f"Bad request: the value of {field_name} is not accepted."})
        return Reply(400, {"error": exc.reason})


def _routed_scope_key(store: MemoryStore, body: Any) -> Any:
    """The body as the store serves it: its ``scopeKey`` as sent (the mutants fold it, as a
    Worker naming its Durable Object by a normalized key would)."""
    key = body.get("scopeKey") if isinstance(body, dict) else None
    if not isinstance(key, str):
        return body
    if store.quirks("mem-scope-key-case-folded"):  # mutant: idFromName(key.toLowerCase())
        key = key.lower()
    if store.quirks("mem-scope-key-nfkc"):  # mutant: idFromName(key.normalize("NFKC"))
        key = unicodedata.normalize("NFKC", key)
    return {**body, "scopeKey": key}


_OPTIONAL_IN_BODY = ("query", "cap")
_OPTIONAL_IN_RECORD = ("keywords", "sourceRunId", "confidence", "supersedes")


def _refuse_nulls(body: Mapping[str, Any]) -> None:
    """The other reading of a JSON ``null`` for an optional field: a 400 naming it."""
    for name in _OPTIONAL_IN_BODY:
        if name in body and body[name] is None:
            raise BadRequest(f"{name} must not be null")
    recs = body.get("records")
    for i, rec in enumerate(recs if isinstance(recs, list) else ()):
        for name in _OPTIONAL_IN_RECORD:
            if isinstance(rec, dict) and name in rec and rec[name] is None:
                raise BadRequest(f"records[{i}].{name} must not be null")
