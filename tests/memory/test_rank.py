"""MEM-SCORE.4-6 and MEM-STORE.5/6 helpers: the engine's ranking and its allowed answers."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.engine import candidate_cap, fts_match_tokens, rank_records
from reference.memory.judge import is_allowed_ranking, rank_allowed
from reference.memory.records import MemoryRecord
from reference.memory.scoring import keyword_match, score_record, tokenize
from tests.common.memory_strategies import DAY, T0, make_record, query_text, records

nows = st.integers(T0, T0 + 20 * DAY)
limits = st.integers(0, 10)


@pytest.mark.clause("MEM-SCORE.4", "MEM-SCORE.5", "MEM-SCORE.6")
@given(records(), query_text, limits, nows)
def test_rank_records_gates_sorts_limits_and_does_not_mutate(
    recs: list[MemoryRecord], query: str, limit: int, now: int
) -> None:
    before = copy.deepcopy(recs)
    ranked = rank_records(recs, query, limit, now)
    assert recs == before  # neither the list nor the records change
    assert len(ranked) <= max(limit, 0)
    matching = [r for r in recs if keyword_match(query, r) > 0]
    assert len(ranked) == min(max(limit, 0), len(matching))
    assert all(keyword_match(query, r) > 0 for r in ranked)
    assert all(any(r is x for x in recs) for r in ranked)  # returned as given, no bump
    scores = [score_record(query, r, now) for r in ranked]
    assert scores == sorted(scores, reverse=True)
    # nothing left out scores strictly better than something kept
    if ranked:
        left = [r for r in matching if all(r is not k for k in ranked)]
        assert all(score_record(query, r, now) <= scores[-1] for r in left)
    if not tokenize(query):
        assert ranked == []


@pytest.mark.clause("MEM-SCORE.5")
@given(records(), query_text, nows)
def test_rank_records_is_stable_on_ties(recs: list[MemoryRecord], query: str, now: int) -> None:
    ranked = rank_records(recs, query, len(recs) + 1, now)
    pos = {id(r): i for i, r in enumerate(recs)}
    for a, b in zip(ranked, ranked[1:], strict=False):
        if score_record(query, a, now) == score_record(query, b, now):
            assert pos[id(a)] < pos[id(b)]


@pytest.mark.clause("MEM-SCORE.5")
@given(records(), query_text, limits, nows, st.randoms(use_true_random=False))
def test_allowed_rankings_accept_tie_permutations_and_reject_others(
    recs: list[MemoryRecord], query: str, limit: int, now: int, rnd: random.Random
) -> None:
    ranked = rank_records(recs, query, limit, now)
    ids = [r.id for r in ranked]
    assert is_allowed_ranking(recs, query, limit, now, ids)
    groups = rank_allowed(recs, query, limit, now)
    # the model's own answer is a concatenation of the groups (last one possibly cut)
    flat = [i for g in groups for i in g]
    assert set(ids) <= set(flat) and len(flat) >= len(ids)
    assert all(len(g) > 0 for g in groups)
    # shuffling inside every group (and picking any subset of the last) stays legal
    answer: list[str] = []
    for g in groups:
        members = sorted(g)
        rnd.shuffle(members)
        answer.extend(members)
    answer = answer[: len(ids)]
    assert is_allowed_ranking(recs, query, limit, now, answer)
    # too short, too long, duplicated or foreign answers are illegal
    if ids:
        assert not is_allowed_ranking(recs, query, limit, now, ids[:-1])
        assert not is_allowed_ranking(recs, query, limit, now, ids + ids[:1])
        assert not is_allowed_ranking(recs, query, limit, now, [*ids[:-1], "mem:nope:1"])
    # swapping two records with different scores is illegal
    by_id = {r.id: r for r in recs}
    for i in range(len(ids) - 1):
        a, b = by_id[ids[i]], by_id[ids[i + 1]]
        if score_record(query, a, now) != score_record(query, b, now):
            swapped = ids[:i] + [ids[i + 1], ids[i]] + ids[i + 2 :]
            assert not is_allowed_ranking(recs, query, limit, now, swapped)


@pytest.mark.clause("MEM-SCORE.5")
def test_allowed_ranking_cut_through_a_tie() -> None:
    recs = [make_record(f"mem:o:{i}", text="deploy", created_at=T0) for i in range(1, 5)]
    recs.append(make_record("mem:o:9", text="deploy", created_at=T0 + DAY))  # fresher: best
    groups = rank_allowed(recs, "deploy", 3, T0 + DAY)
    assert groups == [
        frozenset({"mem:o:9"}),
        frozenset({"mem:o:1", "mem:o:2", "mem:o:3", "mem:o:4"}),
    ]
    assert is_allowed_ranking(recs, "deploy", 3, T0 + DAY, ["mem:o:9", "mem:o:4", "mem:o:2"])
    assert not is_allowed_ranking(recs, "deploy", 3, T0 + DAY, ["mem:o:4", "mem:o:9", "mem:o:2"])


@pytest.mark.clause("MEM-STORE.5")
@given(query_text, st.integers(0, 30))
def test_fts_match_tokens_keeps_the_longest_distinct(query: str, k: int) -> None:
    distinct = list(dict.fromkeys(tokenize(query)))
    got = fts_match_tokens(query, k)
    assert len(got) == min(k, len(distinct))
    assert len(set(got)) == len(got) and set(got) <= set(distinct)
    if len(distinct) <= k:
        assert set(got) == set(distinct)
    dropped = [t for t in distinct if t not in got]
    # every dropped token is no longer than every kept one; among equal lengths, the earlier wins
    for d in dropped:
        for g in got:
            assert len(d) <= len(g)
            if len(d) == len(g):
                assert distinct.index(g) < distinct.index(d)


@pytest.mark.clause("MEM-STORE.5")
def test_fts_match_tokens_example() -> None:
    words = [f"w{i:02d}" for i in range(30)] + ["longesttoken", "ab", "w00"]
    got = fts_match_tokens(" ".join(words))
    assert len(got) == 24 and got[0] == "longesttoken" and "ab" not in got
    assert got[1:] == [f"w{i:02d}" for i in range(23)]  # ties: first appearance


@pytest.mark.clause("MEM-STORE.6")
def test_candidate_cap() -> None:
    assert [candidate_cap(n) for n in (1, 8, 10, 11, 50)] == [50, 50, 50, 55, 250]
