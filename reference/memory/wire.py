"""The Memory Worker wire protocol as a pure function (MEM-WIRE), and the client's rules (MEM-CLIENT).

``worker_respond(state, request, now, token)`` answers "what may a conforming Memory Worker
answer to this HTTP request, and what does its store hold afterwards?".  The answer is an
``Allowed``: one or more ``Option``s, each a status, a description of the legal bodies and the
store state that follows when the target chose that option.  Several options exist exactly
where the spec leaves a choice to the implementation (a JSON ``null`` for an optional field,
a body that is not valid UTF-8 or starts with a byte-order mark, exotic characters in a key);
a ``/retrieve`` option admits every legal order of equal-score records.

Records in a response are matched to model records by content: every field except ``id``,
``createdAt`` and ``lastUsedAt`` is compared exactly (``useCount`` and ``lastUsedAt`` before or
after the retrieval's own bump; ``keywords`` of a record written without keywords is
implementation-defined); ids are checked for their promised shape and uniqueness, and against
an optional model-id -> target-id map.

The second half models the bot-side ``WorkerMemoryStore`` (degrade on read, throw on write) and
the start-up store selection.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final, Literal

from reference.jsonvalue import is_number as is_number
from reference.jsonvalue import json_equal as json_equal
from reference.memory.budget import utf16_length
from reference.memory.engine import DEFAULT_SCOPE_CAP
from reference.memory.judge import listing_problem, rank_allowed, record_problems, retrieval_problem
from reference.memory.records import KINDS, STATUSES, MemoryCandidate, MemoryRecord
from reference.memory.store import (
    StoreState,
    WriteResult,
    active_records,
    bump_usage,
    parse_record_id,
    store_forget,
    store_list,
    store_retrieve,
    store_write,
)

# --------------------------------------------------------------------------- limits

MAX_BODY_BYTES: Final = 524_288
MAX_SCOPE_KEY: Final = 200
MAX_QUERY: Final = 4000
MIN_LIMIT: Final = 1
MAX_LIMIT: Final = 50
MAX_RECORDS: Final = 50
MAX_TEXT: Final = 4000
MAX_THREAD_KEY: Final = 200
MAX_KEYWORDS: Final = 20
MAX_KEYWORD: Final = 64
MAX_RUN_ID: Final = 200
MAX_SUPERSEDES: Final = 200
MIN_CAP: Final = 1
MAX_CAP: Final = 10_000
MAX_FORGET_ID: Final = 200

DATA_ROUTES: Final[tuple[str, ...]] = ("/retrieve", "/write", "/list", "/forget")
HEALTH_ROUTE: Final = "/healthz"

# Characters a scope key may never hold (whitespace, control, format) and the ones whose
# treatment is implementation-defined (surrogates, private use, unassigned).
_KEY_FORBIDDEN: Final = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_ID_FORBIDDEN: Final = frozenset({"Cc", "Zs", "Zl", "Zp"})
_KEY_OPEN: Final = frozenset({"Cs", "Co", "Cn"})
_ID_OPEN: Final = frozenset({"Cf", "Cs", "Co", "Cn"})
_DIGITS: Final = re.compile(r"[0-9]+")
_JS_TRIM_CHARS: Final = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request as the Worker sees it; ``path`` may carry a query string."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The header's value (case-insensitive name); repeats joined with ``", "`` as fetch does.

        Optional whitespace (SP, HTAB) around a field value is not part of it (RFC 9110 §5.5),
        so it is stripped here exactly as every HTTP parser strips it.
        """
        values = [v.strip(" \t") for k, v in self.headers if k.lower() == name.lower()]
        return ", ".join(values) if values else None

    @property
    def route(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]


def make_request(
    path: str,
    payload: object,
    *,
    token: str | None,
    method: str = "POST",
    content_length: str | None = "auto",
) -> WireRequest:
    """A JSON request as a well-behaved client sends it (helper for tests and the harness).

    ``content_length="auto"`` declares the body's byte length; ``None`` sends no header; any
    other string is sent verbatim.  ``payload`` may be ``bytes`` to send a raw body.
    """
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers: list[tuple[str, str]] = [("Content-Type", "application/json")]
    if token is not None:
        headers.append(("Authorization", f"Bearer {token}"))
    if content_length == "auto":
        headers.append(("Content-Length", str(len(body))))
    elif content_length is not None:
        headers.append(("Content-Length", content_length))
    return WireRequest(method, path, tuple(headers), body)


# --------------------------------------------------------------------------- JSON helpers


def _reject_constant(name: str) -> object:
    raise ValueError(f"not JSON: {name}")


def parse_json(text: str) -> object:
    """``JSON.parse``: strict JSON, ``NaN``/``Infinity`` rejected (ValueError)."""
    return json.loads(text, parse_constant=_reject_constant)


