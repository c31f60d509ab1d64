"""The engine binding's functions: name, clauses, the reference behind it, what is allowed.

Every entry of :data:`FUNCTIONS` is one pure function of ``specs/engine-binding.md``:

* ``call(args)`` -- the reference model behind the binding (what ``conformance.engine_host``
  answers); it raises :class:`Refused` where the function refuses its input;
* ``judge(args)`` -- every allowed outcome (the open points of the seed accepted, each named in
  the vector's comment), or a checker where the set is too large to list;
* ``strategy`` -- Hypothesis arguments for the sample and the properties;
* ``boundaries`` -- the hand-picked vectors: ``(comment, args)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from conformance.binding.codec import (
    ArgError,
    candidate,
    candidate_json,
    ledger_records,
    memory_record,
    memory_record_json,
    memory_records,
)
from conformance.binding.judge import THROWS, Judged, ok
from reference.ledger.credentials import credential_verdict
from reference.ledger.intervals import interval_contains, list_as_of
from reference.ledger.packet import build_packet, packet_rank
from reference.ledger.records import LedgerState
from reference.memory.budget import apply_budget, estimate_tokens
from reference.memory.commands import Allowed as GateAllowed
from reference.memory.commands import (
    ForgetCommand,
    ListCommand,
    UsageError,
    forget_gate,
    parse_memory_command,
    render_list_line,
)
from reference.memory.containment import (
    memory_prefix_line,
    render_bullet,
    render_memory_block,
    sanitize_memory_field,
)
from reference.memory.engine import (
    Dedup,
    WritePlan,
    eviction_key,
    mint_record,
    normalize_text,
    plan_eviction,
    plan_write,
    rank_records,
)
from reference.memory.pool import memory_context_block, pool_records
from reference.memory.records import ACTIVE
from reference.memory.reflection import parse_reflection, redact_secrets, should_reflect
from reference.memory.scopes import ScopeError, derive_scope_key, list_scope_keys
from reference.memory.scoring import keyword_match, recency_score, score_record, tokenize

JSON = Any
Args = dict[str, JSON]


class Refused(Exception):
    """The function refuses its input (the binding's ``{"error": "refused: …"}``)."""


@dataclass(frozen=True)
class Fn:
    name: str
    spec: str
    clauses: tuple[str, ...]
    summary: str
    call: Callable[[Args], JSON]
    judge: Callable[[Args], Judged]
    strategy: st.SearchStrategy[Args]
    boundaries: Callable[[], list[tuple[str, Args]]]


def outcome_of(call: Callable[[Args], JSON], args: Args) -> JSON:
    """Run a reference function: ``{"ok": value}`` or ``{"throws": true}``."""
    try:
        return ok(call(args))
    except Refused:
        return THROWS


def _exact(call: Callable[[Args], JSON]) -> Callable[[Args], Judged]:
    return lambda args: Judged([outcome_of(call, args)])


# --------------------------------------------------------------------------- strategies

NOW = 1_760_000_000_000
DAY = 86_400_000
WORDS = (
    "deploy",
    "deploys",
    "friday",
    "staging",
    "db",
    "a",
    "alpha",
    "Alpha",
    "CI",
    "x1",
    "2fa",
    "caf\u00e9",
    "na\u00efve",
    "cafe\u0301",
    "\u043a\u043b\u044e\u0447",
    "\u03a9mega",
    "\u65e5\u672c",
    "\U0001f600",
    "\U0001d400bc",
    "a&b",
    "<tag>",
    "&amp;",
    "x>y",
)
SEPARATORS = (" ", " ", "  ", "\t", "\n", "-", ".", ", ", "\u00a0", "\u2028", "\x00", "\x7f")

words = st.sampled_from(WORDS)
texts = st.builds(
    lambda ws, seps: "".join(w + s for w, s in zip(ws, seps, strict=False)).strip(" "),
    st.lists(words, min_size=1, max_size=6),
    st.lists(st.sampled_from(SEPARATORS), min_size=6, max_size=6),
)
any_text = st.one_of(texts, st.text(max_size=12), st.sampled_from(("", " ", "\t\n", "   ")))
ages = st.one_of(
    st.integers(min_value=-2, max_value=30), st.integers(min_value=0, max_value=3)
).map(lambda d: NOW - d * DAY)
long_texts = st.builds(lambda w, n: " ".join([w] * n), words, st.integers(8, 60))


@st.composite
def _memory_record(draw: st.DrawFn, rid: str, scope: str = "org:acme") -> JSON:
    created = draw(ages)
    rec: dict[str, JSON] = {
        "id": rid,
        "scopeKey": scope,
        "kind": draw(st.sampled_from(("fact", "summary"))),
        "text": draw(st.one_of(texts, texts, long_texts)),
        "keywords": draw(st.lists(words, max_size=2)),
        "sourceThreadKey": draw(st.sampled_from(("t:1", "slack:C1/1700.1", "t<&>"))),
        "createdAt": created,
        "useCount": draw(st.integers(0, 3)),
        "status": ACTIVE,
    }
    if draw(st.booleans()):
        rec["lastUsedAt"] = created + draw(st.integers(0, 2)) * DAY
    return rec


@st.composite
def _memory_list(draw: st.DrawFn, max_size: int = 6, scope: str = "org:acme") -> list[JSON]:
    n = draw(st.integers(0, max_size))
    return [draw(_memory_record(f"mem:{scope}:{i + 1}", scope)) for i in range(n)]


queries = st.one_of(texts, st.sampled_from(("", "   ", "!!!", "deploy deploy friday")))
limits = st.integers(min_value=-1, max_value=8)


# --------------------------------------------------------------------------- scoring


def _tokenize(a: Args) -> JSON:
    return tokenize(a["text"])


def _normalize(a: Args) -> JSON:
    return normalize_text(a["text"])


def _keyword_match(a: Args) -> JSON:
    return keyword_match(a["query"], memory_record(a["record"]))


def _recency(a: Args) -> JSON:
    return recency_score(memory_record(a["record"]), int(a["now"]))


def _score(a: Args) -> JSON:
    return score_record(a["query"], memory_record(a["record"]), int(a["now"]))


def _rank(a: Args) -> JSON:
    recs = memory_records(a["records"])
    return [r.id for r in rank_records(recs, a["query"], int(a["limit"]), int(a["now"]))]


def _rank_judge(a: Args) -> Judged:
    """Ties in any order, and any of them where the limit cuts through (MEM-SCORE.5)."""
    recs = memory_records(a["records"])
    query, now, limit = a["query"], int(a["now"]), int(a["limit"])
    hits = [r for r in recs if tokenize(query) and keyword_match(query, r) > 0]
    by_score: dict[float, list[str]] = {}
    for r in hits:
        by_score.setdefault(score_record(query, r, now), []).append(r.id)
    groups = [by_score[s] for s in sorted(by_score, reverse=True)]
    length = min(max(limit, 0), len(hits))
    ref = ok(_rank(a))
    return Judged([ref], {"name": "tie_groups", "groups": groups, "length": length})


def _record_args(record: JSON, **extra: JSON) -> Args:
    return {"record": record, **extra}


def _rec(rid: str = "mem:org:acme:1", text: str = "deploy on friday", **kw: JSON) -> JSON:
    out: dict[str, JSON] = {
        "id": rid,
        "scopeKey": "org:acme",
        "kind": "fact",
        "text": text,
        "keywords": [],
        "sourceThreadKey": "t:1",
        "createdAt": NOW,
        "useCount": 0,
        "status": "active",
    }
    out.update(kw)
    return out


def _text_boundaries() -> list[tuple[str, Args]]:
    return [
        ("empty text", {"text": ""}),
        ("whitespace only", {"text": " \t\n\u00a0\u3000"}),
        ("ASCII letters and digits, mixed case", {"text": "Deploy2Prod ON Friday"}),
        ("punctuation splits tokens", {"text": "a.b,c-d_e/f"}),
        ("non-ASCII letters are not token characters", {"text": "caf\u00e9 na\u00efve"}),
        ("combining mark after e", {"text": "cafe\u0301 ok"}),
        ("astral characters", {"text": "\U0001f600deploy\U0001d400x"}),
        ("controls inside a word", {"text": "de\x00ploy\x7f"}),
        ("escape metacharacters", {"text": "a&amp;<b>&lt;"}),
        ("repeats kept", {"text": "db db DB"}),
        ("fullwidth digits are not ASCII", {"text": "\uff11\uff12 12"}),
        (
            "Kelvin sign lower-cases to k (Unicode case mapping; letters outside ASCII "
            "never become tokens)",
            {"text": "\u212aelvin"},
        ),
        ("long text", {"text": "word " * 800}),
    ]


def _normalize_boundaries() -> list[tuple[str, Args]]:
    return [
        *_text_boundaries(),
        ("JS whitespace: U+FEFF and U+2028 collapse", {"text": "a\ufeff\u2028b"}),
        ("U+001C is not JS whitespace: kept", {"text": "a\x1cb"}),
        ("U+0085 is not JS whitespace: kept", {"text": "a\x85b"}),
        ("punctuation kept", {"text": "Deploys, Friday!"}),
        ("trailing and leading runs trimmed", {"text": "  \t A  B \n"}),
    ]


def _km_boundaries() -> list[tuple[str, Args]]:
    return [
        ("whole token, never substring", _record_args(_rec(text="alpha"), query="a")),
        ("query without tokens", _record_args(_rec(), query="!!!")),
        ("empty query", _record_args(_rec(), query="")),
        ("repeats counted", _record_args(_rec(text="db"), query="db db x")),
        ("case-insensitive", _record_args(_rec(text="Deploy"), query="DEPLOY")),
        ("keyword tokens count", _record_args(_rec(text="x", keywords=["Staging-DB"]), query="db")),
        ("half hit", _record_args(_rec(text="deploy"), query="deploy friday")),
        ("astral around a token", _record_args(_rec(text="\U0001f600db\U0001f600"), query="db")),
    ]


def _rec_boundaries() -> list[tuple[str, Args]]:
    week = 7 * DAY
    return [
        ("age zero", _record_args(_rec(createdAt=NOW), now=NOW)),
        ("one time constant", _record_args(_rec(createdAt=NOW - week), now=NOW)),
        (
            "lastUsedAt wins over createdAt",
            _record_args(_rec(createdAt=0, lastUsedAt=NOW), now=NOW),
        ),
        ("future timestamp clamps to 1", _record_args(_rec(createdAt=NOW + DAY), now=NOW)),
        ("very old", _record_args(_rec(createdAt=0), now=NOW)),
        ("one millisecond", _record_args(_rec(createdAt=NOW - 1), now=NOW)),
    ]


def _score_boundaries() -> list[tuple[str, Args]]:
    return [
        ("full hit, fresh", _record_args(_rec(), query="deploy friday", now=NOW)),
        ("no hit still scores recency", _record_args(_rec(), query="zzz", now=NOW)),
        (
            "hit on an old record used recently",
            _record_args(_rec(createdAt=0, lastUsedAt=NOW - DAY), query="deploy", now=NOW),
        ),
    ]


def _rank_boundaries() -> list[tuple[str, Args]]:
    a = _rec("mem:org:acme:1", "deploy friday", createdAt=NOW - DAY)
    b = _rec("mem:org:acme:2", "deploy", createdAt=NOW)
    c = _rec("mem:org:acme:3", "deploy", createdAt=NOW)
    d = _rec("mem:org:acme:4", "alpha", createdAt=NOW)
    e = _rec("mem:org:acme:5", "friday deploy", createdAt=NOW - DAY, lastUsedAt=NOW)
    return [
        ("gate: only records the query hits", {"records": [d, b], "query": "deploy", "limit": 8}),
        ("ties in any order", {"records": [b, c], "query": "deploy", "limit": 8, "now": NOW}),
        ("limit cuts through a tie", {"records": [b, c], "query": "deploy", "limit": 1}),
        ("limit zero", {"records": [a, b], "query": "deploy", "limit": 0}),
        ("negative limit", {"records": [a, b], "query": "deploy", "limit": -1}),
        ("query without tokens", {"records": [a, b], "query": "...", "limit": 8}),
        ("substring never hits", {"records": [d], "query": "a", "limit": 8}),
        ("recency decides equal matches", {"records": [a, e], "query": "deploy", "limit": 8}),
        ("empty input", {"records": [], "query": "deploy", "limit": 8}),
    ]


def _with_now(cases: list[tuple[str, Args]]) -> list[tuple[str, Args]]:
    return [(c, {**a, "now": a.get("now", NOW)}) for c, a in cases]


# --------------------------------------------------------------------------- writing


def _plan_json(plan: WritePlan) -> JSON:
    if isinstance(plan, Dedup):
        return {"action": "dedup", "id": plan.target_id}
    return {"action": "insert", "supersedes": plan.supersede_id}


def _plan_write(a: Args) -> JSON:
    return _plan_json(plan_write(memory_records(a["active"]), candidate(a["candidate"])))


def _mint(a: Args) -> JSON:
    rec = mint_record(candidate(a["candidate"]), a["scopeKey"], a["id"], int(a["now"]))
    return memory_record_json(rec)


def _mint_judge(a: Args) -> Judged:
    """``supersedes: ""`` is stored absent or as ``""`` (open point); a candidate without
    keywords may be stored with any keywords whose tokens are the text's (MEM-RECORD.5)."""
    ref = _mint(a)
    allowed = [ok(ref)]
    notes = []
    if a["candidate"].get("supersedes") == "":
        allowed.append(ok({**ref, "supersedes": ""}))
        notes.append('supersedes "" stored absent or as ""')
    if a["candidate"].get("keywords") is None:
        return Judged(allowed, {"name": "mint_keywords"}, notes)
    return Judged(allowed, None, notes)


def _cand(text: str, **kw: JSON) -> JSON:
    return {"kind": "fact", "text": text, "sourceThreadKey": "t:9", **kw}


def _plan_boundaries() -> list[tuple[str, Args]]:
    r1 = _rec("mem:org:acme:1", "Deploys go out on Fridays")
    r2 = _rec("mem:org:acme:2", "db is postgres")
    dead = _rec("mem:org:acme:3", "old news", status="superseded")
    return [
        ("empty scope inserts", {"active": [], "candidate": _cand("x")}),
        (
            "dedup ignores case and whitespace runs",
            {"active": [r1], "candidate": _cand("  deploys   GO out on\tfridays ")},
        ),
        (
            "punctuation is kept: no dedup",
            {"active": [r1], "candidate": _cand("Deploys go out on Fridays.")},
        ),
        (
            "supersede of an active record inserts the correction",
            {"active": [r1, r2], "candidate": _cand("db is mysql", supersedes="mem:org:acme:2")},
        ),
        (
            "collision guard: restating another record's text still inserts",
            {
                "active": [r1, r2],
                "candidate": _cand("Deploys go out on Fridays", supersedes="mem:org:acme:2"),
            },
        ),
        (
            "restating the target dedups onto it",
            {"active": [r1, r2], "candidate": _cand("DB IS POSTGRES", supersedes="mem:org:acme:2")},
        ),
        (
            "unresolved supersede inserts without dedup",
            {"active": [r1], "candidate": _cand("Deploys go out on Fridays", supersedes="nope")},
        ),
        (
            "dead target is unresolved",
            {"active": [r1, dead], "candidate": _cand("new", supersedes="mem:org:acme:3")},
        ),
        (
            'supersedes "" is no supersede: dedup applies',
            {"active": [r1], "candidate": _cand("deploys go out on fridays", supersedes="")},
        ),
        ("a dead record is no dedup target", {"active": [dead], "candidate": _cand("old news")}),
        (
            "earliest of two twins",
            {
                "active": [_rec("mem:org:acme:7", "twin"), _rec("mem:org:acme:8", "TWIN")],
                "candidate": _cand("twin"),
            },
        ),
        (
            "JS whitespace U+FEFF collapses in the key",
            {"active": [_rec(text="a b")], "candidate": _cand("a\ufeffb")},
        ),
    ]


def _mint_boundaries() -> list[tuple[str, Args]]:
    base = {"scopeKey": "org:acme", "id": "mem:org:acme:1", "now": NOW}
    return [
        ("fresh record, given keywords", {**base, "candidate": _cand("x y", keywords=["k"])}),
        ("no keywords: any from the text's tokens", {**base, "candidate": _cand("Deploy Fri")}),
        (
            "provenance and confidence verbatim",
            {
                **base,
                "candidate": _cand(" raw\ttext ", keywords=[], sourceRunId="r1", confidence=0.75),
            },
        ),
        (
            'supersedes "" stored absent or "" (open point)',
            {**base, "candidate": _cand("x", keywords=[], supersedes="")},
        ),
        (
            "supersedes kept",
            {**base, "candidate": _cand("x", keywords=[], supersedes="mem:org:acme:0")},
        ),
        ("summary kind", {**base, "candidate": {**_cand("s", keywords=[]), "kind": "summary"}}),
    ]


# --------------------------------------------------------------------------- eviction


def _evict(a: Args) -> JSON:
    return plan_eviction(memory_records(a["active"]), int(a["cap"]))


def _evict_judge(a: Args) -> Judged:
    """Least recently used first; full ties in any order; the order of the answer is free
    (MEM-CAP.1, MEM-CAP.2)."""
    live = [r for r in memory_records(a["active"]) if r.status == ACTIVE]
    cap = int(a["cap"])
    by_key: dict[tuple[int, int], list[str]] = {}
    for r in live:
        by_key.setdefault(eviction_key(r), []).append(r.id)
    groups = [by_key[k] for k in sorted(by_key)]
    length = max(0, len(live) - max(cap, 0))
    checker = {"name": "tie_groups", "groups": groups, "length": length, "ordered": False}
    return Judged([ok(_evict(a))], checker)


def _evict_boundaries() -> list[tuple[str, Args]]:
    old = _rec("mem:org:acme:1", "a", createdAt=NOW - 3 * DAY)
    used = _rec("mem:org:acme:2", "b", createdAt=NOW - 5 * DAY, lastUsedAt=NOW)
    t1 = _rec("mem:org:acme:3", "c", createdAt=NOW - DAY)
    t2 = _rec("mem:org:acme:4", "d", createdAt=NOW - DAY)
    late = _rec("mem:org:acme:5", "e", createdAt=NOW - 2 * DAY, lastUsedAt=NOW - DAY)
    dead = _rec("mem:org:acme:6", "f", createdAt=0, status="forgotten")
    return [
        ("at the cap: nothing", {"active": [old, used], "cap": 2}),
        ("one past the cap: one", {"active": [old, used, t1], "cap": 2}),
        ("lastUsedAt protects an old record", {"active": [used, old], "cap": 1}),
        ("full tie: either", {"active": [t1, t2], "cap": 1}),
        ("equal use, older creation first", {"active": [t1, late], "cap": 1}),
        ("dead records neither count nor go", {"active": [dead, old, used], "cap": 1}),
        ("cap zero evicts all", {"active": [old, used], "cap": 0}),
        ("empty", {"active": [], "cap": 0}),
    ]


# --------------------------------------------------------------------------- containment


def _sanitize(a: Args) -> JSON:
    return sanitize_memory_field(a["text"])


def _bullet(a: Args) -> JSON:
    return render_bullet(memory_record(a["record"]))


def _prefix(a: Args) -> JSON:
    return memory_prefix_line(a["resource"])


def _block(a: Args) -> JSON:
    return render_memory_block(memory_records(a["records"]), a["resource"])


def _sanitize_boundaries() -> list[tuple[str, Args]]:
    return [
        *_text_boundaries(),
        ("ampersand first", {"text": "&lt;"}),
        ("all three metacharacters", {"text": "<a href='x'>&</a>"}),
        ("C1 controls become spaces", {"text": "a\x85b\x9fc"}),
        ("line and paragraph separators", {"text": "a\u2028b\u2029c"}),
        ("CR LF", {"text": "line1\r\nline2"}),
        ("fence text is escaped", {"text": "</background_memory>"}),
    ]


def _estimate(a: Args) -> JSON:
    return estimate_tokens(a["text"])


def _estimate_boundaries() -> list[tuple[str, Args]]:
    return [
        ("empty", {"text": ""}),
        ("one unit", {"text": "a"}),
        ("four units", {"text": "abcd"}),
        ("five units", {"text": "abcde"}),
        ("an astral character is two units", {"text": "\U0001f600"}),
        ("two astral characters are four units: one token", {"text": "\U0001f600\U0001f600"}),
        ("three units of BMP non-ASCII", {"text": "\u00e9\u00e9\u00e9"}),
        ("combining mark is its own unit", {"text": "e\u0301e\u0301e"}),
        ("not bytes: 4 units of 3-byte UTF-8", {"text": "\u65e5\u672c\u65e5\u672c"}),
    ]


def _budget(a: Args) -> JSON:
    recs = memory_records(a["records"])
    return [r.id for r in apply_budget(recs, int(a["limit"]), int(a["maxTokens"]))]


def _bullet_cost(rec: JSON) -> int:
    return int(estimate_tokens(render_bullet(memory_record(rec))))


def _budget_boundaries() -> list[tuple[str, Args]]:
    r = [_rec(f"mem:org:acme:{i}", "x" * 40) for i in range(1, 5)]
    cost = _bullet_cost(r[0])
    big = _rec("mem:org:acme:9", "y" * 5000)
    astral = _rec("mem:org:acme:8", "\U0001f600" * 20)
    return [
        ("exact edge: two bullets fit exactly", {"records": r, "limit": 8, "maxTokens": 2 * cost}),
        ("one unit under the edge", {"records": r, "limit": 8, "maxTokens": 2 * cost - 1}),
        ("the first record is always kept", {"records": [big, *r], "limit": 8, "maxTokens": 10}),
        (
            "stop at the first that does not fit",
            {"records": [r[0], big, r[1]], "limit": 8, "maxTokens": 800},
        ),
        ("limit cuts", {"records": r, "limit": 2, "maxTokens": 800}),
        ("limit zero", {"records": r, "limit": 0, "maxTokens": 800}),
        (
            "astral text costs two units a character",
            {"records": [r[0], astral], "limit": 8, "maxTokens": cost + 12},
        ),
        ("empty", {"records": [], "limit": 8, "maxTokens": 800}),
    ]


# --------------------------------------------------------------------------- read pool


def _retrieved(a: Args) -> dict[str, list[JSON]]:
    out: dict[str, list[JSON]] = {}
    for item in a["retrieved"]:
        out[item["scopeKey"]] = memory_records(item["records"])
    return out


def _pool(a: Args) -> JSON:
    try:
        recs = pool_records(
            _retrieved(a), a["query"], int(a["now"]), int(a["limit"]), int(a["maxTokens"])
        )
    except ScopeError as exc:
        raise Refused(str(exc)) from exc
    return [r.id for r in recs]


def _context_block(a: Args) -> JSON:
    try:
        return memory_context_block(
            _retrieved(a), a["query"], int(a["now"]), int(a["limit"]), int(a["maxTokens"])
        )
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _pool_boundaries() -> list[tuple[str, Args]]:
    org = _rec("mem:org:acme:1", "deploy friday")
    user = {**_rec("mem:user:slack:U1:1", "deploy friday"), "scopeKey": "user:slack:U1"}
    repo = {**_rec("mem:repo:acme/api:1", "deploy"), "scopeKey": "repo:acme/api"}
    base = {"query": "deploy friday", "now": NOW, "limit": 8, "maxTokens": 800}
    return [
        (
            "equal scores: org before user whatever the input order",
            {
                **base,
                "retrieved": [
                    {"scopeKey": "user:slack:U1", "records": [user]},
                    {"scopeKey": "org:acme", "records": [org]},
                ],
            },
        ),
        (
            "one limit for the whole pool",
            {
                **base,
                "limit": 1,
                "retrieved": [
                    {"scopeKey": "org:acme", "records": [org]},
                    {"scopeKey": "repo:acme/api", "records": [repo]},
                ],
            },
        ),
        (
            "a scope read that returned nothing is still named",
            {
                **base,
                "retrieved": [
                    {"scopeKey": "org:acme", "records": [org]},
                    {"scopeKey": "channel:C1", "records": []},
                ],
            },
        ),
        ("no records: no block", {**base, "retrieved": [{"scopeKey": "org:acme", "records": []}]}),
        ("not a memory scope key", {**base, "retrieved": [{"scopeKey": "team:x", "records": []}]}),
    ]


# --------------------------------------------------------------------------- scopes

#: Characters that are whitespace to Python's ``str.strip`` or to JavaScript's ``trim`` but
#: not to both, and zero-width characters no one trims: an engine may count a value made of
#: them as blank or not (open point: which characters make a scope input blank).
BLANK_OPEN = frozenset("\x1c\x1d\x1e\x1f\x85\ufeff\u180e\u200b")


def _derive(a: Args) -> JSON:
    try:
        return derive_scope_key(a["kind"], a.get("value"))
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _blank_open(v: JSON) -> bool:
    return (
        isinstance(v, str)
        and v != ""
        and any(c in BLANK_OPEN for c in v)
        and not v.strip("".join(BLANK_OPEN) + " \t\n\r\v\f\u00a0\u2028\u2029\u3000")
    )


def _derive_judge(a: Args) -> Judged:
    """A value blank under one whitespace definition but not another: refused or kept."""
    ref = outcome_of(_derive, a)
    allowed = [ref]
    if _blank_open(a.get("value")) and a.get("kind") in ("org", "repo", "channel", "user"):
        allowed = [THROWS, ok(f"{a['kind']}:{a['value']}")]
    return Judged(allowed)


def _request_keys(a: Args) -> JSON:
    keys = [_derive({"kind": "org", "value": a.get("org")})]
    for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
        if a.get(name):
            keys.append(_derive({"kind": kind, "value": a[name]}))
    return keys


def _request_keys_judge(a: Args) -> Judged:
    """A whitespace-only optional input: refused, or taken as no input (open point), or -- for
    characters only one whitespace definition knows -- kept."""
    ref = outcome_of(_request_keys, a)
    allowed = [ref]
    blank = {
        n
        for n in ("repo", "channelId", "userId")
        if isinstance(a.get(n), str) and a[n] and (not a[n].strip() or _blank_open(a[n]))
    }
    if blank:
        dropped = {**a, **{n: None for n in blank}}
        allowed.append(outcome_of(_request_keys, dropped))
        allowed.append(THROWS)
        if all(_blank_open(a[n]) for n in blank):
            kept = ["org:" + str(a.get("org"))]
            for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
                if a.get(name):
                    kept.append(f"{kind}:{a[name]}")
            if a.get("org") and str(a.get("org")).strip():
                allowed.append(ok(kept))
    if _blank_open(a.get("org")):
        allowed.append(THROWS)
    return Judged(allowed)


def _list_keys(a: Args) -> JSON:
    try:
        return list_scope_keys(list(a["keys"]))
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _scope_boundaries() -> list[tuple[str, Args]]:
    return [
        ("org", {"kind": "org", "value": "acme"}),
        ("value used as given", {"kind": "user", "value": "slack:U0123"}),
        ("missing value refused", {"kind": "repo", "value": None}),
        ("empty value refused", {"kind": "channel", "value": ""}),
        ("whitespace-only refused", {"kind": "org", "value": " \t "}),
        (
            "JS-only whitespace U+FEFF: refused or kept (open point)",
            {"kind": "org", "value": "\ufeff"},
        ),
        (
            "Python-only whitespace U+001C: refused or kept (open point)",
            {"kind": "org", "value": "\x1c"},
        ),
        ("unknown kind refused", {"kind": "team", "value": "x"}),
        ("astral value", {"kind": "user", "value": "\U0001f600"}),
    ]


def _request_boundaries() -> list[tuple[str, Args]]:
    return [
        ("org alone", {"org": "acme"}),
        (
            "all four in order",
            {"org": "acme", "userId": "slack:U1", "repo": "acme/api", "channelId": "C1"},
        ),
        ("no org refused", {"org": None, "userId": "slack:U1"}),
        ("empty repo means no repo scope", {"org": "acme", "repo": ""}),
        ("whitespace-only user (open point)", {"org": "acme", "userId": "  "}),
        ("whitespace-only org refused", {"org": " "}),
    ]


def _list_keys_boundaries() -> list[tuple[str, Args]]:
    return [
        (
            "reordered org, repo, channel, user",
            {"keys": ["user:u", "channel:c", "org:o", "repo:r"]},
        ),
        ("stable within a kind", {"keys": ["user:b", "org:o", "user:a"]}),
        ("empty", {"keys": []}),
        ("unknown kind refused", {"keys": ["org:o", "team:t"]}),
    ]


# --------------------------------------------------------------------------- reflection


def _should_reflect(a: Args) -> JSON:
    return should_reflect(int(a["toolCalls"]), int(a["historyTurns"]), a.get("agentName"))


def _reflect_boundaries() -> list[tuple[str, Args]]:
    return [
        ("no work", {"toolCalls": 0, "historyTurns": 3}),
        ("one tool call", {"toolCalls": 1, "historyTurns": 0}),
        ("four prior turns", {"toolCalls": 0, "historyTurns": 4}),
        ("a review never", {"toolCalls": 9, "historyTurns": 9, "agentName": "review"}),
        ("another agent", {"toolCalls": 1, "historyTurns": 0, "agentName": "coder"}),
    ]


def _cand_out(c: JSON) -> JSON:
    return {**candidate_json(c.candidate), "audience": c.audience}


def _parse_reflection(a: Args) -> JSON:
    res = parse_reflection(a["raw"], list(a.get("shownIds", [])), a["threadKey"], a.get("runId"))
    if res is None:
        return None
    return {
        "facts": [_cand_out(f) for f in res.facts],
        "summary": _cand_out(res.summary) if res.summary is not None else None,
    }


def _canonical_fence(raw: str) -> bool:
    """A reply wrapped the way the seed shows it: ```json, a newline, the JSON, a newline."""
    s = raw.strip()
    return not s.startswith("```") or (s.startswith("```json\n") and s.endswith("\n```"))


def _parse_reflection_judge(a: Args) -> Judged:
    """A fence other than ```json + newline … newline + ``` may be unwrapped or refused (open
    point: the fence's whitespace rules)."""
    ref = ok(_parse_reflection(a))
    if _canonical_fence(a["raw"]):
        return Judged([ref])
    return Judged([ref, ok(None)] if ref["ok"] is not None else [ref])


def _reply(obj: JSON) -> str:
    import json

    return json.dumps(obj)


def _reflection_boundaries() -> list[tuple[str, Args]]:  # long: a data table of boundary cases
    base = {"shownIds": ["mem:org:acme:1"], "threadKey": "t:1", "runId": "run-1"}
    fact = {"text": "deploys on friday", "confidence": 0.8}
    return [
        ("not JSON", {**base, "raw": "sure! here you go"}),
        ("not an object", {**base, "raw": "[1]"}),
        ("facts not an array", {**base, "raw": '{"facts": {}}'}),
        ("empty facts", {**base, "raw": '{"facts": []}'}),
        ("fenced", {**base, "raw": "```json\n" + _reply({"facts": [fact]}) + "\n```"}),
        (
            "fence without newlines (open point)",
            {**base, "raw": "```json" + _reply({"facts": [fact]}) + "```"},
        ),
        (
            "confidence edge 0.6 kept",
            {**base, "raw": _reply({"facts": [{**fact, "confidence": 0.6}]})},
        ),
        (
            "confidence just under 0.6 dropped",
            {**base, "raw": _reply({"facts": [{**fact, "confidence": 0.5999999999999999}]})},
        ),
        (
            "confidence 1 kept, one past dropped",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {**fact, "confidence": 1},
                            {**fact, "confidence": 1.0000000000000002},
                        ]
                    }
                ),
            },
        ),
        (
            "boolean confidence dropped",
            {**base, "raw": _reply({"facts": [{**fact, "confidence": True}]})},
        ),
        ("blank text dropped", {**base, "raw": _reply({"facts": [{**fact, "text": " \u3000 "}]})}),
        (
            "first five valid facts",
            {**base, "raw": _reply({"facts": [{**fact, "text": f"f{i}"} for i in range(7)]})},
        ),
        (
            "supersedes kept only when shown; audience checked",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {**fact, "supersedes": "mem:org:acme:1", "audience": "user"},
                            {
                                **fact,
                                "text": "b",
                                "supersedes": "mem:org:acme:2",
                                "audience": "team",
                            },
                        ]
                    }
                ),
            },
        ),
        (
            "summary takes the narrowest audience",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {**fact, "audience": "repo"},
                            {**fact, "text": "c", "audience": "channel"},
                        ],
                        "summary": " did things ",
                    }
                ),
            },
        ),
        (
            "keywords normalized",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {
                                **fact,
                                "keywords": [" DB ", "db", 3, "", *[f"k{i}" for i in range(12)]],
                            }
                        ]
                    }
                ),
            },
        ),
        (
            "integer of 5000 digits is valid JSON",
            {**base, "raw": '{"facts": [], "n": ' + "9" * 5000 + "}"},
        ),
        (
            "nesting of 1200 levels is valid JSON",
            {**base, "raw": '{"facts": [], "deep": ' + "[" * 1200 + "]" * 1200 + "}"},
        ),
        ("NaN is not JSON", {**base, "raw": '{"facts": [], "x": NaN}'}),
        (
            "astral text kept",
            {**base, "raw": _reply({"facts": [{**fact, "text": "\U0001f600 ok"}]})},
        ),
    ]


