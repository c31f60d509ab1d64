"""``memspec vectors export``: one file per pure function, valid against
``specs/engine-vectors.schema.json``, the same byte for byte on every export, versioned with the
spec revision; read back by ``memspec engine --vectors`` through the reference host with zero
failures.  Each vector names the clauses of its function; every clause of the binding is here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema_rs
import pytest

from conformance.binding.functions import FUNCTIONS, outcome_of
from conformance.binding.judge import Judged, outcome_allowed
from conformance.binding.vectors import export, function_vectors
from conformance.cli import main
from conformance.version import spec_revision

pytestmark = pytest.mark.clause(
    "LED-ASOF.1",
    "LED-ASOF.2",
    "LED-ASOF.3",
    "LED-CRED.1",
    "LED-CRED.3",
    "LED-CRED.4",
    "LED-INT.1",
    "LED-INT.2",
    "LED-PACKET.1",
    "LED-PACKET.2",
    "LED-PACKET.3",
    "LED-PACKET.4",
    "LED-PACKET.5",
    "MEM-BUDGET.1",
    "MEM-BUDGET.2",
    "MEM-BUDGET.3",
    "MEM-CAP.1",
    "MEM-CAP.2",
    "MEM-CAP.5",
    "MEM-CMD.1",
    "MEM-CMD.2",
    "MEM-CMD.3",
    "MEM-CMD.4",
    "MEM-CMD.5",
    "MEM-CMD.6",
    "MEM-CMD.7",
    "MEM-CMD.8",
    "MEM-CONTAIN.1",
    "MEM-CONTAIN.2",
    "MEM-CONTAIN.3",
    "MEM-CONTAIN.4",
    "MEM-READ.1",
    "MEM-READ.2",
    "MEM-READ.3",
    "MEM-READ.4",
    "MEM-RECORD.4",
    "MEM-RECORD.5",
    "MEM-REFLECT.1",
    "MEM-REFLECT.6",
    "MEM-REFLECT.7",
    "MEM-REFLECT.8",
    "MEM-REFLECT.9",
    "MEM-REFLECT.10",
    "MEM-REFLECT.5",
    "MEM-ROUTE.2",
    "MEM-ROUTE.3",
    "MEM-ROUTE.4",
    "MEM-ROUTE.5",
    "MEM-ROUTE.6",
    "MEM-SCOPE.1",
    "MEM-SCOPE.2",
    "MEM-SCOPE.3",
    "MEM-SCOPE.4",
    "MEM-SCORE.1",
    "MEM-SCORE.2",
    "MEM-SCORE.3",
    "MEM-SCORE.4",
    "MEM-SCORE.5",
    "MEM-SCORE.6",
    "MEM-SCORE.9",
    "MEM-WRITE.1",
    "MEM-WRITE.2",
    "MEM-WRITE.3",
    "MEM-WRITE.4",
    "MEM-WRITE.5",
)  # every clause of the engine binding (specs/engine-binding.md)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vectors")
    export(out)
    return out


def test_the_marks_name_every_clause_of_the_binding() -> None:
    marked = {c for m in pytestmark.args for c in [m]}
    assert marked == {c for f in FUNCTIONS for c in f.clauses}


def test_one_valid_file_per_function_with_the_spec_revision(exported: Path) -> None:
    schema = json.loads((REPO / "specs" / "engine-vectors.schema.json").read_text())
    validator = jsonschema_rs.validator_for(schema)
    index = json.loads((exported / "index.json").read_text())
    assert index["spec_revision"] == spec_revision()
    assert {f["function"] for f in index["files"]} == {f.name for f in FUNCTIONS}
    for entry in index["files"]:
        data = json.loads((exported / entry["file"]).read_text())
        errors = [str(e) for e in validator.iter_errors(data)]
        assert not errors, (entry["file"], errors[:3])
        assert data["spec_revision"] == spec_revision()
        assert len(data["vectors"]) == entry["vectors"] > 0
        origins = {v["origin"] for v in data["vectors"]}
        # the boundaries already hold the whole domain: every sample drawn repeats one
        whole_domain = entry["function"] in ("scoreParameters", "listingScopeKeys")
        assert origins == ({"boundary"} if whole_domain else {"boundary", "sample"}), entry["file"]
    assert index["vectors"] >= 600


def test_an_export_is_the_same_byte_for_byte(exported: Path, tmp_path: Path) -> None:
    # another process: nothing cached, Hypothesis's randomness its own
    subprocess.run(
        [sys.executable, "-m", "conformance.cli", "vectors", "export", str(tmp_path)],
        check=True, cwd=REPO, capture_output=True, timeout=300,
    )  # fmt: skip
    first = sorted(p.relative_to(exported) for p in exported.rglob("*.json"))
    second = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.json"))
    assert first == second
    for rel in first:
        assert (exported / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_the_reference_answer_is_allowed_by_every_vector() -> None:
    for fn in FUNCTIONS:
        for v in function_vectors(fn):
            assert outcome_allowed(outcome_of(fn.call, v.args), v.judged), v.id


def test_each_open_point_is_a_vector_allowing_more_than_one_answer() -> None:
    open_ids = {
        v.id
        for fn in FUNCTIONS
        for v in function_vectors(fn)
        if len(v.judged.allowed) > 1 or v.judged.checker is not None
    }
    for fn_name in ("rankRecords", "planEviction", "mintRecord", "deriveScopeKey",
                    "requestScopeKeys", "redactSecrets", "parseReflection", "listAsOf",
                    "buildPacket", "credentialVerdict"):  # fmt: skip
        assert any(i.startswith(fn_name + "/") for i in open_ids), fn_name


def test_the_checkers_refuse_what_is_not_allowed() -> None:
    groups = Judged([], {"name": "tie_groups", "groups": [["a"], ["b", "c"]], "length": 2})
    assert outcome_allowed({"ok": ["a", "c"]}, groups)
    assert outcome_allowed({"ok": ["a", "b"]}, groups)
    assert not outcome_allowed({"ok": ["b", "a"]}, groups)
    assert not outcome_allowed({"ok": ["b", "c"]}, groups)
    assert not outcome_allowed({"ok": ["a", "a"]}, groups)
    unordered = Judged([{"ok": ["x", "y"]}], {"name": "unordered"})
    assert outcome_allowed({"ok": ["y", "x"]}, unordered)
    assert not outcome_allowed({"ok": ["y"]}, unordered)
    redacted = Judged([], {"name": "redacted", "secrets": ["sk-1"], "kept": ["use"]})
    assert outcome_allowed({"ok": "use ***"}, redacted)
    assert not outcome_allowed({"ok": "use sk-1"}, redacted)
    assert not outcome_allowed({"ok": "***"}, redacted)
    exact = Judged([{"ok": 0.1 + 0.2}])
    assert outcome_allowed({"ok": 0.3}, exact)  # one ulp apart
    assert not outcome_allowed({"ok": 0.30001}, exact)
    assert not outcome_allowed({"throws": True}, exact)
    assert not outcome_allowed({"ok": True}, Judged([{"ok": 1}]))


def test_exported_vectors_round_trip_through_the_reference_host(
    exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = f"{sys.executable} -m conformance.engine_host"
    code = main(
        ["engine", "--host", host, "--vectors", str(exported), "--no-properties",
         "--report", str(tmp_path), "-q"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    data = json.loads((tmp_path / "report.json").read_text())
    steps = [o for s in data["scenarios"] for o in s["steps"]]
    index = json.loads((exported / "index.json").read_text())
    assert len(steps) == index["vectors"]
    assert {o["verdict"] for o in steps} == {"pass"}
    assert data["summary"]["divergences"] == 0


def test_export_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vectors", "export", str(tmp_path / "v"), "--spec", "ledger"]) == 0
    out = capsys.readouterr().out
    assert "vectors in 4 files" in out and spec_revision() in out
    assert sorted(p.name for p in (tmp_path / "v" / "ledger").iterdir()) == [
        "buildPacket.json", "credentialVerdict.json", "intervalContains.json", "listAsOf.json",
    ]  # fmt: skip
    (tmp_path / "file").write_text("x")
    assert main(["vectors", "export", str(tmp_path / "file")]) == 2