def js_integer(v: object) -> int | None:
    """The value as an integer when JavaScript's ``Number.isInteger`` holds (``5.0`` is 5)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def members_differ(want: Mapping[str, object], got: object) -> list[str] | None:
    """How a result object differs from ``want`` (MEM-WIRE.13, MEM-WIRE.15), ``None`` if it
    does not: every member of ``want`` present and JSON-equal; members the protocol does not
    name are allowed (the seed names the members of a result but forbids no others)."""
    if not isinstance(got, dict):
        return [f"answer is {got!r}, not an object"]
    diffs = []
    for k, v in want.items():
        if k not in got:
            diffs.append(f"{k} missing (model {json.dumps(v)})")
        elif not json_equal(v, got[k]):
            diffs.append(f"{k} is {json.dumps(got[k])[:120]}, the model has {json.dumps(v)}")
    return diffs or None


def _js_trim(s: str) -> str:
    return s.strip(_JS_TRIM_CHARS)


# --------------------------------------------------------------------------- records on the wire


@dataclass(frozen=True)
class WireError:
    """A rejected value: the field it names (``None`` for the body as a whole) and why.

    ``fields`` lists every offending field found; a conforming 400 may name any of them.
    """

    field: str | None
    reason: str
    fields: tuple[str, ...] = ()


def record_to_wire(record: MemoryRecord) -> dict[str, object]:
    """The camelCase wire form; optional fields absent, never ``null`` (MEM-WIRE.16)."""
    out: dict[str, object] = {
        "id": record.id,
        "scopeKey": record.scope_key,
        "kind": record.kind,
        "text": record.text,
        "keywords": list(record.keywords),
        "sourceThreadKey": record.source_thread_key,
        "createdAt": record.created_at,
        "useCount": record.use_count,
        "status": record.status,
    }
    if record.source_run_id is not None:
        out["sourceRunId"] = record.source_run_id
    if record.last_used_at is not None:
        out["lastUsedAt"] = record.last_used_at
    if record.confidence is not None:
        out["confidence"] = record.confidence
    if record.supersedes is not None:
        out["supersedes"] = record.supersedes
    return out


def record_from_wire(obj: object) -> MemoryRecord | WireError:
    """Read a wire record; any shape fault is a ``WireError`` naming the field (MEM-WIRE.16).

    Required: ``id`` (non-empty string), ``scopeKey``, ``kind`` (fact|summary), ``text``,
    ``keywords`` (array of strings), ``sourceThreadKey``, ``createdAt`` (integer),
    ``useCount`` (integer >= 0), ``status`` (one of the four).  Optional, and when present of
    the right type (``null`` is malformed): ``sourceRunId``, ``lastUsedAt`` (integer),
    ``confidence`` (finite number), ``supersedes``.  Unknown fields are ignored.
    """
    if not isinstance(obj, dict):
        return WireError(None, "record is not an object")
    errs: list[str] = []

    def text_field(name: str, *, nonempty: bool = False) -> str:
        v = obj.get(name)
        if not isinstance(v, str) or (nonempty and not v):
            errs.append(name)
            return ""
        return v

    rid = text_field("id", nonempty=True)
    scope = text_field("scopeKey")
    kind = text_field("kind")
    if kind not in KINDS:
        errs.append("kind")
    text = text_field("text")
    thread = text_field("sourceThreadKey")
    status = text_field("status")
    if status not in STATUSES:
        errs.append("status")
    kws = obj.get("keywords")
    if not isinstance(kws, list) or not all(isinstance(k, str) for k in kws):
        errs.append("keywords")
        kws = []
    created = js_integer(obj.get("createdAt"))
    if created is None:
        errs.append("createdAt")
    uses = js_integer(obj.get("useCount"))
    if uses is None or uses < 0:
        errs.append("useCount")
    run_id: str | None = None
    if "sourceRunId" in obj:
        run_id = obj["sourceRunId"] if isinstance(obj["sourceRunId"], str) else None
        if run_id is None:
            errs.append("sourceRunId")
    last_used: int | None = None
    if "lastUsedAt" in obj:
        last_used = js_integer(obj["lastUsedAt"])
        if last_used is None:
            errs.append("lastUsedAt")
    confidence: float | None = None
    if "confidence" in obj:
        c = obj["confidence"]
        if is_number(c) and math.isfinite(float(c)):
            confidence = float(c)
        else:
            errs.append("confidence")
    supersedes: str | None = None
    if "supersedes" in obj:
        supersedes = obj["supersedes"] if isinstance(obj["supersedes"], str) else None
        if supersedes is None:
            errs.append("supersedes")
    if errs:
        uniq = tuple(dict.fromkeys(errs))
        return WireError(uniq[0], f"malformed record: {', '.join(uniq)}", uniq)
    assert created is not None and uses is not None
    return MemoryRecord(
        id=rid,
        scope_key=scope,
        kind=kind,
        text=text,
        keywords=tuple(kws),
        source_thread_key=thread,
        source_run_id=run_id,
        created_at=created,
        last_used_at=last_used,
        use_count=uses,
        confidence=confidence,
        supersedes=supersedes,
        status=status,
    )


# --------------------------------------------------------------------------- body validation


@dataclass(frozen=True)
class Policy:
    """The implementation-defined validation choices (MEM-WIRE.9, MEM-WIRE.10).

    ``null_is_error``: a JSON ``null`` for an optional field is a 400 (else it is treated as
    absent).  ``strict_chars``: surrogates, private-use and unassigned characters in a scope
    key (and those plus format characters in a forget id), and a lone surrogate in any other
    string field, are a 400 naming the field (else accepted).
    """

    null_is_error: bool = False
    strict_chars: bool = False


LENIENT: Final = Policy(False, False)
STRICT: Final = Policy(True, True)


@dataclass(frozen=True)
class RetrieveBody:
    """A valid ``/retrieve`` body."""

    scope_key: str
    query: str
    limit: int


@dataclass(frozen=True)
class WriteBody:
    """A valid ``/write`` body; ``cap`` ``None`` means the server default."""

    scope_key: str
    candidates: tuple[MemoryCandidate, ...]
    cap: int | None


@dataclass(frozen=True)
class ListBody:
    """A valid ``/list`` body; ``query`` ``None`` means no filter."""

    scope_key: str
    limit: int
    query: str | None


@dataclass(frozen=True)
class ForgetBody:
    """A valid ``/forget`` body."""

    scope_key: str
    id: str


class _Errors:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, name: str, reason: str) -> None:
        self.items.append((name, reason))

    def result(self) -> WireError | None:
        if not self.items:
            return None
        names = tuple(dict.fromkeys(n for n, _ in self.items))
        return WireError(names[0], self.items[0][1], names)


def _char_fault(s: str, forbidden: frozenset[str], open_: frozenset[str], strict: bool) -> bool:
    for c in s:
        cat = unicodedata.category(c)
        if cat in forbidden or (strict and cat in open_):
            return True
    return False


def _present(obj: Mapping[str, object], name: str, policy: Policy, errs: _Errors) -> bool:
    """Whether optional field ``name`` is given; a ``null`` is absent or an error per policy."""
    if name not in obj:
        return False
    if obj[name] is None:
        if policy.null_is_error:
            errs.add(name, f"{name} must not be null")
        return False
    return True


def _scope_key(obj: Mapping[str, object], policy: Policy, errs: _Errors) -> str:
    v = obj.get("scopeKey")
    if not isinstance(v, str):
        errs.add("scopeKey", "scopeKey must be a string")
        return ""
    if not 1 <= utf16_length(v) <= MAX_SCOPE_KEY:
        errs.add("scopeKey", f"scopeKey must be 1-{MAX_SCOPE_KEY} characters")
    elif _char_fault(v, _KEY_FORBIDDEN, _KEY_OPEN, policy.strict_chars):
        errs.add("scopeKey", "scopeKey must not contain whitespace, control or format characters")
    return v


def _limit(obj: Mapping[str, object], errs: _Errors) -> int:
    v = js_integer(obj.get("limit"))
    if v is None or not MIN_LIMIT <= v <= MAX_LIMIT:
        errs.add("limit", f"limit must be an integer {MIN_LIMIT}-{MAX_LIMIT}")
        return 0
    return v


def _lone_surrogate(v: object, policy: Policy) -> bool:
    """A lone surrogate (not Unicode text) in a string, refused under the strict policy
    (MEM-WIRE.10: implementation-defined whether a string field holding one is refused)."""
    return policy.strict_chars and isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v)


def _query(v: object, errs: _Errors, policy: Policy = LENIENT) -> str:
    if not isinstance(v, str) or utf16_length(v) > MAX_QUERY or _lone_surrogate(v, policy):
        errs.add("query", f"query must be a string of at most {MAX_QUERY} characters")
        return ""
    return v


def _not_object(obj: object) -> WireError | None:
    if not isinstance(obj, dict):
        return WireError(None, "body must be a JSON object")
    return None


def validate_retrieve(obj: object, policy: Policy = LENIENT) -> RetrieveBody | WireError:
    """``{scopeKey, query, limit}``, all required (MEM-WIRE.9, MEM-WIRE.10, MEM-WIRE.11)."""
    if (bad := _not_object(obj)) is not None:
        return bad
    assert isinstance(obj, dict)
    errs = _Errors()
    scope = _scope_key(obj, policy, errs)
    query = _query(obj.get("query"), errs, policy)
    limit = _limit(obj, errs)
    return errs.result() or RetrieveBody(scope, query, limit)


def _opt_str(
    rec: Mapping[str, object], name: str, max_units: int, policy: Policy, errs: _Errors
) -> str | None:
    if not _present(rec, name, policy, errs):
        return None
    v = rec[name]
    if not isinstance(v, str) or utf16_length(v) > max_units or _lone_surrogate(v, policy):
        errs.add(name, f"{name} must be a string of at most {max_units} characters")
        return None
    return v


def _candidate(rec: object, policy: Policy, errs: _Errors) -> MemoryCandidate | None:
    if not isinstance(rec, dict):
        errs.add("records", "every record must be an object")
        return None
    before = len(errs.items)
    kind = rec.get("kind")
    if kind not in KINDS:
        errs.add("kind", "kind must be fact or summary")
    text = rec.get("text")
    if (
        not isinstance(text, str)
        or not _js_trim(text)
        or utf16_length(text) > MAX_TEXT
        or _lone_surrogate(text, policy)
    ):
        errs.add("text", f"text must be a non-blank string of at most {MAX_TEXT} characters")
    thread = rec.get("sourceThreadKey")
    if (
        not isinstance(thread, str)
        or not 1 <= utf16_length(thread) <= MAX_THREAD_KEY
        or _lone_surrogate(thread, policy)
    ):
        errs.add("sourceThreadKey", f"sourceThreadKey must be 1-{MAX_THREAD_KEY} characters")
    keywords: tuple[str, ...] | None = None
    if _present(rec, "keywords", policy, errs):
        kws = rec["keywords"]
        if (
            not isinstance(kws, list)
            or len(kws) > MAX_KEYWORDS
            or not all(
                isinstance(k, str)
                and 1 <= utf16_length(k) <= MAX_KEYWORD
                and not _lone_surrogate(k, policy)
                for k in kws
            )
        ):
            errs.add(
                "keywords",
                f"keywords must be at most {MAX_KEYWORDS} strings of 1-{MAX_KEYWORD} characters",
            )
        else:
            keywords = tuple(kws)
    run_id = _opt_str(rec, "sourceRunId", MAX_RUN_ID, policy, errs)
    supersedes = _opt_str(rec, "supersedes", MAX_SUPERSEDES, policy, errs)
    confidence: float | None = None
    if _present(rec, "confidence", policy, errs):
        c = rec["confidence"]
        if isinstance(c, int | float) and not isinstance(c, bool) and 0 <= c <= 1:
            confidence = float(c)
        else:
            errs.add("confidence", "confidence must be a number from 0 to 1")
    if len(errs.items) != before:
        return None
    assert isinstance(kind, str) and isinstance(text, str) and isinstance(thread, str)
    return MemoryCandidate(kind, text, thread, keywords, run_id, confidence, supersedes)


def validate_write(obj: object, policy: Policy = LENIENT) -> WriteBody | WireError:
    """``{scopeKey, records, cap?}`` (MEM-WIRE.9, MEM-WIRE.10, MEM-WIRE.12, MEM-WIRE.13).

    ``records`` is an array of at most 50 candidates, each ``{kind, text, sourceThreadKey,
    keywords?, sourceRunId?, confidence?, supersedes?}`` within the limits; ``cap`` an integer
    1-10000.  A 400 for a record field names that field (``records`` is accepted too).
    """
    if (bad := _not_object(obj)) is not None:
        return bad
    assert isinstance(obj, dict)
    errs = _Errors()
    scope = _scope_key(obj, policy, errs)
    recs = obj.get("records")
    candidates: list[MemoryCandidate] = []
    if not isinstance(recs, list):
        errs.add("records", "records must be an array")
    else:
        if len(recs) > MAX_RECORDS:
            errs.add("records", f"at most {MAX_RECORDS} records per batch")
        for rec in recs:
            cand = _candidate(rec, policy, errs)
            if cand is not None:
                candidates.append(cand)
    cap: int | None = None
    if _present(obj, "cap", policy, errs):
        cap = js_integer(obj["cap"])
        if cap is None or not MIN_CAP <= cap <= MAX_CAP:
            errs.add("cap", f"cap must be an integer {MIN_CAP}-{MAX_CAP}")
            cap = None
    err = errs.result()
    if err is not None:
        record_fields = {"kind", "text", "sourceThreadKey", "keywords", "sourceRunId"}
        record_fields |= {"confidence", "supersedes"}
        if record_fields & set(err.fields) and "records" not in err.fields:
            err = replace(err, fields=(*err.fields, "records"))
        return err
    return WriteBody(scope, tuple(candidates), cap)


def validate_list(obj: object, policy: Policy = LENIENT) -> ListBody | WireError:
    """``{scopeKey, limit, query?}`` (MEM-WIRE.9, MEM-WIRE.14)."""
    if (bad := _not_object(obj)) is not None:
        return bad
    assert isinstance(obj, dict)
    errs = _Errors()
    scope = _scope_key(obj, policy, errs)
    limit = _limit(obj, errs)
    query: str | None = None
    if _present(obj, "query", policy, errs):
        query = _query(obj["query"], errs, policy)
    return errs.result() or ListBody(scope, limit, query)


def validate_forget(obj: object, policy: Policy = LENIENT) -> ForgetBody | WireError:
    """``{scopeKey, id}``; ``id`` 1-200 characters without whitespace or control (MEM-WIRE.9, MEM-WIRE.15)."""
    if (bad := _not_object(obj)) is not None:
        return bad
    assert isinstance(obj, dict)
    errs = _Errors()
    scope = _scope_key(obj, policy, errs)
    rid = obj.get("id")
    if (
        not isinstance(rid, str)
        or not 1 <= utf16_length(rid) <= MAX_FORGET_ID
        or _char_fault(rid, _ID_FORBIDDEN, _ID_OPEN, policy.strict_chars)
    ):
        errs.add("id", f"id must be 1-{MAX_FORGET_ID} characters without whitespace or control")
        rid = ""
    assert isinstance(rid, str)
    return errs.result() or ForgetBody(scope, rid)


# --------------------------------------------------------------------------- allowed answers

_IDENT_CHAR: Final = "A-Za-z0-9_"


def names_field(reason: str, name: str) -> bool:
    """True when ``reason`` mentions ``name`` as a whole word (``id`` is not in ``invalid``)."""
    return (
        re.search(rf"(?<![{_IDENT_CHAR}]){re.escape(name)}(?![{_IDENT_CHAR}])", reason) is not None
    )


@dataclass(frozen=True)
class ExactBody:
    """The body holds every member of ``value`` exactly (JSON equality); other members are
    allowed (``members_differ``)."""

    value: object


@dataclass(frozen=True)
class ErrorBody:
    """``{"error": "<reason>"}``; when ``fields`` is non-empty the reason names one of them."""

    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class HealthBody:
    """``{"ok": true, ...}``: extra fields allowed."""


@dataclass(frozen=True)
class RecordsBody:
    """``{"records": [...]}``: any answer the one judge (``reference.memory.judge``) allows for
    ``route`` over the scope's ``active`` records -- ``listing_problem`` for ``/list``,
    ``retrieval_problem`` at ``now`` for ``/retrieve`` (each record as it was, or all as bumped
    by this retrieval).  ``before`` is the state a retrieve's bump starts from."""

    route: Literal["/retrieve", "/list"]
    scope_key: str
    active: tuple[MemoryRecord, ...] = ()
    query: str | None = None
    limit: int = 0
    now: int = 0
    before: StoreState | None = None


