"""``memspec audit diff``: byte-for-byte comparison, explained in JSON terms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import scrub
from conformance.audit.capture import Capture
from conformance.audit.diff import (
    byte_context,
    compare_bodies,
    describe_body,
    diff_captures,
    first_difference,
    json_differences,
    text_difference,
)
from tests.common.audit import STYLES, captured, json_value, serialize

pytestmark = pytest.mark.clause("MEM-FLAG.3")


def _naive_first_difference(a: bytes, b: bytes) -> int | None:
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@given(st.binary(max_size=64), st.binary(max_size=64), st.binary(max_size=8))
def test_first_difference_is_the_first_differing_byte(a: bytes, b: bytes, common: bytes) -> None:
    for x, y in ((a, b), (common + a, common + b), (a, a), (a, a + b"!")):
        assert first_difference(x, y) == _naive_first_difference(x, y)


# ---------------------------------------------------------------------------------------------
# JSON paths


def _paths(doc: Any, path: str = "$") -> list[tuple[str, list[Any]]]:
    """Every (json path, python key path) of ``doc``'s values."""
    out: list[tuple[str, list[Any]]] = [(path, [])]
    if isinstance(doc, dict):
        for k, v in doc.items():
            sub = (
                f"{path}.{k}"
                if k.isidentifier() and k.isascii()
                else f"{path}[{json.dumps(k, ensure_ascii=False)}]"
            )
            out += [(p, [k, *ks]) for p, ks in _paths(v, sub)]
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += [(p, [i, *ks]) for p, ks in _paths(v, f"{path}[{i}]")]
    return out


def _set(doc: Any, keys: list[Any], value: Any) -> Any:
    if not keys:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[keys[0]] = _set(doc[keys[0]], keys[1:], value)
    return copy


@given(json_value, st.data(), st.sampled_from(sorted(STYLES)))
def test_a_changed_value_is_reported_at_its_path(doc: Any, data: st.DataObject, style: str) -> None:
    path, keys = data.draw(st.sampled_from(_paths(doc)))
    old = doc
    for k in keys:
        old = old[k]

    def differs(v: Any) -> bool:
        if isinstance(old, int | float) and not isinstance(old, bool) and v == old:
            return False  # 1 and 1.0 are the same JSON number, spelled differently
        return type(v) is not type(old) or v != old

    new = data.draw(st.one_of(st.integers(), st.text(max_size=5)).filter(differs))
    changed = _set(doc, keys, new)
    a, b = serialize(doc, style), serialize(changed, style)
    diffs = json_differences(a, b)
    assert diffs, "a changed value must be reported"
    assert {d.kind for d in diffs} <= {"value", "type"}
    assert [d.path for d in diffs] == [path]
    body = compare_bodies(a, b)
    assert not body.identical and body.offset == _naive_first_difference(a, b)


@given(json_value, st.sampled_from(sorted(STYLES)), st.sampled_from(sorted(STYLES)))
def test_the_same_json_in_another_style_is_equal_but_not_identical(
    doc: Any, s1: str, s2: str
) -> None:
    a, b = serialize(doc, s1), serialize(doc, s2)
    diffs = json_differences(a, b)
    if a == b:
        assert diffs == []
        return
    assert diffs, "different bytes are never reported as identical"
    assert {d.kind for d in diffs} <= {"whitespace", "spelling", "key-order"}


def test_readable_differences() -> None:
    def one(a: str, b: str) -> list[str]:
        return [str(d) for d in json_differences(a.encode(), b.encode())]

    assert one('{"messages":[{"content":"a"}]}', '{"messages":[{"content":"b"}]}') == [
        '$.messages[0].content: "a" != "b"'
    ]
    assert one('{"a":1,"b":2}', '{"b":2,"a":1}') == [
        '$: key order differs: A ["a", "b"] vs B ["b", "a"]'
    ]
    assert one('{"a":1}', '{"a":1,"tools":[]}') == ["$.tools: absent != []"]
    assert one('{"a":1,"x y":2}', '{"a":1}') == ['$["x y"]: 2 != absent']
    assert one('{"a":[1,2]}', '{"a":[1]}') == [
        "$.a: array of 2 != array of 1",
        "$.a[1]: 2 != absent",
    ]
    assert one('{"a":"1"}', '{"a":1}') == ['$.a: "1" != 1']
    assert one('{"a":true}', '{"a":false}') == ["$.a: true != false"]
    assert one('{"a":"\\u00e9"}', '{"a":"é"}') == [
        "$.a: same string, spelled differently: the JSON texts differ at character 1"
        ' (A 8, B 3 characters): after "\\"", A has "\\\\u00e9", B has "é", then "\\""'
    ]
    assert one('{"a":1.0}', '{"a":1}') == ["$.a: same number, spelled differently: 1.0 vs 1"]
    assert one('{"a":1,"a":2}', '{"a":2}') == ["$.a: key appears 2 times in A"]
    ws = one('{"a": 1}', '{"a":1}')
    assert len(ws) == 1 and ws[0].startswith("$.a: insignificant whitespace differs at byte 5")
    assert one("{}", "{") == ["$: B is not JSON (byte 1: expected a string key)"]


def test_byte_context_marks_the_offset() -> None:
    ctx = byte_context(b'{"model":"x", "max_tokens":1}', 13)
    assert ctx.text == '{"model":"x",▶ "max_tokens":1}'
    assert ctx.hex == "65 6c 22 3a 22 78 22 2c [20] 22 6d 61 78 5f 74 6f"
    end = byte_context(b"abc", 3)
    assert end.hex.endswith("[EOF]") and end.text == "abc▶"
    assert byte_context(b"a\nb\x00", 1).text == "a▶\\nb\\u0000"
    # every character visible: a NBSP, a U+200B, a run of spaces, a trailing space
    assert (
        byte_context("a\u00a0b\u200b  c ".encode(), 1).text
        == "a▶\\u00a0b\\u200b\\u0020\\u0020c\\u0020"
    )


