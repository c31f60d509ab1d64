"""Scope keys (``reference/memory/scopes.py``): deriveScopeKey, requestScopeKeys, listScopeKeys."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, Refused, fn, outcome_of
from conformance.binding.functions.common import any_text
from conformance.binding.judge import THROWS, Judged, ok
from reference.memory.scopes import ScopeError, derive_scope_key, list_scope_keys

#: Characters that are whitespace to Python's ``str.strip`` or to JavaScript's ``trim`` but
#: not to both, and zero-width characters no one trims: an engine may count a value made of
#: them as blank or not (open point: which characters make a scope input blank).
BLANK_OPEN = frozenset("\x1c\x1d\x1e\x1f\x85\ufeff\u180e\u200b")


def _derive(a: Args) -> JSON:
    try:
        return derive_scope_key(a["kind"], a.get("value"))
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _blank_open(v: JSON) -> bool:
    return (
        isinstance(v, str)
        and v != ""
        and any(c in BLANK_OPEN for c in v)
        and not v.strip("".join(BLANK_OPEN) + " \t\n\r\v\f\u00a0\u2028\u2029\u3000")
    )


def _derive_judge(a: Args) -> Judged:
    """A value blank under one whitespace definition but not another: refused or kept."""
    ref = outcome_of(_derive, a)
    allowed = [ref]
    if _blank_open(a.get("value")) and a.get("kind") in ("org", "repo", "channel", "user"):
        allowed = [THROWS, ok(f"{a['kind']}:{a['value']}")]
    return Judged(allowed)


def _request_keys(a: Args) -> JSON:
    keys = [_derive({"kind": "org", "value": a.get("org")})]
    for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
        if a.get(name):
            keys.append(_derive({"kind": kind, "value": a[name]}))
    return keys


def _request_keys_judge(a: Args) -> Judged:
    """A whitespace-only optional input: refused, or taken as no input (open point), or -- for
    characters only one whitespace definition knows -- kept."""
    ref = outcome_of(_request_keys, a)
    allowed = [ref]
    blank = {
        n
        for n in ("repo", "channelId", "userId")
        if isinstance(a.get(n), str) and a[n] and (not a[n].strip() or _blank_open(a[n]))
    }
    if blank:
        dropped = {**a, **{n: None for n in blank}}
        allowed.append(outcome_of(_request_keys, dropped))
        allowed.append(THROWS)
        if all(_blank_open(a[n]) for n in blank):
            kept = ["org:" + str(a.get("org"))]
            for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
                if a.get(name):
                    kept.append(f"{kind}:{a[name]}")
            if a.get("org") and str(a.get("org")).strip():
                allowed.append(ok(kept))
    if _blank_open(a.get("org")):
        allowed.append(THROWS)
    return Judged(allowed)


def _list_keys(a: Args) -> JSON:
    try:
        return list_scope_keys(list(a["keys"]))
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _scope_boundaries() -> list[tuple[str, Args]]:
    return [
        ("org", {"kind": "org", "value": "acme"}),
        ("value used as given", {"kind": "user", "value": "slack:U0123"}),
        ("missing value refused", {"kind": "repo", "value": None}),
        ("empty value refused", {"kind": "channel", "value": ""}),
        ("whitespace-only refused", {"kind": "org", "value": " \t "}),
        (
            "JS-only whitespace U+FEFF: refused or kept (open point)",
            {"kind": "org", "value": "\ufeff"},
        ),
        (
            "Python-only whitespace U+001C: refused or kept (open point)",
            {"kind": "org", "value": "\x1c"},
        ),
        ("unknown kind refused", {"kind": "team", "value": "x"}),
        ("astral value", {"kind": "user", "value": "\U0001f600"}),
    ]


def _request_boundaries() -> list[tuple[str, Args]]:
    return [
        ("org alone", {"org": "acme"}),
        (
            "all four in order",
            {"org": "acme", "userId": "slack:U1", "repo": "acme/api", "channelId": "C1"},
        ),
        ("no org refused", {"org": None, "userId": "slack:U1"}),
        ("empty repo means no repo scope", {"org": "acme", "repo": ""}),
        ("whitespace-only user (open point)", {"org": "acme", "userId": "  "}),
        ("whitespace-only org refused", {"org": " "}),
    ]


def _list_keys_boundaries() -> list[tuple[str, Args]]:
    return [
        (
            "reordered org, repo, channel, user",
            {"keys": ["user:u", "channel:c", "org:o", "repo:r"]},
        ),
        ("stable within a kind", {"keys": ["user:b", "org:o", "user:a"]}),
        ("empty", {"keys": []}),
        ("unknown kind refused", {"keys": ["org:o", "team:t"]}),
    ]


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "deriveScopeKey",
        MEMORY,
        ("MEM-SCOPE.1", "MEM-SCOPE.2"),
        "<kind>:<value> or refused",
        _derive,
        st.fixed_dictionaries(
            {
                "kind": st.sampled_from(("org", "repo", "channel", "user", "team")),
                "value": st.one_of(st.none(), any_text),
            }
        ),
        _scope_boundaries,
        _derive_judge,
    ),
    fn(
        "requestScopeKeys",
        MEMORY,
        ("MEM-SCOPE.3",),
        "the scopes one request reads",
        _request_keys,
        st.fixed_dictionaries(
            {
                "org": st.one_of(st.none(), st.sampled_from(("acme", " ", ""))),
                "userId": st.one_of(st.none(), st.sampled_from(("slack:U1", "", "  "))),
                "repo": st.one_of(st.none(), st.just("acme/api")),
                "channelId": st.one_of(st.none(), st.just("C1")),
            }
        ),
        _request_boundaries,
        _request_keys_judge,
    ),
    fn(
        "listScopeKeys",
        MEMORY,
        ("MEM-SCOPE.4",),
        "org, repo, channel, user",
        _list_keys,
        st.fixed_dictionaries(
            {
                "keys": st.lists(
                    st.sampled_from(("org:o", "repo:r", "channel:c", "user:u", "user:v", "org:p")),
                    max_size=5,
                )
            }
        ),
        _list_keys_boundaries,
    ),
)
