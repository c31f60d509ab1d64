"""``--window N``: the ledger machine sends up to N steps ahead of the answers on one connection
(pipelined exploration), and nothing a user reads depends on N -- the same verdicts, the same
divergences at the same steps under the same clauses, the same replay files.  A mutant store,
so that there are divergences: a step judged otherwise than predicted makes its batch run again
with that step in turn (``conformance.machines.batches``)."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from conformance.commands.target import start_bundled_store
from conformance.machines import run_machine
from conformance.machines.profiles import PROFILES, Profile
from conformance.targets.base import HttpTarget
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine
from tests.common.ledger_harness import bundled_store, make_driver
from tests.common.loopback import serve_connections
from tests.common.memory_harness import TOKEN
from tests.harness.test_pipelining import TOKEN as PAIR_TOKEN
from tests.harness.test_pipelining import PairServer

SMALL = Profile("window-test", max_examples=6, step_count=20, budget_s=60.0, fixed_seed=7)

MUTANTS = frozenset({"led-supersede-leaves-gap"})


def _run(url: str, window: int, out: Path) -> dict[str, Any]:
    config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store (mutant)")
    outcome = run_engine(
        config,
        spec="ledger",
        profile="ci",
        examples=20,
        allow_dirty=True,  # one store for every run: each example starts from a reset
        report_dir=out,
        quiet=True,
        window=window,
    )
    return outcome.data


def _replays(out: Path) -> dict[str, Any]:
    found = {}
    for path in sorted((out / "replays").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for step in data.get("steps", []):
            step.pop("recorded", None)  # the store's answers: its own ids
        found[path.name] = data
    return found


def _machines(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (m["protocol"], m["verdict"], m["examples"], m["steps"], tuple(m["clauses"]))
        for m in data["machines"]
    ]


def _scenarios(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s["name"], s["verdict"], [o["verdict"] for o in s["steps"]], tuple(s["failed_clauses"]))
        for s in data["scenarios"]
    ]


def _divergences(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(d["name"], d["step"], d["op"], tuple(d["clauses"])) for d in data["divergences"]]


@pytest.mark.slow
@pytest.mark.clause("LED-INT.3", "LED-EDIT.1")
def test_verdicts_divergences_and_replays_do_not_depend_on_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Shrinking runs to its end, not to a time budget (which would make the shrunk replays
    # depend on the machine's speed, whatever the window).
    monkeypatch.setitem(PROFILES, "ci", dataclasses.replace(PROFILES["ci"], shrink_budget_s=600))
    handle = start_bundled_store(TOKEN, quirks=MUTANTS)
    try:
        runs = {w: _run(handle.url, w, tmp_path / f"w{w}") for w in (1, 4, 32)}
    finally:
        handle.stop()
    one = runs[1]
    assert _divergences(one), "the mutant must be caught"
    assert any(s[1] == "fail" for s in _scenarios(one)), "and fail a corpus scenario"
    assert one["exit_code"] == 1
    for w in (4, 32):
        assert _scenarios(runs[w]) == _scenarios(one), w
        assert _machines(runs[w]) == _machines(one), w
        assert _divergences(runs[w]) == _divergences(one), w
        assert runs[w]["clauses"] == one["clauses"], w
        assert _replays(tmp_path / f"w{w}") == _replays(tmp_path / "w1"), w
        assert runs[w]["options"]["window"] == w
    window = runs[32]["machines"][0]["details"]["window"]
    assert window["size"] == 32
    assert window["reruns"] >= 1, "a divergence met ahead must make its batch run again"


class OneAnswerProxy:
    """In front of a store: on each connection, forwards one request and its answer (which
    still says the connection stays open), then closes it without reading further -- a target
    that does not take pipelined requests (a keep-alive close between requests, as a busy
    server or an edge does).  What was written behind the first request is never carried out."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self.upstream = (host, int(port))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._listener = serve_connections(self.sock, self._serve)

    @staticmethod
    def _one_message(conn: socket.socket, buf: bytes) -> bytes:
        """One HTTP message with a Content-Length body read off ``conn`` (after ``buf``)."""
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return buf
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head + b"\r\n\r\n" + rest[:length]

    def _serve(self, conn: socket.socket, _number: int) -> None:
        with conn, socket.create_connection(self.upstream, timeout=10) as up:
            conn.settimeout(10)
            request = self._one_message(conn, b"")
            if not request.strip():
                return
            up.sendall(request)
            conn.sendall(self._one_message(up, b""))

    def stop(self) -> None:
        self.sock.close()


