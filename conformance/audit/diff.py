"""Byte-for-byte comparison of two captures, explained in JSON terms.

Two requests are identical only when their bytes are.  When they are not, an auditor needs to
see *where*: the first differing byte offset with a little context around it (as text and as
hex), and what that means for the JSON — a changed value at ``$.messages[0].content``, a key
present on one side only, keys in another order (called out even when the parsed JSON is
equal), a string or number spelled differently, or insignificant whitespace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from conformance.audit.capture import Capture, CapturedRequest
from conformance.audit.jsonscan import (
    JsonScanError,
    Node,
    decode,
    path_at,
    path_index,
    path_key,
    scan,
)
from conformance.scrub import visible

CONTEXT_TEXT = 24
CONTEXT_HEX = 8
MAX_DIFFERENCES = 12
VALUE_WIDTH = 72
#: How many characters of the text the two strings share are shown before and after the part
#: that differs, and how much of each differing part.
STRING_CONTEXT = 20
STRING_PART = 60


@dataclass(frozen=True)
class Difference:
    """One readable JSON-level difference between side A and side B."""

    path: str
    #: value | type | missing | key-order | duplicate-key | length | spelling | whitespace |
    #: not-json
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


@dataclass(frozen=True)
class ByteContext:
    """A window of bytes around an offset: ``text`` marks the offset with ``▶``."""

    start: int
    end: int
    text: str
    hex: str


@dataclass(frozen=True)
class BodyComparison:
    """How two request bodies compare."""

    identical: bool
    len_a: int
    len_b: int
    offset: int | None = None
    context_a: ByteContext | None = None
    context_b: ByteContext | None = None
    differences: tuple[Difference, ...] = ()
    truncated: bool = False
    label_a: str = "A"
    label_b: str = "B"


@dataclass(frozen=True)
class RequestVerdict:
    """The comparison of request ``index`` (either side may be missing)."""

    index: int
    identical: bool
    a: CapturedRequest | None
    b: CapturedRequest | None
    problems: tuple[str, ...] = ()
    body: BodyComparison | None = None


@dataclass(frozen=True)
class CaptureDiff:
    """The comparison of two whole captures."""

    count_a: int
    count_b: int
    requests: tuple[RequestVerdict, ...] = field(default=())
    headers_compared: bool = False
    ignored_headers: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        """Same number of requests and every request identical."""
        return self.count_a == self.count_b and all(r.identical for r in self.requests)

    @property
    def differing(self) -> list[RequestVerdict]:
        return [r for r in self.requests if not r.identical]


# --------------------------------------------------------------------------------------------
# bytes


def first_difference(a: bytes, b: bytes) -> int | None:
    """The first byte offset where ``a`` and ``b`` differ (the shorter length when one is a
    prefix of the other), or ``None`` when they are equal."""
    if a == b:
        return None
    n = min(len(a), len(b))
    lo, hi = 0, n  # invariant: a[:lo] == b[:lo]; the answer is in [lo, n]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _show_text(chunk: bytes) -> str:
    """Bytes as text an auditor can read exactly (:func:`conformance.scrub.visible`: line
    ends, tabs, controls, NBSP and other spaces, format characters, separators and runs of
    spaces as JSON escapes; bytes that are not UTF-8 as ``\\xNN``)."""
    return visible(chunk.decode("utf-8", "backslashreplace"))


def byte_context(data: bytes, offset: int) -> ByteContext:
    """The bytes around ``offset``: text (``▶`` before the offset byte) and hex (``[..]``)."""
    start = max(0, offset - CONTEXT_TEXT)
    end = min(len(data), offset + CONTEXT_TEXT)
    before = data[start:offset].decode("utf-8", "backslashreplace")
    after = data[offset:end].decode("utf-8", "backslashreplace")
    text = (
        ("…" if start > 0 else "")
        + visible(before + "▶" + after)  # one text: a space beside the mark is not leading
        + ("…" if end < len(data) else "")
    )
    hs = max(0, offset - CONTEXT_HEX)
    he = min(len(data), offset + CONTEXT_HEX)
    parts = [f"{b:02x}" for b in data[hs:offset]]
    parts.append(f"[{data[offset]:02x}]" if offset < len(data) else "[EOF]")
    parts.extend(f"{b:02x}" for b in data[offset + 1 : he])
    return ByteContext(start=start, end=end, text=text, hex=" ".join(parts))


# --------------------------------------------------------------------------------------------
# JSON


def _render(data: bytes, node: Node) -> str:
    text = visible(json.dumps(decode(data, node), ensure_ascii=False, separators=(",", ":")))
    if len(text) > VALUE_WIDTH:
        text = text[: VALUE_WIDTH - 1] + "…"
    return text


def _quoted(text: str, limit: int, *, head: bool = True) -> str:
    """``text`` JSON-quoted with every character visible, at most ``limit`` characters of it
    (its start, or with ``head=False`` its end), saying how many more there were."""
    if len(text) <= limit:
        return visible(json.dumps(text, ensure_ascii=False))
    if head:
        part = visible(json.dumps(text[:limit], ensure_ascii=False))
        return f"{part}…[{len(text) - limit} more]"
    part = visible(json.dumps(text[-limit:], ensure_ascii=False))
    return f"[{len(text) - limit} more]…{part}"


def text_difference(a: str, b: str, label_a: str = "A", label_b: str = "B") -> str:
    """Where two different texts differ, so they never read alike: the character offset of
    the first difference and both lengths, the text they share just before it, the part of
    each that differs (JSON-quoted, every character visible -- a trailing ``"\\n\\n"``, a
    NBSP for a space, an inserted U+200B), and the text they share after it.

    The differing parts are what is left once the longest common prefix and suffix are taken
    away: ``a == prefix + part_a + suffix`` and ``b == prefix + part_b + suffix``, so the two
    parts differ, and when both are non-empty their first characters do (each part is cut
    after :data:`STRING_PART` characters, never before its first)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    j = 0
    while j < n - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    part_a, part_b = a[i : len(a) - j], b[i : len(b) - j]
    before = _quoted(a[:i], STRING_CONTEXT, head=False) if i else "(start)"
    after = _quoted(a[len(a) - j :], STRING_CONTEXT) if j else "(end)"
    return (
        f"differ at character {i} ({label_a} {len(a)}, {label_b} {len(b)} characters):"
        f" after {before}, {label_a} has {_quoted(part_a, STRING_PART)}, {label_b} has"
        f" {_quoted(part_b, STRING_PART)}, then {after}"
    )


