"""The ledger's JSON-RPC form (``conformance/targets/jsonrpc.py``): requests, answers mapped onto
the binding's, notifications ignored, what is not JSON-RPC, the bounds, the token, the
handshake -- against small daemons on 127.0.0.1 and on temporary Unix sockets."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.server import ServerConnection

from conformance import scrub
from conformance.cli import main
from conformance.errors import TargetError, TokenRefused
from conformance.oracle.ledger.clauses import CODE_STATUS
from conformance.targets.base import SILENT_LIMIT, TOO_LARGE, load_target_profile
from conformance.targets.jsonrpc import (
    ERROR_STATUS,
    LedgerSocketTarget,
    check_target_url,
    ledger_target,
)
from conformance.targets.ledger import NO_PARAMS, LedgerTarget
from conformance.vocabulary import Secret, TargetConfig
from tests.common.jsonrpc_daemon import Daemon, Honest

TOKEN = "Rpc-Tok3n/xYw2vKq9Zz"


def _target(url: str, timeout: float = 5.0, **kw: Any) -> LedgerSocketTarget:
    return LedgerSocketTarget(TargetConfig(url, Secret(TOKEN), timeout, **kw))


@pytest.fixture(params=["tcp", "unix"])
def daemon(request: pytest.FixtureRequest) -> Any:
    with Daemon(unix=request.param == "unix", token=TOKEN) as d:
        yield d


@pytest.mark.clause("LED-WIRE.20")
def test_each_call_is_a_request_of_the_same_name_and_params_with_the_token_on_the_upgrade(
    daemon: Daemon,
) -> None:
    with _target(daemon.url) as t:
        assert t.call("memory/save_memory_record", {"body": "tea"}).status == 200
        assert t.test("reset", {}).body == {"ok": True}
        assert t.post_bytes("memory/get_consolidation_settings", b"").status == 200
    first, second, third = daemon.requests
    assert first == {
        "jsonrpc": "2.0",
        "id": first["id"],
        "method": "memory/save_memory_record",
        "params": {"body": "tea"},
    }
    assert isinstance(first["id"], int) and second["id"] == first["id"] + 1
    assert second["method"] == "_test/reset" and second["params"] == {}
    assert "params" not in third  # empty params text: no params member
    assert daemon.connections == 1  # one connection carries every call
    assert daemon.headers[0]["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.clause("LED-WIRE.20", "LED-WIRE.12")
def test_a_method_without_params_goes_out_without_a_params_member(daemon: Daemon) -> None:
    with _target(daemon.url) as t:
        assert t.test("reset", NO_PARAMS).body == {"ok": True}
        assert t.call("memory/get_consolidation_settings", NO_PARAMS).status == 200
        t.probe()  # probes the controls with _test/packet, without params
    sent = {r["method"]: r for r in daemon.requests}
    for method in ("_test/reset", "memory/get_consolidation_settings", "_test/packet"):
        assert "params" not in sent[method], sent[method]


@pytest.mark.clause("LED-WIRE.21")
def test_results_and_errors_become_the_answers_the_http_binding_gives(daemon: Daemon) -> None:
    with _target(daemon.url) as t:
        saved = t.call("memory/save_memory_record", {"body": "tea"})
        assert saved.status == 200 and saved.body["body"] == "tea"
        unknown = t.call("memory/save_memory_record", {"body": "x", "tags": []})
        assert unknown.status == 400 and unknown.body["error"]["code"] == -32602
        missing = t.call("memory/delete_memory_record", {"recordId": "nope"})
        assert missing.status == 409 and missing.body["error"]["code"] == 1000
        nowhere = t.call("memory/forget_everything", {})
        assert nowhere.status == 404 and set(nowhere.body) == {"error"}
        # Params that are not JSON: the daemon cannot read the request and answers id null.
        broken = t.post_bytes("memory/save_memory_record", b'{"body": "x"')
        assert broken.status == 400 and broken.body["error"]["code"] == -32700


@pytest.mark.clause("LED-WIRE.21")
def test_the_status_of_each_code_is_the_one_the_oracle_judges() -> None:
    for code, status in CODE_STATUS.items():
        assert ERROR_STATUS[code] == status


def _pushy(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
    """Notifications, a request of the daemon's own and an answer to another id first."""
    conn.send('{"jsonrpc":"2.0","method":"memory/changed","params":{"n":1}}')
    conn.send('{"jsonrpc":"2.0","method":"ui/ask","id":"srv-1","params":{}}')
    conn.send(json.dumps({"jsonrpc": "2.0", "id": 999999, "result": {"stale": True}}))
    conn.send('{"jsonrpc":"2.0","id":null,"result":{"not":"an error"}}')
    conn.send('{"jsonrpc":"2.0","result":{"no":"id"}}')
    text = answer()
    assert text is not None
    conn.send(text)
    conn.send('{"jsonrpc":"2.0","method":"memory/changed"}')


