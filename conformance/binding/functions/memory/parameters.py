"""The scorer's parameters (``reference/memory/scoring.py``: ``ALPHA``, ``BETA``, ``TAU_MS``):
scoreParameters.

The seed gives α and β exactly and τ only as "≈ 1 week": the seed's rule (the vector's ``rule``
checker) takes α = 0.7, β = 0.3 and any τ that rounds to one week (MEM-SCORE.9); the reference's
exact seven days (MEM-SCORE.10) is the one allowed answer beside it.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from conformance.binding.codec import memory_record
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.judge import Judged, Narrowed, ok
from reference.memory.scoring import (
    ALPHA,
    BETA,
    TAU_SEED_MAX_MS,
    TAU_SEED_MIN_MS,
    keyword_match,
    recency_score,
    score_parameters,
    score_record,
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
    return Judged(ref, {"name": "rule", "rule": SEED_RULE}, reference=Narrowed(TAU_REFERENCE, ref))


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
    return Judged([ok(ref)], rule, reference=Narrowed(TAU_REFERENCE, [ok(ref)]))


def score_judge(a: Args) -> Judged:
    """``0.7 keywordMatch + 0.3 recency`` with the recency of :func:`recency_judge`
    (MEM-SCORE.1, MEM-SCORE.9); the reference's τ is MEM-SCORE.10."""
    rec = memory_record(a["record"])
    ref = score_record(a["query"], rec, int(a["now"]))
    km = ALPHA * keyword_match(a["query"], rec)
    low, below = _recency_bounds(a)
    rule = {"name": "rule", "rule": _within(ref, km + BETA * low, km + BETA * below)}
    return Judged([ok(ref)], rule, reference=Narrowed(TAU_REFERENCE, [ok(ref)]))


#: the note a vector's comment gets when the seed's τ allows more than the reference's answer
TAU_NOTE = "tau: any value that rounds to one week (MEM-SCORE.9)"


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "scoreParameters",
        MEMORY,
        ("MEM-SCORE.9",),
        "alpha, beta and the recency time constant tau",
        _parameters,
        st.just({}),
        lambda: [("the weights and tau (tau: any value that rounds to one week)", {})],
        _parameters_judge,
        references=TAU_REFERENCE,
    ),
)
