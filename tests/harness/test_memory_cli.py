"""``memspec run`` / ``fuzz`` / ``replay`` end to end: exit codes, the report files, the token
never leaking, expectations, and a broken store caught with a short replay."""

from __future__ import annotations

import contextlib
import io
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.report.expect import Expectation
from conformance.runner import CORPUS_DIR
from conformance.scenario import load_scenario
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine
from tests.common.memory_harness import (
    TOKEN,
    bundled_store,
    closed_port,
    dedup_disabled,
    dedup_without_bump,
    forget_only_claims,
)

CORPUS = CORPUS_DIR / "memory"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _tree_text(root: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file()
    )


@pytest.mark.clause("MEM-WIRE.1", "MEM-SEAM.2")
def test_run_against_the_bundled_store_is_conformant_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "rep"
    code, out, err = _run(
        [
            "run",
            "--spec",
            "memory",
            "--examples",
            "3",
            "--seed",
            "11",
            "--report",
            str(report),
            "--quiet",
        ],
        capsys,
    )
    assert code == 0, out + err
    assert "CONFORMANT" in out and "Traceback" not in out + err
    assert {p.name for p in report.iterdir()} >= {"report.json", "junit.xml", "report.html"}
    data = json.loads((report / "report.json").read_text())
    assert data["schema"] == "memspec-report/1"
    assert data["exit_code"] == 0
    assert data["target"]["label"] == "bundled store" and data["target"]["token"] == "set"
    assert data["summary"]["scenarios"] == {"pass": len(list(CORPUS.glob("*.json")))}
    assert data["machines"][0]["verdict"] == "pass" and data["machines"][0]["seed"] == 11
    keys = data["scopes_written"]["memory"]
    assert keys and all(k.startswith(f"org:{data['run_id']}-") for k in keys)
    rows = {r["id"]: r for r in data["clauses"]}
    assert rows["MEM-WRITE.1"]["passed"] >= 1 and rows["MEM-WRITE.1"]["failed"] == 0
    suite = ET.parse(report / "junit.xml").getroot()
    assert suite.tag == "testsuites" and int(suite[0].get("failures", "1")) == 0
    html = (report / "report.html").read_text()
    assert "<script" not in html and "http://" not in html.replace(data["target"]["url"], "")
    assert "MEM-WRITE.1" in html


@pytest.mark.clause("MEM-WIRE.3")
def test_the_token_is_never_printed_or_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSPEC_TEST_TOKEN", TOKEN)
    with bundled_store() as url:
        code, out, err = _run(
            ["run", "--target", url, "--token-env", "MEMSPEC_TEST_TOKEN", "--spec", "memory",
             "--examples", "2", "--report", str(tmp_path), "--quiet"],
            capsys,
        )  # fmt: skip
    assert code == 0, out + err
    assert TOKEN not in out + err
    assert TOKEN not in _tree_text(tmp_path)
    token_file = tmp_path / "tok"
    token_file.write_text(TOKEN + "\n")
    with bundled_store() as url:
        code, out, err = _run(
            [
                "replay",
                str(CORPUS / "data_routes_need_the_bearer.json"),
                "--target",
                url,
                "--token-file",
                str(token_file),
            ],
            capsys,
        )
    assert code == 0, out + err
    assert TOKEN not in out + err


