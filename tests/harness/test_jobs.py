"""``--jobs N``: corpus scenarios run side by side in lanes, and nothing a user reads depends on
N — the same verdicts, the same divergences at the same steps under the same clauses, and the
same replay files (the scenario each replays; the store's own answers, which carry its clock,
are recorded as they came)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.commands.target import start_bundled_store
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine
from tests.common.memory_harness import TOKEN, bundled_store, dedup_disabled


def _run(url: str, jobs: int, out: Path) -> dict[str, Any]:
    config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store")
    outcome = run_engine(
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
    with dedup_disabled(monkeypatch):
        with bundled_store(quirks=("mem-retrieve-reversed",)) as url:
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


def _run_mutant(
    url: str, jobs: int, procs: int, out: Path, machines: bool = True
) -> dict[str, Any]:
    config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store (mutant)")
    outcome = run_engine(
        config,
        spec="memory",
        profile="ci",
        examples=20,
        machines=machines,
        report_dir=out,
        quiet=True,
        jobs=jobs,
        procs=procs,
    )
    return outcome.data


@pytest.mark.slow
@pytest.mark.clause("MEM-SCORE.2", "MEM-STORE.2")
def test_worker_processes_change_no_result(tmp_path: Path) -> None:
    """Lanes in worker processes: the corpus's verdicts and replay files as with one thread
    lane, and the machine's divergences the same whether its lanes live in one worker process
    or in two (a mutant store, so there is something to find)."""
    handle = start_bundled_store(TOKEN, quirks=frozenset({"mem-substring-match"}))
    try:
        threads = _run_mutant(handle.url, 1, 0, tmp_path / "threads")
        one = _run_mutant(handle.url, 2, 1, tmp_path / "one")
        two = _run_mutant(handle.url, 4, 2, tmp_path / "two")
    finally:
        handle.stop()
    assert (threads["options"]["procs"], one["options"]["procs"], two["options"]["procs"]) == (
        0,
        1,
        2,
    )

    def corpus(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (s["name"], s["verdict"], len(s["steps"]), tuple(s["failed_clauses"]))
            for s in data["scenarios"]
        ]

    def machine(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        # which divergences, under which clauses (the step a shrunk run stops at depends on
        # how far shrinking got in its time budget)
        return [
            (d["name"], tuple(d["clauses"])) for d in data["divergences"] if "machine" in d["name"]
        ]

    assert corpus(threads) == corpus(one) == corpus(two)
    assert machine(one) == machine(two)
    assert machine(one), "the mutant must be caught by the machine"
    assert one["exit_code"] == two["exit_code"] == threads["exit_code"] == 1

    # The corpus's replay files are the same whatever the arrangement.  A machine finding's
    # shrunk replay is not compared byte for byte: its description names the store's ids (run
    # id and lane scopes), and which smallest run shrinking reaches depends on the store's
    # answers to the runs it tries, which carry the store's own clock (ties of one
    # millisecond), and on the shrink time budget.  The examples explored do not depend on the
    # arrangement (conformance.machines.constants; tests/harness/test_pinned_constants.py).
    def corpus_replays(out: Path) -> dict[str, Any]:
        return {k: v for k, v in _replays(out).items() if k.startswith("scenario-")}

    assert corpus_replays(tmp_path / "threads") == corpus_replays(tmp_path / "one")
    assert corpus_replays(tmp_path / "one") == corpus_replays(tmp_path / "two")
    assert corpus_replays(tmp_path / "two")