def _redact(a: Args) -> JSON:
    return redact_secrets(a["text"])


SECRETS = (
    "Bearer " + "tok." * 5,
    "sk-ant-" + "a" * 30,
    "ghp_" + "B" * 36,
    "xoxb-" + "1234567890-abc",
    "AKIA" + "ABCDEFGHIJKLMNOP",
)


def _redact_judge(a: Args) -> Judged:
    """The marker and the exact span are the engine's (open point); every listed secret must be
    gone and the listed ordinary words kept."""
    ref = ok(_redact(a))
    secrets = [s for s in a.get("secrets", []) if s in a["text"]]
    kept = list(a.get("kept", []))
    return Judged([ref], {"name": "redacted", "secrets": secrets, "kept": kept})


def _redact_boundaries() -> list[tuple[str, Args]]:
    return [
        (
            f"a {s[:4]}… key",
            {"text": f"use {s} for prod", "secrets": [s], "kept": ["use", "for prod"]},
        )
        for s in SECRETS
    ] + [
        (
            "ordinary text untouched",
            {"text": "task-runner sk is fine", "secrets": [], "kept": ["task-runner sk is fine"]},
        ),
        (
            "PEM block",
            {
                "text": "a -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- b",
                "secrets": ["MIIE"],
                "kept": ["a ", " b"],
            },
        ),
    ]


