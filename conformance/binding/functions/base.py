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
) -> Fn:
    """One entry: ``judge`` defaults to :func:`exact`."""
    return Fn(
        name, spec, clauses, summary, call, judge or exact(call), strategy, boundaries, references
    )