BodySpec = ExactBody | ErrorBody | HealthBody | RecordsBody


@dataclass(frozen=True)
class Option:
    """One legal answer family and the store state that follows it."""

    status: int
    body: BodySpec
    state: StoreState
    note: str = ""


IdMap = Mapping[str, str]


def _id_shape_ok(wire_id: str, scope_key: str) -> bool:
    parsed = parse_record_id(wire_id)
    return parsed is not None and parsed[0] == scope_key


def _shows(
    rec: MemoryRecord, w: Mapping[str, object], *, bumped: bool, id_map: IdMap | None
) -> bool:
    """Does wire record ``w`` show model record ``rec`` (the judge's ``record_problems``, plus
    ids and ``supersedes`` through ``id_map`` when one is given)?"""
    wid = w.get("id")
    if id_map is not None:
        if rec.id in id_map:
            if id_map[rec.id] != wid:
                return False
        elif wid in id_map.values():
            return False
    sup = w.get("supersedes")
    if (sup is None) != (rec.supersedes is None):
        return False
    if (
        rec.supersedes is not None
        and id_map is not None
        and rec.supersedes in id_map
        and sup != id_map[rec.supersedes]
    ):
        return False
    return not record_problems(rec, w, keywords_given=None, bumped=bumped)


def _parse_records_body(body: object, scope_key: str) -> list[Mapping[str, object]] | None:
    if not isinstance(body, dict) or "records" not in body:
        return None
    raw = body["records"]
    if not isinstance(raw, list):
        return None
    out: list[Mapping[str, object]] = []
    for item in raw:
        r = record_from_wire(item)
        if isinstance(r, WireError) or not _id_shape_ok(r.id, scope_key):
            return None
        assert isinstance(item, dict)
        out.append(item)
    if len({str(r["id"]) for r in out}) != len(out):
        return None
    return out


