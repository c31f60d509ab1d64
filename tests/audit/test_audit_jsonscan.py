"""The span-keeping JSON scanner behind the byte-level audit checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.audit.jsonscan import JsonScanError, Node, decode, path_at, scan
from tests.common.audit import STYLES, json_value, serialize

pytestmark = pytest.mark.clause("MEM-FLAG.3", "MEM-INJECT.3")


def _strict_loads(data: bytes) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(name)

    return json.loads(data.decode("utf-8"), parse_constant=no_constants)


def _check_spans(data: bytes, node: Node, value: Any) -> None:
    assert _strict_loads(data[node.start : node.end]) == value or value != value
    if node.kind == "object":
        assert isinstance(value, dict)
        assert [m.key for m in node.members] == list(value)  # order kept (no duplicates here)
        for m in node.members:
            assert json.loads(data[m.key_start : m.key_end]) == m.key
            _check_spans(data, m.value, value[m.key])
    elif node.kind == "array":
        assert len(node.items) == len(value)
        for item, v in zip(node.items, value, strict=True):
            _check_spans(data, item, v)
    elif node.kind == "string":
        assert node.text == value


@given(json_value, st.sampled_from(sorted(STYLES)))
def test_every_span_holds_exactly_its_value(doc: Any, style: str) -> None:
    data = serialize(doc, style)
    tree = scan(data)
    assert decode(data, tree) == _strict_loads(data)
    _check_spans(data, tree, _strict_loads(data))


@given(json_value, st.sampled_from(sorted(STYLES)), st.data())
def test_scan_accepts_exactly_what_a_strict_parser_accepts(
    doc: Any, style: str, data: st.DataObject
) -> None:
    raw = serialize(doc, style)
    at = data.draw(st.integers(0, len(raw)))
    edit = data.draw(st.sampled_from(["delete", "insert"]))
    byte = data.draw(st.sampled_from(list(b'{}[],:" \\\t\n0-.eE\x00\x01\xff\xc3tnf')))
    mutated = raw[:at] + raw[at + 1 :] if edit == "delete" else raw[:at] + bytes([byte]) + raw[at:]
    try:
        _strict_loads(mutated)
        expected = True
    except ValueError:
        expected = False
    try:
        scan(mutated)
        got = True
    except JsonScanError:
        got = False
    assert got == expected, mutated


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b" ",
        b'{"a":1} x',
        b'{"a":1}{}',
        b"\xef\xbb\xbf{}",
        b'{"a":"\xff"}',
        b'{"a":"\x01"}',
        b'{"a":"\\x"}',
        b'{"a":01}',
        b'{"a":1.}',
        b'{"a":-}',
        b'{"a":NaN}',
        b'{"a":1,}',
        b"[1,]",
        b"{'a':1}",
        b'{"a" 1}',
        b"[" * 600 + b"]" * 600,
    ],
)
def test_malformed_json_is_refused_with_an_offset(bad: bytes) -> None:
    with pytest.raises(JsonScanError) as err:
        scan(bad)
    assert 0 <= err.value.offset <= len(bad)


def test_duplicates_and_spellings_are_kept() -> None:
    data = b'{"a":1,"a":2.50,"s":"\\u00e9"}'
    tree = scan(data)
    assert [m.key for m in tree.members] == ["a", "a", "s"]
    assert tree.get("a") is tree.members[1].value and tree.members[1].value.text == "2.50"
    s = tree.get("s")
    assert s is not None and s.text == "é" and data[s.start : s.end] == b'"\\u00e9"'


def test_path_at_names_the_innermost_value() -> None:
    data = b'{"messages":[{"role":"user","content":"hi"}],"x y":[1, 2]}'
    tree = scan(data)
    assert path_at(tree, data.index(b'"hi"') + 1) == "$.messages[0].content"
    assert path_at(tree, data.index(b'"role"')) == "$.messages[0].role"
    assert path_at(tree, data.index(b" 2")) == '$["x y"]'
    assert path_at(tree, data.index(b"2]")) == '$["x y"][1]'
    assert path_at(tree, 0) == "$"
