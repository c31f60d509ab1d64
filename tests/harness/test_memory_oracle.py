"""The memory oracle's rules in isolation: tie groups, listing, eviction choices, the id
bijection, the time correspondence, and the driver's safety guards."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.oracle.memory import (
    MemoryOracle,
    SentRequest,
    TimeProblem,
    World,
)
from conformance.scenario import Step
from conformance.vocabulary import Exchange, Secret, TargetConfig
from reference.memory.judge import Problem, eviction_picks, listing_problem, retrieval_problem
from reference.memory.records import MemoryRecord
from reference.memory.store import empty_store
from tests.common.memory_harness import FakeTarget, bundled_store, make_driver


def rec(
    n: int, text: str, created: int, used: int | None = None, kws: tuple[str, ...] = ()
) -> MemoryRecord:
    return MemoryRecord(
        id=f"mem:s:{n}", scope_key="s", kind="fact", text=text, keywords=kws,
        source_thread_key="t", source_run_id=None, created_at=created, last_used_at=used,
        use_count=0, confidence=None, supersedes=None, status="active",
    )  # fmt: skip


NOW = 1_000


def _pair(p: Problem | None) -> tuple[tuple[str, ...], str] | None:
    return None if p is None else (p.clauses, p.reason)


def judge_ranking(
    active: list[MemoryRecord], query: str, limit: int, answer: list[str]
) -> tuple[tuple[str, ...], str] | None:
    """The one judge (reference.memory.judge) as the oracle asks it."""
    return _pair(retrieval_problem(active, query, limit, NOW, answer))


def refused_ranking(
    active: list[MemoryRecord], query: str, limit: int, answer: list[str]
) -> tuple[tuple[str, ...], str]:
    """The clauses and reason of an answer the judge must refuse."""
    problem = judge_ranking(active, query, limit, answer)
    assert problem is not None, answer
    return problem


def judge_listing(
    active: list[MemoryRecord], query: str | None, limit: int, answer: list[str]
) -> tuple[tuple[str, ...], str] | None:
    return _pair(listing_problem(active, query, limit, answer))


# --------------------------------------------------------------------------- ranking


@pytest.mark.clause("MEM-SCORE.5", "MEM-SCORE.1")
def test_a_tie_cut_by_the_limit_admits_any_members_in_any_order() -> None:
    active = [rec(1, "deploy a", 10), rec(2, "deploy b", 10), rec(3, "deploy c", 10)]
    for answer in (["mem:s:1", "mem:s:2"], ["mem:s:3", "mem:s:1"], ["mem:s:2", "mem:s:3"]):
        assert judge_ranking(active, "deploy", 2, answer) is None
    assert judge_ranking(active, "deploy", 2, ["mem:s:1"]) is not None  # too short
    assert judge_ranking(active, "deploy", 2, ["mem:s:1", "mem:s:1"]) is not None  # duplicate


@pytest.mark.clause("MEM-SCORE.1", "MEM-SCORE.2", "MEM-SCORE.3")
def test_keyword_match_then_recency_orders_groups() -> None:
    active = [rec(1, "deploy staging", 10), rec(2, "deploy", 20), rec(3, "deploy", 30, used=None)]
    assert judge_ranking(active, "deploy staging", 3, ["mem:s:1", "mem:s:3", "mem:s:2"]) is None
    clauses, why = refused_ranking(active, "deploy staging", 3, ["mem:s:3", "mem:s:1", "mem:s:2"])
    assert "MEM-SCORE.2" in clauses and "keyword match" in why
    clauses, why = refused_ranking(active, "deploy staging", 3, ["mem:s:1", "mem:s:2", "mem:s:3"])
    assert "MEM-SCORE.3" in clauses
    # a later use beats a later creation
    active = [rec(1, "deploy", 10, used=50), rec(2, "deploy", 20)]
    assert judge_ranking(active, "deploy", 1, ["mem:s:1"]) is None
    assert judge_ranking(active, "deploy", 1, ["mem:s:2"]) is not None


@pytest.mark.clause("MEM-SCORE.4")
def test_a_record_the_query_does_not_hit_is_never_allowed() -> None:
    active = [rec(1, "deployment", 10), rec(2, "alpha", 10)]
    assert judge_ranking(active, "deploy", 5, []) is None
    clauses, _ = refused_ranking(active, "deploy", 5, ["mem:s:1"])
    assert "MEM-SCORE.4" in clauses
    assert judge_ranking(active, "!!", 5, ["mem:s:2"]) is not None


@pytest.mark.clause("MEM-STORE.5")
def test_a_long_query_may_miss_records_hit_only_by_dropped_short_tokens() -> None:
    long_tokens = " ".join(f"longtoken{i:02d}" for i in range(30))
    active = [rec(1, "xy", 10), rec(2, "longtoken03 here", 10)]
    query = f"{long_tokens} xy"
    # longtoken03 is among the 24 longest? all 30 long tokens tie on length; first 24 kept
    assert judge_ranking(active, query, 5, ["mem:s:2"]) is None, "xy may be dropped"
    assert judge_ranking(active, query, 5, ["mem:s:2", "mem:s:1"]) is None, "or kept"
    assert judge_ranking(active, query, 5, []) is not None, (
        "a record hit by a kept token must be there"
    )
    # with 24 or fewer distinct tokens nothing may be missing
    assert judge_ranking(active, "longtoken03 xy", 5, ["mem:s:2"]) is not None


@pytest.mark.clause("MEM-STORE.6")
def test_more_matches_than_the_candidate_floor_let_the_store_choose_candidates() -> None:
    # 70 matches > 50: the store may hand the engine 50 of the 60 older records only
    active = [rec(i, f"deploy item{i}", 10 if i <= 60 else 20) for i in range(1, 71)]
    older = [f"mem:s:{i}" for i in range(1, 6)]
    assert judge_ranking(active, "deploy", 5, older) is None
    assert judge_ranking(active, "deploy", 5, older[:4]) is not None, "still exactly limit records"
    # with only 45 older records, any 50 candidates hold a newer one that must rank first
    active = [rec(i, f"deploy item{i}", 10 if i <= 45 else 20) for i in range(1, 71)]
    assert judge_ranking(active, "deploy", 5, older) is not None
    assert (
        judge_ranking(active, "deploy", 5, ["mem:s:46", "mem:s:1", "mem:s:2", "mem:s:3", "mem:s:4"])
        is not None
    ), "every 50-candidate set holds more newer records than one"


# --------------------------------------------------------------------------- listing


@pytest.mark.clause("MEM-STORE.7")
def test_listing_is_exactly_newest_first_filter_then_limit() -> None:
    active = [rec(1, "alpha old", 1), rec(2, "beta", 2), rec(3, "alpha new", 3)]
    assert judge_listing(active, None, 2, ["mem:s:3", "mem:s:2"]) is None
    assert judge_listing(active, None, 2, ["mem:s:2", "mem:s:3"]) is not None
    assert judge_listing(active, None, 2, ["mem:s:3"]) is not None
    assert judge_listing(active, "alpha", 5, ["mem:s:3", "mem:s:1"]) is None
    assert judge_listing(active, "alpha", 5, ["mem:s:3"]) is not None
    assert judge_listing(active, "alpha", 5, ["mem:s:3", "mem:s:2", "mem:s:1"]) is not None
    assert judge_listing(active, "...", 5, []) is None


# --------------------------------------------------------------------------- eviction


@pytest.mark.clause("MEM-CAP.2")
def test_eviction_choices_are_every_pick_among_equal_keys() -> None:
    active = [rec(1, "a", 10), rec(2, "b", 10), rec(3, "c", 10), rec(4, "d", 5, used=20)]
    picks = {frozenset(p) for p in eviction_picks(active, 2)}
    assert picks == {
        frozenset({"mem:s:1", "mem:s:2"}),
        frozenset({"mem:s:1", "mem:s:3"}),
        frozenset({"mem:s:2", "mem:s:3"}),
    }
    older = [rec(1, "a", 5), rec(2, "b", 10), rec(3, "c", 10)]
    assert {frozenset(p) for p in eviction_picks(older, 2)} == {
        frozenset({"mem:s:1", "mem:s:2"}),
        frozenset({"mem:s:1", "mem:s:3"}),
    }


# --------------------------------------------------------------------------- time correspondence


@pytest.mark.clause("MEM-STORE.11", "MEM-RECORD.3")
def test_time_correspondence_is_consistent_and_ordered_per_scope() -> None:
    w = World(empty_store())
    w.observe_time("s", 100, 5000, "createdAt")
    w.observe_time("s", 100, 5000, "createdAt again")
    w.observe_time("s", 200, 5003, "later event")
    with pytest.raises(TimeProblem) as same:
        w.observe_time("s", 100, 5001, "createdAt changed")
    assert "MEM-STORE.11" in same.value.clauses
    with pytest.raises(TimeProblem):
        w.observe_time("s", 150, 5003, "equal stamp for a distinct event")
    with pytest.raises(TimeProblem):
        w.observe_time("s", 300, 4999, "clock ran backwards")
    w.observe_time("other", 150, 1, "another scope is not compared")


# --------------------------------------------------------------------------- the oracle on answers


def _sent(path: str, body: dict[str, Any]) -> SentRequest:
    import json

    raw = json.dumps(body).encode()
    return SentRequest("POST", path, body, raw, str(len(raw)), True)


def _ex(status: int | None, body: object, error: str | None = None) -> Exchange:
    return Exchange("POST", "/x", None, status, body, transport_error=error)


def _wire(rid: str, text: str, created: int, **extra: object) -> dict[str, Any]:
    r = {"id": rid, "scopeKey": "org:t", "kind": "fact", "text": text, "keywords": [text],
         "sourceThreadKey": "t", "createdAt": created, "useCount": 0,
         "status": "active"}  # fmt: skip
    r.update(extra)
    return r


@pytest.mark.clause("MEM-STORE.9", "MEM-WIRE.16", "MEM-RECORD.1")
def test_ids_are_matched_by_content_and_never_reused() -> None:
    o = MemoryOracle()
    w = {
        "scopeKey": "org:t",
        "records": [
            {"kind": "fact", "text": "alpha", "sourceThreadKey": "t", "keywords": ["alpha"]}
        ],
    }
    j = o.judge(
        _sent("/write", w),
        _ex(200, {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}),
        1000,
    )
    assert j.verdict == "pass"
    o.commit(j)
    listing = _sent("/list", {"scopeKey": "org:t", "limit": 5})
    good = o.judge(listing, _ex(200, {"records": [_wire("mem:org:t:41", "alpha", 77)]}), 1010)
    assert good.verdict == "pass", good.reason
    o.commit(good)
    assert o.worlds[0].m2t == {"mem:org:t:1": "mem:org:t:41"}
    # the same record under another id
    j = o.judge(listing, _ex(200, {"records": [_wire("mem:org:t:42", "alpha", 77)]}), 1020)
    assert j.verdict == "diverge"
    # an id of another scope
    j = o.judge(listing, _ex(200, {"records": [_wire("mem:org:u:41", "alpha", 77)]}), 1020)
    assert j.verdict == "diverge" and "MEM-STORE.9" in j.clauses
    # null for an optional field
    j = o.judge(
        listing, _ex(200, {"records": [_wire("mem:org:t:41", "alpha", 77, sourceRunId=None)]}), 1020
    )
    assert j.verdict == "diverge" and "null" in j.reason
    # createdAt changed between answers
    j = o.judge(listing, _ex(200, {"records": [_wire("mem:org:t:41", "alpha", 78)]}), 1020)
    assert j.verdict == "diverge" and "MEM-STORE.11" in j.clauses


@pytest.mark.clause("MEM-WRITE.7", "MEM-CAP.1", "MEM-CAP.2")
def test_a_batch_that_dedups_against_its_own_evicted_insert_forks_the_eviction() -> None:
    o = MemoryOracle()
    batch = [{"kind": "fact", "text": t, "sourceThreadKey": "t"} for t in ("beta!", "x", "beta!")]
    body = {"scopeKey": "org:t", "records": batch, "cap": 1}
    counts = {"ok": True, "inserted": 2, "deduped": 1, "superseded": 0, "evicted": 1}
    j = o.judge(_sent("/write", body), _ex(200, counts), 1000)
    assert j.verdict == "pass", j.reason
    o.commit(j)
    assert len(o.worlds) == 2, "either never-used record of the batch may be the one evicted"
    listing = _sent("/list", {"scopeKey": "org:t", "limit": 5})
    kept_x = o.judge(
        listing, _ex(200, {"records": [_wire("mem:org:t:2", "x", 9, keywords=["x"])]}), 1010
    )
    assert kept_x.verdict == "pass", kept_x.reason
    o.commit(kept_x)
    assert len(o.worlds) == 1
    both = o.judge(
        listing,
        _ex(
            200,
            {
                "records": [
                    _wire("mem:org:t:2", "x", 9, keywords=["x"]),
                    _wire("mem:org:t:1", "beta!", 9, keywords=["beta"], useCount=1),
                ]
            },
        ),
        1020,
    )
    assert both.verdict == "diverge"


@pytest.mark.clause("MEM-RECORD.5")
def test_keywords_of_a_record_written_without_keywords_may_not_add_tokens() -> None:
    o = MemoryOracle()
    w = {
        "scopeKey": "org:t",
        "records": [{"kind": "fact", "text": "Alpha beta", "sourceThreadKey": "t"}],
    }
    o.commit(
        o.judge(
            _sent("/write", w),
            _ex(200, {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}),
            1000,
        )
    )
    listing = _sent("/list", {"scopeKey": "org:t", "limit": 5})
    for kws in ([], ["alpha"], ["beta", "alpha"]):
        assert (
            o.judge(
                listing,
                _ex(200, {"records": [_wire("mem:org:t:1", "Alpha beta", 5, keywords=kws)]}),
                1010,
            ).verdict
            == "pass"
        )
    j = o.judge(
        listing,
        _ex(200, {"records": [_wire("mem:org:t:1", "Alpha beta", 5, keywords=["gamma"])]}),
        1010,
    )
    assert j.verdict == "diverge" and "MEM-RECORD.5" in j.clauses


@pytest.mark.clause("MEM-WIRE.8", "MEM-WIRE.20", "MEM-WIRE.3", "MEM-WIRE.11")
def test_status_and_error_shape_are_judged() -> None:
    o = MemoryOracle()
    bad = _sent("/retrieve", {"scopeKey": "org:t", "query": "x", "limit": 0})
    assert o.judge(bad, _ex(400, {"error": "limit must be 1-50"}), 1).verdict == "pass"
    # the seed asks for "a reason"; its exact shape and naming the field are the reference's
    j = o.judge(bad, _ex(400, {"error": "bad request"}), 1)
    assert j.verdict == "diverge" and j.clauses == ("MEM-WIRE.20",), "a 400 names the field"
    j = o.judge(bad, _ex(400, {"error": "limit bad", "detail": 1}), 1)
    assert j.verdict == "diverge" and j.clauses == ("MEM-WIRE.20",)
    j = o.judge(bad, _ex(400, {"message": "limit must be 1-50"}), 1)
    assert j.verdict == "diverge" and j.clauses == ("MEM-WIRE.20",)
    j = o.judge(bad, _ex(400, {"code": 400}), 1)  # no reason at all: the seed's own rule
    assert j.verdict == "diverge" and j.clauses == ("MEM-WIRE.8",)
    assert o.judge(bad, _ex(200, {"records": []}), 1).verdict == "diverge"
    assert o.judge(bad, _ex(500, {"error": "boom"}), 1).verdict == "diverge"
    assert o.judge(bad, _ex(None, None, "timeout after 1s"), 1).verdict == "indeterminate"
    noauth = SentRequest(
        "POST",
        "/list",
        {"scopeKey": "org:t", "limit": 1},
        b'{"scopeKey":"org:t","limit":1}',
        "30",
        False,
    )
    assert o.judge(noauth, _ex(401, {"error": "unauthorized"}), 1).verdict == "pass"
    j = o.judge(noauth, _ex(200, {"records": []}), 1)
    assert j.verdict == "diverge" and "MEM-WIRE.3" in j.clauses


# --------------------------------------------------------------------------- the driver's guards


@pytest.mark.clause("MEM-SCOPE.5")
def test_a_scope_key_outside_the_run_is_never_sent() -> None:
    with FakeTarget("ok-empty") as fake:
        d = make_driver(fake.url)
        d.begin("guard")
        before = len(fake.requests)
        for step in (
            Step(op="write", args={"scopeKey": "org:acme", "records": []}),
            Step(op="forget", args={"scopeKey": "user:slack:U1", "id": "mem:user:slack:U1:1"}),
            Step(
                op="raw",
                args={
                    "method": "POST",
                    "path": "/list",
                    "body": {"scopeKey": "org:acme", "limit": 5},
                },
            ),
        ):
            out = d.execute(0, step)
            assert out.verdict == "skip" and "not a key of this run" in out.reason
        assert len(fake.requests) == before
        d.close()


@pytest.mark.clause("MEM-STORE.9")
def test_a_guessed_id_in_the_requests_own_scope_is_refused() -> None:
    with bundled_store() as url:
        d = make_driver(url)
        d.begin("guess")
        out = d.execute(
            0, Step(op="forget", args={"scopeKey": "{scope:a}", "id": "mem:{scope:a}:1"})
        )
        assert out.verdict == "skip" and "implementation-defined" in out.reason
        out = d.execute(
            1, Step(op="forget", args={"scopeKey": "{scope:a}", "id": "mem:{scope:b}:1"})
        )
        assert out.verdict == "pass", (
            "another scope's id names nothing here, whatever the numbering"
        )
        d.close()


@pytest.mark.clause("MEM-WIRE.3")
def test_the_token_never_prints() -> None:
    s = Secret("s3cr3t-value")
    cfg = TargetConfig("http://127.0.0.1:1", s)
    assert "s3cr3t" not in f"{s} {s!r} {cfg} {cfg!r} {cfg.public()}"
    assert s.reveal() == "s3cr3t-value"


# ------------------------------------------------------------------------- open points, end to end


def _written(o: MemoryOracle, text: str, t: int, **rec: object) -> None:
    body = {
        "scopeKey": "org:t",
        "records": [{"kind": "fact", "text": text, "sourceThreadKey": "t", **rec}],
    }
    counts = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    j = o.judge(_sent("/write", body), _ex(200, counts), t)
    assert j.verdict == "pass", j.reason
    o.commit(j)


LIST = _sent("/list", {"scopeKey": "org:t", "limit": 5})


@pytest.mark.clause("MEM-RECORD.5", "MEM-RECORD.3")
@pytest.mark.parametrize(
    ("shown", "ok"),
    [(["deploy", "with", "make"], True), ([], True), (["make"], True), (["staging"], False)],
)
def test_keywords_of_an_unkeyworded_record_pass_as_given_or_derived(
    shown: list[str], ok: bool
) -> None:
    o = MemoryOracle()
    _written(o, "Deploy with make", 1000)
    j = o.judge(
        LIST,
        _ex(200, {"records": [_wire("mem:org:t:0", "Deploy with make", 5, keywords=shown)]}),
        1010,
    )
    assert (j.verdict == "pass") is ok, j.reason
    if ok:  # and the choice holds for the record's life
        o.commit(j)
        other = [*shown, "deploy"] if shown != ["deploy", "with", "make"] else []
        j = o.judge(
            LIST,
            _ex(200, {"records": [_wire("mem:org:t:0", "Deploy with make", 5, keywords=other)]}),
            1020,
        )
        assert j.verdict == "diverge" and "MEM-RECORD.3" in j.clauses


@pytest.mark.clause("MEM-RECORD.4", "MEM-STORE.11")
@pytest.mark.parametrize(("last", "ok"), [(None, True), (5, True), (6, False)])
def test_last_use_of_a_fresh_record_absent_or_its_creation_time(last: int | None, ok: bool) -> None:
    o = MemoryOracle()
    _written(o, "alpha", 1000, keywords=["alpha"])
    extra = {} if last is None else {"lastUsedAt": last}
    j = o.judge(LIST, _ex(200, {"records": [_wire("mem:org:t:7", "alpha", 5, **extra)]}), 1010)
    assert (j.verdict == "pass") is ok, j.reason


@pytest.mark.clause("MEM-RECORD.4", "MEM-WRITE.3")
@pytest.mark.parametrize(("pointer", "ok"), [("mem:org:t:1", True), ("mem:org:t:2", False)])
def test_a_resolved_supersedes_names_the_superseded_records_target_id(
    pointer: str, ok: bool
) -> None:
    o = MemoryOracle()
    listed: list[dict[str, Any]] = []
    for n, text, t, created in ((1, "alpha", 1000, 5), (2, "beta", 1010, 6)):
        _written(o, text, t, keywords=[text])
        listed.insert(0, _wire(f"mem:org:t:{n}", text, created))  # newest first
        j = o.judge(LIST, _ex(200, {"records": listed}), t + 5)
        assert j.verdict == "pass", j.reason
        o.commit(j)
    body = {
        "scopeKey": "org:t",
        "records": [{"kind": "fact", "text": "gamma", "sourceThreadKey": "t",
                     "keywords": ["gamma"], "supersedes": "mem:org:t:1"}],
    }  # fmt: skip
    counts = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 1, "evicted": 0}
    j = o.judge(_sent("/write", body), _ex(200, counts), 1020)
    assert j.verdict == "pass", j.reason
    o.commit(j)
    gamma = _wire("mem:org:t:3", "gamma", 7, supersedes=pointer)
    j = o.judge(LIST, _ex(200, {"records": [gamma, _wire("mem:org:t:2", "beta", 6)]}), 1030)
    assert (j.verdict == "pass") is ok, j.reason
    if not ok:
        assert "MEM-RECORD.4" in j.clauses and "superseded record is mem:org:t:1" in j.reason


@pytest.mark.clause("MEM-STORE.3", "MEM-WIRE.11")
@pytest.mark.parametrize(
    ("beta_bumped", "alpha_bumped", "ok"),
    [(True, True, True), (False, False, True), (True, False, False), (False, True, False)],
)
def test_a_retrieve_shows_usage_all_before_or_all_after_its_bump(
    beta_bumped: bool, alpha_bumped: bool, ok: bool
) -> None:
    o = MemoryOracle()
    _written(o, "alpha", 1000, keywords=["deploy"])
    _written(o, "beta", 1010, keywords=["deploy"])
    alpha = _wire("mem:org:t:1", "alpha", 5, keywords=["deploy"])
    beta = _wire("mem:org:t:2", "beta", 6, keywords=["deploy"])
    j = o.judge(LIST, _ex(200, {"records": [beta, alpha]}), 1015)
    assert j.verdict == "pass", j.reason
    o.commit(j)
    bump = {"useCount": 1, "lastUsedAt": 8}
    shown = [
        {**beta, **bump} if beta_bumped else beta,
        {**alpha, **bump} if alpha_bumped else alpha,
    ]
    retrieve = _sent("/retrieve", {"scopeKey": "org:t", "query": "deploy", "limit": 5})
    j = o.judge(retrieve, _ex(200, {"records": shown}), 1020)
    assert (j.verdict == "pass") is ok, j.reason


@pytest.mark.clause("MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.15")
def test_result_objects_may_carry_members_the_seed_does_not_name() -> None:
    o = MemoryOracle()
    body = {
        "scopeKey": "org:t",
        "records": [{"kind": "fact", "text": "alpha", "sourceThreadKey": "t"}],
    }
    counts = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    j = o.judge(_sent("/write", body), _ex(200, {**counts, "active": 1, "tookMs": 3}), 1000)
    assert j.verdict == "pass", j.reason
    o.commit(j)
    j = o.judge(_sent("/write", body), _ex(200, {**counts, "inserted": 2, "active": 1}), 1010)
    assert j.verdict == "diverge" and "MEM-WRITE.1" in j.clauses  # named members stay exact
    j = o.judge(LIST, _ex(200, {"records": [], "page": 1}), 1020)
    assert j.verdict == "diverge"  # the record is still owed
    rec = _wire("mem:org:t:1", "alpha", 5, keywords=["alpha"])
    j = o.judge(LIST, _ex(200, {"records": [rec], "page": 1}), 1020)
    assert j.verdict == "pass", j.reason
    forget = _sent("/forget", {"scopeKey": "org:t", "id": "mem:org:t:9"})
    j = o.judge(forget, _ex(200, {"ok": True, "forgotten": False, "scope": "org:t"}), 1030)
    assert j.verdict == "pass", j.reason


@pytest.mark.clause("MEM-WIRE.2")
@pytest.mark.parametrize("status", [404, 405])
def test_post_healthz_may_be_404_or_405(status: int) -> None:
    sent = SentRequest("POST", "/healthz", {}, b"{}", "2", False)
    j = MemoryOracle().judge(sent, _ex(status, {"error": "no"}), 1000)
    assert j.verdict == "pass", j.reason
    j = MemoryOracle().judge(sent, _ex(401, {"error": "no"}), 1000)
    assert j.verdict == "diverge"


@pytest.mark.clause("MEM-WIRE.8")
@pytest.mark.parametrize(
    ("reason", "ok"),
    [("limit must be an integer from 1 to 50", True),
     ("Bad request: the value of limit is not accepted.", True),
     ("invalid request", False)],
)  # fmt: skip
def test_any_400_wording_that_names_the_field(reason: str, ok: bool) -> None:
    sent = _sent("/list", {"scopeKey": "org:t", "limit": 0})
    j = MemoryOracle().judge(sent, _ex(400, {"error": reason}), 1000)
    assert (j.verdict == "pass") is ok, j.reason


@pytest.mark.clause("MEM-WIRE.10", "MEM-WIRE.12")
@pytest.mark.parametrize(
    ("status", "body"), [(200, None), (400, {"error": "records[0].sourceRunId must not be null"})]
)
def test_a_null_optional_is_absent_or_refused(status: int, body: object) -> None:
    sent = _sent(
        "/write",
        {
            "scopeKey": "org:t",
            "records": [{"kind": "fact", "text": "a", "sourceThreadKey": "t", "sourceRunId": None}],
        },
    )
    counts = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    j = MemoryOracle().judge(sent, _ex(status, body or counts), 1000)
    assert j.verdict == "pass", j.reason


@pytest.mark.clause("MEM-CAP.1")
@pytest.mark.parametrize(("evicted", "verdict"), [(0, "pass"), (1, "diverge")])
def test_an_empty_batch_with_a_lower_cap_is_a_no_op(evicted: int, verdict: str) -> None:
    o = MemoryOracle()
    _written(o, "alpha", 1000, keywords=["alpha"])
    _written(o, "beta", 1010, keywords=["beta"])
    counts = {"ok": True, "inserted": 0, "deduped": 0, "superseded": 0, "evicted": evicted}
    j = o.judge(
        _sent("/write", {"scopeKey": "org:t", "records": [], "cap": 1}), _ex(200, counts), 1020
    )
    assert j.verdict == verdict, j.reason
    if verdict == "diverge":
        assert "MEM-CAP.1" in j.clauses


@pytest.mark.clause("MEM-STORE.11", "MEM-STORE.9")
@pytest.mark.parametrize(("base", "offset"), [(0, 0), (1000, -86_400_000), (7, 10**12)])
def test_any_id_numbering_and_any_clock_offset(base: int, offset: int) -> None:
    o = MemoryOracle()
    _written(o, "alpha", 1000, keywords=["alpha"])
    _written(o, "beta", 1010, keywords=["beta"])
    a = _wire(f"mem:org:t:{base}", "alpha", 1000 + offset, keywords=["alpha"])
    b = _wire(f"mem:org:t:{base + 9}", "beta", 1010 + offset, keywords=["beta"])
    j = o.judge(LIST, _ex(200, {"records": [b, a]}), 1020)
    assert j.verdict == "pass", j.reason
    swapped = {**b, "createdAt": a["createdAt"] - 1}  # stamps out of event order
    j = o.judge(LIST, _ex(200, {"records": [swapped, a]}), 1020)
    assert j.verdict == "diverge" and "MEM-STORE.11" in j.clauses


@pytest.mark.clause("MEM-RECORD.5", "MEM-STORE.5")
def test_a_prefilter_is_judged_by_the_keywords_the_store_showed_not_the_models() -> None:
    """Two allowed choices together (keywords [] on an un-keyworded record, a full-text index
    over the raw text): the store holds no keyword ``caf``, and its index glues ``caf`` to the
    é, so leaving ``café`` out of a retrieve for ``caf`` is allowed -- the model derived the
    keyword ``caf``, but that is the model's pick of an open point, not the store's."""
    from conformance.oracle.memory.answers import as_the_store_holds
    from conformance.oracle.memory.worlds import RecMeta

    derived = rec(1, "café opens at 9", 10, kws=("caf", "opens", "at", "9"))
    state = empty_store()
    w = World(state, meta={derived.id: RecMeta(kw_given=False)})
    w.bind(derived.id, "mem:s:t1")
    # nothing shown yet: the store may hold no keywords -> judged by the text alone
    assert as_the_store_holds(w, [derived])[0].keywords == ()
    assert retrieval_problem(as_the_store_holds(w, [derived]), "caf", 5, NOW, []) is None
    # shown []: the same
    w.keywords_seen["mem:s:t1"] = ()
    assert retrieval_problem(as_the_store_holds(w, [derived]), "caf", 5, NOW, []) is None
    # shown ["caf", ...]: a keyword caf is a whole word every index holds -> must be found
    w.keywords_seen["mem:s:t1"] = ("caf", "opens", "at", "9")
    assert retrieval_problem(as_the_store_holds(w, [derived]), "caf", 5, NOW, []) is not None
    # written WITH keywords: those are the store's, whatever it showed
    w.meta[derived.id] = RecMeta(kw_given=True)
    assert as_the_store_holds(w, [derived]) == [derived]


# --------------------------------------------------------------------------- MEM-WIRE.21


def _write_with(**fields: object) -> SentRequest:
    record = {"kind": "fact", "text": "deploy notes", "sourceThreadKey": "t", **fields}
    return _sent("/write", {"scopeKey": "org:t", "records": [record]})


@pytest.mark.clause("MEM-WIRE.21", "MEM-WIRE.8")
@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"sourceThreadKey": "t" * 150}, "records[0].sourceThreadKey is too long"),
        ({"sourceRunId": "r" * 65}, "sourceRunId must be at most 64 characters"),
        ({"supersedes": "s" * 200}, "bad request"),  # names no field: still a tighter cap
        ({"keywords": ["k" * 33]}, "records[0].keywords: at most 32 characters each"),
    ],
)
def test_a_tighter_cap_than_the_reference_is_a_deviation_the_run_follows(
    fields: dict[str, object], reason: str
) -> None:
    """§16 caps these fields without a number: a store refusing a value over the floor
    (``CAP_FLOORS``) but within the reference's bound departs from MEM-WIRE.21 only; the
    model keeps its state (a refused batch writes nothing), and a second such refusal is no
    new departure."""
    oracle = MemoryOracle()
    j = oracle.judge(_write_with(**fields), _ex(400, {"error": reason}), NOW)
    assert j.verdict == "pass"
    assert j.details["departed"] == ("MEM-WIRE.21",)
    assert "tighter cap" in j.details["departure"]
    assert all(w.state == empty_store() for w in j.worlds)
    oracle.commit(j)
    again = oracle.judge(_write_with(**fields), _ex(400, {"error": reason}), NOW + 5)
    assert again.verdict == "pass" and not again.details


@pytest.mark.clause("MEM-WIRE.21", "MEM-WIRE.12")
@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"sourceThreadKey": "t" * 64}, "sourceThreadKey is too long"),  # at the floor
        ({"keywords": ["k" * 32]}, "keywords too long"),
        ({}, "no"),  # nothing over a floor
        # over a floor, but the reason names another capped field, one within its floor
        ({"sourceThreadKey": "t" * 150, "sourceRunId": "r"}, "sourceRunId is too long"),
        # over a floor, but the reason names a field no cap explains
        ({"sourceThreadKey": "t" * 150}, "records[0].kind must be fact or summary"),
    ],
)
def test_a_refusal_no_tighter_cap_explains_still_fails(
    fields: dict[str, object], reason: str
) -> None:
    """A floor is what every store must accept: a 400 for values within it, or naming a
    capped field that is within its floor, is a divergence as before."""
    j = MemoryOracle().judge(_write_with(**fields), _ex(400, {"error": reason}), NOW)
    assert j.verdict == "diverge" and not j.details


@pytest.mark.clause("MEM-WIRE.22")
@pytest.mark.parametrize(
    ("status", "verdict"), [(200, "pass"), (201, "pass"), (299, "pass"), (204, "diverge")]
)
def test_a_success_is_any_2xx_carrying_the_answer(status: int, verdict: str) -> None:
    """The seed names no success status (§19, §26 call only a non-2xx a failure): a 201 for a
    write that inserted is judged as a 200; a 204 carries no answer."""
    o = MemoryOracle()
    counts = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    body = {"scopeKey": "org:t", "records": [{"kind": "fact", "text": "a", "sourceThreadKey": "t"}]}
    j = o.judge(_sent("/write", body), _ex(status, None if status == 204 else counts), 1000)
    assert j.verdict == verdict, j.reason


@pytest.mark.clause("MEM-WIRE.22", "MEM-WIRE.8")
def test_a_2xx_never_stands_for_a_refusal() -> None:
    o = MemoryOracle()
    j = o.judge(
        _sent("/retrieve", {"scopeKey": "org:t", "query": "x", "limit": 0}),
        _ex(201, {"records": []}),
        1000,
    )
    assert j.verdict == "diverge"
