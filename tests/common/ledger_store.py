"""Helpers for the bundled store's ledger tests: one client shape over two transports.

``Ledger`` talks to a ``LedgerService`` either directly (``handle``/``handle_test``) or over
HTTP through the real server (``start_server(test_control=True)``), so every wire test runs
both ways.  Times are epoch milliseconds; the store's clock is driven with ``_test/set_clock``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from conformance.embedded.ledger.service import LedgerService
from conformance.embedded.server import start_server
from reference.ledger.wire import RECORD_FIELDS, RECORD_FIELDS_WHEN_SET, TIME_FIELDS, WIRE_TIME

SCOPE = "account:local"
TOKEN = "t"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z
SEC = 1000
DAY = 86_400_000
BUDGET_MSG = (
    "Memory scope 'account:local' holds {held} of {budget} records and nothing was written."
    " Forget or consolidate a record to make room."
)
CREDENTIAL_MSG = "Memory pins cannot store credentials. Nothing was saved."
ALWAYS = set(RECORD_FIELDS)
OPTIONAL = set(RECORD_FIELDS_WHEN_SET)


def iso(ms: int) -> str:
    """Epoch ms as the wire's RFC 3339 form (independent of the service's formatter)."""
    from datetime import UTC, datetime, timedelta

    m = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return f"{m:%Y}".zfill(4) + f"-{m:%m-%dT%H:%M:%S}.{m.microsecond // 1000:03d}Z"


@dataclass
class Reply:
    status: int
    body: dict[str, Any]

    @property
    def code(self) -> int | None:
        err = self.body.get("error")
        return err.get("code") if isinstance(err, dict) else None

    @property
    def message(self) -> str | None:
        err = self.body.get("error")
        return err.get("message") if isinstance(err, dict) else None


Transport = Callable[[str, bytes], tuple[int, dict[str, Any]]]


class Ledger:
    """A ledger client: ``call`` a method, ``control`` a test control, with helpers."""

    def __init__(self, transport: Transport, kind: str) -> None:
        self._transport = transport
        self.kind = kind

    # ---- raw -----------------------------------------------------------------------------

    def send(self, path: str, raw: bytes) -> Reply:
        status, body = self._transport(path, raw)
        return Reply(status, body)

    def call(self, method: str, params: Any = None) -> Reply:
        raw = b"" if params is None else json.dumps(params).encode()
        return self.send(method, raw)

    def control(self, name: str, params: Any = None) -> Reply:
        return self.call("_test/" + name, {} if params is None else params)

    def ok(self, method: str, params: Any = None) -> dict[str, Any]:
        reply = self.call(method, params)
        assert reply.status == 200, (method, params, reply)
        return reply.body

    def ctl(self, name: str, params: Any = None) -> dict[str, Any]:
        reply = self.control(name, params)
        assert reply.status == 200, (name, params, reply)
        return reply.body

    # ---- helpers -------------------------------------------------------------------------

    def at(self, ms: int) -> None:
        """Freeze the store's clock at ``ms``."""
        assert self.ctl("set_clock", {"now": iso(ms)}) == {"now": iso(ms)}
        self.now = ms

    def batch(self, *elements: dict[str, Any]) -> dict[str, Any]:
        """One consolidation batch at the store's now; its counts."""
        return self.ctl("consolidate", {"operations": list(elements)})

    def expire_at(self, rid: str, ms: int) -> None:
        """Give a record the expiry ``ms`` the seed's way: ``expire`` with ``afterDays`` 1 run
        one day before ``ms`` (the store's clock is put back after)."""
        back = getattr(self, "now", None)
        self.at(ms - 86_400_000)
        counts = self.batch({"operation": "expire", "targets": [rid], "afterDays": 1})
        assert counts["applied"] == 1, counts
        if back is not None:
            self.at(back)

    def group(self, subject: str, *rids: str) -> dict[str, Any]:
        """``group`` over ``rids`` under ``subject`` (the one way into a conflict group)."""
        return self.batch({"operation": "group", "targets": list(rids), "subject": subject})

    def reset(self, ms: int = T0) -> None:
        assert self.ctl("reset") == {"ok": True}
        self.at(ms)

    def save(self, body: str, **params: Any) -> dict[str, Any]:
        return self.ok("memory/save_memory_record", {"body": body, **params})

    def propose(self, body: str, **params: Any) -> dict[str, Any]:
        return self.ctl("propose", {"body": body, **params})

    def supersede(self, rid: str, body: str, **params: Any) -> dict[str, Any]:
        return self.ok("memory/supersede_memory_record", {"recordId": rid, "body": body, **params})

    def delete(self, rid: str) -> dict[str, Any]:
        return self.ok("memory/delete_memory_record", {"recordId": rid})

    def approve(self, rid: str) -> dict[str, Any]:
        return self.ok("memory/approve_memory_record", {"recordId": rid})

    def reject(self, rid: str) -> dict[str, Any]:
        return self.ok("memory/reject_memory_record", {"recordId": rid})

    def listing(self, status: str | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"scopeKey": SCOPE}
        if status is not None:
            params["status"] = status
        body = self.ok("memory/list_memory_records", params)
        assert body["scopeKey"] == SCOPE
        return list(body["records"])

    def ids(self, status: str | None = None) -> list[str]:
        return [r["id"] for r in self.listing(status)]

    def as_of(self, ms: int) -> dict[str, dict[str, Any]]:
        body = self.ok("memory/list_memory_records_as_of", {"scopeKey": SCOPE, "at": iso(ms)})
        assert body["scopeKey"] == SCOPE
        out = {r["id"]: r for r in body["records"]}
        assert len(out) == len(body["records"]), "duplicate ids in a history read"
        return out

    def settings(self) -> dict[str, Any]:
        return self.ok("memory/get_consolidation_settings", {})

    def configure(self, mode: str = "off", **fields: Any) -> dict[str, Any]:
        return self.ok("memory/update_consolidation_settings", {"mode": mode, **fields})

    def consolidate(self, *operations: Any) -> dict[str, int]:
        return self.ctl("consolidate", {"operations": list(operations)})

    def sweep(self, ms: int) -> list[str]:
        return list(self.ctl("sweep", {"at": iso(ms)})["expired"])

    def packet(self) -> dict[str, Any]:
        return self.ctl("packet")

    def snapshot(self) -> tuple[Any, ...]:
        """Everything observable over the wire, for "nothing changed" checks."""
        history = {
            rid: rec for t in (T0 - DAY, T0, T0 + 10 * DAY) for rid, rec in self.as_of(t).items()
        }
        return (
            self.listing(),
            self.listing("proposed"),
            sorted(history.items()),
            self.settings(),
            self.packet(),
        )


