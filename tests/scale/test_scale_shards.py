"""Shards: ``memspec run --shard K/N`` is a deterministic partition (every corpus scenario in
exactly one shard, balanced by cost; the machines' batches split into N disjoint seed ranges),
and ``memspec report merge`` rebuilds the unsharded run's report from the N shard reports —
refusing reports of different runs and naming a missing or half-finished shard.

The in-process test shards a memory-only run against one bundled store (memory scope keys are
unique per shard run id, so shards may share a memory store); the 4-processes test against 4
bundled stores with both protocols runs in CI only (``make scale-check``)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.commands.target import start_bundled_store
from conformance.runner import load_corpus
from conformance.shard import (
    Shard,
    batch_in_shard,
    parse_shard,
    scenario_cost,
    select_scenarios,
    shard_run_id,
)
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine

SEED = 7
EXAMPLES = 20  # two batches: shards 1 and 2 run one each, shards 3 and 4 none
SLOW = pytest.mark.skipif(
    os.environ.get("MEMSPEC_SCALE_TEST") != "1",
    reason="slow (4 processes, both protocols): run with `make scale-check`, as CI does",
)


def _key(s: dict[str, Any]) -> tuple[Any, ...]:
    return (s["name"], s["verdict"], tuple(s["clauses"]), tuple(s["failed_clauses"]))


def assert_same_run(merged: dict[str, Any], whole: dict[str, Any]) -> None:
    """Equal in content, ordering aside: clause by clause, scenario by scenario, machine by
    machine (examples and steps included), and the verdict."""
    assert [r["id"] for r in merged["clauses"]] == [r["id"] for r in whole["clauses"]]
    for a, b in zip(merged["clauses"], whole["clauses"], strict=True):
        assert a == b, f"clause {a['id']}: merged {a} != unsharded {b}"
    assert sorted(map(_key, merged["scenarios"])) == sorted(map(_key, whole["scenarios"]))

    def machines(d: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((m["name"], m["verdict"], m["seed"], m["examples"], m["steps"])
                      for m in d["machines"])  # fmt: skip

    assert machines(merged) == machines(whole)
    assert merged["summary"] == whole["summary"]
    assert merged["exit_code"] == whole["exit_code"]
    for key in ("memspec_version", "spec_revision", "corpus_revision"):
        assert merged[key] == whole[key]


# --------------------------------------------------------------------------- the partition


@pytest.mark.clause()
def test_every_scenario_is_in_exactly_one_shard_and_shards_are_balanced_by_cost() -> None:
    corpus = load_corpus(["memory", "ledger"])
    names = sorted(s.name for s, _ in corpus)
    biggest = max(scenario_cost(s) for s, _ in corpus)
    for n in (1, 2, 3, 4, 7):
        parts = [select_scenarios(corpus, Shard(k, n)) for k in range(1, n + 1)]
        assert sorted(s.name for part in parts for s, _ in part) == names
        loads = [sum(scenario_cost(s) for s, _ in part) for part in parts]
        assert max(loads) - min(loads) <= biggest, loads
        for part in parts:  # corpus order is kept inside a shard
            positions = [next(i for i, (c, _) in enumerate(corpus) if c is s) for s, _ in part]
            assert positions == sorted(positions)
        assert parts == [select_scenarios(corpus, Shard(k, n)) for k in range(1, n + 1)]


@pytest.mark.clause()
def test_machine_batches_split_into_disjoint_ranges_covering_the_run() -> None:
    for n in (1, 2, 3, 4, 9):
        owners = [[k for k in range(1, n + 1) if batch_in_shard(b, Shard(k, n))] for b in range(50)]
        assert all(len(o) == 1 for o in owners)
    assert {shard_run_id("memspec-abcd", Shard(k, 4)) for k in range(1, 5)} == {
        f"memspec-abcds{k}of4" for k in range(1, 5)
    }


@pytest.mark.clause()
@pytest.mark.parametrize("text", ["0/4", "5/4", "4", "a/b", "1/0", "1/999", ""])
def test_a_bad_shard_is_a_one_line_usage_error(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError):
        parse_shard(text)
    assert main(["run", "--shard", text, "--spec", "memory", "--target", "http://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--shard" in err[0]


# --------------------------------------------------------------------------- in process


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """4 memory shards and the unsharded run, same seed, against one bundled store."""
    root = tmp_path_factory.mktemp("shards")
    token = "scale-shards-token-0123456789"
    handle = start_bundled_store(token)
    try:
        config = TargetConfig(handle.url, Secret(token), 10.0, label="bundled store")
        common: dict[str, Any] = dict(
            spec="memory", seed=SEED, examples=EXAMPLES, quiet=True, out=io.StringIO()
        )
        for k in range(1, 5):
            run_engine(config, report_dir=root / f"s{k}", shard=Shard(k, 4), **common)
        whole = run_engine(config, report_dir=root / "whole", **common)
    finally:
        handle.stop()
    return {"root": root, "whole": whole.data}


@pytest.mark.clause("MEM-SEAM.2")
def test_merged_shards_equal_the_unsharded_run(
    sharded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    root = sharded["root"]
    shards = [json.loads((root / f"s{k}" / "report.json").read_text()) for k in range(1, 5)]
    assert len({s["run_id"] for s in shards}) == 4  # each shard its own run id and scope keys
    keys = [set(s["scopes_written"]["memory"]) for s in shards]
    assert all(not (a & b) for i, a in enumerate(keys) for b in keys[i + 1 :])
    ran = [[m["verdict"] for m in s["machines"]] for s in shards]
    assert ran == [["pass"], ["pass"], ["skip"], ["skip"]]
    assert "no batch of examples falls in shard 3/4" in shards[2]["machines"][0]["reason"]
    dirs = [str(root / f"s{k}") for k in (3, 1, 4, 2)]  # any order
    assert main(["report", "merge", *dirs, "--out", str(root / "merged")]) == 0
    assert "CONFORMANT" in capsys.readouterr().out
    merged = json.loads((root / "merged" / "report.json").read_text())
    assert_same_run(merged, sharded["whole"])
    assert merged["options"]["shards"] == 4 and len(merged["shards"]) == 4
    assert (root / "merged" / "junit.xml").is_file() and (root / "merged" / "report.html").is_file()


def _copy_shards(root: Path, dest: Path) -> list[Path]:
    out = []
    for k in range(1, 5):
        shutil.copytree(root / f"s{k}", dest / f"s{k}")
        out.append(dest / f"s{k}")
    return out


def _merge_error(dirs: list[Path], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["report", "merge", *map(str, dirs), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert not (out / "report.json").exists()
    return err


@pytest.mark.clause()
def test_merge_refuses_shards_of_different_runs_and_names_a_missing_one(
    sharded: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = _copy_shards(sharded["root"], tmp_path)
    out = tmp_path / "out"
    assert "shard(s) 3/4 missing" in _merge_error([dirs[0], dirs[1], dirs[3]], out, capsys)
    assert "given twice" in _merge_error([*dirs, dirs[2]], out, capsys)
    for key, value, says in (
        ("memspec_version", "9.9.9", "conflicting memspec_version"),
        ("spec_revision", "0" * 12, "conflicting spec_revision"),
        (("options", "seed"), SEED + 1, "conflicting option seed"),
        (("options", "run_base"), "memspec-other", "conflicting run ids"),
        ("level", "reference", "conflicting level"),  # judged at another --level
    ):
        report = dirs[1] / "report.json"
        original = report.read_text()
        data = json.loads(original)
        if isinstance(key, tuple):
            data[key[0]][key[1]] = value
        else:
            data[key] = value
        report.write_text(json.dumps(data))
        assert says in _merge_error(dirs, out, capsys)
        report.write_text(original)
    assert main(["report", "merge", *map(str, dirs), "--out", str(out), "-q"]) == 0
    # an unsharded report is not a shard
    assert "not a shard's report" in _merge_error(
        [*dirs[:3], sharded["root"] / "whole"], tmp_path / "o2", capsys
    )


@pytest.mark.clause()
def test_a_shard_killed_half_way_fails_the_merge_naming_it(
    sharded: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = _copy_shards(sharded["root"], tmp_path)
    shutil.rmtree(dirs[2])
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "run", "--spec", "memory", "--seed", str(SEED),
         "--examples", str(EXAMPLES), "--shard", "3/4", "--report", str(dirs[2]), "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (dirs[2] / "shard.json").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "the shard never started"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    err = _merge_error(dirs, tmp_path / "out", capsys)
    assert "shard 3/4" in err and "incomplete" in err and str(dirs[2]) in err


# --------------------------------------------------------------------------- 4 processes


@SLOW
@pytest.mark.clause("MEM-SEAM.2", "LED-WIRE.1")
def test_four_shard_processes_against_four_stores_merge_to_the_unsharded_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--spec", "all", "--profile", "quick", "--seed", "5", "--examples", "40", "-q"]
    cmd = [sys.executable, "-m", "conformance.cli", "run", *args]
    started = time.monotonic()
    procs = [
        subprocess.Popen([*cmd, "--shard", f"{k}/4", "--report", str(tmp_path / f"s{k}")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for k in range(1, 5)
    ]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    sharded_wall = time.monotonic() - started
    started = time.monotonic()
    whole = subprocess.run([*cmd, "--report", str(tmp_path / "whole")], capture_output=True)
    whole_wall = time.monotonic() - started
    assert whole.returncode == 0, whole.stderr
    dirs = [str(tmp_path / f"s{k}") for k in range(1, 5)]
    assert main(["report", "merge", *dirs, "--out", str(tmp_path / "merged"), "-q"]) == 0
    merged = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert_same_run(merged, json.loads((tmp_path / "whole" / "report.json").read_text()))
    assert {p for s in merged["scenarios"] for p in [s["protocol"]]} == {"memory", "ledger"}
    print(f"4 shards (4 processes): {sharded_wall:.1f}s wall; unsharded: {whole_wall:.1f}s")


@pytest.mark.clause()
def test_a_machine_failing_in_one_shard_fails_the_merged_run_once(
    sharded: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = _copy_shards(sharded["root"], tmp_path)
    report = dirs[1] / "report.json"
    data = json.loads(report.read_text())
    (m,) = data["machines"]
    examples = m["examples"]
    m.update(verdict="fail", reason="step 0 (write): boom", failed_clauses=["MEM-WRITE.1"])
    data["divergences"].append(
        {"source": "machine", "name": m["name"], "protocol": "memory", "verdict": "diverge",
         "clauses": ["MEM-WRITE.1"], "step": 0, "op": "write", "reason": "boom",
         "expected": "", "exchange": None, "replay": None, "expected_by": None}
    )  # fmt: skip
    report.write_text(json.dumps(data))
    assert main(["report", "merge", *map(str, dirs), "--out", str(tmp_path / "out"), "-q"]) == 1
    merged = json.loads((tmp_path / "out" / "report.json").read_text())
    (mm,) = merged["machines"]
    assert mm["verdict"] == "fail" and mm["reason"] == "step 0 (write): boom"
    assert mm["examples"] > examples  # the other shard's batch is still counted
    assert [d["name"] for d in merged["divergences"]] == [m["name"]]
    row = next(r for r in merged["clauses"] if r["id"] == "MEM-WRITE.1")
    assert row["failed"] == 1 and merged["exit_code"] == 1
    assert merged["summary"]["unexpected"] == 1 and merged["summary"]["machines"] == {"fail": 1}
