"""Differential property: random operation sequences give the same answers from the bundled
store (over HTTP, injected clock) and from the reference model (``reference.memory.store``).

Where the spec allows several answers (ties in a ranking) the model's ``is_allowed_ranking``
judges the store's answer, and the model is then advanced with the store's pick so both stay
in lockstep.  Scopes hold at most a few dozen records, so the prefilter hands the engine every
match and the answers must be exactly the engine's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.judge import is_allowed_ranking
from reference.memory.records import MemoryRecord
from reference.memory.store import (
    active_records,
    empty_store,
    store_forget,
    store_list,
    store_write,
)
from tests.common.memory_store import Store, unique_scope

WORDS = ["deploy", "Deploy", "staging", "main", "npm", "yarn", "db", "café", "x", "a1", "run"]
SEPARATORS = [" ", "  ", "\t", " - ", ", ", "\n"]


def from_wire(d: dict[str, Any]) -> MemoryRecord:
    """Parse a wire record independently of the server's serializer."""
    known = {
        "id",
        "scopeKey",
        "kind",
        "text",
        "keywords",
        "sourceThreadKey",
        "sourceRunId",
        "createdAt",
        "lastUsedAt",
        "useCount",
        "confidence",
        "supersedes",
        "status",
    }
    assert set(d) <= known, set(d) - known
    assert None not in d.values()
    return MemoryRecord(
        id=d["id"],
        scope_key=d["scopeKey"],
        kind=d["kind"],
        text=d["text"],
        keywords=tuple(d["keywords"]),
        source_thread_key=d["sourceThreadKey"],
        source_run_id=d.get("sourceRunId"),
        created_at=d["createdAt"],
        last_used_at=d.get("lastUsedAt"),
        use_count=d["useCount"],
        confidence=d.get("confidence"),
        supersedes=d.get("supersedes"),
        status=d["status"],
    )


@st.composite
def texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    out = words[0]
    for w in words[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + w
    return draw(st.sampled_from(["", " "])) + out + draw(st.sampled_from(["", " ", "."]))


def candidates(scope: str) -> st.SearchStrategy[dict[str, Any]]:
    ref = st.one_of(
        st.integers(1, 12).map(lambda n: f"mem:{scope}:{n}"),
        st.just(""),
        st.just("mem:org:elsewhere:1"),
    )
    return st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["fact", "summary"]),
            "text": texts(),
            "sourceThreadKey": st.sampled_from(["t1", "slack:C1/2"]),
        },
        optional={
            "keywords": st.lists(st.sampled_from(WORDS), max_size=3),
            "sourceRunId": st.sampled_from(["run-1", ""]),
            "confidence": st.sampled_from([0, 0.6, 1, 0.75]),
            "supersedes": ref,
        },
    )


def to_candidate(c: dict[str, Any]) -> Any:
    from reference.memory.records import MemoryCandidate

    kws = c.get("keywords")
    return MemoryCandidate(
        kind=c["kind"],
        text=c["text"],
        source_thread_key=c["sourceThreadKey"],
        keywords=tuple(kws) if kws is not None else None,
        source_run_id=c.get("sourceRunId"),
        confidence=float(c["confidence"]) if "confidence" in c else None,
        supersedes=c.get("supersedes"),
    )


@pytest.mark.clause(
    "MEM-SEAM.2",
    "MEM-STORE.2",
    "MEM-STORE.3",
    "MEM-STORE.7",
    "MEM-STORE.8",
    "MEM-WRITE.6",
    "MEM-WRITE.7",
    "MEM-CAP.1",
    "MEM-CAP.2",
    "MEM-RECORD.4",
)
@given(data=st.data())
def test_the_store_answers_like_the_model(store: Store, data: st.DataObject) -> None:
    scope = unique_scope()
    model = empty_store()
    n_ops = data.draw(st.integers(1, 14), label="ops")
    for _ in range(n_ops):
        now = store.clock.advance(data.draw(st.sampled_from([0, 1, 1000, 86_400_000])))
        op = data.draw(st.sampled_from(["write", "write", "retrieve", "list", "forget"]))
        if op == "write":
            cands = data.draw(st.lists(candidates(scope), max_size=4), label="batch")
            body: dict[str, Any] = {"scopeKey": scope, "records": cands}
            cap = data.draw(st.one_of(st.none(), st.integers(1, 6)), label="cap")
            if cap is not None:
                body["cap"] = cap
            counts = store.ok("/write", body)
            model, expected = store_write(
                model, scope, [to_candidate(c) for c in cands], now, cap if cap else 500
            )
            assert counts == {
                "ok": True,
                "inserted": expected.inserted,
                "deduped": expected.deduped,
                "superseded": expected.superseded,
                "evicted": expected.evicted,
            }
        elif op == "retrieve":
            query = data.draw(texts(), label="query")
            limit = data.draw(st.integers(1, 5), label="limit")
            got = [from_wire(r) for r in store.retrieve(scope, query, limit)]
            before = active_records(model, scope)
            assert is_allowed_ranking(before, query, limit, now, [r.id for r in got])
            bumped = {
                r.id: replace(r, last_used_at=now, use_count=r.use_count + 1)
                for r in before
                if r.id in {g.id for g in got}
            }
            assert got == [bumped[g.id] for g in got]
            from reference.memory.store import with_scope_records  # lockstep with the store's pick

            model = with_scope_records(
                model, scope, [bumped.get(r.id, r) for r in model.records(scope)]
            )
        elif op == "list":
            limit = data.draw(st.integers(1, 10), label="limit")
            list_query = data.draw(st.one_of(st.none(), texts()), label="query")
            got = [from_wire(r) for r in store.list(scope, limit, list_query)]
            assert got == store_list(model, scope, limit, list_query)
        else:
            target = data.draw(st.integers(1, 12).map(lambda n: f"mem:{scope}:{n}"))
            model, expected_ok = store_forget(model, scope, target)
            assert store.forget(scope, target) is expected_ok
    # finally, the full active set agrees
    assert [from_wire(r) for r in store.list(scope, 50)] == list(
        reversed(active_records(model, scope))
    )
