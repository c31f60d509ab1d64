"""The ledger state machine: random valid and invalid binding calls, model and target in step.

Every call goes through :class:`~conformance.drivers.ledger.LedgerDriver`, so ids, times, ties
and refusals are judged exactly as a scenario's are, and the shrunk failing run is a replay
scenario (``conformance.machines.run_machine`` writes it).  The machine needs
``ledger.test_control`` (every example starts from ``_test/reset``, proposals and consolidation
are test controls); rules that place instants of their own (expiry, sweeps, clock jumps) run
only when the target also has ``ledger.clock``.

The alphabet is chosen so the interesting clauses fire in short runs:

* a small budget (``maxRecords`` 1–5, set first and changed later) so growth is refused
  (LED-BUDGET.2/.4/.5) while replacements go through (LED-EDIT.3, LED-BUDGET.3);
* record ids come from a bundle filled by answers, and every id is used with every method, so
  lifecycle violations (deleting a superseded record, approving an active one …) are frequent
  (LED-STATUS.2/.3);
* proposals in two conflict groups, approvals and consolidation ``group`` (LED-GROUP.*);
* consolidation batches mixing valid elements with every kind of malformed one — wrong arity,
  duplicate targets, fields the operation does not take, non-objects, unknown operations,
  non-active targets, credential bodies, more than 20 elements (LED-VOCAB.*, LED-GATE.*);
* invalid calls: unknown params, ``scopeKey`` on a save, bad kinds, ``null``, wrong JSON types,
  blank, over-long and credential-shaped bodies (LED-WIRE.*, LED-SAVE.*, LED-CRED.*) — raw
  bodies (non-object params, unknown methods, text that is not JSON) are transport probes,
  run once each apart from the machine (:mod:`conformance.machines.probes`);
* bodies with non-ASCII words (accented Latin, ß, CJK, emoji), and a run may start a few
  records short of its budget, or with two proposals in one conflict group
  (:meth:`LedgerMachine.configure`);
* history reads at every instant the run wrote at, one millisecond either side, so a gap or an
  overlap at a supersession boundary shows (LED-INT.*, LED-ASOF.*), and packets (LED-PACKET.*);
* boundary values: bodies of 4000 characters bare or wrapped in whitespace on every path a body
  enters by (LED-SAVE.3, LED-REC.6); two pins whose packet lines add up to 4000 ± 1 characters
  (LED-PACKET.4); now and then a crowded start, 51 active records, one more than a listing
  holds (LED-LIST.2);
* gate probes (:meth:`LedgerMachine.gate_probe`): one element built to meet one rule of the
  gate — a credential-shaped ``merge``/``correct``, ``retire`` with removal on and off, a target
  that is no longer active, a batch while consolidation is off, a 21st element that would apply,
  a ``group`` over members written at different instants (LED-GATE.*, LED-VOCAB.*, LED-CRED.2);
  credential-shaped proposals; approvals of a proposal whose group has an active member
  (LED-GROUP.2).

**Name the rule a call was built for.**  Where the oracle cannot tell which rule a difference
breaks (a batch's counts, an answer refused with the wrong code), the call carries the clauses
it exercises (``Step.clauses``): a batch names the gate rules its elements meet
(:meth:`LedgerMachine._gate_clauses`), a boundary body LED-SAVE.3, an approval against an active
rival LED-GROUP.2 — as a corpus scenario names the rules it was written for.

**Blame the cause.**  After every call that changed the model's ledger, one read of what the
target now holds (the list — active, or proposed after a proposal or a rejection — or the
settings after a settings update, see :data:`CHECK_AFTER`) under that call's clauses, so a
wrong state is caught where it was made: a missed supersede shows at the supersede, not later
as a budget refusal.  The read after a batch also names LED-GATE.8 (one run instant) and the
vocabulary clauses of its operations; after a sweep that expired a record, a history read
inside that record's interval names LED-EXP.3 (an expired record is history, not a tombstone).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, initialize, multiple, precondition, rule

from conformance.drivers.ledger import OPS, LedgerDriver
from conformance.machines import DifferentialMachine, live
from conformance.oracle.ledger import method_clauses
from conformance.scenario import Step
from conformance.targets.ledger import CLOCK, TEST_CONTROL
from reference.ledger.records import LedgerRecord, find_record, held, settings_for
from reference.ledger.timefmt import MS_PER_DAY, format_rfc3339

SCOPE = "account:local"
WORDS = ("tea", "vim", "berlin", "utc", "decaf", "tabs", "café", "Straße", "東京", "🚀 launch")
KINDS = ("preference", "fact", "decision", "constraint")
GROUPS = ("editor", "timezone")

#: Bodies the credential detector must refuse (LED-CRED.1), one per family, and look-alikes it
#: must store (LED-CRED.3).
CREDENTIALS = (
    "my key is AKIAIOSFODNN7EXAMPLE ok",
    "token ghp_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ",  # 36: real length (LED-CRED.4)
    "use sk-ant-" + "api03-abcdefghijklmnopqrst",
    "Authorization: Bearer abcdefghijklmnop1234",
    "API_KEY=abcdef123456abcdef",
    "xoxb-" + "1234567890-abcdefghij",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----",
)
LOOKALIKES = (
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "TOKEN=development",
    "const token = getTokenFromStore();",
    "see https://example.com/a?b=c&d=e",
)

body_styles = st.sampled_from(["plain", "plain", "plain", "padded", "multiline"])
kinds = st.none() | st.sampled_from(KINDS)
records = Bundle("records")

#: Calls that are wrong in one way each; the model says which error codes are allowed.
INVALID_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("save", {"body": "scoped", "scopeKey": SCOPE}),
    ("save", {"body": "scoped", "scopeKey": "account:other"}),
    ("save", {"body": "tagged", "tags": ["x"]}),
    ("save", {"body": "odd kind", "kind": "opinion"}),
    ("save", {"body": "null kind", "kind": None}),
    ("save", {"body": 42}),
    ("save", {}),
    ("save", {"body": "   \n\t "}),
    ("save", {"body": "session", "sessionId": ""}),
    ("list", {}),
    ("list", {"scopeKey": SCOPE, "status": "deleted"}),
    ("list", {"scopeKey": "account:nobody"}),
    ("list", {"scopeKey": ""}),
    ("list_as_of", {"scopeKey": SCOPE, "at": "yesterday"}),
    ("list_as_of", {"scopeKey": SCOPE}),
    ("delete", {"recordId": "no-such-record"}),
    ("delete", {"recordId": 7}),
    ("supersede", {"recordId": "no-such-record", "body": "x"}),
    ("approve", {"recordId": "no-such-record"}),
    ("update_settings", {"maxRecords": 3}),
    ("update_settings", {"mode": "on"}),
    ("update_settings", {"mode": "off", "maxRecords": 0}),
    ("update_settings", {"mode": "off", "maxRecords": 10001}),
    ("update_settings", {"mode": "off", "maxRecords": 2.5}),
    ("update_settings", {"mode": "off", "maxRecords": "3"}),
    ("update_settings", {"mode": "off", "debounceSeconds": 29}),
    ("update_settings", {"mode": "off", "allowRemoval": "yes"}),
    ("get_settings", {"scopeKey": SCOPE}),
    ("propose", {"body": "p", "confidenceBps": 10001}),
    ("propose", {"body": "p", "conflictGroup": ""}),
    ("propose", {"body": "p", "conflictGroup": {"$repeat": "g", "times": 81}}),
    ("propose", {"body": "p", "status": "active"}),
    ("consolidate", {"operations": "merge"}),
    ("consolidate", {}),
    ("packet", {"limit": 3}),
]
#: Bodies at the 4000-character bound (LED-SAVE.3, LED-REC.6): the limit is on the trimmed body,
#: so whitespace around a 4000-character body (ASCII or Unicode) must not tip it over.
BOUNDARY_BODIES: tuple[Any, ...] = (
    {"$repeat": "b", "times": 4000},
    {"$repeat": "b", "times": 4001},
    {"$concat": ["  ", {"$repeat": "y", "times": 4000}, "  "]},
    {"$concat": ["\t\n ", {"$repeat": "y", "times": 4000}, "\r\n"]},
    {"$concat": ["\u3000", {"$repeat": "z", "times": 3999}, "\u00a0 "]},
    {"$concat": [" ", {"$repeat": "z", "times": 4001}, " "]},
)
#: What a consolidation batch's operations promise about the records it leaves (the read after
#: it checks them; LED-GATE.8: every stamp of the batch is its one run instant).
VOCAB_CLAUSES: dict[str, str] = {
    "merge": "LED-VOCAB.2",
    "correct": "LED-VOCAB.3",
    "expire": "LED-VOCAB.4",
    "group": "LED-VOCAB.5",
    "retire": "LED-VOCAB.6",
    "keep": "LED-VOCAB.7",
}
#: Statuses of a record a consolidation element may not target (LED-GATE.3).
DEAD = ("superseded", "deleted", "expired", "rejected", "proposed")
#: The packet's line for a record of kind ``fact`` written by the user, without its body:
#: ``[<8>] fact (user_explicit): `` (LED-PACKET.5).
FACT_LINE_OVERHEAD = len("[12345678] fact (user_explicit): ")
#: How many records the crowded start saves: one more than a listing holds (LED-LIST.2).
CROWD = 51

#: After a call that changed the ledger, the one read that shows what the call changed.
CHECK_AFTER: dict[str, tuple[str, dict[str, Any]]] = {
    "save": ("list", {"scopeKey": SCOPE}),
    "supersede": ("list", {"scopeKey": SCOPE}),
    "delete": ("list", {"scopeKey": SCOPE}),
    "approve": ("list", {"scopeKey": SCOPE}),
    "reject": ("list", {"scopeKey": SCOPE, "status": "proposed"}),
    "propose": ("list", {"scopeKey": SCOPE, "status": "proposed"}),
    "set_expiry": ("list", {"scopeKey": SCOPE}),
    "sweep": ("list", {"scopeKey": SCOPE}),
    "update_settings": ("get_settings", {}),
    "consolidate": ("list", {"scopeKey": SCOPE}),
}


#: Clauses the ledger machine exercises over the wire (tests name them for ``memspec clauses``).
MACHINE_CLAUSES: tuple[str, ...] = (
    "LED-REC.1",
    "LED-REC.2",
    "LED-REC.3",
    "LED-REC.4",
    "LED-REC.5",
    "LED-REC.6",
    "LED-PROV.1",
    "LED-PROV.2",
    "LED-PROV.3",
    "LED-STATUS.1",
    "LED-STATUS.2",
    "LED-STATUS.3",
    "LED-STATUS.4",
    "LED-SAVE.1",
    "LED-SAVE.2",
    "LED-SAVE.3",
    "LED-LIST.1",
    "LED-LIST.2",
    "LED-LIST.3",
    "LED-FORGET.1",
    "LED-FORGET.2",
    "LED-FORGET.3",
    "LED-EDIT.1",
    "LED-EDIT.2",
    "LED-EDIT.3",
    "LED-REVIEW.1",
    "LED-REVIEW.2",
    "LED-REVIEW.3",
    "LED-REVIEW.4",
    "LED-CRED.1",
    "LED-CRED.2",
    "LED-CRED.3",
    "LED-INT.1",
    "LED-INT.2",
    "LED-INT.3",
    "LED-INT.4",
    "LED-INT.5",
    "LED-ASOF.1",
    "LED-ASOF.2",
    "LED-ASOF.3",
    "LED-EXP.1",
    "LED-EXP.2",
    "LED-EXP.3",
    "LED-EXP.4",
    "LED-EXP.5",
    "LED-GROUP.1",
    "LED-GROUP.2",
    "LED-GROUP.3",
    "LED-GROUP.4",
    "LED-GROUP.5",
    "LED-BUDGET.1",
    "LED-BUDGET.2",
    "LED-BUDGET.3",
    "LED-BUDGET.4",
    "LED-BUDGET.5",
    "LED-CONS.1",
    "LED-CONS.2",
    "LED-VOCAB.1",
    "LED-VOCAB.2",
    "LED-VOCAB.3",
    "LED-VOCAB.4",
    "LED-VOCAB.5",
    "LED-VOCAB.6",
    "LED-VOCAB.7",
    "LED-VOCAB.8",
    "LED-GATE.1",
    "LED-GATE.2",
    "LED-GATE.3",
    "LED-GATE.4",
    "LED-GATE.5",
    "LED-GATE.6",
    "LED-GATE.7",
    "LED-GATE.8",
    "LED-GATE.9",
    "LED-PACKET.1",
    "LED-PACKET.2",
    "LED-PACKET.3",
    "LED-PACKET.4",
    "LED-PACKET.5",
    "LED-WIRE.1",
    "LED-WIRE.2",
    "LED-WIRE.3",
    "LED-WIRE.4",
    "LED-WIRE.5",
    "LED-WIRE.6",
    "LED-WIRE.7",
    "LED-WIRE.8",
)


def _uniq(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _batch_clauses(elements: list[Any]) -> tuple[str, ...]:
    """What the read after a batch checks: every stamp it wrote is its one run instant
    (LED-GATE.8), and what each operation of the vocabulary it carries leaves behind."""
    ops = [e.get("operation") for e in elements if isinstance(e, dict)]
    return ("LED-GATE.8",) + _uniq(tuple(VOCAB_CLAUSES[o] for o in ops if o in VOCAB_CLAUSES))


class LedgerMachine(DifferentialMachine):
    """Differential exploration of the ledger binding (see the module docstring)."""

    protocol = "ledger"
    requires = frozenset({"ledger.test_control"})
    #: the clauses the machine checks over the wire (:data:`MACHINE_CLAUSES`)
    clauses: ClassVar[tuple[str, ...]] = MACHINE_CLAUSES
    READ_ONLY_OPS = frozenset({"list", "list_as_of", "get_settings", "packet"})

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

    def _rival_clauses(self, op: str, args: dict[str, Any]) -> tuple[str, ...]:
        """Approving a proposal of a group that has an active member must supersede that
        member at the approval (LED-GROUP.2) — never two active members (LED-GROUP.1)."""
        rec = self._record(args.get("recordId")) if op == "approve" else None
        if rec is None or rec.status != "proposed" or rec.conflict_group is None:
            return ()
        rivals = [
            r
            for r in self.ledger.model.records
            if r.status == "active" and r.conflict_group == rec.conflict_group
        ]
        return ("LED-GROUP.1", "LED-GROUP.2") if rivals else ()

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
        clauses = clauses + self._rival_clauses(op, args)
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

    # -- setup ----------------------------------------------------------------------------

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
            for i in range(max(0, budget - room - (2 if group_pair else 0))):
                name = self._fresh("r")
                self._step(
                    "save",
                    {"body": self._body("plain", WORDS[i % len(WORDS)])},
                    {name: "id"},
                    check=False,
                )
                names.append(name)
        if group_pair:
            for word in ("vim", "emacs"):
                name = self._fresh("r")
                args = {"body": self._body("plain", word), "conflictGroup": GROUPS[0]}
                self._step("propose", args, {name: "id"}, check=False)
                names.append(name)
        return multiple(*[f"${n}" for n in names if n in self.ledger.symbols])

    # -- writes ---------------------------------------------------------------------------

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

    @precondition(live)
    @rule(target=records, rec=records, style=body_styles, word=st.sampled_from(WORDS), kind=kinds)
    def supersede(self, rec: str, style: str, word: str, kind: str | None) -> Any:
        args: dict[str, Any] = {"recordId": rec, "body": self._body(style, word)}
        if kind is not None:
            args["kind"] = kind
        name = self._fresh("r")
        self._step("supersede", args, {name: "id"})
        return self._bound(name)

    @precondition(live)
    @rule(rec=records)
    def delete(self, rec: str) -> None:
        self._step("delete", {"recordId": rec})

    @precondition(live)
    @precondition(lambda self: bool(self._with_status("active")))
    @rule(
        target=records, data=st.data(), style=body_styles, word=st.sampled_from(WORDS), kind=kinds
    )
    def edit_live(self, data: st.DataObject, style: str, word: str, kind: str | None) -> Any:
        """An edit of a record that is active now (the bundle's picks are often dead)."""
        rec = data.draw(st.sampled_from(self._with_status("active")), label="active record")
        return self.supersede(rec, style, word, kind)

    @precondition(live)
    @precondition(lambda self: bool(self._with_status("active")))
    @rule(data=st.data())
    def delete_live(self, data: st.DataObject) -> None:
        rec = data.draw(st.sampled_from(self._with_status("active")), label="active record")
        self._step("delete", {"recordId": rec})

    @precondition(live)
    @precondition(lambda self: bool(self._with_status("proposed")))
    @rule(data=st.data(), approve=st.booleans())
    def decide_proposal(self, data: st.DataObject, approve: bool) -> None:
        rec = data.draw(st.sampled_from(self._with_status("proposed")), label="proposal")
        self._step("approve" if approve else "reject", {"recordId": rec})

    def _rival_proposals(self) -> list[str]:
        """``$name`` of every proposal whose conflict group has an active member."""
        model = self.ledger.model
        held_groups = {
            r.conflict_group
            for r in model.records
            if r.status == "active" and r.conflict_group is not None
        }
        return [
            name
            for name in self._with_status("proposed")
            if (rec := self._record(name)) is not None and rec.conflict_group in held_groups
        ]

    @precondition(live)
    @precondition(lambda self: bool(self._rival_proposals()))
    @rule(data=st.data())
    def approve_rival(self, data: st.DataObject) -> None:
        """Approve a proposal while its group has an active member: that member is superseded
        at the approval, never left active beside it (LED-GROUP.1, LED-GROUP.2)."""
        rec = data.draw(st.sampled_from(self._rival_proposals()), label="proposal")
        self._step("approve", {"recordId": rec})

    @precondition(live)
    @rule(
        target=records,
        word=st.sampled_from(WORDS),
        kind=kinds,
        confidence=st.none() | st.sampled_from([0, 5000, 9000, 10000]),
        group=st.none() | st.sampled_from(GROUPS),
        rationale=st.none() | st.just("seen twice"),
    )
    def propose(
        self,
        word: str,
        kind: str | None,
        confidence: int | None,
        group: str | None,
        rationale: str | None,
    ) -> Any:
        args: dict[str, Any] = {"body": self._body("plain", word)}
        for key, value in (
            ("kind", kind),
            ("confidenceBps", confidence),
            ("conflictGroup", group),
            ("rationale", rationale),
        ):
            if value is not None:
                args[key] = value
        name = self._fresh("r")
        self._step("propose", args, {name: "id"})
        return self._bound(name)

    @precondition(live)
    @rule(rec=records)
    def approve(self, rec: str) -> None:
        self._step("approve", {"recordId": rec})

    @precondition(live)
    @rule(rec=records)
    def reject(self, rec: str) -> None:
        self._step("reject", {"recordId": rec})

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

    @precondition(live)
    @precondition(lambda self: CLOCK in self._caps())
    @rule(delta=st.sampled_from([1, 1000, 3_600_000, MS_PER_DAY]))
    def advance_clock(self, delta: int) -> None:
        self._step("set_clock", {"advance_ms": delta})

    @precondition(live)
    @precondition(lambda self: CLOCK in self._caps())
    @rule(
        rec=records, offset=st.sampled_from([-MS_PER_DAY, 0, 1, 1000, MS_PER_DAY, 2 * MS_PER_DAY])
    )
    def set_expiry(self, rec: str, offset: int) -> None:
        at = self.ledger.now + offset
        self._step("set_expiry", {"recordId": rec, "expiresAt": format_rfc3339(at)})

    @precondition(live)
    @precondition(lambda self: CLOCK in self._caps() and bool(self._with_status("active")))
    @rule(
        data=st.data(),
        offset=st.sampled_from([1, 1000, 60_000]),
        sweep=st.sampled_from([None, -1, 0]),
    )
    def expire_live(self, data: st.DataObject, offset: int, sweep: int | None) -> None:
        """An expiry on a record that is active now, and maybe a sweep right at the boundary:
        one millisecond before the expiry (nothing expires) or exactly at it (it does)."""
        rec = data.draw(st.sampled_from(self._with_status("active")), label="active record")
        at = self.ledger.now + offset
        self._step("set_expiry", {"recordId": rec, "expiresAt": format_rfc3339(at)})
        if sweep is not None:
            self._step("sweep", {"at": format_rfc3339(at + sweep)})

    @precondition(live)
    @precondition(lambda self: CLOCK in self._caps())
    @rule(offset=st.sampled_from([0, 1000, MS_PER_DAY, 2 * MS_PER_DAY + 1000]))
    def sweep(self, offset: int) -> None:
        at = self.ledger.now + offset
        self._step("sweep", {"at": format_rfc3339(at)})

    # -- consolidation --------------------------------------------------------------------

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
        shape = data.draw(
            st.sampled_from(
                [
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
            ),
            label="shape",
        )

        def pick(k: int) -> list[str]:
            return targets[:k] if len(targets) >= k else list(targets)

        if shape == "not_object":
            return data.draw(st.sampled_from([5, "merge", None, ["keep"]])), None
        if shape == "unknown_op":
            return {
                "operation": data.draw(st.sampled_from(["delete", "Merge", "rename"])),
                "targets": pick(1),
            }, None
        if shape == "foreign_target":
            return {"operation": "keep", "targets": ["no-such-record"]}, None
        if shape == "credential":
            return {
                "operation": "correct",
                "targets": pick(1),
                "body": data.draw(st.sampled_from(CREDENTIALS)),
            }, None
        if shape == "extra_field":
            field = data.draw(
                st.sampled_from(["status", "provenance", "scopeKey", "expiresAt", "validFrom"])
            )
            return {"operation": "keep", "targets": pick(1), field: "active"}, None
        if shape == "dup_targets":
            t = pick(1)
            return {"operation": "merge", "targets": t + t, "body": "dup"}, None
        if shape == "bad_value":
            return data.draw(
                st.sampled_from(
                    [
                        {"operation": "expire", "targets": pick(1), "afterDays": 0},
                        {"operation": "expire", "targets": pick(1), "afterDays": 3651},
                        {"operation": "expire", "targets": pick(1), "afterDays": 1.5},
                        {"operation": "group", "targets": pick(2), "subject": "   "},
                        {"operation": "group", "targets": pick(2), "subject": "s" * 81},
                        {"operation": "merge", "targets": pick(2), "body": "  "},
                        {"operation": "keep", "targets": pick(1), "body": "why"},
                        {"operation": "correct", "targets": pick(1)},
                        {"operation": "retire", "targets": []},
                        {"operation": "keep", "targets": "x"},
                    ]
                )
            ), None
        if shape in ("merge", "correct"):
            body = f"{shape}d note {self._fresh('')}"
            k = 2 if shape == "merge" else 1
            return {
                "operation": shape,
                "targets": pick(k if shape == "correct" else max(2, len(targets))),
                "body": body,
            }, body
        if shape == "expire":
            days = data.draw(st.sampled_from([1, 2, 3650]))
            return {"operation": "expire", "targets": pick(1), "afterDays": days}, None
        if shape == "group":
            subject = data.draw(st.sampled_from(GROUPS))
            return {
                "operation": "group",
                "targets": pick(max(2, len(targets))),
                "subject": subject,
            }, None
        return {"operation": shape, "targets": pick(1)}, None

    @precondition(live)
    @precondition(lambda self: bool(self._with_status("active") or self._dead()))
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
        * ``group`` — of members written at different instants: the latest update survives
          (LED-VOCAB.5);
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
                op = "merge" if len(order) >= 2 and data.draw(st.booleans()) else "correct"
                body = data.draw(st.sampled_from(CREDENTIALS), label="credential")
                k = 2 if op == "merge" else 1
                elements = [{"operation": op, "targets": order[:k], "body": body}]
                clauses = ("LED-CRED.2", "LED-CRED.1", VOCAB_CLAUSES[op])
            elif case == "group":
                k = data.draw(st.integers(2, min(3, len(order))), label="members")
                subject = data.draw(st.sampled_from(GROUPS), label="subject")
                elements = [{"operation": "group", "targets": order[:k], "subject": subject}]
                clauses = ("LED-VOCAB.5",)
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

    # -- reads ----------------------------------------------------------------------------

    @precondition(live)
    @rule(status=st.sampled_from([None, "active", "proposed"]))
    def list_records(self, status: str | None) -> None:
        args: dict[str, Any] = {"scopeKey": SCOPE}
        if status is not None:
            args["status"] = status
        self._step("list", args)

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

    @precondition(live)
    @rule()
    def observe(self) -> None:
        """The active set."""
        self._step("list", {"scopeKey": SCOPE})

    @precondition(live)
    @rule(settings_too=st.booleans())
    def packet(self, settings_too: bool) -> None:
        self._step("packet", {})
        if settings_too:
            self._step("get_settings", {})

    @precondition(live)
    @precondition(lambda self: len(self._with_status("active")) + max(0, self._room()) >= 2)
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

    @precondition(live)
    @rule(case=st.sampled_from(INVALID_CALLS))
    def invalid_call(self, case: tuple[str, dict[str, Any]]) -> None:
        op, args = case
        self._step(op, args)

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
