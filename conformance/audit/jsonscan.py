"""A small, strict JSON scanner that keeps byte spans.

The audit compares model requests byte for byte, so it needs more than ``json.loads``: where
each value sits in the raw bytes (to check that every byte outside the system prompt is
untouched), the order of keys and any duplicates (which ``json.loads`` silently folds), and the
literal spelling of strings and numbers (``"\\u00e9"`` and ``"é"`` decode alike but are different
bytes).  :func:`scan` parses RFC 8259 JSON text (UTF-8, no byte-order mark) into a tree of
:class:`Node` values carrying ``[start, end)`` byte offsets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_WS = b" \t\n\r"
_STRING = re.compile(rb'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_DEPTH = 256


class JsonScanError(ValueError):
    """The bytes are not one well-formed JSON text; ``offset`` is where scanning stopped."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(f"byte {offset}: {message}")
        self.offset = offset
        self.message = message


@dataclass(frozen=True)
class Member:
    """One ``"key": value`` pair of an object, with the key's raw span."""

    key: str
    key_start: int
    key_end: int
    value: Node


@dataclass(frozen=True)
class Node:
    """A JSON value and its ``[start, end)`` span in the scanned bytes.

    ``kind`` is one of ``object``, ``array``, ``string``, ``number``, ``true``, ``false``,
    ``null``.  ``text`` is the decoded string for a string and the literal for a number.
    """

    kind: str
    start: int
    end: int
    text: str = ""
    members: tuple[Member, ...] = field(default=())
    items: tuple[Node, ...] = field(default=())

    def get(self, key: str) -> Node | None:
        """The value of ``key`` in an object (the last one when the key repeats)."""
        found: Node | None = None
        for m in self.members:
            if m.key == key:
                found = m.value
        return found

    def member(self, key: str) -> Member | None:
        """The member holding ``key`` in an object (the last one when the key repeats)."""
        found: Member | None = None
        for m in self.members:
            if m.key == key:
                found = m
        return found


def scan(data: bytes) -> Node:
    """Parse ``data`` as exactly one JSON text; raise :class:`JsonScanError` otherwise."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise JsonScanError(0, "byte-order mark before the JSON text")
    pos = _skip_ws(data, 0)
    node, pos = _value(data, pos, 0)
    pos = _skip_ws(data, pos)
    if pos != len(data):
        raise JsonScanError(pos, "unexpected bytes after the JSON value")
    return node


def _skip_ws(data: bytes, pos: int) -> int:
    n = len(data)
    while pos < n and data[pos] in _WS:
        pos += 1
    return pos


def _value(data: bytes, pos: int, depth: int) -> tuple[Node, int]:
    if depth > MAX_DEPTH:
        raise JsonScanError(pos, f"nesting deeper than {MAX_DEPTH}")
    if pos >= len(data):
        raise JsonScanError(pos, "unexpected end of input, expected a value")
    c = data[pos]
    if c == 0x7B:  # {
        return _object(data, pos, depth)
    if c == 0x5B:  # [
        return _array(data, pos, depth)
    if c == 0x22:  # "
        text, end = _string(data, pos)
        return Node("string", pos, end, text=text), end
    for literal in (b"true", b"false", b"null"):
        if data.startswith(literal, pos):
            end = pos + len(literal)
            return Node(literal.decode(), pos, end), end
    m = _NUMBER.match(data, pos)
    if m:
        return Node("number", pos, m.end(), text=m.group().decode("ascii")), m.end()
    raise JsonScanError(pos, f"unexpected byte {_show_byte(data[pos])}, expected a value")


def _string(data: bytes, pos: int) -> tuple[str, int]:
    m = _STRING.match(data, pos)
    if not m:
        raise JsonScanError(pos, "malformed string (bad escape, raw control character or no end)")
    raw = m.group()
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonScanError(pos + exc.start, "invalid UTF-8 in a string") from None
    value = json.loads(decoded)
    assert isinstance(value, str)
    return value, m.end()


def _object(data: bytes, pos: int, depth: int) -> tuple[Node, int]:
    start = pos
    pos = _skip_ws(data, pos + 1)
    members: list[Member] = []
    if pos < len(data) and data[pos] == 0x7D:  # }
        return Node("object", start, pos + 1), pos + 1
    while True:
        if pos >= len(data) or data[pos] != 0x22:
            raise JsonScanError(pos, "expected a string key")
        key, key_end = _string(data, pos)
        key_start = pos
        pos = _skip_ws(data, key_end)
        if pos >= len(data) or data[pos] != 0x3A:  # :
            raise JsonScanError(pos, "expected ':' after an object key")
        pos = _skip_ws(data, pos + 1)
        value, pos = _value(data, pos, depth + 1)
        members.append(Member(key, key_start, key_end, value))
        pos = _skip_ws(data, pos)
        if pos < len(data) and data[pos] == 0x2C:  # ,
            pos = _skip_ws(data, pos + 1)
            continue
        if pos < len(data) and data[pos] == 0x7D:
            return Node("object", start, pos + 1, members=tuple(members)), pos + 1
        raise JsonScanError(pos, "expected ',' or '}' in an object")


def _array(data: bytes, pos: int, depth: int) -> tuple[Node, int]:
    start = pos
    pos = _skip_ws(data, pos + 1)
    items: list[Node] = []
    if pos < len(data) and data[pos] == 0x5D:  # ]
        return Node("array", start, pos + 1), pos + 1
    while True:
        value, pos = _value(data, pos, depth + 1)
        items.append(value)
        pos = _skip_ws(data, pos)
        if pos < len(data) and data[pos] == 0x2C:
            pos = _skip_ws(data, pos + 1)
            continue
        if pos < len(data) and data[pos] == 0x5D:
            return Node("array", start, pos + 1, items=tuple(items)), pos + 1
        raise JsonScanError(pos, "expected ',' or ']' in an array")


def _show_byte(b: int) -> str:
    return repr(chr(b)) if 0x20 <= b < 0x7F else f"0x{b:02x}"


def decode(data: bytes, node: Node) -> Any:
    """The Python value of ``node`` (duplicate keys fold to the last, as ``json.loads`` does)."""
    return json.loads(data[node.start : node.end].decode("utf-8"))


def path_key(path: str, key: str) -> str:
    """Extend a JSON path (``$``-rooted) with an object key."""
    if _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def path_index(path: str, index: int) -> str:
    """Extend a JSON path with an array index."""
    return f"{path}[{index}]"


def path_at(node: Node, offset: int, path: str = "$") -> str:
    """The path of the innermost value whose span (or member span) contains ``offset``."""
    if node.kind == "object":
        for m in node.members:
            if m.key_start <= offset < m.value.end:
                child = path_key(path, m.key)
                if offset < m.value.start:
                    return child
                return path_at(m.value, offset, child)
    elif node.kind == "array":
        for i, item in enumerate(node.items):
            if item.start <= offset < item.end:
                return path_at(item, offset, path_index(path, i))
    return path
