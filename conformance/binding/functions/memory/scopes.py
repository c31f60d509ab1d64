"""Scope keys (``reference/memory/scopes.py``): deriveScopeKey, requestScopeKeys, listScopeKeys."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, Refused, fn, outcome_of
from conformance.binding.functions.common import any_text
from conformance.binding.judge import THROWS, Judged, ok, widened
from reference.jsonvalues import js_trim
from reference.memory.scopes import ScopeError, derive_scope_key, list_scope_keys

#: Characters that are whitespace to Python's ``str.strip`` or to JavaScript's ``trim`` but
#: not to both, and zero-width characters no one trims: an engine may count a value made of
#: them as blank or not (open point: which characters make a scope input blank).
BLANK_OPEN = frozenset("\x1c\x1d\x1e\x1f\x85\ufeff\u180e\u200b")
KINDS = ("org", "repo", "channel", "user")
#: the reference rules the judges below add to the seed's (``widened``)
SCOPE_BLANK = ("MEM-SCOPE.6",)
SCOPE_KIND = ("MEM-SCOPE.7",)
BLANK_NOTE = "a whitespace-only value: the seed allows it refused or kept (MEM-SCOPE.6)"
UNKNOWN_KIND_NOTE = "a kind the seed does not know: refused, or no key (MEM-SCOPE.7)"


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


def _whitespace_only(v: JSON) -> bool:
    """A value that is not empty but blank to JavaScript's ``trim`` or Python's ``strip``."""
    return isinstance(v, str) and v != "" and (not v.strip() or not js_trim(v))


def _derive_judge(a: Args) -> Judged:
    """An unknown kind: refused, or no key (MEM-SCOPE.7); a whitespace-only value: refused or
    kept (MEM-SCOPE.6); a value blank under one whitespace definition but not another: refused
    or kept at every level (MEM-SCOPE.2)."""
    ref = outcome_of(_derive, a)
    kind, value = a.get("kind"), a.get("value")
    if kind not in KINDS:
        return widened(Judged([ref]), SCOPE_KIND, [ok(None)], None, UNKNOWN_KIND_NOTE)
    if _blank_open(value):
        return Judged([THROWS, ok(f"{kind}:{value}")])
    if _whitespace_only(value):
        return widened(Judged([ref]), SCOPE_BLANK, [ok(f"{kind}:{value}")], None, BLANK_NOTE)
    return Judged([ref])


def _request_keys(a: Args) -> JSON:
    keys = [_derive({"kind": "org", "value": a.get("org")})]
    for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
        if a.get(name):
            keys.append(_derive({"kind": kind, "value": a[name]}))
    return keys


def _request_keys_reference(a: Args) -> Judged:
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
            if a.get("org") and str(a.get("org")).strip():
                allowed.append(ok(_kept_keys(a, blank)))
    if _blank_open(a.get("org")):
        allowed.append(THROWS)
    return Judged(allowed)


def _kept_keys(a: Args, dropped: set[str]) -> list[str]:
    """Every input given as a key, as given, but those of ``dropped``."""
    keys = ["org:" + str(a.get("org"))]
    for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
        if a.get(name) and name not in dropped:
            keys.append(f"{kind}:{a[name]}")
    return keys


def _request_keys_judge(a: Args) -> Judged:
    """The reference's answers (:func:`_request_keys_reference`); where an input is only
    whitespace, the seed also allows it kept as a key (MEM-SCOPE.6)."""
    ref = _request_keys_reference(a)
    names = ("org", "repo", "channelId", "userId")
    ws = {n for n in names if _whitespace_only(a.get(n)) and not _blank_open(a.get(n))}
    if not ws or not a.get("org"):
        return ref
    optional = {n for n in ws if n != "org"}
    wider = [ok(_kept_keys(a, set())), ok(_kept_keys(a, optional))]
    return widened(ref, SCOPE_BLANK, wider, None, BLANK_NOTE)


def _list_keys(a: Args) -> JSON:
    try:
        return list_scope_keys(list(a["keys"]))
    except ScopeError as exc:
        raise Refused(str(exc)) from exc


def _list_keys_judge(a: Args) -> Judged:
    """A key of no memory kind: refused, left out, or listed after the user keys
    (MEM-SCOPE.7)."""
    ref = Judged([outcome_of(_list_keys, a)])
    keys = [k for k in a["keys"] if isinstance(k, str)]
    known = [k for k in keys if k.split(":", 1)[0] in KINDS]
    if len(known) == len(keys):
        return ref
    order = list_scope_keys(known)
    unknown = [k for k in keys if k not in known]
    wider = [ok(order), ok(order + unknown)]
    return widened(ref, SCOPE_KIND, wider, None, UNKNOWN_KIND_NOTE)


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


def _derive_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """Refused where a key is due or a key where the seed refuses: MEM-SCOPE.2; another key:
    MEM-SCOPE.1."""
    if isinstance(got, dict) and isinstance(ref, dict) and ("throws" in got) != ("throws" in ref):
        return ("MEM-SCOPE.2",)
    return ("MEM-SCOPE.1",)


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
        references=("MEM-SCOPE.6", "MEM-SCOPE.7"),
        blame=_derive_blame,
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
        references=("MEM-SCOPE.6",),
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
        _list_keys_judge,
        references=("MEM-SCOPE.7",),
    ),
)
