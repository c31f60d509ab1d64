"""Scoring and ranking (``reference/memory/scoring.py``, ``rank_records`` and ``normalize_text``
of ``reference/memory/engine.py``): tokenize, normalizeText, keywordMatch, recencyScore,
scoreRecord, rankRecords.
"""

from __future__ import annotations

import unicodedata

from hypothesis import strategies as st

from conformance.binding.codec import memory_record, memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import (
    DAY,
    LIMIT_RANGE,
    NOW,
    REC,
    any_text,
    in_range,
    limits,
    memory_list,
    outside_domain,
    queries,
    rec,
    record_args,
    text_boundaries,
    with_now,
)
from conformance.binding.functions.memory.parameters import (
    TAU_NOTE,
    TAU_REFERENCE,
    recency_judge,
    score_judge,
)
from conformance.binding.judge import Judged, ok, widened
from reference.memory.engine import normalize_text, rank_records
from reference.memory.scoring import (
    keyword_match,
    recency_score,
    score_record,
    seed_taus,
    tokenize,
)


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


def _tie_groups(a: Args, tau: float) -> dict[str, JSON]:
    """The ``tie_groups`` checker of the ranking with the recency time constant ``tau``."""
    recs = memory_records(a["records"])
    query, now, limit = a["query"], int(a["now"]), int(a["limit"])
    hits = [r for r in recs if tokenize(query) and keyword_match(query, r) > 0]
    by_score: dict[float, list[str]] = {}
    for r in hits:
        by_score.setdefault(score_record(query, r, now, tau_ms=tau), []).append(r.id)
    groups = [by_score[s] for s in sorted(by_score, reverse=True)]
    length = min(max(limit, 0), len(hits))
    return {"name": "tie_groups", "groups": groups, "length": length}


def _rank_judge(a: Args) -> Judged:
    """Ties in any order, and any of them where the limit cuts through (MEM-SCORE.5) -- under
    every τ the seed admits (MEM-SCORE.9): where another τ orders the scores otherwise, the
    answer may follow it, a deviation from the reference's seven days (MEM-SCORE.10)."""
    recs = memory_records(a["records"])
    hits = [r for r in recs if tokenize(a["query"]) and keyword_match(a["query"], r) > 0]
    checkers: list[dict[str, JSON]] = []
    for tau in seed_taus(a["query"], hits, int(a["now"])):
        checker = _tie_groups(a, tau)
        if checker not in checkers:
            checkers.append(checker)
    ref = ok(_rank(a))
    judged = Judged([ref], checkers[0])
    if len(checkers) > 1:
        rule = {"anyOf": [{"tieGroups": {k: c[k] for k in ("groups", "length")}} for c in checkers]}
        judged = widened(judged, TAU_REFERENCE, [], {"name": "rule", "rule": rule}, TAU_NOTE)
    if not in_range(a["limit"], LIMIT_RANGE):
        return outside_domain(judged, f"limit {a['limit']}")
    return judged


def _normalize_judge(a: Args) -> Judged:
    """The dedup key; a character this Python's Unicode does not know may lower-case to a
    non-ASCII letter in an engine on a newer Unicode (MEM-WRITE.2): at every level, since the
    seed's lower-casing is the runtime's."""
    ref = ok(_normalize(a))
    key = ref["ok"]
    positions = [i for i, c in enumerate(key) if unicodedata.category(c) == "Cn"]
    if not positions:
        return Judged([ref])
    note = "characters unknown to this Unicode may lower-case in a newer one"
    return Judged([ref], {"name": "case_open", "positions": positions}, [note])


def _normalize_boundaries() -> list[tuple[str, Args]]:
    return [
        *text_boundaries(),
        ("JS whitespace: U+FEFF and U+2028 collapse", {"text": "a\ufeff\u2028b"}),
        ("U+001C is not JS whitespace: kept", {"text": "a\x1cb"}),
        ("U+0085 is not JS whitespace: kept", {"text": "a\x85b"}),
        ("punctuation kept", {"text": "Deploys, Friday!"}),
        ("trailing and leading runs trimmed", {"text": "  \t A  B \n"}),
        (
            "letters a newer Unicode added: their lower case is the runtime's",
            {"text": "\ua7cb\u1c89 Deploy"},
        ),
    ]


def _km_boundaries() -> list[tuple[str, Args]]:
    return [
        ("whole token, never substring", record_args(rec(text="alpha"), query="a")),
        ("query without tokens", record_args(rec(), query="!!!")),
        ("empty query", record_args(rec(), query="")),
        ("repeats counted", record_args(rec(text="db"), query="db db x")),
        ("case-insensitive", record_args(rec(text="Deploy"), query="DEPLOY")),
        ("keyword tokens count", record_args(rec(text="x", keywords=["Staging-DB"]), query="db")),
        ("half hit", record_args(rec(text="deploy"), query="deploy friday")),
        ("astral around a token", record_args(rec(text="\U0001f600db\U0001f600"), query="db")),
    ]


