"""The bundled store over real TLS: the whole memory and ledger corpus through a TLS-terminating
loopback proxy (certificates from ``trustme``, nothing mocked), with ``raw_http`` absent as for
every https target — and the verdict is CONFORMANT."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trustme

from conformance.cli import main
from conformance.commands.run import run_pipeline, start_bundled_store
from conformance.drivers.base import Secret, TargetConfig
from conformance.targets.base import RAW_HTTP
from tests.common.memory_harness import TOKEN


def _pump(src: socket.socket, dst: socket.socket, linger: bool) -> None:
    """Relay src -> dst.  ``linger`` (client -> store): once the store has closed, keep
    reading and dropping what the client still sends (a lingering close, as a real TLS
    terminator does) so the store's early answer (a 413) reaches the client intact."""
    dst_open = True
    try:
        while data := src.recv(65536):
            if dst_open:
                try:
                    dst.sendall(data)
                except OSError:
                    if not linger:
                        return
                    dst_open = False
    except OSError:
        pass
    finally:
        if linger:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass


class TlsProxy:
    """TLS on 127.0.0.1 in front of a plain-HTTP upstream: bytes are relayed as they come."""

    def __init__(self, upstream_port: int, ctx: ssl.SSLContext) -> None:
        self.upstream_port = upstream_port
        self.ctx = ctx
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        up = socket.create_connection(("127.0.0.1", self.upstream_port))
        tls.settimeout(30)
        self.conns += [tls, up]
        threading.Thread(target=_pump, args=(up, tls, False), daemon=True).start()
        _pump(tls, up, True)

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


@contextmanager
def tls_store(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    store = start_bundled_store(TOKEN)
    proxy = TlsProxy(int(store.url.rsplit(":", 1)[1]), server_ctx)
    try:
        yield f"https://127.0.0.1:{proxy.port}", ca_file
    finally:
        proxy.close()
        store.stop()


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.3", "MEM-WIRE.5", "MEM-WIRE.6", "LED-WIRE.1")
def test_the_whole_corpus_over_tls_finds_the_bundled_store_conformant(tmp_path: Path) -> None:
    with tls_store(tmp_path) as (url, ca_file):
        config = TargetConfig(url, Secret(TOKEN), 10.0, ca_file=str(ca_file), label=url)
        outcome = run_pipeline(config, spec="all", machines=False, quiet=True)
    data = outcome.data
    assert outcome.exit_code == 0, [d["reason"] for d in data["divergences"]][:5]
    assert RAW_HTTP not in data["capabilities"]["memory"]  # forced off for https
    by_name = {s["name"]: s for s in data["scenarios"]}
    # The auth probes, the empty bearer included, went over TLS and were judged.
    assert by_name["data_routes_need_the_bearer"]["verdict"] == "pass"
    assert [st["exchange"]["status"] for st in by_name["data_routes_need_the_bearer"]["steps"]][
        :4
    ] == [401, 401, 401, 401]
    # The fences in the form any client can send: chunked 411, a 524289-byte body 413.
    fences = by_name["fences_hold_for_bodies_any_client_sends"]
    assert fences["verdict"] == "pass"
    assert [st["exchange"]["status"] for st in fences["steps"]][:5] == [411, 411, 411, 413, 200]
    assert sum(1 for s in data["scenarios"] if s["verdict"] == "pass") >= 120
    # Only the raw-socket probes are skipped, each with its reason.
    for s in data["scenarios"]:
        if s["verdict"] == "skip":
            assert "raw_http" in s["reason"] or "lacks" in s["reason"], s


@pytest.mark.clause("MEM-WIRE.1")
def test_ca_cert_is_needed_for_a_private_ca_and_is_used_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TLS_TOKEN", TOKEN)
    scenario = Path(__file__).resolve().parents[2] / "conformance/corpus/memory"
    scenario = scenario / "data_routes_need_the_bearer.json"
    with tls_store(tmp_path) as (url, ca_file):
        common = ["replay", str(scenario), "--target", url, "--token-env", "TLS_TOKEN"]
        assert main([*common, "--ca-cert", str(ca_file)]) == 0
        out, _ = capsys.readouterr()
        assert "conformant" in out and TOKEN not in out
        assert main(common) == 2  # the system CAs do not know this one
        _, err = capsys.readouterr()
        assert len(err.strip().splitlines()) == 1 and "TLS" in err and "Traceback" not in err
    assert main([*common, "--ca-cert", str(tmp_path / "missing.pem")]) == 2
    _, err = capsys.readouterr()
    assert "--ca-cert" in err and len(err.strip().splitlines()) == 1
