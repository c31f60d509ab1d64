"""A ledger run never harms a ledger it was not given: the single ``account:local`` scope cannot
be confined to keys of the run, so a non-empty ledger is refused without ``--allow-dirty``;
without test controls the driver cleans up after itself and ignores records it did not write;
the bearer token is never printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.errors import TargetError
from conformance.runner import run_scenario
from conformance.scenario import Scenario, Step
from conformance.targets.ledger import CLOCK, TEST_CONTROL
from tests.common.ledger_harness import TOKEN, bundled_store, call, make_driver

ROOT = Path(__file__).resolve().parents[2]
S = "account:local"


def small_scenario(name: str) -> Scenario:
    return Scenario(
        protocol="ledger",
        name=name,
        clauses=["LED-SAVE.1"],
        steps=[
            Step(op="save", args={"body": f"{name} one"}, bind={"r1": "id"}),
            Step(op="save", args={"body": f"{name} two"}, bind={"r2": "id"}),
            Step(op="supersede", args={"recordId": "$r1", "body": f"{name} one, edited"}),
            Step(op="update_settings", args={"mode": "propose", "maxRecords": 5}),
            Step(op="list", args={"scopeKey": S}, expect={"count": 2}),
            Step(op="get_settings", args={}),
        ],
    )


@pytest.mark.clause("LED-REC.5", "LED-WIRE.7")
def test_a_non_empty_ledger_is_refused_without_allow_dirty() -> None:
    with bundled_store() as url:
        assert call(url, "memory/save_memory_record", {"body": "someone's real pin"})[0] == 200
        with pytest.raises(TargetError) as err:
            make_driver(url)
        assert "--allow-dirty" in str(err.value)
        # Nothing was touched: the pin is still there.
        status, body = call(url, "memory/list_memory_records", {"scopeKey": S})
        assert status == 200 and [r["body"] for r in body["records"]] == ["someone's real pin"]
        call(url, "memory/delete_memory_record", {"recordId": body["records"][0]["id"]})
        # A pending proposal alone makes the ledger non-empty too.
        status, proposal = call(url, "_test/propose", {"body": "a suggestion"})
        assert status == 200
        with pytest.raises(TargetError):
            make_driver(url)
        call(url, "memory/reject_memory_record", {"recordId": proposal["id"]})
        # Now only history remains: active and proposed are empty, the run may proceed.
        make_driver(url).close()


@pytest.mark.clause("LED-WIRE.7")
def test_allow_dirty_with_test_controls_resets_and_runs() -> None:
    with bundled_store() as url:
        call(url, "memory/save_memory_record", {"body": "leftover"})
        driver = make_driver(url, allow_dirty=True)
        try:
            result = run_scenario(driver, small_scenario("dirty"))
        finally:
            driver.close()
        assert result.verdict == "pass", result.reason
        assert driver.scopes_written() == [S]


@pytest.mark.clause("LED-FORGET.1", "LED-CONS.2", "LED-REVIEW.3")
def test_without_test_controls_each_scenario_cleans_up_after_the_last() -> None:
    with bundled_store(test_control=False) as url:
        before = call(url, "memory/get_consolidation_settings", {})[1]
        driver = make_driver(url)
        try:
            assert TEST_CONTROL not in driver.capabilities()
            assert CLOCK not in driver.capabilities()
            for n in range(3):
                result = run_scenario(driver, small_scenario(f"round{n}"))
                assert result.verdict == "pass", (n, result.reason)
        finally:
            driver.close()
        # The rounds' records are tombstoned (between rounds and at close), settings put back.
        status, body = call(url, "memory/list_memory_records", {"scopeKey": S})
        assert status == 200 and body["records"] == []
        assert call(url, "memory/get_consolidation_settings", {})[1] == before


@pytest.mark.clause("LED-ASOF.1", "LED-LIST.1")
def test_allow_dirty_without_test_controls_ignores_and_keeps_foreign_records() -> None:
    with bundled_store(test_control=False) as url:
        status, foreign = call(url, "memory/save_memory_record", {"body": "not ours"})
        assert status == 200
        with pytest.raises(TargetError):
            make_driver(url)
        driver = make_driver(url, allow_dirty=True)
        try:
            for n in range(2):
                result = run_scenario(driver, small_scenario(f"dirty{n}"))
                assert result.verdict == "pass", (n, result.reason)
                assert "dirty" in result.outcomes[-1].details
        finally:
            driver.close()
        status, body = call(url, "memory/list_memory_records", {"scopeKey": S})
        assert [r["id"] for r in body["records"]] == [foreign["id"]]
        assert body["records"][0]["body"] == "not ours"


@pytest.mark.clause("LED-WIRE.7")
def test_cli_refuses_a_dirty_ledger_with_exit_2_and_never_prints_the_token(tmp_path: Path) -> None:
    with bundled_store() as url:
        call(url, "memory/save_memory_record", {"body": "production pin"})
        env = {**os.environ, "LEDGER_TOKEN": TOKEN}
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "from conformance.cli import main; raise SystemExit(main())",
                "run",
                "--target",
                url,
                "--token-env",
                "LEDGER_TOKEN",
                "--spec",
                "ledger",
                "--quiet",
                "--report",
                str(tmp_path / "r"),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        assert "--allow-dirty" in proc.stderr
        assert TOKEN not in proc.stdout + proc.stderr
        status, body = call(url, "memory/list_memory_records", {"scopeKey": S})
        assert [r["body"] for r in body["records"]] == ["production pin"]


@pytest.mark.clause("LED-WIRE.7")
def test_the_token_never_reaches_an_outcome_or_a_repr() -> None:
    with bundled_store() as url:
        driver = make_driver(url)
        try:
            driver.begin("token")
            outcomes = [
                driver.execute(0, Step(op="save", args={"body": "x"})),
                driver.execute(1, Step(op="raw", args={"method": "memory/nope", "params": {}})),
            ]
        finally:
            driver.close()
    text = json.dumps([o.to_json() for o in outcomes]) + repr(driver.target) + repr(driver.ctx)
    assert TOKEN not in text