# --------------------------------------------------------------------------- commands


def _parse_command(a: Args) -> JSON:
    cmd = parse_memory_command(a["text"])
    if cmd is None:
        return None
    if isinstance(cmd, UsageError):
        return {"verb": "usage"}
    if isinstance(cmd, ForgetCommand):
        return {"verb": "forget", "id": cmd.record_id}
    assert isinstance(cmd, ListCommand)
    return {
        "verb": "list",
        "scope": cmd.scope,
        "limit": cmd.limit,
        "query": cmd.query,
        "repo": cmd.repo,
    }


def _command_boundaries() -> list[tuple[str, Args]]:
    return [
        ("prose is not a command", {"text": "remember to deploy"}),
        ("bare memory", {"text": "memory"}),
        ("list defaults", {"text": "memory list"}),
        ("scope word consumed", {"text": "memory list me deploy"}),
        ("limit 50 edge", {"text": "memory list --limit 50"}),
        ("limit 51 refused", {"text": "memory list --limit=51"}),
        ("limit 0 refused", {"text": "memory list --limit 0"}),
        ("repeated option refused", {"text": "memory list --scope org --scope me"}),
        ("forget one id", {"text": "memory forget mem:user:slack:U1:3"}),
        ("forget without id", {"text": "memory forget"}),
        ("forget with extra words", {"text": "memory forget a b"}),
        ("case-insensitive verbs", {"text": "MEMORY LIST --SCOPE ORG"}),
        ("unknown verb", {"text": "memory purge"}),
    ]


