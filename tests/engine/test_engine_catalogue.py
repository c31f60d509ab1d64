"""The engine catalogue through real host processes: the reference host is 100 % conformant
(vectors and properties), every engine mutant is killed by a divergence naming one of its
clauses, every allowed variant is conformant -- and answers differently from the reference on
some vector, so the open point it takes was looked at."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance.binding.catalogue import ENTRIES_LIST, EngineEntry
from conformance.binding.check import check_engine
from conformance.binding.functions import BY_NAME, FUNCTIONS, outcome_of
from conformance.binding.host import EngineHost
from conformance.binding.vectors import function_vectors
from conformance.cli import main
from conformance.commands import selftest_engine

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
    "MEM-CAP.6",
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
    "MEM-REFLECT.15",
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
    "MEM-SCORE.10",
    "MEM-WRITE.1",
    "MEM-WRITE.2",
    "MEM-WRITE.3",
    "MEM-WRITE.4",
    "MEM-WRITE.5",
)  # every clause of the engine binding (specs/engine-binding.md)

MUTANTS = [e for e in ENTRIES_LIST if e.kind == "mutant"]
VARIANTS = [e for e in ENTRIES_LIST if e.kind == "variant"]


def _cases(entries: list[EngineEntry]) -> list[object]:
    """One case per entry, named after it."""
    return [pytest.param(e, id=e.name) for e in entries]


def test_the_reference_host_is_conformant_on_vectors_and_properties(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = f"{sys.executable} -m conformance.engine_host"
    code = main(["engine", "--host", host, "--examples", "15", "--report", str(tmp_path), "-q"])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "CONFORMANT" in out
    data = json.loads((tmp_path / "report.json").read_text())
    verdicts = {s["name"]: s["verdict"] for s in data["scenarios"]}
    assert len(verdicts) == 2 * len(FUNCTIONS)
    assert set(verdicts.values()) == {"pass"}


@pytest.mark.parametrize("entry", _cases(MUTANTS))
def test_every_engine_mutant_is_killed_naming_its_clause(
    entry: EngineEntry,
) -> None:
    row = selftest_engine.run_entry(entry, "quick", properties=False)
    assert row.verdict == "killed" and row.killed_by == "vectors", row
    assert row.clause in entry.clauses


@pytest.mark.parametrize("entry", _cases(VARIANTS))
def test_every_engine_variant_is_conformant_and_takes_another_answer(
    entry: EngineEntry,
) -> None:
    row = selftest_engine.run_entry(entry, "quick", examples=30)
    assert row.verdict == "conformant", row
    fn = BY_NAME[entry.function]
    differs = [
        v.id for v in function_vectors(fn)
        if outcome_of(entry.impl, v.args) != outcome_of(fn.call, v.args)
    ]  # fmt: skip
    assert differs, f"{entry.name} answers like the reference on every vector"


def test_a_property_alone_finds_a_mutant_and_shrinks_it_with_clauses() -> None:
    entry = next(e for e in MUTANTS if e.name == "eng-substring-match")
    fn = BY_NAME[entry.function]
    with EngineHost(selftest_engine.host_command(entry)) as host:
        runs = check_engine(host, [fn], vectors={fn.name: []}, examples=200, seed=1)
    prop = runs[0].prop
    assert prop is not None and prop.verdict == "fail"
    step = prop.outcomes[0]
    assert step.clauses == ("MEM-SCORE.2",)
    assert "shrunk counterexample" in step.reason
    args = step.details["args"]
    assert len(args["query"]) <= 12, args  # shrunk: a short query that is a substring
