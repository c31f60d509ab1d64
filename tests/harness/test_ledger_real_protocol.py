"""The real ledger's protocol, each open point accepted (LED-WIRE.11-.15): by-position params,
``{}`` on a method without params, trimmed ``kind``/``scopeKey``, a session or a harness the
store does not know.  The model's answer stays one allowed answer; the real ledger's is another.
"""

from __future__ import annotations

import io
import secrets
from typing import Any

import pytest

from conformance.commands.target import start_bundled_store
from conformance.drivers.ledger.steps import with_known_values
from conformance.errors import TargetError
from conformance.oracle import ledger as oracle
from conformance.targets.base import load_target_profile
from conformance.targets.ledger import NO_PARAMS, LedgerTarget
from conformance.vocabulary import Secret, TargetConfig
from reference.ledger.outcome import INVALID_PARAMS, INVALID_REQUEST, REFUSED, Ok, Refused
from reference.ledger.records import empty_state
from reference.ledger.wire import allowed
from tests.common.engine import run_engine

T0 = 1_772_442_000_000
SAVE = "memory/save_memory_record"


def _answers(method: str, params: Any) -> list[Any]:
    return [o for _st, o in allowed(empty_state(), method, params, T0)]


@pytest.mark.clause("LED-WIRE.11", "LED-WIRE.2")
def test_by_position_params_are_refused_or_filled_in_order() -> None:
    out = _answers(SAVE, ["likes tea", "fact"])
    assert any(isinstance(o, Refused) and o.allowed_codes == {INVALID_PARAMS} for o in out)
    filled = [o.result for o in out if isinstance(o, Ok) and isinstance(o.result, dict)]
    assert filled and filled[0]["body"] == "likes tea" and filled[0]["kind"] == "fact"
    assert all(isinstance(o, Refused) for o in _answers(SAVE, ["a", "fact", "s", "extra"]))


@pytest.mark.clause("LED-WIRE.12")
def test_empty_params_on_a_method_without_params_may_be_refused() -> None:
    out = _answers("memory/get_consolidation_settings", {})
    assert isinstance(out[0], Ok)
    assert any(isinstance(o, Refused) and o.code == INVALID_PARAMS for o in out[1:])
    assert all(isinstance(o, Ok) for o in _answers("memory/get_consolidation_settings", None))


@pytest.mark.clause("LED-WIRE.13", "LED-REC.2", "LED-LIST.3")
def test_kind_and_scope_key_may_be_read_trimmed() -> None:
    out = _answers(SAVE, {"body": "x", "kind": " fact "})
    assert isinstance(out[0], Refused)  # the model: a bad value
    kinds = [o.result["kind"] for o in out if isinstance(o, Ok) and isinstance(o.result, dict)]
    assert kinds == ["fact"]
    blank = _answers(SAVE, {"body": "x", "kind": "  "})
    assert any(isinstance(o, Ok) and o.result["kind"] == "preference" for o in blank)  # type: ignore[index]
    listing = _answers("memory/list_memory_records", {"scopeKey": " account:local "})
    assert any(isinstance(o, Ok) and o.result["scopeKey"] == "account:local" for o in listing)  # type: ignore[index]


@pytest.mark.clause("LED-WIRE.14", "LED-WIRE.15")
def test_an_unknown_session_or_an_unoffered_harness_may_be_refused_as_a_departure() -> None:
    state = empty_state()
    saves = allowed(state, SAVE, {"body": "x", "sessionId": "no-such-session"}, T0)
    refusals = [(st, o) for st, o in saves if isinstance(o, Refused)]
    assert [o.code for _st, o in refusals] == [REFUSED]
    assert refusals[0][0].departures == frozenset({"LED-WIRE.14"})
    update = "memory/update_consolidation_settings"
    settings = allowed(state, update, {"mode": "off", "harness": "codex"}, T0)
    assert any(st.departures == {"LED-WIRE.15"} for st, o in settings if isinstance(o, Refused))
    # without a session or a harness, nothing to refuse
    assert all(isinstance(o, Ok) for _st, o in allowed(state, SAVE, {"body": "x"}, T0))


@pytest.mark.parametrize(
    "variant",
    ["ledger-known-sessions-only", "ledger-one-harness", "ledger-paramless-refuses-empty-object"],
)
@pytest.mark.clause("LED-WIRE.14", "LED-WIRE.15", "LED-WIRE.12")
def test_a_store_knowing_no_session_or_one_harness_is_conformant(variant: str) -> None:
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token, quirks=frozenset({variant}))
    try:
        res = run_engine(
            TargetConfig(handle.url, Secret(token), 10.0),
            spec="ledger",
            machines=False,
            quiet=True,
            out=io.StringIO(),
        )
    finally:
        handle.stop()
    assert res.exit_code == 0, res.data["divergences"]
    if variant == "ledger-known-sessions-only":
        named = {c for d in res.data["deviations"] for c in d["clauses"]}
        assert named == {"LED-WIRE.14"}, named