def _list_line(a: Args) -> JSON:
    return render_list_line(memory_record(a["record"]))


def _forget_gate(a: Args) -> JSON:
    res = forget_gate(a["id"], a.get("callerUserId"), bool(a.get("isAdmin", False)))
    if isinstance(res, GateAllowed):
        return {"allowed": True, "scopeKey": res.scope_key}
    return {"allowed": False, "code": res.code}


def _gate_boundaries() -> list[tuple[str, Args]]:
    return [
        (
            "own user scope",
            {"id": "mem:user:slack:U1:3", "callerUserId": "slack:U1", "isAdmin": False},
        ),
        (
            "another person's scope, even for an admin",
            {"id": "mem:user:slack:U2:3", "callerUserId": "slack:U1", "isAdmin": True},
        ),
        (
            "shared scope needs an admin",
            {"id": "mem:org:acme:3", "callerUserId": "slack:U1", "isAdmin": False},
        ),
        (
            "shared scope, admin",
            {"id": "mem:repo:acme/api:3", "callerUserId": "slack:U1", "isAdmin": True},
        ),
        ("not a memory id", {"id": "123", "callerUserId": "slack:U1", "isAdmin": True}),
        ("no identity", {"id": "mem:user:slack:U1:3", "callerUserId": None, "isAdmin": False}),
    ]


