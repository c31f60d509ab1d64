"""Engines that answer where the seed leaves the answer open, each as a real engine did or
could: the reference host with one such choice (a *variant* of ``conformance.binding.catalogue``).

Each takes an answer the seed allows and the reference does not give, so ``memspec engine``
must judge it conformant: a deviation from the reference rule that fixes the point (a
``reference`` clause), never a failure.  :data:`OPEN_VARIANTS` holds one entry per kind of open
point and :data:`ALL_TOGETHER` one engine taking every choice at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from conformance.binding.codec import memory_records
from conformance.binding.functions import BY_NAME, Args, Refused
from conformance.binding.functions.memory.reflection import (
    cand_out,
    keep_inner_whitespace,
    redact_then_collapse,
)
from reference.memory.budget import apply_budget
from reference.memory.containment import render_memory_block, scope_resource
from reference.memory.records import MemoryRecord
from reference.memory.reflection import parse_reflection
from reference.memory.scopes import SCOPE_ORDER, list_scope_keys, scope_kind
from reference.memory.scoring import score_record

JSON = Any
Impl = Callable[[Args], JSON]
Order = Callable[[list[str]], list[str]]
KINDS = SCOPE_ORDER
#: letters Unicode 16 added with a lower case (Python 3.11's Unicode does not know them)
NEWER_LOWER = {"\ua7cb": "\u0264", "\ua7cc": "\ua7cd", "\ua7dc": "\u019b", "\u1c89": "\u1c8a"}


def _call(name: str, a: Args) -> JSON:
    return BY_NAME[name].call(a)


# --------------------------------------------------------------------------- reflection


def _reflection_cleaned(a: Args, clean: Callable[[str], str]) -> JSON:
    """``parseReflection`` with its texts cleaned by ``clean``."""
    res = parse_reflection(
        a["raw"],
        list(a.get("shownIds", [])),
        a["threadKey"],
        a.get("runId"),
        clean=clean,
    )
    if res is None:
        return None
    return {
        "facts": [cand_out(f) for f in res.facts],
        "summary": cand_out(res.summary) if res.summary is not None else None,
    }


def reflection_whitespace_kept(a: Args) -> JSON:
    """Every fact and summary text only trimmed: its inner whitespace runs kept as the
    extractor wrote them (the reference, like the upstream bot, collapses them)."""
    return _reflection_cleaned(a, keep_inner_whitespace)


def reflection_upstream_order(a: Args) -> JSON:
    """Texts redacted, then collapsed and trimmed, and not redacted again -- the upstream bot's
    order: a secret only the collapsing joins stays (the reference redacts once more)."""
    return _reflection_cleaned(a, redact_then_collapse)


_ANY_FENCE = re.compile(r"\A```[A-Za-z0-9_+-]*\s*(.*?)\s*```\Z", re.DOTALL)


def reflection_any_fence(a: Args) -> JSON:
    """A fence with any tag unwrapped (```js, ```jsonc, ...)."""
    m = _ANY_FENCE.match(a["raw"].strip())
    return _call("parseReflection", {**a, "raw": m.group(1)} if m else a)


_OTHER_SECRETS = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[a-z]-\S+)")


def redact_other_patterns(a: Args) -> JSON:
    """Another set of secret shapes: API-key prefixes only (no AWS ids, no Bearer, no PEM)."""
    return _OTHER_SECRETS.sub("<secret>", a["text"])


# --------------------------------------------------------------------------- scopes


def derive_whitespace_kept(a: Args) -> JSON:
    """A whitespace-only value kept as the key's value (the seed refuses only missing/empty)."""
    kind, value = a["kind"], a.get("value")
    if kind in KINDS and isinstance(value, str) and value and not value.strip():
        return f"{kind}:{value}"
    return _call("deriveScopeKey", a)


def request_whitespace_kept(a: Args) -> JSON:
    """Every input that is not empty made a key, whitespace-only ones included."""
    org = a.get("org")
    if not isinstance(org, str) or org == "":
        raise Refused("no org")
    keys = [f"org:{org}"]
    for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
        if a.get(name):
            keys.append(f"{kind}:{a[name]}")
    return keys


