"""``--window N``: the ledger machine sends up to N steps ahead of the answers on one connection
(pipelined exploration), and nothing a user reads depends on N -- the same verdicts, the same
divergences at the same steps under the same clauses, the same replay files.  A mutant store,
so that there are divergences: a step judged otherwise than predicted makes its batch run again
with that step in turn (``conformance.machines.batches``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.commands.run import run_pipeline, start_bundled_store
from conformance.drivers.base import Secret, TargetConfig
from conformance.machines.profiles import PROFILES
from tests.common.memory_harness import TOKEN

MUTANTS = frozenset({"led-supersede-leaves-gap"})


def _run(url: str, window: int, out: Path) -> dict[str, Any]:
    config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store (mutant)")
    outcome = run_pipeline(
        config,
        spec="ledger",
        profile_name="ci",
        max_examples=20,
        allow_dirty=True,  # one store for every run: each example starts from a reset
        report_dir=out,
        quiet=True,
        window=window,
    )
    return outcome.data


def _replays(out: Path) -> dict[str, Any]:
    found = {}
    for path in sorted((out / "replays").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for step in data.get("steps", []):
            step.pop("recorded", None)  # the store's answers: its own ids
        found[path.name] = data
    return found


def _machines(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (m["protocol"], m["verdict"], m["examples"], m["steps"], tuple(m["clauses"]))
        for m in data["machines"]
    ]


def _scenarios(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s["name"], s["verdict"], [o["verdict"] for o in s["steps"]], tuple(s["failed_clauses"]))
        for s in data["scenarios"]
    ]


def _divergences(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(d["name"], d["step"], d["op"], tuple(d["clauses"])) for d in data["divergences"]]


@pytest.mark.clause("LED-INT.3", "LED-EDIT.1")
def test_verdicts_divergences_and_replays_do_not_depend_on_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Shrinking runs to its end, not to a time budget (which would make the shrunk replays
    # depend on the machine's speed, whatever the window).
    monkeypatch.setitem(PROFILES, "ci", dataclasses.replace(PROFILES["ci"], shrink_budget_s=600))
    handle = start_bundled_store(TOKEN, quirks=MUTANTS)
    try:
        runs = {w: _run(handle.url, w, tmp_path / f"w{w}") for w in (1, 4, 32)}
    finally:
        handle.stop()
    one = runs[1]
    assert _divergences(one), "the mutant must be caught"
    assert any(s[1] == "fail" for s in _scenarios(one)), "and fail a corpus scenario"
    assert one["exit_code"] == 1
    for w in (4, 32):
        assert _scenarios(runs[w]) == _scenarios(one), w
        assert _machines(runs[w]) == _machines(one), w
        assert _divergences(runs[w]) == _divergences(one), w
        assert runs[w]["clauses"] == one["clauses"], w
        assert _replays(tmp_path / f"w{w}") == _replays(tmp_path / "w1"), w
        assert runs[w]["options"]["window"] == w
    window = runs[32]["machines"][0]["details"]["window"]
    assert window["size"] == 32
    assert window["reruns"] >= 1, "a divergence met ahead must make its batch run again"
