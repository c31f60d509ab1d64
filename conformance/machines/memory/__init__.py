"""The Memory Worker state machine: random valid and invalid requests, model and target in step.

The alphabet is chosen so that the interesting rules fire often in short runs:

* texts are one to three words from a small vocabulary, with case, whitespace and punctuation
  variants — so dedup (MEM-WRITE.1/2), the collision guard (MEM-WRITE.5) and whole token
  matching (MEM-SCORE.2) are hit constantly;
* the vocabulary mixes in non-ASCII words — accented Latin precomposed and combining, ß,
  Cyrillic, Greek, CJK, emoji, a Kelvin sign that lower-cases to ASCII ``k``, a letter of a
  newer Unicode than the harness's with its lowercase (MEM-WRITE.2) — in texts,
  keywords and queries: the tokenizer is ASCII ``[a-z0-9]+`` after lower-casing, so these are
  separators (or vanish), and a store that tokenizes or prefilters otherwise shows it;
* two scopes (``{scope:a}``, ``{scope:b}``) and ids used across them (MEM-SCOPE.5);
* ``supersedes`` and ``forget`` take ids from a bundle filled by ``/list`` and ``/retrieve``
  answers (the machine never guesses an id), plus empty and unresolvable ids
  (MEM-WRITE.3/4/7, MEM-STORE.8);
* small caps (1–5) so eviction and its ties happen (MEM-CAP.1, MEM-CAP.2, MEM-CAP.3), and a run may
start with
  scope ``a`` already holding a few records (:meth:`MemoryMachine.prefill`) so the cap bites
  at once;
* invalid bodies mixed in (MEM-WIRE.*), among them each bound one past its limit (cap 10001,
  a query of 4001 UTF-16 units — also one of 4000 code points whose last is astral), and valid
  requests exactly at each bound (``AT_THE_BOUNDS``);
* a valid batch whose last candidate is invalid: refused whole (MEM-WIRE.12);
* queries of 25 distinct tokens, one past the prefilter's 24 (MEM-STORE.5);
* twins: two active records with one text, which only the collision guard makes
  (MEM-WRITE.5), then a restatement of that text (the earliest twin is bumped, MEM-WRITE.2) or
  of the superseded one (no dedup target, MEM-WRITE.8).

A rule whose every request needs a capability the target lacks (``list``, ``forget``, ``cap``)
is preconditioned out; case lists are drawn from the cases the target can take.

**Blame the cause.**  After every step that may change a scope, one ``/list`` of that scope
(limit 50) shows what the target now holds, under the clauses of the step that changed it: a
wrong state is caught where it was made, not steps later under an unrelated clause.

Transport probes (auth, methods, paths, bodies that are not JSON, Content-Length fences) are
not rules here: they are one-step cases that need no state, run once each as their own small,
separately reported set (:mod:`conformance.machines.probes`).

Every request goes through :class:`~conformance.drivers.memory.driver.MemoryDriver`, so the oracle's
rules (ties, ids, times) are exactly the scenario runner's.

``conformance.machines.memory`` is a package split by concern, as ``conformance.machines.ledger``
is: the alphabet (:mod:`.alphabet`), state and helpers every rule shares (:mod:`.base`), and the
rules by area -- setup, writes, forgets and the collision guard's twins (:mod:`.lifecycle`);
reads, invalid requests and bounds (:mod:`.reads`).  The groups of rules are mixins combined into
:class:`MemoryMachine`; Hypothesis collects a machine's rules by name (``inspect.getmembers``),
so the module a rule lives in does not change the runs it generates.
"""

from __future__ import annotations

from conformance.machines.checks import machine_clauses
from conformance.machines.memory.alphabet import (
    AT_THE_BOUNDS,
    CASES,
    FILLER_TOKENS,
    INVALID_BODIES,
    INVALID_CANDIDATES,
    PAD_3998,
    PAD_3999,
    SCOPES,
    UNICODE_WORDS,
    VOCAB,
    batches,
    candidate,
    foreign_ids,
    ids,
    queries,
    scopes,
    texts,
    words,
)
from conformance.machines.memory.base import MemoryMachineBase, able
from conformance.machines.memory.lifecycle import LifecycleRules
from conformance.machines.memory.reads import ReadRules

__all__ = [
    "AT_THE_BOUNDS",
    "CASES",
    "FILLER_TOKENS",
    "INVALID_BODIES",
    "INVALID_CANDIDATES",
    "MACHINE_CLAUSES",
    "PAD_3998",
    "PAD_3999",
    "SCOPES",
    "UNICODE_WORDS",
    "VOCAB",
    "LifecycleRules",
    "MemoryMachine",
    "MemoryMachineBase",
    "ReadRules",
    "able",
    "batches",
    "candidate",
    "foreign_ids",
    "ids",
    "queries",
    "scopes",
    "texts",
    "words",
]


class MemoryMachine(LifecycleRules, ReadRules):
    """Differential exploration of the Memory Worker protocol (see the module docstring)."""

    protocol = "memory"
    READ_ONLY_OPS = frozenset({"list"})


#: Every clause a rule of the memory machine declares (``@checks``), in spec order.  The
#: routing, auth and fence clauses (MEM-WIRE.1, MEM-WIRE.2, MEM-WIRE.3, MEM-WIRE.4, MEM-WIRE.5,
#: MEM-WIRE.6, MEM-WIRE.7) are the transport probes' (probes.py).
MACHINE_CLAUSES: tuple[str, ...] = machine_clauses(MemoryMachine)
