"""The recording proxy in front of a Memory Worker: pass-through, the record, the token never
written, bounds and honest errors, the turn marker (``after_request``)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conformance.audit.capture import CaptureError, start_capture
from conformance.audit.store_proxy import (
    MAX_STORE_REQUEST,
    StoreProxy,
    read_store_record,
    route_of,
)
from conformance.cli import main
from conformance.embedded.server import start_server

pytestmark = pytest.mark.clause("MEM-READ.2")

TOKEN = "memspec-store-proxy-token-0123456789"


@pytest.fixture
def store_url() -> Iterator[str]:
    with start_server(token=TOKEN) as handle:
        yield handle.url


def _auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


def test_calls_pass_through_unchanged_and_are_recorded(store_url: str, tmp_path: Path) -> None:
    out, store_out = tmp_path / "on.jsonl", tmp_path / "on.store.jsonl"
    with (
        start_capture(out) as cap,
        StoreProxy(store_out, store_url, lambda: cap.count) as proxy,
        httpx.Client() as client,
    ):
        rec = {"kind": "fact", "text": f"Deploy with make ({TOKEN})", "sourceThreadKey": "t/1"}
        w = client.post(
            proxy.url + "/write", json={"scopeKey": "org:acme", "records": [rec]}, headers=_auth()
        )
        assert w.status_code == 200 and w.json()["inserted"] == 1
        client.post(cap.url + "/v1/messages", json={"model": "m"})
        via = client.post(
            proxy.url + "/list", json={"scopeKey": "org:acme", "limit": 5}, headers=_auth()
        )
        direct = client.post(
            store_url + "/list", json={"scopeKey": "org:acme", "limit": 5}, headers=_auth()
        )
        assert via.status_code == 200 and via.content == direct.content
        r = client.post(
            proxy.url + "/retrieve",
            json={"scopeKey": "org:acme", "query": "deploy", "limit": 8},
            headers=_auth(),
        )
        assert [x["text"] for x in r.json()["records"]] == [rec["text"]]
        bad = client.post(proxy.url + "/retrieve", json={"scopeKey": "org:acme"})
        assert bad.status_code == 401  # the store's own answer, passed through
    raw = store_out.read_bytes()
    assert TOKEN.encode() not in raw and TOKEN[:-1].encode() not in raw
    calls = read_store_record(store_out).calls
    assert [c.route for c in calls] == ["write", "list", "retrieve", "retrieve"]
    assert [c.after_request for c in calls] == [0, 1, 1, 1]
    assert [c.status for c in calls] == [200, 200, 200, 401]
    assert all(c.answered_by == "upstream" and c.error is None for c in calls)
    assert calls[2].answer_json()["records"][0]["text"] == "Deploy with make ([token])"
    assert calls[2].request_json() == {"scopeKey": "org:acme", "query": "deploy", "limit": 8}
    auth = dict((n.lower(), v) for n, v in calls[0].headers)["authorization"]
    assert auth.startswith("Bearer <redacted sha256:")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_errors_are_the_proxys_own_and_say_so(store_url: str, tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    with StoreProxy(tmp_path / "s.jsonl", dead, lambda: 0) as proxy, httpx.Client() as client:
        r = client.post(proxy.url + "/retrieve", json={"scopeKey": "org:a"}, headers=_auth())
        assert r.status_code == 502 and "unreachable" in r.json()["error"]
    with StoreProxy(tmp_path / "t.jsonl", store_url, lambda: 0) as proxy, httpx.Client() as client:
        big = b'{"pad":"' + b"x" * MAX_STORE_REQUEST + b'"}'
        r = client.post(proxy.url + "/write", content=big, headers=_auth())
        assert r.status_code == 413
    first = read_store_record(tmp_path / "s.jsonl").calls[0]
    assert (
        first.answered_by == "proxy" and first.status == 502 and "unreachable" in str(first.error)
    )
    second = read_store_record(tmp_path / "t.jsonl").calls[0]
    assert second.answered_by == "proxy" and second.status == 413 and second.request == ""


def test_bad_setups_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="http"):
        StoreProxy(tmp_path / "s.jsonl", "ftp://x", lambda: 0)
    with pytest.raises(CaptureError, match="loopback"):
        StoreProxy(tmp_path / "s.jsonl", "http://127.0.0.1:1", lambda: 0, host="0.0.0.0")
    (tmp_path / "full.jsonl").write_text("x\n")
    with pytest.raises(CaptureError, match="not empty"):
        StoreProxy(tmp_path / "full.jsonl", "http://127.0.0.1:1", lambda: 0)
    assert (
        main(
            [
                "audit",
                "capture",
                "--listen",
                "127.0.0.1:0",
                "--out",
                str(tmp_path / "c.jsonl"),
                "--store-out",
                str(tmp_path / "x.jsonl"),
            ]
        )
        == 2
    )
    assert route_of("/v1/retrieve?x=1") == "retrieve" and route_of("/admin") == "other"


def test_a_corrupt_record_names_its_line(tmp_path: Path) -> None:
    from conformance.audit.capture import CaptureFileError

    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"format": "memspec.audit.store/1", "index": 0}) + "\n")
    with pytest.raises(CaptureFileError, match=r"s.jsonl:1: field 'headers'"):
        read_store_record(p)
