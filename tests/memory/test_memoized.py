"""The model's memoized pure functions answer exactly as their definitions (performance only).

Each cache is keyed on everything its result depends on: these properties call the cached
function on inputs that share some of the key and differ in the rest (the same text with other
keywords, the same body on another route, the same string under the other policy) and compare
with the result worked out without any cache.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.oracle.memory.answers import candidates
from conformance.oracle.memory.records import modes, record_problems
from conformance.oracle.memory.worlds import World
from reference.memory.engine import normalize_text
from reference.memory.judge import folded_tokens, robust_tokens
from reference.memory.scoring import (
    collapse_whitespace,
    keyword_match,
    query_tokens,
    record_tokens,
    token_set,
    tokenize,
)
from reference.memory.store import StoreState
from reference.memory.wire import record_to_wire
from reference.memory.wire.handle import read_body
from reference.memory.wire.validation import (
    _ID_FORBIDDEN,
    _ID_OPEN,
    _KEY_FORBIDDEN,
    _KEY_OPEN,
    LENIENT,
    STRICT,
    _char_fault,
    validate_forget,
    validate_list,
    validate_retrieve,
    validate_write,
)
from tests.common.memory_strategies import any_text, make_record, query_text

# A small alphabet, so that the same text comes back with other keywords, other cases, other
# spacing: what a cache keyed on too little would confuse.
small_text = st.lists(
    st.sampled_from(["deploy", "Deploy", "alpha", "café", "x", " ", "  ", "!", "\u212a"]),
    max_size=5,
).map("".join)
keyword_lists = st.lists(small_text, max_size=3).map(tuple)


def _tokens_uncached(text: str, keywords: tuple[str, ...]) -> frozenset[str]:
    out = set(tokenize(text))
    for kw in keywords:
        out.update(tokenize(kw))
    return frozenset(out)


def _match_uncached(query: str, text: str, keywords: tuple[str, ...]) -> float:
    q = tokenize(query)
    if not q:
        return 0.0
    bag = _tokens_uncached(text, keywords)
    return sum(1 for t in q if t in bag) / len(q)


@pytest.mark.clause("MEM-SCORE.2")
@given(text=small_text, kws1=keyword_lists, kws2=keyword_lists, query=small_text | query_text)
def test_record_tokens_and_keyword_match_follow_text_and_keywords(
    text: str, kws1: tuple[str, ...], kws2: tuple[str, ...], query: str
) -> None:
    for kws in (kws1, kws2, kws1):  # one text, its keywords changed, then back
        rec = make_record("mem:o:1", text=text, keywords=kws)
        assert record_tokens(rec) == _tokens_uncached(text, kws)
        assert keyword_match(query, rec) == _match_uncached(query, text, kws)
    assert token_set(text, kws2) == _tokens_uncached(text, kws2)
    assert query_tokens(query) == tuple(tokenize(query))


@pytest.mark.clause("MEM-WRITE.2", "MEM-STORE.5", "MEM-STORE.7", "MEM-SCORE.2")
@given(text=small_text | any_text)
def test_single_text_caches_answer_as_their_definitions(text: str) -> None:
    assert normalize_text(text) == collapse_whitespace(text.lower())
    for cached in (normalize_text, robust_tokens, folded_tokens, query_tokens):
        assert cached(text) == cached.__wrapped__(text)


@pytest.mark.clause("MEM-WIRE.9", "MEM-WIRE.15")
@given(s=st.text(max_size=8))
def test_char_fault_per_policy_and_category_sets(s: str) -> None:
    for forbidden, open_ in ((_KEY_FORBIDDEN, _KEY_OPEN), (_ID_FORBIDDEN, _ID_OPEN)):
        for strict in (True, False):
            assert _char_fault(s, forbidden, open_, strict) == _char_fault.__wrapped__(
                s, forbidden, open_, strict
            )


# Bodies of every route, valid and not: nulls for optional fields, characters only the strict
# policy refuses (a lone surrogate, private use, unassigned), numbers JavaScript reads as
# integers.
_strings = st.sampled_from(
    ["org:a", "deploy", "", " ", "org:\ue000", "org:\ud800", "x\u0378", "mem:org:a:1", "q\ud83d"]
)
_values: st.SearchStrategy[Any] = st.one_of(
    st.none(), _strings, st.sampled_from([0, 1, 5, 5.0, 2.5, 51, 10_000, True])
)
_record = st.fixed_dictionaries(
    {"kind": st.sampled_from(["fact", "summary", "opinion"]), "text": _strings},
    optional={
        "sourceThreadKey": _strings,
        "keywords": st.none() | st.lists(_strings, max_size=2),
        "sourceRunId": _values,
        "supersedes": _values,
        "confidence": _values,
    },
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "scopeKey": _strings,
        "query": _values,
        "limit": _values,
        "id": _values,
        "cap": _values,
        "records": st.lists(_record, max_size=2),
    },
)
VALIDATORS = {
    "/retrieve": validate_retrieve,
    "/write": validate_write,
    "/list": validate_list,
    "/forget": validate_forget,
}


@pytest.mark.clause(
    "MEM-WIRE.7",
    "MEM-WIRE.8",
    "MEM-WIRE.9",
    "MEM-WIRE.10",
    "MEM-WIRE.11",
    "MEM-WIRE.12",
    "MEM-WIRE.14",
    "MEM-WIRE.15",
)
@given(body=bodies)
def test_read_body_is_each_policys_reading_of_that_route(body: dict[str, Any]) -> None:
    """The same text on every route (the route is part of the key); the strict reading first
    and the lenient one only after a strict refusal gives what each policy alone gives."""
    text = json.dumps(body)
    for route, validate in VALIDATORS.items():
        assert read_body(route, text) == (validate(body, STRICT), validate(body, LENIENT))
    assert read_body("/write", text + "x") is None  # not JSON (MEM-WIRE.7)


@pytest.mark.clause("MEM-RECORD.3", "MEM-RECORD.4", "MEM-SEAM.2")
@given(
    texts=st.lists(small_text.filter(bool), min_size=1, max_size=4),
    shown=small_text.filter(bool),
    also_shown=st.booleans(),
    route=st.sampled_from(["/retrieve", "/list"]),
)
def test_candidates_are_the_unseen_records_the_item_fits(
    texts: list[str], shown: str, also_shown: bool, route: str
) -> None:
    """A new target record is matched only to unseen model records of its own text: a record of
    another text never fits (the text is a content problem), so checking only those in full
    finds exactly the records a full check of every one finds."""
    if also_shown:
        texts = [*texts, shown]
    free = [make_record(f"mem:org:acme:{i + 1}", text=t) for i, t in enumerate(texts)]
    item = record_to_wire(make_record("mem:org:acme:9", text=shown))
    w = World(StoreState())
    full = [r.id for r in free if not record_problems(w, item, r, route, 0, modes(route))]
    if not full:
        return  # no fit: ``candidates`` explains why (not compared here)
    assert candidates(w, [item], [0], free, route, 0, StoreState()) == {0: full}
