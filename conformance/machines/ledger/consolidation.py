"""The ledger machine's consolidation rules: mixed batches of valid and malformed elements,
gate probes (one element built to meet one rule of the gate), and the clauses a batch names."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import multiple, precondition, rule

from conformance.machines import live
from conformance.machines.checks import checks
from conformance.machines.ledger.alphabet import (
    CREDENTIALS,
    GROUPS,
    SCOPE,
    VOCAB_CLAUSES,
    _batch_clauses,
    _uniq,
    records,
)
from conformance.machines.ledger.base import LedgerMachineBase
from reference.ledger.records import settings_for

#: The shapes of a drawn batch element, in the order drawn (merge and correct twice as likely).
ELEMENT_SHAPES = [
    "merge",
    "correct",
    "expire",
    "group",
    "retire",
    "keep",
    "merge",
    "correct",
    "unknown_op",
    "not_object",
    "extra_field",
    "dup_targets",
    "bad_value",
    "foreign_target",
    "credential",
]
#: The shapes the gate must refuse or find invalid.
MALFORMED_SHAPES = frozenset(
    {
        "not_object",
        "unknown_op",
        "foreign_target",
        "credential",
        "extra_field",
        "dup_targets",
        "bad_value",
    }
)


def has_active_or_dead(machine: Any) -> bool:
    """Some record is active or dead (a named function, not a lambda: see
    ``lifecycle.has_active``)."""
    return bool(machine._with_status("active") or machine._dead())


class ConsolidationRules(LedgerMachineBase):
    """Consolidation batches and gate probes."""

    # -- consolidation --------------------------------------------------------------------

    @checks(
            "LED-VOCAB.1", "LED-VOCAB.2", "LED-VOCAB.3", "LED-VOCAB.4", "LED-VOCAB.5",
            "LED-VOCAB.6", "LED-VOCAB.7", "LED-VOCAB.8", "LED-GATE.1", "LED-GATE.2", "LED-GATE.3",
            "LED-GATE.5", "LED-GATE.8", "LED-GATE.9", "LED-PROV.3",
        )  # fmt: skip
    @precondition(live)
    @rule(target=records, picks=st.lists(records, max_size=4, unique=True), data=st.data())
    def consolidate(self, picks: list[str], data: st.DataObject) -> Any:
        active = self._with_status("active")
        if active and data.draw(st.integers(0, 4), label="live targets") > 0:
            # Mostly aim at records that are active now, so elements apply.
            picks = data.draw(st.permutations(active), label="order")[: max(1, len(picks))]
        count = data.draw(st.sampled_from([1, 1, 2, 3, 21]), label="elements")
        elements: list[Any] = []
        created: list[str] = []
        for _ in range(count):
            element, body = self._element(picks, data)
            elements.append(element)
            if body is not None:
                created.append(body)
        names = self._consolidate(elements)
        return multiple(*[f"${name}" for name in names])

    def _consolidate(self, elements: list[Any], clauses: tuple[str, ...] = ()) -> list[str]:
        """Send one batch; when it changed the ledger, the read of what it left, which binds
        the records a merge or a correction created (their ids first appear there; bodies
        carry a counter, so each selects one record).  Returns the names bound."""
        before_state = self.ledger.model
        before = len(before_state.records)
        clauses = _uniq(clauses + self._gate_clauses(elements))
        outcome = self._step("consolidate", {"operations": elements}, check=False, clauses=clauses)
        if outcome.verdict != "pass" or self.ledger.model == before_state:
            return []
        new = [r for r in self.ledger.model.records[before:] if r.status == "active"]
        bind = {self._fresh("r"): {"body": r.body, "status": "active"} for r in new}
        self._check("consolidate", bind, clauses + _batch_clauses(elements))
        return [name for name in bind if name in self.ledger.symbols]

    def _element(self, targets: list[str], data: st.DataObject) -> tuple[Any, str | None]:
        """One element of a drawn batch and the body it writes (``None``: none); a shape of
        :data:`ELEMENT_SHAPES`, well-formed or not."""
        shape = data.draw(st.sampled_from(ELEMENT_SHAPES), label="shape")
        if shape in MALFORMED_SHAPES:
            return _malformed_element(shape, targets, data), None
        if shape in ("merge", "correct"):
            body = f"{shape}d note {self._fresh('')}"
            k = 2 if shape == "merge" else 1
            return {
                "operation": shape,
                "targets": _pick(targets, k if shape == "correct" else max(2, len(targets))),
                "body": body,
            }, body
        if shape == "expire":
            days = data.draw(st.sampled_from([1, 2, 3650]))
            return {"operation": "expire", "targets": _pick(targets, 1), "afterDays": days}, None
        if shape == "group":
            subject = data.draw(st.sampled_from(GROUPS))
            return {
                "operation": "group",
                "targets": _pick(targets, max(2, len(targets))),
                "subject": subject,
            }, None
        return {"operation": shape, "targets": _pick(targets, 1)}, None

    @checks(
            "LED-GATE.3", "LED-GATE.4", "LED-GATE.6", "LED-GATE.7", "LED-VOCAB.5", "LED-VOCAB.6",
            "LED-CRED.1", "LED-CRED.2", "LED-EXP.5", "LED-GROUP.1", "LED-GROUP.2", "LED-GROUP.5",
        )  # fmt: skip
    @precondition(live)
    @precondition(has_active_or_dead)
    @rule(target=records, data=st.data())
    def gate_probe(self, data: st.DataObject) -> Any:
        """A batch built to meet one rule of the gate, under that rule's clauses (a batch's
        counts cannot say which element went wrong; this one can only go wrong one way):

        * ``credential`` — a ``merge`` or ``correct`` with a credential-shaped body is refused
          (LED-CRED.2, LED-VOCAB.2/.3);
        * ``retire`` — applied with ``allowRemoval`` on, refused with it off (LED-VOCAB.6,
          LED-GATE.4);
        * ``dead`` — a target that is no longer active (superseded, deleted, expired, a
          proposal) is refused, an ``expire`` too (LED-GATE.3, LED-EXP.5);
        * ``group`` — of members written at different instants: the latest update survives,
          the others are superseded by it (LED-VOCAB.5, LED-GROUP.1, LED-GROUP.2);
        * ``mode off`` — a well-formed element applies while consolidation is off
          (LED-GATE.7);
        * ``past 20`` — twenty ``keep`` elements, then one that would apply: it must not
          (LED-GATE.6).
        """
        active = self._with_status("active")
        dead = self._dead()
        mode = settings_for(self.ledger.model, SCOPE).mode
        cases = (["credential", "retire", "past 20"] if active else []) + (["dead"] if dead else [])
        if len(active) >= 2:
            cases.append("group")
        if active and mode == "off":
            cases.append("mode off")
        case = data.draw(st.sampled_from(cases), label="gate case")
        clauses: tuple[str, ...]
        if case == "dead":
            target = data.draw(st.sampled_from(dead), label="dead target")
            op = data.draw(st.sampled_from(["expire", "correct", "keep", "retire"]), label="op")
            elements: list[Any] = [self._probe_element(op, [target])]
            clauses = ("LED-GATE.3", "LED-EXP.5") if op == "expire" else ("LED-GATE.3",)
        else:
            order = data.draw(st.permutations(active), label="targets")
            if case == "credential":
                elements, clauses = self._credential_batch(data, order)
            elif case == "group":
                k = data.draw(st.integers(2, min(3, len(order))), label="members")
                subject = data.draw(st.sampled_from(GROUPS), label="subject")
                elements = [{"operation": "group", "targets": order[:k], "subject": subject}]
                # the only way into a group: one member survives, the others are superseded
                clauses = ("LED-VOCAB.5", "LED-GROUP.1", "LED-GROUP.2", "LED-GROUP.5")
            elif case == "retire":
                elements = [{"operation": "retire", "targets": order[:1]}]
                clauses = ("LED-VOCAB.6", "LED-GATE.4")
            else:
                op = data.draw(st.sampled_from(["keep", "correct", "expire"]), label="op")
                last = self._probe_element(op, order[:1])
                if case == "mode off":
                    elements = [last]
                    clauses = ("LED-GATE.7", VOCAB_CLAUSES[op])
                else:
                    keep = {"operation": "keep", "targets": order[:1]}
                    elements = [dict(keep) for _ in range(20)] + [last]
                    clauses = ("LED-GATE.6",)
        return multiple(*[f"${name}" for name in self._consolidate(elements, clauses)])

    def _credential_batch(
        self, data: st.DataObject, order: list[Any]
    ) -> tuple[list[Any], tuple[str, ...]]:
        """A ``merge`` or ``correct`` whose body is credential-shaped, and its clauses.  The
        store first shows its detector takes the shape (a refused save): it must then refuse it
        everywhere (LED-CRED.2, LED-CRED.6)."""
        op = "merge" if len(order) >= 2 and data.draw(st.booleans()) else "correct"
        body = data.draw(st.sampled_from(CREDENTIALS), label="credential")
        self._step("save", {"body": body}, check=False, clauses=("LED-CRED.2",))
        k = 2 if op == "merge" else 1
        elements = [{"operation": op, "targets": order[:k], "body": body}]
        return elements, ("LED-CRED.2", "LED-CRED.1", VOCAB_CLAUSES[op])

    def _gate_clauses(self, elements: list[Any]) -> tuple[str, ...]:
        """The gate rules a batch meets, judged on the ledger before it: a batch's counts
        cannot say which element went wrong, so the batch names every rule its elements
        exercise (as a corpus scenario names the rules it was written for).  A target that is
        not active, or that an earlier element of the batch may have replaced, is LED-GATE.3;
        ``retire`` with removal off LED-GATE.4; a credential-shaped body LED-CRED.2; an
        element past the 20th LED-GATE.6; any batch while consolidation is off
        LED-GATE.7."""
        model = self.ledger.model
        settings = settings_for(model, SCOPE)
        out: list[str] = ["LED-GATE.7"] if settings.mode == "off" else []
        used: set[str] = set()
        for index, element in enumerate(elements):
            if index >= 20:
                out.append("LED-GATE.6")
                break
            if not isinstance(element, dict) or element.get("operation") not in VOCAB_CLAUSES:
                continue
            op = element["operation"]
            targets = element.get("targets")
            targets = (
                [t for t in targets if isinstance(t, str)] if isinstance(targets, list) else []
            )
            body = element.get("body")
            if any(
                t in used or (rec := self._record(t)) is None or rec.status != "active"
                for t in targets
            ):
                out += ["LED-GATE.3", "LED-EXP.5"] if op == "expire" else ["LED-GATE.3"]
            if op == "retire":
                out += ["LED-VOCAB.6"] + ([] if settings.allow_removal else ["LED-GATE.4"])
            if op in ("merge", "correct") and isinstance(body, str) and body in CREDENTIALS:
                out += ["LED-CRED.2", VOCAB_CLAUSES[op]]
            if op not in ("keep", "expire"):  # these leave their target active
                used.update(targets)
        return _uniq(tuple(out))

    def _probe_element(self, op: str, targets: list[str]) -> dict[str, Any]:
        """A well-formed element of ``op`` on ``targets``."""
        if op == "expire":
            return {"operation": "expire", "targets": targets, "afterDays": 1}
        if op == "correct":
            body = f"corrected note {self._fresh('')}"
            return {"operation": "correct", "targets": targets, "body": body}
        return {"operation": op, "targets": targets}


def _pick(targets: list[str], k: int) -> list[str]:
    """The first ``k`` targets, or all of them when there are fewer."""
    return targets[:k] if len(targets) >= k else list(targets)


def _malformed_element(shape: str, targets: list[str], data: st.DataObject) -> Any:
    """An element of one of the :data:`MALFORMED_SHAPES`."""
    if shape == "not_object":
        return data.draw(st.sampled_from([5, "merge", None, ["keep"]]))
    if shape == "unknown_op":
        return {
            "operation": data.draw(st.sampled_from(["delete", "Merge", "rename"])),
            "targets": _pick(targets, 1),
        }
    if shape == "foreign_target":
        return {"operation": "keep", "targets": ["no-such-record"]}
    if shape == "credential":
        return {
            "operation": "correct",
            "targets": _pick(targets, 1),
            "body": data.draw(st.sampled_from(CREDENTIALS)),
        }
    if shape == "extra_field":
        field = data.draw(
            st.sampled_from(["status", "provenance", "scopeKey", "expiresAt", "validFrom"])
        )
        return {"operation": "keep", "targets": _pick(targets, 1), field: "active"}
    if shape == "dup_targets":
        t = _pick(targets, 1)
        return {"operation": "merge", "targets": t + t, "body": "dup"}
    assert shape == "bad_value"
    return data.draw(
        st.sampled_from(
            [
                {"operation": "expire", "targets": _pick(targets, 1), "afterDays": 0},
                {"operation": "expire", "targets": _pick(targets, 1), "afterDays": 3651},
                {"operation": "expire", "targets": _pick(targets, 1), "afterDays": 1.5},
                {"operation": "group", "targets": _pick(targets, 2), "subject": "   "},
                {"operation": "group", "targets": _pick(targets, 2), "subject": "s" * 81},
                {"operation": "merge", "targets": _pick(targets, 2), "body": "  "},
                {"operation": "keep", "targets": _pick(targets, 1), "body": "why"},
                {"operation": "correct", "targets": _pick(targets, 1)},
                {"operation": "retire", "targets": []},
                {"operation": "keep", "targets": "x"},
            ]
        )
    )
