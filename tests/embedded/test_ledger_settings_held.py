"""The bundled store reports how full the budget is: ``heldRecords`` in the settings answer
equals the active records plus the proposals awaiting a decision (LED-CONS.2, LED-BUDGET.1)."""

from __future__ import annotations

import pytest

from tests.common.ledger_store import Ledger, ledger, ledger_http_client

__all__ = ["ledger", "ledger_http_client"]  # fixtures

GET = "memory/get_consolidation_settings"
UPDATE = "memory/update_consolidation_settings"


@pytest.mark.clause("LED-CONS.2", "LED-BUDGET.1")
def test_settings_report_what_the_scope_holds(ledger: Ledger) -> None:
    assert ledger.call(GET, {}).body["heldRecords"] == 0
    a = ledger.call("memory/save_memory_record", {"body": "a"}).body["id"]
    ledger.call("memory/save_memory_record", {"body": "b"})
    p = ledger.control("propose", {"body": "p"}).body["id"]
    assert ledger.call(GET, {}).body["heldRecords"] == 3
    ledger.call("memory/delete_memory_record", {"recordId": a})  # a tombstone is not held
    ledger.call("memory/reject_memory_record", {"recordId": p})  # nor is a rejection
    assert ledger.call(GET, {}).body["heldRecords"] == 1
    answer = ledger.call(UPDATE, {"mode": "off", "maxRecords": 1}).body
    assert (answer["heldRecords"], answer["maxRecords"]) == (1, 1)
