"""Baselines that maintain themselves: ``--expect-update FILE`` records every divergence the
file does not accept yet (``reason: TODO``), ``--expect-prune`` drops the entries a run checked
and did not reproduce; a re-run on an unchanged store changes no byte of the file.

The store is the bundled one with two mutants of the catalogue (``mem-forget-always-true``:
``/forget`` always claims a removal; ``mem-list-oldest-first``: ``/list`` answers oldest first),
then with the first alone, and a corpus of three scenarios: one that each mutant breaks and one
that neither touches."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import build_parser
from conformance.commands import launch
from conformance.commands.target import start_bundled_store
from conformance.engine import pipeline
from conformance.report.expect import (
    Checked,
    Expectation,
    load_expectations,
    new_entries,
    not_reproduced,
)
from conformance.report.merge import clause_rows
from conformance.runner import CORPUS_DIR, load_corpus

TOKEN_VAR = "MEMSPEC_SCALE_EXPECT_TOKEN"
FORGET = "forget_soft_deletes_one_active_record"
LIST = "list_is_newest_first_filtered_and_never_bumps"
CLEAN = "bodies_over_512_kib_are_413"
TOKEN = "expect-test-token-0123456789"
FORGET_LIES = "mem-forget-always-true"
OLDEST_FIRST = "mem-list-oldest-first"


@contextmanager
def _store(*mutants: str) -> Iterator[Any]:
    handle = start_bundled_store(TOKEN, quirks=frozenset(mutants))
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def corpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Runs read a corpus of the three scenarios, and the token from the environment."""
    corpus = tmp_path / "corpus"
    (corpus / "memory").mkdir(parents=True)
    for name in (FORGET, LIST, CLEAN):
        shutil.copy(CORPUS_DIR / "memory" / f"{name}.json", corpus / "memory")
    monkeypatch.setattr(pipeline, "load_corpus", lambda protocols: load_corpus(protocols, corpus))
    monkeypatch.setenv(TOKEN_VAR, TOKEN)


@pytest.fixture
def store(corpus: None) -> Iterator[Any]:
    with _store() as handle:
        yield handle


def _run(url: str, *extra: str) -> tuple[int, str, dict[str, Any]]:
    args = build_parser().parse_args(
        ["run", "--spec", "memory", "--target", url, "--token-env", TOKEN_VAR, "-q"]
        + ["--report", "", *extra]
    )
    out = io.StringIO()
    outcome = launch.execute(args, machines=False, out=out, write=False)
    return outcome.exit_code, out.getvalue(), outcome.data


@pytest.mark.clause("MEM-STORE.7", "MEM-STORE.8")
def test_update_records_each_divergence_once_and_prune_drops_the_fixed_one(
    corpus: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "expect.yaml"
    with _store(FORGET_LIES, OLDEST_FIRST) as broken:
        code, out, data = _run(broken.url, "--expect-update", str(baseline))
        assert data["summary"]["unexpected"] == 2 and code == 1  # this run did not accept them
        entries = load_expectations(baseline)
        assert sorted((e.scenario, e.clause, e.op, e.reason) for e in entries) == [
            (FORGET, "MEM-STORE.8", "forget", "TODO"),
            (LIST, "MEM-STORE.7", "list", "TODO"),
        ]
        assert all(e.divergence and "\n" not in e.divergence for e in entries)
        assert out.count("expect-update: recorded") == 2
        first = baseline.read_bytes()

        # unchanged store: accepted now, the file does not change by one byte, TODO warns
        code, out, data = _run(broken.url, "--expect-update", str(baseline))
        assert code == 0 and data["summary"]["unexpected"] == 0
        assert baseline.read_bytes() == first
        assert "already accepts every divergence" in out
        # the merge rebuilds the clause table and stale entries from JSON as the report does
        assert clause_rows(data["scenarios"], data["machines"]) == data["clauses"]
        assert any(r["expected"] for r in data["clauses"])
        assert "still say 'reason: TODO'" in capsys.readouterr().err
        code, out, _ = _run(broken.url, "--expect", str(baseline), "--expect-prune")
        assert code == 0 and baseline.read_bytes() == first and "nothing to drop" in out

    # the user writes a reason and a comment; then /list gets fixed (only the forget fault left)
    text = first.decode()
    list_at, forget_at = (
        text.index('- clause: "MEM-STORE.7"'),
        text.index('- clause: "MEM-STORE.8"'),
    )
    assert list_at < forget_at  # entries are written in key order (clause, source, op)
    forget_block = text[forget_at:].replace('reason: "TODO"', 'reason: "OPS-1 forget lies"')
    edited = text[:forget_at] + "# kept by hand\n" + forget_block
    baseline.write_text(edited)
    with _store(FORGET_LIES) as half:
        code, out, data = _run(half.url, "--expect", str(baseline), "--expect-prune")
    assert code == 0
    assert f"dropped scenario {LIST} on clause MEM-STORE.7" in out
    (left,) = load_expectations(baseline)
    assert (left.scenario, left.clause) == (FORGET, "MEM-STORE.8")
    # edited as text: the header, the comment and the user's reason stay, the block is gone
    assert baseline.read_text() == text[:list_at] + "# kept by hand\n" + forget_block


@pytest.mark.clause()
def test_expect_option_mistakes_are_one_line_usage_errors(store: Any, tmp_path: Path) -> None:
    from conformance.cli import main

    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    base = ["run", "--spec", "memory", "--target", store.url, "--token-env", TOKEN_VAR, "-q"]
    assert main([*base, "--expect-prune"]) == 2
    assert main([*base, "--expect", str(a), "--expect-update", str(b)]) == 2


@pytest.mark.clause()
def test_prune_keeps_what_the_run_did_not_check() -> None:
    entries = [
        Expectation(None, "other_shard_scenario", "r"),
        Expectation("MEM-X.1", None, "r"),  # never exercised here
        Expectation("MEM-Y.1", None, "r"),  # exercised and passed: drop
        Expectation("MEM-Z.1", "s1", "r"),  # s1 ran, failed on another clause: drop
        Expectation(None, "s2", "r"),  # s2 indeterminate: not checked, keep
    ]
    results = [
        Checked("s1", "fail", ("MEM-Y.1", "MEM-W.1"), ("MEM-W.1",), "write", "boom"),
        Checked("s2", "indeterminate", ("MEM-Q.1",), ("MEM-Q.1",), "write", "timeout"),
        Checked("s3", "skip", ("MEM-X.1",)),
        Checked("s4", "pass", ("MEM-Y.1",)),
    ]
    dropped = not_reproduced(results, entries)
    assert dropped == [entries[2], entries[3]]
    # and update adds one entry for s1's failure (nothing accepts it); s2 is accepted
    added = new_entries(results, entries)
    assert [(e.scenario, e.clause, e.op) for e in added] == [("s1", "MEM-W.1", "write")]
