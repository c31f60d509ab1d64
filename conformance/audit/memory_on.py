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
fields are sanitized fields — something ``sanitize_memory_field`` can output (MEM-CONTAIN.1,
MEM-CONTAIN.2, MEM-CONTAIN.3)
— the scope list of the prefix (MEM-READ.3, MEM-SCOPE.1/3/4), and the budget: at most
``limit`` bullets, and the bullets' estimated tokens within ``max_tokens`` unless there is
exactly one (MEM-BUDGET.1, MEM-BUDGET.2, MEM-BUDGET.3).  A request with memory on that equals its
baseline byte for byte
carries no block, which the spec allows (nothing matched, MEM-INJECT.2).

The parts: ``memory_on`` (one pair, two whole captures, the verdicts), ``memory_on_slot``
(locating the system slot) and ``memory_on_block`` (checking the block; the clause ids).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from conformance.audit.capture import ANTHROPIC_PATH, OPENAI_PATH, Capture, CapturedRequest
from conformance.audit.diff import BodyComparison, compare_bodies, describe_body
from conformance.audit.jsonscan import JsonScanError, scan
from conformance.audit.memory_on_block import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_TOKENS,
    FENCE_CLOSE,
    INJECT_ANTHROPIC,
    INJECT_FOLD,
    INJECT_NO_BLOCK,
    INJECT_ONLY,
    INJECT_OPENAI,
    LABELS,
    PART_JOIN,
    RESTORED,
    BlockInfo,
    Violation,
    check_block,
    field_problems,
    is_sanitized_field,
)
from conformance.audit.memory_on_slot import (
    Fold,
    Insert,
    NoBlock,
    locate_anthropic,
    locate_openai,
    shape_block,
)
from conformance.audit.provenance import (
    Read,
    check_provenance,
    epoch_ms,
    reads_by_window,
    reads_for,
)
from conformance.audit.store_proxy import StoreRecord
from conformance.sources import DEFAULT_LEVEL, level_fails, only_reference
from reference.memory.injection import fold_memory_block

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_TOKENS",
    "BlockInfo",
    "MemoryOnResult",
    "PairVerdict",
    "Violation",
    "check_block",
    "check_memory_on",
    "check_pair",
    "describe_pair",
    "field_problems",
    "is_sanitized_field",
]


NOT_CHECKED = (
    "not checked: no store record was given (--store), so only the block's form was judged, "
    "not where its bullets came from"
)


@dataclass(frozen=True)
class PairVerdict:
    """The verdict for request ``index``: ``status`` is ``block``, ``no-block``, ``deviation``
    (a block the seed allows in a shape only the reference rules out: ``violations`` name
    reference clauses alone; ``ok`` unless ``--level reference``) or ``fail``."""

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
    level: str = DEFAULT_LEVEL
    provenance: str = NOT_CHECKED

    @property
    def ok(self) -> bool:
        """Same request count, every pair passes."""
        return not self.problems and all(p.ok for p in self.pairs)


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
    level: str = DEFAULT_LEVEL,
) -> PairVerdict:
    """Check one memory-on request against its baseline (see the module docstring); a shape
    only a reference clause rules out is a deviation, failing only at ``level`` reference."""
    provider = {ANTHROPIC_PATH: "anthropic", OPENAI_PATH: "openai"}.get(
        baseline.path.split("?", 1)[0]
    )
    slot = _slot(index, provider, baseline, with_memory, require_block)
    if isinstance(slot, PairVerdict):
        return slot
    a, b = baseline.body, with_memory.body
    if isinstance(slot, Fold):
        violations, outside, block = _folded_block(a, b, slot)
    else:
        violations, outside, block = _inserted_block(a, b, slot)
    info: BlockInfo | None = None
    if block is not None:
        info, block_violations = check_block(block, slot.how, limit, max_tokens)
        violations.extend(block_violations)
    if violations and not (info is not None and only_reference(v.clause for v in violations)):
        return _fail(index, provider, violations, outside, info)
    assert info is not None
    n = len(info.bullets)
    summary = (
        f"one block of {n} bullet{'s' if n != 1 else ''} ({info.tokens} estimated tokens) "
        f"{slot.how}; everything else byte-identical to the baseline"
    )
    if violations:
        return PairVerdict(
            index,
            provider,
            not level_fails(level, deviation=True),
            "deviation",
            f"{summary}; deviates: {violations[0]}",
            tuple(violations),
            info,
            None,
        )
    return PairVerdict(index, provider, True, "block", summary, (), info, None)


