"""Checking a recorded history and shrinking a counterexample.

:func:`check_events` turns recorded events into checker operations (one partition per scope;
scopes are independent) and runs the search with the protocol's model.

:func:`shrink` looks for the smallest non-linearizable sub-history of a failing partition.  It
only ever keeps a candidate the checker still calls *illegal*, so the result is always a real
counterexample.  Two moves, repeated to a fixpoint:

* **blur** an operation (one op at a time, latest first): make it *optional* — it may not
  have taken effect at all, and if it did, then within its interval; its answer unseen.
  Blurring only *weakens* the
  history, so if the blurred history is still illegal it is still a true counterexample — the
  op's answer was not needed to show the violation;
* **drop** a blurred operation when, besides, the rest is *closed*: every record text a kept
  answer shows is written by some kept write, every use count it shows can be reached by the
  kept writes and retrieves, and every id a kept determinate request names is shown by a kept
  answer.  Dropping an op that was already optional cannot make a legal history illegal
  (a linearization of the rest is one where the op never happened), and closure keeps the
  counterexample readable (it never shows a record whose write was dropped).

Dropping a *determinate* op outright would not be sound: a later answer may depend on its
effect (a dedup count), and the "violation" would be the dropped op's missing effect.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from conformance.concurrent.checker import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_STATES,
    Model,
    Op,
    PartitionResult,
    check_operations,
    partition_ops,
    paused_gc,
)
from conformance.concurrent.driver import Event
from conformance.concurrent.ledger import model as ledger_model
from conformance.concurrent.memory import model as memory_model


@dataclass(frozen=True)
class Protocol:
    """How a protocol's events become model calls, and the closed-world facts of a call."""

    name: str
    parse: Callable[[Event], Any]
    model_for: Callable[[str], Model]
    writes: Callable[[Any], list[str]]  # texts a call writes
    shows: Callable[[Any], list[tuple[str, str, int, bool]]]  # (text, id, uses, retrieved)
    names: Callable[[Any], list[str]]  # ids a request names
    may_use: Callable[[Any, str], bool]  # may this call bump the usage of a record with this text
    # (n, texts): the answer needs n of these texts (None: any n writes) written by *other*
    # kept calls that could have come first
    needs: Callable[[Any], list[tuple[int, list[str] | None]]]


def _mem_parse(e: Event) -> Any:
    return memory_model.parse_call(e.route, e.request, e.status, e.answer, e.determinate)


def _mem_shows(call: Any) -> list[tuple[str, str, int, bool]]:
    out = []
    for r in memory_model.shown_records(call):
        uses = r.get("useCount")
        n = uses if isinstance(uses, int) else 0
        # A last-use time is set by a retrieve only: count it as one use a retrieve must explain.
        key = f"{r.get('text')}\x00{r.get('sourceThreadKey')}"
        out.append((key, str(r.get("id")), n, "lastUsedAt" in r))
    return out


MEMORY = Protocol(
    "memory",
    _mem_parse,
    memory_model.make_model,
    memory_model.candidate_texts,
    _mem_shows,
    memory_model.sent_ids,
    memory_model.may_use,
    memory_model.needs_written,
)


def _ledger_writes(call: Any) -> list[str]:
    if call.method == "_test/consolidate":
        ops = call.params.get("operations")
        return [
            o["body"].strip()
            for o in ops if isinstance(ops, list)
            if isinstance(o, dict) and isinstance(o.get("body"), str)
        ]  # fmt: skip
    body = call.params.get("body")
    return [body.strip()] if call.method in _LEDGER_WRITERS and isinstance(body, str) else []


_LEDGER_WRITERS = ("memory/save_memory_record", "memory/supersede_memory_record")


def _ledger_shows(call: Any) -> list[tuple[str, str, int, bool]]:
    if not call.determinate or call.status != 200 or not isinstance(call.answer, dict):
        return []
    recs = call.answer.get("records") if "records" in call.answer else [call.answer]
    out = []
    for r in recs if isinstance(recs, list) else []:
        if isinstance(r, dict) and isinstance(r.get("body"), str) and r.get("status") == "active":
            out.append((r["body"], str(r.get("id")), 0, False))
    return out


