"""A target that misbehaves — 500s, broken JSON, timeouts, resets, huge or redirected answers —
is reported as a divergence or as indeterminate, never as a crash, and the CLI says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.runner import run_scenario
from conformance.scenario import Scenario, Step
from tests.common.memory_harness import FakeTarget, make_driver

SCENARIO = Scenario(
    protocol="memory",
    name="one_write_then_list",
    clauses=["MEM-WIRE.13"],
    steps=[
        Step(
            op="write",
            args={
                "scopeKey": "{scope:a}",
                "records": [{"kind": "fact", "text": "x", "sourceThreadKey": "t"}],
            },
        ),
        Step(op="list", args={"scopeKey": "{scope:a}", "limit": 5}),
    ],
)


@pytest.mark.clause("MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.8")
@pytest.mark.parametrize(
    ("mode", "verdict", "words"),
    [
        ("500", "fail", "answered HTTP 500"),
        ("broken-json", "fail", "not JSON"),
        ("slow", "indeterminate", "timeout"),
        ("reset", "indeterminate", "no HTTP answer"),
        ("huge", "fail", "larger than"),
        ("redirect", "fail", "HTTP 302"),
        ("ok-empty", "fail", "answer differs"),
    ],
)
def test_a_misbehaving_target_is_judged_not_crashed(mode: str, verdict: str, words: str) -> None:
    with FakeTarget(mode, delay_s=1.2) as fake:
        # Only "slow" needs the deadline to fall before its answer; the others get a deadline
        # a loaded machine cannot miss (a 5 MiB answer must be judged, not timed out).
        driver = make_driver(fake.url, timeout=0.5 if mode == "slow" else 5.0)
        try:
            result = run_scenario(driver, SCENARIO)
        finally:
            driver.close()
    assert result.verdict == verdict, result.reason
    assert words in result.reason
    assert result.failing_step is not None and result.failing_step.index == 0
    assert "harness error" not in result.reason


@pytest.mark.slow
@pytest.mark.clause("MEM-WIRE.13")
def test_the_cli_reports_a_broken_target_with_exit_1_and_no_traceback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_TOKEN", "fake-token-value")
    with FakeTarget("500") as fake:
        code = main(
            ["run", "--target", fake.url, "--token-env", "FAKE_TOKEN", "--spec", "memory",
             "--examples", "2", "--seed", "1", "--report", os.fspath(tmp_path), "--quiet",
             "--timeout", "2"]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in out + err
    assert "NOT CONFORMANT" in out
    assert "fake-token-value" not in out + err
