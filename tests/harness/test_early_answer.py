"""A store that answers a large body before reading it (the size fence's early 413) and closes:
through an intermediary the client is still sending when the answer comes.  The answer read
while sending is the request's answer; an answer lost on the way is asked for once more on a
fresh connection (a route that changes nothing); one lost twice makes the run INDETERMINATE
(exit 3), never NOT CONFORMANT -- a transport accident is not the store's failure.
"""

from __future__ import annotations

import io
import shutil
import socket
import ssl
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trustme

from benchmarks.delay_proxy import DelayProxy
from conformance.commands.target import start_bundled_store
from conformance.drivers.memory.driver import MemoryDriver
from conformance.drivers.memory.raw import build_raw, sent_again
from conformance.runner import CORPUS_DIR, run_scenario
from conformance.scenario import load_scenario
from conformance.targets.base import HttpTarget
from conformance.vocabulary import Exchange, RunContext, Secret, TargetConfig
from tests.common.early_answer_proxy import EarlyAnswerProxy
from tests.common.engine import run_engine
from tests.common.loopback import serve_connections

TOKEN = "early-answer-token-7c2e41"
FENCES = "fences_hold_for_bodies_any_client_sends"
#: Larger than every kernel buffer between client and server on loopback: a client that writes
#: it all before reading blocks while nobody reads.
HUGE = 32 * 1024 * 1024


def _fences() -> object:
    return load_scenario(CORPUS_DIR / "memory" / f"{FENCES}.json")


def _driver(url: str, timeout: float = 5.0) -> MemoryDriver:
    return MemoryDriver(
        RunContext(run_id="memspec-earlytest", target=TargetConfig(url, Secret(TOKEN), timeout))
    )


@contextmanager
def store_behind(mode: str, lose_first: int | None = None) -> Iterator[EarlyAnswerProxy]:
    store = start_bundled_store(TOKEN)
    proxy = EarlyAnswerProxy(store.url, mode, lose_first)  # type: ignore[arg-type]
    try:
        yield proxy
    finally:
        proxy.stop()
        store.stop()