# --------------------------------------------------------------------------- ledger


def _lrec(rid: str, **kw: JSON) -> JSON:
    out: dict[str, JSON] = {
        "id": rid,
        "scopeKey": "account:local",
        "kind": "preference",
        "body": f"body of {rid}",
        "provenance": "user_explicit",
        "status": "active",
        "validFrom": 1000,
        "createdAt": 1000,
        "updatedAt": 1000,
    }
    out.update(kw)
    return out


def _interval(a: Args) -> JSON:
    return interval_contains(ledger_records([a["record"]])[0], int(a["at"]))


def _interval_boundaries() -> list[tuple[str, Args]]:
    closed = _lrec("00000001", validFrom=1000, validTo=2000)
    return [
        ("at validFrom: inside", {"record": closed, "at": 1000}),
        ("one before: outside", {"record": closed, "at": 999}),
        ("at validTo: outside (half-open)", {"record": closed, "at": 2000}),
        ("one before validTo: inside", {"record": closed, "at": 1999}),
        ("open end", {"record": _lrec("00000002"), "at": 10**13}),
        ("empty interval holds nowhere", {"record": _lrec("00000003", validTo=1000), "at": 1000}),
    ]


def _as_of(a: Args) -> JSON:
    state = LedgerState(records=tuple(ledger_records(a["records"])))
    return [r.id for r in list_as_of(state, a["scopeKey"], int(a["at"]))]


