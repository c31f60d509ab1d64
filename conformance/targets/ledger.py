"""The ledger binding target: ``POST /ledger/<method>`` and the ``/ledger/_test/*`` controls.

Built on :class:`~conformance.targets.base.HttpTarget` (memspec's own HTTP/1.1 client: a
deadline on every whole request, bounded answers, no redirects, the bearer token a
:class:`~conformance.vocabulary.Secret` that never reaches an exchange, a report or a log).

Capabilities a ledger target can have (probed; a declaration in the target profile wins):

``ledger.test_control``  the ``/ledger/_test/*`` controls exist — probed with
                         ``POST /ledger/_test/packet`` without params: 200 → present,
                         404 → absent
``ledger.clock``         ``_test/set_clock`` pins the store's clock: probed by setting an
                         instant, reading the echo, and handing the clock back to real time

Probing never writes a record: ``_test/packet`` only reads, and the clock is released again.
"""

from __future__ import annotations

from typing import Any

from conformance.errors import TargetError
from conformance.targets.base import EMPTY_BODY, Auth, HttpTarget, token_refused
from conformance.vocabulary import Exchange, TargetConfig
from reference.ledger.timefmt import parse_rfc3339
from reference.ledger.wire import answer_instant, same_instant

TEST_CONTROL = "ledger.test_control"
CLOCK = "ledger.clock"

_PROBE_INSTANT = "2001-02-03T04:05:06.789Z"

#: The params of a call to a method that takes none: absent (LED-WIRE.12) -- over HTTP an empty
#: body, over JSON-RPC no ``params`` member.  Never ``{}``, which a real ledger may refuse.
NO_PARAMS: Any = EMPTY_BODY

__all__ = ["CLOCK", "NO_PARAMS", "TEST_CONTROL", "LedgerClient", "LedgerTarget", "TargetError"]


class LedgerClient:
    """A ledger binding as the driver uses it, whatever carries the calls: HTTP
    (:class:`LedgerTarget`) or JSON-RPC 2.0 over a WebSocket
    (:class:`~conformance.targets.jsonrpc.LedgerSocketTarget`).  Each answer is an
    :class:`Exchange` with the binding's HTTP status and body (transport failures in it, never
    raised); :meth:`probe` is the same over every transport."""

    config: TargetConfig
    url: str
    #: requests may be written ahead of their answers (:meth:`write_ahead`)
    pipelining: bool
    #: why pipelining is off ("" while it is on)
    pipelining_off: str
    _caps: frozenset[str] | None

    def call(self, method: str, params: Any, *, auth: Auth = True) -> Exchange:
        """One binding method with ``params`` (:data:`NO_PARAMS`: without params)."""
        raise NotImplementedError

    def test(self, name: str, params: Any) -> Exchange:
        """One test control (``_test/<name>``) with ``params``."""
        raise NotImplementedError

    def test_then_call(
        self, name: str, test_params: Any, method: str, params: Any
    ) -> tuple[Exchange, Exchange]:
        """A test control that may be repeated, then a call."""
        raise NotImplementedError

    def post_bytes(self, method: str, content: bytes) -> Exchange:
        """A method with params given as text that is not (necessarily) JSON."""
        raise NotImplementedError

    def write_ahead(self, requests: list[tuple[str, str, Any]]) -> bool:
        """Write requests ahead of their answers (False: nothing written)."""
        raise NotImplementedError

    def read_ahead(self) -> Exchange:
        """The answer to the oldest request written ahead."""
        raise NotImplementedError

    @property
    def ahead(self) -> int:
        """Requests written ahead whose answers are still unread."""
        raise NotImplementedError

    @property
    def gone(self) -> bool:
        """The target stopped answering."""
        raise NotImplementedError

    def base_capabilities(self) -> frozenset[str]:
        raise NotImplementedError

    def resolve_capabilities(self, probed: frozenset[str]) -> frozenset[str]:
        """Probed ∪ declared − denied: what the user declares always wins."""
        return (probed | self.config.declared) - self.config.denied

    def close(self) -> None:
        raise NotImplementedError

    def probe(self) -> frozenset[str]:
        """Check the ledger answers and accepts the token; find its capabilities (once).

        Raises :class:`TargetError` when nothing answers, when the token is refused (401), or
        when the binding is missing (``memory/list_memory_records`` is 404).
        """
        if self._caps is not None:
            return self._caps
        caps = set(self.base_capabilities())
        listing = self.call("memory/list_memory_records", {"scopeKey": "account:local"})
        if listing.status is None:
            raise TargetError(f"{self.url}: {listing.transport_error}")
        if listing.status == 401:
            raise token_refused(self.config, "POST /ledger/memory/list_memory_records")
        if listing.status == 404:
            raise TargetError(
                f"{self.url}: no ledger binding (404 on /ledger/memory/list_memory_records)"
            )
        packet = self.test("packet", NO_PARAMS)
        if packet.status == 200 and isinstance(packet.body, dict):
            caps.add(TEST_CONTROL)
            pinned = self.test("set_clock", {"now": _PROBE_INSTANT})
            if (
                pinned.status == 200
                and isinstance(pinned.body, dict)
                and _shows_instant(pinned.body.get("now"), _PROBE_INSTANT)
            ):
                released = self.test("set_clock", {"now": None})
                if released.status == 200:
                    caps.add(CLOCK)
        elif packet.status is None:
            raise TargetError(f"{self.url}: {packet.transport_error}")
        self._caps = self.resolve_capabilities(frozenset(caps))
        return self._caps


class LedgerTarget(HttpTarget, LedgerClient):
    """A store's ledger binding reached over HTTP.

    :meth:`call` posts a method's params, :meth:`test` a test control's; both return an
    :class:`Exchange` (transport failures are in it, never raised).  ``raw`` (inherited) sends
    hand-made bytes for malformed requests.
    """

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        self._caps: frozenset[str] | None = None

    def call(self, method: str, params: Any, *, auth: Auth = True) -> Exchange:
        """``POST /ledger/<method>`` with ``params`` as the JSON body."""
        return self.request("POST", f"/ledger/{method}", params, auth=auth)

    def test(self, name: str, params: Any) -> Exchange:
        """``POST /ledger/_test/<name>`` (a test control) with ``params`` as the JSON body."""
        return self.request("POST", f"/ledger/_test/{name}", params)

    def test_then_call(
        self, name: str, test_params: Any, method: str, params: Any
    ) -> tuple[Exchange, Exchange]:
        """A test control and then a call, pipelined (one round trip): see
        :meth:`HttpTarget.request_pair`.  The test control must be one that may be repeated."""
        return self.request_pair(
            ("POST", f"/ledger/_test/{name}", test_params), ("POST", f"/ledger/{method}", params)
        )

    def post_bytes(self, method: str, content: bytes) -> Exchange:
        """``POST /ledger/<method>`` with a body that is not (necessarily) JSON."""
        return self.request(
            "POST",
            f"/ledger/{method}",
            content=content,
            headers={"Content-Type": "application/json"},
        )


def _shows_instant(answered: Any, sent: str) -> bool:
    """The store echoed the instant it was pinned to, in any allowed form (LED-WIRE.5)."""
    seen = answer_instant(answered)
    ms = parse_rfc3339(sent)
    return seen is not None and ms is not None and same_instant(ms, seen)
