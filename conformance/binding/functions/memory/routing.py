"""Where reflection writes one candidate (``route_decision`` of
``reference/memory/reflection/routing.py``): routeCandidate.

The seed fixes the decision for every argument in its domain (MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5,
MEM-ROUTE.6): the audience's
scope when the run has it, else org; a correction to its record's scope; the write gate narrows an
org target from any origin but public and machine -- a DM (a group DM too) to the user's scope,
else the channel's, the others to the channel's, else the user's, never to repo; a narrowed
correction loses its pointer.  So the judge is exact, and the vectors draw the whole domain: every
audience, every set of optional scopes, every origin, and every pointer target the run has.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from conformance.binding.codec import ArgError
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from reference.memory.reflection.routing import RunScopes, route_decision

ORG = "org:acme"
OPTIONAL = {"user": "user:slack:U1", "repo": "repo:acme/api", "channel": "channel:slack:C1"}
AUDIENCES = ("user", "repo", "channel", "org")
#: every origin the seed names: public, machine, private, a DM, a group DM, unstamped (null),
#: and a value of no known kind (unknown)
ORIGINS: tuple[str | None, ...] = ("public", "machine", "private", "dm", "group_dm", None, "shared")


def run_scopes(obj: JSON) -> RunScopes:
    if not isinstance(obj, dict) or not isinstance(obj.get("org"), str):
        raise ArgError("scopes must be an object with an org key")
    return RunScopes(
        org=obj["org"], user=obj.get("user"), repo=obj.get("repo"), channel=obj.get("channel")
    )


def _route(a: Args) -> JSON:
    target, _reason, keeps = route_decision(
        str(a["audience"]), a.get("supersedesScope"), run_scopes(a["scopes"]), a.get("origin")
    )
    return {"scopeKey": target, "keepsSupersedes": keeps}


def _route_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """A scope the run does not have, or an audience scope widened to org: MEM-ROUTE.6; a
    candidate the write gate narrows in the reference: the gate (MEM-ROUTE.5); a correction:
    MEM-ROUTE.4; else the audience's scope (MEM-ROUTE.3)."""
    value = got.get("ok") if isinstance(got, dict) else None
    want = ref.get("ok") if isinstance(ref, dict) else None
    if not isinstance(value, dict) or not isinstance(want, dict):
        return ()
    scopes = a["scopes"]
    run_keys = {k for k in scopes.values() if k}
    target = value.get("scopeKey")
    if target is not None and target not in run_keys:
        return ("MEM-ROUTE.6",)
    if target == scopes["org"] and want.get("scopeKey") not in (None, scopes["org"]):
        return ("MEM-ROUTE.6",)
    if want != _route({**a, "origin": "public"}):
        return ("MEM-ROUTE.5",)
    if a.get("supersedesScope"):
        return ("MEM-ROUTE.4",)
    return ("MEM-ROUTE.3",)


def _scopes_of(kinds: tuple[str, ...]) -> dict[str, str]:
    return {"org": ORG, **{k: OPTIONAL[k] for k in kinds}}


def _all_scope_sets() -> list[tuple[str, ...]]:
    kinds = tuple(OPTIONAL)
    return [c for n in range(len(kinds) + 1) for c in itertools.combinations(kinds, n)]


def _origin_name(origin: str | None) -> str:
    return "unstamped" if origin is None else f"origin {origin}"


def _args(audience: str, kinds: tuple[str, ...], origin: str | None, sup: str | None) -> Args:
    out: Args = {"audience": audience, "scopes": _scopes_of(kinds)}
    if origin is not None:
        out["origin"] = origin
    if sup is not None:
        out["supersedesScope"] = sup
    return out


def _route_boundaries() -> list[tuple[str, Args]]:
    """The whole domain: every audience x every set of the run's optional scopes x every
    origin, without a pointer; then, with the run holding all four scopes, a pointer into each
    of them x every origin and a mislabelled audience."""
    out: list[tuple[str, Args]] = []
    for kinds in _all_scope_sets():
        for audience in AUDIENCES:
            for origin in ORIGINS:
                have = "+".join(("org", *kinds))
                comment = f"{audience} candidate, run has {have}, {_origin_name(origin)}"
                out.append((comment, _args(audience, kinds, origin, None)))
    full = tuple(OPTIONAL)
    for target in (ORG, *OPTIONAL.values()):
        for audience in ("user", "org"):
            for origin in ORIGINS:
                comment = (
                    f"{audience} candidate correcting a record of {target}, {_origin_name(origin)}"
                )
                out.append((comment, _args(audience, full, origin, target)))
    return out


@st.composite
def _route_args(draw: st.DrawFn) -> Args:
    kinds = draw(st.sampled_from(_all_scope_sets()))
    keys = list(_scopes_of(kinds).values())
    sup = draw(st.one_of(st.none(), st.sampled_from(keys)))
    return _args(draw(st.sampled_from(AUDIENCES)), kinds, draw(st.sampled_from(ORIGINS)), sup)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "routeCandidate",
        MEMORY,
        ("MEM-ROUTE.3", "MEM-ROUTE.4", "MEM-ROUTE.5", "MEM-ROUTE.6"),
        "the scope one reflected candidate is written to, and whether it keeps supersedes",
        _route,
        _route_args(),
        _route_boundaries,
        blame=_route_blame,
    ),
)
