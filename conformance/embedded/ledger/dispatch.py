"""The one dispatcher of the bundled ledger's two forms: ``POST /ledger/<name>``
(``http_handler.py``) and JSON-RPC over a WebSocket (``ledger/jsonrpc.py``) both answer a call
by its name through :func:`call_ledger`."""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from typing import Any

from conformance.embedded.storage_faults import FaultLog, storage_fault, unavailable_message

__all__ = ["Dispatch", "call_ledger"]

INTERNAL_ERROR = -32603
_UNAVAILABLE = {"error": {"code": INTERNAL_ERROR, "message": "ledger binding not available"}}
_TEST = "_test/"


def call_ledger(service: Any | None, name: str, raw: bytes) -> tuple[int, dict[str, Any]]:
    """One call by name -- a method (``memory/...``) or a test control (``_test/<control>``) --
    with ``raw`` as its params' text: the service's ``(status, body)``.  Exceptions (a storage
    fault included) go to the caller."""
    if service is None:
        return 503, _UNAVAILABLE
    if name.startswith(_TEST):
        status, body = service.handle_test(name[len(_TEST) :], raw)
    else:
        status, body = service.handle(name, raw)
    return int(status), body


@dataclass
class Dispatch:
    """What answering a message needs: the service and the storage fault log."""

    service: Any | None
    faults: FaultLog

    def call(self, name: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        """:func:`call_ledger`; a storage fault is 503 naming its cause, any other exception
        an internal error (as over HTTP)."""
        try:
            answer = call_ledger(self.service, name, raw)
            self.faults.ok("ledger")
            return answer
        except Exception as exc:
            cause = storage_fault(exc)
            if cause is None:
                traceback.print_exc(file=sys.stderr)
                return 500, {"error": {"code": INTERNAL_ERROR, "message": "internal error"}}
            self.faults.fault("ledger", cause)
            return 503, {"error": {"code": INTERNAL_ERROR, "message": unavailable_message(cause)}}
