"""``memspec selftest``: the unaltered store passes, mutants are killed naming their clause, and
the selftest itself fails when a mutant survives or a variant is judged broken.

The default suite runs only the documented fast subset (``selftest.FAST_SUBSET``, corpus only,
two worker processes); the whole catalogue with corpus + machines at profile ci is
``make selftest`` (see ``benchmarks/bench_selftest.py`` for the figures)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

import pytest

from conformance.cli import main
from conformance.commands import selftest
from conformance.commands.selftest import Cell, judge
from conformance.embedded import catalogue
from conformance.embedded.catalogue import Entry


def _fast_subset_clauses() -> tuple[str, ...]:
    return tuple(
        sorted({c for n in selftest.FAST_SUBSET if n in catalogue.ENTRIES
                for c in catalogue.ENTRIES[n].clauses})
    )  # fmt: skip


@pytest.mark.clause(*_fast_subset_clauses())
def test_fast_subset_unaltered_passes_and_every_mutant_is_killed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # ... plus the first allowed variant of each protocol, whatever the catalogue holds then.
    variants = [vs[0].name for p in ("memory", "ledger") if (vs := catalogue.variants(p))]
    names = [*selftest.FAST_SUBSET, *variants]
    code = main(["selftest", "--only", *names, "--corpus-only", "--jobs", "2", "--json", "-q"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    rows = {r["name"]: r for r in doc["rows"]}
    assert code == 0, json.dumps([r for r in doc["rows"] if not r["ok"]], indent=1) + err[-2000:]
    assert doc["schema"] == "memspec-selftest/1"
    assert set(rows) == set(names)
    assert rows["unaltered"]["verdict"] == "conformant"
    assert all(rows[v]["verdict"] == "conformant" for v in variants)
    for name in selftest.FAST_SUBSET[1:]:
        row = rows[name]
        assert row["verdict"] == "killed" and row["killed_by"] == "corpus", row
        assert row["clause"] in catalogue.ENTRIES[name].clauses
        assert row["first_divergence_s"] is not None and row["first_divergence_s"] >= 0
    assert doc["summary"]["kill_rate"] == 1.0 and doc["summary"]["ok"] is True


@pytest.mark.clause()
def test_a_surviving_mutant_fails_the_selftest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A "mutant" no hook reaches changes nothing: it must be reported as a survivor, exit 1.
    harmless = Entry("mem-harmless-for-the-test", "mutant", "memory", ("MEM-STORE.8",), "nothing")
    monkeypatch.setitem(catalogue.ENTRIES, harmless.name, harmless)
    code = main(["selftest", "--only", harmless.name, "--corpus-only", "--jobs", "1", "-q"])
    out, _ = capsys.readouterr()
    assert code == 1
    assert "SURVIVED" in out and "selftest FAILED" in out
    assert "mem-harmless-for-the-test: no divergence" in out


@pytest.mark.clause()
def test_a_variant_judged_broken_fails_the_selftest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real mistake declared as an allowed variant: the matrix shows a false alarm, exit 1.
    entry = catalogue.ENTRIES["mem-list-oldest-first"]
    monkeypatch.setitem(catalogue.ENTRIES, entry.name, dataclasses.replace(entry, kind="variant"))
    code = main(["selftest", "--only", entry.name, "--corpus-only", "--jobs", "1", "-q"])
    out, _ = capsys.readouterr()
    assert code == 1
    assert "NOT CONFORMANT" in out and "variants: 0/1 conformant" in out


@pytest.mark.clause()
def test_an_unknown_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["selftest", "--only", "no-such-mutant"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "no-such-mutant" in err and len(err.strip().splitlines()) == 1


def _data(
    scenarios: Sequence[Mapping[str, object]], machines: Sequence[Mapping[str, object]]
) -> dict[str, object]:
    return {"scenarios": scenarios, "machines": machines, "summary": {"indeterminate": 0}}


MUTANT = Cell("m", "mutant", "memory", ("MEM-STORE.7",))


@pytest.mark.clause()
def test_a_divergence_naming_another_clause_is_no_kill() -> None:
    data = _data(
        [{"verdict": "fail", "clauses": ["MEM-WIRE.11"], "failed_clauses": ["MEM-WIRE.11"]}], []
    )
    row = judge(MUTANT, 1, data, 1.0, 0.5)
    assert not row.ok and row.verdict == "survived" and "MEM-WIRE.11" in row.detail


@pytest.mark.clause()
def test_killed_by_says_corpus_machine_or_both_and_takes_the_machine_replay() -> None:
    scenario = {"verdict": "fail", "clauses": ["MEM-STORE.7"], "failed_clauses": ["MEM-STORE.7"]}
    machine = {
        "verdict": "fail",
        "failed_clauses": ["MEM-STORE.7"],
        "details": {"replay_steps": [{}, {}, {}]},
    }
    assert judge(MUTANT, 1, _data([scenario], []), 1.0, 0.1).killed_by == "corpus"
    by_machine = judge(MUTANT, 1, _data([], [machine]), 1.0, 0.1)
    assert by_machine.killed_by == "machine" and by_machine.replay_steps == 3
    assert judge(MUTANT, 1, _data([scenario], [machine]), 1.0, 0.1).killed_by == "both"
    # exit 0 is never a kill, whatever the data says
    assert not judge(MUTANT, 0, _data([scenario], []), 1.0, 0.1).ok


@pytest.mark.clause()
def test_a_kill_named_only_by_the_scenario_is_flagged() -> None:
    scenario = {"verdict": "fail", "clauses": ["MEM-STORE.7"], "failed_clauses": ["MEM-WIRE.14"]}
    row = judge(MUTANT, 1, _data([scenario], []), 1.0, 0.1)
    assert row.ok and row.blame == "scenario"
    assert selftest.summarize([row])["blamed_elsewhere"] == ["m"]


@pytest.mark.clause()
def test_a_failed_transport_probe_is_a_kill_by_the_machines() -> None:
    """Probes run in the machine phase (also with --machines-only): a kill by one is a machine
    kill, never a corpus one, and a probe is never taken as the scenario that blamed it."""
    probe = {
        "kind": "probe",
        "verdict": "fail",
        "clauses": ["MEM-STORE.7"],
        "failed_clauses": ["MEM-STORE.7"],
    }
    row = judge(MUTANT, 1, _data([probe], []), 1.0, 0.1)
    assert row.ok and row.killed_by == "machine"
    scenario = {"verdict": "fail", "clauses": ["MEM-STORE.7"], "failed_clauses": ["MEM-STORE.7"]}
    assert judge(MUTANT, 1, _data([scenario, probe], []), 1.0, 0.1).killed_by == "both"
