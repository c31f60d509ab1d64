"""MEM-REFLECT.7: the envelope rejects only non-JSON, non-objects and a ``facts`` that is not an
array -- valid JSON Python's own decoder refuses (an integer of more than 4300 digits, nesting of
about a thousand levels) is still JSON (``reference.jsonvalues.parse_json_unbounded``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.jsonvalues import _parse_iterative, parse_json_unbounded
from reference.memory.reflection import parse_reflection

pytestmark = pytest.mark.clause("MEM-REFLECT.7")

FACT = {"text": "deploys go out on fridays", "confidence": 0.8}


def test_an_integer_of_5000_digits_is_valid_json_and_the_facts_survive() -> None:
    raw = '{"facts": [' + json.dumps(FACT) + '], "n": ' + "9" * 5000 + "}"
    res = parse_reflection(raw, [], "t:1", None)
    assert res is not None and [f.candidate.text for f in res.facts] == [FACT["text"]]


def test_a_5000_digit_confidence_is_a_number_out_of_range_so_the_fact_is_dropped() -> None:
    raw = '{"facts": [{"text": "x", "confidence": ' + "1" * 5000 + "}]}"
    res = parse_reflection(raw, [], "t:1", None)
    assert res is not None and res.facts == ()


@pytest.mark.parametrize("depth", [999, 1000, 1200, 20_000])
def test_deep_nesting_is_valid_json(depth: int) -> None:
    raw = '{"facts": [' + json.dumps(FACT) + '], "deep": ' + "[" * depth + "]" * depth + "}"
    res = parse_reflection(raw, [], "t:1", None)
    assert res is not None and len(res.facts) == 1


def test_deep_nesting_inside_a_fact_keeps_the_fact() -> None:
    deep = '{"a": ' * 3000 + "1" + "}" * 3000
    raw = '{"facts": [{"text": "x", "confidence": 0.9, "extra": ' + deep + "}]}"
    res = parse_reflection(raw, [], "t:1", None)
    assert res is not None and len(res.facts) == 1


@pytest.mark.parametrize(
    "raw",
    ["[" * 3000 + "]" * 2999, '{"facts": []' + "]" * 2, '{"facts": ' + "[" * 5000, "1" * 5000],
)
def test_invalid_or_non_object_deep_documents_still_fail_the_envelope(raw: str) -> None:
    assert parse_reflection(raw, [], "t:1", None) is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values, st.sampled_from(["", " ", "\n\t "]))
def test_the_iterative_parser_reads_what_json_reads(value: object, ws: str) -> None:
    text = json.dumps(value, indent=None if not ws else 1)
    text = ws + text + ws
    assert _parse_iterative(text) == json.loads(text)


@given(st.text(alphabet='[]{}",:01-.eE tnrufals\\x', max_size=20))
def test_the_iterative_parser_accepts_exactly_what_json_accepts(text: str) -> None:
    try:
        want: object = json.loads(text)
        ok = True
    except ValueError:
        ok = False
    if ok:
        assert _parse_iterative(text) == want
    else:
        with pytest.raises(ValueError):
            _parse_iterative(text)


def test_nan_infinity_and_a_byte_order_mark_stay_rejected() -> None:
    for bad in ('{"x": NaN}', '{"x": -Infinity}', "\ufeff{}"):
        with pytest.raises(ValueError):
            parse_json_unbounded(bad)
        with pytest.raises(ValueError):
            parse_json_unbounded("[" * 3000 + bad + "]" * 3000)
