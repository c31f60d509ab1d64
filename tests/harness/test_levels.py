"""Verdicts follow each clause's source: a divergence on ``reference`` clauses only is a
*deviation* — reported apart in every output, exit 0 — unless ``--level reference`` asks for a
drop-in twin of the reference implementation.

The store making a reference-level choice here is the bundled store with the catalogue entry
``mem-auth-before-method`` (it checks the bearer before the method: ``GET /write`` without a token
is 401, where the reference Worker answers 405).  The seed orders none of the fence checks
(MEM-WIRE.4 is a reference clause), so at the seed level that store is conformant.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.commands.selftest import Cell, judge, summarize
from conformance.embedded.catalogue import Quirks
from conformance.embedded.server import start_server
from conformance.machines import run_machine
from conformance.machines.probes import probe_scenarios
from conformance.machines.profiles import Profile
from conformance.runner import load_corpus, run_scenario
from conformance.scenario import dump_scenario
from conformance.sources import only_reference, source_of
from conformance.vocabulary import Secret, TargetConfig
from tests.common import ledger_harness, memory_harness
from tests.common.engine import run_engine
from tests.common.memory_harness import TOKEN

REFERENCE_CHOICE = "mem-auth-before-method"
ORDER_SCENARIO = "checks_run_in_a_fixed_order"


def _run(
    url: str, token: str, spec: str, level: str, report: Path
) -> tuple[int, dict[str, Any], str]:
    out = io.StringIO()
    res = run_engine(
        TargetConfig(url, Secret(token)),
        spec=spec,
        machines=False,
        quiet=True,
        out=out,
        report_dir=report,
        level=level,
    )
    return res.exit_code, res.data, out.getvalue()


@pytest.fixture(scope="module")
def both_levels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The memory corpus against the store with the reference-level choice, once per level."""
    runs: dict[str, Any] = {}
    with start_server(token=TOKEN, quirks=Quirks(frozenset({REFERENCE_CHOICE}))) as handle:
        for level in ("seed", "reference"):
            report = tmp_path_factory.mktemp(f"level-{level}")
            code, data, console = _run(handle.url, TOKEN, "memory", level, report)
            runs[level] = {"code": code, "data": data, "console": console, "report": report}
    return runs


@pytest.mark.clause("MEM-WIRE.4")
def test_sources_decide_what_a_divergence_is() -> None:
    assert source_of("MEM-WIRE.4") == "reference" and source_of("MEM-WIRE.3") == "seed"
    assert source_of("LED-WIRE.5") == "binding"
    assert source_of("MEM-NOPE.1") == "seed"  # unknown: the strict side
    assert only_reference(["MEM-WIRE.4", "MEM-WIRE.20"])
    assert not only_reference(["MEM-WIRE.4", "MEM-WIRE.3"])  # any seed clause: a failure
    assert not only_reference(["LED-WIRE.5"])  # a binding clause: a failure
    assert not only_reference([])


@pytest.mark.clause("MEM-WIRE.4")
def test_a_reference_choice_passes_at_seed_level_and_is_shown_apart(
    both_levels: dict[str, Any],
) -> None:
    run = both_levels["seed"]
    data = run["data"]
    assert run["code"] == 0 and data["exit_code"] == 0 and data["level"] == "seed"
    assert data["divergences"] == [], data["divergences"]
    devs = {d["name"]: d for d in data["deviations"]}
    assert ORDER_SCENARIO in devs and devs[ORDER_SCENARIO]["clauses"] == ["MEM-WIRE.4"]
    assert data["summary"]["deviations"] == len(data["deviations"])
    row = next(r for r in data["clauses"] if r["id"] == "MEM-WIRE.4")
    assert row["source"] == "reference" and row["deviates"] >= 1 and row["failed"] == 0
    scenario = next(s for s in data["scenarios"] if s["name"] == ORDER_SCENARIO)
    assert scenario["verdict"] == "deviate" and scenario["deviation_clauses"] == ["MEM-WIRE.4"]
    # every output shows it, apart from the failures
    assert "difference(s) from the reference implementation" in run["console"]
    assert "DIFFERS FROM THE REFERENCE" in run["console"]
    assert "CONFORMANT at level seed" in run["console"]
    assert "NOT CONFORMANT" not in run["console"]
    html = (run["report"] / "report.html").read_text()
    assert "Differs from the reference implementation (" in html
    suites = ET.parse(run["report"] / "junit.xml").getroot()
    case = next(c for c in suites.iter("testcase") if c.get("name") == ORDER_SCENARIO)
    props = [p.get("value") or "" for p in case.iter("property") if p.get("name") == "deviation"]
    assert props and "MEM-WIRE.4" in props[0]
    assert case.find("failure") is None


