"""The scorer's parameters (``reference/memory/scoring.py``: ``ALPHA``, ``BETA``, ``TAU_MS``):
scoreParameters.

The seed gives α and β exactly and τ only as "≈ 1 week": the seed's rule (the vector's ``rule``
checker) takes α = 0.7, β = 0.3 and any τ that rounds to one week (MEM-SCORE.9); the reference's
exact seven days (MEM-SCORE.10) is the one allowed answer beside it.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from conformance.binding.codec import memory_record, memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.judge import THROWS, Judged, ok
from reference.memory.pool import memory_context_block, pool_records
from reference.memory.scopes import ScopeError
from reference.memory.scoring import (
    ALPHA,
    BETA,
    TAU_SEED_MAX_MS,
    TAU_SEED_MIN_MS,
    keyword_match,
    recency_score,
    score_parameters,
    score_record,
    seed_taus,
)

#: the reference clause that fixes τ at seven days, what a τ-only difference deviates from
TAU_REFERENCE = ("MEM-SCORE.10",)

#: what the seed allows of ``scoreParameters``' answer (MEM-SCORE.9)
SEED_RULE: dict[str, JSON] = {
    "object": {
        "alpha": {"const": 0.7},
        "beta": {"const": 0.3},
        "tauMs": {"range": {"min": TAU_SEED_MIN_MS, "below": TAU_SEED_MAX_MS}},
    }
}


def _parameters(a: Args) -> JSON:
    p = score_parameters()
    return {"alpha": p.alpha, "beta": p.beta, "tauMs": p.tau_ms}


def _parameters_judge(a: Args) -> Judged:
    """α and β exactly; τ anywhere in [half a week, a week and a half) (MEM-SCORE.9); the
    reference's seven days is MEM-SCORE.10."""
    ref = [ok(_parameters(a))]
    return Judged(
        ref, {"name": "rule", "rule": SEED_RULE}, reference=ref, reference_clauses=TAU_REFERENCE
    )


def _recency_bounds(a: Args) -> tuple[float, float]:
    """Recency of the vector's record under the seed's smallest τ and its largest."""
    rec = memory_record(a["record"])
    used = rec.last_used_at if rec.last_used_at is not None else rec.created_at
    age = max(0, int(a["now"]) - used)
    return math.exp(-age / TAU_SEED_MIN_MS), math.exp(-age / TAU_SEED_MAX_MS)


def _within(ref: float, low: float, below: float) -> dict[str, JSON]:
    """The reference's value, or any value of ``[low, below)``; the ``recency == 1`` of a
    record used at ``now`` or later is exact."""
    if low == below:
        return {"const": ref}
    return {"anyOf": [{"const": ref}, {"range": {"min": low, "below": below}}]}


def recency_judge(a: Args) -> Judged:
    """``exp(-age/τ)`` for any τ the seed's "≈ 1 week" admits (MEM-SCORE.3, MEM-SCORE.9); the
    reference's seven days is MEM-SCORE.10."""
    ref = recency_score(memory_record(a["record"]), int(a["now"]))
    low, below = _recency_bounds(a)
    rule = {"name": "rule", "rule": _within(ref, low, below)}
    return Judged([ok(ref)], rule, reference=[ok(ref)], reference_clauses=TAU_REFERENCE)


def score_judge(a: Args) -> Judged:
    """``0.7 keywordMatch + 0.3 recency`` with the recency of :func:`recency_judge`
    (MEM-SCORE.1, MEM-SCORE.9); the reference's τ is MEM-SCORE.10."""
    rec = memory_record(a["record"])
    ref = score_record(a["query"], rec, int(a["now"]))
    km = ALPHA * keyword_match(a["query"], rec)
    low, below = _recency_bounds(a)
    rule = {"name": "rule", "rule": _within(ref, km + BETA * low, km + BETA * below)}
    return Judged([ok(ref)], rule, reference=[ok(ref)], reference_clauses=TAU_REFERENCE)


#: the note a vector's comment gets when the seed's τ allows more than the reference's answer
TAU_NOTE = "tau: any value that rounds to one week (MEM-SCORE.9)"


def over_taus(outcomes: list[JSON]) -> Judged:
    """Every outcome one of the seed's τ gives (``outcomes[0]``: the reference's seven days);
    an answer only another τ gives deviates from MEM-SCORE.10."""
    allowed: list[JSON] = []
    for o in outcomes:
        if o not in allowed:
            allowed.append(o)
    if len(allowed) == 1:
        return Judged(allowed)
    return Judged(allowed, notes=[TAU_NOTE], reference=allowed[:1], reference_clauses=TAU_REFERENCE)


def _pool_at(a: Args, tau: float, block: bool) -> JSON:
    retrieved = {item["scopeKey"]: memory_records(item["records"]) for item in a["retrieved"]}
    args = (retrieved, a["query"], int(a["now"]), int(a["limit"]), int(a["maxTokens"]))
    if block:
        return memory_context_block(*args, tau_ms=tau)
    return [r.id for r in pool_records(*args, tau_ms=tau)]


def _pool_over_taus(a: Args, block: bool) -> Judged:
    """The pool's answer under every τ the seed admits (MEM-SCORE.9): the pooled order is the
    scores' order, recency included."""
    recs = [r for item in a["retrieved"] for r in memory_records(item["records"])]
    try:
        taus = seed_taus(a["query"], recs, int(a["now"]))
        return over_taus([ok(_pool_at(a, t, block)) for t in taus])
    except ScopeError:
        return Judged([THROWS])


def pool_judge(a: Args) -> Judged:
    """``poolRecords`` under every τ of MEM-SCORE.9 (MEM-READ.1, MEM-READ.2)."""
    return _pool_over_taus(a, block=False)


def context_block_judge(a: Args) -> Judged:
    """``memoryContextBlock`` under every τ of MEM-SCORE.9 (MEM-READ.3, MEM-READ.4)."""
    return _pool_over_taus(a, block=True)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "scoreParameters",
        MEMORY,
        ("MEM-SCORE.9", "MEM-SCORE.10"),
        "alpha, beta and the recency time constant tau",
        _parameters,
        st.just({}),
        lambda: [("the weights and tau (tau: any value that rounds to one week)", {})],
        _parameters_judge,
    ),
)
