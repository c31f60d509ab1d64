"""JSON values as the Worker's and the extractor's JavaScript reads them (MEM-WIRE.10).

``JSON.parse`` (no ``NaN``/``Infinity``), a JSON number (never a boolean), an integer in
``Number.isInteger``'s sense (``5.0`` is 5), structural equality (numbers by value, booleans
only equal booleans) and ``String.prototype.trim``.  One definition of each for the memory wire
model, the reflection parser and the conformance oracles.
"""

from __future__ import annotations

import json
import math
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
