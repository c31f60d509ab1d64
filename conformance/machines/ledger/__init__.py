"""The ledger state machine: random valid and invalid binding calls, model and target in step.

Every call goes through :class:`~conformance.drivers.ledger.driver.LedgerDriver`, so ids, times,
ties and refusals are judged exactly as a scenario's are, and the shrunk failing run is a replay
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
* conflict groups reached the one way a real ledger reaches them, consolidation ``group`` over
  active records, and expiries through ``expire`` and the sweep (LED-GROUP.*, LED-EXP.*);
  proposals carry exactly what the extractor carries, never a group;
* consolidation batches mixing valid elements with every kind of malformed one — wrong arity,
  duplicate targets, fields the operation does not take, non-objects, unknown operations,
  non-active targets, credential bodies, more than 20 elements (LED-VOCAB.*, LED-GATE.*);
* invalid calls: unknown params, ``scopeKey`` on a save, bad kinds, ``null``, wrong JSON types,
  blank, over-long and credential-shaped bodies (LED-WIRE.*, LED-SAVE.*, LED-CRED.*) — raw
  bodies (non-object params, unknown methods, text that is not JSON) are transport probes,
  run once each apart from the machine (:mod:`conformance.machines.probes`);
* bodies with non-ASCII words (accented Latin, ß, CJK, emoji), and a run may start a few
  records short of its budget, or with two records grouped by ``group``
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
  credential-shaped proposals.

**Name the rule a call was built for.**  Where the oracle cannot tell which rule a difference
breaks (a batch's counts, an answer refused with the wrong code), the call carries the clauses
it exercises (``Step.clauses``): a batch names the gate rules its elements meet
(:meth:`LedgerMachine._gate_clauses`), a boundary body LED-SAVE.3, a ``group`` LED-GROUP.1/.2
— as a corpus scenario names the rules it was written for.

**Blame the cause.**  After every call that changed the model's ledger, one read of what the
target now holds (the list — active, or proposed after a proposal or a rejection — or the
settings after a settings update, see :data:`CHECK_AFTER`) under that call's clauses, so a
wrong state is caught where it was made: a missed supersede shows at the supersede, not later
as a budget refusal.  The read after a batch also names LED-GATE.8 (one run instant) and the
vocabulary clauses of its operations; after a sweep that expired a record, a history read
inside that record's interval names LED-EXP.3 (an expired record is history, not a tombstone).

``conformance.machines.ledger`` is a package split by concern: the alphabet
(:mod:`.alphabet`), state and helpers every rule shares
(:mod:`.base`), and the rules by area -- setup, records and time (:mod:`.lifecycle`),
consolidation and gate probes (:mod:`.consolidation`), reads, packets and boundaries
(:mod:`.reads`).  The groups of rules are mixins combined into :class:`LedgerMachine`;
Hypothesis collects a machine's rules by name (``inspect.getmembers``), so the module a rule
lives in does not change the runs it generates.
"""

from __future__ import annotations

from conformance.machines.checks import machine_clauses
from conformance.machines.ledger.alphabet import (
    BOUNDARY_BODIES,
    CHECK_AFTER,
    CREDENTIALS,
    CROWD,
    DEAD,
    FACT_LINE_OVERHEAD,
    GROUPS,
    INVALID_CALLS,
    KINDS,
    LOOKALIKES,
    SCOPE,
    VOCAB_CLAUSES,
    WORDS,
    body_styles,
    kinds,
    records,
)
from conformance.machines.ledger.base import LedgerMachineBase
from conformance.machines.ledger.consolidation import ConsolidationRules
from conformance.machines.ledger.lifecycle import LifecycleRules
from conformance.machines.ledger.reads import ReadRules

__all__ = [
    "BOUNDARY_BODIES",
    "CHECK_AFTER",
    "CREDENTIALS",
    "CROWD",
    "DEAD",
    "FACT_LINE_OVERHEAD",
    "GROUPS",
    "INVALID_CALLS",
    "KINDS",
    "LOOKALIKES",
    "MACHINE_CLAUSES",
    "SCOPE",
    "VOCAB_CLAUSES",
    "WORDS",
    "ConsolidationRules",
    "LedgerMachine",
    "LedgerMachineBase",
    "LifecycleRules",
    "ReadRules",
    "body_styles",
    "kinds",
    "records",
]


class LedgerMachine(LifecycleRules, ConsolidationRules, ReadRules):
    """Differential exploration of the ledger binding (see the module docstring)."""

    protocol = "ledger"
    requires = frozenset({"ledger.test_control"})
    READ_ONLY_OPS = frozenset({"list", "list_as_of", "get_settings", "packet"})


#: Every clause a rule of the ledger machine declares (``@checks``), in spec order.
MACHINE_CLAUSES: tuple[str, ...] = machine_clauses(LedgerMachine)
