"""The bundled ledger as JSON-RPC 2.0 over a WebSocket (``conformance/embedded/ledger/jsonrpc.py``):
the same dispatcher as ``POST /ledger/<name>``, JSON-RPC's own rules (parse errors, invalid
requests, notifications, batches), the token on the upgrade, and ``memspec serve`` serving it
on a port and on a Unix socket."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect, unix_connect

from conformance.embedded.ledger.dispatch import Dispatch
from conformance.embedded.ledger.jsonrpc import respond
from conformance.embedded.ledger.service import LedgerService
from conformance.embedded.server import start_server
from conformance.embedded.storage_faults import FaultLog
from tests.common.memory_store import ROOT

TOKEN = "Sock-Tok3n-abcdefgh"


def _dispatch(test_control: bool = True) -> Dispatch:
    return Dispatch(LedgerService(":memory:", test_control=test_control), FaultLog(None))


def _ask(d: Dispatch, message: Any) -> Any:
    text = message if isinstance(message, str) else json.dumps(message)
    answer = respond(d, text)
    return None if answer is None else json.loads(answer)


@pytest.mark.clause("LED-WIRE.20", "LED-WIRE.21")
def test_a_request_is_answered_as_the_http_binding_answers_it() -> None:
    d = _dispatch()
    saved = _ask(d, {"jsonrpc": "2.0", "id": 7, "method": "memory/save_memory_record",
                     "params": {"body": "tea"}})  # fmt: skip
    assert saved["id"] == 7 and saved["jsonrpc"] == "2.0" and saved["result"]["body"] == "tea"
    bad = _ask(d, {"jsonrpc": "2.0", "id": "s", "method": "memory/save_memory_record",
                   "params": {"body": "x", "tags": []}})  # fmt: skip
    assert bad == {"jsonrpc": "2.0", "id": "s",
                   "error": {"code": -32602, "message": "unknown param 'tags'"}}  # fmt: skip
    reset = _ask(d, {"jsonrpc": "2.0", "id": 8, "method": "_test/reset", "params": {}})
    assert reset["result"] == {"ok": True}
    # The params reach the service as the text they were sent in (a float stays a float).
    got = _ask(d, '{"jsonrpc":"2.0","id":9,"method":"memory/update_consolidation_settings",'
                  '"params" : {"mode":"off","maxRecords":7.0}}')  # fmt: skip
    assert got["result"]["maxRecords"] == 7
    none = _ask(d, {"jsonrpc": "2.0", "id": 10, "method": "memory/get_consolidation_settings"})
    assert "result" in none
    off = _ask(_dispatch(test_control=False), {"jsonrpc": "2.0", "id": 1, "method": "_test/reset"})
    assert off["error"]["code"] == -32601


@pytest.mark.clause("LED-WIRE.20")
def test_json_rpc_framing_errors_notifications_and_batches() -> None:
    d = _dispatch()
    assert _ask(d, '{"jsonrpc": "2.0", "id": 1, "method": ')["error"]["code"] == -32700
    assert _ask(d, '{"jsonrpc":"2.0","id":1,"result":NaN}')["error"]["code"] == -32700
    not_object = {"code": -32600, "message": "Invalid Request: not a request object"}
    assert _ask(d, "5") == {"jsonrpc": "2.0", "id": None, "error": not_object}
    assert _ask(d, {"id": 3, "method": "memory/list_memory_records"})["error"]["code"] == -32600
    assert _ask(d, {"jsonrpc": "2.0", "id": [1], "method": "x"})["error"]["code"] == -32600
    assert _ask(d, [])["error"]["code"] == -32600
    # A notification is carried out and never answered.
    note = {"jsonrpc": "2.0", "method": "memory/save_memory_record", "params": {"body": "n"}}
    assert _ask(d, note) is None
    listed = _ask(d, {"jsonrpc": "2.0", "id": 4, "method": "memory/list_memory_records",
                      "params": {"scopeKey": "account:local"}})  # fmt: skip
    assert [r["body"] for r in listed["result"]["records"]] == ["n"]
    batch = _ask(d, [note, {"jsonrpc": "2.0", "id": 5, "method": "memory/forget_everything"}])
    assert [a["id"] for a in batch] == [5] and batch[0]["error"]["code"] == -32601
    assert _ask(d, [note]) is None


@pytest.mark.clause("LED-WIRE.20")
def test_the_bundled_store_serves_both_forms_from_one_ledger(tmp_path: Path) -> None:
    with start_server(token=TOKEN, test_control=True) as handle:
        tcp = handle.serve_ledger_socket()
        unix = handle.serve_ledger_socket(unix_path=str(tmp_path / "l.sock"))
        assert stat.S_IMODE(os.stat(tmp_path / "l.sock").st_mode) == 0o600
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with connect(tcp, additional_headers=auth, proxy=None) as ws:
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory/save_memory_record",
                                "params": {"body": "over tcp"}}))  # fmt: skip
            assert json.loads(ws.recv(timeout=5))["result"]["body"] == "over tcp"
        with unix_connect(unix.removeprefix("ws+unix://"), "ws://localhost/",
                          additional_headers=auth) as ws:  # fmt: skip
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "memory/list_memory_records",
                                "params": {"scopeKey": "account:local"}}))  # fmt: skip
            bodies = [r["body"] for r in json.loads(ws.recv(timeout=5))["result"]["records"]]
        http = httpx.post(f"{handle.url}/ledger/memory/list_memory_records",
                          json={"scopeKey": "account:local"}, headers=auth)  # fmt: skip
        assert bodies == ["over tcp"] == [r["body"] for r in http.json()["records"]]
        for headers in ({}, {"Authorization": "Bearer wrong-token-xxxxxxxx"}):
            with pytest.raises(InvalidStatus) as refused:
                connect(tcp, additional_headers=headers, proxy=None).__enter__()
            assert refused.value.response.status_code == 401
        with pytest.raises(ValueError):
            handle.serve_ledger_socket(host="0.0.0.0")
    assert not (tmp_path / "l.sock").exists()


@pytest.mark.clause("LED-WIRE.20")
def test_memspec_serve_announces_the_socket_forms(tmp_path: Path) -> None:
    sock = tmp_path / "serve.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.embedded", "--port", "0", "--db", ":memory:",
         "--quiet", "--ledger-ws", "0", "--ledger-unix", str(sock), "--test-control"],
        cwd=ROOT, env={**os.environ, "MEMSPEC_TOKEN": TOKEN},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for _ in range(3):
            lines.append(proc.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=20)
    try:
        assert "listening on http://" in lines[0]
        urls = [line.strip().rsplit(" ", 1)[1] for line in lines[1:]]
        assert urls[0].startswith("ws://127.0.0.1:") and urls[1] == f"ws+unix://{sock}"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with unix_connect(str(sock), "ws://localhost/", additional_headers=auth) as ws:
            ws.send('{"jsonrpc":"2.0","id":1,"method":"_test/reset","params":{}}')
            assert json.loads(ws.recv(timeout=5))["result"] == {"ok": True}
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert not sock.exists()
