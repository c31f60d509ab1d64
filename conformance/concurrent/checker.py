"""A linearizability checker: Wing & Gong's search with Lowe's memoization (as Porcupine does).

A *history* is a list of :class:`Op` — each an invocation time, a completion time (``None``:
indeterminate, the op may or may not have taken effect, so it completes at +∞) and an opaque
payload the *model* understands.  The history is linearizable when there is a total order of
(all determinate and any subset of the indeterminate) operations that respects real-time
precedence (``a.ret < b.call`` puts ``a`` first; equal times count as overlapping) and under
which the sequential model admits every recorded answer.

The search (per partition; scopes are independent, see :func:`check_partitions`):

* calls and returns are laid out in one list ordered by time (calls first on equal times);
* walking the list, a call may be *linearized* now if the model admits its answer from the
  current state — the model may offer several successor states (its declared nondeterminism:
  which ids map to which, which tied records a retrieve returned, …); each is a branch;
* reaching a return whose call is not yet linearized means the current prefix is wrong:
  backtrack to the last choice and try its next alternative, or skip that call for now;
* Lowe's memoization: a configuration is the set of linearized operations (a bitmask) and
  the model state; one already explored is never explored again (this is what makes the
  search fast: without it the worst case is factorial, with it the work is bounded by the
  number of distinct configurations);
* the search is bounded (configurations visited and CPU time): exceeding the bound yields
  ``unknown`` for that partition, never a verdict;
* an *optional* op (``Op.optional``) may also be linearized as "never took effect";
* a model that had to cut a step's successors (too many allowed answers to enumerate) sets
  ``model.incomplete``: the search then never reports ``illegal`` (only ``unknown``).

The model is duck-typed: ``init() -> state`` and ``step(state, payload) -> list[state]``
(empty: the answer is not admitted from ``state``).  States must be hashable.  For an
indeterminate op ``step`` must return the states of every way it could have taken effect.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Verdict = Literal["ok", "illegal", "unknown"]

DEFAULT_MAX_STATES = 200_000
DEFAULT_MAX_SECONDS = 10.0
#: Configurations between two collections of the young generation while the collector is
#: paused (see ``check_operations``).
_YOUNG_EVERY = 20_000


@dataclass(frozen=True)
class Op:
    """One operation of a history (payload: whatever the model's ``step`` reads)."""

    id: int
    client: int
    call: float
    ret: float | None  # None: indeterminate (completes at +inf, may never have happened)
    payload: Any
    partition: str = ""
    #: The op may not have taken effect at all, but if it did, then within [call, ret].  The
    #: shrinker marks ops whose answers a counterexample does not need this way (a weakening
    #: of the history, cheap for the search because the op keeps its completion time).
    optional: bool = False

    @property
    def determinate(self) -> bool:
        """Completed with an answer the history holds the store to."""
        return self.ret is not None and not self.optional


class Model(Protocol):
    def init(self) -> Hashable: ...

    def step(self, state: Any, payload: Any) -> Sequence[Hashable]: ...


@dataclass
class PartitionResult:
    partition: str
    verdict: Verdict
    ops: int
    states: int  # configurations explored
    seconds: float
    linearization: list[int] = field(default_factory=list)  # op ids, when ok
    longest_prefix: list[int] = field(default_factory=list)  # op ids, when illegal
    blocked: list[int] = field(default_factory=list)  # ops that could not come next, illegal
    reason: str = ""


class _Entry:
    __slots__ = ("op", "is_call", "match", "prev", "next", "index")

    def __init__(self, op: Op, is_call: bool, index: int) -> None:
        self.op = op
        self.is_call = is_call
        self.match: _Entry | None = None
        self.prev: _Entry | None = None
        self.next: _Entry | None = None
        self.index = index  # bit of the op in the linearized set


def _build(ops: Sequence[Op]) -> tuple[_Entry, int]:
    events: list[tuple[float, int, int, _Entry]] = []
    for i, op in enumerate(ops):
        call = _Entry(op, True, i)
        events.append((op.call, 0, i, call))
        if op.ret is not None:
            if op.ret < op.call:
                raise ValueError(f"operation {op.id} completes before it is invoked")
            ret = _Entry(op, False, i)
            call.match = ret
            events.append((op.ret, 1, i, ret))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    head = _Entry(Op(-1, -1, 0.0, 0.0, None), True, -1)
    prev = head
    for *_, e in events:
        prev.next = e
        e.prev = prev
        prev = e
    determinate = sum(1 for op in ops if op.ret is not None)
    return head, determinate


def _lift(e: _Entry) -> None:
    assert e.prev is not None
    e.prev.next = e.next
    if e.next is not None:
        e.next.prev = e.prev
    m = e.match
    if m is not None:
        assert m.prev is not None
        m.prev.next = m.next
        if m.next is not None:
            m.next.prev = m.prev


def _unlift(e: _Entry) -> None:
    m = e.match
    if m is not None:
        assert m.prev is not None
        m.prev.next = m
        if m.next is not None:
            m.next.prev = m
    assert e.prev is not None
    e.prev.next = e
    if e.next is not None:
        e.next.prev = e


def check_operations(
    ops: Sequence[Op],
    model: Model,
    *,
    partition: str = "",
    max_states: int = DEFAULT_MAX_STATES,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    memo: bool = True,
) -> PartitionResult:
    """Is this one partition's history linearizable with respect to ``model``?

    ``memo=False`` switches Lowe's memoization off (tests compare the two: same verdicts).

    Python's cyclic garbage collector is paused during the search (and restored after): the
    search allocates many long-lived objects (states, memo entries), each allocation burst
    triggers a collection that walks every live object -- the whole recorded history
    included -- while what the search drops is almost all freed by reference counting.  On
    a 10k-operation history the collections were a third of the time.  The few cycles the
    model makes (a judge's recursive closure per retrieve answer) are collected with the
    young generation every ``_YOUNG_EVERY`` configurations, so a long search does not pile
    them up.
    """
    with paused_gc():
        return _search(ops, model, partition, max_states, max_seconds, memo)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (restored after, also on error)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _search(  # long: Wing & Gong's search loop, its state kept in locals for speed
    ops: Sequence[Op],
    model: Model,
    partition: str,
    max_states: int,
    max_seconds: float,
    memo: bool,
) -> PartitionResult:
    started = time.perf_counter()
    # The time bound is CPU time of the process: a loaded machine slows the search down but
    # does not turn more of its verdicts into "unknown".
    deadline = time.process_time() + max_seconds
    head, remaining = _build(ops)
    state: Hashable = model.init()
    bits = 0
    cache: set[tuple[int, Hashable]] = set()
    # stack frames: (call entry, state before, successors, index of the chosen successor)
    stack: list[tuple[_Entry, Hashable, Sequence[Hashable], int]] = []
    # The deepest linearized prefix seen: a cons list (op id, parent) per stack frame, so
    # remembering it is O(1) per push.
    chain: list[Any] = []  # per frame: its cons cell
    best: Any = None
    best_len = 0
    blocked: set[int] = set()
    explored = 0
    # With the collector paused, reference cycles the model makes (a judge's recursive
    # closure per answer) would pile up: collect the young generation -- what the search
    # allocated since the last time, never the whole heap -- every so many configurations.
    next_young_collection = _YOUNG_EVERY
    entry = head.next

    def result(verdict: Verdict, reason: str = "") -> PartitionResult:
        return PartitionResult(
            partition,
            verdict,
            len(ops),
            explored,
            time.perf_counter() - started,
            linearization=[f[0].op.id for f in stack] if verdict == "ok" else [],
            longest_prefix=_unchain(best) if verdict == "illegal" else [],
            blocked=sorted(blocked) if verdict == "illegal" else [],
            reason=reason,
        )

    def choose(e: _Entry, before: Hashable, succ: Sequence[Hashable], start: int) -> bool:
        nonlocal state, bits, remaining, best, best_len, blocked
        new_bits = bits | (1 << e.index)
        for k in range(start, len(succ)):
            key = (new_bits, succ[k])
            if memo:
                if key in cache:
                    continue
                cache.add(key)
            stack.append((e, before, succ, k))
            chain.append((e.op.id, chain[-1] if chain else None))
            state = succ[k]
            bits = new_bits
            if e.match is not None:
                remaining -= 1
            _lift(e)
            if len(stack) > best_len:
                best, best_len = chain[-1], len(stack)
                blocked = set()
            return True
        return False

    while True:
        if remaining == 0:
            return result("ok")
        if explored >= max_states:
            return result("unknown", f"search bound reached ({max_states} configurations)")
        if explored >= next_young_collection:
            next_young_collection += _YOUNG_EVERY
            if not gc.isenabled():
                gc.collect(0)
        if explored & 255 == 0 and time.process_time() > deadline:
            return result("unknown", f"time bound reached ({max_seconds:g} s of CPU)")
        if entry is None:  # pragma: no cover - a return entry always precedes the end
            return result("ok")
        if entry.is_call:
            explored += 1
            succ = model.step(state, entry.op.payload)
            if entry.op.optional and state not in succ:
                succ = [*succ, state]  # ... or it never took effect
            if succ and choose(entry, state, succ, 0):
                entry = head.next
                continue
            if not succ and len(stack) == best_len:
                blocked.add(entry.op.id)
            entry = entry.next
            continue
        # A return whose call is not linearized: the prefix so far cannot be extended.
        if len(stack) == best_len:
            blocked.add(entry.op.id)
        while True:
            if not stack:
                if getattr(model, "incomplete", False):
                    # The model enumerated only part of some step's allowed successors: the
                    # missing ones might explain the history.
                    return result("unknown", "a step's allowed answers were cut (model bound)")
                return result("illegal", "no order of the operations admits every answer")
            e, before, succ, k = stack.pop()
            chain.pop()
            state = before
            bits &= ~(1 << e.index)
            if e.match is not None:
                remaining += 1
            _unlift(e)
            if choose(e, before, succ, k + 1):
                entry = head.next
                break
            entry = e.next
            break


def _unchain(cell: Any) -> list[int]:
    out: list[int] = []
    while cell is not None:
        out.append(cell[0])
        cell = cell[1]
    return out[::-1]


def partition_ops(ops: Iterable[Op]) -> dict[str, list[Op]]:
    """The history split by partition key (scopes are independent), in first-seen order."""
    out: dict[str, list[Op]] = {}
    for op in ops:
        out.setdefault(op.partition, []).append(op)
    return out


def check_partitions(
    ops: Iterable[Op],
    model_for: Callable[[str], Model],
    *,
    max_states: int = DEFAULT_MAX_STATES,
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> list[PartitionResult]:
    """Check every partition on its own (the bound applies per partition)."""
    return [
        check_operations(
            part,
            model_for(key),
            partition=key,
            max_states=max_states,
            max_seconds=max_seconds,
        )
        for key, part in partition_ops(ops).items()
    ]


def overall(results: Sequence[PartitionResult]) -> Verdict:
    """``illegal`` if any partition is, else ``unknown`` if any is, else ``ok``."""
    verdicts = {r.verdict for r in results}
    if "illegal" in verdicts:
        return "illegal"
    if "unknown" in verdicts:
        return "unknown"
    return "ok"