@pytest.mark.clause("MEM-WIRE.4")
def test_at_reference_level_the_same_choice_fails_the_run(both_levels: dict[str, Any]) -> None:
    run = both_levels["reference"]
    data = run["data"]
    assert run["code"] == 1 and data["level"] == "reference"
    assert "NOT CONFORMANT" in run["console"] and "they fail this run" in run["console"]
    assert {d["name"] for d in data["deviations"]} == {
        d["name"] for d in both_levels["seed"]["data"]["deviations"]
    }
    suites = ET.parse(run["report"] / "junit.xml").getroot()
    case = next(c for c in suites.iter("testcase") if c.get("name") == ORDER_SCENARIO)
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "deviation"


@pytest.mark.clause("MEM-WIRE.4", "MEM-WIRE.2", "MEM-WIRE.3")
def test_a_deviation_where_both_sides_refused_lets_the_scenario_go_on(
    both_levels: dict[str, Any],
) -> None:
    scenario = next(
        s for s in both_levels["seed"]["data"]["scenarios"] if s["name"] == ORDER_SCENARIO
    )
    verdicts = [o["verdict"] for o in scenario["steps"]]
    first = verdicts.index("deviate")
    assert first < len(verdicts) - 1, "the deviation is not the last step"
    assert scenario["steps"][first]["details"].get("state_kept")
    # every later step was judged at the seed level (none 'not reached')
    assert all(o["verdict"] in ("pass", "deviate") for o in scenario["steps"][first + 1 :])


@pytest.mark.slow
@pytest.mark.clause("LED-VOCAB.7", "LED-GATE.9")
def test_a_deviation_after_which_the_states_may_differ_ends_the_scenario(
    tmp_path: Path,
) -> None:
    """``keep`` counted applied (a reference-level count): the model's answer is a result, not a
    refusal, so model and store may differ from there on and the scenario stops."""
    with start_server(
        token=ledger_harness.TOKEN,
        test_control=True,
        quirks=Quirks(frozenset({"led-keep-counted-applied"})),
    ) as handle:
        code, data, _ = _run(handle.url, ledger_harness.TOKEN, "ledger", "seed", tmp_path)
    assert code == 0, data["divergences"]
    stopped = [
        s
        for s in data["scenarios"]
        if s["verdict"] == "deviate"
        and any("a deviation after which" in o.get("reason", "") for o in s["steps"])
    ]
    assert stopped, [(s["name"], s["verdict"]) for s in data["scenarios"]]
    steps = stopped[0]["steps"]
    k = next(i for i, o in enumerate(steps) if o["verdict"] == "deviate")
    assert not steps[k]["details"].get("state_kept")
    assert all((o.get("details") or {}).get("not_reached") for o in steps[k + 1 :])
    assert set(stopped[0]["deviation_clauses"]) >= {"LED-VOCAB.7", "LED-GATE.9"}


