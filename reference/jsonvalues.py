"""JSON values as the Worker's and the extractor's JavaScript reads them (MEM-WIRE.10).

``JSON.parse`` (no ``NaN``/``Infinity``), a JSON number (never a boolean), an integer in
``Number.isInteger``'s sense (``5.0`` is 5), structural equality (numbers by value, booleans
only equal booleans) and ``String.prototype.trim``.  One definition of each for the memory wire
model, the reflection parser and the conformance oracles.
"""

from __future__ import annotations

import json
import math
import re
from typing import Final

#: ECMAScript whitespace and line terminators: what ``String.prototype.trim`` strips.
JS_TRIM_CHARS: Final = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _reject_constant(name: str) -> object:
    raise ValueError(f"not JSON: {name}")


#: One decoder for every call (``json.loads`` with an argument builds a new one each time).
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(text: str) -> object:
    """``JSON.parse``: strict JSON, ``NaN``/``Infinity`` rejected (ValueError) (MEM-WIRE.7)."""
    if text.startswith("\ufeff"):  # what ``json.loads`` says of a byte order mark
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


#: Python refuses to turn a longer digit string into an int (``sys.int_max_str_digits``).
_INT_DIGITS: Final = 4300
_JSON_WS: Final = " \t\n\r"
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_STRING: Final = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_LITERALS: Final = (("true", True), ("false", False), ("null", None))


def _js_int(digits: str) -> int | float:
    """A JSON integer: exact, or -- past Python's digit limit -- the float JavaScript's
    ``Number`` makes of it (every such number is beyond ``Number.MAX_VALUE``: +-Infinity)."""
    if len(digits) > _INT_DIGITS:
        return float(digits)
    return int(digits)


#: The same decoder with integers of any length (MEM-REFLECT.7).
_ANY_INT_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_js_int)


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _JSON_WS:
        i += 1
    return i


def _string(text: str, i: int) -> tuple[str, int]:
    """The JSON string starting at ``i`` (one flat token: the fast decoder reads it)."""
    m = _STRING.match(text, i)
    if m is None:
        raise ValueError(f"not JSON: a string expected at {i}")
    value = _DECODER.decode(m.group(0))
    assert isinstance(value, str)
    return value, m.end()


def _key(text: str, i: int) -> tuple[str, int]:
    """An object member's name and the position after its colon (and whitespace)."""
    key, i = _string(text, i)
    i = _skip_ws(text, i)
    if i >= len(text) or text[i] != ":":
        raise ValueError(f"not JSON: ':' expected at {i}")
    return key, _skip_ws(text, i + 1)


def _scalar(text: str, i: int) -> tuple[object, int]:
    """One string, number or literal starting at ``i``."""
    if i < len(text) and text[i] == '"':
        return _string(text, i)
    m = _NUMBER.match(text, i)
    if m is not None:
        whole = m.group(0)
        if m.group(1) is None and m.group(2) is None:
            return _js_int(whole), m.end()
        return float(whole), m.end()
    for word, value in _LITERALS:
        if text.startswith(word, i):
            return value, i + len(word)
    raise ValueError(f"not JSON: a value expected at {i}")


def _parse_iterative(text: str) -> object:
    """``JSON.parse`` without recursion: any nesting depth (an explicit stack of the open
    containers and, for an object, the member being read)."""
    stack: list[tuple[list[object] | dict[str, object], str]] = []
    i = _skip_ws(text, 0)
    n = len(text)
    while True:
        value: object
        if i < n and text[i] == "{":
            i = _skip_ws(text, i + 1)
            if i < n and text[i] == "}":
                value, i = {}, i + 1
            else:
                key, i = _key(text, i)
                stack.append(({}, key))
                continue
        elif i < n and text[i] == "[":
            i = _skip_ws(text, i + 1)
            if i < n and text[i] == "]":
                value, i = [], i + 1
            else:
                stack.append(([], ""))
                continue
        else:
            value, i = _scalar(text, i)
        while True:  # hand the finished value to its container, closing what ends here
            i = _skip_ws(text, i)
            if not stack:
                if i != n:
                    raise ValueError(f"not JSON: extra data at {i}")
                return value
            container, key = stack[-1]
            if isinstance(container, list):
                container.append(value)
                close = "]"
            else:
                container[key] = value
                close = "}"
            if i < n and text[i] == ",":
                i = _skip_ws(text, i + 1)
                if isinstance(container, dict):
                    key, i = _key(text, i)
                    stack[-1] = (container, key)
                break
            if i < n and text[i] == close:
                stack.pop()
                value, i = container, i + 1
                continue
            raise ValueError(f"not JSON: ',' or '{close}' expected at {i}")


def parse_json_unbounded(text: str) -> object:
    """``JSON.parse`` for any valid JSON: integers of any length and nesting of any depth,
    which Python's own decoder refuses (MEM-REFLECT.7: only non-JSON is rejected).

    The fast decoder first; a document nested too deeply for it is read again by an
    iterative parser that accepts exactly the same JSON."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        return _ANY_INT_DECODER.decode(text)
    except RecursionError:
        return _parse_iterative(text)


def is_number(v: object) -> bool:
    """A JSON number: int or float, never a boolean (MEM-WIRE.10)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def js_integer(v: object) -> int | None:
    """The value as an integer when JavaScript's ``Number.isInteger`` holds (``5.0`` is 5)
    (MEM-WIRE.10)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def json_equal(a: object, b: object) -> bool:
    """Structural JSON equality: numbers by value, booleans only equal booleans (MEM-WIRE.13)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def js_trim(s: str) -> str:
    """JavaScript ``String.prototype.trim``: strip ECMAScript whitespace and line terminators
    (MEM-WIRE.12: a blank text; MEM-REFLECT.8, MEM-REFLECT.9: texts and keywords trimmed)."""
    return s.strip(JS_TRIM_CHARS)
