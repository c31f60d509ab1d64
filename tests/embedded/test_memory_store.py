"""The bundled store's memory behaviour over real HTTP: minting, retrieval, dedup, supersede,
list, forget, the per-scope cap, prefilter limits and FTS syntax -- with an injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from reference.memory.engine import fts_match_tokens
from tests.common.memory_store import T0, Store, StoreFactory, fact, unique_scope


def by_id(store: Store, scope: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in store.list(scope, 50)}


def ids(records: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in records]


# --------------------------------------------------------------------------- minting


@pytest.mark.clause("MEM-RECORD.1", "MEM-RECORD.4", "MEM-STORE.9", "MEM-STORE.11", "MEM-WIRE.16")
def test_write_mints_records_with_provenance_and_absent_optionals(store: Store, scope: str) -> None:
    now = store.clock.advance()
    out = store.write(
        scope,
        fact(
            "  Deploy with `make deploy`  ",
            thread="slack:C9/1.2",
            sourceRunId="run-7",
            keywords=["Deploy", "make"],
            confidence=0.85,
        ),
        {"kind": "summary", "text": "Thread summary\nline two", "sourceThreadKey": "cli:x"},
    )
    assert out == {"ok": True, "inserted": 2, "deduped": 0, "superseded": 0, "evicted": 0}
    first, second = reversed(store.list(scope))
    assert first == {
        "id": f"mem:{scope}:1",
        "scopeKey": scope,
        "kind": "fact",
        "text": "  Deploy with `make deploy`  ",  # stored verbatim
        "keywords": ["Deploy", "make"],  # verbatim
        "sourceThreadKey": "slack:C9/1.2",
        "sourceRunId": "run-7",
        "createdAt": now,
        "useCount": 0,
        "confidence": 0.85,
        "status": "active",
    }
    assert second["id"] == f"mem:{scope}:2" and second["kind"] == "summary"
    assert second["text"] == "Thread summary\nline two"
    assert second["createdAt"] == now  # one batch, one creation time
    for absent in ("sourceRunId", "lastUsedAt", "confidence", "supersedes"):
        assert absent not in second
    # keywords is always a string array (its content when none were sent is
    # implementation-defined, but text tokens always match)
    assert isinstance(second["keywords"], list)
    assert ids(store.retrieve(scope, "thread")) == [f"mem:{scope}:2"]


@pytest.mark.clause("MEM-STORE.9", "MEM-STORE.10")
def test_ids_are_never_reused_after_records_die(store: Store, scope: str) -> None:
    store.write(scope, fact("one"), fact("two"), fact("three"))
    assert store.forget(scope, f"mem:{scope}:3")
    store.write(scope, fact("four"), cap=1)  # evicts down to one active record
    store.write(scope, fact("five"))
    all_ids = [r["id"] for r in store.list(scope, 50)]
    assert f"mem:{scope}:5" in all_ids
    assert store.write(scope, fact("six"))["inserted"] == 1
    newest = store.list(scope, 1)[0]
    assert newest["id"] == f"mem:{scope}:6" and newest["text"] == "six"


# --------------------------------------------------------------------------- retrieval


@pytest.mark.clause("MEM-SCORE.2", "MEM-SCORE.4", "MEM-STORE.2")
def test_retrieve_matches_whole_tokens_only(store: Store, scope: str) -> None:
    store.write(
        scope,
        fact("alphabet soup recipe"),
        fact("cluster notes", keywords=["Kubernetes", "k8s-ops"]),
        fact("Deploy: run `make deploy` on main"),
    )
    assert store.retrieve(scope, "alpha") == []  # substring, not a token
    assert store.retrieve(scope, "a") == []
    assert ids(store.retrieve(scope, "ALPHABET")) == [f"mem:{scope}:1"]
    assert ids(store.retrieve(scope, "kubernetes?")) == [f"mem:{scope}:2"]  # keyword
    assert ids(store.retrieve(scope, "ops")) == [f"mem:{scope}:2"]  # a keyword's token
    assert ids(store.retrieve(scope, "how do I deploy")) == [f"mem:{scope}:3"]
    assert store.retrieve(scope, "deplo") == []
    assert store.retrieve(scope, "!!! ??? ...") == []  # no tokens -> nothing
    assert store.retrieve(scope, "") == []


@pytest.mark.clause("MEM-SCORE.1", "MEM-SCORE.5", "MEM-STORE.2")
def test_keyword_match_dominates_and_recency_breaks_ties(store: Store, scope: str) -> None:
    store.write(scope, fact("deploy staging cluster"))  # 1: full match, older
    store.clock.advance(3 * 24 * 3600 * 1000)
    store.write(scope, fact("deploy only"))  # 2: half match, newer
    store.clock.advance(24 * 3600 * 1000)
    store.write(scope, fact("staging deploy notes"))  # 3: full match, newest
    store.clock.advance(1000)
    got = ids(store.retrieve(scope, "deploy staging"))
    assert got == [f"mem:{scope}:3", f"mem:{scope}:1", f"mem:{scope}:2"]


@pytest.mark.clause("MEM-STORE.3", "MEM-STORE.11", "MEM-BUDGET.1")
def test_retrieve_limits_and_bumps_only_what_it_returns(store: Store, scope: str) -> None:
    created = store.clock.advance()
    store.write(scope, fact("db backup nightly"), fact("db restore drill"), fact("db vacuum"))
    store.write(scope, fact("unrelated note"))
    now = store.clock.advance(60_000)
    got = store.retrieve(scope, "db restore", limit=2)
    assert len(got) == 2 and got[0]["id"] == f"mem:{scope}:2"
    returned = set(ids(got))
    for r in got:  # the answer shows the bump (the model's choice; either is allowed)
        assert r["lastUsedAt"] == now and r["useCount"] == 1
    after = by_id(store, scope)
    for rid, r in after.items():
        if rid in returned:
            assert r["useCount"] == 1 and r["lastUsedAt"] == now >= r["createdAt"] == created
        else:
            assert r["useCount"] == 0 and "lastUsedAt" not in r
    # a retrieve that returns nothing bumps nothing
    store.clock.advance()
    assert store.retrieve(scope, "nothing matches here") == []
    assert by_id(store, scope) == after


@pytest.mark.clause("MEM-SCOPE.5", "MEM-STORE.8")
def test_scopes_are_isolated(store: Store) -> None:
    a, b = unique_scope("user"), unique_scope("user")
    store.write(a, fact("my secret preference: tabs"))
    assert store.retrieve(b, "preference tabs") == []
    assert store.list(b) == []
    assert store.forget(b, f"mem:{a}:1") is False
    assert store.write(b, fact("my secret preference: tabs")) == {
        "ok": True,
        "inserted": 1,
        "deduped": 0,
        "superseded": 0,
        "evicted": 0,
    }  # no cross-scope dedup
    assert by_id(store, a)[f"mem:{a}:1"]["useCount"] == 0
    assert store.retrieve(a, "tabs")[0]["scopeKey"] == a


@pytest.mark.clause("MEM-SCORE.2", "MEM-STORE.6")
def test_non_ascii_text_is_kept_and_found_by_its_ascii_tokens(store: Store, scope: str) -> None:
    text = "Café déploiement — naïve résumé 日本語 \U0001f680 ok"
    store.write(scope, fact(text))
    (rec,) = store.list(scope)
    assert rec["text"] == text
    assert ids(store.retrieve(scope, "cafe caf")) == [f"mem:{scope}:1"]  # token "caf"
    assert ids(store.retrieve(scope, "déploiement")) == [f"mem:{scope}:1"]  # "d", "ploiement"
    for q in ("é", "日本語", "\U0001f680", "résumé"[1:2]):
        assert store.retrieve(scope, q) == []  # accented/no-token queries are inert misses
    assert store.list(scope, 5, "é") == []


# --------------------------------------------------------------------------- prefilter


FTS_SYNTAX = [
    '"',
    '""',
    '"deploy',
    "deploy*",
    "*",
    "-deploy",
    "deploy -staging",
    "NOT deploy",
    "OR",
    "deploy OR",
    "AND AND",
    "NEAR(",
    "NEAR(deploy staging, 2)",
    "^deploy",
    "text:deploy",
    "{text}: deploy",
    "(deploy",
    "deploy)",
    "+deploy",
    "rowid:1",
    "deploy'; DROP TABLE records;--",
]


@pytest.mark.clause("MEM-STORE.5")
@pytest.mark.parametrize("q", FTS_SYNTAX)
def test_fts_syntax_in_queries_is_inert(store: Store, q: str) -> None:
    scope = unique_scope()
    store.write(
        scope,
        fact("deploy on fridays"),
        fact("near the office or at home"),
        fact("and not this one"),
    )
    tokens = set(fts_match_tokens(q))
    expected_retrieve = {r["id"] for r in store.list(scope, 50) if tokens & set(_tokens(r))}
    got = store.ok("/retrieve", {"scopeKey": scope, "query": q, "limit": 50})["records"]
    assert set(ids(got)) == expected_retrieve
    listed = store.ok("/list", {"scopeKey": scope, "limit": 50, "query": q})["records"]
    assert set(ids(listed)) == expected_retrieve
    assert len(store.list(scope)) == 3  # nothing dropped


def _tokens(rec: dict[str, Any]) -> list[str]:
    from reference.memory.scoring import tokenize

    return tokenize(rec["text"] + " " + " ".join(rec["keywords"]))


@pytest.mark.clause("MEM-STORE.5")
def test_match_uses_the_24_longest_distinct_tokens(store: Store, scope: str) -> None:
    store.write(scope, fact("zz marks the short one"), fact("verylongtokenzero target"))
    longs = [f"longtoken{chr(97 + i)}{chr(97 + i)}" for i in range(23)]
    q24 = " ".join(["zz", "verylongtokenzero", *longs[:22]])  # 24 distinct tokens
    assert len(set(q24.split())) == 24
    assert set(ids(store.retrieve(scope, q24, 50))) == {f"mem:{scope}:1", f"mem:{scope}:2"}
    q25 = " ".join(["zz", "verylongtokenzero", *longs])  # 25 distinct: "zz" is dropped
    assert ids(store.retrieve(scope, q25, 50)) == [f"mem:{scope}:2"]
    assert ids(store.list(scope, 50, q25)) == [f"mem:{scope}:2"]
    assert set(ids(store.list(scope, 50, q24))) == {f"mem:{scope}:1", f"mem:{scope}:2"}


@pytest.mark.clause("MEM-STORE.6")
def test_bm25_candidates_rescue_a_relevant_but_old_record(store: Store, scope: str) -> None:
    store.write(scope, fact("rotate signing keys quarterly"))  # 1: oldest, the best match
    store.clock.advance(30 * 24 * 3600 * 1000)
    for batch in range(3):
        store.write(scope, *[fact(f"keys note {batch} {i}") for i in range(50)])
        store.clock.advance(1000)
    # 150 newer records hit "keys" only; limit 5 -> 50 candidates.  A recency-ordered
    # prefilter would hand the engine none of record 1; bm25 puts it first.
    got = store.retrieve(scope, "rotate signing keys", limit=5)
    assert got[0]["id"] == f"mem:{scope}:1"
    assert len(got) == 5


@pytest.mark.clause("MEM-STORE.6")
def test_small_scopes_hand_the_engine_every_match(store: Store, scope: str) -> None:
    # 50 matching records; the newest is the longest (worst bm25).  With limit 1, a prefilter
    # capped at 5 x limit would drop it; the 50-candidate floor keeps it and recency wins.
    for i in range(49):
        store.write(scope, fact(f"deploy {i}"))
        store.clock.advance(1000)
    store.write(scope, fact("deploy " + " ".join(f"padding{i}" for i in range(60))))
    store.clock.advance(1000)
    (top,) = store.retrieve(scope, "deploy", limit=1)
    assert top["id"] == f"mem:{scope}:50"


# --------------------------------------------------------------------------- write planning


@pytest.mark.clause("MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.6")
def test_restating_text_bumps_instead_of_inserting(store: Store, scope: str) -> None:
    store.write(scope, fact("Use  PNPM for installs"))
    out = store.write(scope, fact("  use pnpm\tfor INSTALLS "), fact("use pnpm for installs."))
    assert out == {"ok": True, "inserted": 1, "deduped": 1, "superseded": 0, "evicted": 0}
    recs = by_id(store, scope)
    assert recs[f"mem:{scope}:1"]["useCount"] == 1
    assert "lastUsedAt" not in recs[f"mem:{scope}:1"]  # dedup bumps the count only
    assert recs[f"mem:{scope}:2"]["text"] == "use pnpm for installs."  # punctuation counts


@pytest.mark.clause("MEM-WRITE.2", "MEM-WRITE.4")
def test_dedup_bumps_the_earliest_of_duplicate_actives(store: Store, scope: str) -> None:
    store.write(scope, fact("same words"))
    # an unresolved supersede inserts unconditionally: now two actives share the text
    out = store.write(scope, fact("Same  words", supersedes="mem:nowhere:1"))
    assert out["inserted"] == 1 and out["superseded"] == 0 and out["deduped"] == 0
    assert store.write(scope, fact("same words"))["deduped"] == 1
    recs = by_id(store, scope)
    assert recs[f"mem:{scope}:1"]["useCount"] == 1
    assert recs[f"mem:{scope}:2"]["useCount"] == 0
    assert recs[f"mem:{scope}:2"]["supersedes"] == "mem:nowhere:1"


@pytest.mark.clause("MEM-WRITE.3", "MEM-WRITE.8", "MEM-STORE.4")
def test_supersede_retires_the_target_and_inserts_the_correction(store: Store, scope: str) -> None:
    store.write(scope, fact("staging runs on port 8080"))
    out = store.write(scope, fact("staging runs on port 9090", supersedes=f"mem:{scope}:1"))
    assert out == {"ok": True, "inserted": 1, "deduped": 0, "superseded": 1, "evicted": 0}
    (live,) = store.list(scope)
    assert live["id"] == f"mem:{scope}:2" and live["supersedes"] == f"mem:{scope}:1"
    assert ids(store.retrieve(scope, "8080 staging")) == [f"mem:{scope}:2"]
    assert store.list(scope, 5, "8080") == []
    # the superseded record is no dedup target and no supersede target any more
    out = store.write(scope, fact("staging runs on port 8080"))
    assert out["inserted"] == 1 and out["deduped"] == 0
    out = store.write(scope, fact("other", supersedes=f"mem:{scope}:1"))
    assert out["superseded"] == 0 and out["inserted"] == 1
    assert store.forget(scope, f"mem:{scope}:1") is False


@pytest.mark.clause("MEM-WRITE.4")
def test_unknown_or_foreign_supersedes_still_lands_without_dedup(store: Store) -> None:
    a, b = unique_scope(), unique_scope()
    store.write(a, fact("token rotates weekly"))
    store.write(b, fact("token rotates weekly"))
    for target in (f"mem:{a}:1", "mem:nope:9", "not-an-id"):
        out = store.write(b, fact("token rotates weekly", supersedes=target))
        assert out == {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    assert by_id(store, a)[f"mem:{a}:1"]["status"] == "active"
    assert len(store.list(b)) == 4


@pytest.mark.clause("MEM-WRITE.5")
def test_collision_guard_never_swallows_a_correction(store: Store, scope: str) -> None:
    store.write(scope, fact("install with npm"), fact("install with yarn"))
    # the correction's text collides with record 2 but names record 1: it supersedes 1
    out = store.write(scope, fact("Install with YARN", supersedes=f"mem:{scope}:1"))
    assert out == {"ok": True, "inserted": 1, "deduped": 0, "superseded": 1, "evicted": 0}
    recs = by_id(store, scope)
    assert set(recs) == {f"mem:{scope}:2", f"mem:{scope}:3"}
    assert recs[f"mem:{scope}:2"]["useCount"] == 0
    # restating the target's own text is a no-op dedup on the target
    out = store.write(scope, fact("install  with yarn", supersedes=f"mem:{scope}:2"))
    assert out == {"ok": True, "inserted": 0, "deduped": 1, "superseded": 0, "evicted": 0}
    assert by_id(store, scope)[f"mem:{scope}:2"]["useCount"] == 1


@pytest.mark.clause("MEM-WRITE.4", "MEM-WRITE.1")
def test_empty_supersedes_is_no_supersede_and_dedups(store: Store, scope: str) -> None:
    store.write(scope, fact("keep the changelog"))
    out = store.write(scope, fact("Keep the changelog", supersedes=""))
    assert out == {"ok": True, "inserted": 0, "deduped": 1, "superseded": 0, "evicted": 0}
    out = store.write(scope, fact("fresh fact", supersedes=""))
    assert out["inserted"] == 1
    assert "supersedes" not in store.list(scope, 1)[0]


@pytest.mark.clause("MEM-WRITE.7", "MEM-WRITE.6")
def test_a_batch_sees_its_own_earlier_inserts(store: Store, scope: str) -> None:
    out = store.write(
        scope,
        fact("alpha fact"),
        fact("ALPHA  fact"),  # dedups against the insert just above
        fact("beta fact", supersedes=f"mem:{scope}:1"),  # supersedes it
        fact("alpha fact"),  # record 1 is dead now: a fresh insert
    )
    assert out == {"ok": True, "inserted": 3, "deduped": 1, "superseded": 1, "evicted": 0}
    assert [r["text"] for r in store.list(scope)] == ["alpha fact", "beta fact"]


# --------------------------------------------------------------------------- list / forget


@pytest.mark.clause("MEM-STORE.7")
def test_list_is_newest_first_filtered_then_limited_without_bump(store: Store, scope: str) -> None:
    for i in range(6):
        store.write(scope, fact(f"note {i} {'deploy' if i % 2 else 'other'}"))
        store.clock.advance()
    assert ids(store.list(scope, 50)) == [f"mem:{scope}:{n}" for n in (6, 5, 4, 3, 2, 1)]
    assert ids(store.list(scope, 2)) == [f"mem:{scope}:6", f"mem:{scope}:5"]
    assert ids(store.list(scope, 2, "DEPLOY")) == [f"mem:{scope}:6", f"mem:{scope}:4"]
    assert ids(store.list(scope, 50, "deploy other")) == ids(store.list(scope, 50))
    assert store.list(scope, 50, "deplo") == []
    assert store.list(scope, 50, "--- !!!") == []
    assert store.list(scope, 50, "") == []
    assert all(r["useCount"] == 0 and "lastUsedAt" not in r for r in store.list(scope, 50))


@pytest.mark.clause("MEM-STORE.8", "MEM-STORE.4")
def test_forget_soft_deletes_once(store: Store, scope: str) -> None:
    store.write(scope, fact("forget this please"), fact("keep that"))
    rid = f"mem:{scope}:1"
    assert store.forget(scope, rid) is True
    assert store.forget(scope, rid) is False
    assert store.forget(scope, f"mem:{scope}:99") is False
    assert store.forget(scope, "garbage") is False
    assert ids(store.list(scope)) == [f"mem:{scope}:2"]
    assert store.retrieve(scope, "forget this please") == []
    assert store.list(scope, 5, "forget") == []
    out = store.write(scope, fact("Forget this  please"))  # no dedup against a forgotten record
    assert out["inserted"] == 1 and out["deduped"] == 0
    assert ids(store.retrieve(scope, "forget")) == [f"mem:{scope}:3"]


# --------------------------------------------------------------------------- the cap


@pytest.mark.clause("MEM-CAP.1", "MEM-CAP.2", "MEM-CAP.3")
def test_over_cap_write_evicts_least_recently_used(store: Store, scope: str) -> None:
    for i in range(4):
        store.write(scope, fact(f"record number {i}"))  # 1..4 at t, t+1s, t+2s, t+3s
        store.clock.advance(1000)
    store.write(scope, fact("record number 4"), fact("record extra"))  # 5, 6: one batch
    store.clock.advance(1000)
    store.write(scope, fact("superseder", supersedes=f"mem:{scope}:2"))  # 7; 2 is dead
    assert store.forget(scope, f"mem:{scope}:3")  # 3 is dead: 1, 4, 5, 6, 7 active
    store.clock.advance(1000)
    store.retrieve(scope, "number 0", limit=1)  # record 1 is now the most recently used
    store.clock.advance(1000)
    out = store.write(scope, fact("record number 7"), cap=3)  # 8; six active, keep 3
    # LRU order: 4 (t+3s), 5 and 6 (t+4s), 7 (t+5s), 1 (used t+6s), 8 (t+7s)
    assert out == {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 3}
    assert set(ids(store.list(scope))) == {f"mem:{scope}:1", f"mem:{scope}:7", f"mem:{scope}:8"}
    records = [store.handle.store.get(f"mem:{scope}:{n}") for n in range(1, 9)]
    assert [r.status if r is not None else None for r in records] == [
        "active",
        "superseded",
        "forgotten",
        "evicted",
        "evicted",
        "evicted",
        "active",
        "active",
    ]
    assert store.retrieve(scope, "extra") == []  # evicted records never match
    out = store.write(scope, fact("record number 4"), cap=3)  # evicted: no dedup target
    assert out["inserted"] == 1 and out["evicted"] == 1


@pytest.mark.clause("MEM-CAP.1", "MEM-CAP.2")
def test_a_batch_can_evict_its_own_inserts(store: Store, scope: str) -> None:
    out = store.write(scope, *[fact(f"batch record {i}") for i in range(5)], cap=2)
    assert out == {"ok": True, "inserted": 5, "deduped": 0, "superseded": 0, "evicted": 3}
    assert len(store.list(scope)) == 2
    out = store.write(scope, fact("batch record 0"), cap=2)  # at the cap after insert? 3 > 2
    assert out["evicted"] == 1 and len(store.list(scope)) == 2


@pytest.mark.clause("MEM-CAP.1")
def test_absent_cap_means_the_server_default(make_store: StoreFactory) -> None:
    s = make_store(db=":memory:", cap_default=3)
    scope = unique_scope()
    out = s.write(scope, *[fact(f"default cap {i}") for i in range(5)])
    assert out["evicted"] == 2 and len(s.list(scope)) == 3
    out = s.write(scope, fact("bigger cap"), cap=10)
    assert out["evicted"] == 0 and len(s.list(scope)) == 4
    out = s.write(scope, fact("null cap"), cap=None)
    assert out["evicted"] == 2 and len(s.list(scope)) == 3


@pytest.mark.clause("MEM-CAP.1")
def test_nothing_is_evicted_at_the_cap(store: Store, scope: str) -> None:
    out = store.write(scope, *[fact(f"exactly {i}") for i in range(4)], cap=4)
    assert out["evicted"] == 0 and len(store.list(scope)) == 4
    assert store.clock() >= T0
