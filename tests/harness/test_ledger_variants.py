"""Every allowed variant of the ledger binding is judged CONFORMANT (no false alarm).

Each variant (``conformance/embedded/catalogue/ledger_variants.py``) makes one other choice
``specs/ledger.md`` allows; the bundled store runs with it and the whole ledger corpus plus the
ledger state machine judge it through the harness API (the run engine), as ``memspec run``
does.  The default test run uses a short exploration (``quick`` profile, a few examples, fixed
seed) to stay fast; ``make variants`` sets ``MEMSPEC_VARIANTS_PROFILE=ci`` and runs the ci
profile in full for every variant.
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
from pathlib import Path

import pytest

from conformance.commands.target import start_bundled_store
from conformance.embedded import catalogue
from conformance.runner import CORPUS_DIR, load_corpus
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine

PROFILE = os.environ.get("MEMSPEC_VARIANTS_PROFILE", "quick")
FULL = PROFILE != "quick"
EXAMPLES = None if FULL else 2
SEED = 20_261_201

VARIANTS = catalogue.variants("ledger")


def corpus_for(areas: set[str], into: Path) -> Path:
    """A corpus folder holding the ledger scenarios that cite a clause of ``areas``."""
    folder = into / "ledger"
    folder.mkdir(parents=True)
    for scenario, shown in load_corpus(["ledger"]):
        if any(c.rsplit(".", 1)[0] in areas for c in scenario.clauses):
            src = Path(shown) if Path(shown).is_absolute() else Path.cwd() / shown
            if not src.exists():
                src = CORPUS_DIR / "ledger" / Path(shown).name
            shutil.copy(src, folder / src.name)
    return into


def judge(quirks: frozenset[str], corpus_dir: Path | None = None) -> tuple[int, list[str]]:
    """Exit code of ``memspec run --spec ledger`` against the store with ``quirks``, and the
    divergences it reported (clause: reason)."""
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token, quirks=quirks)
    try:
        config = TargetConfig(handle.url, Secret(token), 10.0, label="+".join(sorted(quirks)))
        outcome = run_engine(
            config,
            spec="ledger",
            profile=PROFILE,
            seed=SEED,
            examples=EXAMPLES,
            quiet=True,
            out=io.StringIO(),
            corpus_dir=corpus_dir,
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
def test_every_ledger_variant_is_conformant(name: str, tmp_path: Path) -> None:
    entry = catalogue.ENTRIES[name]
    corpus = None if FULL else corpus_for({c.rsplit(".", 1)[0] for c in entry.clauses}, tmp_path)
    code, divergences = judge(frozenset({name}), corpus)
    assert code == 0, f"{name} judged NOT conformant (a false alarm):\n" + "\n".join(divergences)


@pytest.mark.clause()
def test_there_are_enough_ledger_variants() -> None:
    assert len(VARIANTS) >= 12
