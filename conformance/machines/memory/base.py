"""The memory machine's base: per-run state and the helpers every group of rules shares -- a
step, a read that binds the ids it shows, a mutation followed by the ``/list`` that checks it,
the cases the target can take -- and :func:`able`, the capability precondition."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis.stateful import multiple

from conformance.drivers.memory.driver import MemoryDriver
from conformance.drivers.memory.steps import DEFAULT_CLAUSES
from conformance.machines import DifferentialMachine, live
from conformance.machines.memory.alphabet import _sendable_cases
from conformance.scenario import Step
from conformance.targets.memory import LIST


def able(*capabilities: str) -> Callable[[Any], bool]:
    """Precondition: the run is live and the target has every one of ``capabilities`` (a rule
    whose every request needs one the target lacks is never drawn, rather than drawn to skip
    and stop the run)."""

    def ok(machine: Any) -> bool:
        return live(machine) and set(capabilities) <= machine.driver.capabilities()

    return ok


class MemoryMachineBase(DifferentialMachine):
    """State and helpers shared by the memory machine's rules (no rules of its own)."""

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self._symbols = 0
        self._crowded = False

    # -- helpers --------------------------------------------------------------------------

    def _step(self, op: str, args: dict[str, Any], clauses: tuple[str, ...] = ()) -> Any:
        return self.run_step(Step(op=op, args=args, clauses=list(clauses)))

    def _read(self, step: Step) -> list[tuple[str, dict[str, Any]]]:
        """Run a ``/list`` or ``/retrieve`` step and bind a symbol to each record it shows:
        ``[("$rN", record as answered), …]``."""
        outcome = self.run_step(step)
        if outcome.verdict != "pass" or outcome.exchange is None:
            return []
        records = outcome.exchange.body.get("records", [])
        bind: dict[str, Any] = {}
        for i in range(len(records)):
            self._symbols += 1
            bind[f"r{self._symbols}"] = {"index": i}
        if not bind:
            return []
        driver = self.driver
        assert isinstance(driver, MemoryDriver)  # the memory machine runs on the memory driver
        problem = driver.bind_from(outcome.exchange, bind)
        assert problem is None, problem
        self.recorded[-1] = step.model_copy(update={"bind": bind})
        return [(f"${name}", rec) for name, rec in zip(bind, records, strict=True)]

    def _read_and_bind(self, step: Step) -> Any:
        """Run a ``/list`` or ``/retrieve`` step and put the ids it shows into the bundle."""
        return multiple(*[name for name, _ in self._read(step)])

    def _mutate_and_read(self, op: str, args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """A step that may change ``args["scopeKey"]``, then one ``/list`` of that scope under
        the step's clauses, so a wrong state is blamed on the step that made it.  With a
        ``--window`` the ``/list`` goes out in the same write as the step
        (:meth:`MemoryDriver.follow_with`): one round trip for the two."""
        look = {"scopeKey": args["scopeKey"], "limit": 50}
        listed = LIST in self.driver.capabilities()
        if listed and self.session.window > 1 and isinstance(self.driver, MemoryDriver):
            self.driver.follow_with("/list", look)
        outcome = self._step(op, args)
        if outcome.verdict != "pass" or not listed:
            return []
        check = Step(
            op="list",
            args=look,
            clauses=list(DEFAULT_CLAUSES[op]),
            note=f"what the scope holds right after step {outcome.index} ({op})",
        )
        return self._read(check)

    def _mutate(self, op: str, args: dict[str, Any]) -> Any:
        """:meth:`_mutate_and_read`, the ids shown going into the bundle."""
        return multiple(*[name for name, _ in self._mutate_and_read(op, args)])

    def _sendable(self, which: str) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The ``(op, args)`` cases of ``CASES[which]`` whose request the target can take (its
        capabilities)."""
        return _sendable_cases(which, self.driver.capabilities())
