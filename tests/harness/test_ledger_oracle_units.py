"""The ledger oracle on hand-made answers: what it accepts where the spec leaves a choice, and
what it rejects — with the clause it names."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.oracle import ledger as oracle
from reference.ledger.outcome import Ok, Outcome, Refused
from reference.ledger.records import LedgerState, empty_state
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import handle
from tests.common.ledger_strategies import MODEL_EXPIRY, model_handle, result_of

T0 = 1_772_442_000_000  # 2026-03-02T09:00:00.000Z


def ctx(exact: bool = True) -> oracle.Context:
    return oracle.Context(oracle.Ids(), oracle.Times(exact=exact))


def run(calls: list[tuple[str, dict[str, Any]]]) -> tuple[LedgerState, list[Outcome]]:
    """Apply calls to the model one second apart; the outcomes."""
    state = empty_state()
    outcomes = []
    for i, (method, params) in enumerate(calls):
        state, out = handle(state, method, params, T0 + 1000 * i)
        outcomes.append(out)
    return state, outcomes


def as_target(value: Any, ids: dict[str, str]) -> Any:
    """The model's answer as a store with other ids would write it."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [as_target(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: as_target(v, ids) for k, v in value.items()}
    return value


def seeded(outcomes: list[Outcome], c: oracle.Context) -> dict[str, str]:
    """Pair every record id the model minted with a target id, as a run would have."""
    ids: dict[str, str] = {}
    for out in outcomes:
        if isinstance(out, Ok) and isinstance(out.result, dict) and "id" in out.result:
            mid = str(out.result["id"])
            ids.setdefault(mid, f"t-{len(ids) + 1:04d}-{mid[:4]}")
            c.ids.link(mid, ids[mid])
    return ids


# --------------------------------------------------------------------------- correspondences


@pytest.mark.clause("LED-REC.3")
def test_the_id_bijection_refuses_reuse_in_both_directions() -> None:
    ids = oracle.Ids()
    assert ids.link("m1", "t1") is None
    assert ids.link("m1", "t1") is None
    assert ids.link("m2", "t1") is not None  # one target id for two records
    assert ids.link("m1", "t2") is not None  # one record under two ids
    assert ids.link("m3", "") is not None
    assert ids.link("m3", 7) is not None


@pytest.mark.clause("LED-INT.3", "LED-GATE.8", "LED-WIRE.5")
def test_the_monotone_time_map_keeps_instants_one_to_one_and_in_order() -> None:
    times = oracle.Times(exact=False)
    assert times.link(10, 1000) is None
    assert times.link(30, 1500) is None
    assert times.link(10, 1000) is None
    assert times.link(10, 1001) is not None  # one event, two instants
    assert times.link(20, 1500) is not None  # a later event may not share an instant ...
    assert times.link(20, 999) is not None  # ... nor come before an earlier one
    assert times.link(20, 1000) is not None  # ... nor share the earlier one's
    assert times.link(20, 1200) is None
    assert times.to_target(25) == 1200  # reads like the instant before it
    assert times.to_target(5) == 999
    exact = oracle.Times(exact=True)
    assert exact.link(10, 10) is None and exact.link(10, 11) is not None


# --------------------------------------------------------------------------- records


@pytest.mark.clause("LED-WIRE.4", "LED-WIRE.5", "LED-REC.6", "LED-INT.1", "LED-REC.8")
def test_a_record_is_compared_field_by_field_absent_is_not_null() -> None:
    _, outs = run([("memory/save_memory_record", {"body": "  hi  "})])
    c = ctx()
    ids = seeded(outs, c)
    good = as_target(result_of(outs[0]), ids)
    assert oracle.judge("memory/save_memory_record", outs[0], 200, good, c).verdict == "pass"

    def verdict(mutate: Any) -> oracle.Judgement:
        body = copy.deepcopy(good)
        mutate(body)
        return oracle.judge("memory/save_memory_record", outs[0], 200, body, c)

    j = verdict(lambda b: b.update(validTo=None))
    assert j.verdict == "diverge" and "LED-WIRE.4" in j.clauses
    j = verdict(lambda b: b.update(body="  hi  "))
    assert j.verdict == "diverge" and "LED-REC.6" in j.clauses
    j = verdict(lambda b: b.update(createdAt=format_rfc3339(T0).replace(".000Z", "+01:00")))
    assert j.verdict == "diverge" and "LED-WIRE.5" in j.clauses  # not UTC
    j = verdict(lambda b: b.update(createdAt=format_rfc3339(T0).replace("T", "_")))
    assert j.verdict == "diverge" and "LED-WIRE.5" in j.clauses
    j = verdict(lambda b: b.pop("updatedAt"))
    assert j.verdict == "diverge" and "LED-WIRE.4" in j.clauses
    j = verdict(lambda b: b.update(superseded_by="x"))
    assert j.verdict == "pass"  # a field the spec does not name is allowed (LED-WIRE.4)
    j = verdict(lambda b: b.update(confidenceBps=None))
    assert j.verdict == "diverge" and "LED-WIRE.4" in j.clauses  # a named field is never null
    j = verdict(lambda b: b.update(validFrom=format_rfc3339(T0 + 1)))
    assert j.verdict == "diverge" and "LED-INT.1" in j.clauses
    # a save without a kind: another default is the reference's point, not the seed's
    j = verdict(lambda b: b.update(kind="fact"))
    assert j.verdict == "diverge" and j.clauses == ("LED-REC.8",)
    # an untrimmed body: storing it trimmed is the reference's choice
    j = verdict(lambda b: b.update(body="  hi  "))
    assert j.clauses == ("LED-REC.6",)


