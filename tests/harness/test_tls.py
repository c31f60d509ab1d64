"""The bundled store over real TLS: the whole memory and ledger corpus through a TLS-terminating
loopback proxy (certificates from ``trustme``, nothing mocked), with ``raw_http`` absent as for
every https target — and the verdict is CONFORMANT.  Pipelining over TLS (issue 11): 500
pipelined pairs lose no answer and carry out no save twice; a connection the store closed while
idle gets no pair written into it; an answer lost on the way (the proxy told to lose one) is a
transport verdict, never a divergence, and the request is not sent again."""

from __future__ import annotations

import datetime
import io
import shutil
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme

from benchmarks.delay_proxy import TlsTerminator
from conformance.cli import main
from conformance.commands.target import start_bundled_store
from conformance.embedded.server import start_server
from conformance.runner import CORPUS_DIR
from conformance.targets.base import RAW_HTTP
from conformance.targets.ledger import LedgerTarget
from conformance.vocabulary import Exchange, Secret, TargetConfig
from tests.common.engine import run_engine
from tests.common.memory_harness import TOKEN


@contextmanager
def tls_stack(
    tmp_path: Path, idle_timeout: float | None = None, lose: frozenset[int] = frozenset()
) -> Iterator[tuple[str, Path, TlsTerminator, Any]]:
    """The bundled store behind a :class:`TlsTerminator`: (https URL, CA file, terminator,
    store handle).
    ``idle_timeout``: the store closes a connection idle that long between requests; ``lose``:
    see :func:`benchmarks.delay_proxy.tls_relay`."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    if idle_timeout is None:
        store = start_bundled_store(TOKEN)
    else:
        store = start_server(token=TOKEN, test_control=True, idle_timeout=idle_timeout)
    proxy = TlsTerminator(store.url, server_ctx, lose)
    try:
        yield f"https://127.0.0.1:{proxy.port}", ca_file, proxy, store
    finally:
        proxy.stop()
        store.stop()


@contextmanager
def tls_store(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with tls_stack(tmp_path) as (url, ca_file, _, _):
        yield url, ca_file


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.3", "MEM-WIRE.5", "MEM-WIRE.6", "LED-WIRE.1")
def test_the_whole_corpus_over_tls_finds_the_bundled_store_conformant(tmp_path: Path) -> None:
    with tls_store(tmp_path) as (url, ca_file):
        config = TargetConfig(url, Secret(TOKEN), 10.0, ca_file=str(ca_file), label=url)
        outcome = run_engine(config, spec="all", machines=False, quiet=True)
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


PAIRS = 500
START = datetime.datetime(2026, 3, 2, 9, tzinfo=datetime.UTC)


def _pin_and_save(target: LedgerTarget, i: int) -> tuple[Exchange, Exchange]:
    """The ledger driver's pipelined pair: the clock pinned at START + i s, then a save."""
    at = (START + datetime.timedelta(seconds=i)).isoformat(timespec="milliseconds")
    return target.test_then_call(
        "set_clock",
        {"now": at.replace("+00:00", "Z")},
        "memory/save_memory_record",
        {"body": f"pair {i}"},
    )


def _saved(store: Any) -> list[str]:
    ledger = store.ledger
    with ledger.lock:
        return sorted(r[0] for r in ledger.store.conn.execute("SELECT body FROM memory_records"))


@pytest.mark.clause("LED-WIRE.1", "LED-WIRE.7")
def test_pipelined_pairs_over_tls_lose_no_answer_and_carry_out_no_save_twice(
    tmp_path: Path,
) -> None:
    """Issue 11: over TLS a pipelined pair (clock pin + save) now and then lost the save's
    answer although the store had carried it out.  The cause was the test's TLS proxy (now
    :func:`benchmarks.delay_proxy.tls_relay`), not the client; 500 pairs in a row on one
    kept-alive TLS connection: every answer arrives, every save is carried out exactly once,
    the connection is never dropped."""
    with tls_stack(tmp_path) as (url, ca_file, proxy, store):
        target = LedgerTarget(TargetConfig(url, Secret(TOKEN), 10.0, ca_file=str(ca_file)))
        try:
            assert target.pipelining  # https pipelines like http
            settings = {"mode": "off", "maxRecords": 10000}
            assert target.call("memory/update_consolidation_settings", settings).status == 200
            lost = []
            for i in range(PAIRS):
                pin, save = _pin_and_save(target, i)
                if (pin.status, save.status) != (200, 200):
                    lost.append((i, pin.transport_error, save.transport_error))
            still_pipelining = target.pipelining  # never turned off by a lost answer
        finally:
            target.close()
        relayed = dict(proxy.stats)
        saved = _saved(store)
    assert lost == []
    assert still_pipelining
    assert saved == sorted(f"pair {i}" for i in range(PAIRS))  # each save once
    assert proxy.connections == 1  # one kept-alive connection, never lost and reopened
    assert relayed.get("errors", 0) == 0, relayed
    assert relayed.get("pipelined", 0) >= PAIRS * 9 // 10  # the pairs really went pipelined


