"""The "expected" text of a retrieve is the same on every run of a seed (report.json is compared
byte for byte across runs): a tie group is a set of ids, so its members are listed in a fixed
order, not in the set's iteration order, which follows ``PYTHONHASHSEED``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Six records of one text, created at the same instant: one tie group of six.
_SCRIPT = """
from conformance.oracle.memory.describe import describe_records
from conformance.oracle.memory.worlds import World
from reference.memory.store import empty_store, with_scope_records
from reference.memory.wire import RecordsBody
from tests.common.memory_strategies import T0, make_record

recs = [make_record(f"r{n}", text="deploy window friday", created_at=T0) for n in range(6)]
state = with_scope_records(empty_store(), "org:acme", recs)
spec = RecordsBody("/retrieve", "org:acme", active=tuple(recs), query="deploy window",
                   limit=10, now=T0 + 1, before=state)
print(describe_records(spec, state, World(state)))
"""


@pytest.mark.clause("MEM-SCORE.5")
def test_tie_group_text_does_not_depend_on_the_hash_seed() -> None:
    texts = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        texts.add(out.stdout)
    assert len(texts) == 1, "\n---\n".join(sorted(texts))
    (text,) = texts
    assert "group 1" in text and text.index("r0") < text.index("r5")
