"""``memspec serve`` as a real process: a SIGKILL mid-batch loses the whole batch and nothing
else; SIGTERM/SIGINT shut down cleanly; the command refuses unsafe or token-less starts."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

from conformance.cli import main as cli_main
from conformance.embedded.memory.store import MemoryStore, fts_document
from conformance.embedded.server import PAUSE_ENV
from reference.memory.records import MemoryCandidate
from tests.common.memory_store import AUTH, TOKEN, fact, spawn_serve, unique_scope


def _wait_for(path: Path, deadline_s: float = 15.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.02)
    return False


def _fts_equals_active(db: str) -> bool:
    with sqlite3.connect(db) as c:
        fts = dict(c.execute("SELECT rowid, tokens FROM records_fts").fetchall())
        active = {
            rid: fts_document(text, json.loads(kws))
            for rid, text, kws in c.execute(
                "SELECT rid, text, keywords FROM records WHERE status = 'active'"
            )
        }
    return fts == active


@pytest.mark.clause("MEM-CAP.4", "MEM-STORE.10")
def test_sigkill_mid_batch_commits_nothing_of_the_batch(tmp_path: Path) -> None:
    db = str(tmp_path / "kill.sqlite3")
    scope = unique_scope()
    seed = MemoryStore(db)
    seed.write(
        scope, [MemoryCandidate("fact", "base one", "t"), MemoryCandidate("fact", "base two", "t")]
    )
    seed.close()
    flag = tmp_path / "paused.flag"
    proc = spawn_serve(tmp_path, "--db", db, "--quiet", env={PAUSE_ENV: str(flag)})
    try:
        batch = {
            "scopeKey": scope,
            "cap": 1,
            "records": [
                fact("correction of one", supersedes=f"mem:{scope}:1"),  # applied before the pause
                fact("base two"),
                fact("brand new"),
            ],
        }
        errors: list[BaseException] = []

        def send() -> None:
            try:
                httpx.post(proc.url + "/write", json=batch, headers=AUTH, timeout=30)
            except httpx.HTTPError as exc:  # the server dies under us: expected
                errors.append(exc)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        assert _wait_for(flag), "the write never reached the pause point"
        proc.proc.kill()  # SIGKILL inside the open transaction
        assert proc.proc.wait(timeout=10) == -signal.SIGKILL
        sender.join(timeout=10)
        assert errors, "the killed write must not have been answered"
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait()

    after = MemoryStore(db)  # a restart on the same file
    try:
        live = after.list(scope, 50)
        assert [(r.id, r.text, r.status, r.use_count) for r in live] == [
            (f"mem:{scope}:2", "base two", "active", 0),
            (f"mem:{scope}:1", "base one", "active", 0),
        ]
        assert after.get(f"mem:{scope}:3") is None
        assert _fts_equals_active(db)
    finally:
        after.close()


@pytest.mark.clause("MEM-STORE.10")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_shuts_down_cleanly_on_signals(tmp_path: Path, sig: int) -> None:
    db = str(tmp_path / "term.sqlite3")
    proc = spawn_serve(tmp_path, "--db", db)
    scope = unique_scope()
    with httpx.Client(base_url=proc.url, headers=AUTH, timeout=10) as c:
        assert (
            c.post("/write", json={"scopeKey": scope, "records": [fact("durable")]}).json()[
                "inserted"
            ]
            == 1
        )
        assert c.get("/healthz").status_code == 200
    assert proc.stop(sig) == 0
    assert proc.proc.stdout is not None
    assert "memspec serve: stopped" in proc.proc.stdout.read()
    log = [
        json.loads(line)
        for line in proc.stderr_path.read_text().splitlines()
        if line.startswith("{")
    ]
    assert [(e["path"], e["status"]) for e in log] == [("/write", 200), ("/healthz", 200)]
    assert not Path(db + "-wal").exists() or Path(db + "-wal").stat().st_size == 0
    again = MemoryStore(db)
    try:
        assert [r.text for r in again.list(scope, 5)] == ["durable"]
    finally:
        again.close()


@pytest.mark.clause("MEM-WIRE.3")
def test_serve_refuses_to_start_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMSPEC_TOKEN", raising=False)
    monkeypatch.delenv("OTHER_TOKEN_VAR", raising=False)
    assert cli_main(["serve", "--port", "0", "--db", ":memory:"]) == 2
    assert "MEMSPEC_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("OTHER_TOKEN_VAR", "")
    assert (
        cli_main(["serve", "--port", "0", "--db", ":memory:", "--token-env", "OTHER_TOKEN_VAR"])
        == 2
    )
    assert "OTHER_TOKEN_VAR" in capsys.readouterr().err
    # --no-auth is refused on a non-loopback address, and bad values are usage errors
    assert cli_main(["serve", "--host", "0.0.0.0", "--no-auth", "--db", ":memory:"]) == 2
    assert cli_main(["serve", "--port", "70000", "--no-auth", "--db", ":memory:"]) == 2
    assert cli_main(["serve", "--cap", "0", "--no-auth", "--db", ":memory:"]) == 2
    err = capsys.readouterr().err
    assert "non-loopback" in err and "--port" in err and "--cap" in err
    assert "Traceback" not in err


@pytest.mark.clause("MEM-WIRE.3")
def test_serve_no_auth_warns_and_token_env_is_honoured(tmp_path: Path) -> None:
    open_proc = spawn_serve(tmp_path, "--db", ":memory:", "--no-auth", env={"MEMSPEC_TOKEN": ""})
    try:
        r = httpx.post(open_proc.url + "/list", json={"scopeKey": "org:x", "limit": 1})
        assert r.status_code == 200
    finally:
        assert open_proc.stop() == 0
    assert "WARNING" in open_proc.stderr_path.read_text()

    env = {"MEMSPEC_TOKEN": "", "MY_STORE_TOKEN": "other-secret"}
    proc = spawn_serve(
        tmp_path, "--db", ":memory:", "--token-env", "MY_STORE_TOKEN", "--quiet", env=env
    )
    try:
        body = {"scopeKey": "org:x", "limit": 1}
        assert httpx.post(proc.url + "/list", json=body, headers=AUTH).status_code == 401
        ok = httpx.post(
            proc.url + "/list", json=body, headers={"Authorization": "Bearer other-secret"}
        )
        assert ok.status_code == 200
    finally:
        assert proc.stop() == 0
    assert proc.stderr_path.read_text() == ""  # --quiet: no access log
    assert TOKEN not in proc.stderr_path.read_text()
    assert os.environ.get(PAUSE_ENV) is None