@contextmanager
def answers_early_and_stops_reading(
    ctx: ssl.SSLContext | None = None,
) -> Iterator[str]:
    """A server that answers 413 on the head and then neither reads nor closes (10 s)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    done = threading.Event()

    def serve(conn: socket.socket, _n: int) -> None:
        try:
            if ctx is not None:
                conn = ctx.wrap_socket(conn, server_side=True)
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            body = b'{"error":"payload too large"}'
            conn.sendall(
                b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            done.wait(10)
        except OSError:
            pass
        finally:
            conn.close()

    serve_connections(sock, serve)
    try:
        yield f"{'https' if ctx else 'http'}://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        done.set()
        sock.close()


@pytest.mark.clause("MEM-WIRE.6")
@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_an_answer_that_comes_while_the_body_is_still_sent_is_the_answer(
    tls: bool, tmp_path: Path
) -> None:
    """32 MiB to a server that answered 413 on the head and reads nothing more: the 413 is
    the answer at once, not a timeout after the client blocked writing a body nobody reads."""
    ctx = None
    ca_file = ""
    if tls:
        ca = trustme.CA()
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(ctx)
        ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        ca_file = str(tmp_path / "ca.pem")
    with answers_early_and_stops_reading(ctx) as url:
        target = HttpTarget(TargetConfig(url, Secret(TOKEN), 3.0, ca_file=ca_file or None))
        started = time.monotonic()
        try:
            if tls:  # no raw requests over TLS: the keep-alive client, the same sender
                ex = target.request("POST", "/retrieve", content=b" " * HUGE)
            else:
                ex = target.raw(
                    "POST",
                    "/retrieve",
                    headers=[("Content-Length", str(HUGE))],
                    body=b" " * HUGE,
                )
        finally:
            target.close()
    assert ex.status == 413, ex.transport_error
    assert ex.body == {"error": "payload too large"}
    assert time.monotonic() - started < 2.5  # long before the 3 s deadline


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.6")
@pytest.mark.parametrize("mode", ["reset", "stall"])
def test_the_fence_scenario_passes_when_the_early_answer_is_followed_by_a_reset_or_silence(
    mode: str,
) -> None:
    with store_behind(mode) as proxy:
        driver = _driver(proxy.url)
        try:
            result = run_scenario(driver, _fences())  # type: ignore[arg-type]
        finally:
            driver.close()
    assert proxy.stats["early"] == 1  # the 524289-byte step was answered on its head
    assert result.verdict == "pass", result.reason


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.6")
def test_an_early_answer_lost_once_is_asked_for_again_on_a_fresh_connection() -> None:
    with store_behind("lose", lose_first=1) as proxy:
        driver = _driver(proxy.url)
        try:
            result = run_scenario(driver, _fences())  # type: ignore[arg-type]
        finally:
            driver.close()
    assert proxy.stats == {"early": 2, "lost": 1}
    assert result.verdict == "pass", result.reason
    assert result.outcomes[3].exchange is not None
    assert result.outcomes[3].exchange.status == 413


@pytest.mark.clause("MEM-WIRE.6")
def test_only_a_request_that_changes_nothing_is_sent_again() -> None:
    lost = Exchange("POST", "/x", None, None, None, transport_error="RemoteDisconnected: x")
    timed_out = Exchange("POST", "/x", None, None, None, transport_error="t", timed_out=True)
    answered = Exchange("POST", "/x", None, 413, {"error": "too large"})

    def req(path: str) -> object:
        return build_raw(
            {"method": "POST", "path": path, "body": "x"}, frozenset(), lambda *a: None
        )

    assert sent_again(req("/retrieve"), lost)  # type: ignore[arg-type]
    assert sent_again(req("/list"), lost)  # type: ignore[arg-type]
    assert not sent_again(req("/write"), lost)  # type: ignore[arg-type]  # may be carried out
    assert not sent_again(req("/forget"), lost)  # type: ignore[arg-type]
    assert not sent_again(req("/retrieve"), timed_out)  # type: ignore[arg-type]
    assert not sent_again(req("/retrieve"), answered)  # type: ignore[arg-type]


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.6")
def test_an_answer_lost_twice_makes_the_run_indeterminate_never_not_conformant(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "memory").mkdir(parents=True)
    shutil.copy(CORPUS_DIR / "memory" / f"{FENCES}.json", corpus / "memory")
    out = io.StringIO()
    report = tmp_path / "report"
    with store_behind("lose") as proxy:
        config = TargetConfig(proxy.url, Secret(TOKEN), 5.0, label=proxy.url)
        outcome = run_engine(
            config,
            spec="memory",
            machines=False,
            out=out,
            corpus_dir=corpus,
            quiet=True,
            report_dir=report,
        )
    assert proxy.stats == {"early": 2, "lost": 2}  # sent twice, never a third time
    data = outcome.data
    assert outcome.exit_code == data["exit_code"] == 3
    [scenario] = data["scenarios"]
    assert scenario["verdict"] == "indeterminate"
    assert "sent twice, on two connections" in scenario["reason"]
    assert all(row["failed"] == 0 for row in data["clauses"])
    text = out.getvalue()
    assert "\nINDETERMINATE: 1 result(s) got no answer from the target" in text
    assert "NOT CONFORMANT" not in text
    assert "<h1 class='bad'>Indeterminate</h1>" in (report / "report.html").read_text()
    [case] = ET.parse(report / "junit.xml").getroot().iter("testcase")
    assert [e.get("type") for e in case.iter("error")] == ["indeterminate"]
    assert not list(case.iter("failure"))


#: Runs of the fence scenario in the loop through each proxy.
LOOPS = 50


@pytest.mark.slow
@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.6")
def test_the_fence_scenario_is_green_every_time_through_a_proxy() -> None:
    """The fence scenario 50 times through the delay proxy (0 ms) and 50 times through a
    proxy that loses every other early answer: green each time."""
    store = start_bundled_store(TOKEN)
    verdicts: dict[str, list[str]] = {"delay": [], "lose-every-other": []}
    try:
        with DelayProxy(store.url, 0.0) as delay:
            for _ in range(LOOPS):
                driver = _driver(delay.url)
                verdicts["delay"].append(run_scenario(driver, _fences()).verdict)  # type: ignore[arg-type]
                driver.close()
        for _ in range(LOOPS):
            with EarlyAnswerProxy(store.url, "lose", lose_first=1) as lossy:
                driver = _driver(lossy.url)
                verdicts["lose-every-other"].append(run_scenario(driver, _fences()).verdict)  # type: ignore[arg-type]
                driver.close()
    finally:
        store.stop()
    assert {k: v.count("pass") for k, v in verdicts.items()} == {
        "delay": LOOPS,
        "lose-every-other": LOOPS,
    }, verdicts
