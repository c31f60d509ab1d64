"""``memspec --version`` and the provenance every report carries: the memspec version, the spec
revision (a hash of specs/) and the corpus revision (a hash of conformance/corpus/)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance import version
from conformance.cli import main
from conformance.report import RunReport, write_report
from conformance.runner import CORPUS_DIR, ScenarioResult
from conformance.scenario import load_scenario

REV = re.compile(r"[0-9a-f]{12}")


@pytest.mark.clause()
def test_version_names_memspec_the_specs_and_the_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out.strip()
    p = version.provenance()
    assert out == (
        f"memspec {p['memspec_version']} (spec {p['spec_revision']}, corpus {p['corpus_revision']})"
    )
    assert p["memspec_version"] not in ("", "unknown")
    assert REV.fullmatch(p["spec_revision"]) and REV.fullmatch(p["corpus_revision"])


@pytest.mark.clause()
def test_tree_hash_is_stable_and_moves_with_any_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"one\ntwo\n")
    (tmp_path / "b.yaml").write_bytes(b"x: 1\n")
    first = version.tree_hash(tmp_path, version.SPEC_PATTERNS)
    assert first == version.tree_hash(tmp_path, version.SPEC_PATTERNS)
    (tmp_path / "a.md").write_bytes(b"one\r\ntwo\r\n")  # a Windows checkout: same revision
    assert version.tree_hash(tmp_path, version.SPEC_PATTERNS) == first
    (tmp_path / "b.yaml").write_bytes(b"x: 2\n")
    assert version.tree_hash(tmp_path, version.SPEC_PATTERNS) != first
    (tmp_path / "b.yaml").write_bytes(b"x: 1\n")
    (tmp_path / "b.yaml").rename(tmp_path / "c.yaml")  # a rename is a new revision too
    assert version.tree_hash(tmp_path, version.SPEC_PATTERNS) != first


@pytest.mark.clause()
def test_the_revisions_hash_the_real_specs_and_corpus() -> None:
    root = Path(__file__).resolve().parents[2]
    assert version.specs_dir().resolve() == (root / "specs").resolve()
    assert version.spec_revision() == version.tree_hash(root / "specs", version.SPEC_PATTERNS)
    assert version.corpus_revision() == version.tree_hash(
        root / "conformance" / "corpus", ("**/*.json",)
    )


@pytest.mark.clause()
def test_every_report_output_names_what_judged_it(tmp_path: Path) -> None:
    report = RunReport(run_id="memspec-abcd1234", target={"url": "x"}, options={"spec": "all"})
    path = sorted((CORPUS_DIR / "memory").glob("*.json"))[0]
    report.scenarios = [ScenarioResult(load_scenario(path), "skip", reason="not run here")]
    data = write_report(report, tmp_path, {})
    p = version.provenance()
    on_disk = json.loads((tmp_path / "report.json").read_text())
    for key, value in p.items():
        assert data[key] == value and on_disk[key] == value
    html = (tmp_path / "report.html").read_text()
    head = html.split("<h2>", 1)[0]
    assert p["spec_revision"] in head and p["corpus_revision"] in head
    assert p["memspec_version"] in head
    root = ET.fromstring((tmp_path / "junit.xml").read_text())
    suites = root.findall("testsuite")
    assert suites
    for suite in suites:
        props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        assert {k: props.get(k) for k in p} == p
        assert props["run_id"] == "memspec-abcd1234"
