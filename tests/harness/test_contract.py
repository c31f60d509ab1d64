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
from conformance.contract import Scrubber, finding_records
from conformance.vocabulary import Secret

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


# --------------------------------------------------------------------------- joined into run


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.5", "MEM-WIRE.6")
def test_contract_findings_join_the_run_report_with_curl_lines(
    tmp_path: Path, broken_url: str
) -> None:
    """``memspec run --contract``: each finding is a failing result of kind ``contract`` under
    its clause, in the clause table and the divergences, its reason carrying the curl line
    (token elided); the run's verdict is NOT CONFORMANT."""
    from conformance.vocabulary import TargetConfig
    from tests.common.engine import run_engine

    config = TargetConfig(broken_url, Secret(TOKEN), 10.0, label="broken")
    outcome = run_engine(
        config, spec="memory", corpus=False, machines=False, contract="quick",
        report_dir=tmp_path / "r", quiet=True,
    )  # fmt: skip
    data = _strict(tmp_path / "r" / "report.json")
    assert outcome.exit_code == 1 and data["exit_code"] == 1
    found = [s for s in data["scenarios"] if s["kind"] == "contract"]
    assert found and all(s["verdict"] == "fail" for s in found)
    failed = {r["id"] for r in data["clauses"] if r["failed"]}
    assert {"MEM-WIRE.3", "MEM-WIRE.5"} <= failed, failed
    assert all("— reproduce: " in s["reason"] and "curl -sS" in s["reason"] for s in found)
    assert any("$MEMSPEC_TOKEN" in s["reason"] for s in found)  # the token, elided
    assert data["summary"]["contract"].get("fail") == len(found)
    text = "".join(
        p.read_text(errors="replace") for p in (tmp_path / "r").rglob("*") if p.is_file()
    )
    assert TOKEN not in text and json.dumps(TOKEN)[1:-1] not in text


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.5", "LED-WIRE.1", "LED-WIRE.2")
def test_the_bundled_store_passes_the_contract_inside_a_run(tmp_path: Path) -> None:
    from conformance.commands.target import start_bundled_store
    from conformance.vocabulary import TargetConfig
    from tests.common.engine import run_engine

    handle = start_bundled_store(TOKEN)
    try:
        config = TargetConfig(handle.url, Secret(TOKEN), 10.0, label="bundled store")
        outcome = run_engine(
            config, spec="all", corpus=False, machines=False, contract="quick",
            report_dir=tmp_path / "r", quiet=True,
        )  # fmt: skip
    finally:
        handle.stop()
    data = outcome.data
    assert outcome.exit_code == 0, [
        s["reason"] for s in data["scenarios"] if s["verdict"] != "pass"
    ]
    assert data["summary"]["contract"] == {"pass": 2}
    assert {r["id"] for r in data["clauses"] if r["passed"]} >= {"MEM-WIRE.5", "LED-WIRE.2"}


def _variant_names() -> list[str]:
    from conformance.embedded.catalogue import variants

    return [v.name for v in variants()]


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.5", "LED-WIRE.1", "LED-WIRE.2")
@pytest.mark.parametrize("name", _variant_names())
def test_every_allowed_variant_has_no_contract_finding(name: str, tmp_path: Path) -> None:
    """An allowed variant makes another allowed choice: the contract finds nothing in it.
    Slow over the whole catalogue, so it runs with ``make variants`` (as CI's nightly would)."""
    import os

    if not os.environ.get("MEMSPEC_VARIANTS_PROFILE"):
        pytest.skip("the whole catalogue: run with `make variants`")
    from conformance.commands.target import start_bundled_store
    from conformance.contract import run_contract
    from conformance.embedded.catalogue import ENTRIES
    from conformance.vocabulary import TargetConfig

    handle = start_bundled_store(TOKEN, frozenset({name}))
    try:
        config = TargetConfig(handle.url, Secret(TOKEN), 10.0, label=name)
        data = run_contract(
            config, spec=ENTRIES[name].protocol, profile="quick", report_dir=tmp_path, quiet=True
        )
    finally:
        handle.stop()
    assert data["findings"] == [], [(f["clause"], f["title"]) for f in data["findings"]]
