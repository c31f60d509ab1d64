"""Engines judged exactly as strictly as the seed: each vector's allowed set follows from the
sources of the rules it applies.  The seed's clauses decide what fails; where a reference
clause fixes the answer further, an answer only that rule forbids is a deviation charged to it
alone -- on the vectors, in the properties, and through ``memspec engine --level``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance.binding.catalogue import ENTRIES
from conformance.binding.check import check_engine
from conformance.binding.functions import BY_NAME, FUNCTIONS, outcome_of
from conformance.binding.host import EngineHost
from conformance.binding.judge import outcome_allowed, verdict_of
from conformance.binding.open_variants import OPEN_VARIANTS
from conformance.binding.vectors import function_vectors
from conformance.cli import main
from conformance.commands import selftest_engine
from conformance.sources import source_of

REFERENCE_RULES = (
    "MEM-REFLECT.12",
    "MEM-REFLECT.13",
    "MEM-REFLECT.14",
    "MEM-SCOPE.6",
    "MEM-SCOPE.7",
    "MEM-SCOPE.8",
)
pytestmark = pytest.mark.clause(
    "MEM-REFLECT.12",
    "MEM-REFLECT.13",
    "MEM-REFLECT.14",
    "MEM-SCOPE.6",
    "MEM-SCOPE.7",
    "MEM-SCOPE.8",
)


def test_every_vector_names_its_sources_and_only_reference_rules_narrow_it() -> None:
    narrowed = 0
    for fn in FUNCTIONS:
        assert all(source_of(c) == "reference" for c in fn.references), fn.name
        for v in function_vectors(fn):
            data = v.to_json()
            assert set(data["sources"]) == set(v.rules()), v.id
            ref = v.judged.reference
            if ref is None:
                continue
            narrowed += 1
            assert set(ref.clauses) <= set(fn.references), (v.id, ref.clauses)
            assert all(data["sources"][c] == "reference" for c in ref.clauses)
            # the reference level lies inside the seed's: its answers pass at the seed level
            if ref.checker is None:
                assert all(outcome_allowed(o, v.judged) for o in ref.allowed), v.id
            # and the reference's own answer passes at both
            assert verdict_of(outcome_of(fn.call, v.args), v.judged) == "pass", v.id
    assert narrowed >= 100


@pytest.mark.parametrize(
    ("name", "clause", "patches"),
    [pytest.param(n, c, p, id=n) for n, c, _, p in OPEN_VARIANTS if source_of(c) == "reference"],
)
def test_an_engine_taking_an_open_answer_deviates_on_its_rule_and_never_fails(
    name: str, clause: str, patches: dict[str, object]
) -> None:
    verdicts: dict[str, int] = {}
    for fname, impl in patches.items():
        fn = BY_NAME[fname]
        for v in function_vectors(fn):
            got = outcome_of(impl, v.args)  # type: ignore[arg-type]
            verdict = verdict_of(got, v.judged)
            assert verdict != "diverge", (v.id, got, v.judged.allowed[:2])
            if verdict == "deviate":
                assert v.judged.reference is not None
                assert clause in v.judged.reference.clauses, (v.id, v.judged.reference)
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
    assert verdicts.get("deviate", 0) >= 1, (name, verdicts)


def test_an_answer_outside_the_seed_still_fails() -> None:
    fn = BY_NAME["deriveScopeKey"]
    v = next(v for v in function_vectors(fn) if v.args == {"kind": "org", "value": " \t "})
    assert verdict_of({"ok": "org:"}, v.judged) == "diverge"
    assert verdict_of({"ok": "org: \t "}, v.judged) == "deviate"
    assert verdict_of({"throws": True}, v.judged) == "pass"


def test_a_property_reports_a_deviation_not_a_failure() -> None:
    entry = ENTRIES["eng-scope-blank-kept"]
    fn = BY_NAME["requestScopeKeys"]
    with EngineHost(selftest_engine.host_command(entry)) as host:
        runs = check_engine(host, [fn], examples=60, seed=0)
    assert runs[0].vectors.verdict == "deviate"
    prop = runs[0].prop
    assert prop is not None
    assert prop.verdict == "deviate", prop.reason
    assert prop.outcomes[0].clauses == ("MEM-SCOPE.6",)
    assert prop.outcomes[0].details["args"]


def test_memspec_engine_level_reference_fails_on_a_deviation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = f"{sys.executable} -m conformance.engine_host --variant eng-scope-unknown-kind-no-key"
    base = ["engine", "--host", host, "--only", "deriveScopeKey", "--no-properties", "-q"]
    assert main([*base, "--report", str(tmp_path / "seed")]) == 0
    out = capsys.readouterr().out
    assert "CONFORMANT at level seed" in out and "deviation" in out
    data = json.loads((tmp_path / "seed" / "report.json").read_text())
    assert data["summary"]["deviations"] >= 1
    assert {c for d in data["deviations"] for c in d["clauses"]} == {"MEM-SCOPE.7"}
    assert main([*base, "--level", "reference", "--report", str(tmp_path / "ref")]) == 1