def derive_unknown_no_key(a: Args) -> JSON:
    """An unknown kind answered with no key."""
    if a["kind"] not in KINDS:
        return None
    return _call("deriveScopeKey", a)


def list_unknown_dropped(a: Args) -> JSON:
    """Keys of no memory kind left out of the listing."""
    return list_scope_keys([k for k in a["keys"] if scope_kind(k) in KINDS])


def _retrieved(a: Args) -> dict[str, list[MemoryRecord]]:
    return {i["scopeKey"]: memory_records(i["records"]) for i in a["retrieved"]}


def _pool(a: Args, order: Order, needs_org: bool, drop_unknown: bool) -> list[MemoryRecord]:
    """The read pool in scope ``order``: refused without org when ``needs_org``; a key of no
    memory kind left out when ``drop_unknown``, else refused (as the reference does)."""
    everything = _retrieved(a)
    retrieved = {k: v for k, v in everything.items() if scope_kind(k) in KINDS}
    if len(retrieved) < len(everything) and not drop_unknown:
        raise Refused("not a memory scope key")
    if needs_org and not any(scope_kind(k) == "org" for k in retrieved):
        raise Refused("a read needs the org scope")
    union = [r for k in order(list(retrieved)) for r in retrieved[k]]
    query, now = a["query"], int(a["now"])
    ranked = sorted(union, key=lambda r: -score_record(query, r, now))
    return apply_budget(ranked, int(a["limit"]), int(a["maxTokens"]))


def _user_first(keys: list[str]) -> list[str]:
    """org, then user, channel, repo: equal scores after org in reverse scope order."""
    rank = {"org": 0, "user": 1, "channel": 2, "repo": 3}
    return sorted(keys, key=lambda k: rank[scope_kind(k)])


def _pool_variant(order: Order, needs_org: bool, drop_unknown: bool = False) -> Impl:
    def impl(a: Args) -> JSON:
        return [r.id for r in _pool(a, order, needs_org, drop_unknown)]

    return impl


def _block_variant(order: Order, needs_org: bool, drop_unknown: bool = False) -> Impl:
    def impl(a: Args) -> JSON:
        records = _pool(a, order, needs_org, drop_unknown)
        if not records:
            return None
        keys = [i["scopeKey"] for i in a["retrieved"] if scope_kind(i["scopeKey"]) in KINDS]
        return render_memory_block(records, scope_resource(list_scope_keys(keys)))

    return impl


# --------------------------------------------------------------------------- the seed's domain


def _limit_checked(name: str, field: str, low: int, high: int) -> Impl:
    """``name`` refusing a ``field`` outside [low, high] (the seed never sends one)."""

    def impl(a: Args) -> JSON:
        value = a[field]
        if not isinstance(value, int) or not low <= value <= high:
            raise Refused(f"{field} out of range")
        return _call(name, a)

    return impl


# --------------------------------------------------------------------------- Unicode


def normalize_newer_unicode(a: Args) -> JSON:
    """The dedup key on a runtime with a newer Unicode: letters added since lower-cased."""
    key = _call("normalizeText", a)
    return "".join(NEWER_LOWER.get(c, c) for c in key)


# --------------------------------------------------------------------------- the table