def _as_of_judge(a: Args) -> Judged:
    """Any order (LED-ASOF.3); a tombstone may be left out (LED-ASOF.2)."""
    ids = _as_of(a)
    recs = {r.id: r for r in ledger_records(a["records"])}
    without = [i for i in ids if recs[i].status != "deleted"]
    allowed = [ok(ids)] + ([ok(without)] if without != ids else [])
    return Judged(allowed, {"name": "unordered"})


def _as_of_boundaries() -> list[tuple[str, Args]]:
    recs = [
        _lrec("00000001", validFrom=1000, validTo=2000, status="superseded"),
        _lrec("00000002", validFrom=2000),
        _lrec("00000003", validFrom=1500, validTo=1800, status="deleted", body=""),
        _lrec("00000004", validFrom=1000, scopeKey="account:other"),
    ]
    base = {"records": recs, "scopeKey": "account:local"}
    return [
        ("seamless supersession: the old at 1999", {**base, "at": 1999}),
        ("the new at 2000", {**base, "at": 2000}),
        ("a tombstone in history: omitted or listed", {**base, "at": 1600}),
        ("before everything", {**base, "at": 999}),
        ("another scope never", {**base, "at": 5000}),
    ]


def _packet(a: Args) -> JSON:
    state = LedgerState(records=tuple(ledger_records(a["records"])))
    p = build_packet(state, a["scopeKey"])
    return {"ids": [r.id for r in p.records], "text": p.text}


def _packet_judge(a: Args) -> Judged:
    """Records equal on (explicit, confidence, updatedAt) in any order (LED-PACKET.3): every
    order of each tie class, up to 720 orders, each then cut to 4000 characters."""
    recs = ledger_records(a["records"])
    classes: dict[tuple[int, int, int], list[int]] = {}
    for i, r in enumerate(recs):
        classes.setdefault(packet_rank(r), []).append(i)
    tied = [c for c in classes.values() if len(c) > 1]
    perms = [list(itertools.permutations(c)) for c in tied]
    allowed: list[JSON] = []
    for count, choice in enumerate(itertools.product(*perms)):
        if count >= 720:
            break
        order = list(range(len(recs)))
        for cls, perm in zip(tied, choice, strict=True):
            # within a class the record placed later in write order is taken first
            for pos, idx in zip(sorted(cls), perm, strict=True):
                order[pos] = idx
        seqs = {idx: pos for pos, idx in enumerate(order)}
        state = LedgerState(records=tuple(replace(r, seq=seqs[i]) for i, r in enumerate(recs)))
        p = build_packet(state, a["scopeKey"])
        out = ok({"ids": [r.id for r in p.records], "text": p.text})
        if out not in allowed:
            allowed.append(out)
    return Judged(allowed)


def _packet_boundaries() -> list[tuple[str, Args]]:
    long = "z" * 3970
    return [
        (
            "explicit first, then confidence, then newest",
            {
                "scopeKey": "account:local",
                "records": [
                    _lrec("00000001", provenance="model_proposal", confidenceBps=9000),
                    _lrec("00000002", confidenceBps=5000),
                    _lrec("00000003"),
                    _lrec("00000004", updatedAt=5000),
                ],
            },
        ),
        (
            "full tie: any order",
            {"scopeKey": "account:local", "records": [_lrec("00000001"), _lrec("00000002")]},
        ),
        (
            "one member per conflict group",
            {
                "scopeKey": "account:local",
                "records": [
                    _lrec("00000001", conflictGroup="g"),
                    _lrec("00000002", conflictGroup="g", updatedAt=2000),
                ],
            },
        ),
        (
            "dropped whole at the cap, a later one still fits",
            {
                "scopeKey": "account:local",
                "records": [
                    _lrec("00000001", body=long, updatedAt=3000),
                    _lrec("00000002", body="y" * 100, updatedAt=2000),
                    _lrec("00000003", body="ok"),
                ],
            },
        ),
        (
            "line breaks collapse; only active records",
            {
                "scopeKey": "account:local",
                "records": [
                    _lrec("00000001", body="a\r\n\nb"),
                    _lrec("00000002", status="expired"),
                ],
            },
        ),
    ]


def _cred(a: Args) -> JSON:
    return "refuse" if credential_verdict(a["body"]) is not None else "store"


def _cred_judge(a: Args) -> Judged:
    """A body only a broad detector matches may be stored or refused (LED-CRED.4)."""
    v = credential_verdict(a["body"])
    if v == "either":
        return Judged([ok("refuse"), ok("store")])
    return Judged([ok("refuse" if v else "store")])


def _cred_boundaries() -> list[tuple[str, Args]]:
    return [
        ("openai key", {"body": "key sk-" + "a" * 20}),
        ("19 characters: a look-alike", {"body": "key sk-" + "a" * 19}),
        ("inside a word: not a key", {"body": "task-" + "a" * 30}),
        ("github token of 36", {"body": "ghp_" + "A" * 36}),
        ("github token of 20 (open point)", {"body": "ghp_" + "A" * 20}),
        ("aws key id", {"body": "AKIA" + "B" * 16}),
        ("bearer", {"body": "Authorization: Bearer " + "c" * 16}),
        ("assignment", {"body": "api_key = " + "d" * 12}),
        ("a call is not an assignment", {"body": "token = getTokenFromStore()"}),
        ("PEM header without END (open point)", {"body": "-----BEGIN PRIVATE KEY-----"}),
        ("prose", {"body": "prefers tabs over spaces"}),
    ]


# --------------------------------------------------------------------------- the table

_REC = _memory_record("mem:org:acme:1")
_CANDIDATES = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(("fact", "summary")),
        "text": texts,
        "sourceThreadKey": st.just("t:1"),
    },
    optional={
        "keywords": st.lists(words, max_size=3),
        "supersedes": st.sampled_from(("", "mem:org:acme:1", "mem:org:acme:2", "nope")),
        "confidence": st.sampled_from((0.6, 0.75, 1.0)),
    },
)


def _restated(text: str, how: int) -> str:
    """``text`` said again: the same, upper-cased, or with its spaces doubled and padded."""
    return [text, text.upper(), "  " + text.replace(" ", "  \t") + " "][how]


def _plan_write_args() -> st.SearchStrategy[Args]:
    """Active records and a candidate that is often one of them restated (MEM-WRITE.2)."""

    @st.composite
    def build(draw: st.DrawFn) -> Args:
        restate: bool = draw(st.booleans())
        active: list[JSON] = draw(_memory_list(4))
        cand: dict[str, JSON] = dict(draw(_CANDIDATES))
        if active and restate:
            target = draw(st.sampled_from(active))
            cand["text"] = _restated(target["text"], draw(st.sampled_from((0, 1, 1, 2, 2))))
            if draw(st.booleans()):
                cand["supersedes"] = draw(st.sampled_from(("", target["id"])))
        return {"active": active, "candidate": cand}

    return build()


