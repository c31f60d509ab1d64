"""JSON values as both protocols compare them (pure).

JSON has one number type and a separate boolean: ``1`` and ``1.0`` are one value, ``true`` is
never ``1``.  Python's ``==`` says otherwise (``True == 1``), so every comparison of JSON
answers goes through :func:`json_equal`.
"""

from __future__ import annotations


def is_number(v: object) -> bool:
    """A JSON number: int or float, never a boolean."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def json_equal(a: object, b: object) -> bool:
    """Structural JSON equality: numbers by value, booleans only equal booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
