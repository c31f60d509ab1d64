"""Exploration profiles for the differential state machines.

``quick``  a smoke run: well under 30 s against the bundled store, random seed (printed, so
           ``--seed N`` reproduces it).
``ci``     bounded and deterministic: a fixed seed unless ``--seed`` is given; both protocols
           together stay under 3 minutes against the bundled store.
``deep``   long exploration: many more and longer runs, random seed.

``budget_s`` is a soft limit on exploration (checked between batches of examples; a fixed-seed
profile ignores it, so its runs are reproducible).  ``shrink_budget_s`` bounds Hypothesis's
shrinking of each distinct divergence: past it, the smallest failing run found so far is
taken, the report says shrinking was cut, and the harness's own chunked step deletion
(``conformance.machines.minimize``) finishes the job.
"""

from __future__ import annotations

from dataclasses import dataclass

CI_SEED = 20_261_130


@dataclass(frozen=True)
class Profile:
    name: str
    max_examples: int
    step_count: int
    budget_s: float
    fixed_seed: int | None = None
    shrink_budget_s: float = 30.0


PROFILES: dict[str, Profile] = {
    "quick": Profile("quick", max_examples=60, step_count=20, budget_s=12.0, shrink_budget_s=6.0),
    "ci": Profile(
        "ci",
        max_examples=200,
        step_count=30,
        budget_s=80.0,
        fixed_seed=CI_SEED,
        shrink_budget_s=6.0,
    ),
    "deep": Profile(
        "deep", max_examples=5000, step_count=60, budget_s=1800.0, shrink_budget_s=600.0
    ),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})") from None