def _ledger_list() -> st.SearchStrategy[list[JSON]]:
    @st.composite
    def build(draw: st.DrawFn) -> list[JSON]:
        n = draw(st.integers(0, 5))
        out = []
        for i in range(n):
            vf = draw(st.integers(0, 5)) * 1000
            rec = _lrec(
                f"{i + 1:08x}",
                status=draw(
                    st.sampled_from(("active", "active", "superseded", "deleted", "expired"))
                ),
                provenance=draw(st.sampled_from(("user_explicit", "model_proposal"))),
                validFrom=vf,
                updatedAt=draw(st.integers(1, 3)) * 1000,
                body=draw(st.sampled_from(("a", "b\nc", "x" * 900, "y" * 1900, "z" * 2100))),
            )
            if draw(st.booleans()):
                rec["validTo"] = vf + draw(st.integers(0, 3)) * 1000
            if draw(st.booleans()):
                rec["confidenceBps"] = draw(st.sampled_from((5000, 9000)))
            if draw(st.booleans()):
                rec["conflictGroup"] = "g"
            out.append(rec)
        return out

    return build()


_RETRIEVED = st.builds(
    lambda org, user: [
        {"scopeKey": "user:slack:U1", "records": user},
        {"scopeKey": "org:acme", "records": org},
    ],
    _memory_list(3, "org:acme"),
    _memory_list(3, "user:slack:U1"),
)

_MEM = "memory"
_LED = "ledger"


def _fn(
    name: str,
    spec: str,
    clauses: tuple[str, ...],
    summary: str,
    call: Callable[[Args], JSON],
    strategy: st.SearchStrategy[Args],
    boundaries: Callable[[], list[tuple[str, Args]]],
    judge: Callable[[Args], Judged] | None = None,
) -> Fn:
    return Fn(name, spec, clauses, summary, call, judge or _exact(call), strategy, boundaries)