def _explore(url: str, window: int) -> tuple[Any, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    driver = make_driver(url, allow_dirty=True)
    try:
        result = run_machine(
            "ledger", driver, SMALL, window=window, on_step=lambda o: seen.append((o.op, o.verdict))
        )
    finally:
        driver.close()
    return result, seen


@pytest.mark.clause("LED-WIRE.1")
def test_a_target_that_closes_pipelined_connections_gets_one_step_at_a_time() -> None:
    """Requests written behind one the target answers and then closes on are lost (never
    carried out): the steps sent ahead are mispredicted, pipelining is turned off, the batch
    runs again one step at a time, the report says why, and the result is the window-1 one."""
    with bundled_store() as url:
        proxy = OneAnswerProxy(url)
        try:
            alone, alone_steps = _explore(url, 1)
            closing, closing_steps = _explore(proxy.url, 32)
        finally:
            proxy.stop()
    assert alone.verdict == closing.verdict == "pass"
    assert (alone.examples, alone.steps) == (closing.examples, closing.steps)
    # (the progress callback also heard the steps of the try that was abandoned)
    assert closing_steps[-len(alone_steps) :] == alone_steps and len(alone_steps) > 50
    window = closing.details["window"]
    assert window["reruns"] >= 1
    assert "closed the connection" in window["pipelining_off"][0]


@pytest.mark.clause()
def test_requests_written_ahead_are_answered_in_order_on_one_connection() -> None:
    """``write_ahead`` writes behind what is in flight, ``read_ahead`` reads the oldest answer:
    the ``"wait"`` server answers the first request only once the second is in, so a client
    that waited for the first answer before writing the second would be seen."""
    server = PairServer("wait")
    target = HttpTarget(TargetConfig(server.url, Secret(PAIR_TOKEN), timeout_s=8))
    try:
        assert target.write_ahead([("POST", "/a", {}), ("POST", "/b", {})])
        assert target.write_ahead([("POST", "/c", {"x": 1})])
        assert target.ahead == 3
        first = target.read_ahead()
        assert target.write_ahead([("POST", "/d", {})])  # behind answers still unread
        rest = [target.read_ahead() for _ in range(3)]
        assert [(e.status, e.body) for e in [first, *rest]] == [
            (200, {"n": n, "path": p}) for n, p in enumerate("/a /b /c /d".split(), start=1)
        ]
        assert target.ahead == 0 and server.pipelined == [True] and server.connections == 1
        assert target.request("POST", "/e", {}).body == {"n": 5, "path": "/e"}  # and goes on
        assert target.pipelining and not target.pipelining_off
    finally:
        target.close()
        server.stop()


def _run_memory(url: str, window: int, out: Path) -> dict[str, Any]:
    config = TargetConfig(url, Secret(TOKEN), 10.0, label="bundled store (mutant)")
    outcome = run_engine(
        config,
        spec="memory",
        profile="ci",
        examples=10,
        corpus=False,
        report_dir=out,
        quiet=True,
        window=window,
        jobs=2,
        procs=0,  # thread lanes: the requests written ahead are counted in this process
    )
    return outcome.data


@pytest.mark.slow
@pytest.mark.clause("MEM-WRITE.3", "MEM-STORE.7")
def test_the_memory_check_read_goes_out_with_its_step_and_changes_nothing_a_user_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a window, the ``/list`` the memory machine reads after each step that may change a
    scope is written in the same write as that step (one round trip for the two), and the
    verdicts, divergences and replays are those of ``--window 1``."""
    monkeypatch.setitem(PROFILES, "ci", dataclasses.replace(PROFILES["ci"], shrink_budget_s=600))
    written: dict[int, int] = {}
    window_now = [1]
    real = HttpTarget.write_ahead

    def counting(self: HttpTarget, requests: list[tuple[str, str, Any]]) -> bool:
        written[window_now[0]] = written.get(window_now[0], 0) + 1
        return real(self, requests)

    monkeypatch.setattr(HttpTarget, "write_ahead", counting)
    handle = start_bundled_store(TOKEN, quirks=frozenset({"mem-supersede-no-status-flip"}))
    try:
        runs = {}
        for w in (1, 32):
            window_now[0] = w
            runs[w] = _run_memory(handle.url, w, tmp_path / f"m{w}")
    finally:
        handle.stop()
    one, many = runs[1], runs[32]
    assert _divergences(one), "the mutant must be caught"
    assert written.get(1, 0) == 0, "window 1: one request at a time"
    assert written.get(32, 0) > 50, "the check reads went out with their steps"
    assert _scenarios(many) == _scenarios(one)
    assert _machines(many) == _machines(one)
    assert _divergences(many) == _divergences(one)
    assert many["clauses"] == one["clauses"]
    # (a scope's name holds the run id and the count of the lane that ran it)
    scoped = re.compile(r"org:memspec-[0-9a-z.-]+")
    replays = [scoped.sub("SCOPE", json.dumps(_replays(tmp_path / f"m{w}"))) for w in (1, 32)]
    assert replays[0] == replays[1]
