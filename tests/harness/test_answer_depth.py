"""An answer nested deeper than MAX_DEPTH levels is not taken as JSON (the client's bound on
what it walks), exactly at the bound it is, wherever the deep branch sits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.targets.base import MAX_DEPTH, parse_answer


def _nested(levels: int, kind: str) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value] if kind == "array" else {"k": value}
    return value


@pytest.mark.clause()
@pytest.mark.parametrize("kind", ["array", "object"])
def test_depth_up_to_the_bound_is_json_one_more_is_not(kind: str) -> None:
    at = json.dumps(_nested(MAX_DEPTH, kind)).encode()
    past = json.dumps(_nested(MAX_DEPTH + 1, kind)).encode()
    assert parse_answer(at)[2] is None
    assert parse_answer(past)[2] == f"not JSON: nested deeper than {MAX_DEPTH} levels"


@pytest.mark.clause()
def test_a_deep_branch_beside_shallow_ones_counts() -> None:
    # depth 1 (object) + 1 (array) + the branch: one past the bound in all
    body: dict[str, Any] = {
        "records": [1, "a", {"b": None}, _nested(MAX_DEPTH - 1, "array")],
        "ok": True,
    }
    assert parse_answer(json.dumps(body).encode())[2] is not None
    body["records"][3] = _nested(MAX_DEPTH - 2, "object")
    assert parse_answer(json.dumps(body).encode())[2] is None
