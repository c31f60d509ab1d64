"""The bundled store behind an edge that behaves like workerd / a public edge — what issue 14 saw
against the upstream Worker: a plain-text 400 from the runtime's parser on a non-digit
``Content-Length``, ``Content-Length: 0`` stamped on a bodiless POST, a declared length held
until the client gives up, ``POST /healthz`` → 404.  memspec must judge the store behind it
CONFORMANT: what the edge answered is *not observable through this target* (skipped, with the
reason, per clause), never a divergence; and the timeout of a step is blamed on its scenario.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hostile_server import HostileServer

from conformance.commands.target import start_bundled_store
from conformance.drivers.memory.driver import MemoryDriver
from conformance.runner import run_scenario
from conformance.scenario import Scenario, Step
from conformance.vocabulary import RunContext, Secret, TargetConfig
from tests.common.engine import run_engine
from tests.common.loopback import serve_connections

TOKEN = "edge-like-token-5d1c9e"


def make_driver(url: str, timeout: float) -> MemoryDriver:
    config = TargetConfig(url, Secret(TOKEN), timeout)
    return MemoryDriver(RunContext(run_id="memspec-edgetest", target=config))


def _recv_head(conn: socket.socket) -> tuple[bytes, bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return b"", b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


class EdgeProxy:
    """One request per connection; the edge's own answers are what workerd answers."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        serve_connections(self.sock, lambda conn, _n: self._serve(conn))

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(20)
            try:
                self._one(conn)
            except OSError:
                pass

    def _one(self, conn: socket.socket) -> None:
        head, rest = _recv_head(conn)
        if not head:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        headers = [line.split(":", 1) for line in lines[1:]]
        names = {k.strip().lower(): v.strip() for k, v in headers}
        cl = names.get("content-length")
        if cl is not None and not re.fullmatch(r"[0-9]+", cl):
            conn.sendall(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                b"Content-Length: 11\r\nConnection: close\r\n\r\nBad Request"
            )
            return
        if method == "POST" and path.split("?")[0] == "/healthz":
            body = b'{"error":"not found"}'
            conn.sendall(
                b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            return
        if cl is None and "transfer-encoding" not in names and method == "POST":
            lines.insert(1, "Content-Length: 0")  # the edge stamps a bodiless POST
        if cl is not None:
            want = int(cl)
            while len(rest) < want:  # the runtime waits for the declared body
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
        lines = [x for x in lines if not x.lower().startswith("connection:")]
        lines.append("Connection: close")
        up = socket.create_connection(("127.0.0.1", self.upstream_port))
        with up:
            up.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + rest)
            if "transfer-encoding" in names:  # relay the rest of a chunked body
                up.settimeout(0.3)
                conn.settimeout(0.3)
                try:
                    while chunk := conn.recv(65536):
                        up.sendall(chunk)
                        if chunk.endswith(b"0\r\n\r\n"):
                            break
                except OSError:
                    pass
                up.settimeout(20)
            answer = b""
            while chunk := up.recv(65536):
                answer += chunk
        status_line, _, tail = answer.partition(b"\r\n")
        tail = re.sub(rb"(?im)^connection:[^\r\n]*\r\n", b"", tail)
        conn.sendall(status_line + b"\r\nConnection: close\r\n" + tail)

    def close(self) -> None:
        self.sock.close()


@contextmanager
def edge_store() -> Iterator[str]:
    store = start_bundled_store(TOKEN)
    edge = EdgeProxy(int(store.url.rsplit(":", 1)[1]))
    try:
        yield edge.url
    finally:
        edge.close()
        store.stop()


@pytest.mark.clause("MEM-WIRE.2", "MEM-WIRE.4", "MEM-WIRE.5", "MEM-WIRE.6")
def test_a_store_behind_a_workerd_like_edge_is_conformant_and_the_edge_answers_are_skips() -> None:
    with edge_store() as url:
        config = TargetConfig(url, Secret(TOKEN), 1.0, label=url)
        outcome = run_engine(config, spec="memory", machines=False, quiet=True)
    data = outcome.data
    assert outcome.exit_code == 0, [(d["name"], d["reason"]) for d in data["divergences"]]
    rows = {r["id"]: r for r in data["clauses"]}
    for cid in ("MEM-WIRE.4", "MEM-WIRE.5", "MEM-WIRE.6"):
        assert rows[cid]["skipped"] >= 1, rows[cid]
        assert any("not observable through this target" in x for x in rows[cid]["skip_reasons"])
        assert rows[cid]["failed"] == rows[cid]["indeterminate"] == 0
    steps = {s["name"]: s["steps"] for s in data["scenarios"]}
    fixed_order = steps["checks_run_in_a_fixed_order"]
    assert fixed_order[4]["verdict"] == "skip" and "text/plain" in fixed_order[4]["reason"]
    assert fixed_order[6]["verdict"] == "pass"  # the rest of the scenario still ran
    held = steps["bodies_over_512_kib_are_413"][0]
    assert held["verdict"] == "skip" and "declares 524289 bytes" in held["reason"]
    fences = steps["fences_hold_for_bodies_any_client_sends"]
    assert [s["exchange"]["status"] for s in fences[:3]] == [411, 411, 400]  # stamped: 400
    healthz = steps["wrong_method_on_a_known_path_is_405"]
    assert healthz[4]["exchange"]["status"] == 404 and healthz[4]["verdict"] == "pass"


@pytest.mark.clause("MEM-WIRE.11", "MEM-WIRE.6")
def test_a_timeout_is_blamed_on_its_scenario_and_later_steps_are_not_reached() -> None:
    store = start_bundled_store(TOKEN)
    drips = HostileServer("drips", int(store.url.rsplit(":", 1)[1]), TOKEN)
    try:
        driver = make_driver(drips.url, timeout=0.3)
        scenario = Scenario(
            protocol="memory",
            name="a_fence_scenario",
            clauses=["MEM-WIRE.6"],
            steps=[
                Step(op="retrieve", args={"scopeKey": "{scope:a}", "query": "x", "limit": 1}),
                Step(op="list", args={"scopeKey": "{scope:a}", "limit": 5}),
                Step(op="healthz", args={}),
            ],
        )
        result = run_scenario(driver, scenario)
        driver.close()
    finally:
        drips.stop()
        store.stop()
    assert result.verdict == "indeterminate"
    first = result.outcomes[0]
    assert "MEM-WIRE.6" in first.clauses and "timeout" in first.reason
    assert "MEM-WIRE.6" in result.failed_clauses()
    assert [o.details.get("not_reached") for o in result.outcomes[1:]] == [True, True]
    assert all("not reached" in o.reason for o in result.outcomes[1:])


@pytest.mark.clause("MEM-WIRE.3")
def test_a_probe_the_client_cannot_send_is_a_skip_and_the_scenario_goes_on() -> None:
    store = start_bundled_store(TOKEN)
    try:
        driver = make_driver(store.url, timeout=5)
        scenario = Scenario(
            protocol="memory",
            name="an_unsendable_probe",
            clauses=["MEM-WIRE.3"],
            steps=[
                Step(
                    op="raw",
                    args={"method": "POST", "path": "/list", "headers": {"X-Note": "€ only"}},
                ),
                Step(op="raw", args={"method": "POST", "path": "/list", "auth": "empty"}),
            ],
        )
        result = run_scenario(driver, scenario)
        driver.close()
    finally:
        store.stop()
    first, second = result.outcomes
    assert first.verdict == "skip" and "cannot send" in first.reason
    assert first.details.get("unobservable")
    assert second.verdict == "pass" and second.exchange and second.exchange.status == 401
    assert result.verdict == "pass"
