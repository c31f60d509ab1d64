"""``memspec audit memory-on``, the system slot: where in a memory-on request the advisory block
sits (a string folded in place, a value inserted into a container, or no block at all) and
whether removing it gives the baseline bytes back (MEM-INJECT.3, MEM-INJECT.4)."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.audit.jsonscan import Member, Node
from conformance.audit.memory_on_block import (
    INJECT_ANTHROPIC,
    INJECT_LIST,
    INJECT_ONLY,
    INJECT_OPENAI,
    Violation,
)


@dataclass(frozen=True)
class Fold:
    """A string value replaced in place: ``on`` (memory-on) over ``base`` (baseline)."""

    where: str
    on: Node
    base: Node  # a string or null node in the baseline
    clause: str

    @property
    def how(self) -> str:
        return f"folded onto the front of {self.where}"


@dataclass(frozen=True)
class Insert:
    """A value inserted into a container; removing it must give the baseline bytes."""

    where: str
    what: str
    node: Node  # the inserted value
    removals: tuple[tuple[int, int, bytes], ...]  # (start, end, what the baseline has there)
    shape: str  # string | text-part | system-message | messages-array
    clause: str
    deviation: str = ""  # a shape the seed allows and the reference does not (MEM-INJECT.4)

    @property
    def how(self) -> str:
        return f"inserted as {self.where} ({self.what})"


@dataclass(frozen=True)
class NoBlock:
    """The system slot is exactly the baseline's: whatever differs, it is not a block."""

    where: str


def _removals(data: bytes, container: Node, i: int) -> tuple[tuple[int, int, bytes], ...]:
    """Byte ranges whose removal takes child ``i`` (and one separator) out of ``container``.

    With a sibling after it, the child up to that sibling; with one before it, from the end
    of that sibling; as the only child, the child alone, with the whitespace on either side,
    or the container's whole inside.
    """
    if container.kind == "object":
        spans = [(m.key_start, m.value.end) for m in container.members]
    else:
        spans = [(n.start, n.end) for n in container.items]
    start, end = spans[i]
    out: list[tuple[int, int, bytes]] = []
    if i + 1 < len(spans):
        out.append((start, spans[i + 1][0], b""))
    if i > 0:
        out.append((spans[i - 1][1], end, b""))
    if len(spans) == 1:
        before, after = start, end
        while data[before - 1 : before] in (b" ", b"\t", b"\n", b"\r"):
            before -= 1
        while data[after : after + 1] in (b" ", b"\t", b"\n", b"\r"):
            after += 1
        out.append((container.start + 1, container.end - 1, b""))
        out.extend([(start, end, b""), (before, end, b""), (start, after, b"")])
    return tuple(out)


def _index_of_member(obj: Node, member: Member) -> int:
    return next(i for i, m in enumerate(obj.members) if m is member)


def _str(node: Node | None) -> str | None:
    if node is None or node.kind != "string":
        return None
    return node.text


def _same(a: bytes, na: Node, b: bytes, nb: Node) -> bool:
    return a[na.start : na.end] == b[nb.start : nb.end]


Slot = Fold | Insert | NoBlock | Violation


def locate_anthropic(a: bytes, base: Node, b: bytes, on: Node) -> Slot:
    """Where an Anthropic request carries the block (MEM-INJECT.3)."""
    on_m = on.member("system")
    base_m = base.member("system")
    if on_m is None:
        if base_m is not None:
            return Violation(INJECT_ANTHROPIC, "the baseline's top-level 'system' is missing")
        return NoBlock("$.system")
    if base_m is not None and _same(a, base_m.value, b, on_m.value):
        return NoBlock("$.system")
    if on_m.value.kind == "string":
        if base_m is None:
            return Insert(
                "$.system",
                "a new key: the baseline has no system",
                on_m.value,
                _removals(b, on, _index_of_member(on, on_m)),
                "string",
                INJECT_ANTHROPIC,
            )
        if base_m.value.kind in ("string", "null"):
            return Fold("$.system", on_m.value, base_m.value, INJECT_ANTHROPIC)
        return Violation(
            INJECT_ANTHROPIC,
            f"'system' changed from a {base_m.value.kind} in the baseline to a string",
        )
    if on_m.value.kind == "array":
        if base_m is None or base_m.value.kind != "array":
            shown = "absent" if base_m is None else f"a {base_m.value.kind}"
            return Violation(
                INJECT_ANTHROPIC,
                f"'system' is a list of blocks but {shown} in the baseline "
                "(a string system is folded as a string, never turned into a list)",
            )
        return locate_parts(a, base_m.value, b, on_m.value, "$.system", "block")
    return Violation(
        INJECT_ANTHROPIC, f"'system' is a {on_m.value.kind}, not a string or a list of blocks"
    )


