"""The ledger machine's setup and record lifecycle rules: settings and the starting ledger,
saves, edits, deletes, proposals and their decisions, settings updates, and time (clock jumps,
expiries, sweeps)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, precondition, rule

from conformance.machines import live
from conformance.machines.checks import checks
from conformance.machines.ledger.alphabet import (
    CROWD,
    GROUPS,
    SCOPE,
    WORDS,
    body_styles,
    kinds,
    records,
)
from conformance.machines.ledger.base import LedgerMachineBase
from conformance.scenario import Step
from conformance.targets.ledger import CLOCK, TEST_CONTROL
from reference.ledger.timefmt import MS_PER_DAY, format_rfc3339

# Preconditions are named functions, never lambdas: Hypothesis describes a lambda by parsing its
# source (``ast.parse``), which CPython 3.11 does not do safely from several threads at once
# (lanes are threads): "AST constructor recursion depth mismatch".


def has_active(machine: Any) -> bool:
    """Some record is active now."""
    return bool(machine._with_status("active"))


def has_proposal(machine: Any) -> bool:
    """Some record is a proposal awaiting a decision."""
    return bool(machine._with_status("proposed"))


def has_clock(machine: Any) -> bool:
    """The target lets the harness set its clock."""
    return CLOCK in machine._caps()


def has_clock_and_active(machine: Any) -> bool:
    """:func:`has_clock` and :func:`has_active`."""
    return has_clock(machine) and has_active(machine)


class LifecycleRules(LedgerMachineBase):
    """Setup, writes and time."""

    # -- setup ----------------------------------------------------------------------------

    @checks(
            "LED-CONS.2", "LED-BUDGET.1", "LED-BUDGET.4", "LED-SAVE.1", "LED-REVIEW.1",
            "LED-LIST.2", "LED-WIRE.7",
        )  # fmt: skip
    @initialize(
        target=records,
        budget=st.sampled_from([3, 5, 8]),
        mode=st.sampled_from(["off", "propose"]),
        removal=st.booleans(),
        room=st.sampled_from([None, None, 1, 0]),
        group_pair=st.booleans(),
        crowd=st.sampled_from([False] * 39 + [True]),
    )
    def configure(
        self,
        budget: int,
        mode: str,
        removal: bool,
        room: int | None,
        group_pair: bool,
        crowd: bool = False,
    ) -> Any:
        """Settings first; then, maybe, a ledger ``room`` records short of its budget (the
        budget refusals and replacements at the ceiling are one step away) and two proposals
        in one conflict group (an approval must retire the other member) — or, now and then,
        a crowded ledger: :data:`CROWD` active records, one more than a listing holds (the
        first read shows whether the 50 cut holds, LED-LIST.2)."""
        if TEST_CONTROL not in self._caps():
            # Nothing can be judged without the test controls: this step is skipped with the
            # reason (recorded in the run's details) and the example is abandoned.
            self.run_step(Step(op="propose", args={"body": "needs test controls"}))
        if crowd:
            budget, room = CROWD + 9, None
        self._step(
            "update_settings",
            {"mode": mode, "maxRecords": budget, "allowRemoval": removal},
            check=False,
        )
        names: list[str] = []
        if crowd:
            for i in range(CROWD):
                name = self._fresh("r")
                args = {"body": self._body("plain", WORDS[i % len(WORDS)])}
                self._step("save", args, {name: "id"}, check=False)
                names.append(name)
            self._step("list", {"scopeKey": SCOPE})
        elif room is not None:
            for i in range(max(0, budget - room - (1 if group_pair else 0))):
                name = self._fresh("r")
                self._step(
                    "save",
                    {"body": self._body("plain", WORDS[i % len(WORDS)])},
                    {name: "id"},
                    check=False,
                )
                names.append(name)
        if group_pair:
            # a group is reached the way a real ledger reaches one: two active records, then
            # the consolidation ``group`` operation (the later one survives, LED-VOCAB.5)
            pair: list[str] = []
            for word in ("vim", "emacs"):
                name = self._fresh("r")
                self._step("save", {"body": self._body("plain", word)}, {name: "id"}, check=False)
                pair.append(name)
            if all(n in self.ledger.symbols for n in pair):
                element = {"operation": "group", "targets": [f"${n}" for n in pair]}
                element["subject"] = GROUPS[0]
                self._step("consolidate", {"operations": [element]}, check=False)
            names += pair
        return multiple(*[f"${n}" for n in names if n in self.ledger.symbols])

    # -- writes ---------------------------------------------------------------------------

    @checks(
            "LED-REC.1", "LED-REC.2", "LED-REC.3", "LED-REC.5", "LED-REC.6", "LED-PROV.1",
            "LED-STATUS.1", "LED-SAVE.1", "LED-BUDGET.1", "LED-BUDGET.2", "LED-BUDGET.5",
            "LED-EXP.1", "LED-WIRE.4", "LED-WIRE.5", "LED-WIRE.6", "LED-WIRE.8",
        )  # fmt: skip
    @precondition(live)
    @rule(
        target=records,
        style=body_styles,
        word=st.sampled_from(WORDS),
        kind=kinds,
        session=st.none() | st.just("session-1"),
    )
    def save(self, style: str, word: str, kind: str | None, session: str | None) -> Any:
        args: dict[str, Any] = {"body": self._body(style, word)}
        if kind is not None:
            args["kind"] = kind
        if session is not None:
            args["sessionId"] = session
        name = self._fresh("r")
        self._step("save", args, {name: "id"})
        return self._bound(name)

    @checks(
            "LED-EDIT.1", "LED-EDIT.2", "LED-EDIT.3", "LED-INT.3", "LED-BUDGET.3", "LED-GROUP.4",
            "LED-STATUS.2", "LED-STATUS.3", "LED-PROV.1", "LED-REC.4",
        )  # fmt: skip
    @precondition(live)
    @rule(target=records, rec=records, style=body_styles, word=st.sampled_from(WORDS), kind=kinds)
    def supersede(self, rec: str, style: str, word: str, kind: str | None) -> Any:
        args: dict[str, Any] = {"recordId": rec, "body": self._body(style, word)}
        if kind is not None:
            args["kind"] = kind
        name = self._fresh("r")
        self._step("supersede", args, {name: "id"})
        return self._bound(name)

    @checks("LED-FORGET.1", "LED-FORGET.2", "LED-INT.4", "LED-STATUS.3", "LED-REC.4")
    @precondition(live)
    @rule(rec=records)
    def delete(self, rec: str) -> None:
        self._step("delete", {"recordId": rec})

    @checks("LED-EDIT.1", "LED-EDIT.3", "LED-INT.3", "LED-BUDGET.3")
    @precondition(live)
    @precondition(has_active)
    @rule(
        target=records, data=st.data(), style=body_styles, word=st.sampled_from(WORDS), kind=kinds
    )
    def edit_live(self, data: st.DataObject, style: str, word: str, kind: str | None) -> Any:
        """An edit of a record that is active now (the bundle's picks are often dead)."""
        rec = data.draw(st.sampled_from(self._with_status("active")), label="active record")
        return self.supersede(rec, style, word, kind)

    @checks("LED-FORGET.1", "LED-FORGET.3", "LED-INT.4", "LED-REC.4")
    @precondition(live)
    @precondition(has_active)
    @rule(data=st.data())
    def delete_live(self, data: st.DataObject) -> None:
        rec = data.draw(st.sampled_from(self._with_status("active")), label="active record")
        self._step("delete", {"recordId": rec})

    @checks("LED-REVIEW.2", "LED-REVIEW.3", "LED-INT.2", "LED-STATUS.2", "LED-GROUP.2")
    @precondition(live)
    @precondition(has_proposal)
    @rule(data=st.data(), approve=st.booleans())
    def decide_proposal(self, data: st.DataObject, approve: bool) -> None:
        rec = data.draw(st.sampled_from(self._with_status("proposed")), label="proposal")
        self._step("approve" if approve else "reject", {"recordId": rec})

    @checks("LED-REVIEW.1", "LED-REVIEW.4", "LED-PROV.2", "LED-BUDGET.2")
    @precondition(live)
    @rule(
        target=records,
        word=st.sampled_from(WORDS),
        kind=kinds,
        confidence=st.none() | st.sampled_from([0, 5000, 9000, 10000]),
        rationale=st.none() | st.just("seen twice"),
    )
    def propose(
        self, word: str, kind: str | None, confidence: int | None, rationale: str | None
    ) -> Any:
        """An extractor proposal: exactly what the extractor carries, never a group."""
        args: dict[str, Any] = {"body": self._body("plain", word)}
        for key, value in (
            ("kind", kind),
            ("confidenceBps", confidence),
            ("rationale", rationale),
        ):
            if value is not None:
                args[key] = value
        name = self._fresh("r")
        self._step("propose", args, {name: "id"})
        return self._bound(name)

    @checks("LED-REVIEW.2", "LED-STATUS.3")
    @precondition(live)
    @rule(rec=records)
    def approve(self, rec: str) -> None:
        self._step("approve", {"recordId": rec})

    @checks("LED-REVIEW.3", "LED-INT.2", "LED-STATUS.3")
    @precondition(live)
    @rule(rec=records)
    def reject(self, rec: str) -> None:
        self._step("reject", {"recordId": rec})

    @checks("LED-CONS.1", "LED-CONS.2", "LED-BUDGET.4")
    @precondition(live)
    @rule(
        mode=st.sampled_from(["off", "propose"]),
        budget=st.none() | st.sampled_from([1, 3, 6, 200]),
        removal=st.none() | st.booleans(),
        debounce=st.none() | st.sampled_from([30, 600, 86400]),
    )
    def update_settings(
        self, mode: str, budget: int | None, removal: bool | None, debounce: int | None
    ) -> None:
        args: dict[str, Any] = {"mode": mode}
        for key, value in (
            ("maxRecords", budget),
            ("allowRemoval", removal),
            ("debounceSeconds", debounce),
        ):
            if value is not None:
                args[key] = value
        self._step("update_settings", args)

    # -- time -----------------------------------------------------------------------------

    @checks("LED-WIRE.7", "LED-INT.5")
    @precondition(live)
    @precondition(has_clock)
    @rule(delta=st.sampled_from([1, 1000, 3_600_000, MS_PER_DAY]))
    def advance_clock(self, delta: int) -> None:
        self._step("set_clock", {"advance_ms": delta})

    @checks("LED-EXP.5", "LED-VOCAB.4", "LED-GATE.3")
    @precondition(live)
    @rule(rec=records, days=st.sampled_from([1, 2]))
    def expire(self, rec: str, days: int) -> None:
        """An expiry the way a real ledger sets one: the consolidation ``expire`` operation (a
        target that is not active is refused, LED-GATE.3, LED-EXP.5)."""
        element = {"operation": "expire", "targets": [rec], "afterDays": days}
        self._step("consolidate", {"operations": [element]}, clauses=("LED-EXP.5", "LED-VOCAB.4"))

    @checks("LED-EXP.2", "LED-EXP.3", "LED-EXP.5", "LED-VOCAB.4", "LED-GROUP.3")
    @precondition(live)
    @precondition(has_clock_and_active)
    @rule(data=st.data(), sweep=st.sampled_from([None, -1, 0]))
    def expire_live(self, data: st.DataObject, sweep: int | None) -> None:
        """``expire`` on a record that is active now, and maybe a sweep right at the boundary:
        one millisecond before the expiry (nothing expires) or exactly at it (it does; a
        group's last active member expiring leaves a group with none, LED-GROUP.3)."""
        rec = data.draw(st.sampled_from(self._with_status("active")), label="active record")
        element = {"operation": "expire", "targets": [rec], "afterDays": 1}
        self._step("consolidate", {"operations": [element]}, clauses=("LED-EXP.5", "LED-VOCAB.4"))
        model_rec = self._record(rec)
        if sweep is not None and model_rec is not None and model_rec.expires_at is not None:
            self._step("sweep", {"at": format_rfc3339(model_rec.expires_at + sweep)})

    @checks("LED-EXP.2", "LED-EXP.3", "LED-EXP.4")
    @precondition(live)
    @precondition(has_clock)
    @rule(offset=st.sampled_from([0, 1000, MS_PER_DAY, 2 * MS_PER_DAY + 1000]))
    def sweep(self, offset: int) -> None:
        at = self.ledger.now + offset
        self._step("sweep", {"at": format_rfc3339(at)})