_MAX_ASSIGNMENTS: Final = 64


def _assignments(options: Sequence[Sequence[str]]) -> list[list[str]]:
    """Injective choices of one model id per position (at most ``_MAX_ASSIGNMENTS``)."""
    out: list[list[str]] = []

    def go(i: int, acc: list[str]) -> None:
        if len(out) >= _MAX_ASSIGNMENTS:
            return
        if i == len(options):
            out.append(list(acc))
            return
        for m in options[i]:
            if m not in acc:
                acc.append(m)
                go(i + 1, acc)
                acc.pop()

    go(0, [])
    return out


def match_records(spec: RecordsBody, body: object, id_map: IdMap | None = None) -> list[str] | None:
    """The model ids a records body shows, position by position, or ``None`` if illegal.

    Each wire record is paired with a model record it shows (``_shows``) and the pairing is
    judged by ``judge.listing_problem`` / ``judge.retrieval_problem``.
    """
    wire = _parse_records_body(body, spec.scope_key)
    if wire is None:
        return None
    modes = (True, False) if spec.route == "/retrieve" else (False,)
    for bumped in modes:
        options = [
            [r.id for r in spec.active if _shows(r, w, bumped=bumped, id_map=id_map)] for w in wire
        ]
        for ids in _assignments(options):
            if spec.route == "/list":
                problem = listing_problem(spec.active, spec.query, spec.limit, ids)
            else:
                problem = retrieval_problem(
                    spec.active, spec.query or "", spec.limit, spec.now, ids
                )
            if problem is None:
                return ids
    return None