FUNCTIONS: tuple[Fn, ...] = (
    _fn(
        "tokenize",
        _MEM,
        ("MEM-SCORE.2",),
        "lower-case, then the ASCII runs [a-z0-9]+",
        _tokenize,
        st.fixed_dictionaries({"text": any_text}),
        _text_boundaries,
    ),
    _fn(
        "normalizeText",
        _MEM,
        ("MEM-WRITE.2",),
        "the dedup key",
        _normalize,
        st.fixed_dictionaries({"text": any_text}),
        _normalize_boundaries,
    ),
    _fn(
        "keywordMatch",
        _MEM,
        ("MEM-SCORE.2",),
        "fraction of query tokens the record holds",
        _keyword_match,
        st.fixed_dictionaries({"query": queries, "record": _REC}),
        _km_boundaries,
    ),
    _fn(
        "recencyScore",
        _MEM,
        ("MEM-SCORE.3",),
        "exp(-age/tau) from lastUsedAt ?? createdAt",
        _recency,
        st.fixed_dictionaries({"record": _REC, "now": st.just(NOW)}),
        _rec_boundaries,
    ),
    _fn(
        "scoreRecord",
        _MEM,
        ("MEM-SCORE.1",),
        "0.7 keywordMatch + 0.3 recency",
        _score,
        st.fixed_dictionaries({"query": queries, "record": _REC, "now": st.just(NOW)}),
        lambda: _with_now(_score_boundaries()),
    ),
    _fn(
        "rankRecords",
        _MEM,
        ("MEM-SCORE.4", "MEM-SCORE.5", "MEM-SCORE.6"),
        "gate, score, sort, cut",
        _rank,
        st.fixed_dictionaries(
            {"records": _memory_list(), "query": queries, "limit": limits, "now": st.just(NOW)}
        ),
        lambda: _with_now(_rank_boundaries()),
        _rank_judge,
    ),
    _fn(
        "planWrite",
        _MEM,
        ("MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.3", "MEM-WRITE.4", "MEM-WRITE.5"),
        "dedup, supersede or insert one candidate",
        _plan_write,
        _plan_write_args(),
        _plan_boundaries,
    ),
    _fn(
        "mintRecord",
        _MEM,
        ("MEM-RECORD.4", "MEM-RECORD.5"),
        "the stored form of a candidate",
        _mint,
        st.fixed_dictionaries(
            {
                "candidate": _CANDIDATES,
                "scopeKey": st.just("org:acme"),
                "id": st.just("mem:org:acme:1"),
                "now": st.just(NOW),
            }
        ),
        _mint_boundaries,
        _mint_judge,
    ),
    _fn(
        "planEviction",
        _MEM,
        ("MEM-CAP.1", "MEM-CAP.2"),
        "ids to evict down to the cap",
        _evict,
        st.fixed_dictionaries({"active": _memory_list(6), "cap": st.integers(0, 6)}),
        _evict_boundaries,
        _evict_judge,
    ),
    _fn(
        "sanitizeMemoryField",
        _MEM,
        ("MEM-CONTAIN.1", "MEM-CONTAIN.2"),
        "one clean line, markup escaped ampersand first",
        _sanitize,
        st.fixed_dictionaries({"text": any_text}),
        _sanitize_boundaries,
    ),
    _fn(
        "renderBullet",
        _MEM,
        ("MEM-CONTAIN.3",),
        "- text (source: thread)",
        _bullet,
        st.fixed_dictionaries({"record": _REC}),
        lambda: [
            (
                "metacharacters in both fields",
                {"record": _rec(text="a<b>&c\nd", sourceThreadKey="t&<1>")},
            )
        ],
    ),
    _fn(
        "memoryPrefixLine",
        _MEM,
        ("MEM-CONTAIN.4",),
        "the advisory first line",
        _prefix,
        st.fixed_dictionaries(
            {"resource": st.sampled_from(("org:acme", "org:acme + user:slack:U1", ""))}
        ),
        lambda: [
            ("two scopes", {"resource": "org:acme + user:slack:U1"}),
            ("empty", {"resource": ""}),
        ],
    ),
    _fn(
        "renderMemoryBlock",
        _MEM,
        ("MEM-CONTAIN.3", "MEM-CONTAIN.4"),
        "prefix, fences, bullets",
        _block,
        st.fixed_dictionaries({"records": _memory_list(3), "resource": st.just("org:acme")}),
        lambda: [
            (
                "fences never sanitized; a fence in text is",
                {"records": [_rec(text="</background_memory>")], "resource": "org:acme"},
            ),
            ("no records: prefix and fences only", {"records": [], "resource": "org:acme"}),
        ],
    ),
    _fn(
        "estimateTokens",
        _MEM,
        ("MEM-BUDGET.2",),
        "ceil(UTF-16 length / 4)",
        _estimate,
        st.fixed_dictionaries({"text": any_text}),
        _estimate_boundaries,
    ),
    _fn(
        "applyBudget",
        _MEM,
        ("MEM-BUDGET.1", "MEM-BUDGET.3"),
        "longest prefix within both caps",
        _budget,
        st.fixed_dictionaries(
            {"records": _memory_list(5), "limit": limits, "maxTokens": st.integers(0, 60)}
        ),
        _budget_boundaries,
    ),
    _fn(
        "poolRecords",
        _MEM,
        ("MEM-READ.1", "MEM-READ.2"),
        "one pool over every scope read",
        _pool,
        st.fixed_dictionaries(
            {
                "retrieved": _RETRIEVED,
                "query": queries,
                "now": st.just(NOW),
                "limit": limits,
                "maxTokens": st.integers(0, 200),
            }
        ),
        _pool_boundaries,
    ),
    _fn(
        "memoryContextBlock",
        _MEM,
        ("MEM-READ.3", "MEM-READ.4"),
        "the block or null",
        _context_block,
        st.fixed_dictionaries(
            {
                "retrieved": _RETRIEVED,
                "query": queries,
                "now": st.just(NOW),
                "limit": st.just(8),
                "maxTokens": st.just(800),
            }
        ),
        _pool_boundaries,
    ),
    _fn(
        "deriveScopeKey",
        _MEM,
        ("MEM-SCOPE.1", "MEM-SCOPE.2"),
        "<kind>:<value> or refused",
        _derive,
        st.fixed_dictionaries(
            {
                "kind": st.sampled_from(("org", "repo", "channel", "user", "team")),
                "value": st.one_of(st.none(), any_text),
            }
        ),
        _scope_boundaries,
        _derive_judge,
    ),
    _fn(
        "requestScopeKeys",
        _MEM,
        ("MEM-SCOPE.3",),
        "the scopes one request reads",
        _request_keys,
        st.fixed_dictionaries(
            {
                "org": st.one_of(st.none(), st.sampled_from(("acme", " ", ""))),
                "userId": st.one_of(st.none(), st.sampled_from(("slack:U1", "", "  "))),
                "repo": st.one_of(st.none(), st.just("acme/api")),
                "channelId": st.one_of(st.none(), st.just("C1")),
            }
        ),
        _request_boundaries,
        _request_keys_judge,
    ),
    _fn(
        "listScopeKeys",
        _MEM,
        ("MEM-SCOPE.4",),
        "org, repo, channel, user",
        _list_keys,
        st.fixed_dictionaries(
            {
                "keys": st.lists(
                    st.sampled_from(("org:o", "repo:r", "channel:c", "user:u", "user:v", "org:p")),
                    max_size=5,
                )
            }
        ),
        _list_keys_boundaries,
    ),
    _fn(
        "shouldReflect",
        _MEM,
        ("MEM-REFLECT.1",),
        "is a finished run distilled",
        _should_reflect,
        st.fixed_dictionaries(
            {"toolCalls": st.integers(0, 3), "historyTurns": st.integers(0, 6)},
            optional={"agentName": st.sampled_from(("review", "coder"))},
        ),
        _reflect_boundaries,
    ),
    _fn(
        "parseReflection",
        _MEM,
        ("MEM-REFLECT.7", "MEM-REFLECT.8", "MEM-REFLECT.9", "MEM-REFLECT.10", "MEM-ROUTE.2"),
        "the extractor's reply: strict envelope, lenient inside",
        _parse_reflection,
        st.fixed_dictionaries(
            {
                "raw": st.builds(
                    _reply,
                    st.fixed_dictionaries(
                        {
                            "facts": st.lists(
                                st.fixed_dictionaries(
                                    {
                                        "text": st.one_of(texts, st.just(" ")),
                                        "confidence": st.sampled_from(
                                            (0.5, 0.6, 0.9, 1, 1.5, True)
                                        ),
                                    },
                                    optional={
                                        "audience": st.sampled_from(("user", "repo", "team")),
                                        "keywords": st.lists(
                                            st.one_of(words, st.integers()), max_size=3
                                        ),
                                    },
                                ),
                                max_size=7,
                            )
                        },
                        optional={"summary": st.one_of(texts, st.just(""))},
                    ),
                ),
                "shownIds": st.just(["mem:org:acme:1"]),
                "threadKey": st.just("t:1"),
                "runId": st.just("run-1"),
            }
        ),
        _reflection_boundaries,
        _parse_reflection_judge,
    ),
    _fn(
        "redactSecrets",
        _MEM,
        ("MEM-REFLECT.6",),
        "credential-shaped spans replaced",
        _redact,
        st.builds(
            lambda w, s: {"text": f"{w} {s} end", "secrets": [s], "kept": ["end"]},
            texts,
            st.sampled_from(SECRETS),
        ),
        _redact_boundaries,
        _redact_judge,
    ),
    _fn(
        "parseMemoryCommand",
        _MEM,
        ("MEM-CMD.1", "MEM-CMD.2", "MEM-CMD.3", "MEM-CMD.5"),
        "one chat line: list, forget, usage error or not a command",
        _parse_command,
        st.fixed_dictionaries(
            {
                "text": st.lists(
                    st.sampled_from(
                        (
                            "memory",
                            "list",
                            "forget",
                            "me",
                            "org",
                            "--limit",
                            "5",
                            "--scope=all",
                            "deploy",
                            "--repo",
                            "a/b",
                            "x",
                        )
                    ),
                    max_size=5,
                ).map(" ".join)
            }
        ),
        _command_boundaries,
    ),
    _fn(
        "renderListLine",
        _MEM,
        ("MEM-CMD.6",),
        "one line per listed record",
        _list_line,
        st.fixed_dictionaries({"record": _REC}),
        lambda: [("flattened, not escaped", {"record": _rec(text="a <b>\nc", confidence=0.8)})],
    ),
    _fn(
        "forgetGate",
        _MEM,
        ("MEM-CMD.7", "MEM-CMD.8"),
        "may this caller forget this id",
        _forget_gate,
        st.fixed_dictionaries(
            {
                "id": st.sampled_from(
                    ("mem:user:slack:U1:1", "mem:org:acme:2", "x", "mem:user::3")
                ),
                "callerUserId": st.one_of(st.none(), st.just("slack:U1")),
                "isAdmin": st.booleans(),
            }
        ),
        _gate_boundaries,
    ),
    _fn(
        "intervalContains",
        _LED,
        ("LED-INT.1", "LED-INT.2"),
        "at in [validFrom, validTo)",
        _interval,
        st.builds(
            lambda at, vt: {
                "record": _lrec(
                    "00000001", validFrom=1000, **({"validTo": vt} if vt is not None else {})
                ),
                "at": at,
            },
            st.integers(0, 3000),
            st.one_of(st.none(), st.integers(1000, 2500)),
        ),
        _interval_boundaries,
    ),
    _fn(
        "listAsOf",
        _LED,
        ("LED-ASOF.1", "LED-ASOF.2", "LED-ASOF.3"),
        "the scope's records that held at an instant",
        _as_of,
        st.fixed_dictionaries(
            {
                "records": _ledger_list(),
                "scopeKey": st.just("account:local"),
                "at": st.integers(0, 6).map(lambda k: k * 1000),
            }
        ),
        _as_of_boundaries,
        _as_of_judge,
    ),
    _fn(
        "buildPacket",
        _LED,
        ("LED-PACKET.1", "LED-PACKET.2", "LED-PACKET.3", "LED-PACKET.4", "LED-PACKET.5"),
        "which pins reach the model, in what order and form",
        _packet,
        st.fixed_dictionaries({"records": _ledger_list(), "scopeKey": st.just("account:local")}),
        _packet_boundaries,
        _packet_judge,
    ),
    _fn(
        "credentialVerdict",
        _LED,
        ("LED-CRED.1", "LED-CRED.3", "LED-CRED.4"),
        "refuse or store a body",
        _cred,
        st.fixed_dictionaries(
            {
                "body": st.one_of(
                    texts,
                    st.sampled_from(SECRETS),
                    st.builds(lambda n: "ghp_" + "A" * n, st.integers(18, 38)),
                )
            }
        ),
        _cred_boundaries,
        _cred_judge,
    ),
)

BY_NAME: dict[str, Fn] = {f.name: f for f in FUNCTIONS}


def reference_call(name: str, args: Args) -> JSON:
    """The reference's answer as the binding carries it (raises Refused / ArgError / KeyError)."""
    return BY_NAME[name].call(args)


__all__ = ["ArgError", "BY_NAME", "FUNCTIONS", "Fn", "Refused", "outcome_of", "reference_call"]
