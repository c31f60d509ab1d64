"""``memspec audit memory-on``, the block itself: is the advisory block what the spec renders —
the exact prefix line, the fences, ``n + 3`` lines, each bullet's fields sanitized, the scope
list of the prefix, the budget (MEM-CONTAIN.*, MEM-READ.3, MEM-SCOPE.*, MEM-BUDGET.*).  The
clause ids and the block's fixed parts are defined here for the other parts of the audit."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference.memory.budget import estimate_tokens
from reference.memory.containment import (
    memory_prefix_line,
    render_memory_block,
    sanitize_memory_field,
    scope_resource,
)
from reference.memory.records import MemoryRecord

DEFAULT_LIMIT = 8
DEFAULT_MAX_TOKENS = 800

INJECT_FOLD = "MEM-INJECT.1"
INJECT_NO_BLOCK = "MEM-INJECT.2"
INJECT_ANTHROPIC = "MEM-INJECT.3"
INJECT_ONLY = INJECT_ANTHROPIC  # only the system prompt changes, whatever the provider
INJECT_OPENAI = "MEM-INJECT.4"  # reference: the message the block travels in (a deviation)
INJECT_LIST = "MEM-INJECT.5"  # reference: a list-form system prompt's two shapes
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
LABELS = ("baseline", "memory-on")
RESTORED = ("baseline", "memory-on*")
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
    resource = _prefix_line(lines[0], v)
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
    records = _bullet_records(bullets, v)
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


def _prefix_line(head: str, v: list[Violation]) -> str:
    """The resource the block's prefix line names (``""`` when it is not a prefix line); what
    is wrong with the line, or with the resource, is noted in ``v`` (MEM-CONTAIN.1)."""
    resource = ""
    if head.startswith(PREFIX_HEAD) and head.endswith(PREFIX_TAIL):
        resource = head[len(PREFIX_HEAD) : len(head) - len(PREFIX_TAIL)]
        if memory_prefix_line(resource) != head:  # pragma: no cover - same construction
            v.append(Violation(CONTAIN_FORM, f"prefix line is not exact: {head!r}"))
        v.extend(_resource_problems(resource))
        return resource
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
    return resource


def _bullet_records(bullets: list[str], v: list[Violation]) -> list[MemoryRecord]:
    """A stand-in record per well-formed bullet (for the reference renderer); a fence line
    among the bullets, a malformed bullet or a bad field is noted in ``v``."""
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
    return records


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
