"""``memspec clauses -v ID …``: one clause and everything that names it, read from the real
tree — its text, the model's docstrings, the corpus, the machines' ``@checks``, the probes, the
catalogues, the engine binding and the tests — and an unknown id as a one-line usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.clauses import load_clauses
from conformance.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _view(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["clauses", "--root", str(ROOT), *args])
    return code, capsys.readouterr().out


def _items(out: str, kind: str) -> list[str]:
    return [line.split(None, 1)[1] for line in out.splitlines() if line.startswith(f"  {kind} ")]


@pytest.mark.clause()
def test_a_clause_is_shown_with_everything_that_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _view(capsys, "-v", "MEM-STORE.7")
    assert code == 0
    assert out.startswith("MEM-STORE.7 — List: active records, newest first")
    (text,) = _items(out, "text")
    spec, line = text.rsplit(":", 1)
    heading = (ROOT / spec).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert heading.startswith("### MEM-STORE.7 ")
    assert any(m.startswith("reference.memory.store.store_list (") for m in _items(out, "model"))
    (rule,) = _items(out, "rule")
    assert rule.startswith(
        "conformance.machines.memory.reads.ReadRules.list_records"
        " (conformance/machines/memory/reads.py:"
    )
    assert any(m.startswith("mem-list-oldest-first (memory)") for m in _items(out, "mutant"))
    assert "conformance/corpus/memory/list_is_newest_first_filtered_and_never_bumps.json" in _items(
        out, "scenario"
    )
    assert (
        "tests/harness/test_memory_machine.py::test_memory_machine_passes_against_the_bundled_store"
        in _items(out, "test")
    )
    assert _items(out, "probe") == ["none"] and _items(out, "engine") == ["none"]


@pytest.mark.clause()
def test_probes_steps_engine_functions_and_several_ids(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _view(capsys, "--verbose", "MEM-WIRE.3", "MEM-SCORE.2", "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["MEM-WIRE.3", "MEM-SCORE.2"]
    assert "memory-probe:retrieve-without-bearer" in data["MEM-WIRE.3"]["probe"]
    assert data["MEM-WIRE.3"]["rule"] == []  # the transport probes' clause, not a rule's
    assert any(e.startswith("tokenize (") for e in data["MEM-SCORE.2"]["engine"])
    assert any(m.startswith("eng-substring-match (engine") for m in data["MEM-SCORE.2"]["mutant"])
    # a corpus step that names a clause of its own
    stepped = next(
        (p, i, s["clauses"][0])
        for p in sorted((ROOT / "conformance" / "corpus").rglob("*.json"))
        for i, s in enumerate(json.loads(p.read_text(encoding="utf-8"))["steps"])
        if s.get("clauses")
    )
    path, index, cid = stepped
    _code, out = _view(capsys, "-v", cid)
    rel = path.relative_to(ROOT).as_posix()
    assert any(s.startswith(f"{rel} step {index} (") for s in _items(out, "step")), out


@pytest.mark.clause()
def test_an_unknown_id_is_one_line_naming_it_and_the_closest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["clauses", "--root", str(ROOT), "-v", "MEM-STORE.7", "MEM-STOR.7"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "MEM-STOR.7" in line and "closest: MEM-STORE.7" in line


@pytest.mark.clause()
def test_verbose_without_ids_lists_every_clause_with_its_tests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _view(capsys, "-v", "--spec", "ledger")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("LED-")]
    assert len(rows) == sum(1 for c in load_clauses(ROOT / "specs") if c.startswith("LED-"))
    assert "    test      tests/" in out


@pytest.mark.clause("MEM-SCORE.10")
def test_an_engine_function_is_listed_under_the_reference_rules_its_judge_adds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _view(capsys, "--verbose", "MEM-SCORE.10", "--json")
    assert code == 0
    engine = json.loads(out)["MEM-SCORE.10"]["engine"]
    assert any(e.startswith("scoreParameters (") for e in engine)
    assert any(e.startswith("rankRecords (") for e in engine)