@pytest.mark.clause("LED-WIRE.22")
def test_notifications_and_stray_answers_are_ignored() -> None:
    with Daemon(_pushy, token=TOKEN) as d, _target(d.url) as t:
        for i in range(3):
            ex = t.call("memory/save_memory_record", {"body": f"note {i}"})
            assert ex.status == 200 and ex.body["body"] == f"note {i}", ex
        assert d.connections == 1


_GARBAGE: list[str | bytes] = [
    b"\x00\x01binary",
    "not json at all",
    '{"jsonrpc":"2.0","id":1,"result":NaN}',
    "[1, 2, 3]",
    '{"id":1,"result":{}}',  # no "jsonrpc": "2.0"
    '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}',
    '{"jsonrpc":"2.0","id":1}',
    '{"jsonrpc":"2.0","id":1,"error":"a string"}',
    "[" * 100 + "]" * 100,
]


@pytest.mark.clause("LED-WIRE.23")
@pytest.mark.parametrize("garbage", _GARBAGE, ids=range(len(_GARBAGE)))
def test_a_message_that_is_not_json_rpc_answers_nothing_and_ends_the_connection(
    garbage: str | bytes,
) -> None:
    sent = {"n": 0}

    def behave(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
        sent["n"] += 1
        if sent["n"] == 1:
            # The id of the request: a frame that would otherwise answer it.
            out = (
                garbage.replace('"id":1', f'"id":{request["id"]}')
                if isinstance(garbage, str)
                else garbage
            )
            conn.send(out)
        else:
            honest_text = answer()
            assert honest_text is not None
            conn.send(honest_text)

    with Daemon(behave, token=TOKEN) as d, _target(d.url) as t:
        ex = t.call("memory/save_memory_record", {"body": "x"})
        assert ex.status is None and ex.body is None
        assert ex.transport_error and ex.transport_error.startswith("not a JSON-RPC 2.0 answer")
        after = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
        assert after.status == 200 and d.connections == 2  # a fresh connection


@pytest.mark.clause("LED-WIRE.23")
def test_a_daemon_that_hangs_costs_one_deadline_a_call_and_then_counts_as_gone() -> None:
    released = threading.Event()

    def hang(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
        released.wait(30)

    with Daemon(hang, token=TOKEN) as d, _target(d.url, timeout=0.4) as t:
        d.on_stop(released.set)
        started = time.monotonic()
        for _ in range(SILENT_LIMIT):
            ex = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
            assert ex.status is None and ex.timed_out and "timeout" in (ex.transport_error or "")
        assert t.gone
        ex = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
        assert (ex.transport_error or "").startswith("not sent")
        assert time.monotonic() - started < SILENT_LIMIT * (0.4 + 1.0) + 2


@pytest.mark.clause("LED-WIRE.23")
def test_a_message_over_the_bound_is_cut_and_reported_and_a_flood_of_notifications_times_out() -> (
    None
):
    def flood(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
        if request.get("method") == "memory/save_memory_record":
            big = "x" * 300_000
            conn.send(f'{{"jsonrpc":"2.0","id":{request["id"]},"result":"{big}"}}')
        else:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                conn.send('{"jsonrpc":"2.0","method":"tick","params":{}}')

    with (
        Daemon(flood, token=TOKEN, max_size=1 << 22) as d,
        _target(d.url, timeout=1.0, max_response_bytes=100_000) as t,
    ):
        big = t.call("memory/save_memory_record", {"body": "x"})
        assert big.status is None and (big.transport_error or "").startswith(TOO_LARGE)
        started = time.monotonic()
        ticking = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
        assert ticking.timed_out and time.monotonic() - started < 2.5


@pytest.mark.clause("LED-WIRE.20")
def test_an_echoed_token_is_judged_raw_and_shown_scrubbed() -> None:
    def echo(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
        conn.send(json.dumps({"jsonrpc": "2.0", "method": "log", "params": [TOKEN]}))
        conn.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": 1000, "message": f"bad {TOKEN} and {TOKEN[::-1]}"},
                }
            )
        )

    with Daemon(echo, token=TOKEN) as d, _target(d.url) as t:
        ex = t.call("memory/save_memory_record", {"body": "x"})
    assert TOKEN in ex.body["error"]["message"]  # judged exactly as sent
    shown = json.dumps(scrub.clean(ex.to_json()))
    assert TOKEN not in shown and "Tok3n" not in shown
    assert ("Authorization", "Bearer [token]") in ex.request_headers


@pytest.mark.clause("LED-WIRE.20")
def test_a_refused_upgrade_is_the_binding_401_and_the_probe_names_the_token() -> None:
    with Daemon(token="another-token-entirely") as d:
        t = _target(d.url)
        ex = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
        assert ex.status == 401 and ex.body["error"]["code"] == -32600
        with pytest.raises(TokenRefused):
            t.probe()
        t.close()


@pytest.mark.clause("LED-WIRE.24")
def test_the_profile_handshake_is_sent_once_per_connection_and_must_be_a_result(
    tmp_path: Path,
) -> None:
    started: dict[int, bool] = {}

    def gated(conn: ServerConnection, request: dict[str, Any], answer: Honest) -> None:
        key = id(conn)
        if request.get("method") == "initialize":
            ok = request.get("params") == {"client": "memspec", "v": [1, 2]}
            started[key] = ok
            reply: dict[str, Any] = (
                {"result": {"server": "fake"}}
                if ok
                else {"error": {"code": -32602, "message": "bad handshake"}}
            )
            conn.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], **reply}))
        elif not started.get(key):
            conn.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "error": {"code": -32002, "message": "not initialized"},
                    }
                )
            )
        else:
            text = answer()
            assert text is not None
            conn.send(text)

    profile = tmp_path / "p.toml"
    profile.write_text(
        '[jsonrpc.initialize]\nmethod = "initialize"\nparams = { client = "memspec", v = [1, 2] }\n'
    )
    init = load_target_profile(profile).initialize
    assert init == ("initialize", '{"client":"memspec","v":[1,2]}')
    with Daemon(gated, token=TOKEN, unix=True) as d:
        with _target(d.url, initialize=init) as t:
            assert "ledger.test_control" in t.probe()
            assert t.call("memory/save_memory_record", {"body": "x"}).status == 200
        methods = [r.get("method") for r in d.requests]
        assert methods.count("initialize") == 1 and methods[0] == "initialize"
        with _target(d.url, initialize=("initialize", '{"client":"other"}')) as t:
            ex = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
            assert ex.status is None and "handshake was refused" in (ex.transport_error or "")
            with pytest.raises(TargetError):
                t.probe()


