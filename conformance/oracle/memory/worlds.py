"""The worlds the oracle keeps: a model state with the run's id bijection and time correspondence.

A world is one (model state, id bijection, time correspondence) triple that agrees with every
answer so far (see the package docstring).  This module holds the world itself, what the model
remembers about how each record was written, and the edits the oracle makes to a world's state
(an eviction pick other than the model's own) or to the set of worlds (merging equal ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from reference.memory.records import ACTIVE, EVICTED, MemoryRecord
from reference.memory.store import StoreState, parse_record_id


@dataclass(frozen=True)
class RecMeta:
    """What the model remembers about how a record was written (for the fields the spec leaves
    open).  ``ptr``: ``none`` (no supersedes sent), ``empty`` (``""`` sent), ``resolved``
    (superseded an active record), ``unresolved`` (named nothing live); ``sent`` is the
    target-space string the run sent."""

    kw_given: bool
    ptr: str = "none"
    sent: str | None = None


class TimeProblem(Exception):
    """A target time that contradicts the run's time correspondence (MEM-STORE.11)."""

    def __init__(self, message: str, clauses: tuple[str, ...]) -> None:
        super().__init__(message)
        self.clauses = clauses


@dataclass
class World:
    """One model state with the run's id bijection, time correspondence and record metadata."""

    state: StoreState
    m2t: dict[str, str] = field(default_factory=dict)
    t2m: dict[str, str] = field(default_factory=dict)
    times: dict[str, dict[int, int]] = field(default_factory=dict)  # scope -> model ms -> target ms
    meta: dict[str, RecMeta] = field(default_factory=dict)  # model id -> meta
    keywords_seen: dict[str, tuple[str, ...]] = field(default_factory=dict)  # target id -> kws
    #: the reference clauses whose other reading the store's answers showed (MEM-SCORE.7,
    #: MEM-WIRE.21): from then on this world judges by that reading, as the store answers
    departures: frozenset[str] = frozenset()
    #: how the answer that made the last departure differs from the reference's reading
    departed_why: str = ""

    def copy(self) -> World:
        return World(
            self.state,
            dict(self.m2t),
            dict(self.t2m),
            {scope: dict(m) for scope, m in self.times.items()},
            dict(self.meta),
            dict(self.keywords_seen),
            self.departures,
            self.departed_why,
        )

    def bind(self, model_id: str, target_id: str) -> None:
        self.m2t[model_id] = target_id
        self.t2m[target_id] = model_id

    def observe_time(self, scope: str, model_t: int, target_t: int, what: str) -> None:
        """Add one (model time, target time) pair of a scope; raise :class:`TimeProblem` if it is
        inconsistent.  Times are only ever compared within one scope (ranking, eviction and the
        clauses of MEM-STORE.11 never look across scopes), so each scope has its own map."""
        times = self.times.setdefault(scope, {})
        known = times.get(model_t)
        if known is not None:
            if known != target_t:
                raise TimeProblem(
                    f"{what} is {target_t}, but the same event was stamped {known} in an earlier"
                    " answer (one batch shares one creation time, one retrieve one last-use time,"
                    " and a record's times never change)",
                    ("MEM-STORE.11", "MEM-RECORD.3"),
                )
            return
        for m, t in times.items():
            if (m < model_t and t >= target_t) or (m > model_t and t <= target_t):
                raise TimeProblem(
                    f"{what} is {target_t}, out of event order with {t} stamped on an event"
                    f" {'before' if m < model_t else 'after'} it (the harness spaces mutating"
                    " steps 3 ms apart, so a store clock that runs forward stamps them in order)",
                    ("MEM-STORE.11",),
                )
        times[model_t] = target_t


# --------------------------------------------------------------------------- state edits


def changed_scopes(before: StoreState, after: StoreState) -> set[str]:
    """The scope keys whose records differ between two model states."""
    if after is before:
        return set()
    return {
        scope
        for scope in {*before.scopes, *after.scopes}
        if before.records(scope) != after.records(scope)
    }


def set_statuses(
    state: StoreState, scope: str, model_pick: frozenset[str], pick: frozenset[str]
) -> StoreState:
    """The state with eviction ``pick`` instead of the model's ``model_pick`` (MEM-CAP.2)."""
    recs = []
    for r in state.records(scope):
        if r.id in model_pick and r.id not in pick:
            r = replace(r, status=ACTIVE)
        elif r.id in pick and r.id not in model_pick:
            r = replace(r, status=EVICTED)
        recs.append(r)
    scopes = dict(state.scopes)
    scopes[scope] = tuple(recs)
    return StoreState(scopes=MappingProxyType(scopes))


def status_of(records: Sequence[MemoryRecord], rid: str) -> str | None:
    """The status of record ``rid`` among ``records`` (None: not there)."""
    for r in records:
        if r.id == rid:
            return r.status
    return None


def find(state: StoreState, model_id: str) -> MemoryRecord | None:
    """The model record ``model_id``, in whatever status (None: no such record)."""
    parsed = parse_record_id(model_id)
    if parsed is None:
        return None
    for r in state.records(parsed[0]):
        if r.id == model_id:
            return r
    return None


def dedupe_worlds(worlds: list[World]) -> list[World]:
    """The worlds with equal ones (same state, bijection and times) merged."""
    if len(worlds) <= 1:  # nothing to merge (the usual case): skip building the keys
        return worlds
    out: list[World] = []
    keys: set[Any] = set()
    for w in worlds:
        k = (
            _state_key(w.state),
            tuple(sorted(w.m2t.items())),
            tuple(sorted((k, tuple(sorted(v.items()))) for k, v in w.times.items())),
            w.departures,
        )
        if k not in keys:
            keys.add(k)
            out.append(w)
    return out


def least_departed(worlds: list[World]) -> list[World]:
    """The worlds departing from the fewest reference clauses (``World.departures``): the
    model's own reading whenever the answers allow it."""
    fewest = min(len(w.departures) for w in worlds)
    return [w for w in worlds if len(w.departures) == fewest]


def _state_key(state: StoreState) -> Any:
    return tuple(
        (scope, tuple((r.id, r.status, r.use_count, r.last_used_at) for r in recs))
        for scope, recs in sorted(state.scopes.items())
    )
