"""What every binding function is: :class:`Fn`, a refusal, and how an outcome is taken.

A family module (``memory/scoring.py``, ``ledger/packet.py``, …) builds its entries with
:func:`fn`; the registry (:mod:`conformance.binding.functions`) lists the families.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from conformance.binding.judge import THROWS, Judged, ok

JSON = Any
Args = dict[str, JSON]
#: ``blame(args, answered, reference)``: the clauses an answer outside the seed's set differs
#: on (``answered`` and ``reference`` are outcomes); empty when it cannot tell
Blame = Callable[[Args, JSON, JSON], tuple[str, ...]]
MEMORY = "memory"
LEDGER = "ledger"


class Refused(Exception):
    """The function refuses its input (the binding's ``{"error": "refused: …"}``)."""


@dataclass(frozen=True)
class Fn:
    name: str
    spec: str
    clauses: tuple[str, ...]
    summary: str
    call: Callable[[Args], JSON]
    judge: Callable[[Args], Judged]
    strategy: st.SearchStrategy[Args]
    boundaries: Callable[[], list[tuple[str, Args]]]
    #: the reference rules its judge may add to the seed's (a deviation names one of them)
    references: tuple[str, ...] = ()
    #: which of its clauses a wrong answer differs on (None: all of the vector's)
    blame: Blame | None = None

    def blamed(self, args: Args, answered: JSON, reference: JSON) -> tuple[str, ...]:
        """The clauses a wrong answer is charged to: the root cause :attr:`blame` names among
        the function's clauses, else every clause of the function."""
        if self.blame is not None:
            named = tuple(c for c in self.blame(args, answered, reference) if c in self.clauses)
            if named:
                return named
        return self.clauses

    @property
    def rules(self) -> tuple[str, ...]:
        """Every clause the function's vectors and property apply: its own, then the
        reference rules its judge may add."""
        return tuple(dict.fromkeys((*self.clauses, *self.references)))


def outcome_of(call: Callable[[Args], JSON], args: Args) -> JSON:
    """Run a reference function: ``{"ok": value}`` or ``{"throws": true}``."""
    try:
        return ok(call(args))
    except Refused:
        return THROWS


def exact(call: Callable[[Args], JSON]) -> Callable[[Args], Judged]:
    """The judge of a function the seed fixes completely: the reference's outcome alone."""
    return lambda args: Judged([outcome_of(call, args)])


def fn(
    name: str,
    spec: str,
    clauses: tuple[str, ...],
    summary: str,
    call: Callable[[Args], JSON],
    strategy: st.SearchStrategy[Args],
    boundaries: Callable[[], list[tuple[str, Args]]],
    judge: Callable[[Args], Judged] | None = None,
    references: tuple[str, ...] = (),
    blame: Blame | None = None,
) -> Fn:
    """One entry: ``judge`` defaults to :func:`exact`."""
    return Fn(
        name,
        spec,
        clauses,
        summary,
        call,
        judge or exact(call),
        strategy,
        boundaries,
        references,
        blame,
    )