def _body_admits(spec: BodySpec, body: object, id_map: IdMap | None) -> list[str] | None:
    """``None`` if ``body`` is not admitted; else the matched model ids (``[]`` for non-records)."""
    if isinstance(spec, ExactBody):
        assert isinstance(spec.value, dict)
        return [] if members_differ(spec.value, body) is None else None
    if isinstance(spec, ErrorBody):
        if not isinstance(body, dict) or set(body) != {"error"}:
            return None
        reason = body["error"]
        if not isinstance(reason, str):
            return None
        if spec.fields and not any(names_field(reason, f) for f in spec.fields):
            return None
        return []
    if isinstance(spec, HealthBody):
        return [] if isinstance(body, dict) and body.get("ok") is True else None
    return match_records(spec, body, id_map)


def _describe_body(spec: BodySpec) -> str:
    if isinstance(spec, ExactBody):
        return json.dumps(spec.value, sort_keys=True)
    if isinstance(spec, ErrorBody):
        if spec.fields:
            return '{"error": <reason naming ' + " or ".join(spec.fields) + ">}"
        return '{"error": <reason>}'
    if isinstance(spec, HealthBody):
        return '{"ok": true, ...}'
    if spec.route == "/list":
        want = store_list(
            StoreState(MappingProxyType({spec.scope_key: spec.active})),
            spec.scope_key,
            spec.limit,
            spec.query,
        )
        ids = ", ".join(r.id for r in want)
        return f'{{"records": [{ids}]}} (newest first)'
    groups = rank_allowed(list(spec.active), spec.query or "", spec.limit, spec.now)
    shown = " | ".join("{" + ", ".join(sorted(g)) + "}" for g in groups)
    return f'{{"records": <limit {spec.limit} of tie groups {shown or "-"}>}}'


