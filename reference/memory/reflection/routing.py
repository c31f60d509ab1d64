"""Where each surviving candidate is written, and the write gate's one line (MEM-ROUTE).

Its audience's scope when the run has it, a correction to its target's scope, and the write gate
that narrows org writes from non-public origins (MEM-ROUTE.1, MEM-ROUTE.2, MEM-ROUTE.3, MEM-ROUTE.4,
MEM-ROUTE.5, MEM-ROUTE.6, MEM-ROUTE.7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from reference.memory.records import MemoryCandidate
from reference.memory.reflection.reply import ReflectionCandidate, ReflectionResult
from reference.memory.scopes import SCOPE_ORDER

OriginToken = Literal["public", "machine", "private", "dm", "unknown", "unstamped"]
_DM_VALUES: Final = frozenset({"dm", "group_dm", "mpim", "im"})


def normalize_origin(visibility: str | None) -> str:
    """The origin channel's visibility as one fixed token (MEM-ROUTE.5).

    ``public``, ``machine`` and ``private`` as given; ``dm`` for a direct or group direct
    message (``dm``, ``group_dm``, ``mpim``, ``im``); ``unstamped`` when the run carries no
    stamp; ``unknown`` for any other value.
    """
    if visibility is None or visibility == "":
        return "unstamped"
    if visibility in ("public", "machine", "private"):
        return visibility
    if visibility in _DM_VALUES:
        return "dm"
    return "unknown"


@dataclass(frozen=True)
class RunScopes:
    """The scope keys one run has: always the org's, the others when the run has that input."""

    org: str
    user: str | None = None
    repo: str | None = None
    channel: str | None = None

    def of_kind(self, kind: str) -> str | None:
        """The run's scope key of ``kind`` (org/repo/channel/user), or ``None``."""
        return {"org": self.org, "user": self.user, "repo": self.repo, "channel": self.channel}.get(
            kind
        )

    def keys(self) -> tuple[str, ...]:
        """The run's scope keys in org, repo, channel, user order."""
        out = (self.of_kind(k) for k in SCOPE_ORDER)
        return tuple(k for k in out if k is not None)


RouteReason = Literal[
    "audience", "fallback_org", "supersedes", "narrowed_user", "narrowed_channel", "dropped"
]


@dataclass(frozen=True)
class RouteDecision:
    """Where one candidate went and why (MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5)."""

    index: int
    audience: str
    target: str | None
    reason: str
    supersedes_dropped: bool


@dataclass(frozen=True)
class ScopeWrite:
    """One ``store.write`` call: a scope and its candidates, audience tags stripped."""

    scope_key: str
    candidates: tuple[MemoryCandidate, ...]


@dataclass(frozen=True)
class RoutingPlan:
    """Every write of one reflection plus the gate's report line (MEM-ROUTE.1, MEM-ROUTE.2,
    MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5, MEM-ROUTE.6, MEM-ROUTE.7)."""

    writes: tuple[ScopeWrite, ...]
    decisions: tuple[RouteDecision, ...]
    memory_line: str | None


def _narrow(origin: str, scopes: RunScopes) -> tuple[str | None, str]:
    """Where the write gate narrows an org write from a non-public origin (MEM-ROUTE.5)."""
    order = ("user", "channel") if origin == "dm" else ("channel", "user")
    for kind in order:
        key = scopes.of_kind(kind)
        if key is not None:
            return key, f"narrowed_{kind}"
    return None, "dropped"


def route_candidates(
    result: ReflectionResult,
    scopes: RunScopes,
    shown_record_scopes: Mapping[str, str],
    origin_visibility: str | None,
) -> RoutingPlan:
    """Route every surviving candidate to the scope it is written to (MEM-ROUTE.1, MEM-ROUTE.2,
    MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5, MEM-ROUTE.6, MEM-ROUTE.7).

    1. A candidate whose ``supersedes`` names a shown record of one of the run's scopes goes
       to that record's scope, whatever its audience (the pointer is kept).  A pointer to a
       record the routing cannot place is removed and the candidate is routed by audience.
    2. Otherwise the audience picks the scope -- user, repo, channel -- when the run has it,
       and the org scope when it does not (or the audience is org).
    3. The write gate: an org write is allowed from a ``public`` or ``machine`` origin only.
       From a ``dm`` origin it is narrowed to the user's scope (else the channel's); from a
       ``private``, ``unknown`` or unstamped origin to the channel's (else the user's); never
       to repo and never widened.  A narrowed candidate loses its ``supersedes``.  With
       neither scope available the candidate is dropped -- and counted, never silently.
       User, repo and channel writes are never moved.
    4. The audience tag is stripped: each ``ScopeWrite`` holds plain ``MemoryCandidate``s, one
       per target scope in org, repo, channel, user order, candidates in their original order.
       Nothing durable means no writes at all.

    ``memory_line`` is ``None`` when the gate changed nothing, else the one ``[memory]`` line
    (``gate_line``): counts and fixed reason tokens, never a candidate's text.
    """
    origin = normalize_origin(origin_visibility)
    run_keys = set(scopes.keys())
    decisions: list[RouteDecision] = []
    routed: list[tuple[str, MemoryCandidate]] = []
    for i, rc in enumerate(result.candidates):
        decision, cand = _route_one(i, rc, scopes, run_keys, shown_record_scopes, origin)
        decisions.append(decision)
        if decision.target is not None:
            routed.append((decision.target, cand))
    writes: list[ScopeWrite] = []
    for key in scopes.keys():
        batch = tuple(c for t, c in routed if t == key)
        if batch:
            writes.append(ScopeWrite(key, batch))
    return RoutingPlan(tuple(writes), tuple(decisions), gate_line(origin, decisions))


