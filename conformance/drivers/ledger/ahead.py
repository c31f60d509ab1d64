"""What the ledger driver keeps about a call between sending it and judging its answer, so that
a window of calls can be in flight on one connection (pipelined exploration, ``--window``).

:class:`Call` is one call prepared for sending (everything known before its answer);
:class:`Ahead` is one entry of the window: a call (or a clock move, or a scenario's start) that
went out ahead of the answers before it, with the driver's state it was prepared from and the
state the driver *predicted* it leaves -- the model's own answer, passing.  The driver judges
the entries in order as their answers arrive (:meth:`LedgerDriver.settle`); one that does not
pass, or leaves another state than predicted, was *mispredicted*: every later entry was chosen
from a state the one-at-a-time run would not have had.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from conformance.drivers.ledger.steps import Op
from conformance.scenario import Step
from conformance.vocabulary import StepOutcome

#: The driver's state a step is prepared from and judged on (attribute names).
STATE = (
    "model",
    "_others",
    "octx",
    "symbols",
    "now",
    "last_mutation",
    "_target_clock",
    "_clock_pinned",
    "_wrote",
    "_last_real",
    "_setup_error",
)
#: What a prediction must have right: the state the next steps were chosen and prepared from.
PREDICTED = ("model", "symbols", "_target_clock", "_clock_pinned", "_setup_error")

#: ``(key, step, outcome, as_predicted)``: told of each entry as it is judged, in order.
Settled = Callable[[Any, Step | None, StepOutcome | None, bool], None]


@dataclass
class Call:
    """One call, prepared: what is sent and what its judgement needs besides the answer."""

    index: int
    step: Step
    op: Op
    base: tuple[str, ...]
    method: str
    params_m: Any
    params_t: Any
    parsed: Any
    raw_text: str | None
    expect: Any
    pin: int | None
    #: the model's allowed answers as predicted (its ledger, the instant, the answers): the
    #: judgement reuses them when it starts from that ledger at that instant
    predicted: tuple[Any, int, list[Any]] | None = None


@dataclass
class Ahead:
    """One entry of the window: sent, its answer(s) not judged yet."""

    key: Any
    kind: Literal["call", "clock", "begin"]
    step: Step | None
    call: Call | None
    answers: int  # how many answers it takes off the connection (a pin and a call: 2)
    before: dict[str, Any]  # the driver's state once prepared, before the answer
    predicted: dict[str, Any]  # the state the next entries were prepared from
    epoch: int  # which ledger (a reset starts a new one): whose ids it may show
    clock_to: int | None = None  # kind "clock": the instant set
    index: int = 0  # kind "clock": the step's index and clauses
    base: tuple[str, ...] = ()


class NeedAnswers(Exception):
    """A step needs what only answers still in flight tell (a store id): read one more."""