@dataclass(frozen=True)
class Allowed:
    """Every legal answer to one request (MEM-WIRE.*): a non-empty tuple of ``Option``s."""

    options: tuple[Option, ...]
    now: int = 0

    @property
    def statuses(self) -> frozenset[int]:
        """Every status some option allows."""
        return frozenset(o.status for o in self.options)

    def match(
        self, status: int, body: object, id_map: IdMap | None = None
    ) -> tuple[Option, list[str]] | None:
        """The first option admitting ``(status, body)`` and the model ids it showed."""
        for o in self.options:
            if o.status != status:
                continue
            ids = _body_admits(o.body, body, id_map)
            if ids is not None:
                return o, ids
        return None

    def admits(self, status: int, body: object, id_map: IdMap | None = None) -> bool:
        """True when a conforming Worker may answer ``status`` with JSON ``body``."""
        return self.match(status, body, id_map) is not None

    def next_state(
        self, status: int, body: object, id_map: IdMap | None = None
    ) -> StoreState | None:
        """The store state after the target answered ``(status, body)``; ``None`` if illegal.

        For ``/retrieve`` the records the target returned are the ones bumped.
        """
        m = self.match(status, body, id_map)
        if m is None:
            return None
        option, ids = m
        spec = option.body
        if isinstance(spec, RecordsBody) and spec.route == "/retrieve" and spec.before is not None:
            return bump_usage(spec.before, spec.scope_key, ids, self.now)
        return option.state

    def describe(self) -> str:
        """One line per option: ``<status> <body>`` and why it is allowed."""
        lines = []
        for o in self.options:
            note = f"  ({o.note})" if o.note else ""
            lines.append(f"{o.status} {_describe_body(o.body)}{note}")
        return "\n".join(lines)


def _error(state: StoreState, status: int, note: str, fields: tuple[str, ...] = ()) -> Option:
    return Option(status, ErrorBody(fields), state, note)


def _only(option: Option, now: int) -> Allowed:
    return Allowed((option,), now)


def _process(state: StoreState, route: str, parsed: object, now: int, cap_default: int) -> Option:
    if isinstance(parsed, RetrieveBody):
        active = tuple(active_records(state, parsed.scope_key))
        # The option's state is the model's own pick (``store_retrieve``); ``next_state`` bumps
        # exactly the records the target returned, starting from ``before``.
        after, _ = store_retrieve(state, parsed.scope_key, parsed.query, parsed.limit, now)
        spec = RecordsBody(
            "/retrieve",
            parsed.scope_key,
            active=active,
            query=parsed.query,
            limit=parsed.limit,
            now=now,
            before=state,
        )
        return Option(200, spec, after, "ranked retrieval (any order within a tie)")
    if isinstance(parsed, WriteBody):
        cap = parsed.cap if parsed.cap is not None else cap_default
        after, res = store_write(state, parsed.scope_key, parsed.candidates, now, cap)
        return Option(200, ExactBody(write_response(res)), after, "write batch")
    if isinstance(parsed, ListBody):
        spec = RecordsBody(
            "/list",
            parsed.scope_key,
            active=tuple(active_records(state, parsed.scope_key)),
            query=parsed.query,
            limit=parsed.limit,
            now=now,
        )
        return Option(200, spec, state, "newest first")
    assert isinstance(parsed, ForgetBody)
    after, forgotten = store_forget(state, parsed.scope_key, parsed.id)
    return Option(200, ExactBody({"ok": True, "forgotten": forgotten}), after, "forget")


def write_response(result: WriteResult) -> dict[str, object]:
    """``{"ok": true, "inserted", "deduped", "superseded", "evicted"}`` (MEM-WIRE.13)."""
    return {
        "ok": True,
        "inserted": result.inserted,
        "deduped": result.deduped,
        "superseded": result.superseded,
        "evicted": result.evicted,
    }


_VALIDATORS: Final[dict[str, Callable[[object, Policy], object]]] = {
    "/retrieve": validate_retrieve,
    "/write": validate_write,
    "/list": validate_list,
    "/forget": validate_forget,
}


def content_length_fault(value: str | None) -> int | None:
    """411, 413 or ``None`` for a Content-Length header value (MEM-WIRE.5, MEM-WIRE.6).

    Only a plain ASCII digit string (leading zeros allowed) declares a length; absent, blank
    or any other form (``0x10``, ``5e2``, ``12.5``, ``+5``) is 411.  A declared length
    over ``MAX_BODY_BYTES`` is 413.
    """
    if value is None or not _DIGITS.fullmatch(value):
        return 411
    return 413 if int(value) > MAX_BODY_BYTES else None


def authorized(request: WireRequest, token: str | None) -> bool:
    """``Authorization`` is exactly ``Bearer <token>`` and the server token is set (MEM-WIRE.3)."""
    if not token:
        return False
    return request.header("Authorization") == f"Bearer {token}"