def _keys(keys: list[str]) -> str:
    shown = ", ".join(json.dumps(k, ensure_ascii=False) for k in keys[:10])
    return "[" + shown + (", …" if len(keys) > 10 else "") + "]"


class _Walker:
    def __init__(self, a: bytes, b: bytes, label_a: str, label_b: str) -> None:
        self.a = a
        self.b = b
        self.la = label_a
        self.lb = label_b
        self.out: list[Difference] = []

    def add(self, path: str, kind: str, detail: str) -> None:
        self.out.append(Difference(path, kind, detail))

    def walk(self, na: Node, nb: Node, path: str) -> None:
        a, b = self.a, self.b
        if na.kind != nb.kind:
            kind = "value" if {na.kind, nb.kind} <= {"true", "false"} else "type"
            self.add(path, kind, f"{_render(a, na)} != {_render(b, nb)}")
            return
        if na.kind == "object":
            self.walk_object(na, nb, path)
        elif na.kind == "array":
            for i, (ia, ib) in enumerate(zip(na.items, nb.items, strict=False)):
                self.walk(ia, ib, path_index(path, i))
            if len(na.items) != len(nb.items):
                self.add(path, "length", f"array of {len(na.items)} != array of {len(nb.items)}")
                a_longer = len(na.items) > len(nb.items)
                longer = na if a_longer else nb
                data = a if a_longer else b
                for i in range(min(len(na.items), len(nb.items)), len(longer.items)):
                    shown = _render(data, longer.items[i])
                    detail = f"{shown} != absent" if a_longer else f"absent != {shown}"
                    self.add(path_index(path, i), "missing", detail)
        elif na.kind == "string":
            sa, sb = na.text, nb.text
            ra, rb = _render(a, na), _render(b, nb)
            if sa != sb and not (ra.endswith("…") or rb.endswith("…")):
                self.add(path, "value", f"{ra} != {rb}")  # both whole, every character visible
            elif sa != sb:
                self.add(path, "value", f"strings {text_difference(sa, sb, self.la, self.lb)}")
            elif a[na.start : na.end] != b[nb.start : nb.end]:
                raw_a = a[na.start : na.end].decode("utf-8", "backslashreplace")
                raw_b = b[nb.start : nb.end].decode("utf-8", "backslashreplace")
                self.add(
                    path,
                    "spelling",
                    "same string, spelled differently: the JSON texts "
                    + text_difference(raw_a, raw_b, self.la, self.lb),
                )
        elif na.kind == "number":
            if na.text != nb.text:
                try:
                    same = Decimal(na.text) == Decimal(nb.text)
                except InvalidOperation:  # pragma: no cover - the scanner admits only numbers
                    same = False
                if same:
                    self.add(
                        path,
                        "spelling",
                        f"same number, spelled differently: {na.text} vs {nb.text}",
                    )
                else:
                    self.add(path, "value", f"{na.text} != {nb.text}")

    def walk_object(self, na: Node, nb: Node, path: str) -> None:
        keys_a = [m.key for m in na.members]
        keys_b = [m.key for m in nb.members]
        for keys, side in ((keys_a, self.la), (keys_b, self.lb)):
            seen: set[str] = set()
            for k in keys:
                if k in seen:
                    self.add(
                        path_key(path, k),
                        "duplicate-key",
                        f"key appears {keys.count(k)} times in {side}",
                    )
                seen.add(k)
        set_a, set_b = set(keys_a), set(keys_b)
        for k in dict.fromkeys(keys_a):
            if k not in set_b:
                node = na.get(k)
                assert node is not None
                self.add(path_key(path, k), "missing", f"{_render(self.a, node)} != absent")
        for k in dict.fromkeys(keys_b):
            if k not in set_a:
                node = nb.get(k)
                assert node is not None
                self.add(path_key(path, k), "missing", f"absent != {_render(self.b, node)}")
        common_a = [k for k in dict.fromkeys(keys_a) if k in set_b]
        common_b = [k for k in dict.fromkeys(keys_b) if k in set_a]
        if common_a != common_b:
            self.add(
                path,
                "key-order",
                f"key order differs: {self.la} {_keys(common_a)} vs {self.lb} {_keys(common_b)}",
            )
        for k in common_a:
            va, vb = na.get(k), nb.get(k)
            assert va is not None and vb is not None
            self.walk(va, vb, path_key(path, k))


