"""Each open point of the ledger spec: every accepted answer passes the oracle, and an answer
outside the accepted set is still a divergence naming its clause.

The oracle is asked as the driver asks it: against every answer ``reference.ledger.wire.allowed``
lists for the call (the model's own first); an answer passes when one of them passes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from conformance.oracle import ledger as oracle
from reference.ledger.outcome import INVALID_PARAMS, REFUSED, Ok, Outcome, Refused
from reference.ledger.records import LedgerState, empty_state
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import allowed, handle, record_to_wire

T0 = 1_772_442_000_000  # 2026-03-02T09:00:00.000Z
CRED = "Memory pins cannot store credentials. Nothing was saved."


class Ledger:
    """A model ledger built call by call, with a target's ids paired as a run pairs them."""

    def __init__(self, exact: bool = True) -> None:
        self.state: LedgerState = empty_state()
        self.ctx = oracle.Context(oracle.Ids(), oracle.Times(exact=exact))
        self.ids: dict[str, str] = {}
        self.now = T0

    def do(self, method: str, params: dict[str, Any]) -> Outcome:
        self.now += 1000
        self.state, out = handle(self.state, method, params, self.now)
        if isinstance(out, Ok) and isinstance(out.result, dict) and "id" in out.result:
            mid = str(out.result["id"])
            self.ids.setdefault(mid, f"t{len(self.ids) + 1:03d}")
            self.ctx.ids.link(mid, self.ids[mid])
            group = out.result.get("conflictGroup")
            if isinstance(group, str):
                self.ctx.groups.link(group, group)
        return out

    def mid(self, n: int) -> str:
        return list(self.ids)[n]

    def tid(self, n: int) -> str:
        return self.ids[self.mid(n)]

    def target(self, value: Any) -> Any:
        """A model value as the store writes it (its own ids)."""
        if isinstance(value, str):
            return self.ids.get(value, value)
        if isinstance(value, list):
            return [self.target(v) for v in value]
        if isinstance(value, dict):
            return {k: self.target(v) for k, v in value.items()}
        return value

    def verdict(
        self,
        method: str,
        params: dict[str, Any],
        status: int,
        body: Any | Callable[[Any], Any],
        *,
        commit: bool = False,
    ) -> oracle.Judgement:
        """Judge a target answer to ``method(params)``; ``body`` may be a function of the
        model's own answer (as the target writes it)."""
        self.now += 1000
        alts = allowed(self.state, method, params, self.now)
        if callable(body):
            first = alts[0][1]
            body = body(copy.deepcopy(self.target(first.result if isinstance(first, Ok) else None)))
        best: oracle.Judgement | None = None
        for new_state, outcome in alts:
            j = oracle.judge(method, outcome, status, body, self.ctx, full_listing=None)
            if j.verdict == "pass":
                if commit:
                    self.state = new_state
                    assert j.context is not None
                    self.ctx = j.context
                return j
            best = best or j
        assert best is not None
        return best


def refusal(code: int, message: str = "No.") -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


STATUS = {REFUSED: 409, INVALID_PARAMS: 400}


def passes(j: oracle.Judgement) -> bool:
    return j.verdict == "pass"


def diverges(j: oracle.Judgement, clause: str) -> bool:
    return j.verdict == "diverge" and clause in j.clauses


# --------------------------------------------------------------------------- times


def with_time(fmt: Callable[[str], str]) -> Callable[[Any], Any]:
    def edit(rec: Any) -> Any:
        for k in ("validFrom", "createdAt", "updatedAt"):
            rec[k] = fmt(rec[k])
        return rec

    return edit


@pytest.mark.clause("LED-WIRE.5")
@pytest.mark.parametrize(
    "fmt",
    [
        lambda t: t[:-1] + "+00:00",
        lambda t: t[:-1] + "-00:00",
        lambda t: t[:-5] + "Z",  # no fraction (the save is on a whole second)
        lambda t: t[:-1] + "000+00:00",  # microseconds
        lambda t: t[:-1] + "000000z",  # nanoseconds, lower-case z
        lambda t: t[:-3] + "Z",  # one fraction digit
    ],
    ids=["offset", "minus-zero", "no-fraction", "micro", "nano", "one-digit"],
)
def test_any_rfc3339_utc_form_of_the_instant_passes(fmt: Callable[[str], str]) -> None:
    led = Ledger()
    assert passes(led.verdict("memory/save_memory_record", {"body": "x"}, 200, with_time(fmt)))