def _rec_boundaries() -> list[tuple[str, Args]]:
    week = 7 * DAY
    return [
        ("age zero", record_args(rec(createdAt=NOW), now=NOW)),
        ("one time constant", record_args(rec(createdAt=NOW - week), now=NOW)),
        (
            "lastUsedAt wins over createdAt",
            record_args(rec(createdAt=0, lastUsedAt=NOW), now=NOW),
        ),
        ("future timestamp clamps to 1", record_args(rec(createdAt=NOW + DAY), now=NOW)),
        ("very old", record_args(rec(createdAt=0), now=NOW)),
        ("one millisecond", record_args(rec(createdAt=NOW - 1), now=NOW)),
    ]


def _score_boundaries() -> list[tuple[str, Args]]:
    return [
        ("full hit, fresh", record_args(rec(), query="deploy friday", now=NOW)),
        ("no hit still scores recency", record_args(rec(), query="zzz", now=NOW)),
        (
            "hit on an old record used recently",
            record_args(rec(createdAt=0, lastUsedAt=NOW - DAY), query="deploy", now=NOW),
        ),
    ]


def _rank_boundaries() -> list[tuple[str, Args]]:
    a = rec("mem:org:acme:1", "deploy friday", createdAt=NOW - DAY)
    b = rec("mem:org:acme:2", "deploy", createdAt=NOW)
    c = rec("mem:org:acme:3", "deploy", createdAt=NOW)
    d = rec("mem:org:acme:4", "alpha", createdAt=NOW)
    e = rec("mem:org:acme:5", "friday deploy", createdAt=NOW - DAY, lastUsedAt=NOW)
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
        (
            "which of two comes first depends on tau: 2 of 3 tokens fresh, 3 of 3 ten days old",
            {
                "records": [
                    rec("mem:org:acme:6", "deploy friday", createdAt=NOW),
                    rec("mem:org:acme:7", "deploy friday staging", createdAt=NOW - 10 * DAY),
                ],
                "query": "deploy friday staging",
                "limit": 1,
            },
        ),
    ]


def _rank_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """An id the query does not hit: the gate (MEM-SCORE.4); else order or length
    (MEM-SCORE.5)."""
    value = got.get("ok") if isinstance(got, dict) else None
    if not isinstance(value, list):
        return ()
    query = a["query"]
    hits = {r.id for r in memory_records(a["records"]) if keyword_match(query, r) > 0}
    if tokenize(query) and all(i in hits for i in value):
        return ("MEM-SCORE.5",)
    return ("MEM-SCORE.4",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "tokenize",
        MEMORY,
        ("MEM-SCORE.2",),
        "lower-case, then the ASCII runs [a-z0-9]+",
        _tokenize,
        st.fixed_dictionaries({"text": any_text}),
        text_boundaries,
    ),
    fn(
        "normalizeText",
        MEMORY,
        ("MEM-WRITE.2",),
        "the dedup key",
        _normalize,
        st.fixed_dictionaries({"text": any_text}),
        _normalize_boundaries,
        _normalize_judge,
    ),
    fn(
        "keywordMatch",
        MEMORY,
        ("MEM-SCORE.2",),
        "fraction of query tokens the record holds",
        _keyword_match,
        st.fixed_dictionaries({"query": queries, "record": REC}),
        _km_boundaries,
    ),
    fn(
        "recencyScore",
        MEMORY,
        ("MEM-SCORE.3", "MEM-SCORE.9"),
        "exp(-age/tau) from lastUsedAt ?? createdAt",
        _recency,
        st.fixed_dictionaries({"record": REC, "now": st.just(NOW)}),
        _rec_boundaries,
        recency_judge,
        references=TAU_REFERENCE,
    ),
    fn(
        "scoreRecord",
        MEMORY,
        ("MEM-SCORE.1", "MEM-SCORE.9"),
        "0.7 keywordMatch + 0.3 recency",
        _score,
        st.fixed_dictionaries({"query": queries, "record": REC, "now": st.just(NOW)}),
        lambda: with_now(_score_boundaries()),
        score_judge,
        references=TAU_REFERENCE,
    ),
    fn(
        "rankRecords",
        MEMORY,
        ("MEM-SCORE.4", "MEM-SCORE.5", "MEM-SCORE.6"),
        "gate, score, sort, cut",
        _rank,
        st.fixed_dictionaries(
            {"records": memory_list(), "query": queries, "limit": limits, "now": st.just(NOW)}
        ),
        lambda: with_now(_rank_boundaries()),
        _rank_judge,
        references=("MEM-SCOPE.8", *TAU_REFERENCE),
        blame=_rank_blame,
    ),
)
