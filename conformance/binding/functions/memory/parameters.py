"""The scorer's parameters (``reference/memory/scoring.py``: ``ALPHA``, ``BETA``, ``TAU_MS``):
scoreParameters.

The seed gives α and β exactly and τ only as "≈ 1 week": the seed's rule (the vector's ``rule``
checker) takes α = 0.7, β = 0.3 and any τ that rounds to one week (MEM-SCORE.9); the reference's
exact seven days (MEM-SCORE.10) is the one allowed answer beside it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.judge import Judged, ok
from reference.memory.scoring import TAU_SEED_MAX_MS, TAU_SEED_MIN_MS, score_parameters

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
        ref, {"name": "rule", "rule": SEED_RULE}, reference=ref, reference_clauses=("MEM-SCORE.10",)
    )


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
