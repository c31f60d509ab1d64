"""memspec against hostile JSON-RPC daemons: a whole ``memspec run --spec ledger`` against a
WebSocket daemon that answers the probe honestly and then hangs, floods, sends garbage or
echoes the token.  Each run ends in bounded time with a verdict -- NOT CONFORMANT (exit 1) when
a divergence was seen, INDETERMINATE (exit 3) when nothing but unanswered steps were -- no
traceback, strict JSON reports and the token in no form in any output (docs/hostile-targets.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hostile_server import fragments_in, token_fragments
from websockets.sync.server import ServerConnection

from tests.common.jsonrpc_daemon import Daemon, Honest

TOKEN = "Hq7/Rpc3n-Zq9/xYw2vK"
TIMEOUT_S = 0.6
TIME_BOUND_S = 40.0
_SAVE = "memory/save_memory_record"
_GARBAGE: list[str | bytes] = [
    b"\x00binary",
    "<html>502 Bad Gateway</html>",
    '{"jsonrpc":"2.0","id":%d,"result":Infinity}',
    "[" * 100_000 + "]" * 100_000,
    '{"jsonrpc":"1.0","id":%d,"result":{}}',
]


def _hang(release: threading.Event) -> Any:
    """Answers the probe, then nothing from the first scenario's reset on."""
    reset = threading.Event()

    def behave(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
        if request.get("method") == "_test/reset":
            reset.set()
        if reset.is_set():
            release.wait(60)
        else:
            _honest(conn, answer)

    return behave


def _flood(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
    if request.get("method") == _SAVE:
        for _ in range(50):
            conn.send('{"jsonrpc":"2.0","method":"tick","params":{"n":1}}')
        big = "x" * (5 << 20)
        conn.send(f'{{"jsonrpc":"2.0","id":{request["id"]},"result":"{big}"}}')
    else:
        _honest(conn, answer)


def _garbage(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
    if request.get("method") == _SAVE:
        item = _GARBAGE[request["id"] % len(_GARBAGE)]
        conn.send(item % request["id"] if isinstance(item, str) and "%d" in item else item)
    else:
        _honest(conn, answer)


def _echo(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
    escaped = json.dumps(TOKEN)[1:-1].replace("/", "\\/")
    forms = [TOKEN, TOKEN.upper(), escaped, TOKEN.encode().hex()]
    conn.send(json.dumps({"jsonrpc": "2.0", "method": "log", "params": {"t": forms}}))
    if request.get("method") == _SAVE:
        message = "refused: " + " ".join(forms) + " \x1b[31m\u202e"
        conn.send(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                              "error": {"code": 1000, "message": message}}))  # fmt: skip
    else:
        _honest(conn, answer)


def _honest(conn: ServerConnection, answer: Honest) -> None:
    text = answer()
    if text is not None:
        conn.send(text)


def _run(url: str, report: Path) -> tuple[int, str, str, float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--spec", "ledger", "--profile", "quick",
         "--examples", "1", "--timeout", str(TIMEOUT_S), "--target", url, "--token-env",
         "HOSTILE_TOKEN", "--report", str(report)],
        env={**os.environ, "HOSTILE_TOKEN": TOKEN}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started


@pytest.mark.clause("LED-WIRE.22", "LED-WIRE.23")
@pytest.mark.parametrize("mode", ["hang", "flood", "garbage", "token-echo"])
def test_a_hostile_json_rpc_daemon_gets_a_verdict_in_time_and_never_the_token(
    mode: str, tmp_path: Path
) -> None:
    release = threading.Event()
    behave = {"hang": _hang(release), "flood": _flood, "garbage": _garbage, "token-echo": _echo}
    with Daemon(behave[mode], token=TOKEN, unix=mode in ("flood", "token-echo")) as d:
        d.on_stop(release.set)
        code, out, err, wall = _run(d.url, tmp_path / "report")
    # a daemon that stops answering (hang, flood, garbage) leaves only unanswered steps: the run
    # says INDETERMINATE, never CONFORMANT; one echoing the token is judged on its answers
    assert code == (1 if mode == "token-echo" else 3), (code, out[-2000:], err[-2000:])
    assert wall < TIME_BOUND_S, wall
    frags = token_fragments(TOKEN)
    texts = {"stdout": out, "stderr": err}
    for path in (tmp_path / "report").rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_text("utf-8", "replace")
            if path.suffix == ".json":
                json.loads(texts[str(path)], parse_constant=lambda c: pytest.fail(c))
    for where, text in texts.items():
        assert "Traceback" not in text and "internal error" not in text, where
        assert not fragments_in(frags, text), (where, fragments_in(frags, text)[:3])
        assert "\x1b" not in text and "\u202e" not in text, where
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    verdicts = {s["verdict"] for s in report["scenarios"]}
    assert verdicts & {"fail", "indeterminate"}, verdicts
