"""The memory model's *hints*: indexes shared by every state of the search (see
:class:`MemoryHints`), and the reading of the target ids a request names through a state's id
bijection."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence

from conformance.concurrent.memory.calls import UNSEEN_SUFFIX
from conformance.concurrent.memory.state import Draft, State
from reference.memory.engine import normalize_text
from reference.memory.records import ACTIVE, MemoryRecord
from reference.memory.scoring import tokenize
from reference.memory.store import record_id


class MemoryHints:
    """For a normalized text, a token and a text, every position where some state of the
    search placed such a record, and for a target id every position some state paired it
    with.  A hint is only a candidate (a lookup checks the state's record at that position),
    so hints shared by every state of the search replace per-state indexes: a step's cost
    does not grow with the scope's size.  :class:`~conformance.concurrent.memory.model.MemoryModel`
    extends it.
    """

    def __init__(self, scope_key: str) -> None:
        self.scope = scope_key
        self._prefix = record_id(scope_key, 0)[:-1]
        self._by_norm: dict[str, set[int]] = {}
        self._by_token: dict[str, set[int]] = {}
        self._by_text: dict[str, set[int]] = {}
        self._by_tid: dict[str, set[int]] = {}
        self._positions: dict[str, int] = {}  # model id -> position

    # -- hints --------------------------------------------------------------------------

    def place(self, p: int, r: MemoryRecord) -> None:
        self._by_norm.setdefault(norm_of(r.text), set()).add(p)
        self._by_text.setdefault(r.text, set()).add(p)
        for tok in tokens_of(r.text, r.keywords):
            self._by_token.setdefault(tok, set()).add(p)

    def position(self, mid: str, n: int) -> int | None:
        """The position of model id ``mid`` in a state of ``n`` records (``None``: no such)."""
        p = self._positions.get(mid)
        if p is None:
            tail = mid[len(self._prefix) :]
            if not mid.startswith(self._prefix) or not tail.isdigit() or tail.startswith("0"):
                return None
            p = int(tail) - 1
            if len(self._positions) < 1_000_000:
                self._positions[mid] = p
        return p if p < n else None

    def paired(self, state: State | Draft, t: str) -> int | None:
        """The position target id ``t`` is paired with in ``state`` (``None``: unpaired)."""
        for p in self._by_tid.get(t, ()):
            if p < state.n and state.tid(p) == t:
                return p
        return None

    def _pair(self, draft: Draft, p: int, t: str) -> None:
        self._by_tid.setdefault(t, set()).add(p)
        draft.pair(p, t)

    def _active_at(self, state: State | Draft, hint: Mapping[str, set[int]], key: str) -> list[int]:
        return sorted(p for p in hint.get(key, ()) if p < state.n and state.rec(p).status == ACTIVE)

    def matching(self, state: State | Draft, query: str) -> list[MemoryRecord]:
        """The active records some query token hits whole, in insertion order -- the only
        ones ranking or a filtered list can return (MEM-SCORE.4)."""
        q = set(tokenize(query))
        found: set[int] = set()
        for tok in q:
            found.update(self._by_token.get(tok, ()))
        out = []
        for p in sorted(found):
            if p < state.n:
                r = state.rec(p)
                if r.status == ACTIVE and q & tokens_of(r.text, r.keywords):
                    out.append(r)
        return out

    # -- ids --------------------------------------------------------------------------

    def _translations(
        self, state: State, target_ids: Sequence[str]
    ) -> list[tuple[dict[str, str], list[tuple[int, str]]]]:
        """Every way to read the target ids a request names as model ids (usually one), with
        the (position, target id) pairs each reading adds."""
        mapping: dict[str, str] = {}
        unknown = []
        for t in dict.fromkeys(target_ids):
            p = self.paired(state, t)
            if p is None:
                unknown.append(t)
            else:
                mapping[t] = record_id(self.scope, p + 1)
        if not unknown:
            return [(mapping, [])]
        # Only in a shrunk sub-history (a client sends ids it saw in answers, which are
        # linearized first): an unpaired id may name any unpaired record, or nothing.
        free: list[int] = []
        if not all(t.endswith(UNSEEN_SUFFIX) for t in unknown):
            free = [p for p in range(state.n) if state.tid(p) is None]
        out: list[tuple[dict[str, str], list[tuple[int, str]]]] = []
        choices = [[-1] if t.endswith(UNSEEN_SUFFIX) else [-1, *free] for t in unknown]
        for combo in itertools.product(*choices):
            real = [p for p in combo if p >= 0]
            if len(set(real)) != len(real):
                continue
            m = dict(mapping)
            new = []
            for t, p in zip(unknown, combo, strict=True):
                if p < 0:
                    m[t] = f"ghost:{t}"
                else:
                    m[t] = record_id(self.scope, p + 1)
                    new.append((p, t))
            out.append((m, new))
        return out


@functools.lru_cache(maxsize=65536)
def tokens_of(text: str, keywords: tuple[str, ...]) -> frozenset[str]:
    """``record_tokens`` of a record with this text and keywords (cached: records are values)."""
    out = set(tokenize(text))
    for kw in keywords:
        out.update(tokenize(kw))
    return frozenset(out)


@functools.lru_cache(maxsize=65536)
def norm_of(text: str) -> str:
    return normalize_text(text)