def _ledger_names(call: Any) -> list[str]:
    ids = [call.params.get("recordId")]
    ops = call.params.get("operations")
    for o in ops if isinstance(ops, list) else []:
        if isinstance(o, dict) and isinstance(o.get("targets"), list):
            ids.extend(o["targets"])
    return [i for i in ids if isinstance(i, str) and not i.startswith("ffffffff")]


def _ledger_needs(call: Any) -> list[tuple[int, list[str] | None]]:
    """A budget refusal says how many records are held: that many saves must be kept."""
    if call.determinate and call.status == 409 and isinstance(call.answer, dict):
        err = call.answer.get("error")
        msg = err.get("message") if isinstance(err, dict) else None
        if isinstance(msg, str) and " holds " in msg:
            try:
                return [(int(msg.split(" holds ")[1].split()[0]), None)]
            except (ValueError, IndexError):
                return []
    return []


LEDGER = Protocol(
    "ledger",
    lambda e: ledger_model.parse_call(e.route, e.request, e.status, e.answer, e.determinate),
    ledger_model.make_model,
    _ledger_writes,
    _ledger_shows,
    _ledger_names,
    lambda _call, _text: False,
    _ledger_needs,
)


def to_ops(events: Sequence[Event], proto: Protocol) -> list[Op]:
    return [
        Op(e.id, e.client, e.invoke, e.complete, proto.parse(e), partition=e.scope) for e in events
    ]


