"""Every clause says where its rule comes from, and a ``seed`` clause quotes the seed's own words.

The quotes are checked against the seed files themselves: they sit in ``shared/seeds/`` beside
the repository (the CI clone has a copy of ``shared/`` at ``../shared``), or wherever
``MEMSPEC_SEEDS`` points.  They are not shipped with memspec, so an installed wheel never needs
them; a checkout without them fails this test loudly instead of skipping it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from conformance.clauses import (
    SEED_FILES,
    load_clauses,
    parse_spec,
    quote_problems,
    seed_sections,
    source_counts,
    source_problems,
)
from conformance.cli import main

ROOT = Path(__file__).resolve().parents[2]


def seeds_dir() -> Path:
    """The folder holding the two seed files; a missing one fails the test, never skips it."""
    env = os.environ.get("MEMSPEC_SEEDS")
    where = Path(env) if env else ROOT.parent / "shared" / "seeds"
    missing = [name for name in SEED_FILES.values() if not (where / name).is_file()]
    if missing:
        pytest.fail(
            f"the seeds are not at {where} (missing {', '.join(missing)}): clone the repository"
            " beside shared/, or set MEMSPEC_SEEDS to the folder holding them",
            pytrace=False,
        )
    return where


SEED_000 = textwrap.dedent(
    """\
    Cross-session memory

    Some introduction.

    Behavior (PR1)

    1. Flag-gated, off by default. memory.enabled defaults false. When off the dispatcher \
    selects a NullMemoryStore.
    2. The seam. The core depends only on the MemoryStore interface \u2014 one algorithm, \
    two persistence layers.

    Validation criteria

    Criterion\tProof
    Scorer = \u03b1\u00b7keyword + \u03b2\u00b7recency\t[unit] scorer.test.ts
    """
)


def clause_block(cid: str, source: str, *quotes: str) -> str:
    lines = [f"### {cid} — a rule", "- **Level:** MUST", "- **Seed:** §1"]
    if source:
        lines.append(f"- **Source:** {source}")
    lines += [f"- **Quote:** {q}" for q in quotes]
    return "\n".join(lines) + "\n\nText.\n\n"


def tree(tmp_path: Path, *blocks: str) -> tuple[Path, Path]:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "memory.md").write_text("# Memory\n\n" + "".join(blocks))
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / SEED_FILES["memory.md"]).write_text(SEED_000)
    return tmp_path / "specs" / "memory.md", seeds


@pytest.mark.clause()
def test_every_real_clause_has_a_source_and_every_seed_clause_a_quote() -> None:
    clauses = load_clauses(ROOT / "specs")
    assert source_problems(clauses.values()) == []
    counts = source_counts(clauses.values())
    assert set(counts) == {"seed", "binding", "reference"}
    assert all(counts.values())
    # the memory seed has its own wire format: only ledger clauses are memspec's binding
    assert all(c.id.startswith("LED-") for c in clauses.values() if c.source == "binding")


@pytest.mark.clause()
def test_every_seed_quote_stands_in_the_seed_section_it_names() -> None:
    clauses = load_clauses(ROOT / "specs")
    assert quote_problems(clauses.values(), seeds_dir()) == []
    assert sum(len(c.quotes) for c in clauses.values()) >= sum(
        1 for c in clauses.values() if c.source == "seed"
    )


@pytest.mark.clause()
def test_the_readme_gives_the_clause_counts_per_source() -> None:
    counts = source_counts(load_clauses(ROOT / "specs").values())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = (
        f"**{counts['seed']} seed**, **{counts['binding']} binding**,"
        f" **{counts['reference']} reference**"
    )
    assert line in readme, f"README.md should say {line}"


@pytest.mark.clause()
def test_a_seed_clause_without_a_quote_or_with_an_unknown_source_is_a_problem(
    tmp_path: Path,
) -> None:
    spec, _ = tree(
        tmp_path,
        clause_block("MEM-A.1", "seed"),
        clause_block("MEM-A.2", "upstream"),
        clause_block("MEM-A.3", ""),
        clause_block("MEM-A.4", "binding"),
        clause_block("MEM-A.5", "seed", "§1 no closing quote"),
        clause_block("MEM-A.6", "reference"),
    )
    problems = source_problems(parse_spec(spec))
    assert [p.split(":")[0] for p in problems] == [
        "MEM-A.1",
        "MEM-A.2",
        "MEM-A.3",
        "MEM-A.4",
        "MEM-A.5",
        "MEM-A.5",
    ]


@pytest.mark.clause()
def test_a_quote_must_stand_in_the_section_it_names(tmp_path: Path) -> None:
    spec, seeds = tree(
        tmp_path,
        # typographic quotes and line breaks in the spec compare as plain text
        clause_block("MEM-A.1", "seed", '§1 "memory.enabled   defaults false"'),
        clause_block("MEM-A.2", "seed", '§2 "depends only on \u2026 two persistence layers"'),
        clause_block("MEM-A.3", "seed", '§2 "memory.enabled defaults false"'),  # wrong section
        clause_block("MEM-A.4", "seed", '§1 "memory.enabled defaults true"'),  # not the words
        clause_block("MEM-A.5", "seed", '§9 "anything"'),  # no such section
        clause_block("MEM-A.6", "seed", '§2 "two persistence \u2026 one algorithm"'),  # order
        clause_block("MEM-A.7", "seed", 'validation table "Scorer = \u03b1\u00b7keyword"'),
    )
    problems = quote_problems(parse_spec(spec), seeds)
    assert [p.split(":")[0] for p in problems] == ["MEM-A.3", "MEM-A.4", "MEM-A.5", "MEM-A.6"]


@pytest.mark.clause()
def test_the_sections_of_both_seeds() -> None:
    where = seeds_dir()
    memory = seed_sections("memory.md", (where / SEED_FILES["memory.md"]).read_text())
    assert {f"§{n}" for n in range(1, 30)} <= set(memory)
    assert "validation table" in memory and "intro" in memory
    ledger = seed_sections("ledger.md", (where / SEED_FILES["ledger.md"]).read_text())
    assert "Consolidation" in ledger and "opening" in ledger
    assert "closed vocabulary" in ledger["Consolidation"]


@pytest.mark.clause()
def test_memspec_clauses_shows_each_source_and_the_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["clauses", "--root", str(ROOT), "--source", "reference"]) == 0
    out = capsys.readouterr().out
    assert "MEM-WIRE.4         reference" in out
    assert "MEM-WIRE.3 " not in out  # a seed clause is filtered out
    counts = source_counts(load_clauses(ROOT / "specs").values())
    assert main(["clauses", "--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert (
        f"by source: {counts['seed']} seed, {counts['binding']} binding,"
        f" {counts['reference']} reference" in out
    )
    spec, _ = tree(tmp_path, clause_block("MEM-A.1", "seed"))
    assert main(["clauses", "--root", str(tmp_path), "--check"]) == 1
    assert "MEM-A.1: a seed clause quotes the seed" in capsys.readouterr().out
