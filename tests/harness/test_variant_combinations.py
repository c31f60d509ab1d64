"""Allowed choices combine: every pair of variants that can coexist runs in one store, and the
whole corpus judges every combination CONFORMANT.

``catalogue.variant_combinations`` gives a few stores that together contain every coexisting
pair of variants of one protocol (a variant that cannot coexist with another names it in its
``conflicts``).  Each is judged here on the whole corpus (no machines: a few seconds each), so
every hand-written ``expect`` of the corpus is checked against every allowed variant, in
combination.  ``memspec selftest`` runs the same combinations with the machines too
(``--kind combination``; ``--all-pairs``: one store per pair); ``make variants`` plays the whole
corpus and the ci machines against each variant alone.
"""

from __future__ import annotations

import pytest

from conformance.commands import selftest
from conformance.embedded import catalogue

COMBINATIONS = [c for c in selftest.catalogue_cells() if c.kind == "combination"]


@pytest.mark.clause()
def test_the_combinations_contain_every_pair_of_coexisting_variants() -> None:
    for protocol in ("memory", "ledger"):
        pairs = set(catalogue.variant_pairs(protocol))
        sets = catalogue.variant_combinations(protocol)
        covered = {(a, b) for s in sets for a in s for b in s if a < b}
        assert {tuple(sorted(p)) for p in pairs} <= covered, protocol
        for s in sets:  # nothing that cannot coexist is ever run together
            entries = [catalogue.ENTRIES[n] for n in s]
            assert all(catalogue.coexist(a, b) for a in entries for b in entries if a is not b), s
        names = {v.name for v in catalogue.variants(protocol)}
        assert names == {n for s in sets for n in s}, "a variant in no combination"
    assert len(catalogue.variant_pairs("memory")) >= 100  # most pairs coexist


@pytest.mark.clause()
def test_a_conflict_names_a_variant_of_the_same_protocol() -> None:
    for v in catalogue.variants():
        for other in v.conflicts:
            entry = catalogue.ENTRIES.get(other)
            assert entry is not None and entry.kind == "variant", (v.name, other)
            assert entry.protocol == v.protocol, (v.name, other)
            assert not catalogue.coexist(v, entry) and not catalogue.coexist(entry, v)


@pytest.mark.clause(*sorted({c for v in catalogue.variants() for c in v.clauses}))
@pytest.mark.parametrize("cell", COMBINATIONS, ids=[c.name for c in COMBINATIONS])
def test_every_combination_of_variants_passes_the_whole_corpus(cell: selftest.Cell) -> None:
    row = selftest.run_cell(cell, selftest.Options(corpus_only=True))
    assert row.ok, f"{cell.summary}: judged {row.verdict}: {row.detail}"