def check_events(
    events: Sequence[Event],
    proto: Protocol,
    *,
    max_states: int = DEFAULT_MAX_STATES,
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> list[PartitionResult]:
    with paused_gc():  # see check_operations; one pause for every partition
        ops = to_ops(events, proto)
        return [
            check_operations(
                part,
                proto.model_for(key),
                partition=key,
                max_states=max_states,
                max_seconds=max_seconds,
            )
            for key, part in partition_ops(ops).items()
        ]


def _closed(ops: Sequence[Op], proto: Protocol) -> bool:
    # Keys: what a record is (memory: text NUL sourceThreadKey, so a record shown needs a
    # kept write by its own client); its text is the part before the NUL.
    written: dict[str, int] = {}
    written_text: dict[str, int] = {}
    shown_ids: set[str] = set()
    shown_uses: dict[str, int] = {}
    retrieved: set[str] = set()
    for op in ops:
        for key in proto.writes(op.payload):
            written[key] = written.get(key, 0) + 1
            written_text[_text(key)] = written_text.get(_text(key), 0) + 1
        if op.determinate:
            for text, rid, uses, was_retrieved in proto.shows(op.payload):
                shown_uses[text] = max(shown_uses.get(text, 0), uses)
                shown_ids.add(rid)
                if was_retrieved:
                    retrieved.add(text)
    if not shown_uses.keys() <= written.keys():
        return False
    # A shown use count must be reachable by the kept ops: every write of the text after the
    # first may dedup-bump it, every retrieve that can match it may bump it.
    for key, uses in shown_uses.items():
        text = _text(key)
        users = sum(1 for op in ops if proto.may_use(op.payload, text))
        if uses > written_text[text] - 1 + users or (key in retrieved and not users):
            return False
    # A determinate answer that depends on earlier writes (a dedup) keeps, for each, a write
    # that could have come first.
    for op in ops:
        if not op.determinate:
            continue
        for n, texts in proto.needs(op.payload):
            others: list[str] = []
            for o in ops:
                if o.id != op.id and op.ret is not None and o.call <= op.ret:  # could come first
                    others.extend(_text(k) for k in proto.writes(o.payload))
            enough = len(others) >= n if texts is None else len(set(texts) & set(others)) >= n
            if not enough:
                return False
    # Only a determinate request must name ids the kept answers show; a blurred one may name
    # anything (the model reads an id it cannot place as any unpaired record, or none).
    return all(
        rid in shown_ids or rid.endswith(memory_model.UNSEEN_SUFFIX)
        for op in ops
        if op.determinate
        for rid in proto.names(op.payload)
    )


def _text(key: str) -> str:
    return key.split("\x00", 1)[0]


def _blurred(op: Op, proto: Protocol) -> Op:
    """The op with its answer unseen: optional, and if it took effect, within its interval."""
    payload = op.payload
    if hasattr(payload, "determinate"):
        payload = replace(payload, determinate=False, status=None, answer=None)
    return replace(op, payload=payload, optional=op.ret is not None)


@dataclass
class Shrunk:
    ops: list[Op]
    result: PartitionResult
    checks: int
    seconds: float


def shrink(
    ops: Sequence[Op],
    proto: Protocol,
    partition: str,
    *,
    max_states: int = 20_000,
    max_seconds: float = 1.0,
    budget_s: float = 20.0,
    first: PartitionResult | None = None,
) -> Shrunk | None:
    """The smallest illegal sub-history found (``None`` if ``ops`` is not illegal).

    ``first``: the checker's result on ``ops`` when the caller already has it (it may have
    been found with a larger bound than the one each shrink step gets).
    """
    started = time.perf_counter()
    search = _ShrinkSearch(proto, partition, max_states, max_seconds, budget_s)
    current = list(ops)
    result = first if first is not None else search.illegal(current)
    if result is None:
        return None
    # 1. The shortest prefix (by invocation) that is illegal with everything later blurred.
    order = sorted(current, key=lambda o: (o.call, o.id))
    lo, hi = 1, len(order)
    while lo < hi and not search.out_of_time():
        mid = (lo + hi) // 2
        cand = [*order[:mid], *(_blurred(o, proto) for o in order[mid:])]
        if _closed(cand, proto) and (r := search.illegal(cand)) is not None:
            hi, current, result = mid, cand, r
        else:
            lo = mid + 1
    current = _prune(current, proto)
    # 2. Blur each determinate op whose answer is not needed (latest first), then prune.
    changed = True
    while changed and not search.out_of_time():
        changed = False
        for op in sorted(current, key=lambda o: -o.call):
            if search.out_of_time():
                break
            if not op.determinate or not any(o.id == op.id for o in current):
                continue
            cand = [_blurred(o, proto) if o.id == op.id else o for o in current]
            if _closed(cand, proto) and (r := search.illegal(cand)) is not None:
                current, result, changed = _prune(cand, proto), r, True
    return Shrunk(current, result, search.checks, time.perf_counter() - started)


class _ShrinkSearch:
    """The checks one :func:`shrink` makes, counted, and the CPU time it may spend (the budget
    is CPU time: load does not shrink it)."""

    def __init__(
        self,
        proto: Protocol,
        partition: str,
        max_states: int,
        max_seconds: float,
        budget_s: float,
    ) -> None:
        self.proto, self.partition = proto, partition
        self.max_states, self.max_seconds, self.budget_s = max_states, max_seconds, budget_s
        self.cpu_started = time.process_time()
        self.checks = 0

    def illegal(self, cand: Sequence[Op]) -> PartitionResult | None:
        """The checker's result on ``cand`` when it is illegal, else ``None``."""
        self.checks += 1
        r = check_operations(
            cand,
            self.proto.model_for(self.partition),
            partition=self.partition,
            max_states=self.max_states,
            max_seconds=self.max_seconds,
        )
        return r if r.verdict == "illegal" else None

    def out_of_time(self) -> bool:
        return time.process_time() - self.cpu_started > self.budget_s


def _prune(ops: list[Op], proto: Protocol) -> list[Op]:
    """Drop blurred ops, latest first, while the rest stays closed (no check needed: an
    illegal history stays illegal without an op that was optional anyway)."""
    kept = list(ops)
    for op in sorted(ops, key=lambda o: -o.call):
        if not op.determinate:
            cand = [o for o in kept if o.id != op.id]
            if cand and _closed(cand, proto):
                kept = cand
    return kept
