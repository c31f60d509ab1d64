"""With ``--jobs`` above 1 and both protocols, each protocol's corpus and machine run on a track
of their own, side by side: nothing a user reads depends on it -- the same scenarios in the
same order with the same verdicts, the same divergences, the same machine results and clause
table as the run in turn (``--jobs 1``); and ``report.json`` ``phases`` times each phase."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.embedded.catalogue import Quirks
from conformance.embedded.server import start_server
from conformance.runner import CORPUS_DIR
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine

TOKEN = "tracks-token-4b8e1f27"


def _corpus(tmp: Path) -> Path:
    """A few scenarios of each protocol (the whole corpus would make this a slow test)."""
    for protocol in ("memory", "ledger"):
        (tmp / protocol).mkdir(parents=True)
        for path in sorted((CORPUS_DIR / protocol).glob("*.json"))[:6]:
            shutil.copy(path, tmp / protocol)
    return tmp


def _run(jobs: int, out: Path, corpus: Path) -> dict[str, Any]:
    quirks = Quirks(frozenset({"mem-retrieve-reversed", "led-supersede-leaves-gap"}))
    with start_server(token=TOKEN, test_control=True, quirks=quirks) as store:
        config = TargetConfig(store.url, Secret(TOKEN), 10.0, label="bundled store")
        outcome = run_engine(
            config,
            corpus_dir=corpus,
            spec="all",
            profile="quick",
            examples=1,
            seed=7,
            report_dir=out,
            quiet=True,
            jobs=jobs,
            window=1,
        )
    return outcome.data


@pytest.mark.clause("MEM-SCORE.1", "LED-INT.3")
def test_tracks_change_no_result(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    in_turn = _run(1, tmp_path / "one", corpus)
    tracks = _run(3, tmp_path / "three", corpus)

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
    assert divergences(in_turn), "the mutants must be caught"
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