def _decodings(body: bytes) -> list[tuple[str | None, str]]:
    """(text or None for "400", note) per implementation-defined way to read the bytes."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        lenient = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
        return [(None, "body is not valid UTF-8: 400"), (lenient, "decoded with U+FFFD")]
    if text.startswith("\ufeff"):
        return [(None, "body starts with a BOM: 400"), (text[1:], "BOM skipped")]
    return [(text, "")]


def worker_respond(
    state: StoreState,
    request: WireRequest,
    now: int,
    token: str | None,
    cap_default: int = DEFAULT_SCOPE_CAP,
) -> tuple[StoreState, Allowed]:
    """What a conforming Memory Worker may answer, and the state after (MEM-WIRE.1-16).

    Checks in order: unknown path 404; wrong method 405 (``GET /healthz``, ``POST`` data
    routes); missing or wrong bearer, or no server token, 401; Content-Length 411/413 before
    the body is read; body not JSON / not an object / a field rule 400 naming the field;
    otherwise 200 with the store model's answer.  The returned state is the first option's;
    when the target may pick among options use ``Allowed.next_state``.
    """
    route = request.route
    if route != HEALTH_ROUTE and route not in DATA_ROUTES:
        return state, _only(_error(state, 404, "unknown path"), now)
    if route == HEALTH_ROUTE:
        if request.method != "GET":
            # §15: "Everything else is 404; non-POST is 405" — a POST is not non-POST, so 404
            # is the literal reading for POST /healthz; 405 (GET only) is read as well, for
            # every method but GET (MEM-WIRE.2).
            return state, Allowed(
                (
                    _error(state, 405, "/healthz is GET only"),
                    _error(state, 404, "/healthz serves GET only (404: everything else)"),
                ),
                now,
            )
        return state, _only(Option(200, HealthBody(), state, "health check"), now)
    if request.method != "POST":
        return state, _only(_error(state, 405, "data routes are POST only"), now)
    if not authorized(request, token):
        return state, _only(_error(state, 401, "bearer missing or wrong"), now)
    fault = content_length_fault(request.header("Content-Length"))
    if (
        fault == 411
        and request.header("Content-Length") is None
        and request.header("Transfer-Encoding") is None
        and not request.body
    ):
        # A bodiless POST with no length: an edge stamps ``Content-Length: 0`` on it, so the
        # store reads an empty body (400) — or it arrives as sent (411).  MEM-WIRE.5.
        return state, Allowed(
            (
                _error(state, 411, "no Content-Length"),
                _error(state, 400, "empty body (the edge stamped Content-Length: 0)"),
            ),
            now,
        )
    if fault is not None:
        note = "Content-Length not a digit string" if fault == 411 else "body over 512 KiB"
        return state, _only(_error(state, fault, note), now)
    options: list[Option] = []
    for text, note in _decodings(request.body):
        if text is None:
            options.append(_error(state, 400, note))
            continue
        try:
            obj = parse_json(text)
        except (ValueError, RecursionError):
            options.append(_error(state, 400, "body is not JSON"))
            continue
        validate = _VALIDATORS[route]
        lenient = validate(obj, LENIENT)
        strict = validate(obj, STRICT)
        if isinstance(lenient, WireError):
            assert isinstance(strict, WireError)
            fields = strict.fields if strict.field is not None else ()
            options.append(_error(state, 400, strict.reason, fields))
            continue
        options.append(_process(state, route, lenient, now, cap_default))
        if isinstance(lenient, WriteBody) and not lenient.candidates:
            # An empty batch may be a pure no-op even when its cap is below the active count
            # (MEM-CAP.1): nothing evicted, nothing changed.
            noop = write_response(WriteResult(0, 0, 0, 0))
            options.append(Option(200, ExactBody(noop), state, "empty batch as a no-op"))
        if isinstance(strict, WireError):
            options.append(_error(state, 400, "implementation-defined rejection", strict.fields))
    # Strict choices first so that the primary state is the conservative one.
    options.sort(key=lambda o: 0 if o.status == 400 else 1)
    deduped: list[Option] = []
    for o in options:
        if not any(d.status == o.status and d.body == o.body for d in deduped):
            deduped.append(o)
    return deduped[0].state, Allowed(tuple(deduped), now)


# --------------------------------------------------------------------------- the client side

CLIENT_TIMEOUT_MS: Final = 5000
DEFAULT_TOKEN_ENV: Final = "MEMORY_TOKEN"


@dataclass(frozen=True)
class ClientRead:
    """What ``WorkerMemoryStore.retrieve`` hands the read path (MEM-CLIENT.1).

    ``warning`` is the one ``[memory]`` line of a degraded read (``None`` when it was fine).
    """

    records: tuple[MemoryRecord, ...]
    warning: str | None = None


@dataclass(frozen=True)
class ClientFailure:
    """A write, list or forget that throws (MEM-CLIENT.2, MEM-CLIENT.3)."""

    message: str


def _records_of(status: int | None, body: bytes | None) -> tuple[MemoryRecord, ...] | str:
    if status is None:
        return "transport error or timeout"
    if not 200 <= status <= 299:
        return f"HTTP {status}"
    try:
        obj = parse_json((body or b"").decode("utf-8"))
    except (ValueError, RecursionError):
        return f"HTTP {status} with a body that is not JSON"
    if not isinstance(obj, dict) or not isinstance(obj.get("records"), list):
        return f"HTTP {status} without a records array"
    parsed = (record_from_wire(x) for x in obj["records"])
    return tuple(r for r in parsed if isinstance(r, MemoryRecord))


def client_retrieve(status: int | None, body: bytes | None) -> ClientRead:
    """The bot's reading of a ``/retrieve`` answer (MEM-CLIENT.1).

    ``status`` ``None`` stands for a transport error or the 5 s timeout.  Anything but a 2xx
    JSON object with a ``records`` array degrades to no records and one warning; malformed
    records (``record_from_wire`` fails) are dropped one by one without failing the rest.
    """
    got = _records_of(status, body)
    if isinstance(got, str):
        return ClientRead((), f"[memory] retrieve degraded to no records: {got}")
    return ClientRead(got)


def client_list(status: int | None, body: bytes | None) -> tuple[MemoryRecord, ...] | ClientFailure:
    """The bot's reading of a ``/list`` answer: a failure throws, never an empty list (MEM-CLIENT.3)."""
    got = _records_of(status, body)
    if isinstance(got, str):
        return ClientFailure(f"memory list failed: {got}")
    return got