def _is_system_message(node: Node | None) -> bool:
    if node is None or node.kind != "object":
        return False
    return _str(node.get("role")) == "system"


def locate_openai(a: bytes, base: Node, b: bytes, on: Node) -> Slot:
    """Where an OpenAI-compatible request carries the block (MEM-INJECT.4)."""
    on_m = on.member("messages")
    base_m = base.member("messages")
    if on_m is None:
        if base_m is None:
            return NoBlock("$.messages")
        return Violation(INJECT_ONLY, "the baseline's 'messages' is missing")
    if on_m.value.kind != "array":
        return Violation(INJECT_ONLY, f"'messages' is a {on_m.value.kind}, not a list")
    if base_m is None:
        return Insert(
            "$.messages",
            "a new key: the baseline has no messages",
            on_m.value,
            _removals(b, on, _index_of_member(on, on_m)),
            "messages-array",
            INJECT_ONLY,
        )
    if base_m.value.kind == "null":
        return Insert(
            "$.messages",
            "a list in place of the baseline's null",
            on_m.value,
            ((on_m.value.start, on_m.value.end, a[base_m.value.start : base_m.value.end]),),
            "messages-array",
            INJECT_ONLY,
        )
    if base_m.value.kind != "array":
        return Violation(INJECT_ONLY, "the baseline's 'messages' is not a list")
    base_items, on_items = base_m.value.items, on_m.value.items
    if not on_items or (
        base_items and len(on_items) == len(base_items) and _same(a, base_items[0], b, on_items[0])
    ):
        return NoBlock("$.messages[0]")
    base_first = base_items[0] if base_items else None
    on_first = on_items[0]
    if not _is_system_message(base_first):
        return Insert(
            "$.messages[0]",
            "a new system message before the baseline's messages",
            on_first,
            _removals(b, on_m.value, 0),
            "system-message",
            INJECT_ONLY,
        )
    assert base_first is not None
    if len(on_items) == len(base_items) + 1 and _same(a, base_first, b, on_items[1]):
        return Insert(
            "$.messages[0]",
            "a new message ahead of the baseline's own leading system message",
            on_first,
            _removals(b, on_m.value, 0),
            "system-message",
            INJECT_ONLY,
            "the block travels in a message of its own ahead of the leading system message, "
            "not folded into that message's content",
        )
    return _locate_in_system_message(a, b, base_first, on_first)


def _locate_in_system_message(a: bytes, b: bytes, base_first: Node, on_first: Node) -> Slot:
    """Where the block sits in a leading system message the baseline has too: folded into
    its string content, or a text part before its parts (MEM-INJECT.4)."""
    if on_first.kind != "object":
        return Violation(INJECT_ONLY, "messages[0] is not an object")
    on_c = on_first.member("content")
    base_c = base_first.member("content")
    if on_c is None:
        return Violation(
            INJECT_ONLY, "the leading system message lost its content (the baseline has one)"
        )
    if base_c is None:
        return Insert(
            "$.messages[0].content",
            "a new key: the baseline's system message has no content",
            on_c.value,
            _removals(b, on_first, _index_of_member(on_first, on_c)),
            "string",
            INJECT_ONLY,
        )
    if base_c.value.kind in ("string", "null"):
        if on_c.value.kind != "string":
            return Violation(
                INJECT_ONLY, f"the system content became a {on_c.value.kind}, not a string"
            )
        return Fold("$.messages[0].content", on_c.value, base_c.value, INJECT_ONLY)
    if base_c.value.kind == "array":
        if on_c.value.kind != "array":
            return Violation(
                INJECT_ONLY,
                "the baseline's system content is a list of parts; the memory-on content is a "
                f"{on_c.value.kind}",
            )
        return locate_parts(a, base_c.value, b, on_c.value, "$.messages[0].content", "part")
    return Violation(INJECT_ONLY, f"the baseline's system content is a {base_c.value.kind}")