#: (name, clause, summary, {function: impl}) -- one per kind of open point
OPEN_VARIANTS: tuple[tuple[str, str, str, dict[str, Impl]], ...] = (
    (
        "eng-reflection-whitespace-kept",
        "MEM-REFLECT.12",
        "fact and summary texts only trimmed, inner whitespace runs kept",
        {"parseReflection": reflection_whitespace_kept},
    ),
    (
        "eng-reflection-upstream-order",
        "MEM-REFLECT.14",
        "texts redacted before collapsing and not again (the upstream's order)",
        {"parseReflection": reflection_upstream_order},
    ),
    (
        "eng-scope-blank-kept",
        "MEM-SCOPE.6",
        "a whitespace-only scope value makes a key",
        {"deriveScopeKey": derive_whitespace_kept, "requestScopeKeys": request_whitespace_kept},
    ),
    (
        "eng-scope-unknown-kind-no-key",
        "MEM-SCOPE.7",
        "an unknown scope kind answered with no key, left out of lists and reads",
        {
            "deriveScopeKey": derive_unknown_no_key,
            "listScopeKeys": list_unknown_dropped,
            "poolRecords": _pool_variant(list_scope_keys, False, drop_unknown=True),
            "memoryContextBlock": _block_variant(list_scope_keys, False, drop_unknown=True),
        },
    ),
    (
        "eng-out-of-domain-refused",
        "MEM-SCOPE.8",
        "a limit outside 1-50 or a cap below 1 refused",
        {
            "rankRecords": _limit_checked("rankRecords", "limit", 1, 50),
            "applyBudget": _limit_checked("applyBudget", "limit", 1, 50),
            "poolRecords": _limit_checked("poolRecords", "limit", 1, 50),
            "planEviction": _limit_checked("planEviction", "cap", 1, 10_000),
        },
    ),
    (
        "eng-reflection-any-fence",
        "MEM-REFLECT.13",
        "a fence with any tag unwrapped",
        {"parseReflection": reflection_any_fence},
    ),
    (
        "eng-pool-ties-user-first",
        "MEM-READ.1",
        "equal scores after org: user, channel, then repo",
        {
            "poolRecords": _pool_variant(_user_first, False),
            "memoryContextBlock": _block_variant(_user_first, False),
        },
    ),
    (
        "eng-read-needs-org",
        "MEM-SCOPE.8",
        "a read without an org scope refused",
        {
            "poolRecords": _pool_variant(list_scope_keys, True),
            "memoryContextBlock": _block_variant(list_scope_keys, True),
        },
    ),
    (
        "eng-normalize-newer-unicode",
        "MEM-WRITE.2",
        "letters Unicode 16 added are lower-cased",
        {"normalizeText": normalize_newer_unicode},
    ),
    (
        "eng-redaction-other-patterns",
        "MEM-REFLECT.14",
        "another set of secret shapes redacted",
        {"redactSecrets": redact_other_patterns},
    ),
)


def _derive_all(a: Args) -> JSON:
    return derive_unknown_no_key(a) if a["kind"] not in KINDS else derive_whitespace_kept(a)


def _reflection_all(a: Args) -> JSON:
    m = _ANY_FENCE.match(a["raw"].strip())
    return reflection_whitespace_kept({**a, "raw": m.group(1)} if m else a)


def _limited(impl: Impl) -> Impl:
    """``impl`` refusing a limit outside 1-50 first."""

    def checked(a: Args) -> JSON:
        value = a["limit"]
        if not isinstance(value, int) or not 1 <= value <= 50:
            raise Refused("limit out of range")
        return impl(a)

    return checked


#: every open choice above in one engine (where two touch one function, both at once)
ALL_TOGETHER: dict[str, Impl] = {
    "normalizeText": normalize_newer_unicode,
    "rankRecords": _limit_checked("rankRecords", "limit", 1, 50),
    "applyBudget": _limit_checked("applyBudget", "limit", 1, 50),
    "planEviction": _limit_checked("planEviction", "cap", 1, 10_000),
    "poolRecords": _limited(_pool_variant(_user_first, True, drop_unknown=True)),
    "memoryContextBlock": _limited(_block_variant(_user_first, True, drop_unknown=True)),
    "deriveScopeKey": _derive_all,
    "requestScopeKeys": request_whitespace_kept,
    "listScopeKeys": list_unknown_dropped,
    "parseReflection": _reflection_all,
    "redactSecrets": redact_other_patterns,
}

__all__ = ["ALL_TOGETHER", "NEWER_LOWER", "OPEN_VARIANTS"]