def _fail(
    index: int,
    provider: str | None,
    violations: Sequence[Violation],
    outside: BodyComparison | None = None,
    block: BlockInfo | None = None,
) -> PairVerdict:
    """A failed pair, its first violation as the reason."""
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


def _slot(
    index: int,
    provider: str | None,
    baseline: CapturedRequest,
    with_memory: CapturedRequest,
    require_block: bool,
) -> PairVerdict | Fold | Insert:
    """Where the memory-on request carries its block, or the pair's verdict when that is
    already decided: another endpoint, identical bodies, an unknown provider, a body that is
    not a JSON object, no slot or no block."""
    if baseline.method != with_memory.method or baseline.path != with_memory.path:
        return _fail(
            index,
            provider,
            [
                Violation(
                    INJECT_ONLY,
                    f"a different endpoint: baseline {baseline.label}, "
                    f"memory-on {with_memory.label}",
                )
            ],
        )
    a, b = baseline.body, with_memory.body
    if a == b:
        if require_block:
            return _fail(
                index,
                provider,
                [Violation(INJECT_NO_BLOCK, "no advisory block (identical to the baseline)")],
            )
        return PairVerdict(
            index, provider, True, "no-block", "identical to the baseline (no block injected)"
        )
    if provider is None:
        return _fail(
            index,
            provider,
            [
                Violation(
                    INJECT_ANTHROPIC,
                    f"{baseline.label} is not a provider endpoint this audit understands "
                    f"(POST {ANTHROPIC_PATH}, POST {OPENAI_PATH}) and the bodies differ",
                )
            ],
            compare_bodies(a, b, *LABELS),
        )
    return _located(index, provider, a, b)


def _located(index: int, provider: str, a: bytes, b: bytes) -> PairVerdict | Fold | Insert:
    """Where the memory-on body ``b`` carries its block against the baseline body ``a``, or
    the failed verdict when either is not a JSON object, or no slot or no block is found."""
    clause = INJECT_ONLY
    try:
        base_tree = scan(a)
    except JsonScanError as exc:
        return _fail(index, provider, [Violation(clause, f"the baseline body is not JSON ({exc})")])
    try:
        on_tree = scan(b)
    except JsonScanError as exc:
        return _fail(
            index,
            provider,
            [Violation(clause, f"the memory-on body is not JSON ({exc})")],
            compare_bodies(a, b, *LABELS),
        )
    if base_tree.kind != "object" or on_tree.kind != "object":
        return _fail(
            index,
            provider,
            [Violation(clause, "a request body is not a JSON object")],
            compare_bodies(a, b, *LABELS),
        )
    slot = (
        locate_anthropic(a, base_tree, b, on_tree)
        if provider == "anthropic"
        else locate_openai(a, base_tree, b, on_tree)
    )
    if isinstance(slot, Violation):
        return _fail(index, provider, [slot], compare_bodies(a, b, *LABELS))
    if isinstance(slot, NoBlock):
        return _fail(
            index,
            provider,
            [
                Violation(
                    INJECT_NO_BLOCK,
                    f"no advisory block ({slot.where} is exactly the baseline's), yet the "
                    "request differs from the baseline",
                )
            ],
            compare_bodies(a, b, *LABELS),
        )
    return slot


def _folded_block(
    a: bytes, b: bytes, slot: Fold
) -> tuple[list[Violation], BodyComparison | None, str | None]:
    """A block folded into a system string (``slot``): what is wrong with the bytes around
    it, where the request first differs outside it, and the block (``None``: none)."""
    violations: list[Violation] = []
    outside: BodyComparison | None = None
    block: str | None = None
    restored = b[: slot.on.start] + a[slot.base.start : slot.base.end] + b[slot.on.end :]
    if restored != a:
        outside = compare_bodies(a, restored, *RESTORED)
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
        block = _block_before_agent(a, slot, value, agent, on_raw, violations)
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
    return violations, outside, block


