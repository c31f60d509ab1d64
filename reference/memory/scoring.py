"""Tokenizing and retrieval scoring (MEM-SCORE).

score = ALPHA * keyword_match + BETA * recency, with whole-token keyword matching and an
exponential recency decay of time constant TAU_MS over ``last_used_at ?? created_at``.

Performance only: the tokens of a record and of a query are worked out once per distinct value
(``functools.lru_cache`` on :func:`token_set` and :func:`query_tokens`, pure functions of
immutable strings); what they return is what the uncached definitions return.  The caches are
bounded (2048 entries: tens of megabytes at most, were every text 4000 characters long).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from reference.memory.records import MemoryRecord

ALPHA: Final = 0.7
BETA: Final = 0.3
TAU_MS: Final = 7 * 24 * 3600 * 1000
#: The τ the seed's "≈ 1 week" admits: every value that rounds to one week, from half a week
#: inclusive to a week and a half exclusive (MEM-SCORE.9).
TAU_SEED_MIN_MS: Final = TAU_MS // 2
TAU_SEED_MAX_MS: Final = TAU_MS * 3 // 2

_TOKEN: Final = re.compile(r"[a-z0-9]+")

# JavaScript's ``\s`` class (ECMA-262 WhiteSpace + LineTerminator).  Python's own ``\s``
# differs (it lacks U+FEFF and adds U+001C-U+001F / U+0085), so the class is spelled out.
JS_WHITESPACE: Final = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WS_RUN: Final = re.compile(f"[{JS_WHITESPACE}]+")


def collapse_whitespace(text: str) -> str:
    """Replace every run of (JavaScript) whitespace with one space and trim (MEM-WRITE.2)."""
    return _WS_RUN.sub(" ", text).strip(" ")


def tokenize(text: str) -> list[str]:
    """Lower-case, then the ASCII runs ``[a-z0-9]+``, in order and with repeats (MEM-SCORE.2)."""
    return _TOKEN.findall(text.lower())


def record_tokens(record: MemoryRecord) -> frozenset[str]:
    """The tokens a record can be matched by: its text's and its keywords' (MEM-SCORE.2).

    Each keyword counts as the tokens ``tokenize`` finds in it, so a keyword is matched by
    exactly the same rule as the text.
    """
    return token_set(record.text, record.keywords)


@lru_cache(maxsize=2048)
def token_set(text: str, keywords: tuple[str, ...]) -> frozenset[str]:
    """The tokens of ``text`` and of each of ``keywords`` (MEM-SCORE.2): what
    :func:`record_tokens` reads of a record, memoized per (text, keywords)."""
    out = set(tokenize(text))
    for kw in keywords:
        out.update(tokenize(kw))
    return frozenset(out)


@lru_cache(maxsize=1024)
def query_tokens(query: str) -> tuple[str, ...]:
    """``tokenize(query)`` as a tuple (MEM-SCORE.2), memoized per query."""
    return tuple(tokenize(query))


def keyword_match(query: str, record: MemoryRecord, *, distinct: bool = False) -> float:
    """Fraction of the query's tokens (repeats counted) the record holds whole (MEM-SCORE.2).

    0.0 for a query without tokens.  Whole-token, never substring: ``"a"`` does not hit
    ``"alpha"``.  ``distinct``: the other reading of §5's words, over the query's distinct
    tokens (a repeated token counts once); not the reference's (MEM-SCORE.7), only what the
    oracle follows a store that reads §5 so by.
    """
    q = query_tokens(query)
    if distinct:
        q = tuple(dict.fromkeys(q))
    if not q:
        return 0.0
    bag = record_tokens(record)
    hits = sum(1 for t in q if t in bag)
    return hits / len(q)


def record_age(record: MemoryRecord, now: int) -> int:
    """``now`` minus ``last_used_at ?? created_at``, clamped to 0 (MEM-SCORE.3)."""
    ref = record.last_used_at if record.last_used_at is not None else record.created_at
    return max(0, now - ref)


def recency_score(record: MemoryRecord, now: int, *, tau_ms: float = TAU_MS) -> float:
    """``exp(-age / TAU_MS)`` with age measured from ``last_used_at ?? created_at`` (MEM-SCORE.3).

    A negative age (a timestamp after ``now``) is clamped to 0, giving 1.0.  ``tau_ms``: another
    time constant the seed admits (MEM-SCORE.9), for judging an engine that uses one.
    """
    return math.exp(-record_age(record, now) / tau_ms)


def score_record(
    query: str,
    record: MemoryRecord,
    now: int,
    *,
    distinct: bool = False,
    tau_ms: float = TAU_MS,
) -> float:
    """``ALPHA * keyword_match + BETA * recency_score`` (MEM-SCORE.1); ``distinct``: see
    :func:`keyword_match` (MEM-SCORE.7); ``tau_ms``: see :func:`recency_score` (MEM-SCORE.9)."""
    return ALPHA * keyword_match(query, record, distinct=distinct) + BETA * recency_score(
        record, now, tau_ms=tau_ms
    )


def repeats_a_token(query: str) -> bool:
    """Whether the query holds some token more than once: the only queries the two readings
    of keyword match (MEM-SCORE.7) score differently."""
    q = query_tokens(query)
    return len(set(q)) != len(q)


@dataclass(frozen=True)
class ScoreParameters:
    """The scorer's weights and recency time constant (MEM-SCORE.9, MEM-SCORE.10)."""

    alpha: float
    beta: float
    tau_ms: float