@pytest.mark.clause("LED-WIRE.20")
def test_wss_trusts_the_ca_file(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = __import__("ssl").SSLContext(__import__("ssl").PROTOCOL_TLS_SERVER)
    cert.configure_cert(server_ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with Daemon(tls=server_ctx, token=TOKEN) as d:
        with _target(d.url, ca_file=str(ca_file)) as t:
            assert t.call("memory/list_memory_records", {"scopeKey": "account:local"}).status == 200
        with _target(d.url) as t:  # the system CAs do not know this one
            ex = t.call("memory/list_memory_records", {"scopeKey": "account:local"})
            assert (
                ex.status is None
                and "TLS" in (ex.transport_error or "")
                or "SSL" in str(ex.transport_error)
            )


@pytest.mark.clause("LED-WIRE.20")
def test_target_urls_of_the_json_rpc_form() -> None:
    assert check_target_url("ws://u:p@127.0.0.1:9/rpc") == "ws://127.0.0.1:9/rpc"
    assert check_target_url("WS://127.0.0.1:9") == "ws://127.0.0.1:9/"
    assert check_target_url("ws+unix:///run/app/ledger.sock") == "ws+unix:///run/app/ledger.sock"
    assert check_target_url("http://127.0.0.1:9/") == "http://127.0.0.1:9"
    for bad in (
        "ws+unix://host/x.sock",
        "ws+unix:///",
        "ws://127.0.0.1:9/?q=1",
        "ws://127.0.0.1:0/",
        "ws://127.0.0.1:99999/",
        "ws:///nohost",
        "ws://127.0.0.1:9/a b",
    ):
        with pytest.raises(TargetError):
            check_target_url(bad)
    assert isinstance(ledger_target(TargetConfig("ws://127.0.0.1:9/")), LedgerSocketTarget)
    assert isinstance(ledger_target(TargetConfig("http://127.0.0.1:9")), LedgerTarget)


@pytest.mark.clause("LED-WIRE.24")
@pytest.mark.parametrize(
    "text",
    [
        "[jsonrpc]\nother = 1\n",
        "[jsonrpc.initialize]\nparams = {}\n",
        '[jsonrpc.initialize]\nmethod = "i"\nparams = "x"\n',
        '[jsonrpc.initialize]\nmethod = "i"\nextra = 1\n',
        '[jsonrpc.initialize]\nmethod = "i"\nparams = { at = 1979-05-27 }\n',
    ],
)
def test_a_bad_handshake_table_is_a_profile_error(tmp_path: Path, text: str) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(text)
    with pytest.raises(TargetError):
        load_target_profile(profile)


@pytest.mark.clause("LED-WIRE.20")
@pytest.mark.parametrize("url", ["ws://127.0.0.1:9/", "ws+unix:///nonexistent/memspec/ledger.sock"])
def test_an_unreachable_json_rpc_target_is_one_line_exit_2(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--spec", "ledger", "--quiet", "--target", url, "--report", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "cannot connect" in err and "Traceback" not in out + err


@pytest.mark.clause("LED-WIRE.24")
def test_a_handshake_for_an_http_target_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('[jsonrpc.initialize]\nmethod = "initialize"\n')
    code = main(
        ["run", "--spec", "ledger", "--quiet", "--target", "http://127.0.0.1:9",
         "--target-profile", str(profile)]
    )  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2 and "JSON-RPC target" in err
