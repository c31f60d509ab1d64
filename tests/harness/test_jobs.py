"""``--jobs N``: corpus scenarios run side by side in lanes, and nothing a user reads depends on
N — the same verdicts, the same divergences at the same steps under the same clauses, and the
same replay files (the scenario each replays; the store's own answers, which carry its clock,
are recorded as they came)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.commands.run import run_pipeline
from conformance.drivers.base import Secret, TargetConfig
from tests.common.memory_harness import TOKEN, bundled_store, dedup_disabled, retrieve_reversed


def _run(url: str, jobs: int, out: Path) -> dict[str, Any]:
    config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store")
    outcome = run_pipeline(
        config, spec="memory", machines=False, report_dir=out, quiet=True, jobs=jobs
    )
    return outcome.data


def _replays(out: Path) -> dict[str, Any]:
    found = {}
    for path in sorted((out / "replays").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for step in data.get("steps", []):
            step.pop("recorded", None)  # the store's answers: its own ids and clock
        found[path.name] = data
    return found


@pytest.mark.clause("MEM-SCORE.1", "MEM-WRITE.1")
def test_verdicts_and_replays_do_not_depend_on_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with retrieve_reversed(monkeypatch), dedup_disabled(monkeypatch):
        with bundled_store() as url:
            one = _run(url, 1, tmp_path / "one")
            eight = _run(url, 8, tmp_path / "eight")

    def digest(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (s["name"], s["verdict"], len(s["steps"]), tuple(s["failed_clauses"]))
            for s in data["scenarios"]
        ]

    def divergences(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(d["name"], d["step"], d["op"], tuple(d["clauses"])) for d in data["divergences"]]

    assert digest(one) == digest(eight)
    assert divergences(one) == divergences(eight)
    assert len(divergences(one)) >= 2, "the broken store must be caught"
    assert one["clauses"] == eight["clauses"]
    assert _replays(tmp_path / "one") == _replays(tmp_path / "eight")
    assert (tmp_path / "one" / "replays").is_dir() and _replays(tmp_path / "one")
    assert eight["options"]["jobs"] == 8
