"""The string macros of a scenario step (``$repeat``, ``$concat``, ``$pad``) and the
hand-written ``expect`` check: one implementation (``conformance/drivers/common.py``) for both
drivers (harness; no spec clause of its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.drivers.common import check_expect, expand_macro, is_macro
from conformance.drivers.ledger import driver as ledger_driver
from conformance.drivers.memory import driver as memory_driver
from conformance.machines import ledger as ledger_machine
from conformance.scenario import load_scenario
from conformance.vocabulary import Exchange, StepError

CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "corpus"


def _expand(value: Any) -> Any:
    if is_macro(value):
        return expand_macro(value, _expand)
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


@pytest.mark.clause()
@pytest.mark.parametrize(
    ("macro", "built"),
    [
        ({"$repeat": "ab", "times": 3}, "ababab"),
        ({"$repeat": "x", "times": 0}, ""),
        ({"$concat": ["a", {"$repeat": "b", "times": 2}, "c"]}, "abbc"),
        ({"$pad": "ab", "to": 5, "with": "."}, "ab..."),
        ({"$pad": {"$repeat": "z", "times": 2}, "to": 2, "with": "."}, "zz"),
    ],
)
def test_macros_build_strings(macro: dict[str, Any], built: str) -> None:
    assert _expand(macro) == built


@pytest.mark.clause()
@pytest.mark.parametrize(
    ("macro", "named"),
    [
        ({"$repeat": "x", "times": True}, "times"),  # true is not 1
        ({"$repeat": "x", "times": 1.0}, "times"),
        ({"$repeat": "x", "times": -1}, "times"),
        ({"$repeat": "x", "times": 1_000_001}, "times"),
        ({"$repeat": 7, "times": 2}, "to repeat"),
        ({"$repeat": "x"}, "keys"),  # a missing field
        ({"$repeat": "x", "times": 2, "extra": 1}, "keys"),  # an unknown one
        ({"$concat": "abc"}, "list"),  # a string is not a list of strings
        ({"$concat": ["a", 1]}, "item 1"),
        ({"$pad": "a", "to": "3", "with": "."}, "to must"),
        ({"$pad": "a", "to": 3, "with": ".."}, "with must"),
        ({"$pad": "abcd", "to": 3, "with": "."}, "longer than 3"),
        ({"$repeat": "x", "times": 1, "$concat": []}, "one macro"),
    ],
)
def test_a_malformed_macro_is_refused_naming_the_field(macro: dict[str, Any], named: str) -> None:
    with pytest.raises(StepError, match=named):
        _expand(macro)


@pytest.mark.clause()
def test_both_drivers_use_the_one_expander() -> None:
    for module in (memory_driver, ledger_driver):
        assert module.expand_macro is expand_macro
        assert module.check_expect is check_expect
        assert module.StepError is StepError


@pytest.mark.clause()
def test_every_macro_of_the_corpus_and_the_machines_is_well_formed() -> None:
    seen = 0
    for path in sorted(CORPUS.glob("*/*.json")):
        for step in load_scenario(path).steps:
            for value in (step.args, step.expect or {}):
                if "$repeat" in str(value) or "$concat" in str(value) or "$pad" in str(value):
                    seen += 1
                _expand(value)
    for _op, args in ledger_machine.INVALID_CALLS:
        _expand(args)
    assert seen >= 10


def _ex(body: Any, status: int = 200) -> Exchange:
    return Exchange("POST", "/list", None, status, body)


@pytest.mark.clause()
def test_a_handwritten_expectation_checks_status_body_count_and_texts() -> None:
    ex = _ex({"records": [{"text": "b"}, {"text": "a"}]})
    texts = ["b", "a"]
    assert check_expect({"status": 200, "count": 2, "texts": ["b", "a"]}, ex, texts, "t") is None
    assert check_expect({"text_set": ["a", "b"]}, ex, texts, "t") is None
    assert check_expect({"status": 400}, ex, texts, "t") == "status 200, expected 400"
    assert "lacks" in (check_expect({"body": {"ok": True}}, ex, texts, "t") or "")
    assert check_expect({"count": 1}, ex, texts, "t") == "2 record(s), expected 1"
    assert check_expect({"count": 0}, ex, None, "t") == "no records record(s), expected 0"
    assert check_expect({"texts": ["a", "b"]}, ex, texts, "t") == (
        "t ['b', 'a'], expected ['a', 'b'] in this order"
    )
    assert check_expect({"text_set": ["a", "c"]}, ex, texts, "t") == (
        "t ['b', 'a'], expected ['a', 'c'] in any order"
    )
    # a value that is not a string neither crashes the comparison nor equals its text form
    assert check_expect({"text_set": ["1"]}, ex, [1], "t") is not None
    assert check_expect({"text_set": [None, "a"]}, ex, ["a", None], "t") is None
