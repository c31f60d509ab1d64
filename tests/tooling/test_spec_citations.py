"""specs/ stand alone: they cite only the seeds' sections and each other.  Every point the seeds
leave open and this project settles is stated, with its reason, in the clause itself — never by
reference to a document outside the repository (the CLARIFICATIONS notes the project started
from are not shipped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SPECS = Path(__file__).resolve().parents[2] / "specs"
OUTSIDE = re.compile(r"CLARIFICATIONS", re.IGNORECASE)


@pytest.mark.clause()
def test_specs_cite_no_document_outside_the_repository() -> None:
    hits = [
        f"{path.name}:{n}"
        for path in sorted(SPECS.iterdir())
        if path.suffix in (".md", ".yaml", ".yml")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not hits, f"{len(hits)} citation(s) of CLARIFICATIONS: {', '.join(hits[:10])} …"
