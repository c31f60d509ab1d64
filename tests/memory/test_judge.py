"""The one judge (reference.memory.judge): every accepted answer of each memory open point is
accepted, and what stays required is still enforced."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference.memory.engine import candidate_cap, fts_match_tokens
from reference.memory.judge import (
    _term_views,
    eviction_allowed,
    eviction_picks,
    keywords_problem,
    listing_problem,
    prefilter_must_pass,
    record_problems,
    relevance_forced,
    retrieval_problem,
    robust_tokens,
)
from reference.memory.records import MemoryRecord
from reference.memory.scoring import tokenize
from reference.memory.wire import record_to_wire

NOW = 10_000


def rec(n: int, text: str, created: int = 100, kws: tuple[str, ...] = ()) -> MemoryRecord:
    return MemoryRecord(
        id=f"mem:s:{n}", scope_key="s", kind="fact", text=text, keywords=kws,
        source_thread_key="t", source_run_id=None, created_at=created, last_used_at=None,
        use_count=0, confidence=None, supersedes=None, status="active",
    )  # fmt: skip


def ids(*ns: int) -> list[str]:
    return [f"mem:s:{n}" for n in ns]


# --------------------------------------------------------------------------- MEM-RECORD.5


@pytest.mark.clause("MEM-RECORD.5", "MEM-RECORD.4")
def test_keywords_of_an_unkeyworded_record_derived_empty_or_any_text_subset() -> None:
    r = rec(1, "Deploy with make ship", kws=("deploy", "with", "make", "ship"))
    for shown in (["deploy", "with", "make", "ship"], [], ["ship"], ["Deploy with make ship"]):
        assert keywords_problem(r, shown, given=False) is None, shown
    bad = keywords_problem(r, ["deploy", "staging"], given=False)
    assert bad is not None and "MEM-RECORD.5" in bad.clauses  # staging would change matching
    assert keywords_problem(r, "deploy", given=False) is not None  # not a list
    # written WITH keywords: exactly those
    assert keywords_problem(r, ["deploy", "with", "make", "ship"], given=True) is None
    assert keywords_problem(r, [], given=True) is not None


# --------------------------------------------------------------------------- MEM-RECORD.4


@pytest.mark.clause("MEM-RECORD.4", "MEM-STORE.3")
def test_a_never_used_record_shows_no_last_use_or_its_creation_time() -> None:
    r = rec(1, "deploy")
    wire = record_to_wire(replace(r, created_at=5))
    assert "lastUsedAt" not in wire
    assert record_problems(r, wire, keywords_given=True, bumped=False) == []
    assert record_problems(r, {**wire, "lastUsedAt": 5}, keywords_given=True, bumped=False) == []
    probs = record_problems(r, {**wire, "lastUsedAt": 6}, keywords_given=True, bumped=False)
    assert probs and "MEM-STORE.3" in probs[0].clauses
    # after this retrieval's bump (or once used) lastUsedAt must be there
    assert record_problems(r, wire, keywords_given=True, bumped=True)


@pytest.mark.clause("MEM-RECORD.1", "MEM-WIRE.16")
def test_record_fields_are_compared_exactly_and_unknown_members_ignored() -> None:
    r = replace(rec(1, "deploy"), source_run_id="run-1", confidence=0.75)
    wire = record_to_wire(r)
    assert record_problems(r, {**wire, "x-extra": 1}, keywords_given=True, bumped=False) == []
    for change in ({"text": "Deploy"}, {"confidence": 0.7}, {"sourceRunId": "run-2"}):
        assert record_problems(r, {**wire, **change}, keywords_given=True, bumped=False), change
    wire.pop("confidence")
    assert record_problems(r, wire, keywords_given=True, bumped=False)


# --------------------------------------------------------------------------- MEM-SCORE.5


@pytest.mark.clause("MEM-SCORE.5")
@given(st.permutations([1, 2, 3]), st.integers(1, 3))
def test_equal_scores_any_order_and_any_survivors_at_the_limit(
    order: list[int], limit: int
) -> None:
    active = [rec(1, "deploy a"), rec(2, "deploy b"), rec(3, "deploy c")]
    assert retrieval_problem(active, "deploy", limit, NOW, ids(*order[:limit])) is None


# --------------------------------------------------------------------------- MEM-SCORE.7


@pytest.mark.clause("MEM-SCORE.7", "MEM-SCORE.2", "MEM-SCORE.3")
def test_a_repeated_query_token_counts_each_time_and_the_other_reading_is_told_apart() -> None:
    """``rollout rollout canary``: the reference counts ``rollout`` twice (2/3 beats 1/3), the
    other reading of §5 once (1/2 each, so the newer record ranks first).  Each reading allows
    exactly its own order."""
    older, newer = rec(1, "beta rollout", created=100), rec(2, "canary checks", created=200)
    query = "rollout rollout canary"
    assert retrieval_problem([older, newer], query, 5, NOW, ids(1, 2)) is None
    problem = retrieval_problem([older, newer], query, 5, NOW, ids(2, 1))
    assert problem is not None and "MEM-SCORE.2" in problem.clauses
    assert retrieval_problem([older, newer], query, 5, NOW, ids(2, 1), distinct=True) is None
    assert retrieval_problem([older, newer], query, 5, NOW, ids(1, 2), distinct=True) is not None


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta"])


@pytest.mark.clause("MEM-SCORE.7", "MEM-SCORE.2")
@given(
    st.lists(st.lists(_WORDS, min_size=1, max_size=3), min_size=1, max_size=5),
    st.lists(_WORDS, min_size=1, max_size=4),
    st.data(),
)
def test_the_two_readings_differ_only_on_a_query_that_repeats_a_token(
    texts: list[list[str]], words: list[str], data: st.DataObject
) -> None:
    """For a query without a repeated token both readings allow the same answers, and the
    answer ranked by distinct tokens is always one the distinct reading allows."""
    active = [rec(i, " ".join(t), created=100 + 7 * i) for i, t in enumerate(texts)]
    query = " ".join(words)
    matching = [r for r in active if set(tokenize(r.text)) & set(words)]
    answer = [r.id for r in data.draw(st.permutations(matching))]
    limit = data.draw(st.integers(1, 6))
    answer = answer[:limit]
    ours = retrieval_problem(active, query, limit, NOW, answer)
    other = retrieval_problem(active, query, limit, NOW, answer, distinct=True)
    if len(set(words)) == len(words):
        assert (ours is None) == (other is None)
    distinct = list(dict.fromkeys(words))
    ranked = sorted(
        matching,
        key=lambda r: (
            -sum(1 for w in distinct if w in tokenize(r.text)) / len(distinct),
            -r.created_at,
        ),
    )
    best = [r.id for r in ranked][:limit]
    assert retrieval_problem(active, query, limit, NOW, best, distinct=True) is None


# --------------------------------------------------------------------------- MEM-STORE.5


def _long_query(extra: str) -> str:
    return " ".join(f"longtoken{i:02d}" for i in range(30)) + " " + extra


@pytest.mark.clause("MEM-STORE.5")
def test_the_24_longest_trim_applied_or_not_both_pass() -> None:
    query = _long_query("xy")
    assert len(set(tokenize(query))) > 24 and "xy" not in fts_match_tokens(query)
    active = [rec(1, "xy"), rec(2, "longtoken03 here")]
    assert retrieval_problem(active, query, 5, NOW, ids(2)) is None  # trimmed: xy not a candidate
    assert retrieval_problem(active, query, 5, NOW, ids(2, 1)) is None  # not trimmed
    assert retrieval_problem(active, query, 5, NOW, []) is not None  # a kept token's hit is due
    assert listing_problem(active, query, 5, ids(2)) is None
    assert listing_problem(active, query, 5, ids(2, 1)) is None
    assert listing_problem(active, query, 5, ids(1)) is not None
    # 24 or fewer distinct tokens: nothing may be missing
    assert retrieval_problem(active, "longtoken03 xy", 5, NOW, ids(2)) is not None
    assert listing_problem(active, "longtoken03 xy", 5, ids(2)) is not None


@pytest.mark.clause("MEM-STORE.5")
def test_a_token_glued_to_non_ascii_text_may_be_missed_by_the_prefilter() -> None:
    assert robust_tokens("café au lait, naïve-ok x\u00e9y") == {"au", "lait", "ok"}
    glued, clean = rec(1, "le café"), rec(2, "caf deploy")
    assert not prefilter_must_pass(glued, "caf") and prefilter_must_pass(clean, "caf")
    active = [glued, clean]
    assert retrieval_problem(active, "caf", 5, NOW, ids(2)) is None  # FTS5 sees "cafe"/"café"
    assert retrieval_problem(active, "caf", 5, NOW, ids(2, 1)) is None  # engine tokens indexed
    assert retrieval_problem(active, "caf", 5, NOW, ids(1)) is not None  # the clean hit is due
    assert listing_problem(active, "caf", 5, ids(2)) is None
    # a keyword counts the same way
    kw = rec(3, "nothing here", kws=("café",))
    assert not prefilter_must_pass(kw, "caf")


# --------------------------------------------------------------------------- MEM-STORE.6


@pytest.mark.clause("MEM-STORE.6", "MEM-SCORE.5")
def test_more_matches_than_the_cap_leave_the_candidates_to_the_store() -> None:
    # 70 matches, cap 50: 60 older (created 10) and 10 newer (created 20) records
    active = [rec(i, f"deploy item{i}", 10 if i <= 60 else 20) for i in range(1, 71)]
    assert candidate_cap(5) == 50
    older = ids(1, 2, 3, 4, 5)
    assert retrieval_problem(active, "deploy", 5, NOW, older) is None  # bm25 chose 50 old ones
    assert retrieval_problem(active, "deploy", 5, NOW, ids(61, 62, 63, 64, 65)) is None
    # still required: exactly `limit`, best first, and a cap-sized set explaining the answer
    assert retrieval_problem(active, "deploy", 5, NOW, older[:4]) is not None
    assert retrieval_problem(active, "deploy", 5, NOW, ids(1, 61, 2, 3, 4)) is not None
    few_old = [rec(i, f"deploy item{i}", 10 if i <= 45 else 20) for i in range(1, 71)]
    assert retrieval_problem(few_old, "deploy", 5, NOW, older) is not None


@pytest.mark.clause("MEM-STORE.6")
def test_a_relevant_but_old_record_past_the_cap_must_reach_the_engine() -> None:
    # seed §17's red-verified row: one old record matches both query words, 55 newer records
    # only one; any bm25 order hands the old one to the engine, which ranks it first
    old = rec(1, "harbour quokka", created=10)
    crowd = [rec(i, f"harbour note{i}", created=20) for i in range(2, 57)]
    active = [old, *crowd]
    assert [r.id for r in relevance_forced(active, "quokka harbour", 50)] == [old.id]
    assert retrieval_problem(active, "quokka harbour", 1, NOW, [old.id]) is None
    starved = retrieval_problem(active, "quokka harbour", 1, NOW, ids(56))
    assert starved is not None and starved.clauses == ("MEM-STORE.6",)
    assert retrieval_problem(active, "quokka harbour", 5, NOW, ids(56, 55, 54, 53, 52)) is not None
    # not forced when a bm25 could rank it lower: a longer text, more repeats elsewhere, or
    # non-ASCII text (a tokenizer may see other words)
    long_old = rec(1, "harbour quokka with many more words in it", created=10)
    assert relevance_forced([long_old, *crowd], "quokka harbour", 50) == []
    twice = [rec(i, f"harbour harbour{i} harbour", created=20) for i in range(2, 57)]
    assert relevance_forced([old, *twice], "quokka harbour", 50) == []
    assert relevance_forced([rec(1, "harbour quokka é", 10), *crowd], "quokka harbour", 50) == []
    # and at most cap matches: every match reaches the engine anyway (nothing forced needed)
    assert retrieval_problem([old, *crowd[:40]], "quokka harbour", 1, NOW, [old.id]) is None


def _forced_by_the_letter(matching: list[MemoryRecord], query: str, cap_n: int) -> list[str]:
    """MEM-STORE.6's forced records, stated pair by pair on the token lists themselves: a
    record is forced when fewer than ``cap_n`` others are not strictly less relevant than it
    in every view (no longer, each query token at least as often, some token they lack)."""
    kept = set(fts_match_tokens(query))

    def beats(rv: tuple[list[str], ...], sv: tuple[list[str], ...]) -> bool:
        return all(
            len(a) <= len(b)
            and all(a.count(t) >= b.count(t) for t in kept)
            and any(a.count(t) > 0 and b.count(t) == 0 for t in kept)
            for a, b in zip(rv, sv, strict=True)
        )

    forced = []
    for r in matching:
        rv = _term_views(r)
        if rv is None or not prefilter_must_pass(r, query):
            continue
        others = [s for s in matching if s.id != r.id]
        beaten = sum(1 for s in others if (sv := _term_views(s)) is not None and beats(rv, sv))
        if len(others) - beaten < cap_n:
            forced.append(r.id)
    return forced


WORDS = ("harbour", "quokka", "note", "deploy", "é")


@pytest.mark.clause("MEM-STORE.6")
@given(
    texts=st.lists(
        st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.booleans()),
        min_size=2,
        max_size=14,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    must_beat=st.integers(0, 4),
)
# more repeats of a token the other record holds too is not "a token it lacks"
@example(
    texts=[(["harbour", "harbour"], False), (["harbour", "note"], False)],
    query=["harbour"],
    must_beat=1,
)
def test_relevance_forced_is_the_pairwise_rule(
    texts: list[tuple[list[str], bool]], query: list[str], must_beat: int
) -> None:
    """The cap sits where a record must beat ``must_beat`` others to be forced: the boundary."""
    cap_n = max(0, len(texts) - must_beat)
    matching = [
        rec(i, " ".join(words), created=i, kws=(words[0],) if with_kw else ())
        for i, (words, with_kw) in enumerate(texts, start=1)
    ]
    q = " ".join(query)
    assert [r.id for r in relevance_forced(matching, q, cap_n)] == _forced_by_the_letter(
        matching, q, cap_n
    )


@pytest.mark.clause("MEM-STORE.6")
def test_a_larger_cap_is_conforming_and_a_smaller_one_is_not() -> None:
    active = [rec(i, f"deploy item{i}", 10 if i <= 60 else 20) for i in range(1, 71)]
    best = ids(61, 62, 63, 64, 65)  # what a cap of >= 70 candidates returns
    assert retrieval_problem(active, "deploy", 5, NOW, best) is None
    # 40 matches fit under the floor of 50: a store capping at 30 could return old ones only
    small = [rec(i, f"deploy item{i}", 10 if i <= 35 else 20) for i in range(1, 41)]
    assert retrieval_problem(small, "deploy", 5, NOW, ids(1, 2, 3, 4, 5)) is not None


# --------------------------------------------------------------------------- MEM-CAP.2


@pytest.mark.clause("MEM-CAP.2", "MEM-CAP.1")
def test_every_order_among_full_eviction_ties_is_allowed() -> None:
    batch = [rec(1, "a", 10), rec(2, "b", 10), rec(3, "c", 10)]
    old = rec(4, "d", 5)
    active = [old, *batch]
    assert eviction_allowed(active, 2, ids(4, 1))  # insertion order (the model)
    assert eviction_allowed(active, 2, ids(4, 3))  # newest of the tie first (a variant)
    assert not eviction_allowed(active, 2, ids(1, 2))  # the older record must go first
    assert not eviction_allowed(active, 2, ids(4))  # exactly the excess
    assert {frozenset(p) for p in eviction_picks(active, 2)} == {
        frozenset(ids(4, n)) for n in (1, 2, 3)
    }


@pytest.mark.clause("MEM-STORE.7", "MEM-STORE.5")
def test_a_folding_full_text_filter_may_list_accented_words_for_their_plain_form() -> None:
    accented, plain, other = rec(1, "Résumé template"), rec(2, "resume later"), rec(3, "alpha")
    active = [accented, plain, other]  # newest first: 3, 2, 1
    assert listing_problem(active, "resume", 5, ids(2)) is None  # the engine's whole-token test
    assert listing_problem(active, "resume", 5, ids(2, 1)) is None  # FTS5 unicode61 folds é
    assert listing_problem(active, "resume", 5, ids(1)) is not None  # the plain hit is due
    assert listing_problem(active, "resume", 5, ids(2, 3)) is not None  # alpha never matches
    assert listing_problem(active, "resume", 5, ids(1, 2)) is not None  # still newest first
    # retrieval keeps the engine's gate over the full query: no folding there
    assert retrieval_problem(active, "resume", 5, NOW, ids(2, 1)) is not None


@pytest.mark.clause("MEM-WRITE.2")
def test_a_newer_unicode_may_lower_case_a_letter_this_python_does_not_know() -> None:
    import unicodedata

    from reference.memory.engine import has_unassigned, may_fold_equal, normalize_text
    from reference.memory.records import MemoryCandidate
    from reference.memory.store import empty_store, store_write
    from reference.memory.wire import WireRequest, handle

    if unicodedata.category("\ua7dc") != "Cn":
        pytest.skip("this Python already knows U+A7DC")
    upper, lower = "route \ua7dc", "route \u019b"
    assert has_unassigned(upper) and not has_unassigned(lower)
    assert normalize_text(upper) != normalize_text(lower)
    assert may_fold_equal(normalize_text(upper), normalize_text(lower))
    assert may_fold_equal(normalize_text(upper), normalize_text(upper))
    assert not may_fold_equal(normalize_text(upper), "route x")  # never to ASCII: tokens stay
    assert not may_fold_equal(normalize_text(upper), "route \u0393")  # not to a capital
    assert not may_fold_equal("route \ua7dc", "ro\u019bte \ua7dc")  # a known position differs
    assert not may_fold_equal(normalize_text(upper), "route \u019bx")  # another length
    cands = [MemoryCandidate("fact", t, "t") for t in (upper, lower)]
    _, older = store_write(empty_store(), "s", cands, 1)
    _, newer = store_write(empty_store(), "s", cands, 1, newer_unicode=True)
    assert (older.inserted, older.deduped) == (2, 0)
    assert (newer.inserted, newer.deduped) == (1, 1)
    # the wire model offers both answers to the second write
    state, _ = store_write(empty_store(), "org:x", cands[:1], 1)
    body = (
        b'{"scopeKey": "org:x", "records": [{"kind": "fact", "text": "route \\u019b",'
        b' "sourceThreadKey": "t"}]}'
    )
    headers = (("authorization", "Bearer tok"), ("content-length", str(len(body))))
    req = WireRequest("POST", "/write", headers, body)
    _, allowed = handle(state, req, 2, "tok")
    bodies = [o.body for o in allowed.options if o.status == 200]
    assert len(bodies) == 2
