"""Resolving the configured per-scope cap (``validate_cap_config`` of
``reference/memory/wire/client.py``): resolveScopeCap.

The seed fixes the cap for every value it names (an integer 1-10000 is the cap; 0, negatives,
fractions, >10000, NaN, non-integers give the default 500 and a warning naming the setting and
the default) and leaves open whether an unset value warns and how a string of digits reads
(MEM-CAP.5): the vector's ``rule`` checker holds exactly that; the reference's exact answer
(MEM-CAP.6) is the one allowed answer beside it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.judge import Judged, Narrowed, ok
from reference.jsonvalues import js_integer
from reference.memory.engine import DEFAULT_SCOPE_CAP
from reference.memory.wire.client import validate_cap_config
from reference.memory.wire.request import MAX_CAP, MIN_CAP

SETTING = "maxRecordsPerScope"


def _resolve(a: Args) -> JSON:
    cap, warning = validate_cap_config(a.get("value"))
    return {"cap": cap, "warning": warning}


def _warned() -> dict[str, JSON]:
    """The default and a warning that names the setting and the default (MEM-CAP.5)."""
    names = {"text": {"before": [SETTING, str(DEFAULT_SCOPE_CAP)]}}
    return {"object": {"cap": {"const": DEFAULT_SCOPE_CAP}, "warning": names}}


def _used(n: int) -> dict[str, JSON]:
    return {"object": {"cap": {"const": n}, "warning": {"const": None}}}


def _digits_value(v: JSON) -> int | None:
    """A string of ASCII digits (an optional sign) whose number is a valid cap, else None."""
    if not isinstance(v, str) or not v.strip().lstrip("+-").isdigit() or not v.isascii():
        return None
    n = int(v.strip())
    return n if MIN_CAP <= n <= MAX_CAP else None


def seed_rule(value: JSON) -> dict[str, JSON]:
    """What the seed allows for one configured ``value`` (MEM-CAP.5)."""
    if value is None:
        anything = {"anyOf": [{"const": None}, {"text": {}}]}
        return {"object": {"cap": {"const": DEFAULT_SCOPE_CAP}, "warning": anything}}
    n = js_integer(value)
    if n is not None and MIN_CAP <= n <= MAX_CAP:
        return _used(n)
    digits = _digits_value(value)
    if digits is not None:
        return {"anyOf": [_used(digits), _warned()]}
    return _warned()


def _resolve_judge(a: Args) -> Judged:
    """The seed's rule (MEM-CAP.5) beside the reference's exact answer (MEM-CAP.6)."""
    ref = [ok(_resolve(a))]
    rule = {"name": "rule", "rule": seed_rule(a.get("value"))}
    return Judged(ref, rule, reference=Narrowed(("MEM-CAP.6",), ref))


def _cap_boundaries() -> list[tuple[str, Args]]:
    return [
        ("unset: the default (a warning is open)", {}),
        ("null is unset", {"value": None}),
        ("the lower edge", {"value": 1}),
        ("the upper edge", {"value": 10_000}),
        ("one past the upper edge", {"value": 10_001}),
        ("zero would evict everything", {"value": 0}),
        ("negative", {"value": -5}),
        ("fractional", {"value": 12.5}),
        ("an integral float is its integer", {"value": 250.0}),
        ("the default itself", {"value": 500}),
        ("far out of range", {"value": 1e300}),
        ("a boolean is no integer", {"value": True}),
        (
            "a string of digits (open point: its number, or the default and a warning)",
            {"value": "300"},
        ),
        ("a string that is no number", {"value": "lots"}),
        ("an empty string", {"value": ""}),
        ("an array", {"value": [300]}),
        ("an object", {"value": {"cap": 300}}),
    ]


_VALUES: st.SearchStrategy[JSON] = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=9_998, max_value=10_002),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e4, max_value=2e4),
    st.sampled_from((None, True, False, "300", "0", "abc", "", " 42 ", [], {})),
)

FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "resolveScopeCap",
        MEMORY,
        ("MEM-CAP.5",),
        "the configured per-scope cap, or the default with a warning",
        _resolve,
        st.one_of(st.just({}), st.fixed_dictionaries({"value": _VALUES})),
        _cap_boundaries,
        _resolve_judge,
        references=("MEM-CAP.6",),
    ),
)