@pytest.mark.clause("MEM-WIRE.4")
def test_selftest_counts_a_reference_choice_apart_from_the_kills(
    both_levels: dict[str, Any],
) -> None:
    cell = Cell(REFERENCE_CHOICE, "mutant", "memory", ("MEM-WIRE.4", "MEM-WIRE.2"))
    seed = both_levels["seed"]
    row = judge(cell, seed["code"], json.loads(json.dumps(seed["data"])), 1.0, None)
    assert row.verdict == "deviates" and row.ok and row.deviates_on == ["MEM-WIRE.4"]
    assert "killed only at --level reference" in row.detail
    ref = both_levels["reference"]
    killed = judge(cell, ref["code"], ref["data"], 1.0, None)
    assert killed.verdict == "killed" and killed.killed_by == "corpus"
    summary = summarize([row])
    assert summary["killed"] == 0 and summary["deviates"] == 1
    assert summary["deviates_only"] == [{"name": REFERENCE_CHOICE, "clauses": ["MEM-WIRE.4"]}]
    assert summary["ok"]


@pytest.mark.clause("MEM-WIRE.4")
def test_replay_takes_the_level_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = next(
        s for s in probe_scenarios("memory") if s.name == "memory-probe:get-write-without-bearer"
    )
    path = tmp_path / "probe.json"
    dump_scenario(probe.model_copy(update={"name": "order_probe"}), path)
    monkeypatch.setenv("MEMSPEC_TEST_TOKEN", TOKEN)
    args = ["replay", str(path), "--token-env", "MEMSPEC_TEST_TOKEN"]
    with start_server(token=TOKEN, quirks=Quirks(frozenset({REFERENCE_CHOICE}))) as handle:
        assert main([*args, "--target", handle.url]) == 0
        out = capsys.readouterr().out
        assert "DIFFERS FROM THE REFERENCE" in out and "conformant at the seed level" in out
        assert main([*args, "--target", handle.url, "--level", "reference"]) == 1
        assert "fails at --level reference" in capsys.readouterr().out


@pytest.mark.clause("LED-LIST.2", "LED-REVIEW.1")
def test_a_check_read_tagged_with_a_seed_clause_still_deviates_on_a_reference_difference() -> None:
    """The machine's read after a ``propose`` carries the propose's clauses (a wrong state is
    blamed on the call that made it); a store listing oldest first differs from it only in the
    order, a reference clause (LED-LIST.2), so the finding is a deviation, not a failure."""
    assert source_of("LED-LIST.2") == "reference" and source_of("LED-REVIEW.1") == "seed"
    findings = _machine_findings(
        "ledger",
        "led-list-oldest-first",
        Profile("t", max_examples=20, step_count=12, budget_s=60.0, fixed_seed=3),
    )
    assert findings, "the order must show"
    assert all(only_reference(clauses) for clauses in findings), findings


_HARNESS = {"ledger": ledger_harness, "memory": memory_harness}


def _machine_findings(protocol: str, quirk: str, profile: Profile) -> list[tuple[str, ...]]:
    """The clauses of each finding of ``protocol``'s machine against a fresh bundled store with
    ``quirk``."""
    harness: Any = _HARNESS[protocol]
    with harness.bundled_store(quirks=(quirk,)) as url:
        driver = harness.make_driver(url)
        try:
            result = run_machine(protocol, driver, profile)
        finally:
            driver.close()
    return [tuple(f.clauses) for f in result.findings]


def _followed(
    case_id: str, protocol: str, quirk: str, scenario: str, shows_at: int, clause: str, *also: str
) -> Any:
    """One ``FOLLOWED`` case, marked with the clause it departs from and the seed clauses the
    later steps still judge (``also``)."""
    return pytest.param(
        protocol, quirk, scenario, shows_at, clause,
        id=case_id, marks=pytest.mark.clause(clause, *also),
    )  # fmt: skip


