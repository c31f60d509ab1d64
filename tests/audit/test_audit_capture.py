"""The recording stand-in for a model provider: exact bytes, order, redaction, answers."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conformance.audit.capture import (
    CaptureError,
    CaptureFileError,
    parse_listen,
    read_capture,
    redact_header,
    start_capture,
)
from conformance.cli import main

pytestmark = pytest.mark.clause("MEM-FLAG.3")

SECRET = "sk-ant-api03-THIS-IS-A-SECRET-0123456789"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_exact_bytes_in_arrival_order(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    bodies = [
        b'{"model":"m","system":"caf\xc3\xa9 \\u00e9","messages":[]}',
        b'{ "model" : "m" ,\n "messages":[{"role":"user","content":"hi"}]}\n',
        b"\x00\xff not json at all \r\n",
        b"",
    ]
    with start_capture(out) as srv, httpx.Client() as client:
        for i, body in enumerate(bodies):
            path = "/v1/messages" if i % 2 == 0 else "/v1/chat/completions"
            client.post(srv.url + path, content=body)
            # Appended and flushed before the answer: the line is already on disk.
            assert len(out.read_text().splitlines()) == i + 1
        assert srv.count == len(bodies)
    cap = read_capture(out)
    assert [r.body for r in cap.requests] == bodies
    assert [r.index for r in cap.requests] == [0, 1, 2, 3]
    assert [r.path for r in cap.requests] == [
        "/v1/messages",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/chat/completions",
    ]
    for rec, body in zip(_lines(out), bodies, strict=True):
        assert base64.b64decode(str(rec["body_b64"])) == body
        assert rec["body_sha256"] == hashlib.sha256(body).hexdigest()
        assert rec["body_length"] == len(body)
    assert cap.sha256 == hashlib.sha256(out.read_bytes()).hexdigest()


def test_concurrent_requests_get_distinct_consecutive_indices(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    with start_capture(out) as srv:

        def worker(n: int) -> None:
            with httpx.Client() as client:
                for k in range(5):
                    client.post(srv.url + "/v1/messages", content=f'{{"n":{n},"k":{k}}}'.encode())

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    cap = read_capture(out)
    assert [r.index for r in cap.requests] == list(range(20))
    seen = sorted(json.loads(r.body)["n"] * 10 + json.loads(r.body)["k"] for r in cap.requests)
    assert seen == sorted(n * 10 + k for n in range(4) for k in range(5))
    # Each client's own requests arrive in the order it sent them.
    for n in range(4):
        ks = [json.loads(r.body)["k"] for r in cap.requests if json.loads(r.body)["n"] == n]
        assert ks == list(range(5))


def test_credentials_are_fingerprinted_never_stored(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    with start_capture(out) as srv, httpx.Client() as client:
        client.post(
            srv.url + "/v1/messages",
            content=b"{}",
            headers={"x-api-key": SECRET, "anthropic-version": "2023-06-01"},
        )
        client.post(
            srv.url + "/v1/chat/completions",
            content=b"{}",
            headers={"Authorization": f"Bearer {SECRET}", "Cookie": "session=abc123secret"},
        )
    raw = out.read_text()
    assert SECRET not in raw and "abc123secret" not in raw
    cap = read_capture(out)
    h0 = dict((k.lower(), v) for k, v in cap.requests[0].headers)
    h1 = dict((k.lower(), v) for k, v in cap.requests[1].headers)
    assert h0["anthropic-version"] == "2023-06-01"
    assert h0["x-api-key"].startswith("<redacted sha256:")
    assert h1["authorization"].startswith("Bearer <redacted sha256:")
    # The same key gives the same fingerprint (an auditor can tell the keys apart, not read them).
    assert h0["x-api-key"] == redact_header("x-api-key", SECRET)
    assert h1["authorization"] == f"Bearer {h0['x-api-key']}"
    assert redact_header("x-api-key", SECRET + "x") != h0["x-api-key"]
    assert redact_header("content-type", "application/json") == "application/json"


def test_answers_have_each_providers_shape(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    with start_capture(out) as srv, httpx.Client() as client:
        a = client.post(srv.url + "/v1/messages", json={"model": "claude-x", "messages": []})
        assert a.status_code == 200
        msg = a.json()
        assert msg["type"] == "message" and msg["role"] == "assistant"
        assert msg["model"] == "claude-x" and msg["stop_reason"] == "end_turn"
        assert msg["content"][0]["type"] == "text" and isinstance(msg["content"][0]["text"], str)
        assert set(msg["usage"]) >= {"input_tokens", "output_tokens"}

        o = client.post(srv.url + "/v1/chat/completions", json={"model": "gpt-x", "messages": []})
        assert o.status_code == 200
        cc = o.json()
        assert cc["object"] == "chat.completion" and cc["model"] == "gpt-x"
        choice = cc["choices"][0]
        assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "stop"

        s = client.post(srv.url + "/v1/messages", json={"model": "claude-x", "stream": True})
        assert s.headers["content-type"].startswith("text/event-stream")
        events = [ln[7:] for ln in s.text.splitlines() if ln.startswith("event: ")]
        assert events[0] == "message_start" and events[-1] == "message_stop"
        assert "content_block_delta" in events
        datas = [json.loads(ln[6:]) for ln in s.text.splitlines() if ln.startswith("data: ")]
        assert [d["type"] for d in datas] == events

        so = client.post(srv.url + "/v1/chat/completions", json={"model": "g", "stream": True})
        chunks = [ln[6:] for ln in so.text.splitlines() if ln.startswith("data: ")]
        assert chunks[-1] == "[DONE]"
        parsed = [json.loads(c) for c in chunks[:-1]]
        assert all(c["object"] == "chat.completion.chunk" for c in parsed)
        assert parsed[-1]["choices"][0]["finish_reason"] == "stop"
        assert all("usage" not in c for c in parsed)  # not asked for: no usage at all

        # stream_options.include_usage: "usage": null on every chunk, then one chunk with no
        # choices and the usage, as OpenAI's endpoint sends it (the SDKs read it from there).
        su = client.post(
            srv.url + "/v1/chat/completions",
            json={"model": "g", "stream": True, "stream_options": {"include_usage": True}},
        )
        chunks = [ln[6:] for ln in su.text.splitlines() if ln.startswith("data: ")]
        assert chunks[-1] == "[DONE]"
        parsed = [json.loads(c) for c in chunks[:-1]]
        assert [c["usage"] for c in parsed[:-1]] == [None] * (len(parsed) - 1)
        assert parsed[-2]["choices"][0]["finish_reason"] == "stop"
        assert parsed[-1]["choices"] == []
        assert parsed[-1]["usage"] == {
            "prompt_tokens": 0,
            "completion_tokens": 1,
            "total_tokens": 1,
        }

        bad = client.post(srv.url + "/v1/messages", content=b"[1,2")
        assert bad.status_code == 400 and bad.json()["type"] == "error"
        other = client.get(srv.url + "/v1/models")
        assert other.status_code == 404
    cap = read_capture(out)
    assert len(cap.requests) == 7  # everything is recorded, answered or not
    assert cap.requests[-1].method == "GET" and cap.requests[-1].provider is None


def test_chunked_upload_is_recorded_dechunked(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    parts = [b'{"model":"m",', b'"messages":[]', b"}"]

    def gen() -> Iterator[bytes]:
        yield from parts

    with start_capture(out) as srv, httpx.Client() as client:
        r = client.post(srv.url + "/v1/messages", content=gen())
        assert r.status_code == 200
    cap = read_capture(out)
    assert cap.requests[0].body == b"".join(parts)
    names = {k.lower() for k, _ in cap.requests[0].headers}
    assert "transfer-encoding" in names


def test_max_requests_stops_recording(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    with start_capture(out, max_requests=2) as srv, httpx.Client() as client:
        for _ in range(2):
            assert client.post(srv.url + "/v1/messages", content=b"{}").status_code == 200
        assert srv.done.is_set()
        late = client.post(srv.url + "/v1/messages", content=b"{}")
        assert late.status_code == 503
    assert len(read_capture(out).requests) == 2


@pytest.mark.parametrize(
    "listen",
    ["0.0.0.0:0", "10.1.2.3:8080", "[::]:0", "example.com:80", "192.168.0.1:0"],
)
def test_non_loopback_listen_is_refused(
    listen: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cap.jsonl"
    code = main(["audit", "capture", "--listen", listen, "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "refusing to listen" in err and "loopback" in err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.0.1:70000", "127.0.0.1:http", "[::1"])
def test_malformed_listen_is_a_usage_error(
    listen: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "capture", "--listen", listen, "--out", str(tmp_path / "c")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_parse_listen_accepts_loopback_forms() -> None:
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("localhost:8787") == ("127.0.0.1", 8787)
    assert parse_listen("127.5.6.7:1") == ("127.5.6.7", 1)
    assert parse_listen("[::1]:9") == ("::1", 9)
    with pytest.raises(CaptureError):
        parse_listen("1.1.1.1:0")


def test_existing_capture_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cap.jsonl"
    out.write_text("precious\n")
    assert main(["audit", "capture", "--listen", "127.0.0.1:0", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    with start_capture(out, overwrite=True):
        pass
    assert out.read_text() == ""


@pytest.mark.parametrize(
    ("lines", "where", "reason"),
    [
        (["{not json"], ":1:", "not a JSON object"),
        (['{"format":"other/1"}'], ":1:", "not a memspec capture record"),
        (["R0", "R1", "[1]"], ":3:", "not a JSON object"),
        (["R0", "", "R1"], ":2:", "blank line"),
        (["R0", "R0"], ":2:", "request index 0, expected 1"),
        (["R0", "R2"], ":2:", "request index 2, expected 1"),
        (["R0", "BADHASH"], ":2:", "body_sha256 does not match"),
        (["BADB64"], ":1:", "not valid base64"),
        (["NOHEADERS"], ":1:", "'headers'"),
    ],
)
def test_corrupt_capture_files_name_the_line(
    tmp_path: Path, lines: list[str], where: str, reason: str
) -> None:
    good_file = tmp_path / "good.jsonl"
    with start_capture(good_file) as srv, httpx.Client() as client:
        client.post(srv.url + "/v1/messages", content=b'{"a":1}')
    rec = json.loads(good_file.read_text())
    subst = {
        "R0": json.dumps(rec),
        "R1": json.dumps({**rec, "index": 1}),
        "R2": json.dumps({**rec, "index": 2}),
        "BADHASH": json.dumps({**rec, "index": 1, "body_sha256": "0" * 64}),
        "BADB64": json.dumps({**rec, "body_b64": "!!!"}),
        "NOHEADERS": json.dumps({**rec, "headers": {"a": "b"}}),
    }
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(subst.get(line, line) + "\n" for line in lines))
    with pytest.raises(CaptureFileError) as err:
        read_capture(path)
    assert f"{path}{where}" in str(err.value)
    assert reason in str(err.value)


def test_truncated_last_line_and_missing_files(tmp_path: Path) -> None:
    good_file = tmp_path / "good.jsonl"
    with start_capture(good_file) as srv, httpx.Client() as client:
        client.post(srv.url + "/v1/messages", content=b'{"a":1}')
    whole = good_file.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(whole[: len(whole) // 2])
    with pytest.raises(CaptureFileError, match=r"cut\.jsonl:1: last line is incomplete"):
        read_capture(cut)
    with pytest.raises(CaptureFileError, match="no such capture file"):
        read_capture(tmp_path / "missing.jsonl")
    with pytest.raises(CaptureFileError, match="is a directory"):
        read_capture(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_capture(empty).requests == ()


def _spawn_capture(out: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "audit", "capture", "--listen", "127.0.0.1:0"]
        + ["--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 20
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "listening on" in line or not line:
            break
    assert "listening on http://127.0.0.1:" in line, (
        line,
        proc.stderr.read() if proc.stderr else "",
    )
    url = line.split("listening on ", 1)[1].split(" ", 1)[0]
    return proc, url


def test_cli_capture_prints_its_url_and_stops_after_max_requests(tmp_path: Path) -> None:
    out = tmp_path / "cap.jsonl"
    proc, url = _spawn_capture(out, "--max-requests", "2")
    try:
        assert not url.endswith(":0")
        with httpx.Client() as client:
            client.post(url + "/v1/messages", content=b'{"n":1}')
            client.post(url + "/v1/chat/completions", content=b'{"n":2}')
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    rest = proc.stdout.read() if proc.stdout else ""
    assert "--max-requests reached; 2 request(s)" in rest
    assert [r.body for r in read_capture(out).requests] == [b'{"n":1}', b'{"n":2}']


def test_cli_capture_stops_on_sigterm_and_survives_sigkill(tmp_path: Path) -> None:
    out = tmp_path / "term.jsonl"
    proc, url = _spawn_capture(out)
    try:
        with httpx.Client() as client:
            client.post(url + "/v1/messages", content=b'{"n":1}')
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(read_capture(out).requests) == 1

    killed = tmp_path / "kill.jsonl"
    proc, url = _spawn_capture(killed, "--quiet")
    try:
        with httpx.Client() as client:
            for n in range(3):
                client.post(url + "/v1/messages", content=f'{{"n":{n}}}'.encode())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Every acknowledged request is on disk, whole.
    assert [r.body for r in read_capture(killed).requests] == [b'{"n":0}', b'{"n":1}', b'{"n":2}']
