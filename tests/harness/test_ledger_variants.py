"""Every allowed variant of the ledger binding is judged CONFORMANT (no false alarm).

Each variant (``conformance/embedded/catalogue/ledger_variants.py``) makes one other choice
``specs/ledger.md`` allows; the bundled store runs with it and the whole ledger corpus plus the
ledger state machine judge it through the harness API (``run_pipeline``), as ``memspec run``
does.  The default test run uses a short exploration (``quick`` profile, a few examples, fixed
seed) to stay fast; ``make variants`` sets ``MEMSPEC_VARIANT_PROFILE=ci`` and runs the ci
profile in full for every variant.
"""

from __future__ import annotations

import io
import os
import secrets

import pytest

from conformance.commands.run import run_pipeline, start_bundled_store
from conformance.driver import Secret, TargetConfig
from conformance.embedded import catalogue

PROFILE = os.environ.get("MEMSPEC_VARIANT_PROFILE", "quick")
EXAMPLES = None if PROFILE != "quick" else 4
SEED = 20_261_201

VARIANTS = catalogue.variants("ledger")


def judge(quirks: frozenset[str]) -> tuple[int, list[str]]:
    """Exit code of ``memspec run --spec ledger`` against the store with ``quirks``, and the
    divergences it reported (clause: reason)."""
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token, quirks=quirks)
    try:
        config = TargetConfig(handle.url, Secret(token), 10.0, label="+".join(sorted(quirks)))
        outcome = run_pipeline(
            config,
            spec="ledger",
            profile_name=PROFILE,
            seed=SEED,
            max_examples=EXAMPLES,
            quiet=True,
            out=io.StringIO(),
        )
    finally:
        handle.stop()
    found = [
        f"{','.join(d.get('clauses', []))}: {str(d.get('reason', ''))[:300]}"
        for d in outcome.data.get("divergences", [])
    ]
    return outcome.exit_code, found


@pytest.mark.clause(*sorted({c for v in VARIANTS for c in v.clauses}))
@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_every_ledger_variant_is_conformant(name: str) -> None:
    code, divergences = judge(frozenset({name}))
    assert code == 0, f"{name} judged NOT conformant (a false alarm):\n" + "\n".join(divergences)


@pytest.mark.clause()
def test_there_are_enough_ledger_variants() -> None:
    assert len(VARIANTS) >= 12
