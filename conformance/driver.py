"""What a protocol driver is: the lockstep of model, target and oracle for one protocol.

The runner (scenarios), the Hypothesis state machines and the pytest plugin all speak to a
target only through a driver.  A driver owns, for one run:

* the model state (from ``reference/``) and the model's clock,
* the target client (from ``conformance/targets/``) — HTTP only, never an import of a store,
* the symbol table (``$name`` → target id) and the id correspondence (model id ↔ target id),
* the scope map (``{scope:x}`` placeholder → a key unique to this run),

and turns each :class:`~conformance.scenario.Step` into a :class:`StepOutcome`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from conformance.scenario import Step

Verdict = Literal["pass", "diverge", "indeterminate", "skip"]


@dataclass(frozen=True)
class Exchange:
    """One request/answer pair as seen on the wire (token never included)."""

    method: str
    path: str
    request_body: Any  # parsed JSON sent, or a short description for a raw request
    status: int | None  # None: no HTTP answer (timeout, reset, refused)
    body: Any  # parsed JSON answer, or None
    raw_excerpt: str = ""  # first bytes of a non-JSON answer
    transport_error: str | None = None
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class StepOutcome:
    """The verdict on one step.

    ``expected`` is a human description of every answer the model allows (so a reader sees
    the whole allowed set, not one pick); ``clauses`` are the clause ids the step checked —
    on a divergence, the clauses the difference touches.
    """

    index: int
    op: str
    verdict: Verdict
    clauses: tuple[str, ...]
    expected: str
    exchange: Exchange | None
    reason: str = ""  # why it diverged / is indeterminate / was skipped
    details: dict[str, Any] = field(default_factory=dict)


class Driver(Protocol):
    protocol: str

    def capabilities(self) -> frozenset[str]:
        """Capabilities the target declared or the driver probed (e.g. ``ledger.test_control``)."""

    def begin(self, scenario_name: str) -> None:
        """Start a fresh scenario: reset the model, the symbol table and the id bijection."""

    def execute(self, index: int, step: Step) -> StepOutcome:
        """Run one step against model and target and judge the answer."""

    def scopes_written(self) -> list[str]:
        """Every target scope key this run wrote into (for the report)."""
