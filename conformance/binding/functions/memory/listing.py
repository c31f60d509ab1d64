"""Which scopes a ``memory list`` shows (``list_scopes_for`` of ``reference/memory/commands.py``):
listingScopeKeys.

The seed fixes the answer for every request (MEM-CMD.4): ``all`` shows the caller's own scope,
the repo's (``--repo``, else the thread's bound repo) and the channel's when the request has
them, then the org's; ``me``, ``repo`` and ``channel`` show exactly that scope and say so --
here: refuse -- when the request lacks it; ``org`` always works.  The judge is exact and the
vectors draw the whole domain: every scope word with every combination of the request's inputs.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, Refused, fn
from reference.memory.commands import ListCommand, ListRefusal, list_scopes_for

SCOPE_WORDS = ("me", "org", "repo", "channel", "all")
INPUTS = {
    "userId": "slack:U1",
    "channelId": "slack:C1",
    "repo": "acme/api",
    "boundRepo": "acme/web",
}


def _listing(a: Args) -> JSON:
    command = ListCommand(scope=str(a["scope"]), repo=a.get("repo"))
    out = list_scopes_for(
        command,
        org_key=f"org:{a['org']}",
        caller_user_id=a.get("userId"),
        channel_id=a.get("channelId"),
        bound_repo=a.get("boundRepo"),
    )
    if isinstance(out, ListRefusal):
        raise Refused(out.message)
    return list(out.scope_keys)


def _args(scope: str, present: tuple[str, ...]) -> Args:
    return {"scope": scope, "org": "acme", **{k: INPUTS[k] for k in present}}


def _listing_boundaries() -> list[tuple[str, Args]]:
    """The whole domain: every scope word x every set of the request's optional inputs (its
    user, its channel, a ``--repo``, a bound repo)."""
    out = []
    names = tuple(INPUTS)
    for scope in SCOPE_WORDS:
        for n in range(len(names) + 1):
            for present in itertools.combinations(names, n):
                has = ", ".join(present) or "no optional input"
                out.append((f"memory list {scope}: request with {has}", _args(scope, present)))
    return out


@st.composite
def _listing_args(draw: st.DrawFn) -> Args:
    present = tuple(k for k in INPUTS if draw(st.booleans()))
    return _args(draw(st.sampled_from(SCOPE_WORDS)), present)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "listingScopeKeys",
        MEMORY,
        ("MEM-CMD.4",),
        "the scopes one memory list shows, in order, or refused when it names a missing one",
        _listing,
        _listing_args(),
        _listing_boundaries,
    ),
)
