"""MEM-SCOPE.1-4: deriving, ordering and choosing a request's scope keys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.scopes import (
    ScopeError,
    derive_scope_key,
    list_scope_keys,
    request_scope_keys,
)

ident = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12
)
maybe = st.one_of(st.none(), st.just(""), ident)
ORDER = {"org": 0, "repo": 1, "channel": 2, "user": 3}


@pytest.mark.clause("MEM-SCOPE.1")
def test_derive_examples() -> None:
    assert derive_scope_key("org", "acme") == "org:acme"
    assert derive_scope_key("user", "slack:U0123") == "user:slack:U0123"
    assert derive_scope_key("repo", "owner/name") == "repo:owner/name"
    assert derive_scope_key("channel", "slack:C0123") == "channel:slack:C0123"


@pytest.mark.clause("MEM-SCOPE.2")
@pytest.mark.parametrize("kind", ["org", "repo", "channel", "user"])
@pytest.mark.parametrize("value", [None, "", "   ", "\t"])
def test_no_input_no_scope(kind: str, value: str | None) -> None:
    with pytest.raises(ScopeError):
        derive_scope_key(kind, value)


@pytest.mark.clause("MEM-SCOPE.2")
def test_unknown_kind_and_missing_org_are_refused() -> None:
    with pytest.raises(ScopeError):
        derive_scope_key("team", "x")
    with pytest.raises(ScopeError):
        request_scope_keys(None, user_id="slack:U1")
    with pytest.raises(ScopeError):
        request_scope_keys("")


@pytest.mark.clause("MEM-SCOPE.3", "MEM-SCOPE.4")
@given(ident, maybe, maybe, maybe)
def test_request_scope_keys(
    org: str, user: str | None, repo: str | None, channel: str | None
) -> None:
    keys = request_scope_keys(org, user_id=user, repo=repo, channel_id=channel)
    expected = [f"org:{org}"]
    if repo:
        expected.append(f"repo:{repo}")
    if channel:
        expected.append(f"channel:{channel}")
    if user:
        expected.append(f"user:{user}")
    assert keys == expected
    assert list_scope_keys(keys) == keys
    assert len(keys) <= 4 and len(set(keys)) == len(keys)


@pytest.mark.clause("MEM-SCOPE.4")
@given(
    st.permutations(["user:slack:U1", "channel:slack:C1", "org:acme", "repo:o/n", "user:slack:U2"])
)
def test_list_scope_keys_orders_by_kind_stably(keys: list[str]) -> None:

    out = list_scope_keys(keys)
    assert sorted(out) == sorted(keys)
    assert [ORDER[k.split(":")[0]] for k in out] == sorted(ORDER[k.split(":")[0]] for k in keys)
    users = [k for k in keys if k.startswith("user:")]
    assert [k for k in out if k.startswith("user:")] == users  # stable within a kind
    assert out[0] == "org:acme"


@pytest.mark.clause("MEM-SCOPE.4")
def test_list_scope_keys_refuses_foreign_keys() -> None:
    with pytest.raises(ScopeError):
        list_scope_keys(["org:a", "team:x"])
