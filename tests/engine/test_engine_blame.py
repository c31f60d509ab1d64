"""Blame the rule that differs: a wrong answer is charged to the clause of its root cause, not
to every clause of the function, and every diverging vector is reported, grouped by root
cause (``memspec engine``'s console, ``report.json``)."""

from __future__ import annotations

import io

import pytest

from conformance.binding.catalogue import ENTRIES, ENTRIES_LIST, EngineEntry
from conformance.binding.check import check_engine
from conformance.binding.functions import BY_NAME, outcome_of
from conformance.binding.host import EngineHost
from conformance.binding.judge import verdict_of
from conformance.binding.vectors import function_vectors
from conformance.commands import selftest_engine
from conformance.report import RunReport
from conformance.report.console import print_summary

pytestmark = pytest.mark.clause(
    "MEM-CAP.2",
    "MEM-CONTAIN.1",
    "MEM-CONTAIN.2",
    "MEM-RECORD.4",
    "MEM-REFLECT.8",
    "MEM-SCORE.4",
    "MEM-WRITE.1",
    "MEM-WRITE.2",
    "LED-ASOF.1",
    "LED-PACKET.4",
)

MUTANTS = [pytest.param(e, id=e.name) for e in ENTRIES_LIST if e.kind == "mutant"]


@pytest.mark.parametrize("entry", MUTANTS)
def test_each_divergence_of_a_mutant_names_its_root_cause(entry: EngineEntry) -> None:
    fn = BY_NAME[entry.function]
    blamed = []
    for v in function_vectors(fn):
        try:
            got = outcome_of(entry.impl, v.args)
        except RecursionError:  # a mutant parsing 1200 levels deep with the standard parser
            continue
        if verdict_of(got, v.judged) == "diverge":
            blamed.append(fn.blamed(v.args, got, v.judged.allowed[0]))
    assert blamed, f"{entry.name} never diverges"
    for clauses in blamed:
        assert set(entry.clauses) & set(clauses), (entry.name, clauses)
        # one root cause, or two where one answer cannot tell them apart -- never the whole
        # function's list when it has more
        assert len(clauses) <= max(2, 1 if len(fn.clauses) > 2 else len(fn.clauses)), clauses


def test_every_diverging_vector_is_reported_grouped_by_root_cause() -> None:
    entry = ENTRIES["eng-mint-used-now"]
    fn = BY_NAME[entry.function]
    with EngineHost(selftest_engine.host_command(entry)) as host:
        runs = check_engine(host, [fn], properties=False)
    result = runs[0].vectors
    diverging = [o for o in result.outcomes if o.verdict == "diverge"]
    assert len(diverging) > 5
    assert {o.clauses for o in diverging} == {("MEM-RECORD.4",)}
    target = {"url": None, "label": "engine host", "token": "none"}
    report = RunReport(run_id="t", target=target, options={})
    report.scenarios.append(result)
    data = report.to_json()
    assert len(data["divergences"]) == len(diverging)
    out = io.StringIO()
    print_summary(data, out, report_dir=None)
    text = out.getvalue()
    assert f"root cause [MEM-RECORD.4]: {len(diverging)} diverging" in text
    assert text.count("engine-vectors:mintRecord — step") == len(diverging)
