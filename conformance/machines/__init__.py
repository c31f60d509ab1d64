"""Differential state machines: Hypothesis drives model and target in lockstep.

A protocol's machine subclasses :class:`DifferentialMachine` and, in its rules, builds
:class:`~conformance.scenario.Step` objects and hands them to :meth:`DifferentialMachine.run_step`.
The step goes through the protocol's driver (model, target, oracle) exactly as a scenario step
would, and is recorded.  On a divergence the step raises, Hypothesis shrinks the run — every
shrink attempt is a fresh run against the target in fresh scopes — and the steps of the
minimal failing run become a replay :class:`~conformance.scenario.Scenario` that
``memspec replay`` (and the corpus) can run again.

**Every distinct divergence, not the first.**  A divergence is known by its *signature*: the
leading clause the oracle named (the clauses a rule attached to the step itself left out, so
the same wrong answer seen after a write and after a forget is one divergence).  Once a divergence
is found and shrunk, exploration goes on in fresh batches with its signature *set aside*: meeting
it again ends that one run quietly (a read that changes nothing lets the run go on) instead of
failing it, so the next, different divergence can be found and shrunk in its turn — up to
:data:`MAX_FINDINGS`.  A divergence an ``--expect`` entry names is set aside from the start:
it is recorded once, as met (not shrunk), and never stops exploration.

Rules stop a run with a ``precondition`` (:func:`live`), never with ``assume(False)``; the
only rejections left are in ``__init__`` (a harness bug, or the shrink budget spent), where no
precondition can act.

Per-run state (the recorded steps, whether the run was stopped) lives in the machine instance,
per-exploration state (findings, signatures set aside, counters) in :class:`MachineSession`.

:func:`run_machine` runs one protocol's machine under a profile and a seed and returns a
:class:`MachineResult`.  ``MACHINES`` maps a protocol to ``"module:Class"``.

The scaffolding lives in modules of its own, re-exported here: :mod:`.session` (what an
exploration shares, findings, signatures), :mod:`.machine` (:class:`DifferentialMachine`,
:func:`live`), :mod:`.batches` (batches and rounds of batches), :mod:`.shrink` (minimizing a
shrunk divergence into a finding and its replay) and :mod:`.explore` (:func:`run_machine`).
"""

from __future__ import annotations

from conformance.machines.batches import BATCH, batch_seed
from conformance.machines.explore import (
    MACHINES,
    MachineResult,
    finding_key,
    machine_class,
    pick_seed,
    run_machine,
)
from conformance.machines.machine import DifferentialMachine, live
from conformance.machines.session import (
    MAX_FINDINGS,
    Divergence,
    Finding,
    MachineSession,
    Signature,
    noted,
    signature,
)
from conformance.machines.shrink import minimize

__all__ = [
    "BATCH",
    "MACHINES",
    "MAX_FINDINGS",
    "DifferentialMachine",
    "Divergence",
    "Finding",
    "MachineResult",
    "MachineSession",
    "Signature",
    "batch_seed",
    "finding_key",
    "live",
    "machine_class",
    "minimize",
    "noted",
    "pick_seed",
    "run_machine",
    "signature",
]
