"""Scope keys: deriving them from request identity and ordering them (MEM-SCOPE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

ScopeKind = Literal["org", "repo", "channel", "user"]
SCOPE_ORDER: Final[tuple[str, ...]] = ("org", "repo", "channel", "user")


class ScopeError(ValueError):
    """A scope was asked for without the input it is derived from (MEM-SCOPE.2)."""


def derive_scope_key(kind: str, value: str | None) -> str:
    """``<kind>:<value>`` for kind org/repo/channel/user (MEM-SCOPE.1, MEM-SCOPE.2, MEM-SCOPE.6,
    MEM-SCOPE.7).

    A missing, empty or all-whitespace value raises ``ScopeError``: there is never a shared
    anonymous bucket.  An unknown kind raises too.  The value is used as given (it is already
    namespaced by its source, e.g. ``slack:U0123``).
    """
    if kind not in SCOPE_ORDER:
        raise ScopeError(f"unknown scope kind {kind!r}")
    if value is None or not value.strip():
        raise ScopeError(f"a {kind} scope needs a {kind} value")
    return f"{kind}:{value}"


def scope_kind(scope_key: str) -> str:
    """The kind prefix of a scope key (the text before the first ``:``)."""
    return scope_key.split(":", 1)[0]


def list_scope_keys(keys: Sequence[str]) -> list[str]:
    """Order scope keys org, repo, channel, user -- widest shared first (MEM-SCOPE.4).

    Stable within a kind; a key of any other kind raises ``ScopeError``.
    """
    rank = {k: i for i, k in enumerate(SCOPE_ORDER)}
    for k in keys:
        if scope_kind(k) not in rank:
            raise ScopeError(f"not a memory scope key: {k!r}")
    return sorted(keys, key=lambda k: rank[scope_kind(k)])


def request_scope_keys(
    org: str | None,
    user_id: str | None = None,
    repo: str | None = None,
    channel_id: str | None = None,
) -> list[str]:
    """The scopes one request reads, in ``list_scope_keys`` order (MEM-SCOPE.3).

    The org key always (``ScopeError`` without an organization); ``repo:``, ``channel:`` and
    ``user:`` only when the request carries that input -- a repo resolution that yielded
    nothing (or failed) is passed as ``None`` and simply means no repo scope.
    """
    keys = [derive_scope_key("org", org)]
    if repo:
        keys.append(derive_scope_key("repo", repo))
    if channel_id:
        keys.append(derive_scope_key("channel", channel_id))
    if user_id:
        keys.append(derive_scope_key("user", user_id))
    return keys