@pytest.mark.clause("LED-WIRE.5")
def test_a_time_outside_the_allowed_forms_or_instant_diverges() -> None:
    led = Ledger()
    save = "memory/save_memory_record"
    j = led.verdict(save, {"body": "x"}, 200, with_time(lambda t: t[:-1] + "+01:00"))
    assert diverges(j, "LED-WIRE.5")  # not UTC
    j = led.verdict(save, {"body": "x"}, 200, with_time(lambda t: t.replace("T", " ")))
    assert diverges(j, "LED-WIRE.5")
    # Seconds precision stands for its second, not for the next one.
    later = with_time(lambda t: format_rfc3339(led.now + 1000)[:-5] + "Z")
    assert led.verdict(save, {"body": "x"}, 200, later).verdict == "diverge"


@pytest.mark.clause("LED-WIRE.5", "LED-INT.3")
def test_the_monotone_map_keeps_order_only_to_the_precision_shown() -> None:
    times = oracle.Times(exact=False)
    assert times.link(10, 5000, 1000) is None  # two events 3 ms apart, both shown in one second
    assert times.link(13, 5000, 1000) is None
    assert times.link(20, 5400, 1) is None  # a finer answer inside that second
    assert times.link(30, 4000, 1000) is not None  # but never a second earlier
    strict = oracle.Times(exact=False)
    assert strict.link(10, 5000) is None
    assert strict.link(13, 5000) is not None  # milliseconds on both sides: strictly ordered


# --------------------------------------------------------------------------- extra fields


@pytest.mark.clause("LED-WIRE.4", "LED-WIRE.6", "LED-CONS.2")
def test_unnamed_fields_pass_and_held_records_must_be_exact() -> None:
    led = Ledger()
    led.do("memory/save_memory_record", {"body": "a"})
    led.do("_test/propose", {"body": "b"})
    j = led.verdict("memory/save_memory_record", {"body": "c"}, 200, lambda r: {**r, "etag": "7"})
    assert passes(j)
    get = "memory/get_consolidation_settings"
    assert passes(led.verdict(get, {}, 200, lambda s: {**s, "heldRecords": 2, "rev": 1}))
    assert passes(led.verdict(get, {}, 200, lambda s: s))  # heldRecords is optional
    assert diverges(led.verdict(get, {}, 200, lambda s: {**s, "heldRecords": 1}), "LED-CONS.2")
    j = led.verdict(get, {}, 200, lambda s: {**s, "harness": None})
    assert diverges(j, "LED-CONS.2")  # a named field is never null


# --------------------------------------------------------------------------- forgetting


@pytest.mark.clause("LED-FORGET.3")
def test_the_delete_answer_may_carry_the_body_but_no_later_read() -> None:
    led = Ledger()
    led.do("memory/save_memory_record", {"body": "my secret hobby"})
    rid = led.mid(0)
    j = led.verdict(
        "memory/delete_memory_record",
        {"recordId": rid},
        200,
        lambda r: {**r, "body": "my secret hobby"},
        commit=True,
    )
    assert passes(j)
    at = {"scopeKey": "account:local", "at": format_rfc3339(T0 + 1500)}

    def leak(result: Any) -> Any:
        for r in result["records"]:
            r["body"] = "my secret hobby"
        return result

    j = led.verdict("memory/list_memory_records_as_of", at, 200, leak)
    assert diverges(j, "LED-FORGET.3")
    assert passes(led.verdict("memory/list_memory_records_as_of", at, 200, lambda r: r))


# --------------------------------------------------------------------------- groups


@pytest.mark.clause("LED-GROUP.5")
def test_group_labels_are_paired_one_to_one_like_ids() -> None:
    led = Ledger()
    group = "_test/consolidate"
    for body in ("a", "b", "c", "d"):
        led.do("memory/save_memory_record", {"body": body})
    pair = [led.mid(0), led.mid(1)]
    led.do(group, {"operations": [{"operation": "group", "targets": pair, "subject": " Editor "}]})
    other = [led.mid(2), led.mid(3)]
    led.do(group, {"operations": [{"operation": "group", "targets": other, "subject": "Theme"}]})
    edit = "memory/supersede_memory_record"
    j = led.verdict(
        edit,
        {"recordId": led.mid(1), "body": "b2"},
        200,
        lambda r: {**r, "conflictGroup": "editor"},
        commit=True,
    )
    assert passes(j)
    j = led.verdict(
        edit,
        {"recordId": led.mid(3), "body": "d2"},
        200,
        lambda r: {**r, "conflictGroup": "editor"},
    )
    assert diverges(j, "LED-GROUP.4")  # another group under a label already taken


