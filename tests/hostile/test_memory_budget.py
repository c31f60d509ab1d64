"""One memory budget for a run (issue 23): what a step keeps of a large answer once judged,
the report's cap, and the run's answer gate -- against a real hostile server on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_server import HostileServer

from conformance import report as report_module
from conformance.commands.target import start_bundled_store
from conformance.report import RunReport, write_report
from conformance.runner import ScenarioResult
from conformance.scenario import Scenario, Step
from conformance.targets import budget
from conformance.targets.memory import MemoryTarget
from conformance.vocabulary import KEEP_FAILED, Secret, StepOutcome, TargetConfig

TOKEN = "Bg7/budget-Tok9-xx"


@pytest.fixture(scope="module")
def million() -> Iterator[MemoryTarget]:
    store = start_bundled_store(TOKEN)
    srv = HostileServer("million-records", int(store.url.rsplit(":", 1)[1]), TOKEN, 0)
    target = MemoryTarget(TargetConfig(srv.url, Secret(TOKEN), 10.0))
    try:
        yield target
    finally:
        target.close()
        srv.stop()
        store.stop()


@pytest.mark.clause("MEM-WIRE.11")
def test_a_step_keeps_an_excerpt_and_a_digest_of_a_large_answer_not_the_answer(
    million: MemoryTarget,
) -> None:
    ex = million.post("/list", {"scopeKey": "s", "limit": 5})
    assert isinstance(ex.body, dict) and len(ex.body["records"]) == 1_000_000  # judged whole
    assert ex.body_bytes > 2_000_000 and len(ex.body_sha256) == 64
    outcome = StepOutcome(index=0, op="list", verdict="diverge", clauses=(), exchange=ex)
    kept = outcome.kept()
    assert kept.exchange is not None and kept.exchange.body is None
    assert kept.exchange.body_excerpt.startswith('{"records":[{},{}')
    assert len(kept.exchange.body_excerpt) < 1100
    shown = kept.exchange.to_json()
    assert shown["body_cut"]["sha256"] == ex.body_sha256
    assert shown["body_cut"]["bytes"] == ex.body_bytes
    assert len(json.dumps(shown)) < 2000
    small = million.post("/healthz", {})  # the probe is answered honestly: small, kept whole
    assert small.body_bytes <= KEEP_FAILED[0]


@pytest.mark.clause("MEM-WIRE.11")
def test_a_large_answer_holds_the_run_gate_until_it_is_let_go(million: MemoryTarget) -> None:
    ex = million.post("/list", {"scopeKey": "s", "limit": 5})
    hold = budget._local.hold
    assert hold is not None and hold.fd is not None and hold.count == 1  # taken, held
    del ex
    assert hold.fd is None and hold.count == 0  # let go with the answer


@pytest.mark.clause()
def test_a_report_over_its_cap_shows_excerpts_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, million: MemoryTarget
) -> None:
    ex = million.post("/list", {"scopeKey": "s", "limit": 5})
    medium = {"records": [{"id": f"r{i}", "text": "t" * 50} for i in range(100)]}
    ex = type(ex)(ex.method, ex.path, ex.request_body, 200, medium, body_bytes=7000)
    scenario = Scenario(
        name="s",
        protocol="memory",
        description="d",
        clauses=["MEM-WIRE.11"],
        steps=[Step(op="list", args={})],
    )
    outcome = StepOutcome(index=0, op="list", verdict="pass", clauses=(), exchange=ex)
    result = ScenarioResult(scenario=scenario, verdict="pass")
    result.outcomes.append(outcome.kept())
    rep = RunReport(run_id="memspec-test", target={}, options={}, scenarios=[result])
    monkeypatch.setattr(report_module, "REPORT_CAP_BYTES", 2000)
    data = write_report(rep, tmp_path, {})
    step = data["scenarios"][0]["steps"][0]["exchange"]
    assert step["body"] is None and step["body_excerpt"].startswith('{"records": [{"id": "r0"')
    assert any("cap" in n for n in data["notes"])
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["notes"] == data["notes"]
