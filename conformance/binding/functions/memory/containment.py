"""Containment (``reference/memory/containment.py``): sanitizeMemoryField, renderBullet,
memoryPrefixLine, renderMemoryBlock.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import memory_record, memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import REC, any_text, memory_list, rec, text_boundaries
from reference.memory.containment import (
    flatten_field,
    memory_prefix_line,
    render_bullet,
    render_memory_block,
    sanitize_memory_field,
)


def _sanitize(a: Args) -> JSON:
    return sanitize_memory_field(a["text"])


def _bullet(a: Args) -> JSON:
    return render_bullet(memory_record(a["record"]))


def _prefix(a: Args) -> JSON:
    return memory_prefix_line(a["resource"])


def _block(a: Args) -> JSON:
    return render_memory_block(memory_records(a["records"]), a["resource"])


def _sanitize_boundaries() -> list[tuple[str, Args]]:
    return [
        *text_boundaries(),
        ("ampersand first", {"text": "&lt;"}),
        ("all three metacharacters", {"text": "<a href='x'>&</a>"}),
        ("C1 controls become spaces", {"text": "a\x85b\x9fc"}),
        ("line and paragraph separators", {"text": "a\u2028b\u2029c"}),
        ("CR LF", {"text": "line1\r\nline2"}),
        ("fence text is escaped", {"text": "</background_memory>"}),
    ]


def _sanitize_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """A flat line (no control, no line break, no whitespace run, trimmed) escaped wrongly:
    MEM-CONTAIN.2; a line that is not flat: MEM-CONTAIN.1."""
    value = got.get("ok") if isinstance(got, dict) else None
    if not isinstance(value, str):
        return ()
    if flatten_field(value) == value:
        return ("MEM-CONTAIN.2",)
    return ("MEM-CONTAIN.1",)


def _block_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """The prefix line or the fences differ: MEM-CONTAIN.4; else a bullet: MEM-CONTAIN.3."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if not isinstance(value, str) or not isinstance(want, str):
        return ()
    lines, wanted = value.split("\n"), want.split("\n")
    frame = (lines[:2], lines[-1:]) != (wanted[:2], wanted[-1:])
    return ("MEM-CONTAIN.4",) if frame else ("MEM-CONTAIN.3",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "sanitizeMemoryField",
        MEMORY,
        ("MEM-CONTAIN.1", "MEM-CONTAIN.2"),
        "one clean line, markup escaped ampersand first",
        _sanitize,
        st.fixed_dictionaries({"text": any_text}),
        _sanitize_boundaries,
        blame=_sanitize_blame,
    ),
    fn(
        "renderBullet",
        MEMORY,
        ("MEM-CONTAIN.3",),
        "- text (source: thread)",
        _bullet,
        st.fixed_dictionaries({"record": REC}),
        lambda: [
            (
                "metacharacters in both fields",
                {"record": rec(text="a<b>&c\nd", sourceThreadKey="t&<1>")},
            )
        ],
    ),
    fn(
        "memoryPrefixLine",
        MEMORY,
        ("MEM-CONTAIN.4",),
        "the advisory first line",
        _prefix,
        st.fixed_dictionaries(
            {"resource": st.sampled_from(("org:acme", "org:acme + user:slack:U1", ""))}
        ),
        lambda: [
            ("two scopes", {"resource": "org:acme + user:slack:U1"}),
            ("empty", {"resource": ""}),
        ],
    ),
    fn(
        "renderMemoryBlock",
        MEMORY,
        ("MEM-CONTAIN.3", "MEM-CONTAIN.4"),
        "prefix, fences, bullets",
        _block,
        st.fixed_dictionaries({"records": memory_list(3), "resource": st.just("org:acme")}),
        lambda: [
            (
                "fences never sanitized; a fence in text is",
                {"records": [rec(text="</background_memory>")], "resource": "org:acme"},
            ),
            ("no records: prefix and fences only", {"records": [], "resource": "org:acme"}),
        ],
        blame=_block_blame,
    ),
)