@pytest.mark.clause("LED-WIRE.12")
def test_a_method_without_params_is_called_with_none_and_the_store_takes_absent_or_null() -> None:
    """memspec calls a method without params with an empty body (never ``{}``); the bundled
    store takes an empty body and ``null``, and its variant built like the real ledger refuses
    ``{}`` with -32602 while still taking both."""
    token = secrets.token_urlsafe(24)
    for quirks in (frozenset(), frozenset({"ledger-paramless-refuses-empty-object"})):
        handle = start_bundled_store(token, quirks=quirks)
        t = LedgerTarget(TargetConfig(handle.url, Secret(token), 10.0))
        try:
            got = t.call("memory/get_consolidation_settings", NO_PARAMS)
            assert got.status == 200 and got.body["scopeKey"] == "account:local"
            assert got.request_body is None  # nothing sent: not {}
            assert t.test("packet", NO_PARAMS).status == 200
            assert t.test("reset", NO_PARAMS).body == {"ok": True}
            for method in ("memory/get_consolidation_settings", "_test/packet"):
                assert t.post_bytes(method, b"null").status == 200
            empty = t.call("memory/get_consolidation_settings", {})
            if quirks:
                assert empty.status == 400 and empty.body["error"]["code"] == INVALID_PARAMS
                assert t.test("packet", {}).status == 400
            else:
                assert empty.status == 200
            # a method that takes params still finds them missing in null
            missing = t.post_bytes("memory/save_memory_record", b"null")
            assert missing.status == 400 and missing.body["error"]["code"] == INVALID_PARAMS
        finally:
            t.close()
            handle.stop()


def _judged(method: str, params: Any, code: int) -> str:
    """The verdict on an answer ``{"error": {code, …}}`` (HTTP 400) to ``method`` with
    ``params`` on an empty ledger."""
    ctx = oracle.Context(oracle.Ids(), oracle.Times(exact=True, anchor=T0), frozenset())
    body = {"error": {"code": code, "message": "no"}}
    options = [o for _st, o in allowed(empty_state(), method, params, T0)]
    return oracle.judge_any(method, options, 400, body, ctx)[0].verdict


@pytest.mark.clause("LED-WIRE.2", "LED-WIRE.21")
@pytest.mark.parametrize("params", ["x", 3, 2.5, True])
def test_params_neither_object_nor_array_may_be_an_invalid_request(params: Any) -> None:
    """A daemon answers -32600 to params JSON-RPC does not allow; -32602 is still accepted."""
    for method in (SAVE, "memory/list_memory_records", "memory/get_consolidation_settings"):
        assert _judged(method, params, INVALID_REQUEST) == "pass"
        assert _judged(method, params, INVALID_PARAMS) == "pass"
        assert _judged(method, params, REFUSED) == "diverge"


@pytest.mark.clause("LED-WIRE.2", "LED-WIRE.11")
def test_an_object_or_an_array_as_params_is_never_an_invalid_request() -> None:
    assert _judged(SAVE, {"body": "x", "tags": []}, INVALID_REQUEST) == "diverge"
    assert _judged(SAVE, ["a", "b", "c", "d"], INVALID_REQUEST) == "diverge"
    assert _judged(SAVE, ["a", "b", "c", "d"], INVALID_PARAMS) == "pass"


@pytest.mark.clause("LED-WIRE.14", "LED-WIRE.15")
def test_the_profile_values_replace_the_invented_ones(tmp_path: Any) -> None:
    """``[ledger]`` in a target profile: its session, harness and model go out instead of
    memspec's, in the params and in what a step expects, on the model's side too."""
    profile = tmp_path / "p.toml"
    profile.write_text('[ledger]\nsession = "sess-known"\nharness = "codex"\nmodel = "o4"\n')
    values = load_target_profile(profile).ledger_values
    assert values == (("session", "sess-known"), ("harness", "codex"), ("model", "o4"))
    known = dict(values)
    args = {"body": "x", "sessionId": "s-1", "harness": "claude", "model": "haiku"}
    assert with_known_values(args, known) == {
        "body": "x", "sessionId": "sess-known", "harness": "codex", "model": "o4"
    }  # fmt: skip
    # a blank session, another harness or a value of the wrong type is the step's point: kept
    kept = {"sessionId": "", "harness": "", "model": 3, "rationale": "claude"}
    assert with_known_values(kept, known) == kept
    assert with_known_values({"body": {"sourceSessionId": "s-3"}}, known) == {
        "body": {"sourceSessionId": "sess-known"}
    }
    assert with_known_values(args, {}) == args
    for bad in ('[ledger]\nsession = ""\n', "[ledger]\nsession = 3\n", '[ledger]\nuser = "x"\n'):
        profile.write_text(bad)
        with pytest.raises(TargetError):
            load_target_profile(profile)


@pytest.mark.clause("LED-WIRE.14", "LED-WIRE.15", "LED-CONS.2", "LED-SAVE.1")
def test_a_run_with_declared_values_sends_them_and_expects_them_back() -> None:
    """The corpus run with a declared session, harness and model: the store keeps what it is
    sent, so every hand-written expectation (``sourceSessionId``, the settings' harness and
    model) must name the declared values too, or the run diverges."""
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token)
    values = (("session", "sess-known"), ("harness", "codex"), ("model", "o4"))
    try:
        res = run_engine(
            TargetConfig(handle.url, Secret(token), 10.0, ledger_values=values),
            spec="ledger",
            machines=False,
            quiet=True,
            out=io.StringIO(),
        )
    finally:
        handle.stop()
    assert res.exit_code == 0, res.data["divergences"]
    assert not res.data["deviations"], res.data["deviations"]