def json_differences(
    a: bytes, b: bytes, label_a: str = "A", label_b: str = "B"
) -> list[Difference]:
    """Readable JSON-path differences between two bodies (empty when the bytes are equal).

    Value changes, keys on one side only, key order, duplicate keys, array lengths and
    spelling are found by walking both trees; when none is found but the bytes still differ,
    the difference is insignificant whitespace and is reported at the first differing byte.
    """
    if a == b:
        return []
    errors = []
    trees: list[Node] = []
    for data, side in ((a, label_a), (b, label_b)):
        try:
            trees.append(scan(data))
        except JsonScanError as exc:
            errors.append(Difference("$", "not-json", f"{side} is not JSON ({exc})"))
    if errors:
        return errors
    walker = _Walker(a, b, label_a, label_b)
    walker.walk(trees[0], trees[1], "$")
    if not walker.out:
        off = first_difference(a, b)
        assert off is not None
        ca, cb = (
            _quoted(side[off : off + 1].decode("utf-8", "backslashreplace"), 8)
            if off < len(side)
            else "end of body"
            for side in (a, b)
        )
        walker.add(
            path_at(trees[0], off),
            "whitespace",
            f"insignificant whitespace differs at byte {off} ({label_a} {ca} vs {label_b} {cb});"
            " the parsed JSON is equal",
        )
    return walker.out


def compare_bodies(a: bytes, b: bytes, label_a: str = "A", label_b: str = "B") -> BodyComparison:
    """Compare two bodies byte for byte and explain the first difference."""
    off = first_difference(a, b)
    if off is None:
        return BodyComparison(
            identical=True, len_a=len(a), len_b=len(b), label_a=label_a, label_b=label_b
        )
    diffs = json_differences(a, b, label_a, label_b)
    return BodyComparison(
        identical=False,
        len_a=len(a),
        len_b=len(b),
        offset=off,
        context_a=byte_context(a, off),
        context_b=byte_context(b, off),
        differences=tuple(diffs[:MAX_DIFFERENCES]),
        truncated=len(diffs) > MAX_DIFFERENCES,
        label_a=label_a,
        label_b=label_b,
    )


