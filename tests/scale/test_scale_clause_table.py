"""One clause table: the merge of shard reports counts clauses exactly as a run's report does —
including a per-step skip of a probe the target could not carry and one failure per distinct
divergence of a machine (the two copies of the counting had drifted on both)."""

from __future__ import annotations

import pytest

from conformance.machines import Finding, MachineResult
from conformance.report.merge import clause_rows
from conformance.report.model import RunReport
from conformance.runner import ScenarioResult
from conformance.scenario import Scenario, Step
from conformance.vocabulary import StepOutcome


def _report() -> RunReport:
    scenario = Scenario(
        protocol="memory",
        name="fences",
        clauses=["MEM-WIRE.5"],
        steps=[Step(op="raw", args={}, clauses=["MEM-WIRE.6"]), Step(op="healthz", args={})],
    )
    skipped = StepOutcome(
        index=0,
        op="raw",
        verdict="skip",
        clauses=("MEM-WIRE.6",),
        reason="not observable through this target",
    )
    skipped.details["unobservable"] = True
    passed = StepOutcome(index=1, op="healthz", verdict="pass", clauses=("MEM-WIRE.1",))
    result = ScenarioResult(scenario, "pass", [skipped, passed])
    failures = [
        StepOutcome(
            index=2,
            op="forget",
            verdict="diverge",
            clauses=("MEM-STORE.8", "MEM-WIRE.14"),
            reason="lies",
        ),
        StepOutcome(
            index=1,
            op="list",
            verdict="diverge",
            clauses=("MEM-STORE.7", "MEM-WIRE.14"),
            reason="old",
        ),
    ]
    machine = MachineResult("memory", "ci", 1, "fail", 10, 100, 1.0)
    machine.findings = [Finding(f"sig{i}", f, []) for i, f in enumerate(failures)]
    machine.clauses = failures[0].clauses
    report = RunReport(run_id="memspec-tally01", target={}, options={})
    report.scenarios = [result]
    report.machines = [machine]
    report.machine_clauses = {"memory": ("MEM-STORE.7", "MEM-STORE.8", "MEM-SCORE.1")}
    return report


@pytest.mark.clause()
def test_merge_counts_clauses_as_the_run_report_does() -> None:
    data = _report().to_json()
    rows = {r["id"]: r for r in data["clauses"]}
    assert rows["MEM-STORE.7"]["failed"] == 1 and rows["MEM-STORE.8"]["failed"] == 1
    assert rows["MEM-WIRE.14"]["failed"] == 2  # one failure per distinct divergence
    assert rows["MEM-WIRE.6"]["skipped"] == 1
    assert clause_rows(data["scenarios"], data["machines"]) == data["clauses"]