@pytest.mark.clause("LED-REC.2", "LED-REC.8")
def test_a_kind_the_call_named_is_the_seeds_kind_rule() -> None:
    _, outs = run([("memory/save_memory_record", {"body": "x", "kind": "fact"})])
    c = ctx()
    ids = seeded(outs, c)
    body = as_target(result_of(outs[0]), ids)
    body["kind"] = "preference"
    j = oracle.judge("memory/save_memory_record", outs[0], 200, body, c)
    assert j.verdict == "diverge" and j.clauses == ("LED-REC.2",)


# --------------------------------------------------------------------------- refusals


@pytest.mark.clause("LED-WIRE.2", "LED-WIRE.3", "LED-BUDGET.2", "LED-CRED.2", "LED-CRED.5")
def test_refusals_check_code_status_and_exact_messages() -> None:
    _, outs = run(
        [
            ("memory/save_memory_record", {"body": "x", "tags": []}),  # structural: -32602
            ("memory/save_memory_record", {"body": "x", "kind": "opinion"}),  # bad value
            ("memory/save_memory_record", {"body": "AKIAIOSFODNN7EXAMPLE"}),  # credential
        ]
    )
    structural, bad_value, credential = outs
    assert isinstance(structural, Refused) and isinstance(bad_value, Refused)

    def judge(out: Outcome, status: int, code: Any, message: Any = "nope") -> oracle.Judgement:
        body = {"error": {"code": code, "message": message}}
        return oracle.judge("memory/save_memory_record", out, status, body, ctx())

    assert judge(structural, 400, -32602).verdict == "pass"
    assert judge(structural, 409, 1000).verdict == "diverge"
    assert judge(bad_value, 400, -32602).verdict == "pass"
    assert judge(bad_value, 409, 1000).verdict == "pass"  # implementation-defined code
    assert judge(bad_value, 400, 1000).verdict == "diverge"  # 1000 travels as 409
    assert judge(bad_value, 409, True).verdict == "diverge"
    assert judge(bad_value, 409, 1000, "").verdict == "diverge"
    exact = "Memory pins cannot store credentials. Nothing was saved."
    assert judge(credential, 409, 1000, exact).verdict == "pass"
    # other words for the same refusal: only the reference sentence differs (a deviation)
    j = judge(credential, 409, 1000, "Looks like a secret.")
    assert j.verdict == "diverge" and j.clauses == ("LED-CRED.5",)
    # the credential stored: the seed's own rule is broken
    j = oracle.judge("memory/save_memory_record", credential, 200, {"id": "x"}, ctx())
    assert j.verdict == "diverge" and "LED-CRED.2" in j.clauses
    j = oracle.judge("memory/save_memory_record", credential, 409, {"error": "no"}, ctx())
    assert j.verdict == "diverge" and "LED-WIRE.3" in j.clauses


@pytest.mark.clause("LED-WIRE.6")
def test_no_answer_is_indeterminate_and_garbage_is_a_divergence() -> None:
    _, outs = run([("memory/save_memory_record", {"body": "x"})])
    j = oracle.judge(
        "memory/save_memory_record", outs[0], None, None, ctx(), transport_error="timeout"
    )
    assert j.verdict == "indeterminate" and "timeout" in j.reason
    j = oracle.judge("memory/save_memory_record", outs[0], 200, None, ctx(), body_error="not JSON")
    assert j.verdict == "diverge" and "LED-WIRE.6" in j.clauses
    j = oracle.judge("memory/save_memory_record", outs[0], 500, {"error": "x"}, ctx())
    assert j.verdict == "diverge"
    j = oracle.judge("memory/save_memory_record", outs[0], 200, ["not", "a", "record"], ctx())
    assert j.verdict == "diverge"


