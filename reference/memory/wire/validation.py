"""Request bodies: the field rules of each data route, under either allowed policy.

MEM-WIRE.9 (scope keys), MEM-WIRE.10 (JSON values, and the implementation-defined choices a
:class:`Policy` names), MEM-WIRE.11 to MEM-WIRE.15 (each route's body).  A fault is a
:class:`~reference.memory.wire.codec.WireError` naming every offending field.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Final

from reference.jsonvalues import js_integer, js_trim
from reference.memory.budget import utf16_length
from reference.memory.records import KINDS, MemoryCandidate
from reference.memory.wire.codec import WireError
from reference.memory.wire.request import (
    MAX_CAP,
    MAX_FORGET_ID,
    MAX_KEYWORD,
    MAX_KEYWORDS,
    MAX_LIMIT,
    MAX_QUERY,
    MAX_RECORDS,
    MAX_RUN_ID,
    MAX_SCOPE_KEY,
    MAX_SUPERSEDES,
    MAX_TEXT,
    MAX_THREAD_KEY,
    MIN_CAP,
    MIN_LIMIT,
)

# Characters a scope key may never hold (whitespace, control, format) and the ones whose
# treatment is implementation-defined (surrogates, private use, unassigned).
_KEY_FORBIDDEN: Final = frozenset({"Cc", "Zs", "Zl", "Zp"})
_KEY_REFERENCE: Final = frozenset({"Cf"})  # refused by the reference Worker (MEM-WIRE.21)
_ID_FORBIDDEN: Final = frozenset({"Cc", "Zs", "Zl", "Zp"})
_KEY_OPEN: Final = frozenset({"Cs", "Co", "Cn"})
_ID_OPEN: Final = frozenset({"Cf", "Cs", "Co", "Cn"})


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
    """The faults found in one body, in the order found."""

    def __init__(self) -> None:
        """No fault yet."""
        self.items: list[tuple[str, str]] = []
        self.seed_faults = 0  # faults that break what the seed itself says

    def add(self, name: str, reason: str, *, reference: bool = False) -> None:
        """Note a fault of field ``name``; ``reference``: it breaks only a bound the seed does
        not give (MEM-WIRE.21)."""
        self.items.append((name, reason))
        if not reference:
            self.seed_faults += 1

    def result(self) -> WireError | None:
        """The faults as one ``WireError`` naming every field (MEM-WIRE.8), or ``None``."""
        if not self.items:
            return None
        names = tuple(dict.fromkeys(n for n, _ in self.items))
        return WireError(names[0], self.items[0][1], names, self.seed_faults == 0)


@lru_cache(maxsize=1024)
def _char_fault(s: str, forbidden: frozenset[str], open_: frozenset[str], strict: bool) -> bool:
    """A character whose category is forbidden, or open and refused under the strict policy
    (MEM-WIRE.9, MEM-WIRE.15).  Memoized per argument values (a pure function; a run sends one
    scope key many times)."""
    for c in set(s):  # each distinct character once (a key repeats most of its characters)
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
    """``scopeKey``: a string of 1-200 code units without whitespace, control or format characters
    (MEM-WIRE.9)."""
    v = obj.get("scopeKey")
    if not isinstance(v, str):
        errs.add("scopeKey", "scopeKey must be a string")
        return ""
    if not 1 <= utf16_length(v) <= MAX_SCOPE_KEY:
        errs.add("scopeKey", f"scopeKey must be 1-{MAX_SCOPE_KEY} characters")
    elif _char_fault(v, _KEY_FORBIDDEN, _KEY_OPEN, policy.strict_chars):
        errs.add("scopeKey", "scopeKey must not contain whitespace, control or format characters")
    elif _char_fault(v, _KEY_REFERENCE, frozenset(), False):
        errs.add(
            "scopeKey",
            "scopeKey must not contain whitespace, control or format characters",
            reference=True,
        )
    return v


def _limit(obj: Mapping[str, object], errs: _Errors) -> int:
    """``limit``: an integer 1-50 (MEM-WIRE.10, MEM-WIRE.11, MEM-WIRE.14)."""
    v = js_integer(obj.get("limit"))
    if v is None or not MIN_LIMIT <= v <= MAX_LIMIT:
        errs.add("limit", f"limit must be an integer {MIN_LIMIT}-{MAX_LIMIT}")
        return 0
    return v


def _lone_surrogate(v: object, policy: Policy) -> bool:
    """A lone surrogate (not Unicode text) in a string, refused under the strict policy
    (MEM-WIRE.10: implementation-defined whether a string field holding one is refused)."""
    return (
        policy.strict_chars
        and isinstance(v, str)
        and not v.isascii()  # (ASCII holds no surrogate)
        and any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    )


def _query(v: object, errs: _Errors, policy: Policy = LENIENT) -> str:
    """``query``: a string of at most 4000 code units (MEM-WIRE.11, MEM-WIRE.14)."""
    if not isinstance(v, str) or utf16_length(v) > MAX_QUERY or _lone_surrogate(v, policy):
        errs.add("query", f"query must be a string of at most {MAX_QUERY} characters")
        return ""
    return v


def _not_object(obj: object) -> WireError | None:
    """A body that is not one JSON object (MEM-WIRE.7)."""
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
    """An optional string field within ``max_units`` code units (MEM-WIRE.12; the bound is
    MEM-WIRE.21's: §16 gives none)."""
    if not _present(rec, name, policy, errs):
        return None
    v = rec[name]
    if not isinstance(v, str) or _lone_surrogate(v, policy):
        errs.add(name, f"{name} must be a string of at most {max_units} characters")
        return None
    if utf16_length(v) > max_units:
        errs.add(name, f"{name} must be a string of at most {max_units} characters", reference=True)
        return None
    return v


def _candidate(rec: object, policy: Policy, errs: _Errors) -> MemoryCandidate | None:
    """One ``/write`` record as a candidate, or ``None`` with its faults noted (MEM-WIRE.12)."""
    if not isinstance(rec, dict):
        errs.add("records", "every record must be an object")
        return None
    before = len(errs.items)
    kind = rec.get("kind")
    if kind not in KINDS:
        errs.add("kind", "kind must be fact or summary")
    text = rec.get("text")
    why = f"text must be a non-blank string of at most {MAX_TEXT} characters"
    if (
        not isinstance(text, str)
        or not text
        or utf16_length(text) > MAX_TEXT
        or _lone_surrogate(text, policy)
    ):
        errs.add("text", why)
    elif not js_trim(text):  # §16 says "non-empty": blank is the reference's (MEM-WIRE.21)
        errs.add("text", why, reference=True)
    thread = rec.get("sourceThreadKey")
    why = f"sourceThreadKey must be 1-{MAX_THREAD_KEY} characters"
    if not isinstance(thread, str) or _lone_surrogate(thread, policy):
        errs.add("sourceThreadKey", why)
    elif not 1 <= utf16_length(thread) <= MAX_THREAD_KEY:  # §16 gives no bound: MEM-WIRE.21
        errs.add("sourceThreadKey", why, reference=True)
    keywords: tuple[str, ...] | None = None
    if _present(rec, "keywords", policy, errs):
        kws = rec["keywords"]
        why = f"keywords must be at most {MAX_KEYWORDS} strings of 1-{MAX_KEYWORD} characters"
        if (
            not isinstance(kws, list)
            or len(kws) > MAX_KEYWORDS
            or not all(isinstance(k, str) and not _lone_surrogate(k, policy) for k in kws)
        ):
            errs.add("keywords", why)
        elif not all(1 <= utf16_length(k) <= MAX_KEYWORD for k in kws):
            # §16's "short strings" has no number: 1-64 is the reference's (MEM-WIRE.21)
            errs.add("keywords", why, reference=True)
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
    """``{scopeKey, id}``; ``id`` 1-200 characters without whitespace or control (MEM-WIRE.9,
    MEM-WIRE.15)."""
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


# --------------------------------------------------------------------------- tighter caps

#: MEM-WIRE.21: §16 caps ``sourceThreadKey``, ``sourceRunId``, ``supersedes`` and each keyword
#: ("size caps", "short strings") without a number; the reference's are 200 and 64.  A store
#: may cap them tighter, but never below these floors (UTF-16 code units): a value at most this
#: long must be accepted.
CAP_FLOORS: Final = {"sourceThreadKey": 64, "sourceRunId": 64, "supersedes": 64, "keywords": 32}


def over_cap_floor(obj: object) -> dict[str, int]:
    """The fields of a ``/write`` body holding a value longer than its floor (:data:`CAP_FLOORS`;
    for ``keywords``, a keyword), each with the longest such value's length: what a store with
    tighter caps than the reference's may refuse the batch for (MEM-WIRE.21)."""
    over: dict[str, int] = {}
    recs = obj.get("records") if isinstance(obj, dict) else None
    for rec in recs if isinstance(recs, list) else ():
        if not isinstance(rec, dict):
            continue
        for name, floor in CAP_FLOORS.items():
            value = rec.get(name)
            values = value if name == "keywords" and isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, str) and utf16_length(v) > floor:
                    over[name] = max(over.get(name, 0), utf16_length(v))
    return over