def score_parameters() -> ScoreParameters:
    """The reference's parameters: α = 0.7, β = 0.3, τ = seven days (MEM-SCORE.9, MEM-SCORE.10)."""
    return ScoreParameters(ALPHA, BETA, TAU_MS)


def tau_meets_seed(tau_ms: float) -> bool:
    """Whether a time constant is "≈ 1 week" as the seed writes it: it rounds to one week,
    ``TAU_SEED_MIN_MS <= tau_ms < TAU_SEED_MAX_MS`` (MEM-SCORE.9)."""
    return TAU_SEED_MIN_MS <= tau_ms < TAU_SEED_MAX_MS


def _roots(c: float, a: int, b: int, lo: float, hi: float) -> list[float]:
    """Where ``c + BETA * (exp(-a x) - exp(-b x))`` is 0 for ``x`` in ``[lo, hi]``: at most two
    (the difference of two exponentials rises, then falls), each found by bisection."""

    def g(x: float) -> float:
        return c + BETA * (math.exp(-a * x) - math.exp(-b * x))

    cuts = [lo, hi]
    if a > 0 and b > 0 and a != b:
        peak = math.log(a / b) / (a - b)
        if lo < peak < hi:
            cuts = [lo, peak, hi]
    out = []
    for left, right in itertools.pairwise(cuts):
        gl, gr = g(left), g(right)
        if gl == 0 or (gl < 0) == (gr < 0):
            continue
        for _ in range(80):
            mid = (left + right) / 2
            if (g(mid) < 0) == (gl < 0):
                left = mid
            else:
                right = mid
        out.append((left + right) / 2)
    return out


def seed_taus(query: str, records: Sequence[MemoryRecord], now: int) -> tuple[float, ...]:
    """Time constants that between them give every order of ``records``' scores any τ the seed
    admits gives (MEM-SCORE.9): ``TAU_MS`` first, then both ends of the range and one τ inside
    each stretch between two τ where a pair of records changes places (MEM-SCORE.10 is the
    first alone).  A judge that takes the union of what these allow is as strict as the seed.
    """
    lo, hi = 1 / (TAU_SEED_MAX_MS - 1), 1 / TAU_SEED_MIN_MS
    points = sorted({(keyword_match(query, r), record_age(r, now)) for r in records})
    xs = {lo, hi}
    for (ka, aa), (kb, ab) in itertools.combinations(points, 2):
        if aa != ab:
            xs.update(_roots(ALPHA * (ka - kb), aa, ab, lo, hi))
    edges = sorted(xs)
    inner = [(x + y) / 2 for x, y in itertools.pairwise(edges)]
    out = [float(TAU_MS)]
    for x in [lo, hi, *inner]:
        if 1 / x not in out:
            out.append(1 / x)
    return tuple(out)
