"""The memory model's state: one scope as persistent chunked vectors of records and paired
target ids with an incremental Zobrist hash (:class:`State`), and a state being changed by one
step (:class:`Draft`).  See :mod:`conformance.concurrent.memory.model`."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reference.memory.records import ACTIVE, MemoryRecord

if TYPE_CHECKING:
    from conformance.concurrent.memory.hints import MemoryHints

#: Records per chunk of a state's persistent vector (a step copies one chunk and the spine).
CHUNK = 64
#: A state remembers its active positions while it has at most this many: above the default
#: cap (500) and a batch, so that a scope at its cap evicts without scanning its records (the
#: tuple is shared by successors whose active set is unchanged, copied when it changes).
LIVE_MAX = 640
_MASK = (1 << 61) - 1
_M64 = (1 << 64) - 1


def _z(p: int, value: object) -> int:
    """The Zobrist term of ``value`` at position ``p`` (a state's hash is their sum).

    Python's tuple hash is no random function: changing one field of a record (its status,
    its use count) moves ``hash((p, record))`` by nearly the same amount whatever the record
    and the position, so plain sums collide -- every choice of which record an eviction takes,
    or a retrieve bumps, summed to one hash, and the search's memo sets degraded into long
    chains of equality checks.  The term is therefore the tuple hash put through the
    splitmix64 finaliser (a bijection that spreads every input bit over the output)."""
    x = hash((p, value)) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return (x ^ (x >> 31)) & _MASK


class State:
    """One scope as the model holds it: its records in insertion order (position ``p`` holds
    the model record ``mem:<scope>:<p+1>``) and, per position, the target id paired with it
    (``None``: not shown yet) -- the id bijection.

    Both are persistent vectors (a tuple of chunks of ``CHUNK``): a step copies the chunks it
    changes and the spine, never the whole scope, and states share the rest.  The hash is a
    Zobrist sum of (position, record) and (position, target id) terms kept incrementally;
    equality compares the vectors (chunks shared by two states compare by identity).
    ``active`` (the number of active records) is derived, kept for the cap and lists.
    """

    __slots__ = ("recs", "tids", "n", "active", "_hash", "live")

    def __init__(
        self,
        recs: tuple[tuple[MemoryRecord, ...], ...],
        tids: tuple[tuple[str | None, ...], ...],
        n: int,
        active: int,
        hash_: int,
    ) -> None:
        self.recs = recs
        self.tids = tids
        self.n = n
        self.active = active
        self._hash = hash_
        #: The active positions, sorted, while there are at most ``LIVE_MAX`` (derived, kept
        #: so that a capped scope's eviction and lists do not scan evicted records).
        self.live: tuple[int, ...] | None = None

    @classmethod
    def build(cls, records: Sequence[MemoryRecord], tids: Sequence[str | None] = ()) -> State:
        """A state from scratch (tests compare it with the incrementally built one)."""
        tid_list = list(tids) + [None] * (len(records) - len(tids))
        h = 0
        for p, r in enumerate(records):
            h += _z(p, r)
            if tid_list[p] is not None:
                h += _z(p, ("t", tid_list[p]))
        live = tuple(p for p, r in enumerate(records) if r.status == ACTIVE)
        state = cls(_chunked(records), _chunked(tid_list), len(records), len(live), h & _MASK)
        state.live = live if len(live) <= LIVE_MAX else None
        return state

    def rec(self, p: int) -> MemoryRecord:
        return self.recs[p >> 6][p & 63]

    def tid(self, p: int) -> str | None:
        return self.tids[p >> 6][p & 63]

    def records(self) -> tuple[MemoryRecord, ...]:
        return tuple(r for chunk in self.recs for r in chunk)

    @property
    def pairs(self) -> frozenset[tuple[int, str]]:
        """(position, target id) of every paired record (for tests and messages)."""
        return frozenset((p, t) for p in range(self.n) if (t := self.tid(p)) is not None)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self._hash == other._hash
            and self.n == other.n
            and self.recs == other.recs
            and self.tids == other.tids
        )


def _chunked(items: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK))


def _spliced(
    chunks: tuple[tuple[Any, ...], ...], n: int, changes: Mapping[int, Any], new_n: int
) -> tuple[tuple[Any, ...], ...]:
    """``chunks`` (``n`` items) with ``changes`` (position -> item) applied; positions
    ``n .. new_n - 1`` must all be in ``changes`` or be filled with ``None``."""
    if new_n == n + 1 and len(changes) <= 1 and (not changes or n in changes):
        # The common step: one item appended (an insert; the paired ids growing with it).
        value = changes.get(n) if changes else None
        if n & 63:
            return (*chunks[:-1], (*chunks[-1], value))
        return (*chunks, (value,))
    if new_n == n and len(changes) == 1:
        # One item replaced (a bump, a status change, a new pairing).
        ((p, value),) = changes.items()
        c, i = p >> 6, p & 63
        old = chunks[c]
        return (*chunks[:c], (*old[:i], value, *old[i + 1 :]), *chunks[c + 1 :])
    spine = list(chunks)
    touched: dict[int, list[Any]] = {}
    for p, value in changes.items():
        c = p >> 6
        chunk = touched.get(c)
        if chunk is None:
            chunk = touched[c] = list(spine[c]) if c < len(spine) else []
        i = p & 63
        if i >= len(chunk):
            chunk.extend([None] * (i + 1 - len(chunk)))
        chunk[i] = value
    if new_n > n and n & 63:  # the partial last chunk grows
        touched.setdefault(n >> 6, list(spine[n >> 6]))
    for c in range(len(spine), ((new_n - 1) >> 6) + 1 if new_n else 0):
        touched.setdefault(c, [])
    for c, chunk in sorted(touched.items()):
        want = min(CHUNK, new_n - (c << 6))
        if len(chunk) < want:
            chunk.extend([None] * (want - len(chunk)))
        if c < len(spine):
            spine[c] = tuple(chunk)
        else:
            spine.append(tuple(chunk))
    return tuple(spine)


class Draft:
    """A state being changed by one step: an overlay of changed and appended positions."""

    __slots__ = ("base", "model", "n", "recs", "tids", "active")

    def __init__(self, model: MemoryHints, base: State) -> None:
        self.model = model
        self.base = base
        self.n = base.n
        self.recs: dict[int, MemoryRecord] = {}
        self.tids: dict[int, str] = {}
        self.active = base.active

    def rec(self, p: int) -> MemoryRecord:
        r = self.recs.get(p)
        return self.base.rec(p) if r is None else r

    def tid(self, p: int) -> str | None:
        t = self.tids.get(p)
        return self.base.tid(p) if t is None and p < self.base.n else t

    def set(self, p: int, r: MemoryRecord) -> None:
        old = self.rec(p)
        self.active += (r.status == ACTIVE) - (old.status == ACTIVE)
        self.recs[p] = r

    def append(self, r: MemoryRecord) -> int:
        p = self.n
        self.n += 1
        self.recs[p] = r
        self.active += r.status == ACTIVE
        self.model.place(p, r)
        return p

    def pair(self, p: int, t: str) -> None:
        self.tids[p] = t

    def live(self) -> list[int]:
        """The active positions, sorted (from the base's, else by a scan)."""
        base = self.base.live
        if base is None:
            return [p for p in range(self.n) if self.rec(p).status == ACTIVE]
        return list(self._live_from(base))

    def _live_from(self, base: tuple[int, ...]) -> tuple[int, ...]:
        """``base`` (the base state's active positions) with this draft's changes: the same
        tuple when no record changed between active and not (a bump, a dedup), else a copy."""
        bn = self.base.n
        gone: set[int] = set()
        new: list[int] = []
        for p, r in self.recs.items():
            now = r.status == ACTIVE
            if p >= bn:
                if now:
                    new.append(p)
            elif now != (self.base.rec(p).status == ACTIVE):
                if now:
                    new.append(p)
                else:
                    gone.add(p)
        if not gone and not new:
            return base
        kept = list(base)
        for p in sorted(gone, reverse=True):
            del kept[bisect.bisect_left(kept, p)]
        if new and (not kept or min(new) < kept[-1]):
            return tuple(sorted([*kept, *new]))
        return tuple(kept + sorted(new))

    def done(self) -> State:
        base = self.base
        if not self.recs and not self.tids:
            return base
        h = base._hash
        for p, r in self.recs.items():
            if p < base.n:
                h -= _z(p, base.rec(p))
            h += _z(p, r)
        for p, t in self.tids.items():
            if p < base.n and (old := base.tid(p)) is not None:
                h -= _z(p, ("t", old))
            h += _z(p, ("t", t))
        recs = _spliced(base.recs, base.n, self.recs, self.n) if self.recs else base.recs
        if self.tids or self.n != base.n:
            tids = _spliced(base.tids, base.n, self.tids, self.n)
        else:
            tids = base.tids
        state = State(recs, tids, self.n, self.active, h & _MASK)
        if self.active <= LIVE_MAX:  # (a scan only when the scope shrinks to LIVE_MAX)
            if base.live is None:
                state.live = tuple(self.live())
            else:
                state.live = self._live_from(base.live) if self.recs else base.live
        return state
