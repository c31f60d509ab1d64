"""The ledger's test controls (``POST /ledger/_test/<name>``, LED-WIRE.7): reset, the frozen
clock, the expiry sweep, extractor proposals, one consolidation batch and the packet -- only
what the seed gives no protocol path to (groups and expiries come from ``group`` and
``expire``).  Served only by a service built with ``test_control``."""

from __future__ import annotations

from typing import Any

from conformance.embedded.ledger.consolidation import Consolidation
from conformance.embedded.ledger.core import LedgerCore
from conformance.embedded.ledger.params import (
    MAX_RATIONALE_CHARS,
    MAX_SESSION_CHARS,
    SCOPE_KEY,
    check_names,
    get_body,
    get_int,
    get_kind,
    get_text,
    invalid,
)
from conformance.embedded.ledger.records import build_packet, fresh_row
from conformance.embedded.ledger.time import format_time, parse_time


class LedgerControls(LedgerCore):
    """The ``_t_*`` handlers: ``(params, now) -> result``, run under the lock like a method."""

    def _t_reset(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """An empty ledger with default settings, on the real clock again."""
        check_names(p, ())
        self._store.reset()
        self._frozen = None
        return {"ok": True}

    def _t_set_clock(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """Freeze the store's clock at ``now``; ``null`` returns to the real clock."""
        check_names(p, ("now",), nullable=("now",))
        value = p["now"]
        self._frozen = None if value is None else parse_time(value, "now")
        return {"now": format_time(self.now())}

    def _t_sweep(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-EXP.2-.4: the sweep's instant is its argument, never the clock."""
        check_names(p, ("at",))
        at = parse_time(p["at"], "at")
        with self._store.write():
            expired: list[str] = []
            strict = self.quirks("led-sweep-strict-boundary")  # mutant: "<" where "<=" is due
            for row in self._store.due_for_expiry(SCOPE_KEY, at - 1 if strict else at):
                assert row.expires_at is not None
                self._store.update(
                    row.id,
                    {
                        "status": "deleted" if self.quirks("led-expiry-deletes") else "expired",
                        "valid_to": at
                        if self.quirks("led-sweep-closes-at-sweep")
                        else row.expires_at,
                        "updated_at": at,
                    },
                )
                expired.append(row.id)
        return {"expired": expired}

    def _t_propose(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-REVIEW.1, LED-REVIEW.4, LED-INT.2, LED-PROV.2: exactly what an extractor
        proposal carries, never a conflict group."""
        check_names(p, ("body",), ("kind", "sessionId", "confidenceBps", "rationale"))
        body = get_body(p)
        kind = get_kind(p, "preference")
        session = get_text(p, "sessionId", MAX_SESSION_CHARS)
        lenient = self.quirks("ledger-test-controls-unchecked")
        confidence = get_int(p, "confidenceBps", 0, 10_000)
        rationale = get_text(p, "rationale", 10**9 if lenient else MAX_RATIONALE_CHARS)
        if not self.quirks("led-credential-on-propose"):  # mutant: proposals skip the detector
            self.check_credential(body)
        row = fresh_row(
            body=body,
            kind=kind,
            provenance="model_proposal",
            status="proposed",
            at=now,
            source_session_id=session,
            confidence_bps=confidence,
            rationale=rationale,
        )
        return self.insert_within_budget(row)

    def _t_consolidate(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-GATE.*, LED-VOCAB.*: one batch, one instant (the store's now)."""
        check_names(p, ("operations",))
        operations = p["operations"]
        if not isinstance(operations, list):
            raise invalid("'operations' must be an array")
        with self._store.write():
            return Consolidation(self, now).run(operations)

    def _t_packet(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-PACKET.1-.5."""
        check_names(p, ())
        lines = build_packet(self._store.by_status(SCOPE_KEY, "active"), self.quirks)
        return {"lines": lines, "text": "\n".join(lines)}