# --------------------------------------------------------------------------- settings


UPDATE = "memory/update_consolidation_settings"


def configured() -> Ledger:
    led = Ledger()
    led.do(UPDATE, {"mode": "off", "harness": "claude-code", "model": "haiku"})
    return led


def without(*names: str) -> Callable[[Any], Any]:
    return lambda s: {k: v for k, v in s.items() if k not in names}


@pytest.mark.clause("LED-CONS.2")
def test_an_omitted_harness_and_model_are_kept_or_cleared() -> None:
    assert passes(configured().verdict(UPDATE, {"mode": "off"}, 200, lambda s: s))
    assert passes(configured().verdict(UPDATE, {"mode": "off"}, 200, without("harness", "model")))
    j = configured().verdict(UPDATE, {"mode": "off"}, 200, lambda s: {**s, "model": "opus"})
    assert diverges(j, "LED-CONS.2")


@pytest.mark.clause("LED-CONS.2")
def test_a_blank_harness_is_refused_or_unsets() -> None:
    params = {"mode": "off", "harness": ""}
    for code in (REFUSED, INVALID_PARAMS):
        assert passes(configured().verdict(UPDATE, params, STATUS[code], refusal(code)))
    led = configured()
    j = led.verdict(
        UPDATE, params, 200, lambda s: {**without("harness")(s or {}), **_settings(led)}
    )
    assert passes(j)


def _settings(led: Ledger) -> dict[str, Any]:
    return {
        "scopeKey": "account:local",
        "mode": "off",
        "model": "haiku",
        "maxRecords": 200,
        "allowRemoval": False,
        "debounceSeconds": 600,
    }


@pytest.mark.clause("LED-WIRE.2")
def test_null_is_absent_or_invalid_params() -> None:
    params = {"mode": "off", "harness": None}
    assert passes(configured().verdict(UPDATE, params, 400, refusal(INVALID_PARAMS)))
    assert passes(configured().verdict(UPDATE, params, 200, lambda s: _settings_full()))
    assert configured().verdict(UPDATE, params, 409, refusal(REFUSED)).verdict == "diverge"
    save = {"body": "x", "kind": None}
    assert passes(Ledger().verdict("memory/save_memory_record", save, 400, refusal(INVALID_PARAMS)))
    j = Ledger().verdict(
        "memory/save_memory_record",
        save,
        200,
        lambda r: {
            "id": "t1",
            "scopeKey": "account:local",
            "kind": "preference",
            "body": "x",
            "provenance": "user_explicit",
            "status": "active",
            "validFrom": format_rfc3339(T0 + 1000),
            "createdAt": format_rfc3339(T0 + 1000),
            "updatedAt": format_rfc3339(T0 + 1000),
        },
    )
    assert passes(j)


def _settings_full() -> dict[str, Any]:
    return {**_settings(Ledger()), "harness": "claude-code"}


@pytest.mark.clause("LED-WIRE.2")
def test_an_integral_number_is_an_integer_or_refused() -> None:
    params = {"mode": "off", "maxRecords": 7.0}
    assert passes(Ledger().verdict(UPDATE, params, 200, lambda s: s))
    for code in (REFUSED, INVALID_PARAMS):
        assert passes(Ledger().verdict(UPDATE, params, STATUS[code], refusal(code)))
    j = Ledger().verdict(UPDATE, {"mode": "off", "maxRecords": 7.5}, 409, refusal(REFUSED))
    assert diverges(j, "LED-WIRE.2")  # 7.5 is no integer: -32602 only