@pytest.mark.clause("LED-WIRE.1", "MEM-WIRE.19")
def test_a_tls_connection_the_store_closed_while_idle_gets_no_pair_written_into_it(
    tmp_path: Path,
) -> None:
    """The store closes a kept connection idle for 0.3 s (the proxy passes the close on): the
    client sees that before writing the next pair (bytes already decrypted and the TLS close
    checked without blocking), so the pair goes out whole on a fresh connection."""
    with tls_stack(tmp_path, idle_timeout=0.3) as (url, ca_file, proxy, store):
        target = LedgerTarget(TargetConfig(url, Secret(TOKEN), 10.0, ca_file=str(ca_file)))
        try:
            answers = [ex.status for ex in _pin_and_save(target, 0)]
            deadline = time.monotonic() + 10
            while not proxy.stats.get("closes_passed_on") and time.monotonic() < deadline:
                time.sleep(0.02)  # the store closes the idle connection after 0.3 s
            time.sleep(0.05)  # and the proxy's close reaches the client
            assert proxy.stats.get("closes_passed_on") == 1
            answers += [ex.status for ex in _pin_and_save(target, 1)]
            still_pipelining = target.pipelining
        finally:
            target.close()
        saved = _saved(store)
    assert answers == [200, 200, 200, 200] and still_pipelining
    assert saved == ["pair 0", "pair 1"]
    assert proxy.connections == 2


@pytest.mark.clause("LED-WIRE.1", "LED-BUDGET.5")
def test_a_pipelined_answer_lost_on_the_way_is_indeterminate_never_a_divergence(
    tmp_path: Path,
) -> None:
    """What the proxy of issue 11 did, on purpose: the store carries out a pipelined save and
    its answer is lost with the connection.  The save is not sent again (carried out once), the
    step and the scenario are indeterminate (a transport verdict: no clause failed), and the
    console says INDETERMINATE, not DIVERGES."""
    name = "a_refused_save_evicts_nothing.json"
    corpus = tmp_path / "corpus"
    (corpus / "ledger").mkdir(parents=True)
    shutil.copy(CORPUS_DIR / "ledger" / name, corpus / "ledger" / name)
    out = io.StringIO()
    with tls_stack(tmp_path, lose=frozenset({2})) as (url, ca_file, proxy, store):
        config = TargetConfig(url, Secret(TOKEN), 10.0, ca_file=str(ca_file), label=url)
        outcome = run_engine(
            config, spec="ledger", machines=False, out=out, corpus_dir=corpus, quiet=True
        )
        saved = _saved(store)
    data = outcome.data
    assert proxy.stats.get("lost") == 1
    assert saved == ["newer", "oldest"]  # the lost save ("newer") carried out once, not twice
    [scenario] = data["scenarios"]
    [divergence] = data["divergences"]
    assert scenario["verdict"] == divergence["verdict"] == "indeterminate"
    assert divergence["step"] == 2 and divergence["exchange"]["status"] is None
    assert "not sent again" in divergence["reason"]
    assert data["summary"]["indeterminate"] == 1
    assert all(row["failed"] == 0 for row in data["clauses"])  # no clause failed
    [row] = [r for r in data["clauses"] if r["indeterminate"]]
    assert row["id"] == "LED-BUDGET.5"
    text = out.getvalue()
    assert "INDETERMINATE scenario a_refused_save_evicts_nothing" in text
    assert "DIVERGES" not in text and "✗" not in text
    assert "1 not judged: no answer" in text
    # Neither conformant nor not: a scenario could not be judged, and no clause failed.
    assert outcome.exit_code == data["exit_code"] == 3
    assert "\nINDETERMINATE: 1 result(s) got no answer from the target" in text
    assert "NOT CONFORMANT" not in text
