"""``memspec selftest``: the bundled store passes and a broken variant is caught — and a
"fault" that breaks nothing makes the selftest fail, so the check itself can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.commands import selftest


@pytest.mark.clause("MEM-STORE.8", "MEM-SCORE.1", "MEM-STORE.7")
def test_selftest_passes_and_names_the_broken_clause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "selftest",
            "--fault",
            "forget-lies",
            "--examples",
            "4",
            "--seed",
            "2",
            "--report",
            str(tmp_path),
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, out[-2000:] + err
    assert "ok  bundled store: conformant" in out
    assert "ok  forget-lies: caught, naming MEM-STORE.8" in out
    assert (tmp_path / "clean" / "report.json").is_file() and (
        tmp_path / "forget-lies" / "report.json"
    ).is_file()


@pytest.mark.clause("MEM-SEAM.2")
def test_selftest_fails_when_a_fault_goes_unnoticed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = dict(selftest.FAULTS)
    faults["harmless"] = (lambda path, status, body: body, ("MEM-STORE.8",))
    monkeypatch.setattr(selftest, "FAULTS", faults)
    code = main(
        [
            "selftest",
            "--fault",
            "harmless",
            "--examples",
            "2",
            "--seed",
            "2",
            "--report",
            str(tmp_path),
            "--quiet",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 1
    assert "BAD harmless: NOT caught" in out and "selftest FAILED" in out