#: A store reading a choice the seed leaves open otherwise than the reference, a corpus scenario
#: where that shows, the step where it first shows and the reference clause it departs from.
FOLLOWED = [
    _followed(
        "expire-days-from-createdAt", "ledger", "led-expire-from-created",
        "expire_sets_the_expiry_days_after_the_run", 2,
        "LED-VOCAB.4", "LED-EXP.2", "LED-EXP.3", "LED-ASOF.1",
    ),
    _followed(
        "group-keeps-the-oldest", "ledger", "led-group-keeps-oldest",
        "group_keeps_the_most_recently_updated_member", 5,
        "LED-VOCAB.5", "LED-GROUP.2", "LED-INT.3", "LED-ASOF.1",
    ),
    _followed(
        "repeated-query-token-counted-once", "memory", "mem-distinct-query-tokens",
        "repeated_query_tokens_count_each_time", 2,
        "MEM-SCORE.7", "MEM-SCORE.2", "MEM-STORE.3",
    ),
    _followed(
        "fields-capped-tighter", "memory", "mem-tighter-field-caps",
        "write_records_are_validated_whole", 14,
        "MEM-WIRE.21", "MEM-WIRE.12",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("protocol", "quirk", "name", "shows_at", "clause"), FOLLOWED)
def test_a_reading_the_seed_leaves_open_is_followed_as_one_deviation(
    protocol: str, quirk: str, name: str, shows_at: int, clause: str
) -> None:
    """The seed says neither where ``expire``'s ``afterDays`` counts from, nor which member of
    a ``group`` survives, nor whether a repeated query token counts once or each time, nor how
    tight a field's size cap is (LED-VOCAB.4, LED-VOCAB.5, MEM-SCORE.7, MEM-WIRE.21: reference
    clauses).  A store reading one otherwise
    deviates once, where its reading first shows, and the scenario goes on in that reading:
    every later sweep, history read, listing or retrieve (seed rules) is judged against what
    the store chose, and passes -- the hand-written expectations, which state the reference's
    reading, are no longer checked."""
    assert source_of(clause) == "reference"
    (scenario,) = [sc for sc, _ in load_corpus([protocol]) if sc.name == name]
    harness: Any = _HARNESS[protocol]
    with harness.bundled_store(quirks=(quirk,)) as url:
        driver = harness.make_driver(url)
        try:
            result = run_scenario(driver, scenario)
        finally:
            driver.close()
    verdicts = [o.verdict for o in result.outcomes]
    assert result.verdict == "deviate", (result.verdict, result.reason)
    assert len(verdicts) == len(scenario.steps), verdicts  # every step reached
    assert [i for i, v in enumerate(verdicts) if v != "pass"] == [shows_at], verdicts
    assert result.outcomes[shows_at].clauses == (clause,)
    assert result.outcomes[shows_at].details.get("followed") is True


@pytest.mark.clause(
    "LED-VOCAB.4", "LED-VOCAB.5", "LED-EXP.2", "LED-EXP.3", "LED-GROUP.2", "MEM-SCORE.7"
)
@pytest.mark.parametrize(
    ("protocol", "quirk", "seed", "clause"),
    [
        ("ledger", "led-expire-from-created", 4, "LED-VOCAB.4"),
        ("ledger", "led-group-keeps-oldest", 1, "LED-VOCAB.5"),
        ("memory", "mem-distinct-query-tokens", 4, "MEM-SCORE.7"),
    ],
)
def test_the_machine_follows_a_reading_the_seed_leaves_open(
    protocol: str, quirk: str, seed: int, clause: str
) -> None:
    """The machine meets the store's reading in its check reads and goes on in it: every
    finding is a deviation, one of them names the clause (before, a later sweep or history
    read failed LED-EXP.2/.3 or LED-INT.3 for the reference's expiry instant or survivor, and
    a retrieve failed MEM-SCORE.2 for the reference's count of a repeated token)."""
    findings = _machine_findings(
        protocol,
        quirk,
        Profile(
            "t",
            max_examples=15,
            step_count=15,
            budget_s=120.0,
            fixed_seed=seed,
            shrink_budget_s=5.0,
        ),
    )
    assert any(clause in clauses for clauses in findings), "the reading must show"
    assert all(only_reference(clauses) for clauses in findings), findings
