"""The clause registry behind ``memspec clauses``: the tool that makes CI fail on an uncovered
clause.  These tests check the registry itself (it covers no spec clause of its own); each
builds a tiny project tree so a broken parser or scanner shows up as a wrong count."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conformance.clauses import coverage, parse_spec
from conformance.cli import main

SPEC = textwrap.dedent(
    """\
    # Example spec

    ```markdown
    ### MEM-EXAMPLE.9 — inside a fence, not a clause
    ```

    ## MEM-A — area

    ### MEM-A.1 — first
    - **Level:** MUST
    - **Observable:** wire (`POST /x`)
    - **Seed:** §1
    - **Source:** seed
    - **Quote:** §1 "memory.enabled defaults false"

    Text.

    ### MEM-A.2 — second
    - **Level:** SHOULD
    - **Observable:** model-only
    - **Seed:** §2
    - **Source:** reference

    ### MEM-A.3 — gone
    - **Level:** MUST
    - **Observable:** model-only
    - **Seed:** §3
    - **Status:** retired (merged into MEM-A.1)
    """
)

TESTS = textwrap.dedent(
    """\
    import pytest

    pytestmark = pytest.mark.clause("MEM-A.2")

    @pytest.mark.clause("MEM-A.1")
    def test_one():
        pass

    class TestGroup:
        @pytest.mark.clause("MEM-B.7")
        def test_two(self):
            pass

    CLAUSES_TestMachine = ("MEM-A.1",)
    """
)


def make_tree(root: Path, tests: str = TESTS, scenarios: dict[str, object] | None = None) -> Path:
    (root / "specs").mkdir()
    (root / "specs" / "memory.md").write_text(SPEC)
    (root / "specs" / "README.md").write_text("### MEM-README.1 — not parsed\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(tests)
    corpus = root / "conformance" / "corpus"
    corpus.mkdir(parents=True)
    for name, data in (scenarios or {}).items():
        (corpus / name).write_text(json.dumps(data))
    return root


@pytest.mark.clause()
def test_spec_parser_reads_headings_fields_and_retirement(tmp_path: Path) -> None:
    make_tree(tmp_path)
    clauses = parse_spec(tmp_path / "specs" / "memory.md")
    assert [c.id for c in clauses] == ["MEM-A.1", "MEM-A.2", "MEM-A.3"]
    assert clauses[0].level == "MUST" and clauses[0].observable.startswith("wire")
    assert [c.retired for c in clauses] == [False, False, True]


@pytest.mark.clause()
def test_coverage_counts_functions_classes_modules_and_machines(tmp_path: Path) -> None:
    cov = coverage(make_tree(tmp_path))
    assert set(cov.tests["MEM-A.1"]) == {
        "tests/test_x.py::test_one",
        "tests/test_x.py::TestMachine",
    }
    # the module-level pytestmark applies to every test in the module, classes included
    assert set(cov.tests["MEM-A.2"]) == {
        "tests/test_x.py::test_one",
        "tests/test_x.py::TestGroup::test_two",
    }
    assert cov.unknown == {"MEM-B.7": ["tests/test_x.py::TestGroup::test_two"]}
    assert cov.uncovered() == []  # MEM-A.3 is retired and needs nothing


@pytest.mark.clause()
def test_a_scenario_counts_as_coverage(tmp_path: Path) -> None:
    tests = 'import pytest\n\n@pytest.mark.clause("MEM-A.1")\ndef test_one():\n    pass\n'
    root = make_tree(tmp_path, tests, {"s.json": {"clauses": ["MEM-A.2"]}})
    cov = coverage(root)
    assert cov.scenarios == {"MEM-A.2": ["conformance/corpus/s.json"]}
    assert cov.uncovered() == []


@pytest.mark.clause()
def test_check_fails_on_an_uncovered_or_unknown_clause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = 'import pytest\n\n@pytest.mark.clause("MEM-A.1")\ndef test_one():\n    pass\n'
    root = make_tree(tmp_path, tests)
    assert main(["clauses", "--root", str(root), "--check"]) == 1
    out = capsys.readouterr().out
    assert "MEM-A.2" in out and "UNCOVERED" in out
    assert main(["clauses", "--root", str(root)]) == 0  # listing alone never fails


@pytest.mark.clause()
def test_duplicate_ids_and_missing_specs_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["clauses", "--root", str(tmp_path)]) == 2
    assert "no specs/ folder" in capsys.readouterr().err
    root = make_tree(tmp_path)
    (root / "specs" / "ledger.md").write_text("### MEM-A.1 — again\n")
    assert main(["clauses", "--root", str(root)]) == 2
    assert "defined in" in capsys.readouterr().err


@pytest.mark.clause()
def test_the_real_specs_are_fully_covered() -> None:
    """The gate CI relies on: every live clause of specs/ has a test or a scenario."""
    root = Path(__file__).resolve().parents[2]
    cov = coverage(root)
    assert len(cov.clauses) > 150
    assert [c.id for c in cov.uncovered()] == []
    assert cov.unknown == {}