# --------------------------------------------------------------------------- listings


def _listing_setup(n: int) -> tuple[LedgerState, list[Outcome]]:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory/save_memory_record", {"body": f"pin {i}"}) for i in range(n)
    ]
    return run(calls)


@pytest.mark.clause("LED-LIST.2")
def test_listing_order_newest_first_ties_unordered() -> None:
    # Three records, the last two stamped at the same instant (a tie).
    state = empty_state()
    state, a = handle(state, "memory/save_memory_record", {"body": "a"}, T0)
    state, b = handle(state, "memory/save_memory_record", {"body": "b"}, T0 + 1000)
    state, c_ = handle(state, "memory/save_memory_record", {"body": "c"}, T0 + 1000)
    _, listing = handle(
        state, "memory/list_memory_records", {"scopeKey": "account:local"}, T0 + 2000
    )
    c = ctx()
    ids = seeded([a, b, c_], c)
    assert isinstance(listing, Ok)
    want = as_target(listing.result, ids)
    got = copy.deepcopy(want)
    got["records"][0], got["records"][1] = got["records"][1], got["records"][0]  # swap the tie
    assert oracle.judge("memory/list_memory_records", listing, 200, got, c.copy()).verdict == "pass"
    got = copy.deepcopy(want)
    got["records"].reverse()  # oldest first
    j = oracle.judge("memory/list_memory_records", listing, 200, got, c.copy())
    assert j.verdict == "diverge" and "LED-LIST.2" in j.clauses
    got = copy.deepcopy(want)
    got["records"].pop()  # a record missing
    assert (
        oracle.judge("memory/list_memory_records", listing, 200, got, c.copy()).verdict == "diverge"
    )


@pytest.mark.clause("LED-LIST.2")
def test_listing_cut_at_50_admits_any_member_of_the_straddling_tie() -> None:
    state = empty_state()
    outs: list[Outcome] = []
    for i in range(49):
        state, out = handle(state, "memory/save_memory_record", {"body": f"old {i}"}, T0 + i)
        outs.append(out)
    for i in range(3):  # three records tie at the cut (positions 50-52 of the order)
        state, out = handle(state, "memory/save_memory_record", {"body": f"tie {i}"}, T0 - 10)
        outs.append(out)
    _, listing = handle(state, "memory/list_memory_records", {"scopeKey": "account:local"}, T0 + 99)
    assert isinstance(listing, Ok)
    rows = sorted((r for r in state.records), key=lambda r: (r.updated_at, r.seq), reverse=True)
    from reference.ledger.wire import record_to_wire

    full = [record_to_wire(r) for r in rows]
    c = ctx()
    ids = seeded(outs, c)
    want = as_target(listing.result, ids)
    assert [r["body"] for r in want["records"][-1:]] == ["tie 2"]
    other_tie = as_target(full[-1], ids)  # "tie 0": not in the model's pick
    got = copy.deepcopy(want)
    got["records"][-1] = other_tie
    j = oracle.judge("memory/list_memory_records", listing, 200, got, c.copy(), full_listing=full)
    assert j.verdict == "pass", j.reason
    got = copy.deepcopy(want)
    got["records"] = got["records"][:49] + [copy.deepcopy(got["records"][0])]
    j = oracle.judge("memory/list_memory_records", listing, 200, got, c.copy(), full_listing=full)
    assert j.verdict == "diverge"
    got = copy.deepcopy(want)
    got["records"].append(other_tie)  # 51 records
    j = oracle.judge("memory/list_memory_records", listing, 200, got, c.copy(), full_listing=full)
    assert j.verdict == "diverge" and "LED-LIST.2" in j.clauses


