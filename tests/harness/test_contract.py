"""``memspec contract``: the OpenAPI contract fuzzer against the bundled store (no finding,
exit 0) and against a deliberately broken store (findings under the contract's clauses, each
with a curl line and a replay file, exit 1) -- and never the token in any output."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.commands.contract import Scrubber, finding_records
from conformance.driver import Secret

TOKEN = "s3cr3t/Contract-Token_0123456789"
TOKEN_ENV = "MEMSPEC_CONTRACT_TEST_TOKEN"


def _json_escaped(text: str) -> str:
    """The token as a PHP-style json_encode would write it: every char \\u-escaped, '/' as '\\/'."""
    return "".join("\\/" if c == "/" else f"\\u{ord(c):04X}" for c in text)


def _strict(path: Path) -> Any:
    def bad(token: str) -> Any:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=bad)


def _decoded(text: str) -> str:
    """Undo the JSON escapes a target may use (``\\uXXXX``, ``\\/``)."""
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text).replace(
        "\\/", "/"
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _assert_no_token(texts: list[str], report_dir: Path) -> None:
    for path in report_dir.rglob("*"):
        if path.is_file():
            content = path.read_text(encoding="utf-8")
            texts.append(content)
            if path.suffix == ".json":
                texts.extend(_strings(json.loads(content)))
    for text in texts:
        for form in (text, _decoded(text)):
            assert TOKEN.lower() not in form.lower(), form[:200]


# --------------------------------------------------------------------------- the bundled store


@pytest.mark.clause(
    "MEM-WIRE.3", "MEM-WIRE.4", "MEM-WIRE.5", "MEM-WIRE.6", "LED-WIRE.1", "LED-WIRE.2"
)
def test_the_bundled_store_has_no_finding_on_the_quick_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    code = main(["contract", "--profile", "quick", "--report", str(report), "--quiet"])
    out = capsys.readouterr().out
    data = _strict(report / "contract.json")
    assert data["findings"] == [], out
    assert code == 0
    assert data["exit_code"] == 0
    assert data["options"]["protocols"] == ["memory", "ledger"]
    # Every operation of both documents (but the test controls) was exercised, and the probes
    # reached every data route.
    labels = set(data["operations"])
    assert {"POST /write", "POST /forget", "POST /ledger/memory/save_memory_record"} <= labels
    assert not any("/_test/" in label for label in labels)
    for label, counts in data["operations"].items():
        assert counts.get("positive", 0) >= 1, label
        assert label == "GET /healthz" or counts.get("negative", 0) >= 1, label
    assert data["requests"] > 150
    assert "contract: PASS" in out
    assert finding_records(report) == []


# --------------------------------------------------------------------------- a broken store


class _Broken(BaseHTTPRequestHandler):
    """A Memory Worker that forgot the transport rules: no auth, no size fence, no validation,
    and it echoes the bearer back, JSON-escaped, in a header and in error bodies."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Echo", _json_escaped(self.headers.get("Authorization", "")))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._answer(200, {"ok": True})
        else:
            self._answer(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding"):
            raw = b""
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                raw += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            length = self.headers.get("Content-Length", "0")
            raw = self.rfile.read(int(length) if length.isdigit() else 0)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._answer(400, {"error": "bad json " + self.headers.get("Authorization", "")})
            return
        if self.path in ("/retrieve", "/list"):
            self._answer(200, {"records": []})
        elif self.path == "/write":
            n = len(body.get("records") or []) if isinstance(body, dict) else 0
            self._answer(
                200, {"ok": True, "inserted": n, "deduped": 0, "superseded": 0, "evicted": 0}
            )
        elif self.path == "/forget":
            self._answer(200, {"ok": True, "forgotten": False})
        else:
            self._answer(404, {"error": "not found"})


@pytest.fixture
def broken_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.5", "MEM-WIRE.6", "MEM-WIRE.11")
def test_a_broken_store_gets_findings_with_curl_lines_and_replays(
    tmp_path: Path,
    broken_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    report = tmp_path / "report"
    code = main(
        [
            "contract",
            "--target",
            broken_url,
            "--token-env",
            TOKEN_ENV,
            "--spec",
            "memory",
            "--profile",
            "ci",  # its time budget never cuts these examples short, even on a loaded machine
            "--examples",
            "12",  # enough that an invalid *body* is generated for every route whatever the
            # process's hash seed (which part a negative case breaks is schemathesis' choice)
            "--report",
            str(report),
        ]
    )
    captured = capsys.readouterr()
    assert code == 1, captured.out
    data = _strict(report / "contract.json")
    assert data["exit_code"] == 1
    by_clause = {f["clause"] for f in data["findings"]}
    # Auth not enforced, no length rules, no size fence, invalid input accepted.
    assert {"MEM-WIRE.3", "MEM-WIRE.5", "MEM-WIRE.6"} <= by_clause, by_clause
    assert by_clause & {"MEM-WIRE.11", "MEM-WIRE.12", "MEM-WIRE.14", "MEM-WIRE.15"}
    for f in data["findings"]:
        assert f["curl"].startswith("curl ") or "| curl " in f["curl"], f
        assert broken_url in f["curl"]
        replay = _strict(report / f["replay"])
        assert replay["format"] == "memspec-contract-replay/1"
        assert replay["clause"] == f["clause"] and replay["curl"] == f["curl"]
    # A finding sent with the bearer shows it as $MEMSPEC_TOKEN, ready to run.
    assert any('"Authorization: Bearer $MEMSPEC_TOKEN"' in f["curl"] for f in data["findings"])
    assert "FINDING MEM-WIRE.3" in captured.out and "contract: FAIL" in captured.out
    records = finding_records(report)
    assert len(records) == len(data["findings"])
    assert records[0].clause == data["findings"][0]["clause"] and records[0].curl
    _assert_no_token([captured.out, captured.err], report)


# --------------------------------------------------------------------------- usage and scrubbing


@pytest.mark.clause()
def test_usage_errors_and_an_unreachable_target_are_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["contract", "--examples", "0", "--report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--examples" in err and "Traceback" not in err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    assert main(["contract", "--target", f"http://127.0.0.1:{port}", "-q"]) == 2
    err = capsys.readouterr().err
    assert "unreachable" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.clause()
def test_the_scrubber_removes_the_token_in_every_escaping() -> None:
    scrub = Scrubber(Secret(TOKEN))
    for text in (
        f"x {TOKEN} y",
        f'{{"echo": "{_json_escaped(TOKEN)}"}}',
        json.dumps({"echo": TOKEN}),
        TOKEN.replace("/", "\\/"),
        _json_escaped(TOKEN).lower(),
        TOKEN.upper(),
    ):
        cleaned = scrub(text)
        assert TOKEN not in cleaned and TOKEN.lower() not in cleaned.lower()
        assert "$MEMSPEC_TOKEN" in cleaned, text
    assert scrub.deep({"a": [f"Bearer {TOKEN}"]}) == {"a": ["Bearer $MEMSPEC_TOKEN"]}
