"""What a scenario step's hand-written ``expect`` body means (harness; no spec clause of its
own), and the one-line JSON excerpts every divergence message uses."""

from __future__ import annotations

import pytest

from conformance.jsonutil import json_subset, short_json


@pytest.mark.clause()
@pytest.mark.parametrize(
    ("want", "got", "held"),
    [
        ({"ok": True}, {"ok": True, "inserted": 1}, True),  # extra members are fine
        ({"ok": True}, {"inserted": 1}, False),  # a missing member is not
        ({"ok": True}, {"ok": 1}, False),  # true is not 1 (JSON has booleans)
        ({"n": 1}, {"n": True}, False),
        ({"n": 1}, {"n": 1.0}, True),  # JSON numbers: 1 and 1.0 are one value
        ([1, 2], [1, 2, 3], False),  # arrays: same length, element by element
        ([{"a": 1}], [{"a": 1, "b": 2}], True),
        ({"a": None}, {}, False),  # absent is not null
    ],
)
def test_expect_bodies_are_json_subsets(want: object, got: object, held: bool) -> None:
    assert json_subset(want, got) is held


@pytest.mark.clause()
def test_short_json_is_one_cut_line() -> None:
    assert short_json({"b": 1, "a": "x\ny"}, sort_keys=True) == '{"a": "x\\ny", "b": 1}'
    cut = short_json("z" * 500, 20)
    # 20 characters, then what the cut left out (scrub first, then cut: conformance.scrub.shown)
    assert cut == '"' + "z" * 18 + "…[483 more characters cut]"
    assert short_json({1, 2}) == "{1, 2}"  # not JSON: its repr
