"""What a protocol driver is: the lockstep of model, target and oracle for one protocol.

The runner (scenarios), the Hypothesis state machines and the pytest plugin all speak to a
target only through a driver.  A driver owns, for one run:

* the model state (from ``reference/``) and the model's clock,
* the target client (from ``conformance/targets/``) — HTTP only, never an import of a store,
* the symbol table (``$name`` → target id) and the id correspondence (model id ↔ target id),
* the scope map (``{scope:x}`` placeholder → a key unique to this run),

and turns each :class:`~conformance.scenario.Step` into a
:class:`~conformance.vocabulary.StepOutcome`.

Drivers are found by protocol name in :data:`conformance.drivers.DRIVERS` and built from a
:class:`~conformance.vocabulary.RunContext` — the one object every driver, runner and machine
receives: the target's configuration (URL, the bearer token wrapped so it never prints,
declared capabilities), the run id that makes every scope key of the run unique, and the run's
options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from conformance.scenario import Scenario, Step
from conformance.vocabulary import RunContext, StepOutcome


class Driver(Protocol):
    protocol: str

    def capabilities(self) -> frozenset[str]:
        """Capabilities the target declared or the driver probed (e.g. ``ledger.test_control``)."""

    def requirements(self, scenario: Scenario) -> set[str]:
        """Capabilities ``scenario`` needs: its declared ``requires`` plus what its steps use
        (the protocol's own rule: :func:`scenario_requires`)."""

    def begin(self, scenario_name: str, tag: str | None = None) -> None:
        """Start a fresh scenario: reset the model, the symbol table and the id bijection.

        ``tag``, when given, names the scenario's scopes (the corpus passes ``c<index>``, so the
        keys do not depend on which driver ran the scenario); a protocol without per-run scopes
        ignores it."""

    def execute(self, index: int, step: Step) -> StepOutcome:
        """Run one step against model and target and judge the answer."""

    def scopes_written(self) -> list[str]:
        """Every target scope key this run wrote into (for the report)."""

    def close(self) -> None:
        """Release the target client.  Idempotent."""


#: What :data:`conformance.drivers.DRIVERS` resolves to: build a driver for one run.  It may
#: raise :class:`conformance.errors.TargetError` when the target cannot be used at all
#: (unreachable, token refused, dirty without ``--allow-dirty``) — the CLI prints one line.
DriverFactory = Callable[[RunContext], Driver]


def scenario_requires(scenario: Scenario, step_requires: Callable[[Step], set[str]]) -> set[str]:
    """Every capability a scenario needs: its declared ``requires`` plus what its steps use
    (``step_requires`` is the protocol's own rule for one step)."""
    need = set(scenario.requires)
    for step in scenario.steps:
        need |= step_requires(step)
    return need