@pytest.mark.clause("LED-ASOF.1", "LED-ASOF.2", "LED-ASOF.3", "LED-FORGET.3")
def test_history_read_is_a_set_and_tombstones_may_be_left_out() -> None:
    state, outs = run(
        [
            ("memory/save_memory_record", {"body": "kept"}),
            ("memory/save_memory_record", {"body": "forgotten"}),
            ("memory/save_memory_record", {"body": "edited"}),
        ]
    )
    forgotten_id = result_of(outs[1])["id"]
    state, dead = handle(
        state, "memory/delete_memory_record", {"recordId": forgotten_id}, T0 + 5000
    )
    state, edit = handle(
        state,
        "memory/supersede_memory_record",
        {"recordId": result_of(outs[2])["id"], "body": "e2"},
        T0 + 6000,
    )
    _, read = handle(
        state,
        "memory/list_memory_records_as_of",
        {"scopeKey": "account:local", "at": format_rfc3339(T0 + 2500)},
        T0 + 7000,
    )
    assert isinstance(read, Ok) and forgotten_id in read.may_omit
    c = ctx()
    ids = seeded([*outs, dead, edit], c)
    want = as_target(read.result, ids)
    assert len(want["records"]) == 3
    shuffled = copy.deepcopy(want)
    shuffled["records"].reverse()
    assert (
        oracle.judge("memory/list_memory_records_as_of", read, 200, shuffled, c.copy()).verdict
        == "pass"
    )
    without = copy.deepcopy(want)
    without["records"] = [r for r in without["records"] if r["status"] != "deleted"]
    assert (
        oracle.judge("memory/list_memory_records_as_of", read, 200, without, c.copy()).verdict
        == "pass"
    )
    leaky = copy.deepcopy(want)
    for r in leaky["records"]:
        if r["status"] == "deleted":
            r["body"] = "forgotten"
    j = oracle.judge("memory/list_memory_records_as_of", read, 200, leaky, c.copy())
    assert j.verdict == "diverge" and "LED-FORGET.3" in j.clauses
    short = copy.deepcopy(want)
    short["records"] = [r for r in short["records"] if r["body"] != "kept"]
    j = oracle.judge("memory/list_memory_records_as_of", read, 200, short, c.copy())
    assert j.verdict == "diverge" and "LED-ASOF.1" in j.clauses


@pytest.mark.clause("LED-PACKET.3", "LED-PACKET.5")
def test_packet_short_ids_go_through_the_bijection_and_ties_are_unordered() -> None:
    from reference.ledger.packet import build_packet

    state = empty_state()
    outs = []
    for i, t in enumerate((T0, T0, T0 + 5)):  # two pins tie on every rank key
        state, out = handle(state, "memory/save_memory_record", {"body": f"pin {i}"}, t)
        outs.append(out)
    _, packet = handle(state, "_test/packet", {}, T0 + 10)
    assert isinstance(packet, Ok)
    recs = build_packet(state, "account:local").records
    ranks = [(r.id, (0, 1, -r.updated_at)) for r in recs]
    c = ctx()
    ids = {str(result_of(o)["id"]): f"{i}{i}{i}{i}abcd-target" for i, o in enumerate(outs)}
    for m, target in ids.items():
        c.ids.link(m, target)

    def lines(order: list[int]) -> dict[str, Any]:
        out = []
        for k in order:
            r = recs[k]
            out.append(f"[{ids[r.id][:8]}] {r.kind} ({r.provenance}): {r.body}")
        return {"lines": out, "text": "\n".join(out)}

    assert (
        oracle.judge("_test/packet", packet, 200, lines([0, 1, 2]), c.copy(), packet=ranks).verdict
        == "pass"
    )
    assert (
        oracle.judge("_test/packet", packet, 200, lines([0, 2, 1]), c.copy(), packet=ranks).verdict
        == "pass"
    )
    j = oracle.judge("_test/packet", packet, 200, lines([1, 0, 2]), c.copy(), packet=ranks)
    # the same lines in another order: only the order differs, a reference clause
    assert j.verdict == "diverge" and j.clauses == ("LED-PACKET.3",)
    wrong_id = lines([0, 1, 2])
    wrong_id["lines"][0] = "[zzzzzzzz]" + wrong_id["lines"][0][10:]
    wrong_id["text"] = "\n".join(wrong_id["lines"])
    j = oracle.judge("_test/packet", packet, 200, wrong_id, c.copy(), packet=ranks)
    assert j.verdict == "diverge" and "LED-PACKET.5" in j.clauses
    assert "LED-PACKET.1" in j.clauses, "a line of no record is not a reordering"
    bad_text = lines([0, 1, 2])
    bad_text["text"] = " | ".join(bad_text["lines"])
    j = oracle.judge("_test/packet", packet, 200, bad_text, c.copy(), packet=ranks)
    assert j.verdict == "diverge" and "LED-PACKET.4" in j.clauses


