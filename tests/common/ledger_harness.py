"""Shared pieces of the ledger harness tests: the bundled store, drivers, broken stores.

Only tests (and the CLI) may import ``conformance.embedded``; the harness under test reaches the
store over HTTP.  ``bundled_store(quirks=(NAME, …))`` runs the store with entries of the
catalogue (``conformance/embedded/catalogue/``), the one way to alter a store's behaviour;
:data:`MUTANTS` are the catalogue's mistakes these tests run.  A *broken store* of
:data:`BROKEN` is the bundled store with its ledger entry point (``LedgerService.handle``, the
contract the HTTP server routes ``/ledger/*`` to) wrapped so it makes one realistic mistake the
catalogue does not hold — the harness must catch each one and name the right clause.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from conformance.drivers.ledger.driver import LedgerDriver
from conformance.embedded.catalogue import Quirks
from conformance.embedded.ledger.service import LedgerService
from conformance.embedded.server import start_server
from conformance.vocabulary import RunContext, Secret, TargetConfig
from reference.ledger.timefmt import format_rfc3339, parse_rfc3339

TOKEN = "memspec-ledger-harness-token"
Handle = Callable[[Any, str, bytes], tuple[int, dict[str, Any]]]


@contextmanager
def bundled_store(*, test_control: bool = True, quirks: tuple[str, ...] = ()) -> Iterator[str]:
    """A bundled store on an ephemeral loopback port, running the catalogue entries named in
    ``quirks``; yields its URL."""
    with start_server(
        token=TOKEN, test_control=test_control, quirks=Quirks(frozenset(quirks))
    ) as handle:
        yield handle.url


def make_driver(
    url: str, *, allow_dirty: bool = False, without: tuple[str, ...] = ()
) -> LedgerDriver:
    ctx = RunContext(
        run_id="memspec-ledgertest",
        target=TargetConfig(url, Secret(TOKEN), denied=frozenset(without)),
        allow_dirty=allow_dirty,
    )
    return LedgerDriver(ctx)


def call(url: str, method: str, params: dict[str, Any]) -> tuple[int, Any]:
    """One direct call to the store (to prepare a state behind the harness's back)."""
    import httpx

    r = httpx.post(
        f"{url}/ledger/{method}",
        json=params,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    return r.status_code, r.json()


# --------------------------------------------------------------------------- broken stores


def _records(body: Any) -> Iterator[dict[str, Any]]:
    if isinstance(body, dict):
        if "id" in body and "status" in body:
            yield body
        for r in body.get("records", []) or []:
            if isinstance(r, dict):
                yield r


def _shift(text: str, ms: int) -> str:
    value = parse_rfc3339(text)
    assert value is not None
    return format_rfc3339(value + ms)


def null_for_unset_fields(orig: Handle) -> Handle:
    """Unset optional fields travel as ``null`` instead of being absent (LED-WIRE.4)."""

    def handle(self: Any, method: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        status, body = orig(self, method, raw)
        if status == 200:
            for r in _records(body):
                r.setdefault("validTo", None)
        return status, body

    return handle


def ids_reused_after_tombstone(orig: Handle) -> Handle:
    """A tombstone's id is handed to the next record the store writes (LED-REC.3)."""
    freed: list[str] = []
    alias: dict[str, str] = {}

    def handle(self: Any, method: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        try:
            params = json.loads(raw or b"{}")
        except ValueError:
            params = None
        if isinstance(params, dict) and isinstance(params.get("recordId"), str):
            rev = {v: k for k, v in alias.items()}
            params["recordId"] = rev.get(params["recordId"], params["recordId"])
            raw = json.dumps(params).encode()
        status, body = orig(self, method, raw)
        if status != 200:
            return status, body
        if method == "memory/delete_memory_record":
            freed.append(body["id"])
        elif method in ("memory/save_memory_record", "memory/supersede_memory_record") and freed:
            alias[body["id"]] = freed.pop()
        for r in _records(body):
            if r["id"] in alias:
                r["id"] = alias[r["id"]]
        return status, body

    return handle


def credential_message_varies(orig: Handle) -> Handle:
    """The credential refusal uses its own wording (the spec fixes the text; LED-CRED.2)."""

    def handle(self: Any, method: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        status, body = orig(self, method, raw)
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and str(err.get("message", "")).startswith("Memory pins cannot"):
            err["message"] = "That looks like a secret; not saved."
        return status, body

    return handle


def lifecycle_refusal_is_invalid_params(orig: Handle) -> Handle:
    """A lifecycle refusal travels as 400/-32602 instead of 409/1000 (LED-WIRE.3)."""

    def handle(self: Any, method: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        status, body = orig(self, method, raw)
        err = body.get("error") if isinstance(body, dict) else None
        if status == 409 and isinstance(err, dict) and " can be " in str(err.get("message")):
            return 400, {"error": {"code": -32602, "message": err["message"]}}
        return status, body

    return handle


def as_of_misses_the_last_millisecond(orig: Handle) -> Handle:
    """A history read leaves out a closed record in the last millisecond of its interval
    (an off-by-one ``at < validTo - 1``; LED-ASOF.1, LED-INT.1)."""

    def handle(self: Any, method: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        status, body = orig(self, method, raw)
        if status == 200 and method == "memory/list_memory_records_as_of":
            at = json.loads(raw)["at"]
            body["records"] = [
                r for r in body["records"] if "validTo" not in r or _shift(r["validTo"], -1) != at
            ]
        return status, body

    return handle


BROKEN: dict[str, tuple[Callable[[Handle], Handle], str]] = {
    "null_for_unset_fields": (null_for_unset_fields, "LED-WIRE.4"),
    "ids_reused_after_tombstone": (ids_reused_after_tombstone, "LED-REC.3"),
    "credential_message_varies": (credential_message_varies, "LED-CRED.5"),
    "lifecycle_refusal_is_invalid_params": (lifecycle_refusal_is_invalid_params, "LED-STATUS.3"),
    "as_of_misses_the_last_millisecond": (as_of_misses_the_last_millisecond, "LED-ASOF.1"),
}


#: Mistakes of the catalogue the ledger harness tests run too (mutant -> the clause a divergence
#: must name): the same way to break a store as ``memspec selftest``'s, through
#: ``bundled_store(quirks=...)``.
MUTANTS: dict[str, str] = {
    "led-supersede-leaves-gap": "LED-INT.3",
    "led-budget-evicts-oldest": "LED-BUDGET.2",
    "led-tombstone-body-in-history": "LED-FORGET.3",
    "led-list-oldest-first": "LED-LIST.2",
    "led-sweep-closes-at-sweep": "LED-EXP.2",
}


def break_store(monkeypatch: pytest.MonkeyPatch, name: str) -> str:
    """Install the named mistake into every bundled store started afterwards; its clause."""
    wrap, clause = BROKEN[name]
    monkeypatch.setattr(LedgerService, "handle", wrap(LedgerService.handle))
    return clause
