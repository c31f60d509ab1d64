"""The ledger machine's base: per-run state and the helpers every group of rules shares --
what the model holds (records by status, room in the budget), fresh names and bodies, and
:meth:`LedgerMachineBase._step`, which runs a call and then the read that checks it."""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import multiple

from conformance.drivers.ledger.driver import LedgerDriver
from conformance.drivers.ledger.steps import OPS
from conformance.machines import DifferentialMachine
from conformance.machines.ledger.alphabet import CHECK_AFTER, DEAD, SCOPE, _uniq
from conformance.oracle.ledger import method_clauses
from conformance.scenario import Step
from reference.ledger.records import LedgerRecord, find_record, held, settings_for
from reference.ledger.timefmt import format_rfc3339


class LedgerMachineBase(DifferentialMachine):
    """State and helpers shared by the ledger machine's rules (no rules of its own)."""

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self._n = 0

    # -- helpers --------------------------------------------------------------------------

    @property
    def ledger(self) -> LedgerDriver:
        """The driver, as the ledger driver it is (its model and symbols steer the rules)."""
        assert isinstance(self.driver, LedgerDriver)
        return self.driver

    def _caps(self) -> frozenset[str]:
        return self.driver.capabilities()

    def _fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def _body(self, style: str, word: str) -> str:
        n = self._fresh("")
        if style == "padded":
            return f"  {word} note {n}\t "
        if style == "multiline":
            return f"{word}\r\nline {n}"
        return f"{word} note {n}"

    def _with_status(self, status: str) -> list[str]:
        """``$name`` of every bound record the model holds in ``status`` (sorted: replayable)."""
        symbols = self.ledger.symbols
        model = self.ledger.model
        out = []
        for name, mid in sorted(symbols.items()):
            rec = find_record(model, mid)
            if rec is not None and rec.status == status:
                out.append(f"${name}")
        return out

    def _record(self, ref: Any) -> LedgerRecord | None:
        """The model's record a ``$name`` (or a bare model id) stands for, if any."""
        if not isinstance(ref, str):
            return None
        mid = self.ledger.symbols.get(ref[1:], ref) if ref.startswith("$") else ref
        return find_record(self.ledger.model, mid)

    def _dead(self) -> list[str]:
        """``$name`` of every bound record an element may not target (LED-GATE.3)."""
        return [n for status in DEAD for n in self._with_status(status)]

    def _room(self) -> int:
        """How many more records the budget takes now (LED-BUDGET.2)."""
        model = self.ledger.model
        return settings_for(model, SCOPE).max_records - held(model, SCOPE)

    def _step(
        self,
        op: str,
        args: dict[str, Any],
        bind: dict[str, Any] | None = None,
        *,
        check: bool = True,
        clauses: tuple[str, ...] = (),
    ) -> Any:
        """Run one call; after a call that changed the ledger, one read of what it now holds
        (see :data:`CHECK_AFTER`) under that call's clauses, so a wrong state is blamed on the
        call that made it, not on a later, unrelated one.

        ``clauses``: what this call was built to check beyond its method's own clauses (a
        boundary value, a gate decision); the call and its check read carry them, so a
        divergence they show names the rule the call exercises."""
        before = self.ledger.model
        outcome = self.run_step(Step(op=op, args=args, bind=bind or {}, clauses=list(clauses)))
        changed = self.ledger.model != before
        if check and op in CHECK_AFTER and outcome.verdict == "pass" and changed:
            self._check(op, extra=clauses)
            if op == "sweep":
                self._history_after_sweep(before)
        return outcome

    def _check(
        self, op: str, bind: dict[str, Any] | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        """The read :data:`CHECK_AFTER` names for ``op``, under ``op``'s clauses (and
        ``extra``, the clauses the call itself was built to check)."""
        if self.stopped is not None:
            return
        read_op, read_args = CHECK_AFTER[op]
        self.run_step(
            Step(
                op=read_op,
                args=dict(read_args),
                bind=bind or {},
                clauses=list(_uniq(method_clauses(OPS[op].method) + extra)),
                note=f"what the ledger holds right after step {len(self.recorded) - 1} ({op})",
            )
        )

    def _history_after_sweep(self, before: Any) -> None:
        """A history read inside the interval of a record the sweep just expired: an expired
        record is history, still shown with its body, not a tombstone (LED-EXP.3)."""
        if self.stopped is not None:
            return
        was = {r.id: r.status for r in before.records}
        expired = [
            r
            for r in self.ledger.model.records
            if r.status == "expired" and was.get(r.id) == "active" and r.valid_to is not None
        ]
        if not expired:
            return
        rec = min(expired, key=lambda r: (r.valid_to or 0, r.seq))
        at = max(rec.valid_from, (rec.valid_to or 0) - 1)
        self.run_step(
            Step(
                op="list_as_of",
                args={"scopeKey": SCOPE, "at": format_rfc3339(at)},
                clauses=list(_uniq(method_clauses(OPS["sweep"].method) + ("LED-EXP.3",))),
                note=f"history just before the expiry the sweep of step {len(self.recorded) - 1}"
                " applied",
            )
        )

    def _bound(self, name: str) -> Any:
        """The bundle entry for ``$name`` if the step bound it (the model accepted the call)."""
        symbols = self.ledger.symbols
        return multiple(f"${name}") if name in symbols else multiple()
