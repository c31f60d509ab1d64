"""The collectors and items: ``memspec`` → ``memspec::<protocol>`` → one item per scenario and
one per state machine, each marked with the clauses it checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.pytest_plugin.corpus import item_name, real_path
from conformance.pytest_plugin.messages import step_lines
from conformance.pytest_plugin.options import LEDGER_GROUP
from conformance.pytest_plugin.state import RUN, MemspecDivergence, MemspecRun, skip
from conformance.pytest_plugin.xdist import grouped_node_id, names_group_in_node_id

if TYPE_CHECKING:
    from conformance.drivers.base import Driver
    from conformance.machines import MachineResult
    from conformance.scenario import Scenario


class MemspecSuite(pytest.Collector):
    """``memspec``: one child per protocol checked."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        for protocol in self.config.stash[RUN].protocols:
            yield MemspecProtocol.from_parent(self, name=protocol)


class MemspecProtocol(pytest.Collector):
    """``memspec::<protocol>``: its scenarios in corpus order, then its state machine."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        run = self.config.stash[RUN]
        protocol = self.name
        grouped = names_group_in_node_id(run, self.config, protocol)
        named = {e.scenario: e for e in run.config.expectations if e.scenario}

        def node_id(name: str) -> str | None:
            return grouped_node_id(self.nodeid, name) if grouped else None

        for scenario, source in run.checks.corpus:
            if scenario.protocol != protocol:
                continue
            name = item_name(scenario.name)
            item = MemspecScenarioItem.from_parent(
                self, name=name, nodeid=node_id(name), scenario=scenario, source=source
            )
            clauses = scenario.all_clauses()
            _mark(item, protocol, "scenario", clauses, named.get(scenario.name), grouped)
            yield item
        if protocol in run.checks.machines:
            name = f"{protocol}-machine"
            machine = MemspecMachineItem.from_parent(
                self, name=name, nodeid=node_id(name), protocol=protocol
            )
            clauses = list(run.checks.machines[protocol])
            _mark(machine, protocol, "machine", clauses, named.get(name), grouped)
            yield machine


def _mark(
    item: pytest.Item,
    protocol: str,
    kind: str,
    clauses: list[str],
    expected: Any,
    grouped: bool,
) -> None:
    if clauses:
        item.add_marker(pytest.mark.clause(*clauses))
    item.add_marker(pytest.mark.memspec(protocol=protocol, kind=kind))
    if protocol == "ledger" and not grouped:  # grouped: the node id already names the group
        item.add_marker(pytest.mark.xdist_group(LEDGER_GROUP))
    if expected is not None:  # a named known divergence: a pass shows as XPASS (stale entry)
        item.add_marker(pytest.mark.xfail(reason=f"expected: {expected.reason}", strict=False))
    item.user_properties.append(("clauses", " ".join(clauses)))


class MemspecItem(pytest.Item):
    protocol = ""

    @property
    def run(self) -> MemspecRun:
        return self.config.stash[RUN]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, MemspecDivergence):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


class MemspecScenarioItem(MemspecItem):
    """One corpus scenario, run step by step until its first divergence."""

    def __init__(self, *, scenario: Scenario, source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.source = source
        self.protocol = scenario.protocol

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return real_path(self.source), 0, f"memspec {self.protocol} scenario {self.scenario.name}"

    def runtest(self) -> None:
        from conformance.runner import run_scenario
        from conformance.sources import level_fails

        run = self.run
        result = run_scenario(run.driver(self.protocol), self.scenario, path=self.source)
        self.user_properties.append(("memspec_verdict", result.verdict))
        for o in result.deviating_steps:  # differences from the reference implementation
            text = f"[{', '.join(o.clauses)}] step {o.index} ({o.op}): {o.reason}"
            self.user_properties.append(("deviation", text[:500]))
        run.record(self.scenario.name, result.verdict, self.scenario.all_clauses(),
                   result.failed_clauses(), result.failing_step, result.reason)  # fmt: skip
        if result.verdict == "skip":
            skip(result.reason)
        if result.verdict == "pass" or (
            result.verdict == "deviate" and not level_fails(run.config.level, deviation=True)
        ):
            return
        step = result.failing_step or next(iter(result.deviating_steps), None)
        failed = result.failed_clauses() or result.deviation_clauses()
        replay = run.save_replay("scenario", self.scenario.name, self.scenario, result.outcomes)
        self.user_properties += [
            ("replay", replay),
            ("failed_clauses", " ".join(failed)),
        ]
        verb = {
            "fail": "diverges",
            "deviate": "differs from the reference implementation (--memspec-level reference)",
        }.get(
            result.verdict,
            "is INDETERMINATE (no answer from the target: a transport verdict, not a divergence)",
        )
        where = f" at step {step.index} ({step.op})" if step is not None else f": {result.reason}"
        lines = [f"memspec {self.protocol} scenario {self.scenario.name} {verb}{where}"]
        lines.append(f"  scenario:      {self.source}")
        lines += step_lines(step, failed)
        lines.append(f"  replay file:   {replay}")
        lines.append(f"  rerun:         {run.replay_hint(replay)}")
        run.fail(self.scenario.name, failed, "\n".join(lines))


class MemspecMachineItem(MemspecItem):
    """One protocol's differential state machine under the run's profile and seed."""

    def __init__(self, *, protocol: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.protocol = protocol

    def reportinfo(self) -> tuple[Path, int | None, str]:
        import inspect

        from conformance.machines import machine_class

        source = inspect.getsourcefile(machine_class(self.protocol)) or __file__
        return Path(source), 0, f"memspec {self.protocol} state machine"

    def runtest(self) -> None:
        from conformance.machines import run_machine
        from conformance.sources import level_fails, only_reference

        run = self.run
        driver = run.driver(self.protocol)
        result = run_machine(self.protocol, driver, run.profile, run.config.seed)
        run.record(self.name, result.verdict, run.checks.machines.get(self.protocol, ()),
                   result.clauses, result.failure, result.reason)  # fmt: skip
        self.user_properties += [
            ("memspec_verdict", result.verdict),
            ("seed", str(result.seed)),
            ("profile", result.profile),
            ("examples", str(result.examples)),
            ("steps", str(result.steps)),
        ]
        deviations = [f for f in result.findings if only_reference(f.clauses)]
        for f in deviations:
            self.user_properties.append(("deviation", f"[{', '.join(f.clauses)}] {f.reason}"[:500]))
        if result.verdict == "skip":
            skip(result.reason)
        if result.verdict == "pass":
            return
        deviation = bool(result.findings) and len(deviations) == len(result.findings)
        if result.verdict == "fail" and not level_fails(run.config.level, deviation):
            return  # only deviations from the reference implementation: seed-level pass
        run.fail(self.name, list(result.clauses), "\n".join(self._failure(result, driver)))

    def _failure(self, result: MachineResult, driver: Driver) -> list[str]:
        """The failing item's text; the shrunk run, when there is one, is confirmed once more
        on a fresh start and saved as a replay file."""
        from conformance.runner import run_scenario

        run = self.run
        verb = "found a divergence" if result.verdict == "fail" else "could not judge the target"
        lines = [
            f"memspec {self.protocol} state machine {verb}"
            + ("" if result.failure is not None else f": {result.reason}"),
            f"  exploration:   profile {result.profile}, seed {result.seed},"
            f" {result.examples} runs, {result.steps} steps",
        ]
        step = result.failure
        replay = ""
        if result.replay is not None:
            # The rerun confirms the failure and records the transcript the replay file holds.
            confirm = run_scenario(driver, result.replay)
            if confirm.failing_step is not None:
                step = confirm.failing_step
            replay = run.save_replay(
                "machine", f"{self.name}-seed-{result.seed}", result.replay, confirm.outcomes
            )
            self.user_properties += [
                ("replay", replay),
                ("failed_clauses", " ".join(result.clauses)),
            ]
            again = "yes" if confirm.verdict == "fail" else f"no ({confirm.verdict})"
            lines.append(
                f"  shrunk run:    {len(result.replay.steps)} step(s); reproduced on a fresh"
                f" run: {again}"
            )
        lines += _notes(result)
        lines += step_lines(step, list(result.clauses))
        if replay:
            lines.append(f"  replay file:   {replay}")
            lines.append(f"  rerun:         {run.replay_hint(replay)}")
        examples = run.config.examples
        again_with = f" --memspec-examples {examples}" if examples else ""
        lines.append(
            f"  explore again: pytest --memspec-target {run.url} --memspec-profile"
            f" {run.profile.name}{again_with} --memspec-seed {result.seed} -k {self.name}"
        )
        return lines


def _notes(result: MachineResult) -> list[str]:
    """What a reader should know about how the shrunk run was found."""
    if result.details.get("shrink_cut"):
        return [
            "  note:          shrinking stopped at the profile's shrink budget; the replay"
            " is the smallest failing run found by then"
        ]
    if result.details.get("flaky"):
        return ["  note:          the failure did not reproduce on every replay"]
    return []
