"""The engine binding's process rules (specs/engine-binding.md): a host that does not provide a
function is skipped, never failed; one that hangs, floods, crashes or writes garbage gets a
clear verdict in bounded time and is killed with everything it started."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from conformance.binding.host import EngineHost
from conformance.cli import main

pytestmark = pytest.mark.clause()

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def hostile(mode: str) -> str:
    return f"{sys.executable} {HERE / 'hostile_host.py'} {mode}"


def reference(extra: str = "") -> str:
    return f"{sys.executable} -m conformance.engine_host {extra}".strip()


@pytest.fixture(autouse=True)
def _repo_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # the hostile host imports conformance from this checkout
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def test_the_reference_host_answers_ok_unknown_and_refused() -> None:
    with EngineHost(reference()) as host:
        assert host.call("tokenize", {"text": "Deploy on Friday"}).value == [
            "deploy", "on", "friday",
        ]  # fmt: skip
        assert host.call("noSuchFunction", {}).kind == "unknown"
        refused = host.call("deriveScopeKey", {"kind": "org", "value": " "})
        assert refused.kind == "error" and "refused" in refused.detail
        assert host.starts == 1


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("hang", "hang"), ("flood", "flood"), ("crash", "crash"), ("garbage", "garbage"),
     ("two-lines", "garbage")],
)  # fmt: skip
def test_a_misbehaving_host_is_a_verdict_and_the_next_call_gets_a_fresh_host(
    mode: str, kind: str
) -> None:
    with EngineHost(hostile(mode), timeout_s=1.0, max_line=1 << 20) as host:
        first = host.call("normalizeText", {"text": "A  b"})
        assert first.kind == "ok" and first.value == "a b"
        bad = host.call("tokenize", {"text": "x"})
        assert bad.kind == kind, bad
        assert host.proc is None  # killed at once
        again = host.call("normalizeText", {"text": "C"})
        assert again.kind == "ok" and again.value == "c"
        assert host.starts == 2


def test_a_host_that_prints_a_banner_is_out_of_step_every_time_it_starts() -> None:
    with EngineHost(hostile("banner"), timeout_s=2.0) as host:
        kinds = [host.call("normalizeText", {"text": "x"}).kind for _ in range(2)]
        assert kinds == ["garbage", "garbage"] and host.starts == 2


def test_failures_in_a_row_end_in_dead_without_new_starts() -> None:
    with EngineHost(hostile("crash"), max_restarts=2) as host:
        kinds = [host.call("tokenize", {"text": "x"}).kind for _ in range(5)]
        assert kinds == ["crash", "crash", "crash", "dead", "dead"]
        assert host.starts == 3


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in state


def test_closing_kills_the_host_and_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "pid"
    monkeypatch.setenv("ENGINE_TEST_PIDFILE", str(pidfile))
    with EngineHost(hostile("grandchild"), timeout_s=1.0) as host:
        assert host.call("normalizeText", {"text": "x"}).kind == "ok"  # started
        assert host.call("tokenize", {"text": "x"}).kind == "hang"
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild)


def test_a_command_that_cannot_start_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["engine", "--host", "/nonexistent/engine-host", "--no-report", "-q"])
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot start" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_unprovided_functions_are_skipped_never_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["engine", "--host", reference("--only tokenize,estimateTokens"), "--spec", "memory",
         "--examples", "5", "--report", str(tmp_path), "-q"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads((tmp_path / "report.json").read_text())
    by_name = {s["name"]: s for s in data["scenarios"]}
    assert by_name["engine-vectors:tokenize"]["verdict"] == "pass"
    assert by_name["engine-vectors:planWrite"]["verdict"] == "skip"
    assert by_name["engine-property:planWrite"]["verdict"] == "skip"
    assert "not provided" in by_name["engine-vectors:planWrite"]["reason"]
    rows = {r["id"]: r for r in data["clauses"]}
    assert rows["MEM-WRITE.3"]["skipped"] >= 1 and rows["MEM-WRITE.3"]["failed"] == 0
    assert (tmp_path / "junit.xml").is_file() and (tmp_path / "report.html").is_file()


def test_a_hanging_host_is_reported_indeterminate_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No answer is no divergence: the run is INDETERMINATE (exit 3), not NOT CONFORMANT."""
    code = main(
        ["engine", "--host", hostile("hang"), "--only", "tokenize", "--timeout", "0.5",
         "--startup-grace", "0.5", "--no-properties", "--report", str(tmp_path), "-q"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 3
    assert "INDETERMINATE" in out and "host hang" in out and "NOT CONFORMANT" not in out
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["scenarios"][0]["verdict"] == "indeterminate"


def test_a_garbling_host_diverges_on_the_vectors_clauses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["engine", "--host", hostile("garbage"), "--only", "tokenize", "--no-properties",
         "--no-report", "-q"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert (
        code == 1 and "DIVERGES" in out and "MEM-SCORE.2" in out and "not a binding answer" in out
    )


def test_no_host_process_outlives_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    before = {p.name for p in Path("/proc").iterdir() if p.name.isdigit()}
    main(["engine", "--host", hostile("hang"), "--only", "tokenize", "--timeout", "0.3",
          "--startup-grace", "0.3", "--no-properties", "--no-report", "-q"])  # fmt: skip
    capsys.readouterr()
    after = {p.name for p in Path("/proc").iterdir() if p.name.isdigit()} - before
    mine = []
    for pid in after:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"hostile_host.py" in cmd and not _gone(int(pid)) and os.getpid() != int(pid):
            mine.append(pid)
    assert not mine