def _first_text(parts: Node) -> int | None:
    """The index of the first ``{"type": "text", "text": <string or null>}`` item."""
    for i, item in enumerate(parts.items):
        if item.kind == "object" and _str(item.get("type")) == "text":
            text = item.get("text")
            if text is not None and text.kind in ("string", "null"):
                return i
    return None


def locate_parts(a: bytes, base: Node, b: bytes, on: Node, where: str, noun: str) -> Slot:
    """Where a list-form system prompt carries the block (MEM-INJECT.5): one more item than
    the baseline -- a text item inserted first; as many items -- folded into the first text
    item's own text (every other key of it, ``cache_control`` included, kept byte for byte)."""
    n_on, n_base = len(on.items), len(base.items)
    if n_on == n_base + 1:
        return Insert(
            f"{where}[0]",
            f"a text {noun} before the baseline's {noun}s",
            on.items[0],
            _removals(b, on, 0),
            "text-part",
            INJECT_ONLY,
        )
    if n_on != n_base:
        return Violation(
            INJECT_ONLY,
            f"{where} holds {n_on} {noun}s against the baseline's {n_base}: the block is one "
            f"text {noun} inserted first, or folded into the first text {noun}'s text",
        )
    i = _first_text(base)
    if i is None:
        return Violation(
            INJECT_ONLY,
            f"{where} has no text {noun} to fold the block into, and no {noun} was inserted",
        )
    base_text, on_item = base.items[i].get("text"), on.items[i]
    on_text = on_item.get("text") if on_item.kind == "object" else None
    assert base_text is not None
    if on_text is None or on_text.kind != "string":
        return Violation(INJECT_ONLY, f"{where}[{i}] lost its text")
    if _same(a, base_text, b, on_text):
        return NoBlock(f"{where}[{i}].text")
    return Fold(f"{where}[{i}].text", on_text, base_text, INJECT_ONLY)


def shape_block(node: Node, shape: str, clause: str) -> tuple[str | None, list[Violation]]:
    """The block carried by an inserted value of the given shape, and what is wrong with the
    value: a failure (``clause``), or a deviation from the reference's exact shape -- extra
    keys on an inserted text block (MEM-INJECT.5) or message, a ``developer`` message
    (MEM-INJECT.4) -- that still carries the block as a segment of its own."""
    if shape == "string":
        if node.kind != "string":
            return None, [
                Violation(clause, f"the inserted system prompt is a {node.kind}, not a string")
            ]
        return node.text, []
    if shape == "messages-array":  # the baseline had no messages at all
        if node.kind != "array" or len(node.items) != 1 or node.items[0].kind != "object":
            return None, [
                Violation(clause, "the added 'messages' must hold exactly one system message")
            ]
        node = node.items[0]
    if node.kind != "object":
        return None, [Violation(clause, f"the inserted value is a {node.kind}, not an object")]
    if shape == "text-part":
        return _carried(node, "type", ("text",), "text", INJECT_LIST, clause, "text block")
    return _carried(
        node, "role", ("system", "developer"), "content", INJECT_OPENAI, clause, "message"
    )


def _carried(
    obj: Node, tag: str, tags: tuple[str, ...], key: str, reference: str, clause: str, what: str
) -> tuple[str | None, list[Violation]]:
    """The string under ``key`` of an inserted ``obj`` whose ``tag`` is one of ``tags``; the
    exact reference shape is ``{tag: tags[0], key: <block>}``, anything else that still holds
    the block is a deviation naming ``reference``."""
    got_tag, text = _str(obj.get(tag)), obj.get(key)
    if got_tag not in tags or text is None or text.kind != "string":
        return None, [
            Violation(
                clause,
                f"the inserted {what} must be {{{tag!r}: {tags[0]!r}, {key!r}: <block>}}; "
                f"has {tag} {got_tag!r} and keys {[m.key for m in obj.members]}",
            )
        ]
    keys = sorted(m.key for m in obj.members)
    if got_tag == tags[0] and keys == sorted((tag, key)):
        return text.text, []
    return text.text, [
        Violation(
            reference,
            f"the inserted {what} is {{{tag!r}: {got_tag!r}}} with keys {keys}; the reference "
            f"inserts exactly {{{tag!r}: {tags[0]!r}, {key!r}: <block>}}",
        )
    ]