def direct_transport(service: LedgerService) -> Transport:
    def send(path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        if path.startswith("_test/"):
            return service.handle_test(path.removeprefix("_test/"), raw)
        return service.handle(path, raw)

    return send


def http_transport(client: httpx.Client) -> Transport:
    def send(path: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        r = client.post(
            "/ledger/" + path, content=raw, headers={"Content-Type": "application/json"}
        )
        assert r.headers["content-type"].startswith("application/json"), r.headers
        return r.status_code, r.json()

    return send


def check_record_shape(rec: dict[str, Any]) -> None:
    """LED-WIRE.4/.5: the always-fields, only known optional ones, no nulls, RFC 3339 times."""
    assert ALWAYS <= set(rec), rec
    assert set(rec) <= ALWAYS | OPTIONAL, set(rec) - ALWAYS - OPTIONAL
    assert all(v is not None for v in rec.values()), rec
    for name in TIME_FIELDS:
        if name in rec:
            assert WIRE_TIME.fullmatch(rec[name]), (name, rec[name])
    assert rec["scopeKey"] == SCOPE
    if "confidenceBps" in rec:
        assert type(rec["confidenceBps"]) is int


# ---- fixtures (imported by the test modules) -----------------------------------------------


@pytest.fixture(scope="module")
def ledger_http_client() -> Iterator[httpx.Client]:
    """One real server with test controls per module; tests reset the ledger between them."""
    handle = start_server(test_control=True, token=TOKEN)
    client = httpx.Client(
        base_url=handle.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10.0
    )
    yield client
    client.close()
    handle.stop()


@pytest.fixture(params=["direct", "http"])
def ledger(request: pytest.FixtureRequest) -> Iterator[Ledger]:
    """A reset ledger at ``T0``, reached directly or through the HTTP server."""
    if request.param == "direct":
        service = LedgerService(":memory:", test_control=True)
        client = Ledger(direct_transport(service), "direct")
        client.reset()
        yield client
        service.close()
    else:
        client = Ledger(http_transport(request.getfixturevalue("ledger_http_client")), "http")
        client.reset()
        yield client
