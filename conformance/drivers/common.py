"""What both drivers do alike to a step: expand the string macros of its ``args`` and check its
hand-written ``expect`` on the target's answer.

Macros (a JSON object of exactly one of these forms; each builds a string):

``{"$repeat": S, "times": N}``           ``S`` repeated ``N`` times (``0 <= N <= 1000000``)
``{"$concat": [S, …]}``                  the strings joined
``{"$pad": S, "to": N, "with": C}``      ``S`` padded with the one character ``C`` to exactly
                                         ``N`` characters

``S`` may itself be a macro, or anything the driver expands to a string (``{scope:a}``).  An
object that names a macro but is not exactly one of these forms is refused with a
:class:`~conformance.vocabulary.StepError` naming the field — never sent as written, never
read loosely (``"times": true`` is not 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeGuard

from conformance.jsonutil import json_subset, short_json
from conformance.vocabulary import Exchange, StepError

MAX_REPEAT = 1_000_000

_FORMS: dict[str, frozenset[str]] = {
    "$repeat": frozenset({"$repeat", "times"}),
    "$concat": frozenset({"$concat"}),
    "$pad": frozenset({"$pad", "to", "with"}),
}


def followed_reason(reason: str, departed: Iterable[str]) -> str:
    """The reason of a deviation the run goes on past (``followed``): how the answer differs
    from the reference's reading, and that the model now judges in the store's reading of the
    open choices ``departed`` (reference clauses)."""
    named = ", ".join(departed)
    return (
        f"{reason} (the store reads {named} otherwise than the reference; the run goes on in"
        " its reading)"
    )


def is_macro(value: Any) -> bool:
    """Whether ``value`` is an object that names a macro (well-formed or not)."""
    return isinstance(value, dict) and not _FORMS.keys().isdisjoint(value)


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def expand_macro(value: dict[str, Any], expand: Callable[[Any], Any]) -> str:
    """The string a macro object builds; ``expand`` expands its parts (the driver's own
    expansion).  Raises :class:`StepError` for a malformed form, naming the field."""
    names = [name for name in _FORMS if name in value]
    if len(names) != 1:
        raise StepError(f"one macro per object, not {' and '.join(names)}")
    name = names[0]
    if set(value) != _FORMS[name]:
        keys = ", ".join(sorted(_FORMS[name]))
        raise StepError(f"{name} takes exactly the keys {keys} (got {', '.join(sorted(value))})")
    if name == "$repeat":
        unit, times = expand(value["$repeat"]), value["times"]
        if not isinstance(unit, str):
            raise StepError(
                f"$repeat: the value to repeat must be a string, not {short_json(unit)}"
            )
        if not _int(times) or not 0 <= times <= MAX_REPEAT:
            raise StepError(
                f"$repeat: times must be an integer from 0 to {MAX_REPEAT}, not {short_json(times)}"
            )
        return unit * times
    if name == "$concat":
        items = value["$concat"]
        if not isinstance(items, list):
            raise StepError(f"$concat: takes a list of strings, not {short_json(items)}")
        parts = [expand(v) for v in items]
        for i, part in enumerate(parts):
            if not isinstance(part, str):
                raise StepError(f"$concat: item {i} must be a string, not {short_json(part)}")
        return "".join(parts)
    base, to, fill = expand(value["$pad"]), value["to"], value["with"]
    if not isinstance(base, str):
        raise StepError(f"$pad: the value to pad must be a string, not {short_json(base)}")
    if not _int(to):
        raise StepError(f"$pad: to must be an integer length, not {short_json(to)}")
    if not isinstance(fill, str) or len(fill) != 1:
        raise StepError(f"$pad: with must be one character, not {short_json(fill)}")
    if len(base) > to:
        raise StepError(f"$pad: {base[:40]!r}… is already longer than {to}")
    return base + fill * (to - len(base))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def check_expect(
    expect: dict[str, Any],
    ex: Exchange,
    values: list[Any] | None,
    noun: str,
    *,
    any_success: bool = False,
) -> str | None:
    """What the target's answer does not meet of a step's hand-written ``expect``, or ``None``.

    ``values`` are the answer's records as the protocol names them (the memory records' texts,
    the ledger records' bodies; ``None``: the answer lists no records) and ``noun`` their name in
    the message.  ``status`` is the HTTP status, ``body`` members that must be equal
    (:func:`~conformance.jsonutil.json_subset`), ``count`` the number of records, ``texts`` the
    values in this order, ``text_set`` in any order.  ``any_success``: an expected 200 is met
    by any 2xx (a protocol whose seed names no success status, MEM-WIRE.22)."""
    if "status" in expect and ex.status != expect["status"]:
        success = any_success and expect["status"] == 200 and ex.status is not None
        if not (success and 200 <= (ex.status or 0) < 300):
            return f"status {ex.status}, expected {expect['status']}"
    return _rest_of_expect(expect, ex, values, noun)


def _rest_of_expect(
    expect: dict[str, Any], ex: Exchange, values: list[Any] | None, noun: str
) -> str | None:
    """``check_expect`` past the status."""
    if "body" in expect and not json_subset(expect["body"], ex.body):
        return f"body {short_json(ex.body, 200)} lacks {short_json(expect['body'], 200)}"
    if "count" in expect and (values is None or len(values) != expect["count"]):
        found = "no records" if values is None else len(values)
        return f"{found} record(s), expected {expect['count']}"
    if "texts" in expect and values != expect["texts"]:
        return f"{noun} {values}, expected {expect['texts']} in this order"
    if "text_set" in expect and (
        values is None
        or sorted(map(_canonical, values)) != sorted(map(_canonical, expect["text_set"]))
    ):
        return f"{noun} {values}, expected {sorted(expect['text_set'])} in any order"
    return None