def _block_before_agent(
    a: bytes, slot: Fold, value: str, agent: str, on_raw: bytes, violations: list[Violation]
) -> str | None:
    """The block ahead of the agent's own system text ``agent`` in the folded ``value``; a
    text that does not end with it unchanged, or whose bytes are re-encoded, is noted in
    ``violations``."""
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
        return _fence_block(value)
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
    return block


def _inserted_block(
    a: bytes, b: bytes, slot: Insert
) -> tuple[list[Violation], BodyComparison | None, str | None]:
    """A block inserted as a value of its own (``slot``): whether removing it gives the
    baseline, where the request first differs if not, and the block (``None``: none)."""
    violations: list[Violation] = []
    outside: BodyComparison | None = None
    block: str | None = None
    candidates = [b[:s] + put + b[e:] for s, e, put in slot.removals]
    if a not in candidates:
        outside = compare_bodies(a, candidates[0], *RESTORED)
        violations.append(
            Violation(
                slot.clause,
                f"with {slot.where} removed the request is not the baseline "
                f"(first difference at byte {outside.offset})",
            )
        )
    got, problems = shape_block(slot.node, slot.shape, slot.clause)
    violations.extend(problems)
    if slot.deviation:
        violations.append(Violation(INJECT_OPENAI, slot.deviation))
    if got is not None:
        block = got
        if not block:
            violations.append(
                Violation(INJECT_NO_BLOCK, f"{slot.where} is empty: an empty block is no block")
            )
            block = None
    return violations, outside, block


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
    level: str = DEFAULT_LEVEL,
    store: StoreRecord | None = None,
) -> MemoryOnResult:
    """Check every memory-on request against its baseline, pairing them by arrival order;
    with ``store`` (the capture's store record) also where every bullet came from."""
    pairs = tuple(
        check_pair(i, ra, rb, limit, max_tokens, require_block, level)
        for i, (ra, rb) in enumerate(zip(baseline.requests, with_memory.requests, strict=False))
    )
    provenance = NOT_CHECKED
    if store is not None:
        windows = reads_by_window(store)
        pairs = tuple(
            _with_provenance(p, with_memory.requests[p.index], windows, limit, max_tokens)
            for p in pairs
        )
        n_reads = sum(len(r) for r in windows.values())
        provenance = (
            f"checked against {store.path} (sha256 {store.sha256[:16]}…): {len(store.calls)} "
            f"store call(s), {n_reads} read(s)"
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
        level=level,
        provenance=provenance,
    )


def _with_provenance(
    p: PairVerdict,
    sent: CapturedRequest,
    windows: dict[int, list[Read]],
    limit: int,
    max_tokens: int,
) -> PairVerdict:
    """``p`` with what the store record says of its block added (a failure when any)."""
    if p.status == "fail" and p.block is None:
        return p
    reads = reads_for(p.index, windows)
    found = check_provenance(p.block, reads, epoch_ms(sent.received_at), limit, max_tokens)
    if not found:
        if p.ok and reads and p.block is not None:
            return replace(p, summary=p.summary + "; every bullet traced to the store's answers")
        if p.ok and reads:
            return replace(p, summary=p.summary + "; the turn's read returned no records")
        return p
    return _fail(p.index, p.provider, [*p.violations, *found], p.outside, p.block)


def describe_pair(p: PairVerdict) -> list[str]:
    """Human lines for one pair."""
    head = f"request {p.index}"
    if p.provider:
        head += f" ({p.provider})"
    if p.status == "deviation":
        lines = [f"{head}: {'DEVIATION' if p.ok else 'FAIL (deviation, --level reference)'}"]
        lines.append(f"    {p.summary.split('; deviates: ')[0]}")
        lines.extend(f"    {v}" for v in p.violations)
        return lines
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