def client_forget(status: int | None, body: bytes | None) -> bool | ClientFailure:
    """The bot's reading of a ``/forget`` answer (MEM-CLIENT.3)."""
    if status is None or not 200 <= status <= 299:
        return ClientFailure(f"memory forget failed: {status or 'transport error'}")
    try:
        obj = parse_json((body or b"").decode("utf-8"))
    except (ValueError, RecursionError):
        return ClientFailure("memory forget failed: body is not JSON")
    if not isinstance(obj, dict) or not isinstance(obj.get("forgotten"), bool):
        return ClientFailure("memory forget failed: no forgotten flag")
    return bool(obj["forgotten"])


def client_write_request(
    scope_key: str, candidates: Sequence[MemoryCandidate], cap: int | None
) -> dict[str, object] | None:
    """The ``/write`` body the bot sends, or ``None``: an empty batch skips the round trip.

    ``cap`` is sent when configured and omitted otherwise (MEM-CLIENT.2, MEM-CLIENT.5).
    Candidate optional fields that are unset are omitted, never ``null``.
    """
    if not candidates:
        return None
    records: list[dict[str, object]] = []
    for c in candidates:
        rec: dict[str, object] = {
            "kind": c.kind,
            "text": c.text,
            "sourceThreadKey": c.source_thread_key,
        }
        if c.keywords is not None:
            rec["keywords"] = list(c.keywords)
        if c.source_run_id is not None:
            rec["sourceRunId"] = c.source_run_id
        if c.confidence is not None:
            rec["confidence"] = c.confidence
        if c.supersedes is not None:
            rec["supersedes"] = c.supersedes
        records.append(rec)
    out: dict[str, object] = {"scopeKey": scope_key, "records": records}
    if cap is not None:
        out["cap"] = cap
    return out


def client_write(status: int | None, body: bytes | None) -> None | ClientFailure:
    """A write's outcome: ``None`` on a 2xx, else a failure naming status and error (MEM-CLIENT.2)."""
    if status is not None and 200 <= status <= 299:
        return None
    reason = ""
    try:
        obj = parse_json((body or b"").decode("utf-8"))
        if isinstance(obj, dict) and isinstance(obj.get("error"), str):
            reason = f": {obj['error']}"
    except (ValueError, RecursionError):
        pass
    return ClientFailure(f"memory write failed: {status or 'transport error'}{reason}")


def client_list_request(scope_key: str, limit: int, query: str | None) -> dict[str, object]:
    """The ``/list`` body: ``query`` only when a filter was given (MEM-CLIENT.3)."""
    out: dict[str, object] = {"scopeKey": scope_key, "limit": limit}
    if query is not None:
        out["query"] = query
    return out


StoreKind = Literal["none", "worker", "in_process"]


@dataclass(frozen=True)
class StoreChoice:
    """Which store the bot runs on, and the start-up warning if any (MEM-CLIENT.4)."""

    kind: StoreKind
    cap: int
    warnings: tuple[str, ...] = ()


def validate_cap_config(value: object) -> tuple[int, str | None]:
    """``memory.maxRecordsPerScope``: an integer 1-10000, else the default and a warning.

    Absent (``None``) is the default without a warning; 0, negatives, fractions, NaN,
    booleans, strings and values over 10000 warn naming the key and the default (MEM-CLIENT.5).
    """
    if value is None:
        return DEFAULT_SCOPE_CAP, None
    n = js_integer(value)
    if n is None or not MIN_CAP <= n <= MAX_CAP:
        return DEFAULT_SCOPE_CAP, (
            f"[memory] memory.maxRecordsPerScope must be an integer {MIN_CAP}-{MAX_CAP};"
            f" using the default {DEFAULT_SCOPE_CAP}"
        )
    return n, None


def select_store(
    *,
    enabled: bool,
    worker_base_url: str | None,
    token_env: str | None,
    env: Mapping[str, str],
    max_records_per_scope: object = None,
) -> StoreChoice:
    """Start-up store selection (MEM-CLIENT.4, MEM-CLIENT.5).

    Disabled: no store (the null store serves).  A worker URL and a non-empty bearer in
    ``env[token_env or MEMORY_TOKEN]``: the Worker client.  Otherwise the in-process store and
    a warning that names the restart loss and what is missing.  The cap is validated once and
    handed to whichever store is built.
    """
    if not enabled:
        return StoreChoice("none", DEFAULT_SCOPE_CAP)
    cap, cap_warning = validate_cap_config(max_records_per_scope)
    warnings = [cap_warning] if cap_warning else []
    var = token_env or DEFAULT_TOKEN_ENV
    if worker_base_url and env.get(var):
        return StoreChoice("worker", cap, tuple(warnings))
    missing = "memory.worker.baseUrl" if not worker_base_url else f"the {var} environment variable"
    warnings.append(
        f"[memory] using the in-process store: records are lost on restart ({missing} is not set)"
    )
    return StoreChoice("in_process", cap, tuple(warnings))