def route_decision(
    audience: str,
    supersedes_scope: str | None,
    scopes: RunScopes,
    origin_visibility: str | None,
) -> tuple[str | None, str, bool]:
    """Where one candidate is written: ``(target, reason, keeps_supersedes)`` (MEM-ROUTE.3,
    MEM-ROUTE.4, MEM-ROUTE.5, MEM-ROUTE.6).

    ``supersedes_scope`` is the scope of the shown record the candidate's kept ``supersedes``
    names, or ``None`` for a candidate without one.  A pointer into one of the run's scopes
    sends the candidate there whatever its audience; a pointer the routing cannot place is
    removed and the audience decides -- user, repo, channel when the run has that scope, else
    org.  The write gate then narrows an org target from any origin other than ``public`` and
    ``machine`` (:func:`normalize_origin`): a dm to the user's scope, else the channel's; the
    others to the channel's, else the user's; never to repo.  ``target`` is ``None`` when the
    gate finds neither (dropped).  ``keeps_supersedes`` is true only for a candidate whose
    pointer routed it and was not narrowed.  The pure decision :func:`route_candidates` takes
    for each candidate.
    """
    return _decide(audience, supersedes_scope, scopes, normalize_origin(origin_visibility))


def _decide(
    audience: str, supersedes_scope: str | None, scopes: RunScopes, origin: str
) -> tuple[str | None, str, bool]:
    """:func:`route_decision` for an origin already normalized (MEM-ROUTE.3, MEM-ROUTE.4,
    MEM-ROUTE.5)."""
    target: str | None
    keeps = supersedes_scope is not None and supersedes_scope in scopes.keys()
    if keeps:
        target, reason = supersedes_scope, "supersedes"
    else:
        own = scopes.of_kind(audience) if audience != "org" else scopes.org
        target, reason = (own, "audience") if own is not None else (scopes.org, "fallback_org")
    if target == scopes.org and origin not in ("public", "machine"):
        target, reason = _narrow(origin, scopes)
        keeps = False
    return target, reason, keeps


def _route_one(
    index: int,
    rc: ReflectionCandidate,
    scopes: RunScopes,
    run_keys: set[str],
    shown_record_scopes: Mapping[str, str],
    origin: str,
) -> tuple[RouteDecision, MemoryCandidate]:
    """Steps 1 to 3 of :func:`route_candidates` for one candidate: its decision and the
    candidate as written (``supersedes`` removed when it cannot be kept) (MEM-ROUTE.1,
    MEM-ROUTE.2, MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5, MEM-ROUTE.6)."""
    cand = rc.candidate
    sup_scope = shown_record_scopes.get(cand.supersedes) if cand.supersedes else None
    if sup_scope is not None and sup_scope not in run_keys:
        sup_scope = None
    target, reason, keeps = _decide(rc.audience, sup_scope, scopes, origin)
    dropped_sup = bool(cand.supersedes) and sup_scope is not None and not keeps
    if cand.supersedes and not keeps:
        cand = replace(cand, supersedes=None)
    return RouteDecision(index, rc.audience, target, reason, dropped_sup), cand


def gate_line(origin: str, decisions: Sequence[RouteDecision]) -> str | None:
    """The write gate's one report line, or ``None`` if it narrowed nothing (MEM-ROUTE.7).

    ``[memory] reflection write gate: origin=<token> candidates=<n> written=<n> narrowed=<n>
    dropped=<n> supersedes_dropped=<n> reasons=<token>,…`` where each reason token is
    ``org_denied_<origin>_to_user``, ``org_denied_<origin>_to_channel`` or
    ``org_denied_<origin>_no_scope`` with a ``:<count>`` suffix.  Only fixed tokens and
    integers: a candidate's text never appears.
    """
    narrowed = [d for d in decisions if d.reason in ("narrowed_user", "narrowed_channel")]
    dropped = [d for d in decisions if d.reason == "dropped"]
    if not narrowed and not dropped:
        return None
    counts: dict[str, int] = {}
    for d in decisions:
        suffix = {"narrowed_user": "to_user", "narrowed_channel": "to_channel"}.get(d.reason)
        if d.reason == "dropped":
            suffix = "no_scope"
        if suffix is not None:
            tok = f"org_denied_{origin}_{suffix}"
            counts[tok] = counts.get(tok, 0) + 1
    reasons = ",".join(f"{t}:{n}" for t, n in counts.items())
    written = sum(1 for d in decisions if d.target is not None)
    sup = sum(1 for d in decisions if d.supersedes_dropped)
    return (
        f"[memory] reflection write gate: origin={origin} candidates={len(decisions)}"
        f" written={written} narrowed={len(narrowed)} dropped={len(dropped)}"
        f" supersedes_dropped={sup} reasons={reasons}"
    )