@pytest.mark.clause("LED-CONS.2")
def test_propose_without_a_harness_or_model_is_accepted_or_refused() -> None:
    params = {"mode": "propose"}
    assert passes(Ledger().verdict(UPDATE, params, 200, lambda s: s))
    assert passes(Ledger().verdict(UPDATE, params, 409, refusal(REFUSED)))
    both = {"mode": "propose", "harness": "claude", "model": "haiku"}
    led = Ledger()
    refusals = [st for st, o in allowed(led.state, UPDATE, both, led.now) if isinstance(o, Refused)]
    # with both set only a harness the store does not offer is refused (LED-WIRE.15)
    assert refusals and all(st.departures == {"LED-WIRE.15"} for st in refusals)


# --------------------------------------------------------------------------- scopes


@pytest.mark.clause("LED-LIST.3", "LED-ASOF.3")
@pytest.mark.parametrize("scope", ["workspace:7", "   ", "legacy:global", "", "k" * 201])
def test_another_scope_lists_empty_or_is_refused(scope: str) -> None:
    for method, extra in (
        ("memory/list_memory_records", {}),
        ("memory/list_memory_records_as_of", {"at": format_rfc3339(T0)}),
    ):
        params = {"scopeKey": scope, **extra}
        assert passes(Ledger().verdict(method, params, 200, {"scopeKey": scope, "records": []}))
        for code in (REFUSED, INVALID_PARAMS):
            assert passes(Ledger().verdict(method, params, STATUS[code], refusal(code)))
    j = Ledger().verdict(
        "memory/list_memory_records", {"scopeKey": "account:local"}, 409, refusal(REFUSED)
    )
    assert j.verdict == "diverge"


# --------------------------------------------------------------------------- successors


@pytest.mark.clause("LED-EDIT.1")
def test_an_edit_may_keep_the_source_session() -> None:
    def ledger() -> Ledger:
        led = Ledger()
        led.do("memory/save_memory_record", {"body": "a", "sessionId": "s1"})
        return led

    params = {"recordId": "", "body": "a2"}
    for sid, ok in ((None, True), ("s1", True), ("s2", False)):
        led = ledger()
        params["recordId"] = led.mid(0)

        def shown(r: Any, sid: str | None = sid) -> Any:
            r.pop("sourceSessionId", None)
            if sid is not None:
                r["sourceSessionId"] = sid
            r["id"] = "new-1"
            return r

        j = led.verdict("memory/supersede_memory_record", params, 200, shown)
        assert passes(j) == ok


@pytest.mark.clause("LED-GROUP.4", "LED-VOCAB.2", "LED-VOCAB.3")
def test_a_merge_result_may_take_a_targets_group_and_session() -> None:
    led = Ledger()
    led.do("memory/save_memory_record", {"body": "z"})
    led.do("memory/save_memory_record", {"body": "a", "sessionId": "s1"})  # survives the group
    grouping = {"operation": "group", "targets": [led.mid(0), led.mid(1)], "subject": "tz"}
    led.do("_test/consolidate", {"operations": [grouping]})
    led.ctx.groups.link("tz", "tz")
    led.do("memory/save_memory_record", {"body": "b"})
    ops = {
        "operations": [{"operation": "merge", "targets": [led.mid(1), led.mid(2)], "body": "ab"}]
    }
    led.now += 1000
    results = []  # the merge result in every ledger the batch may leave
    for state, outcome in allowed(led.state, "_test/consolidate", ops, led.now):
        assert isinstance(outcome, Ok) and outcome.result == {
            "applied": 1, "invalid": 0, "refused": 0, "declined": 0
        }  # fmt: skip
        results += [record_to_wire(r) for r in state.records if r.body == "ab"]

    def shown(group: str | None, sid: str | None) -> bool:
        for want in results:
            rec = {k: v for k, v in want.items() if k not in ("conflictGroup", "sourceSessionId")}
            rec = {**led.target(rec), "id": "m-1"}
            if group is not None:
                rec["conflictGroup"] = group
            if sid is not None:
                rec["sourceSessionId"] = sid
            if not oracle.compare_record(want, rec, led.ctx.copy(), "merge"):
                return True
        return False

    assert shown(None, None) and shown("tz", None) and shown(None, "s1") and shown("tz", "s1")
    assert not shown("other", None)  # a group no target had
    assert not shown(None, "s9")  # a session no target had


