"""One consolidation batch through the gate (``_test/consolidate``; LED-GATE.*, LED-VOCAB.*).

Every element is classified shape first (invalid), then the gate (refused), then ``keep``
(declined), else applied; every stamp of the batch is the one run instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.embedded.ledger.params import (
    DAY_MS,
    MAX_AFTER_DAYS,
    MAX_BODY_CHARS,
    MAX_OPERATIONS,
    MAX_SUBJECT_CHARS,
    MAX_TARGETS,
    SCOPE_KEY,
    as_integer,
    trim,
)
from conformance.embedded.ledger.records import fresh_row, opaque_group_label
from conformance.embedded.ledger.store import Row
from conformance.embedded.ledger.time import MAX_INSTANT_MS

if TYPE_CHECKING:
    from conformance.embedded.ledger.core import LedgerCore

_OPERATION_FIELDS: dict[str, tuple[str, ...]] = {
    "merge": ("body",),
    "correct": ("body",),
    "expire": ("afterDays",),
    "group": ("subject",),
    "retire": (),
    "keep": (),
}
_ARITY: dict[str, tuple[int, int]] = {
    "merge": (2, MAX_TARGETS),
    "correct": (1, 1),
    "expire": (1, 1),
    "group": (2, MAX_TARGETS),
    "retire": (1, 1),
    "keep": (1, 1),
}


class Verdict(Exception):
    """How the gate classified an element that was not applied."""

    def __init__(self, outcome: str, reason: str, *, must: bool = False) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.must = must  # invalid whatever a store picks (a field the gate derives, LED-GATE.5)


class Consolidation:
    """One consolidation batch through the gate, every stamp at the one run instant
    (LED-GATE.1-.9).  Runs inside the caller's transaction."""

    def __init__(self, service: LedgerCore, at: int) -> None:
        self.service = service
        self.store = service.store
        self.at = at

    def run(self, operations: list[Any]) -> dict[str, int]:
        counts = {"applied": 0, "invalid": 0, "refused": 0, "declined": 0}
        quirks = self.service.quirks
        for index, element in enumerate(operations):
            extra = 1 if quirks("led-21st-element-applied") else 0  # mutant
            if index >= MAX_OPERATIONS + extra:  # LED-GATE.6: never looked at
                if quirks("ledger-past-20-uncounted"):
                    continue
                counts["refused" if quirks("ledger-past-20-refused") else "invalid"] += 1
                continue
            try:
                self.apply(element)
                if self.service.quirks("led-one-instant-per-element"):  # mutant: clock per element
                    self.at += 1
            except Verdict as verdict:
                outcome = verdict.outcome
                if outcome == "invalid" and not verdict.must and quirks("ledger-shape-refused"):
                    outcome = "refused"
                counts[outcome] += 1
            else:
                counts["applied"] += 1
        return counts

    def apply(self, element: object) -> None:
        """Shape first (invalid), then the gate (refused), then keep (declined), else apply."""
        operation, targets, element = self._shape(element)
        fields = _OPERATION_FIELDS[operation]
        body = self._body(element) if "body" in fields else ""
        after_days = self._after_days(element) if "afterDays" in fields else 0
        subject = self._subject(element) if "subject" in fields else ""
        rows = self._gate(operation, targets, body, after_days)
        if operation == "keep" and not self.service.quirks("led-keep-counted-applied"):
            raise Verdict("declined", "keep")
        if operation == "keep":
            return
        self._perform(operation, rows, body, after_days, subject)

    def _shape(self, element: object) -> tuple[str, list[str], dict[str, Any]]:
        """The element's operation and targets once its shape holds, else ``Verdict``
        (invalid; an operation outside the vocabulary is refused)."""
        if not isinstance(element, dict):
            raise Verdict("invalid", "not an object")
        operation = element.get("operation")
        if not isinstance(operation, str):
            raise Verdict("invalid", "operation missing or not a string")
        if operation not in _OPERATION_FIELDS:
            if self.service.quirks("led-unknown-operation-invalid"):  # mutant: shape, not gate
                raise Verdict("invalid", "outside the vocabulary")
            raise Verdict("refused", "outside the vocabulary")
        if self.store.settings(SCOPE_KEY).mode == "off" and self.service.quirks(
            "led-gate-reads-mode"
        ):  # mutant: consolidation off refuses everything
            raise Verdict("refused", "consolidation is off")
        fields = _OPERATION_FIELDS[operation]
        for name in element:
            if name not in ("operation", "targets", *fields):
                must = not (operation == "keep" and name == "body")
                raise Verdict("invalid", f"{operation} does not take {name}", must=must)
        targets = element.get("targets")
        lo, hi = _ARITY[operation]
        if (
            not isinstance(targets, list)
            or not all(isinstance(t, str) and t for t in targets)
            or len(set(targets)) != len(targets)
            or not lo <= len(targets) <= hi
        ):
            raise Verdict("invalid", "targets")
        return operation, targets, element

    def _gate(self, operation: str, targets: list[str], body: str, after_days: int) -> list[Row]:
        """The target rows of a well-shaped element the gate lets through, else ``Verdict``
        (refused)."""
        rows: list[Row] = []
        for target in targets:
            row = self.store.get(target)
            if row is None or row.scope_key != SCOPE_KEY:
                raise Verdict("refused", "target not in the scope")
            if row.status != "active" and not (
                operation == "expire" and self.service.quirks("led-expire-dead-target")
            ):  # mutant above: expire takes any target that exists
                raise Verdict("refused", "target not active")
            rows.append(row)
        removal = self.store.settings(SCOPE_KEY).allow_removal
        if (
            operation == "retire"
            and not removal
            and not self.service.quirks("led-retire-ignores-removal")
        ):
            raise Verdict("refused", "removal not allowed")
        skip = (operation == "merge" and self.service.quirks("led-credential-on-merge")) or (
            operation == "correct" and self.service.quirks("led-credential-on-correct")
        )  # mutants: one consolidation path forgets the credential detector
        if body and not skip and self.service.is_credential(body):
            raise Verdict("refused", "credential-shaped body")
        if operation == "expire" and self.at + after_days * DAY_MS > MAX_INSTANT_MS:
            # Not in the spec: an expiry past 9999-12-31 has no RFC 3339 form to answer with.
            raise Verdict("refused", "expiry beyond the representable range")
        return rows

    def _perform(
        self, operation: str, rows: list[Row], body: str, after_days: int, subject: str
    ) -> None:
        """Apply an element the gate let through (any operation but ``keep``)."""
        if operation == "merge":
            self._merge(rows, body)
        elif operation == "correct":
            self.service.replace_record(
                rows[0], self.at, body=body, kind=rows[0].kind, provenance="model_consolidation"
            )
        elif operation == "expire":
            start = (
                rows[0].created_at if self.service.quirks("led-expire-from-created") else self.at
            )
            self.store.update(
                rows[0].id, {"expires_at": start + after_days * DAY_MS, "updated_at": self.at}
            )
        elif operation == "group":
            self._group(rows, subject)
        else:  # retire
            self.service.tombstone(rows[0], self.at)

    @staticmethod
    def _body(element: dict[str, Any]) -> str:
        value = element.get("body")
        if not isinstance(value, str):
            raise Verdict("invalid", "body")
        trimmed = trim(value)
        if not trimmed or len(trimmed) > MAX_BODY_CHARS:
            raise Verdict("invalid", "body")
        return trimmed

    def _after_days(self, element: dict[str, Any]) -> int:
        value = element.get("afterDays")
        if isinstance(value, float) and self.service.quirks("ledger-integral-floats-refused"):
            raise Verdict("invalid", "afterDays")
        days = as_integer(value)
        if days is None or not 1 <= days <= MAX_AFTER_DAYS:
            raise Verdict("invalid", "afterDays")
        return days

    def _subject(self, element: dict[str, Any]) -> str:
        value = element.get("subject")
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_SUBJECT_CHARS:
            raise Verdict("invalid", "subject")
        if self.service.quirks("ledger-groups-casefolded"):
            return value.strip().casefold()
        if self.service.quirks("ledger-groups-opaque"):
            return opaque_group_label(value)
        return value

    def _merge(self, rows: list[Row], body: str) -> None:
        """LED-VOCAB.2."""
        kinds = {r.kind for r in rows}
        quirks = self.service.quirks
        new = fresh_row(
            body=body,
            kind=kinds.pop() if len(kinds) == 1 else "fact",
            provenance="model_consolidation",
            status="active",
            at=self.at,
            supersedes=rows[0].id,
            conflict_group=(
                next((r.conflict_group for r in rows if r.conflict_group), None)
                if quirks("ledger-merge-keeps-a-group")
                else None
            ),
            source_session_id=(
                rows[0].source_session_id if quirks("ledger-successor-keeps-session") else None
            ),
        )
        for row in rows:
            self.service.supersede_row(row, new.id, self.at)
        self.store.insert(new)

    def _group(self, rows: list[Row], subject: str) -> None:
        """LED-VOCAB.5: latest update survives (ties: written later), keeps its ``validFrom``,
        and is stamped with the run instant; every other member is superseded by it."""
        members = {r.id: r for r in rows}
        for existing in self.store.active_in_group(SCOPE_KEY, subject):
            members.setdefault(existing.id, existing)
        pick = min if self.service.quirks("led-group-keeps-oldest") else max
        survivor = pick(members.values(), key=lambda r: (r.updated_at, r.seq))
        for loser in members.values():
            if loser.id != survivor.id:
                late = 1 if self.service.quirks("led-group-closes-loser-late") else 0  # mutant
                self.store.update(
                    loser.id,
                    {
                        "status": "superseded",
                        "valid_to": self.at + late,
                        "updated_at": self.at,
                        "superseded_by": survivor.id,
                        "conflict_group": subject,
                    },
                )
        self.store.update(survivor.id, {"conflict_group": subject, "updated_at": self.at})
