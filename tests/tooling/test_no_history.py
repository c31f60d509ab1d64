"""History belongs to the commit log (architecture, not a spec clause): the product code's
comments and docstrings say what the code does and why, not which issue or session brought it
("issue 13 ... backed out ... issue 11" read as a diary, and went stale as the code moved)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The product code: what a user installs.
PRODUCT = ("conformance", "reference")

#: A reference to the project's own issue tracker or to a change's history.
HISTORY = re.compile(r"\bissues? #?\d+\b|\bbacked out\b", re.IGNORECASE)


def _history_mentions() -> list[str]:
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if HISTORY.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    return found


@pytest.mark.clause()
def test_product_code_does_not_narrate_its_history() -> None:
    assert _history_mentions() == [], "\n".join(_history_mentions())
