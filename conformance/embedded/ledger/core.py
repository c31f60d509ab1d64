"""``LedgerCore``: the state of the bundled ledger (one SQLite database, one lock, the store's
clock, the catalogue quirks) and the lifecycle steps every ledger method shares — refusing an
unknown record or a wrong status, the budget and credential checks, superseding, tombstoning
and replacing a record (LED-STATUS.3, LED-BUDGET.2, LED-CRED.*, LED-INT.*, LED-FORGET.*).

The methods of the binding build on it in :mod:`.service`, the test controls in
:mod:`.controls`, the consolidation gate in :mod:`.consolidation`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.embedded.catalogue import NONE as NO_QUIRKS
from conformance.embedded.catalogue import Quirks
from conformance.embedded.ledger.params import (
    CREDENTIAL_MESSAGE,
    SCOPE_KEY,
    budget_message,
    refused,
)
from conformance.embedded.ledger.records import fresh_row, record_to_wire, settings_to_wire
from conformance.embedded.ledger.store import LedgerStore, Row
from conformance.embedded.ledger.time import real_clock
from reference.ledger.credentials import DETECTORS, credential_verdict, detect_credential

#: The variant's narrower detector: vendor prefixes and private keys only -- no ``Bearer``,
#: JWT, Notion or ``NAME=value`` shapes (LED-CRED.1 is the reference's list, LED-CRED.6).
_NARROW = tuple(
    pattern
    for name, pattern in DETECTORS
    if name not in ("bearer_token", "jwt", "secret_assignment", "notion_secret")
)


def narrow_detector(body: str) -> bool:
    """Whether the variant's narrower detector reads ``body`` as a credential."""
    return any(p.search(body) is not None for p in _NARROW)