@pytest.mark.clause("LED-VOCAB.3")
def test_a_correction_may_keep_the_source_session() -> None:
    led = Ledger()
    led.do("memory/save_memory_record", {"body": "a", "sessionId": "s1"})
    ops = {"operations": [{"operation": "correct", "targets": [led.mid(0)], "body": "a2"}]}
    sessions = {
        next(r.source_session_id for r in st.records if r.body == "a2")
        for st, _o in allowed(led.state, "_test/consolidate", ops, led.now + 1000)
    }
    assert sessions == {None, "s1"}


# --------------------------------------------------------------------------- the gate


BATCH = "_test/consolidate"


def counts(
    applied: int = 0, invalid: int = 0, refused: int = 0, declined: int = 0
) -> dict[str, int]:
    return {"applied": applied, "invalid": invalid, "refused": refused, "declined": declined}


def one_pin() -> Ledger:
    led = Ledger()
    led.do("memory/save_memory_record", {"body": "a"})
    return led


@pytest.mark.clause("LED-GATE.1", "LED-VOCAB.8")
@pytest.mark.parametrize(
    "element",
    [
        5,
        {"targets": ["$r"]},
        {"operation": "keep", "targets": ["$r"], "body": "x"},
        {"operation": "keep", "targets": ["$r", "$r"]},
        {"operation": "keep", "targets": [""]},
        {"operation": "merge", "targets": ["$r"], "body": "x"},
        {"operation": "correct", "targets": ["$r"], "body": "   "},
        {"operation": "expire", "targets": ["$r"], "afterDays": 0},
        {"operation": "group", "targets": ["$r", "zz"], "subject": ""},
    ],
    ids=["not-object", "no-operation", "keep-body", "dup", "empty", "arity", "blank-body",
         "after-days", "subject"],
)  # fmt: skip
def test_a_shape_problem_is_invalid_or_refused(element: Any) -> None:
    led = one_pin()
    ops = {"operations": [_fill(element, led.mid(0))]}
    assert passes(led.verdict(BATCH, ops, 200, counts(invalid=1)))
    assert passes(led.verdict(BATCH, ops, 200, counts(refused=1)))
    assert diverges(led.verdict(BATCH, ops, 200, counts(declined=1)), "LED-GATE.9")


def _fill(element: Any, rid: str) -> Any:
    if isinstance(element, dict) and "targets" in element:
        return {**element, "targets": [rid if t == "$r" else t for t in element["targets"]]}
    return element


@pytest.mark.clause("LED-GATE.5", "LED-GATE.1")
def test_a_field_the_gate_derives_is_never_applied_and_counted_invalid_or_refused() -> None:
    """The seed says a proposal "cannot set" a status: never applied; how the gate counts it is
    open (LED-GATE.1) -- invalid (the model) or refused, but not applied or declined."""
    led = one_pin()
    ops = {"operations": [{"operation": "keep", "targets": [led.mid(0)], "status": "active"}]}
    assert passes(led.verdict(BATCH, ops, 200, counts(invalid=1)))
    assert passes(led.verdict(BATCH, ops, 200, counts(refused=1)))
    applied = led.verdict(BATCH, ops, 200, counts(applied=1))
    assert diverges(applied, "LED-GATE.9") and diverges(applied, "LED-GATE.5")
    assert diverges(led.verdict(BATCH, ops, 200, counts(declined=1)), "LED-GATE.9")


@pytest.mark.clause("LED-GATE.2")
def test_an_unknown_operation_is_refused_or_if_also_malformed_invalid() -> None:
    led = one_pin()
    plain = {"operations": [{"operation": "zap", "targets": [led.mid(0)]}]}
    assert passes(led.verdict(BATCH, plain, 200, counts(refused=1)))
    assert diverges(led.verdict(BATCH, plain, 200, counts(invalid=1)), "LED-GATE.9")
    extra = {"operations": [{"operation": "zap", "targets": [led.mid(0)], "body": "x"}]}
    assert passes(led.verdict(BATCH, extra, 200, counts(refused=1)))
    assert passes(led.verdict(BATCH, extra, 200, counts(invalid=1)))


