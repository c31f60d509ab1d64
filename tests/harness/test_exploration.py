"""Exploration never goes blind: a state machine reports every distinct divergence (each with
its own shrunk replay), an expected clause never stops it, a wrong state is blamed on the step
that made it, and transport probes are a separate set that is never all a machine finds.

The three-mutant test runs the bundled store with three independent mutants of the catalogue at
once — the "done when" of the trustworthy-verdicts issue.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.machines import run_machine
from conformance.machines.probes import LEDGER_PROBES, MEMORY_PROBES, run_probes
from conformance.machines.profiles import Profile
from conformance.runner import run_scenario
from conformance.scenario import load_scenario
from tests.common.memory_harness import TOKEN, bundled_store, forget_only_claims, make_driver

#: Three independent mistakes of the catalogue: ``/forget`` always says it forgot something
#: (MEM-STORE.8), ``/list`` answers oldest first (MEM-STORE.7), ``/retrieve`` answers lowest
#: score first (MEM-SCORE.1).
THREE_MUTANTS = ("mem-forget-always-true", "mem-list-oldest-first", "mem-retrieve-reversed")

# --------------------------------------------------------------------------- the tests


@pytest.mark.slow
@pytest.mark.clause("MEM-STORE.7", "MEM-STORE.8", "MEM-SCORE.1")
def test_one_fuzz_run_reports_three_independent_mutants_each_with_its_own_short_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMSPEC_TEST_TOKEN", TOKEN)
    report = tmp_path / "report"
    with bundled_store(quirks=THREE_MUTANTS) as url:
        code = main(
            [
                "fuzz",
                "--target",
                url,
                "--token-env",
                "MEMSPEC_TEST_TOKEN",
                "--spec",
                "memory",
                "--profile",
                "ci",
                # the ci profile's seed, run length and shrink budget; 60 runs of exploration
                # instead of 200 keep the test short (the whole profile:
                # benchmarks/bench_exploration.py)
                "--examples",
                "60",
                "--report",
                str(report),
                "--quiet",
            ]
        )
    out = capsys.readouterr().out
    assert code == 1, out
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    (machine,) = data["machines"]
    found = machine["divergences"]
    leading = [d["clauses"][0] for d in found]
    # each mutant found once, under its own clause, in its own replay of at most 5 steps
    assert "MEM-STORE.8" in leading, leading
    assert "MEM-STORE.7" in leading, leading
    assert "MEM-SCORE.1" in leading, leading
    assert len(found) == len(set(leading)), leading  # distinct, not one mutant three times
    replays = {d["replay"] for d in found}
    assert len(replays) == len(found) and None not in replays
    for d in found:
        replay = load_scenario(Path(d["replay"]))
        assert len(replay.steps) <= 5, (d["clauses"], [s.op for s in replay.steps])
        assert d["details"]["reproduced"] is True, d
    # the machine kept exploring after the first divergence, and says so
    explored = machine["details"]["explored"]
    assert explored["after_first"]["examples"] > 0, explored
    assert explored["after_first"]["steps"] > 0, explored
    assert explored["exploring_examples"] >= 60, explored  # every run of exploration ran
    assert f"{len(found)} distinct divergence(s); the first after" in out, out
    # A reversed ranking can look, on one query repeating a token, like a store counting the
    # repeat once (MEM-SCORE.7): then that answer is also reported, as a deviation, beside the
    # failure the later queries show.  Every failure is a report divergence, every deviation a
    # report deviation.
    failures = [d for d in found if not d["deviation"]]
    assert all(d["clauses"] == ["MEM-SCORE.7"] for d in found if d["deviation"]), found
    assert len([d for d in data["divergences"] if d["source"] == "machine"]) == len(failures)
    assert len([d for d in data["deviations"] if d["source"] == "machine"]) == len(found) - len(
        failures
    )


@pytest.mark.clause("MEM-STORE.8", "MEM-STORE.7")
def test_an_expected_clause_never_stops_exploration() -> None:
    """A divergence an --expect entry names is recorded once, as met, and set aside: the
    machine explores its whole budget and still finds what nobody expected."""
    profile = Profile(
        "t", max_examples=30, step_count=12, budget_s=60.0, fixed_seed=11, shrink_budget_s=5.0
    )
    with bundled_store(quirks=THREE_MUTANTS[:2]) as url:
        driver = make_driver(url)
        try:
            result = run_machine(
                "memory",
                driver,
                profile,
                is_expected=lambda clauses: "MEM-STORE.8" in clauses,
            )
        finally:
            driver.close()
    by_clause = {f.clauses[0]: f for f in result.findings}
    assert by_clause["MEM-STORE.8"].expected  # met, recorded, not shrunk
    assert not by_clause["MEM-STORE.7"].expected  # the unexpected one is found and shrunk
    assert len(by_clause["MEM-STORE.7"].steps) <= 4
    assert result.details["explored"]["exploring_examples"] >= profile.max_examples
    assert result.details["explored"]["set_aside"]["MEM-STORE.8"] > 0  # met again, kept going


@pytest.mark.clause("MEM-STORE.8", "MEM-WIRE.15")
def test_a_wrong_state_is_blamed_on_the_step_that_made_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/forget`` answers true but leaves the record active: the read right after the forget
    shows it, under the forget's clauses — not a later, unrelated step."""
    with forget_only_claims(monkeypatch), bundled_store() as url:
        driver = make_driver(url)
        try:
            result = run_machine(
                "memory",
                driver,
                Profile(
                    "t",
                    max_examples=40,
                    step_count=12,
                    budget_s=60.0,
                    fixed_seed=5,
                    shrink_budget_s=120.0,  # to its end, on a loaded machine too
                ),
                max_findings=1,
            )
            (finding,) = result.findings
            steps = finding.steps
            assert [s.op for s in steps[-2:]] == ["forget", "list"], [s.op for s in steps]
            assert "right after step" in finding.failure.reason and "(forget)" in finding.reason
            assert {"MEM-STORE.8", "MEM-WIRE.15"} <= set(finding.clauses), finding.clauses
            assert len(steps) <= 4, [s.op for s in steps]
            again = run_scenario(driver, finding.replay)  # type: ignore[arg-type]
            assert again.verdict == "fail" and again.failing_step is not None
            assert again.failing_step.index == len(steps) - 1
        finally:
            driver.close()


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.2", "MEM-WIRE.3", "MEM-WIRE.5", "MEM-WIRE.7")
def test_transport_probes_are_their_own_set_and_never_all_a_machine_finds() -> None:
    """A store that lets an empty bearer in (``mem-auth-prefix-compare``) fails its probes; the
    machine, which sends no probe and always the right token, still explores its whole budget
    and passes."""
    with bundled_store(quirks=("mem-auth-prefix-compare",)) as url:
        driver = make_driver(url)
        try:
            probes = run_probes("memory", driver)
            result = run_machine(
                "memory",
                driver,
                Profile("t", max_examples=10, step_count=10, budget_s=60.0, fixed_seed=3),
            )
        finally:
            driver.close()
    assert {r.kind for r in probes} == {"probe"}
    assert [r.name for r in probes] == [f"memory-probe:{n}" for n in MEMORY_PROBES]
    failed = {r.name for r in probes if r.verdict == "fail"}
    assert "memory-probe:forget-empty-bearer" in failed, [
        (r.name, r.verdict, r.reason) for r in probes
    ]
    assert "memory-probe:unknown-path" not in failed
    assert result.verdict == "pass", result.reason
    assert result.details["explored"]["exploring_examples"] >= 10


@pytest.mark.clause("LED-WIRE.1", "LED-WIRE.2")
def test_ledger_probes_pass_on_the_bundled_store() -> None:
    from tests.common.ledger_harness import bundled_store as ledger_store
    from tests.common.ledger_harness import make_driver as ledger_driver

    with ledger_store() as url:
        driver = ledger_driver(url)
        try:
            probes = run_probes("ledger", driver)
        finally:
            driver.close()
    assert [r.name for r in probes] == [f"ledger-probe:{n}" for n in LEDGER_PROBES]
    assert all(r.verdict == "pass" for r in probes), [(r.name, r.reason) for r in probes]
    unknown = next(r for r in probes if r.name == "ledger-probe:unknown-method")
    assert unknown.outcomes[0].exchange is not None
    assert unknown.outcomes[0].exchange.status == 404