@pytest.mark.clause("LED-EXP.2", "LED-GATE.9")
def test_sweep_ids_are_a_set_and_batch_counts_are_exact() -> None:
    state, outs = run(
        [
            ("memory/save_memory_record", {"body": "a"}),
            ("memory/save_memory_record", {"body": "b"}),
        ]
    )
    for i, out in enumerate(outs):
        state, _ = model_handle(
            state,
            MODEL_EXPIRY,
            {"recordId": result_of(out)["id"], "expiresAt": format_rfc3339(T0 + 10_000)},
            T0 + 3000 + i,
        )
    _, sweep = handle(state, "_test/sweep", {"at": format_rfc3339(T0 + 10_000)}, T0 + 20_000)
    c = ctx()
    ids = seeded(outs, c)
    want = as_target(result_of(sweep), ids)
    rev = {"expired": list(reversed(want["expired"]))}
    assert oracle.judge("_test/sweep", sweep, 200, rev, c.copy()).verdict == "pass"
    j = oracle.judge("_test/sweep", sweep, 200, {"expired": want["expired"][:1]}, c.copy())
    assert j.verdict == "diverge" and "LED-EXP.2" in j.clauses
    _, batch = handle(
        state, "_test/consolidate", {"operations": [{"operation": "zap", "targets": ["x"]}]}, T0
    )
    good = {"applied": 0, "invalid": 0, "refused": 1, "declined": 0}
    assert oracle.judge("_test/consolidate", batch, 200, good, ctx()).verdict == "pass"
    j = oracle.judge("_test/consolidate", batch, 200, {**good, "refused": 0, "invalid": 1}, ctx())
    assert j.verdict == "diverge" and "LED-GATE.9" in j.clauses
    j = oracle.judge("_test/consolidate", batch, 200, {**good, "skipped": 0}, ctx())
    assert j.verdict == "pass"  # an unnamed extra field is allowed (LED-WIRE.6)
    short = {k: v for k, v in good.items() if k != "declined"}
    j = oracle.judge("_test/consolidate", batch, 200, short, ctx())
    assert j.verdict == "diverge"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


def _outcomes_per_method() -> list[tuple[str, Outcome]]:
    state, outs = run(
        [
            ("memory/save_memory_record", {"body": "a"}),
            ("memory/save_memory_record", {"body": "b"}),
        ]
    )
    rid = result_of(outs[0])["id"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory/save_memory_record", {"body": "c"}),
        ("memory/save_memory_record", {"body": "c", "kind": "x"}),
        ("memory/list_memory_records", {"scopeKey": "account:local"}),
        (
            "memory/list_memory_records_as_of",
            {"scopeKey": "account:local", "at": format_rfc3339(T0)},
        ),
        ("memory/supersede_memory_record", {"recordId": rid, "body": "a2"}),
        ("memory/get_consolidation_settings", {}),
        ("_test/sweep", {"at": format_rfc3339(T0)}),
        ("_test/packet", {}),
        ("_test/consolidate", {"operations": []}),
        ("memory/nope", {}),
    ]
    return [(m, handle(state, m, p, T0 + 10_000)[1]) for m, p in calls]


METHOD_OUTCOMES = _outcomes_per_method()


def _mutate(value: Any, data: st.DataObject) -> Any:
    """The value with one subtree (maybe the whole) replaced by arbitrary JSON."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        if data.draw(st.booleans()):
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: _mutate(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(value) - 1))
        return value[:i] + [_mutate(value[i], data)] + value[i + 1 :]
    return data.draw(json_values)


@pytest.mark.clause("LED-WIRE.6")
@given(
    which=st.integers(0, len(METHOD_OUTCOMES) - 1),
    status=st.sampled_from([200, 200, 200, 400, 404, 409, 500, 302]),
    data=st.data(),
)
def test_the_oracle_judges_any_answer_without_raising(
    which: int, status: int, data: st.DataObject
) -> None:
    """Near-miss answers (the model's own, with one part replaced by arbitrary JSON) and
    arbitrary ones: every one is judged, none raises."""
    method, outcome = METHOD_OUTCOMES[which]
    answer = (
        outcome.result if isinstance(outcome, Ok) else {"error": {"code": 1000, "message": "m"}}
    )
    body = _mutate(answer, data)
    j = oracle.judge(method, outcome, status, body, ctx(), full_listing=[], packet=[])
    assert j.verdict in ("pass", "diverge")
    if j.verdict == "diverge":
        assert j.reason and j.clauses
