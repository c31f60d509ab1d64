"""With ``--jobs`` above 1 and both protocols, each protocol's corpus and machine run on a track
of their own, side by side: nothing a user reads depends on it -- the same scenarios in the
same order with the same verdicts, the same divergences, the same machine results and clause
table as the run in turn (``--jobs 1``); and ``report.json`` ``phases`` times each phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.embedded.catalogue import Quirks
from conformance.embedded.server import start_server
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine

TOKEN = "tracks-token-4b8e1f27"


def _run(jobs: int, out: Path) -> dict[str, Any]:
    quirks = Quirks(frozenset({"mem-retrieve-reversed", "led-supersede-leaves-gap"}))
    with start_server(token=TOKEN, test_control=True, quirks=quirks) as store:
        config = TargetConfig(store.url, Secret(TOKEN), 10.0, label="bundled store")
        outcome = run_engine(
            config,
            spec="all",
            profile="quick",
            examples=2,
            seed=7,
            report_dir=out,
            quiet=True,
            jobs=jobs,
            window=1,
        )
    return outcome.data


@pytest.mark.slow
@pytest.mark.clause("MEM-SCORE.1", "LED-INT.3")
def test_tracks_change_no_result(tmp_path: Path) -> None:
    in_turn = _run(1, tmp_path / "one")
    tracks = _run(3, tmp_path / "three")

    def scenarios(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (s["name"], s["kind"], s["verdict"], tuple(s["failed_clauses"]))
            for s in data["scenarios"]
        ]

    def machines(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(m["protocol"], m["verdict"], tuple(m["failed_clauses"])) for m in data["machines"]]

    def divergences(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(d["name"], d.get("step"), tuple(d["clauses"])) for d in data["divergences"]]

    assert scenarios(in_turn) == scenarios(tracks)
    assert machines(in_turn) == machines(tracks)
    assert divergences(in_turn) == divergences(tracks)
    assert {d[0] for d in divergences(in_turn)} & {"ledger-machine", "memory-machine"}
    assert in_turn["clauses"] == tracks["clauses"]
    assert in_turn["exit_code"] == tracks["exit_code"] == 1
    assert set(in_turn["phases"]) == {
        "corpus", "memory probes", "memory machine", "ledger probes", "ledger machine"
    }  # fmt: skip
    assert set(tracks["phases"]) == {
        "memory corpus", "ledger corpus", "memory probes", "memory machine", "ledger probes",
        "ledger machine",
    }  # fmt: skip
    assert all(v > 0 for v in tracks["phases"].values())