@pytest.mark.clause("MEM-WIRE.1")
def test_an_unreachable_target_is_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_TOKEN", "some-token-x")
    code, out, err = _run(
        [
            "run",
            "--target",
            f"http://127.0.0.1:{closed_port()}",
            "--token-env",
            "SOME_TOKEN",
            "--spec",
            "memory",
            "--quiet",
        ],
        capsys,
    )
    assert code == 2
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1 and "unreachable" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--target", "ftp://example.org", "--spec", "memory"],
        [
            "run",
            "--target",
            "http://127.0.0.1:9",
            "--token-env",
            "MEMSPEC_SURELY_UNSET_VAR",
            "--spec",
            "memory",
        ],
        ["run", "--spec", "memory", "--expect", "/nonexistent/expect.yaml"],
        ["run", "--spec", "memory", "--examples", "0"],
        ["replay", "/nonexistent/scenario.json"],
        ["run", "--spec", "nonsense"],
    ],
)
@pytest.mark.clause("MEM-WIRE.1")
def test_usage_errors_are_exit_2_without_traceback(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) if "nonsense" in argv else _nullcontext():
        code, out, err = _run(
            [*argv, "--report", str(tmp_path)] if argv[0] == "run" else argv, capsys
        )
        assert code == 2, out + err
        assert "Traceback" not in out + err
        assert len(err.strip().splitlines()) == 1


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.clause("MEM-STORE.8", "MEM-CAP.2")
def test_replay_shows_the_first_difference_side_by_side(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = CORPUS / "forget_soft_deletes_one_active_record.json"
    monkeypatch.setenv("MEMSPEC_TEST_TOKEN", TOKEN)
    with bundled_store() as url:
        code, out, _ = _run(
            [
                "replay",
                str(scenario),
                "--target",
                url,
                "--token-env",
                "MEMSPEC_TEST_TOKEN",
                "--width",
                "60",
            ],
            capsys,
        )
    assert code == 0 and "conformant: all" in out
    with forget_only_claims(monkeypatch), bundled_store() as url:
        code, out, _ = _run(
            [
                "replay",
                str(scenario),
                "--target",
                url,
                "--token-env",
                "MEMSPEC_TEST_TOKEN",
                "--width",
                "60",
            ],
            capsys,
        )
    assert code == 1
    assert "the model allows" in out and "the target said" in out
    assert "── step 3: forget ── DIFFERS" in out
    assert "── step 4" not in out, "the replay stops at the first difference"


# --------------------------------------------------------------------------- a broken store


@pytest.mark.slow
@pytest.mark.clause("MEM-WRITE.1", "MEM-WRITE.6")
def test_a_store_that_never_dedups_fails_the_run_with_a_short_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSPEC_TEST_TOKEN", TOKEN)
    report = tmp_path / "rep"
    with dedup_disabled(monkeypatch), bundled_store() as url:
        code, out, err = _run(
            ["run", "--target", url, "--token-env", "MEMSPEC_TEST_TOKEN", "--spec", "memory",
             "--examples", "40", "--seed", "3", "--report", str(report), "--quiet"],
            capsys,
        )  # fmt: skip
        assert code == 1, out + err
        assert "NOT CONFORMANT" in out and "Traceback" not in out + err
        data = json.loads((report / "report.json").read_text())
        machine = data["machines"][0]
        assert machine["verdict"] == "fail"
        assert "MEM-WRITE.1" in machine["failed_clauses"]
        replay = load_scenario(Path(machine["replay"]))
        # a replay may carry the machine's check reads (a /list right after a write, see
        # conformance.machines.memory); the requests of the failing story stay at most 3
        assert 1 <= len([s for s in replay.steps if s.note is None]) <= 3
        assert len(replay.steps) <= 5
        assert replay.steps[0].recorded is not None, "the replay file carries the transcript"
        failed = {s["name"] for s in data["scenarios"] if s["verdict"] == "fail"}
        assert "dedup_bumps_instead_of_inserting" in failed
        dedup = next(
            d for d in data["divergences"] if d["name"] == "dedup_bumps_instead_of_inserting"
        )
        assert "MEM-WRITE.1" in dedup["clauses"]
        assert "deduped" in dedup["reason"]
        # the replay file reproduces against the broken store ...
        code, out, _ = _run(
            ["replay", machine["replay"], "--target", url, "--token-env", "MEMSPEC_TEST_TOKEN"],
            capsys,
        )
        assert code == 1
    # ... and passes against a healthy one
    with bundled_store() as url:
        code, out, _ = _run(
            ["replay", machine["replay"], "--target", url, "--token-env", "MEMSPEC_TEST_TOKEN"],
            capsys,
        )
    assert code == 0, out


@pytest.mark.clause("MEM-CAP.2", "MEM-WRITE.1", "MEM-STORE.8")
@pytest.mark.parametrize(
    ("breaker", "mutants", "clause", "scenario"),
    [
        (
            None,
            ("mem-evict-most-recently-used",),
            "MEM-CAP.2",
            "eviction_takes_the_least_recently_used",
        ),
        (dedup_without_bump, (), "MEM-WRITE.1", "dedup_bumps_instead_of_inserting"),
        (forget_only_claims, (), "MEM-STORE.8", "forget_soft_deletes_one_active_record"),
    ],
    ids=["evicts-most-recent", "dedup-without-bump", "forget-only-claims"],
)
def test_a_broken_store_is_caught_by_the_corpus_naming_the_clause(
    monkeypatch: pytest.MonkeyPatch,
    breaker: Any,
    mutants: tuple[str, ...],
    clause: str,
    scenario: str,
) -> None:
    with contextlib.ExitStack() as stack:
        if breaker is not None:
            stack.enter_context(breaker(monkeypatch))
        url = stack.enter_context(bundled_store(quirks=mutants))
        res = run_engine(
            TargetConfig(url, Secret(TOKEN)), spec="memory", machines=False, quiet=True, out=_Sink()
        )
    assert res.exit_code == 1
    by_name = {d["name"]: d for d in res.data["divergences"]}
    assert scenario in by_name, sorted(by_name)
    assert clause in by_name[scenario]["clauses"], by_name[scenario]


# --------------------------------------------------------------------------- expectations


class _Sink(io.StringIO):
    """A text stream that keeps nothing."""

    def write(self, s: str) -> int:
        return len(s)


@pytest.mark.clause("MEM-WRITE.1")
def test_expectations_excuse_listed_divergences_and_flag_stale_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus" / "memory"
    corpus.mkdir(parents=True)
    for name in ("dedup_bumps_instead_of_inserting", "keyword_match_dominates_recency"):
        (corpus / f"{name}.json").write_text((CORPUS / f"{name}.json").read_text())
    with dedup_disabled(monkeypatch), bundled_store() as url:
        cfg = TargetConfig(url, Secret(TOKEN))

        def run(expect: list[Expectation]) -> dict[str, Any]:
            res = run_engine(cfg, spec="memory", machines=False, expectations=expect, quiet=True,
                               out=_Sink(), corpus_dir=tmp_path / "corpus",
                               report_dir=tmp_path / "r")  # fmt: skip
            assert res.exit_code == res.data["exit_code"]
            return res.data

        unlisted = run([])
        assert unlisted["exit_code"] == 1 and unlisted["summary"]["unexpected"] == 1
        listed = run([Expectation("MEM-WRITE.1", None, "dedup lands next release")])
        assert listed["exit_code"] == 0
        assert listed["divergences"][0]["expected_by"]["reason"] == "dedup lands next release"
        junit = ET.parse(tmp_path / "r" / "junit.xml").getroot()
        assert junit.find(".//skipped[@message='expected: dedup lands next release']") is not None
        by_name = run([Expectation(None, "dedup_bumps_instead_of_inserting", "known")])
        assert by_name["exit_code"] == 0
        stale = run([Expectation(None, "dedup_bumps_instead_of_inserting", "known"),
                     Expectation("MEM-SCORE.1", None, "was broken once")])  # fmt: skip
        assert stale["exit_code"] == 0
        assert stale["expectations"]["stale"] == [
            {
                "entry": {"clause": "MEM-SCORE.1", "reason": "was broken once"},
                "status": "passes now",
            }
        ]
    # the file form (YAML and JSON) through the CLI
    yaml_file = tmp_path / "expect.yaml"
    yaml_file.write_text("- clause: MEM-WRITE.1\n  reason: known gap\n")
    from conformance.report.expect import load_expectations

    assert load_expectations(yaml_file) == [Expectation("MEM-WRITE.1", None, "known gap")]
    json_file = tmp_path / "expect.json"
    json_file.write_text(json.dumps([{"scenario": "x", "reason": "y"}]))
    assert load_expectations(json_file) == [Expectation(None, "x", "y")]
    bad = tmp_path / "bad.yaml"
    for text in (
        "- clause: MEM-WRITE.1\n",
        "- clause: NOPE\n  reason: r\n",
        "{a: 1}\n",
        "- {reason: r}\n",  # names neither a clause nor a scenario (both is allowed)
        "- {clause: MEM-WRITE.1, op: 3, reason: r}\n",
    ):
        bad.write_text(text)
        with pytest.raises(Exception, match=os.path.basename(str(bad))):
            load_expectations(bad)
