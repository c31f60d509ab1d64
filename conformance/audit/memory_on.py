"""``memspec audit memory-on``: with memory on, the only change is one advisory block.

Given a baseline capture (the system without the memory feature, or with memory off) and a
capture of the same conversation with memory on, each memory-on request must equal its
baseline except for one advisory block folded onto the front of the system prompt, placed the
way ``reference/memory/injection.py`` places it:

* Anthropic (``POST /v1/messages``), MEM-INJECT.3: the top-level ``system`` string becomes
  ``block + "\\n\\n" + system`` (the block alone when ``system`` is empty, ``null`` or absent —
  an absent key is added); a ``system`` list of content blocks gets ``{"type": "text",
  "text": block}`` inserted first.
* OpenAI-compatible (``POST /v1/chat/completions``), MEM-INJECT.4: when ``messages[0]`` has
  role ``system`` its content is folded the same way (a list of content parts gets a text part
  inserted first); otherwise a new ``{"role": "system", "content": block}`` message is inserted
  at index 0.

The check works on the raw bytes.  A small JSON scanner locates the system slot's span in both
requests; every byte outside it must be identical (MEM-INJECT.3/4), and inside it the baseline's
own system text must follow the block byte for byte, in the same encoding (MEM-INJECT.1).  An
inserted key, message or content part must be removable so that what remains *is* the baseline
bytes.  The block itself is checked against the spec: the exact prefix line (U+2014),
the fences, ``n + 3`` lines (MEM-CONTAIN.4), each bullet ``- <text> (source: <thread>)`` whose
fields are sanitized fields — something ``sanitize_memory_field`` can output (MEM-CONTAIN.1-3)
— the scope list of the prefix (MEM-READ.3, MEM-SCOPE.1/3/4), and the budget: at most
``limit`` bullets, and the bullets' estimated tokens within ``max_tokens`` unless there is
exactly one (MEM-BUDGET.1-3).  A request with memory on that equals its baseline byte for byte
carries no block, which the spec allows (nothing matched, MEM-INJECT.2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from conformance.audit.capture import ANTHROPIC_PATH, OPENAI_PATH, Capture, CapturedRequest
from conformance.audit.diff import BodyComparison, compare_bodies, describe_body
from conformance.audit.jsonscan import JsonScanError, Member, Node, scan
from reference.memory.budget import estimate_tokens
from reference.memory.containment import (
    memory_prefix_line,
    render_memory_block,
    sanitize_memory_field,
    scope_resource,
)
from reference.memory.injection import fold_memory_block
from reference.memory.records import MemoryRecord

DEFAULT_LIMIT = 8
DEFAULT_MAX_TOKENS = 800

INJECT_FOLD = "MEM-INJECT.1"
INJECT_NO_BLOCK = "MEM-INJECT.2"
INJECT_ANTHROPIC = "MEM-INJECT.3"
INJECT_OPENAI = "MEM-INJECT.4"
CONTAIN_FLAT = "MEM-CONTAIN.1"
CONTAIN_ESCAPE = "MEM-CONTAIN.2"
CONTAIN_BULLET = "MEM-CONTAIN.3"
CONTAIN_FORM = "MEM-CONTAIN.4"
BUDGET_LIMIT = "MEM-BUDGET.1"
BUDGET_TOKENS = "MEM-BUDGET.3"
READ_PREFIX = "MEM-READ.3"
READ_NO_RECORDS = "MEM-READ.4"
SCOPE_KEYS = "MEM-SCOPE.1"
SCOPE_DERIVED = "MEM-SCOPE.3"
SCOPE_ORDERED = "MEM-SCOPE.4"

PART_JOIN = "\n\n"  # the fold's separator (MEM-INJECT.1)
SCOPE_ORDER = ("org", "repo", "channel", "user")  # MEM-SCOPE.4
_LABELS = ("baseline", "memory-on")
_RESTORED = ("baseline", "memory-on*")
_SENTINEL = "\x00"
PREFIX_HEAD, PREFIX_TAIL = memory_prefix_line(_SENTINEL).split(_SENTINEL)
FENCE_OPEN = "<background_memory>"
FENCE_CLOSE = "</background_memory>"
SOURCE_SEP = " (source: "
_ENTITY = re.compile("&(amp|lt|gt);")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_DASHLIKE = re.compile(r" \(may be outdated (.{1,3}) verify before acting\):$")


@dataclass(frozen=True)
class Violation:
    """One broken rule, named by its clause id."""

    clause: str
    message: str

    def __str__(self) -> str:
        return f"{self.clause}: {self.message}"


@dataclass(frozen=True)
class BlockInfo:
    """What the advisory block in a memory-on request holds."""

    location: str
    resource: str
    bullets: tuple[str, ...]
    tokens: int
    text: str


@dataclass(frozen=True)
class PairVerdict:
    """The verdict for request ``index``: ``status`` is ``block``, ``no-block`` or ``fail``."""

    index: int
    provider: str | None
    ok: bool
    status: str
    summary: str
    violations: tuple[Violation, ...] = ()
    block: BlockInfo | None = None
    outside: BodyComparison | None = None


@dataclass(frozen=True)
class MemoryOnResult:
    """The verdict over two whole captures."""

    count_baseline: int
    count_memory: int
    limit: int
    max_tokens: int
    require_block: bool
    pairs: tuple[PairVerdict, ...] = field(default=())
    problems: tuple[Violation, ...] = ()

    @property
    def ok(self) -> bool:
        """Same request count, every pair passes."""
        return not self.problems and all(p.ok for p in self.pairs)


# --------------------------------------------------------------------------------------------
# the block


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _unescape(s: str) -> str:
    return _ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], s)


def is_sanitized_field(s: str) -> bool:
    """True when ``s`` is an output of ``sanitize_memory_field`` (MEM-CONTAIN.1, MEM-CONTAIN.2).

    Escaping is ampersand-first and so lossless: ``s`` is an output exactly when sanitizing
    its un-escaped form gives ``s`` back.
    """
    return sanitize_memory_field(_unescape(s)) == s


def field_problems(s: str, what: str) -> list[Violation]:
    """Why ``s`` is not a sanitized field, clause by clause (empty when it is one)."""
    if is_sanitized_field(s):
        return []
    out: list[Violation] = []
    for i, ch in enumerate(s):
        if ch in "<>":
            out.append(
                Violation(CONTAIN_ESCAPE, f"{what} has an unescaped {ch!r} at character {i}")
            )
            break
    for m in re.finditer("&", s):
        if not _ENTITY.match(s, m.start()):
            out.append(
                Violation(
                    CONTAIN_ESCAPE,
                    f"{what} has a bare '&' at character {m.start()} (not &amp; &lt; &gt;)",
                )
            )
            break
    ctl = _CONTROL.search(s)
    if ctl:
        out.append(
            Violation(
                CONTAIN_FLAT,
                f"{what} has control/line-separator character U+{ord(ctl.group()):04X} "
                f"at character {ctl.start()}",
            )
        )
    flat = _CONTROL.sub(" ", _unescape(s))
    if sanitize_memory_field(flat) != _escape(flat):  # i.e. collapsing whitespace changes it
        out.append(
            Violation(
                CONTAIN_FLAT,
                f"{what} is not whitespace-normalized (leading/trailing or repeated whitespace)",
            )
        )
    if not out:  # pragma: no cover - the checks above cover every way to fail
        out.append(Violation(CONTAIN_FLAT, f"{what} is not an output of the sanitizer"))
    return out


def _split_bullet(line: str) -> tuple[str, str, list[Violation]]:
    """(text, source, problems) of one bullet line, choosing the cleanest split."""
    body = line[2:-1]
    best: tuple[str, str, list[Violation]] | None = None
    start = 0
    while True:
        at = body.find(SOURCE_SEP, start)
        if at < 0:
            break
        text, source = body[:at], body[at + len(SOURCE_SEP) :]
        probs = field_problems(text, "text") + field_problems(source, "source")
        if best is None or len(probs) < len(best[2]):
            best = (text, source, probs)
        if not probs:
            break
        start = at + 1
    assert best is not None
    return best


def check_block(
    block: str, location: str, limit: int, max_tokens: int
) -> tuple[BlockInfo, list[Violation]]:
    """Check one advisory block against MEM-CONTAIN, MEM-READ.3, MEM-SCOPE and MEM-BUDGET."""
    v: list[Violation] = []
    lines = block.split("\n")
    head = lines[0]
    resource = ""
    if head.startswith(PREFIX_HEAD) and head.endswith(PREFIX_TAIL):
        resource = head[len(PREFIX_HEAD) : len(head) - len(PREFIX_TAIL)]
        if memory_prefix_line(resource) != head:  # pragma: no cover - same construction
            v.append(Violation(CONTAIN_FORM, f"prefix line is not exact: {head!r}"))
        v.extend(_resource_problems(resource))
    else:
        dash = _DASHLIKE.search(head)
        if head.startswith(PREFIX_HEAD) and dash:
            shown = ", ".join(f"U+{ord(c):04X}" for c in dash.group(1))
            v.append(
                Violation(
                    CONTAIN_FORM,
                    f"prefix line uses {shown} where the spec has U+2014 EM DASH: {head!r}",
                )
            )
        else:
            v.append(
                Violation(
                    CONTAIN_FORM,
                    "the block does not start with the prefix line "
                    f"{PREFIX_HEAD}<resource>{PREFIX_TAIL!s}; found {head[:80]!r}",
                )
            )
    if len(lines) < 2 or lines[1] != FENCE_OPEN:
        found = lines[1][:60] if len(lines) > 1 else "end of block"
        v.append(Violation(CONTAIN_FORM, f"line 2 must be {FENCE_OPEN!r}; found {found!r}"))
    if len(lines) < 3 or lines[-1] != FENCE_CLOSE:
        v.append(
            Violation(CONTAIN_FORM, f"last line must be {FENCE_CLOSE!r}; found {lines[-1][:60]!r}")
        )
    bullets = lines[2:-1] if len(lines) >= 3 else []
    if len(lines) >= 3 and not bullets:
        v.append(
            Violation(
                READ_NO_RECORDS, "the block has no bullets (no records must mean no block at all)"
            )
        )
    records: list[MemoryRecord] = []
    for n, line in enumerate(bullets, start=1):
        where = f"bullet {n} (line {n + 2})"
        if line in (FENCE_OPEN, FENCE_CLOSE):
            v.append(
                Violation(CONTAIN_BULLET, f"{where} is a fence line: a second fence is forged")
            )
            continue
        if not (line.startswith("- ") and line.endswith(")") and SOURCE_SEP in line):
            v.append(
                Violation(
                    CONTAIN_BULLET,
                    f"{where} is not '- <text> (source: <thread>)': {line[:80]!r}",
                )
            )
            continue
        text, source, probs = _split_bullet(line)
        v.extend(Violation(p.clause, f"{where}: {p.message}") for p in probs)
        records.append(_stand_in(_unescape(text), _unescape(source), n))
    if len(bullets) > limit:
        v.append(Violation(BUDGET_LIMIT, f"{len(bullets)} bullets, more than the limit of {limit}"))
    tokens = sum(estimate_tokens(b) for b in bullets)
    if len(bullets) > 1 and tokens > max_tokens:
        v.append(
            Violation(
                BUDGET_TOKENS,
                f"the {len(bullets)} bullets are estimated at {tokens} tokens, over the "
                f"budget of {max_tokens} (only a single bullet may exceed it)",
            )
        )
    if not v and render_memory_block(records, resource) != block:  # pragma: no cover
        v.append(Violation(CONTAIN_FORM, "the block is not what the reference renderer renders"))
    info = BlockInfo(
        location=location, resource=resource, bullets=tuple(bullets), tokens=tokens, text=block
    )
    return info, v


def _stand_in(text: str, source: str, n: int) -> MemoryRecord:
    return MemoryRecord(
        id=f"audit:{n}",
        scope_key="audit",
        kind="fact",
        text=text,
        keywords=(),
        source_thread_key=source,
        source_run_id=None,
        created_at=0,
        last_used_at=None,
        use_count=0,
        confidence=None,
        supersedes=None,
        status="active",
    )


def _resource_problems(resource: str) -> list[Violation]:
    v: list[Violation] = []
    keys = resource.split(" + ")
    kinds: list[str] = []
    for key in keys:
        kind, sep, value = key.partition(":")
        if not sep or kind not in SCOPE_ORDER or not value:
            v.append(
                Violation(
                    SCOPE_KEYS,
                    f"prefix names {key!r}, not a scope key (org:…, repo:…, channel:…, user:…)",
                )
            )
            continue
        if any(c.isspace() or _CONTROL.match(c) for c in key):
            v.append(Violation(SCOPE_KEYS, f"scope key {key!r} holds whitespace or controls"))
        kinds.append(kind)
    if v:
        return v
    if scope_resource(keys) != resource:  # pragma: no cover - split/join round trip
        v.append(Violation(READ_PREFIX, f"scopes are not joined with ' + ': {resource!r}"))
    for kind in dict.fromkeys(kinds):
        if kinds.count(kind) > 1:
            v.append(
                Violation(SCOPE_DERIVED, f"the prefix names {kinds.count(kind)} {kind} scopes")
            )
    if "org" not in kinds:
        v.append(Violation(SCOPE_DERIVED, "the prefix does not name the org scope"))
    rank = [SCOPE_ORDER.index(k) for k in kinds]
    if rank != sorted(rank):
        v.append(
            Violation(
                SCOPE_ORDERED,
                f"scopes in the prefix are not in org, repo, channel, user order: {resource!r}",
            )
        )
    return v


# --------------------------------------------------------------------------------------------
# locating the system slot


@dataclass(frozen=True)
class _Fold:
    """A string value replaced in place: ``on`` (memory-on) over ``base`` (baseline)."""

    where: str
    on: Node
    base: Node  # a string or null node in the baseline
    clause: str

    @property
    def how(self) -> str:
        return f"folded onto the front of {self.where}"


@dataclass(frozen=True)
class _Insert:
    """A value inserted into a container; removing it must give the baseline bytes."""

    where: str
    what: str
    node: Node  # the inserted value
    removals: tuple[tuple[int, int, bytes], ...]  # (start, end, what the baseline has there)
    shape: str  # string | text-part | system-message | messages-array
    clause: str

    @property
    def how(self) -> str:
        return f"inserted as {self.where} ({self.what})"


@dataclass(frozen=True)
class _NoBlock:
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


_Slot = _Fold | _Insert | _NoBlock | Violation


def _locate_anthropic(a: bytes, base: Node, b: bytes, on: Node) -> _Slot:
    """Where an Anthropic request carries the block (MEM-INJECT.3)."""
    on_m = on.member("system")
    base_m = base.member("system")
    if on_m is None:
        if base_m is not None:
            return Violation(INJECT_ANTHROPIC, "the baseline's top-level 'system' is missing")
        return _NoBlock("$.system")
    if base_m is not None and _same(a, base_m.value, b, on_m.value):
        return _NoBlock("$.system")
    if on_m.value.kind == "string":
        if base_m is None:
            return _Insert(
                "$.system",
                "a new key: the baseline has no system",
                on_m.value,
                _removals(b, on, _index_of_member(on, on_m)),
                "string",
                INJECT_ANTHROPIC,
            )
        if base_m.value.kind in ("string", "null"):
            return _Fold("$.system", on_m.value, base_m.value, INJECT_ANTHROPIC)
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
        if len(on_m.value.items) != len(base_m.value.items) + 1:
            return Violation(
                INJECT_ANTHROPIC,
                f"'system' holds {len(on_m.value.items)} blocks against the baseline's "
                f"{len(base_m.value.items)}: the block must be exactly one text block "
                "inserted first",
            )
        return _Insert(
            "$.system[0]",
            "a text block before the baseline's blocks",
            on_m.value.items[0],
            _removals(b, on_m.value, 0),
            "text-part",
            INJECT_ANTHROPIC,
        )
    return Violation(
        INJECT_ANTHROPIC, f"'system' is a {on_m.value.kind}, not a string or a list of blocks"
    )


def _is_system_message(node: Node | None) -> bool:
    if node is None or node.kind != "object":
        return False
    return _str(node.get("role")) == "system"


def _locate_openai(a: bytes, base: Node, b: bytes, on: Node) -> _Slot:
    """Where an OpenAI-compatible request carries the block (MEM-INJECT.4)."""
    on_m = on.member("messages")
    base_m = base.member("messages")
    if on_m is None:
        if base_m is None:
            return _NoBlock("$.messages")
        return Violation(INJECT_OPENAI, "the baseline's 'messages' is missing")
    if on_m.value.kind != "array":
        return Violation(INJECT_OPENAI, f"'messages' is a {on_m.value.kind}, not a list")
    if base_m is None:
        return _Insert(
            "$.messages",
            "a new key: the baseline has no messages",
            on_m.value,
            _removals(b, on, _index_of_member(on, on_m)),
            "messages-array",
            INJECT_OPENAI,
        )
    if base_m.value.kind == "null":
        return _Insert(
            "$.messages",
            "a list in place of the baseline's null",
            on_m.value,
            ((on_m.value.start, on_m.value.end, a[base_m.value.start : base_m.value.end]),),
            "messages-array",
            INJECT_OPENAI,
        )
    if base_m.value.kind != "array":
        return Violation(INJECT_OPENAI, "the baseline's 'messages' is not a list")
    base_items, on_items = base_m.value.items, on_m.value.items
    if not on_items or (
        base_items and len(on_items) == len(base_items) and _same(a, base_items[0], b, on_items[0])
    ):
        return _NoBlock("$.messages[0]")
    base_first = base_items[0] if base_items else None
    on_first = on_items[0]
    if not _is_system_message(base_first):
        return _Insert(
            "$.messages[0]",
            "a new system message before the baseline's messages",
            on_first,
            _removals(b, on_m.value, 0),
            "system-message",
            INJECT_OPENAI,
        )
    assert base_first is not None
    if on_first.kind != "object":
        return Violation(INJECT_OPENAI, "messages[0] is not an object")
    on_c = on_first.member("content")
    base_c = base_first.member("content")
    if on_c is None:
        return Violation(
            INJECT_OPENAI, "the leading system message lost its content (the baseline has one)"
        )
    if base_c is None:
        return _Insert(
            "$.messages[0].content",
            "a new key: the baseline's system message has no content",
            on_c.value,
            _removals(b, on_first, _index_of_member(on_first, on_c)),
            "string",
            INJECT_OPENAI,
        )
    if base_c.value.kind in ("string", "null"):
        if on_c.value.kind != "string":
            return Violation(
                INJECT_OPENAI, f"the system content became a {on_c.value.kind}, not a string"
            )
        return _Fold("$.messages[0].content", on_c.value, base_c.value, INJECT_OPENAI)
    if base_c.value.kind == "array":
        if on_c.value.kind != "array" or len(on_c.value.items) != len(base_c.value.items) + 1:
            return Violation(
                INJECT_OPENAI,
                "the baseline's system content is a list of parts; the memory-on content must "
                "be that list with one text part inserted first",
            )
        return _Insert(
            "$.messages[0].content[0]",
            "a text part before the baseline's parts",
            on_c.value.items[0],
            _removals(b, on_c.value, 0),
            "text-part",
            INJECT_OPENAI,
        )
    return Violation(INJECT_OPENAI, f"the baseline's system content is a {base_c.value.kind}")


def _shape_block(node: Node, shape: str, clause: str) -> str | Violation:
    """The block carried by an inserted value of the given shape."""

    def exact(obj: Node, want: dict[str, str], what: str) -> str | Violation:
        keys = [m.key for m in obj.members]
        if sorted(keys) != sorted(want):
            return Violation(
                clause, f"the inserted {what} must have exactly the keys {sorted(want)}; has {keys}"
            )
        for key, value in want.items():
            got = obj.get(key)
            if value and _str(got) != value:
                return Violation(clause, f"the inserted {what} must have {key} {value!r}")
        text = obj.get(next(k for k, val in want.items() if not val))
        if text is None or text.kind != "string":
            return Violation(clause, f"the inserted {what} carries no string block")
        return text.text

    if shape == "string":
        if node.kind != "string":
            return Violation(clause, f"the inserted system prompt is a {node.kind}, not a string")
        return node.text
    if node.kind != "object" and shape != "messages-array":
        return Violation(clause, f"the inserted value is a {node.kind}, not an object")
    if shape == "text-part":
        return exact(node, {"type": "text", "text": ""}, "text part")
    if shape == "system-message":
        return exact(node, {"role": "system", "content": ""}, "system message")
    # messages-array: the baseline had no messages at all
    if node.kind != "array" or len(node.items) != 1 or node.items[0].kind != "object":
        return Violation(clause, "the added 'messages' must hold exactly one system message")
    return exact(node.items[0], {"role": "system", "content": ""}, "system message")


# --------------------------------------------------------------------------------------------
# one pair


def _decode_raw(raw: bytes) -> str | None:
    try:
        value = json.loads(b'"' + raw + b'"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def check_pair(
    index: int,
    baseline: CapturedRequest,
    with_memory: CapturedRequest,
    limit: int = DEFAULT_LIMIT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    require_block: bool = False,
) -> PairVerdict:
    """Check one memory-on request against its baseline (see the module docstring)."""
    provider = {ANTHROPIC_PATH: "anthropic", OPENAI_PATH: "openai"}.get(
        baseline.path.split("?", 1)[0]
    )

    def fail(
        violations: Sequence[Violation],
        outside: BodyComparison | None = None,
        block: BlockInfo | None = None,
    ) -> PairVerdict:
        first = violations[0] if violations else None
        return PairVerdict(
            index,
            provider,
            False,
            "fail",
            str(first) if first else "failed",
            tuple(violations),
            block,
            outside,
        )

    if baseline.method != with_memory.method or baseline.path != with_memory.path:
        return fail(
            [
                Violation(
                    INJECT_ANTHROPIC if provider == "anthropic" else INJECT_OPENAI,
                    f"a different endpoint: baseline {baseline.label}, "
                    f"memory-on {with_memory.label}",
                )
            ]
        )
    a, b = baseline.body, with_memory.body
    if a == b:
        if require_block:
            return fail(
                [Violation(INJECT_NO_BLOCK, "no advisory block (identical to the baseline)")]
            )
        return PairVerdict(
            index, provider, True, "no-block", "identical to the baseline (no block injected)"
        )
    clause = INJECT_ANTHROPIC if provider == "anthropic" else INJECT_OPENAI
    if provider is None:
        return fail(
            [
                Violation(
                    INJECT_ANTHROPIC,
                    f"{baseline.label} is not a provider endpoint this audit understands "
                    f"(POST {ANTHROPIC_PATH}, POST {OPENAI_PATH}) and the bodies differ",
                )
            ],
            compare_bodies(a, b, *_LABELS),
        )
    try:
        base_tree = scan(a)
    except JsonScanError as exc:
        return fail([Violation(clause, f"the baseline body is not JSON ({exc})")])
    try:
        on_tree = scan(b)
    except JsonScanError as exc:
        return fail(
            [Violation(clause, f"the memory-on body is not JSON ({exc})")],
            compare_bodies(a, b, *_LABELS),
        )
    if base_tree.kind != "object" or on_tree.kind != "object":
        return fail(
            [Violation(clause, "a request body is not a JSON object")],
            compare_bodies(a, b, *_LABELS),
        )
    slot = (
        _locate_anthropic(a, base_tree, b, on_tree)
        if provider == "anthropic"
        else _locate_openai(a, base_tree, b, on_tree)
    )
    if isinstance(slot, Violation):
        return fail([slot], compare_bodies(a, b, *_LABELS))
    if isinstance(slot, _NoBlock):
        return fail(
            [
                Violation(
                    INJECT_NO_BLOCK,
                    f"no advisory block ({slot.where} is exactly the baseline's), yet the "
                    "request differs from the baseline",
                )
            ],
            compare_bodies(a, b, *_LABELS),
        )

    violations: list[Violation] = []
    outside: BodyComparison | None = None
    block: str | None = None
    location = slot.how
    if isinstance(slot, _Fold):
        restored = b[: slot.on.start] + a[slot.base.start : slot.base.end] + b[slot.on.end :]
        if restored != a:
            outside = compare_bodies(a, restored, *_RESTORED)
            violations.append(
                Violation(
                    slot.clause,
                    f"bytes outside {slot.where} differ from the baseline "
                    f"(first at byte {outside.offset} with the system value restored)",
                )
            )
        value = slot.on.text
        agent = slot.base.text if slot.base.kind == "string" else None
        on_raw = b[slot.on.start + 1 : slot.on.end - 1]
        if agent and value == agent:
            violations.append(
                Violation(
                    INJECT_NO_BLOCK,
                    f"{slot.where} carries no block, yet its bytes differ from the baseline's "
                    "(the same text, encoded differently)",
                )
            )
        elif agent:
            tail = PART_JOIN + agent
            base_raw = a[slot.base.start + 1 : slot.base.end - 1]
            if not value.endswith(tail):
                violations.append(
                    Violation(
                        INJECT_FOLD,
                        f"{slot.where} does not end with the baseline's system text after "
                        f"{PART_JOIN!r}: the agent's own prompt must follow the block unchanged",
                    )
                )
                block = _fence_block(value)
            else:
                block = value[: len(value) - len(tail)]
                head_raw = on_raw[: len(on_raw) - len(base_raw)]
                if not on_raw.endswith(base_raw) or _decode_raw(head_raw) != block + PART_JOIN:
                    violations.append(
                        Violation(
                            INJECT_FOLD,
                            f"the baseline's system text inside {slot.where} is re-encoded: "
                            "its raw bytes must follow the block exactly as the baseline sent them",
                        )
                    )
        else:
            block = value
        if block is not None and not block:
            violations.append(
                Violation(
                    INJECT_NO_BLOCK,
                    f"{slot.where} differs from the baseline but carries no block",
                )
            )
            block = None
        if block is not None and fold_memory_block(agent, block) != value and not violations:
            violations.append(  # pragma: no cover - implied by the checks above
                Violation(INJECT_FOLD, f"{slot.where} is not fold(system, block)")
            )
    else:
        candidates = [b[:s] + put + b[e:] for s, e, put in slot.removals]
        if a not in candidates:
            outside = compare_bodies(a, candidates[0], *_RESTORED)
            violations.append(
                Violation(
                    slot.clause,
                    f"with {slot.where} removed the request is not the baseline "
                    f"(first difference at byte {outside.offset})",
                )
            )
        got = _shape_block(slot.node, slot.shape, slot.clause)
        if isinstance(got, Violation):
            violations.append(got)
        else:
            block = got
            if not block:
                violations.append(
                    Violation(INJECT_NO_BLOCK, f"{slot.where} is empty: an empty block is no block")
                )
                block = None
    info: BlockInfo | None = None
    if block is not None:
        info, block_violations = check_block(block, location, limit, max_tokens)
        violations.extend(block_violations)
    if violations:
        return fail(violations, outside, info)
    assert info is not None
    n = len(info.bullets)
    return PairVerdict(
        index,
        provider,
        True,
        "block",
        f"one block of {n} bullet{'s' if n != 1 else ''} ({info.tokens} estimated tokens) "
        f"{location}; everything else byte-identical to the baseline",
        (),
        info,
        None,
    )


def _fence_block(value: str) -> str | None:
    """The leading block of a system text, up to its first closing fence line."""
    lines = value.split("\n")
    for i, line in enumerate(lines):
        if i >= 1 and line == FENCE_CLOSE:
            return "\n".join(lines[: i + 1])
    return None


def check_memory_on(
    baseline: Capture,
    with_memory: Capture,
    limit: int = DEFAULT_LIMIT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    require_block: bool = False,
) -> MemoryOnResult:
    """Check every memory-on request against its baseline, pairing them by arrival order."""
    pairs = tuple(
        check_pair(i, ra, rb, limit, max_tokens, require_block)
        for i, (ra, rb) in enumerate(zip(baseline.requests, with_memory.requests, strict=False))
    )
    problems: list[Violation] = []
    if len(baseline.requests) != len(with_memory.requests):
        problems.append(
            Violation(
                INJECT_ANTHROPIC,
                f"request counts differ: baseline {len(baseline.requests)}, memory-on "
                f"{len(with_memory.requests)} (memory must not add or drop model calls)",
            )
        )
    return MemoryOnResult(
        count_baseline=len(baseline.requests),
        count_memory=len(with_memory.requests),
        limit=limit,
        max_tokens=max_tokens,
        require_block=require_block,
        pairs=pairs,
        problems=tuple(problems),
    )


def describe_pair(p: PairVerdict) -> list[str]:
    """Human lines for one pair."""
    head = f"request {p.index}"
    if p.provider:
        head += f" ({p.provider})"
    if p.ok:
        return [f"{head}: PASS — {p.summary}"]
    lines = [f"{head}: FAIL"]
    lines.extend(f"    {v}" for v in p.violations)
    if p.outside is not None and not p.outside.identical:
        lines.extend("    " + line for line in describe_body(p.outside))
        if p.outside.label_b.endswith("*"):
            lines.append(
                "    (memory-on* = the memory-on request with its system part put back to the "
                "baseline's)"
            )
    return lines
