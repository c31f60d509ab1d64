"""The run's verdict from its unexpected results: a failure (a divergence, or a deviation at
level ``reference``) is NOT CONFORMANT (exit 1); results that only got no answer are
INDETERMINATE (exit 3), in a run and in the merge of shards alike."""

from __future__ import annotations

import pytest

from conformance.report.merge import _unexpected
from conformance.report.verdict import EXIT_INDETERMINATE, run_exit_code, verdict_text


@pytest.mark.clause("MEM-WIRE.13")
def test_only_unanswered_results_make_a_run_indeterminate() -> None:
    assert run_exit_code([]) == 0
    assert run_exit_code(["indeterminate"]) == EXIT_INDETERMINATE == 3
    assert run_exit_code(["indeterminate", "indeterminate"]) == 3
    assert run_exit_code(["indeterminate", "fail"]) == 1  # a divergence wins
    assert run_exit_code(["deviate"]) == 1
    assert [verdict_text(c) for c in (0, 1, 3)] == ["CONFORMANT", "NOT CONFORMANT", "INDETERMINATE"]


@pytest.mark.clause("MEM-WIRE.13")
def test_the_merge_of_shards_keeps_the_same_verdict() -> None:
    lost = {"name": "a", "verdict": "indeterminate"}
    accepted = {"name": "b", "verdict": "fail", "expected_by": "known"}
    deviation = {"name": "c", "clauses": ["MEM-X.1"]}
    seed = _unexpected([lost, accepted], [deviation], "seed")
    assert seed == [lost]
    assert run_exit_code([str(r["verdict"]) for r in seed]) == 3
    reference = _unexpected([lost, accepted], [deviation], "reference")
    assert [r["verdict"] for r in reference] == ["indeterminate", "deviate"]
    assert run_exit_code([str(r["verdict"]) for r in reference]) == 1
