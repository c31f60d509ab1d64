"""Every clause id the product code names exists in ``specs/``, and the model cites exact ids.

A clause id is a stable name (``specs/README.md``): a literal that no spec defines is a typo or a
clause that was never written, and a range (``MEM-WRITE.1-5``) cannot be found with ``grep
MEM-WRITE.3``.  Product code is ``reference/`` and ``conformance/`` (its Python and its corpus)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.clauses import CLAUSE_ID, parse_spec

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("reference", "conformance")
RANGE = re.compile(r"\b(?:MEM|LED)-[A-Z][A-Z0-9]*\.\d+[-–]\d+\b")


def _product_files() -> list[Path]:
    files: list[Path] = []
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*")):
            if "_specs" in path.parts or not path.is_file():
                continue
            if path.suffix in (".py", ".json"):
                files.append(path)
    return files


def _defined() -> set[str]:
    return {c.id for spec in sorted((ROOT / "specs").glob("*.md")) for c in parse_spec(spec)}


@pytest.mark.clause()
def test_every_clause_id_in_the_product_code_is_defined_in_specs() -> None:
    defined = _defined()
    unknown = [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
        for path in _product_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in CLAUSE_ID.finditer(line)
        if m.group(0) not in defined
    ]
    assert not unknown, f"{len(unknown)} clause id(s) no spec defines:\n" + "\n".join(unknown[:20])


@pytest.mark.clause()
def test_product_code_cites_exact_clause_ids_not_ranges() -> None:
    ranges = [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
        for path in _product_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in RANGE.finditer(line)
    ]
    assert not ranges, "cite each clause id (grep finds them); ranges:\n" + "\n".join(ranges)
