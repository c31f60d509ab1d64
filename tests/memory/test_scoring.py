"""MEM-SCORE: tokenizer, keyword match, recency and the score formula."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.records import MemoryRecord
from reference.memory.scoring import (
    ALPHA,
    BETA,
    TAU_MS,
    keyword_match,
    recency_score,
    record_tokens,
    score_record,
    tokenize,
)
from tests.common.memory_strategies import DAY, T0, any_text, make_record, query_text, records, word


@pytest.mark.clause("MEM-SCORE.2")
@given(any_text)
def test_tokenize_is_the_ascii_runs_of_the_lowercased_text(text: str) -> None:
    tokens = tokenize(text)
    assert all(re.fullmatch("[a-z0-9]+", t) for t in tokens)
    # Nothing is lost or invented: every ASCII alphanumeric of the lower-cased text is in a
    # token, in order, and the separators between tokens are non-alphanumeric.
    lowered = text.lower()
    assert "".join(tokens) == "".join(
        c for c in lowered if c in "abcdefghijklmnopqrstuvwxyz0123456789"
    )
    assert len(tokens) == len(re.findall("[a-z0-9]+", lowered))


@pytest.mark.clause("MEM-SCORE.2")
def test_tokenize_examples() -> None:
    assert tokenize("Deploy deploy, X-ray! café 42") == [
        "deploy",
        "deploy",
        "x",
        "ray",
        "caf",
        "42",
    ]
    assert tokenize("") == []
    assert tokenize("é — ü") == []


@pytest.mark.clause("MEM-SCORE.2")
def test_keyword_match_counts_query_repeats() -> None:
    rec = make_record("mem:o:1", text="deploy the thing")
    assert keyword_match("deploy deploy x", rec) == pytest.approx(2 / 3)
    assert keyword_match("x deploy", rec) == pytest.approx(1 / 2)
    assert keyword_match("", rec) == 0.0
    assert keyword_match("!!! ééé", rec) == 0.0


@pytest.mark.clause("MEM-SCORE.2")
def test_keyword_match_is_whole_token_not_substring() -> None:
    rec = make_record("mem:o:1", text="alphabet deployment", keywords=["shipping"])
    assert keyword_match("a", rec) == 0.0
    assert keyword_match("deploy", rec) == 0.0
    assert keyword_match("ship", rec) == 0.0
    assert keyword_match("alphabet", rec) == 1.0


@pytest.mark.clause("MEM-SCORE.2")
def test_keywords_count_as_tokens() -> None:
    rec = make_record("mem:o:1", text="nothing here", keywords=["Deploy", "ci-cd"])
    assert keyword_match("deploy", rec) == 1.0
    assert keyword_match("cd", rec) == 1.0
    assert record_tokens(rec) == {"nothing", "here", "deploy", "ci", "cd"}


@pytest.mark.clause("MEM-SCORE.2")
@given(query_text, records(min_size=1, max_size=1))
def test_keyword_match_is_the_share_of_query_tokens_present(
    query: str, recs: list[MemoryRecord]
) -> None:
    rec = recs[0]
    q = tokenize(query)
    km = keyword_match(query, rec)
    assert 0.0 <= km <= 1.0
    if not q:
        assert km == 0.0
        return
    bag = set(tokenize(rec.text)) | {t for k in rec.keywords for t in tokenize(k)}
    assert km == pytest.approx(sum(t in bag for t in q) / len(q))
    # whole-token: a query token that is only a substring of record tokens never counts
    for t in q:
        if t not in bag:
            probe = make_record("p", text=rec.text, keywords=rec.keywords)
            assert keyword_match(t, probe) == 0.0


@pytest.mark.clause("MEM-SCORE.3")
def test_recency_examples() -> None:
    rec = make_record("r", created_at=T0)
    assert recency_score(rec, T0) == 1.0
    assert recency_score(rec, T0 + TAU_MS) == pytest.approx(1 / math.e)
    assert TAU_MS == 604_800_000
    # last_used_at wins over created_at
    used = make_record("r", created_at=T0, last_used_at=T0 + 3 * DAY)
    assert recency_score(used, T0 + 3 * DAY) == 1.0
    # a timestamp in the future is clamped to age 0
    assert recency_score(make_record("r", created_at=T0 + DAY), T0) == 1.0


@pytest.mark.clause("MEM-SCORE.3")
@given(
    st.integers(T0, T0 + 60 * DAY),
    st.one_of(st.none(), st.integers(T0, T0 + 60 * DAY)),
    st.integers(0, 90 * DAY),
    st.integers(1, 30 * DAY),
)
def test_recency_decays_with_age(created: int, used: int | None, age: int, more: int) -> None:
    rec = make_record("r", created_at=created, last_used_at=used)
    ref = used if used is not None else created
    r1 = recency_score(rec, ref + age)
    r2 = recency_score(rec, ref + age + more)
    assert 0.0 < r2 <= r1 <= 1.0
    assert r1 == pytest.approx(math.exp(-age / TAU_MS))
    assert recency_score(rec, ref - more) == 1.0


@pytest.mark.clause("MEM-SCORE.1")
@given(query_text, records(min_size=1, max_size=1), st.integers(T0, T0 + 40 * DAY))
def test_score_is_the_weighted_sum(query: str, recs: list[MemoryRecord], now: int) -> None:
    rec = recs[0]
    expected = 0.7 * keyword_match(query, rec) + 0.3 * recency_score(rec, now)
    assert ALPHA == 0.7 and BETA == 0.3
    assert score_record(query, rec, now) == pytest.approx(expected)


@pytest.mark.clause("MEM-SCORE.1")
@given(word, st.integers(0, 400 * DAY))
def test_keyword_dominates_recency(w: str, age: int) -> None:
    """A full match that is very old still beats a half match used right now."""
    old_full = make_record("a", text=w, created_at=T0)
    fresh_half = make_record("b", text=w, created_at=T0 + age)
    query = f"{w} zzzunmatched"
    now = T0 + age
    assert score_record(w, old_full, now) > score_record(query, fresh_half, now)
