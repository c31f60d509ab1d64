"""Sanitizing record fields and rendering the advisory block (MEM-CONTAIN)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from reference.memory.records import MemoryRecord
from reference.memory.scoring import collapse_whitespace

_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")

FENCE_OPEN: Final = "<background_memory>"
FENCE_CLOSE: Final = "</background_memory>"
EM_DASH: Final = "\u2014"
SCOPE_JOIN: Final = " + "


def escape_markup(s: str) -> str:
    """``&`` -> ``&amp;`` first, then ``<`` -> ``&lt;`` and ``>`` -> ``&gt;`` (MEM-CONTAIN.2)."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape_markup(s: str) -> str:
    """Exact inverse of ``escape_markup`` on its outputs (used by properties, MEM-CONTAIN.2)."""
    return re.sub("&(amp|lt|gt);", lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], s)


def flatten_field(s: str) -> str:
    """One line of plain text: control characters ``[\\x00-\\x1f\\x7f-\\x9f]`` and
    U+2028/U+2029 become spaces, every whitespace run one space, the ends trimmed.  No escaping
    (MEM-CONTAIN.1, MEM-CMD.6)."""
    return collapse_whitespace(_CONTROL.sub(" ", s))


def sanitize_memory_field(s: str) -> str:
    """Make one record field safe to place inside a bullet (MEM-CONTAIN.1, MEM-CONTAIN.2).

    Control characters ``[\\x00-\\x1f\\x7f-\\x9f]`` and U+2028/U+2029 become spaces, every
    whitespace run becomes one space, the ends are trimmed, then ``&``, ``<``, ``>`` are
    escaped (``&`` first).
    """
    return escape_markup(flatten_field(s))


def render_bullet(record: MemoryRecord) -> str:
    """``- <text> (source: <sourceThreadKey>)``, both fields sanitized (MEM-CONTAIN.3)."""
    text = sanitize_memory_field(record.text)
    source = sanitize_memory_field(record.source_thread_key)
    return f"- {text} (source: {source})"


def scope_resource(scope_keys: Sequence[str]) -> str:
    """The scopes named in the prefix, joined with ``" + "`` in the given order (MEM-READ.3)."""
    return SCOPE_JOIN.join(scope_keys)


def memory_prefix_line(resource: str) -> str:
    """The advisory first line of the block, with a U+2014 dash (MEM-CONTAIN.4)."""
    return f"Background memory for {resource} (may be outdated {EM_DASH} verify before acting):"


def render_memory_block(records: Sequence[MemoryRecord], resource: str) -> str:
    """Prefix line, open fence, one bullet per record, close fence, joined by ``"\\n"``.

    The fences are written here directly, never through the sanitizer (MEM-CONTAIN.3,
    MEM-CONTAIN.4).  The block always has ``len(records) + 3`` lines; callers that have no
    records produce no block at all (MEM-INJECT.2).
    """
    lines = [memory_prefix_line(resource), FENCE_OPEN]
    lines.extend(render_bullet(r) for r in records)
    lines.append(FENCE_CLOSE)
    return "\n".join(lines)
