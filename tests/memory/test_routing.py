"""MEM-ROUTE: audience routing of reflection candidates and the write gate."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.records import MemoryCandidate
from reference.memory.reflection import (
    ReflectionCandidate,
    ReflectionResult,
    RunScopes,
    ScopeWrite,
    normalize_origin,
    parse_reflection,
    route_candidates,
)

ORG, USER, REPO, CHAN = "org:acme", "user:slack:U1", "repo:acme/api", "channel:slack:C9"
ORIGINS = ["public", "machine", "private", "dm", "group_dm", "unknown", None, "", "weird"]
SHOWN = {
    "mem:org:acme:1": ORG,
    "mem:user:slack:U1:1": USER,
    "mem:repo:acme/api:1": REPO,
    "mem:channel:slack:C9:1": CHAN,
}
LINE = re.compile(
    r"\[memory\] reflection write gate: origin=(private|dm|unknown|unstamped)"
    r" candidates=\d+ written=\d+ narrowed=\d+ dropped=\d+ supersedes_dropped=\d+"
    r" reasons=org_denied_[a-z]+_(to_user|to_channel|no_scope):\d+"
    r"(,org_denied_[a-z]+_(to_user|to_channel|no_scope):\d+)*"
)


def cand(
    text: str, audience: str = "org", supersedes: str | None = None, kind: str = "fact"
) -> ReflectionCandidate:
    return ReflectionCandidate(
        MemoryCandidate(
            kind, text, "slack:C9:1", None, "run-1", 0.9 if kind == "fact" else None, supersedes
        ),
        audience,
    )


def result(
    *facts: ReflectionCandidate, summary: ReflectionCandidate | None = None
) -> ReflectionResult:
    return ReflectionResult(tuple(facts), summary)


def targets(writes: tuple[ScopeWrite, ...]) -> dict[str, list[str]]:
    return {w.scope_key: [c.text for c in w.candidates] for w in writes}


# --------------------------------------------------------------------------- oracle


def expected_route(
    c: ReflectionCandidate, scopes: RunScopes, origin: str | None
) -> tuple[str | None, str | None]:
    """(target scope, supersedes kept) written straight from the clause text."""
    have = {"org": scopes.org, "user": scopes.user, "repo": scopes.repo, "channel": scopes.channel}
    sup = c.candidate.supersedes
    if sup and SHOWN.get(sup) in set(scopes.keys()):
        target: str | None = SHOWN[sup]
    else:
        sup = None
        target = have.get(c.audience) or scopes.org
    o = normalize_origin(origin)
    if target == scopes.org and o not in ("public", "machine"):
        order = ["user", "channel"] if o == "dm" else ["channel", "user"]
        target = next((have[k] for k in order if have[k]), None)
        sup = None
    return target, sup


audience = st.sampled_from(["user", "repo", "channel", "org"])
pointer = st.one_of(st.none(), st.sampled_from([*SHOWN, "mem:org:acme:77"]))
rc = st.builds(
    lambda i, a, p: cand(f"TEXTMARK{i}", a, p),
    st.integers(0, 99),
    audience,
    pointer,
)
run_scopes = st.builds(
    RunScopes,
    st.just(ORG),
    st.one_of(st.none(), st.just(USER)),
    st.one_of(st.none(), st.just(REPO)),
    st.one_of(st.none(), st.just(CHAN)),
)


@pytest.mark.clause(
    "MEM-ROUTE.1", "MEM-ROUTE.3", "MEM-ROUTE.4", "MEM-ROUTE.5", "MEM-ROUTE.6", "MEM-ROUTE.7"
)
@given(
    facts=st.lists(rc, max_size=5),
    summary_audience=st.one_of(st.none(), audience),
    scopes=run_scopes,
    origin=st.sampled_from(ORIGINS),
)
def test_routing_matches_the_clauses(
    facts: list[ReflectionCandidate],
    summary_audience: str | None,
    scopes: RunScopes,
    origin: str | None,
) -> None:
    summary = (
        cand("TEXTMARKsummary", summary_audience, kind="summary") if summary_audience else None
    )
    res = result(*facts, summary=summary)
    plan = route_candidates(res, scopes, SHOWN, origin)
    run_keys = set(scopes.keys())

    expected: dict[str, list[MemoryCandidate]] = {}
    narrowed_or_dropped = 0
    for c in res.candidates:
        tgt, sup = expected_route(c, scopes, origin)
        naive = (
            c.candidate.supersedes if SHOWN.get(c.candidate.supersedes or "") in run_keys else None
        )
        base_target = (
            SHOWN[naive]
            if naive
            else (
                {
                    "org": ORG,
                    "user": scopes.user,
                    "repo": scopes.repo,
                    "channel": scopes.channel,
                }.get(c.audience)
                or ORG
            )
        )
        if tgt != base_target:
            narrowed_or_dropped += 1
        if tgt is not None:
            expected.setdefault(tgt, []).append(
                MemoryCandidate(**{**c.candidate.__dict__, "supersedes": sup})
            )
    # one write per target scope, org/repo/channel/user order, candidates in order, tags gone
    order = [k for k in scopes.keys() if k in expected]
    assert plan.writes == tuple(ScopeWrite(k, tuple(expected[k])) for k in order)
    for w in plan.writes:
        assert w.scope_key in run_keys  # never a scope the run lacks
        assert all(type(c) is MemoryCandidate for c in w.candidates)
        if w.scope_key == ORG:
            assert normalize_origin(origin) in ("public", "machine")
    if not res.durable:
        assert plan.writes == ()
    # the report line: present iff the gate acted, fixed grammar, never a fact's text
    if narrowed_or_dropped:
        assert plan.memory_line is not None and LINE.fullmatch(plan.memory_line)
        assert "TEXTMARK" not in plan.memory_line
        nums = dict(re.findall(r" (candidates|written|narrowed|dropped)=(\d+)", plan.memory_line))
        assert int(nums["candidates"]) == len(res.candidates)
        assert int(nums["written"]) == sum(len(v) for v in expected.values())
        assert int(nums["narrowed"]) + int(nums["dropped"]) == narrowed_or_dropped
    else:
        assert plan.memory_line is None


@pytest.mark.clause("MEM-ROUTE.6")
@given(
    facts=st.lists(rc, min_size=1, max_size=5), scopes=run_scopes, origin=st.sampled_from(ORIGINS)
)
def test_never_widened(
    facts: list[ReflectionCandidate], scopes: RunScopes, origin: str | None
) -> None:
    plan = route_candidates(result(*facts), scopes, SHOWN, origin)
    for d in plan.decisions:
        c = facts[d.index]
        own = {"user": scopes.user, "repo": scopes.repo, "channel": scopes.channel}.get(c.audience)
        if own is not None and not c.candidate.supersedes:
            assert d.target == own  # a narrow fact with its scope available stays there
        if d.reason.startswith("narrowed"):
            assert d.target in (scopes.user, scopes.channel) and d.target is not None
            assert d.target != scopes.repo


# --------------------------------------------------------------------------- MEM-ROUTE.2


@pytest.mark.clause("MEM-ROUTE.2")
@given(
    audiences=st.lists(
        st.one_of(
            st.sampled_from(["user", "repo", "channel", "org", "User", "team", ""]), st.none()
        ),
        max_size=6,
    )
)
def test_summary_takes_the_narrowest_surviving_audience(audiences: list[str | None]) -> None:
    facts = [
        {"text": f"fact {i}", "confidence": 0.9, **({"audience": a} if a is not None else {})}
        for i, a in enumerate(audiences)
    ]
    got = parse_reflection(json.dumps({"facts": facts, "summary": "s"}), [], "t", None)
    assert got is not None and got.summary is not None
    tags = [f.audience for f in got.facts]
    assert tags == [a if a in ("user", "repo", "channel", "org") else "org" for a in audiences[:5]]
    rank = {"user": 0, "repo": 1, "channel": 2, "org": 3}
    assert got.summary.audience == min(tags, key=rank.__getitem__, default="org")


@pytest.mark.clause("MEM-ROUTE.2")
def test_dropped_facts_do_not_tag_the_summary() -> None:
    raw = json.dumps(
        {
            "facts": [
                {"text": "likes tabs", "confidence": 0.2, "audience": "user"},
                {"text": "repo uses make", "confidence": 0.9, "audience": "repo"},
            ],
            "summary": "s",
        }
    )
    got = parse_reflection(raw, [], "t", None)
    assert got is not None and got.summary is not None and got.summary.audience == "repo"


# --------------------------------------------------------------------------- exact examples


@pytest.mark.clause("MEM-ROUTE.3", "MEM-ROUTE.5")
def test_public_routing_examples() -> None:
    scopes = RunScopes(ORG, user=USER, repo=REPO, channel=CHAN)
    res = result(
        cand("u", "user"),
        cand("r", "repo"),
        cand("c", "channel"),
        cand("o", "org"),
        summary=cand("s", "user", kind="summary"),
    )
    plan = route_candidates(res, scopes, SHOWN, "public")
    assert targets(plan.writes) == {ORG: ["o"], REPO: ["r"], CHAN: ["c"], USER: ["u", "s"]}
    assert [w.scope_key for w in plan.writes] == [ORG, REPO, CHAN, USER]
    assert plan.memory_line is None
    # without the narrow scopes everything falls back to org
    plan = route_candidates(res, RunScopes(ORG), SHOWN, "machine")
    assert targets(plan.writes) == {ORG: ["u", "r", "c", "o", "s"]}


@pytest.mark.clause("MEM-ROUTE.5")
@pytest.mark.parametrize(
    ("origin", "user", "channel", "expected", "token"),
    [
        ("dm", USER, CHAN, USER, "org_denied_dm_to_user"),
        ("group_dm", USER, None, USER, "org_denied_dm_to_user"),
        ("dm", None, CHAN, CHAN, "org_denied_dm_to_channel"),
        ("private", USER, CHAN, CHAN, "org_denied_private_to_channel"),
        ("private", USER, None, USER, "org_denied_private_to_user"),
        (None, USER, CHAN, CHAN, "org_denied_unstamped_to_channel"),
        ("something", USER, None, USER, "org_denied_unknown_to_user"),
        ("dm", None, None, None, "org_denied_dm_no_scope"),
    ],
)
def test_write_gate_examples(
    origin: str | None, user: str | None, channel: str | None, expected: str | None, token: str
) -> None:
    scopes = RunScopes(ORG, user=user, repo=REPO, channel=channel)
    plan = route_candidates(
        result(cand("org fact"), summary=cand("sum", "org", kind="summary")), scopes, SHOWN, origin
    )
    if expected is None:
        assert plan.writes == ()
    else:
        assert targets(plan.writes) == {expected: ["org fact", "sum"]}  # never repo
    assert plan.memory_line is not None and f"{token}:2" in plan.memory_line
    assert "org fact" not in plan.memory_line


@pytest.mark.clause("MEM-ROUTE.4", "MEM-ROUTE.5")
def test_corrections() -> None:
    scopes = RunScopes(ORG, user=USER, channel=CHAN)
    # a mislabeled correction follows its record's scope (user), and keeps the pointer
    plan = route_candidates(
        result(cand("fixed", "org", "mem:user:slack:U1:1")), scopes, SHOWN, "public"
    )
    assert plan.writes == (
        ScopeWrite(USER, (cand("fixed", supersedes="mem:user:slack:U1:1").candidate,)),
    )
    # a correction of an org record from a DM is narrowed and loses the pointer
    plan = route_candidates(result(cand("fixed", "user", "mem:org:acme:1")), scopes, SHOWN, "dm")
    assert plan.writes == (ScopeWrite(USER, (cand("fixed").candidate,)),)
    assert plan.memory_line is not None and "supersedes_dropped=1" in plan.memory_line
    # a pointer to a scope this run does not have is removed; the audience decides
    plan = route_candidates(
        result(cand("fixed", "channel", "mem:repo:acme/api:1")), scopes, SHOWN, "public"
    )
    assert plan.writes == (ScopeWrite(CHAN, (cand("fixed").candidate,)),)


@pytest.mark.clause("MEM-ROUTE.1")
def test_nothing_durable_writes_nothing() -> None:
    for origin in ORIGINS:
        plan = route_candidates(result(), RunScopes(ORG, user=USER), SHOWN, origin)
        assert plan.writes == () and plan.memory_line is None