# --------------------------------------------------------------------------------------------
# captures


def _header_map(req: CapturedRequest, ignored: frozenset[str]) -> list[tuple[str, str]]:
    return [(n.lower(), v) for n, v in req.headers if n.lower() not in ignored]


def compare_requests(
    index: int,
    a: CapturedRequest,
    b: CapturedRequest,
    headers: bool = False,
    ignored_headers: frozenset[str] = frozenset({"host"}),
) -> RequestVerdict:
    """Compare request ``index`` of both captures: method, path, body bytes (and headers)."""
    problems: list[str] = []
    if a.method != b.method:
        problems.append(f"method {a.method} != {b.method}")
    if a.path != b.path:
        problems.append(f"path {visible(a.path)} != {visible(b.path)}")
    if headers:
        ha, hb = _header_map(a, ignored_headers), _header_map(b, ignored_headers)
        if ha != hb:
            names_a = [n for n, _ in ha]
            names_b = [n for n, _ in hb]
            if sorted(ha) == sorted(hb):
                problems.append(f"headers in another order: A {names_a} vs B {names_b}")
            else:
                for name in dict.fromkeys(names_a + names_b):
                    va = [v for n, v in ha if n == name]
                    vb = [v for n, v in hb if n == name]
                    if va != vb:
                        show_a = ", ".join(map(visible, va)) if va else "absent"
                        show_b = ", ".join(map(visible, vb)) if vb else "absent"
                        problems.append(f"header {name}: {show_a} != {show_b}")
    body = compare_bodies(a.body, b.body)
    return RequestVerdict(
        index=index,
        identical=body.identical and not problems,
        a=a,
        b=b,
        problems=tuple(problems),
        body=body,
    )


def diff_captures(
    a: Capture,
    b: Capture,
    headers: bool = False,
    ignored_headers: frozenset[str] = frozenset({"host"}),
) -> CaptureDiff:
    """Compare two captures request by request; extra requests on either side differ."""
    verdicts: list[RequestVerdict] = []
    for i in range(max(len(a.requests), len(b.requests))):
        ra = a.requests[i] if i < len(a.requests) else None
        rb = b.requests[i] if i < len(b.requests) else None
        if ra is not None and rb is not None:
            verdicts.append(compare_requests(i, ra, rb, headers, ignored_headers))
        else:
            present = ra if ra is not None else rb
            assert present is not None
            side = "A" if ra is not None else "B"
            verdicts.append(
                RequestVerdict(
                    index=i,
                    identical=False,
                    a=ra,
                    b=rb,
                    problems=(
                        f"only in {side}: {present.label} ({len(present.body)} bytes, "
                        f"sha256 {present.body_sha256[:16]}…)",
                    ),
                )
            )
    return CaptureDiff(
        count_a=len(a.requests),
        count_b=len(b.requests),
        requests=tuple(verdicts),
        headers_compared=headers,
        ignored_headers=tuple(sorted(ignored_headers)) if headers else (),
    )


def describe_body(body: BodyComparison) -> list[str]:
    """Lines explaining a body difference (empty when identical)."""
    if body.identical or body.offset is None:
        return []
    label_a, label_b = body.label_a, body.label_b
    width = max(len(label_a), len(label_b))
    label_a, label_b = label_a.ljust(width), label_b.ljust(width)
    assert body.context_a is not None and body.context_b is not None
    lines = [
        f"bodies differ at byte offset {body.offset} "
        f"({body.label_a} {body.len_a} bytes, {body.label_b} {body.len_b} bytes)",
        f"  {label_a} text: {body.context_a.text}",
        f"  {label_b} text: {body.context_b.text}",
        f"  {label_a} hex:  {body.context_a.hex}",
        f"  {label_b} hex:  {body.context_b.hex}",
    ]
    lines.extend(f"  {d}" for d in body.differences)
    if body.truncated:
        lines.append(f"  … (first {MAX_DIFFERENCES} JSON differences shown)")
    return lines