# ---------------------------------------------------------------------------------------------
# whole captures


def _cap(*bodies: bytes, provider: str = "anthropic") -> Capture:
    reqs = tuple(captured(provider, body, i) for i, body in enumerate(bodies))
    return Capture(path=Path("x.jsonl"), sha256="0" * 64, size=0, requests=reqs)


def test_request_counts_and_endpoints_matter() -> None:
    a = _cap(b"{}", b"{}")
    assert diff_captures(a, _cap(b"{}", b"{}")).identical
    fewer = diff_captures(a, _cap(b"{}"))
    assert not fewer.identical and fewer.count_b == 1
    assert "only in A" in fewer.requests[1].problems[0]
    more = diff_captures(_cap(b"{}"), a)
    assert not more.identical and "only in B" in more.requests[1].problems[0]
    other = diff_captures(_cap(b"{}"), _cap(b"{}", provider="openai"))
    assert not other.identical
    assert other.requests[0].problems == ("path /v1/messages != /v1/chat/completions",)


def test_headers_are_compared_only_when_asked() -> None:
    from dataclasses import replace

    a, b = _cap(b"{}"), _cap(b"{}")
    ra = replace(
        a.requests[0], headers=(("Host", "127.0.0.1:1"), ("content-type", "application/json"))
    )
    rb = replace(b.requests[0], headers=(("Host", "127.0.0.1:2"), ("content-type", "text/plain")))
    a, b = replace(a, requests=(ra,)), replace(b, requests=(rb,))
    assert diff_captures(a, b).identical  # bodies only, by default
    with_headers = diff_captures(a, b, headers=True)
    assert not with_headers.identical
    assert with_headers.requests[0].problems == (
        "header content-type: application/json != text/plain",
    )
    ignoring = diff_captures(
        a, b, headers=True, ignored_headers=frozenset({"host", "content-type"})
    )
    assert ignoring.identical
    # a header value differing only by a trailing space or a NBSP reads differently
    rb = replace(rb, headers=(("content-type", "application/json "),))
    ra = replace(ra, headers=(("content-type", "application/json"),))
    spaced = diff_captures(replace(a, requests=(ra,)), replace(b, requests=(rb,)), headers=True)
    assert spaced.requests[0].problems == (
        "header content-type: application/json != application/json\\u0020",
    )


LONG = "You are the deploy bot. " * 20  # longer than any cut of a value


@pytest.mark.parametrize(
    ("a", "b", "parts"),
    [
        # a trailing "\n\n" added (memory off): the two strings must not read alike
        (LONG, LONG + "\n\n", ('A has "", B has "\\n\\n", then (end)',)),
        (LONG + "x y", LONG + "x\u00a0y", ('A has " ", B has "\\u00a0"',)),
        (LONG + "xy", LONG + "x\u200by", ('A has ""', 'B has "\\u200b"')),
        (LONG + "z", LONG + "Z", ('A has "z", B has "Z", then (end)',)),
        ("Z" + LONG, "z" + LONG, ("differ at character 0", "after (start)")),
        (LONG + "a  b", LONG + "a b", ('A has " ", B has ""',)),
    ],
)
def test_a_long_string_shows_the_bytes_that_differ(a: str, b: str, parts: tuple[str, ...]) -> None:
    """Past any cut of a value, the explanation shows the offset of the first difference, the
    text before it, and each side's differing part escaped: never two identical strings."""
    body_a = json.dumps({"system": a}, ensure_ascii=False).encode()
    body_b = json.dumps({"system": b}, ensure_ascii=False).encode()
    (d,) = json_differences(body_a, body_b)
    assert d.path == "$.system" and d.kind == "value"
    offset = next(i for i in range(min(len(a), len(b)) + 1) if a[i : i + 1] != b[i : i + 1])
    assert f"differ at character {offset} (A {len(a)}, B {len(b)} characters)" in d.detail
    for part in parts:
        assert part in d.detail, d.detail
    side_a, _, side_b = d.detail.partition(", B has ")
    assert side_a.rpartition("A has ")[2] != side_b.partition(", then ")[0]
    lines = describe_body(compare_bodies(body_a, body_b))
    text_a, text_b = (ln.split("text: ", 1)[1] for ln in lines[1:3])
    assert text_a != text_b  # the byte windows read differently too


@settings(max_examples=300, deadline=None)
@given(
    common=st.text(max_size=200),
    a=st.text(max_size=5),
    b=st.text(max_size=5),
    tail=st.text(max_size=200),
)
def test_text_difference_never_shows_two_strings_alike(
    common: str, a: str, b: str, tail: str
) -> None:
    """For any two different strings (lone surrogates, format characters, spaces included),
    the parts shown as differing are different JSON strings that read back to the texts that
    differ, and the offset is that of the first differing character."""
    sa, sb = common + a + tail, common + b + tail
    if sa == sb:
        return
    text = text_difference(sa, sb)
    first = next(i for i in range(min(len(sa), len(sb)) + 1) if sa[i : i + 1] != sb[i : i + 1])
    assert text.startswith(f"differ at character {first} ")
    part_a = text.split(", A has ", 1)[1].split(", B has ", 1)[0]
    part_b = text.split(", B has ", 1)[1].rsplit(", then ", 1)[0]
    assert part_a != part_b
    assert not scrub._HIDDEN_IN_STREAM.search(text) and "\t" not in text and "\n" not in text
    for part, whole in ((part_a, sa), (part_b, sb)):
        if "…[" not in part:
            assert json.loads(part) in whole