class LedgerCore:
    """One ledger over one SQLite database (``":memory:"`` or a file path).

    ``clock`` gives the store's now in epoch milliseconds (default: the system clock);
    ``quirks`` selects catalogue alterations (allowed variants, mutants) -- production runs
    with none.
    """

    def __init__(
        self,
        db: str | Path = ":memory:",
        clock: Callable[[], int] | None = None,
        quirks: Quirks = NO_QUIRKS,
    ) -> None:
        self.quirks = quirks
        self._store = LedgerStore(str(db))
        self._clock = clock if clock is not None else real_clock
        self._frozen: int | None = None
        self._lock = threading.RLock()

    @property
    def store(self) -> LedgerStore:
        """The storage (tests inspect the SQLite tables through it; hold ``lock`` meanwhile)."""
        return self._store

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def close(self) -> None:
        with self._lock:
            self._store.close()

    def now(self) -> int:
        """The store's current instant: the frozen test clock if set, else ``clock()``."""
        return self._frozen if self._frozen is not None else self._clock()

    # ---- shared lifecycle steps ----------------------------------------------------------

    def existing(self, record_id: str) -> Row:
        """The record of ``account:local`` with this id; an unknown id is refused (1000)."""
        row = self._store.get(record_id)
        if row is None or row.scope_key != SCOPE_KEY:
            raise refused(
                f"No memory record '{record_id}' in scope '{SCOPE_KEY}'. Nothing was changed."
            )
        return row

    @staticmethod
    def require_status(row: Row, status: str, action: str) -> None:
        """A lifecycle refusal unless ``row`` has ``status`` (LED-STATUS.3)."""
        if row.status != status:
            article = "an" if status == "active" else "a"
            raise refused(
                f"Memory record '{row.id}' is {row.status}; only {article} {status} record can"
                f" be {action}. Nothing was changed."
            )

    def check_budget(self) -> None:
        """Refuse growth while held >= maxRecords, with the exact message (LED-BUDGET.2)."""
        held = self._store.held(SCOPE_KEY)
        if self.quirks("led-budget-counts-only-active"):  # mutant: proposals are not counted
            held = len(self._store.by_status(SCOPE_KEY, "active"))
        budget = self._store.settings(SCOPE_KEY).max_records
        if held >= budget and self.quirks("led-budget-evicts-oldest"):
            oldest = self._store.by_status(SCOPE_KEY, "active")[-1:]  # mutant: make room
            for row in oldest:
                self.tombstone(row, self.now())
            held -= len(oldest)
        if held >= budget + (1 if self.quirks("led-budget-off-by-one") else 0):
            raise refused(budget_message(SCOPE_KEY, held, budget))

    def is_credential(self, body: str) -> bool:
        """A credential-shaped body (LED-CRED.1); the variant keeps the thresholds the seed
        leaves open (a ``gh?_`` token of 20-35 characters, a PEM header without END) stored."""
        if self.quirks("ledger-credential-narrow"):  # variant: fewer shapes than the spec's
            return narrow_detector(body)
        if self.quirks("ledger-credential-strict-thresholds"):
            return credential_verdict(body) == "refuse"
        return detect_credential(body) is not None

    def check_credential(self, body: str) -> None:
        """Refuse a credential-shaped body with the exact message (LED-CRED.2)."""
        if self.is_credential(body):
            raise refused(CREDENTIAL_MESSAGE)

    def supersede_row(self, row: Row, by: str, at: int) -> None:
        """Close an active record at ``at`` as superseded by ``by`` (LED-INT.3)."""
        self._store.update(
            row.id,
            {"status": "superseded", "valid_to": at, "updated_at": at, "superseded_by": by},
        )

    def tombstone(self, row: Row, at: int) -> None:
        """Close an active record at ``at`` as deleted and forget its body (LED-FORGET.1,
        LED-FORGET.3, LED-INT.4)."""
        self._store.update(
            row.id,
            {
                "status": "deleted",
                "valid_to": row.valid_from if self.quirks("led-tombstone-empty-interval") else at,
                "updated_at": at,
                "body": row.body if self.quirks("led-tombstone-body-in-history") else "",
            },
        )

    def replace_record(self, old: Row, at: int, *, body: str, kind: str, provenance: str) -> Row:
        """Supersede ``old`` by a new active record opening at ``at`` with its conflict group
        (an edit or a correction: LED-EDIT.1, LED-VOCAB.3, LED-GROUP.4)."""
        new = fresh_row(
            body=body,
            kind=kind,
            provenance=provenance,
            status="active",
            at=at,
            supersedes=old.id,
            conflict_group=None
            if self.quirks("led-replacement-drops-group")
            else old.conflict_group,
            source_session_id=(
                old.source_session_id if self.quirks("ledger-successor-keeps-session") else None
            ),
        )
        if self.quirks("led-supersede-leaves-gap"):  # mutant: the successor opens 1 ms late
            new = replace(new, valid_from=at + 1, created_at=at + 1, updated_at=at + 1)
        closing = at + 1 if self.quirks("led-supersede-overlaps") else at  # mutant: 1 ms overlap
        self.supersede_row(old, new.id, closing)  # first: the group's one active slot frees up
        self._store.insert(new)
        return new

    def fetch(self, record_id: str) -> dict[str, Any]:
        """The record as now stored, for the answer."""
        row = self._store.get(record_id)
        assert row is not None
        return record_to_wire(row)

    def insert_within_budget(self, row: Row) -> dict[str, Any]:
        """Write a new record unless the budget is full (LED-BUDGET.2), in one transaction."""
        if self.quirks("race-ledger-budget-unlocked"):
            self.check_budget()  # outside the transaction, and others run before the insert
            self._lock.release()
            try:
                time.sleep(0.002)
            finally:
                self._lock.acquire()
            with self._store.write():
                self._store.insert(row)
                return self.fetch(row.id)
        with self._store.write():
            self.check_budget()
            self._store.insert(row)
            return self.fetch(row.id)

    def settings_answer(self) -> dict[str, Any]:
        """The settings of ``account:local`` with ``heldRecords``, how full the budget is
        (LED-CONS.2, LED-BUDGET.1)."""
        held = None if self.quirks("ledger-settings-without-held") else self._store.held(SCOPE_KEY)
        return settings_to_wire(SCOPE_KEY, self._store.settings(SCOPE_KEY), held)
