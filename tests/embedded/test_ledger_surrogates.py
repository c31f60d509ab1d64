"""A lone surrogate (``\\ud800``, valid JSON but not text) in any string param of the ledger is
``-32602`` naming the param — never a 500 with a traceback (issue 9; LED-WIRE.2).

Before the fix the store passed such strings to SQLite, which cannot encode them: 11 of the 15
entry points answered 500.  The property runs every string param of every method and test
control, directly and over HTTP, with generated text holding at least one lone surrogate.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.common.ledger_store import Ledger, ledger, ledger_http_client

__all__ = ["ledger", "ledger_http_client"]  # fixtures

surrogates = st.integers(0xD800, 0xDFFF).map(chr)
texts = st.builds(
    lambda a, s, b: a + s + b,
    st.text(max_size=12),
    surrogates,
    st.text(max_size=12),
)

ID = "$id"  # replaced by a real record id

#: (method, params with the one string param to poison named by the key in ``poison``)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("memory/save_memory_record", {"body": "ok"}, "body"),
    ("memory/save_memory_record", {"body": "ok", "kind": "fact"}, "kind"),
    ("memory/save_memory_record", {"body": "ok", "sessionId": "s"}, "sessionId"),
    ("memory/list_memory_records", {"scopeKey": "account:local"}, "scopeKey"),
    ("memory/list_memory_records", {"scopeKey": "account:local", "status": "active"}, "status"),
    ("memory/delete_memory_record", {"recordId": ID}, "recordId"),
    ("memory/supersede_memory_record", {"recordId": ID, "body": "b"}, "recordId"),
    ("memory/supersede_memory_record", {"recordId": ID, "body": "b"}, "body"),
    ("memory/supersede_memory_record", {"recordId": ID, "body": "b", "kind": "fact"}, "kind"),
    ("memory/approve_memory_record", {"recordId": ID}, "recordId"),
    ("memory/reject_memory_record", {"recordId": ID}, "recordId"),
    (
        "memory/list_memory_records_as_of",
        {"scopeKey": "account:local", "at": "2026-03-02T09:00:00Z"},
        "scopeKey",
    ),
    (
        "memory/list_memory_records_as_of",
        {"scopeKey": "account:local", "at": "2026-03-02T09:00:00Z"},
        "at",
    ),
    ("memory/update_consolidation_settings", {"mode": "off"}, "mode"),
    ("memory/update_consolidation_settings", {"mode": "off", "harness": "h"}, "harness"),
    ("memory/update_consolidation_settings", {"mode": "off", "model": "m"}, "model"),
    ("_test/propose", {"body": "p"}, "body"),
    ("_test/propose", {"body": "p", "kind": "fact"}, "kind"),
    ("_test/propose", {"body": "p", "sessionId": "s"}, "sessionId"),
    ("_test/propose", {"body": "p", "rationale": "r"}, "rationale"),
    ("_test/propose", {"body": "p", "rationale": "r"}, "rationale"),
    ("_test/sweep", {"at": "2030-01-01T00:00:00Z"}, "at"),
    ("_test/set_clock", {"now": "2030-01-01T00:00:00Z"}, "now"),
    ("_test/consolidate", {"operations": [{"operation": "correct", "targets": [ID], "body": "c"}]},
     "operations"),
]  # fmt: skip

#: Where inside ``operations`` the poison goes (the param named is still ``operations``).
OP_SPOTS = ("body", "subject", "operation", "target")


def poisoned(params: dict[str, Any], name: str, bad: str, rid: str, spot: str) -> dict[str, Any]:
    out = {k: (rid if v == ID else v) for k, v in params.items()}
    if name != "operations":
        out[name] = bad
        return out
    op = {"operation": "correct", "targets": [rid], "body": "c"}
    if spot == "target":
        op["targets"] = [bad]
    elif spot == "subject":
        op = {"operation": "group", "targets": [rid, rid + "x"], "subject": bad}
    else:
        op[spot] = bad
    out["operations"] = [op]
    return out


@pytest.mark.clause("LED-WIRE.2", "LED-WIRE.8")
@pytest.mark.parametrize(
    ("method", "params", "name"), CASES, ids=[f"{m}:{n}" for m, _p, n in CASES]
)
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bad=texts, spot=st.sampled_from(OP_SPOTS))
def test_a_lone_surrogate_is_invalid_params_naming_the_param(
    ledger: Ledger, method: str, params: dict[str, Any], name: str, bad: str, spot: str
) -> None:
    saved = ledger.call("memory/save_memory_record", {"body": "keep me"})
    assert saved.status == 200
    rid = saved.body["id"]
    before = ledger.call("memory/list_memory_records_as_of",
                         {"scopeKey": "account:local", "at": "9999-12-31T23:59:59Z"})  # fmt: skip
    reply = ledger.call(method, poisoned(params, name, bad, rid, spot))
    assert (reply.status, reply.code) == (400, -32602), reply
    assert f"'{name}'" in str(reply.message), reply.message
    after = ledger.call("memory/list_memory_records_as_of",
                        {"scopeKey": "account:local", "at": "9999-12-31T23:59:59Z"})  # fmt: skip
    assert after.body == before.body  # nothing changed
    ledger.reset()