@pytest.mark.clause("LED-GATE.6")
def test_past_twenty_is_invalid_refused_or_not_counted_but_never_applied() -> None:
    led = one_pin()
    keep = {"operation": "keep", "targets": [led.mid(0)]}
    ops = {
        "operations": [keep] * 20
        + [{"operation": "expire", "targets": [led.mid(0)], "afterDays": 1}] * 2
    }
    for tail in (counts(invalid=2), counts(refused=2), counts(), counts(invalid=1, refused=1)):
        answer = {**tail, "declined": 20}
        assert passes(led.verdict(BATCH, ops, 200, answer)), answer
    assert diverges(led.verdict(BATCH, ops, 200, counts(applied=2, declined=20)), "LED-GATE.9")


@pytest.mark.clause("LED-VOCAB.8", "LED-WIRE.2")
def test_an_integral_after_days_is_an_integer_or_a_shape_problem() -> None:
    led = one_pin()
    ops = {"operations": [{"operation": "expire", "targets": [led.mid(0)], "afterDays": 3.0}]}
    for answer in (counts(applied=1), counts(invalid=1), counts(refused=1)):
        assert passes(led.verdict(BATCH, ops, 200, answer))


# --------------------------------------------------------------------------- credentials


SAVE = "memory/save_memory_record"


@pytest.mark.clause("LED-CRED.4", "LED-CRED.2", "LED-CRED.6")
@pytest.mark.parametrize(
    "body",
    [
        "x ghp_" + "A" * 20,
        "x gho_" + "b" * 35,
        "x -----BEGIN RSA PRIVATE KEY----- and nothing else",
    ],
    ids=["gh20", "gh35", "pem-header"],
)
def test_an_open_threshold_may_be_stored_or_refused(body: str) -> None:
    assert passes(Ledger().verdict(SAVE, {"body": body}, 409, refusal(REFUSED, CRED)))
    led = Ledger()
    j = led.verdict(SAVE, {"body": body}, 200, lambda r: _record(body, led.now))
    assert passes(j)


@pytest.mark.clause("LED-CRED.4", "LED-CRED.2", "LED-CRED.6")
@pytest.mark.parametrize(
    "body",
    [
        "x ghp_" + "A" * 36,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
    ],
    ids=["gh36", "pem-block"],
)
def test_a_real_token_or_whole_pem_block_must_be_refused(body: str) -> None:
    """Stored, a real token is either a departure from LED-CRED.1 (a narrower detector,
    LED-CRED.6) or, for a whole PEM block, a failure; never a plain pass."""
    led = Ledger()
    j = led.verdict(SAVE, {"body": body}, 200, lambda r: _record(body, led.now))
    if body.startswith("-----BEGIN"):
        assert diverges(j, "LED-CRED.2")
        return
    answers = allowed(led.state, SAVE, {"body": body}, led.now)
    stored = [st for st, o in answers if isinstance(o, Ok)]
    assert stored and all("LED-CRED.1" in st.departures for st in stored)


def _record(body: str, now: int) -> dict[str, Any]:
    t = format_rfc3339(now)
    return {
        "id": "t-new",
        "scopeKey": "account:local",
        "kind": "preference",
        "body": body,
        "provenance": "user_explicit",
        "status": "active",
        "validFrom": t,
        "createdAt": t,
        "updatedAt": t,
    }


# --------------------------------------------------------------------------- test controls


@pytest.mark.clause("LED-WIRE.7", "LED-REVIEW.1")
def test_propose_ranges_are_not_judged() -> None:
    params = {"body": "p", "confidenceBps": 20_000}
    assert passes(Ledger().verdict("_test/propose", params, 409, refusal(REFUSED)))
    led = Ledger()

    def accepted(r: Any) -> Any:
        t = format_rfc3339(led.now)
        return {**_record("p", led.now), "status": "proposed", "provenance": "model_proposal",
                "validTo": t, "confidenceBps": 20_000}  # fmt: skip

    assert passes(led.verdict("_test/propose", params, 200, accepted))


# --------------------------------------------------------------------------- lone surrogates


@pytest.mark.clause("LED-WIRE.2")
def test_a_lone_surrogate_is_invalid_params_or_any_string() -> None:
    body = "bad \ud800 text"
    assert passes(Ledger().verdict(SAVE, {"body": body}, 400, refusal(INVALID_PARAMS)))
    led = Ledger()
    assert passes(led.verdict(SAVE, {"body": body}, 200, lambda r: _record(body, led.now)))
    assert Ledger().verdict(SAVE, {"body": body}, 500, refusal(-32603)).verdict == "diverge"
