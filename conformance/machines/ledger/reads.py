"""The ledger machine's reads, packets and boundary rules: listings, history reads at the
instants the run wrote at, packets (and two pins at the 4000-character cap), invalid calls,
credential-shaped bodies and bodies at the 4000-character bound."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import multiple, precondition, rule

from conformance.machines import live
from conformance.machines.checks import checks
from conformance.machines.ledger.alphabet import (
    BOUNDARY_BODIES,
    CREDENTIALS,
    FACT_LINE_OVERHEAD,
    INVALID_CALLS,
    LOOKALIKES,
    SCOPE,
    records,
)
from conformance.machines.ledger.base import LedgerMachineBase
from reference.ledger.timefmt import format_rfc3339


def room_for_two(machine: Any) -> bool:
    """Two records can be active at once: held already, or written into the room left
    (a named function, not a lambda: see ``lifecycle.has_active``)."""
    return bool(len(machine._with_status("active")) + max(0, machine._room()) >= 2)


class ReadRules(LedgerMachineBase):
    """Reads, packets, invalid calls and boundary bodies."""

    # -- reads ----------------------------------------------------------------------------

    @checks("LED-LIST.1", "LED-LIST.2", "LED-LIST.3", "LED-STATUS.4", "LED-WIRE.4")
    @precondition(live)
    @rule(status=st.sampled_from([None, "active", "proposed"]))
    def list_records(self, status: str | None) -> None:
        args: dict[str, Any] = {"scopeKey": SCOPE}
        if status is not None:
            args["status"] = status
        self._step("list", args)

    @checks("LED-ASOF.1", "LED-ASOF.2", "LED-ASOF.3", "LED-INT.1", "LED-INT.3")
    @precondition(live)
    @rule(pick=st.integers(0, 1000), nudge=st.sampled_from([-1, 0, 0, 1]))
    def list_as_of(self, pick: int, nudge: int) -> None:
        """A history read at an instant some interval starts or ends at (± 1 ms)."""
        model = self.ledger.model
        instants = sorted(
            {r.valid_from for r in model.records}
            | {r.valid_to for r in model.records if r.valid_to is not None}
            | {self.ledger.now}
        )
        at = instants[pick % len(instants)] + nudge
        self._step("list_as_of", {"scopeKey": SCOPE, "at": format_rfc3339(at)})

    @checks("LED-ASOF.1", "LED-ASOF.2", "LED-INT.1", "LED-INT.3", "LED-INT.4")
    @precondition(live)
    @rule()
    def history(self) -> None:
        """A history read just before the latest instant a record stopped holding: the
        boundary where a gap or an overlap would show.  (Hypothesis tries argument-free rules
        first, so these two reads are the machine's most frequent steps.)"""
        model = self.ledger.model
        closes = [
            r.valid_to
            for r in model.records
            if r.valid_to is not None and r.valid_to > r.valid_from
        ]
        at = max(closes) - 1 if closes else self.ledger.now
        self._step("list_as_of", {"scopeKey": SCOPE, "at": format_rfc3339(at)})

    @checks("LED-LIST.2", "LED-STATUS.4")
    @precondition(live)
    @rule()
    def observe(self) -> None:
        """The active set."""
        self._step("list", {"scopeKey": SCOPE})

    @checks("LED-PACKET.1", "LED-PACKET.2", "LED-PACKET.3", "LED-PACKET.5", "LED-CONS.2")
    @precondition(live)
    @rule(settings_too=st.booleans())
    def packet(self, settings_too: bool) -> None:
        self._step("packet", {})
        if settings_too:
            self._step("get_settings", {})

    @checks("LED-PACKET.4", "LED-PACKET.3")
    @precondition(live)
    @precondition(room_for_two)
    @rule(target=records, data=st.data(), delta=st.sampled_from([0, 0, -1, 1]))
    def packet_near_cap(self, data: st.DataObject, delta: int) -> Any:
        """Two fresh explicit pins whose packet lines add up to 4000 characters plus
        ``delta``: with the newline between them the text is 4000 + ``delta`` + 1, so the
        older one fits only when ``delta`` is -1 (LED-PACKET.4: the cap counts the newlines,
        and a line that does not fit is dropped whole).  Each pin is an edit of an active
        record when there is one, else a save (the newest pins lead the packet,
        LED-PACKET.3)."""
        active = data.draw(st.permutations(self._with_status("active")), label="edited")
        total = 4000 + delta - 2 * FACT_LINE_OVERHEAD
        names: list[str] = []
        for length in (total // 2, total - total // 2):
            prefix = f"fill {self._fresh('')} "
            body = {"$concat": [prefix, {"$repeat": "x", "times": length - len(prefix)}]}
            name = self._fresh("r")
            if active:
                args = {"recordId": active.pop(0), "body": body, "kind": "fact"}
                self._step("supersede", args, {name: "id"})
            else:
                self._step("save", {"body": body, "kind": "fact"}, {name: "id"})
            names.append(name)
        self._step("packet", {})
        return multiple(*[f"${n}" for n in names if n in self.ledger.symbols])

    # -- invalid calls --------------------------------------------------------------------

    @checks(
            "LED-WIRE.1", "LED-WIRE.2", "LED-WIRE.3", "LED-WIRE.8", "LED-SAVE.2", "LED-SAVE.3",
            "LED-REC.2", "LED-LIST.1", "LED-GROUP.5", "LED-ASOF.3",
        )  # fmt: skip
    @precondition(live)
    @rule(case=st.sampled_from(INVALID_CALLS))
    def invalid_call(self, case: tuple[str, dict[str, Any]]) -> None:
        op, args = case
        self._step(op, args)

    @checks("LED-CRED.1", "LED-CRED.2", "LED-CRED.3")
    @precondition(live)
    @rule(
        body=st.sampled_from(CREDENTIALS + LOOKALIKES),
        edit=st.none() | records,
        propose=st.booleans(),
    )
    def credential_body(self, body: str, edit: str | None, propose: bool) -> None:
        """A credential-shaped body (or a look-alike) on every path a body enters by: a save,
        an edit, a proposal (LED-CRED.1-.3); consolidation's paths are :meth:`gate_probe`'s."""
        if edit is not None:
            self._step("supersede", {"recordId": edit, "body": body})
        elif propose:
            self._step("propose", {"body": body})
        else:
            self._step("save", {"body": body})

    @checks("LED-SAVE.3", "LED-REC.6")
    @precondition(live)
    @rule(
        body=st.sampled_from(BOUNDARY_BODIES),
        via=st.sampled_from(["save", "save", "edit", "propose"]),
        data=st.data(),
    )
    def boundary_body(self, body: Any, via: str, data: st.DataObject) -> None:
        """A body at the 4000-character bound, bare or wrapped in whitespace: the bound is on
        the trimmed body (LED-SAVE.3, LED-REC.6)."""
        clauses = ("LED-SAVE.3", "LED-REC.6")
        active = self._with_status("active")
        if via == "edit" and active:
            rec = data.draw(st.sampled_from(active), label="active record")
            self._step("supersede", {"recordId": rec, "body": body}, clauses=clauses)
        elif via == "propose":
            self._step("propose", {"body": body}, clauses=clauses)
        else:
            self._step("save", {"body": body}, clauses=clauses)
