"""The bundled store's transport: routes, check precedence, bearer auth, the size fence,
validation (400 families), keep-alive and the access log -- all over real HTTP."""

from __future__ import annotations

import io
import json
import socket
import time
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference.memory.store import empty_store
from reference.memory.wire import handle, make_request
from tests.common.memory_store import (
    AUTH,
    TOKEN,
    RawResponse,
    Store,
    StoreFactory,
    fact,
    http_request,
    raw_exchange,
    unique_scope,
)

AUTH_H = {"Authorization": f"Bearer {TOKEN}"}
DATA_ROUTES = ("/retrieve", "/write", "/list", "/forget")


def _valid_body(route: str, scope: str) -> dict[str, Any]:
    bodies: dict[str, dict[str, Any]] = {
        "/retrieve": {"scopeKey": scope, "query": "deploy", "limit": 5},
        "/write": {"scopeKey": scope, "records": [fact("deploy with make deploy")]},
        "/list": {"scopeKey": scope, "limit": 5},
        "/forget": {"scopeKey": scope, "id": f"mem:{scope}:1"},
    }
    return bodies[route]


def _raw_post(url: str, route: str, body: Any, headers: dict[str, str]) -> RawResponse:
    """POST over a raw socket (httpx refuses some malformed header values we must send)."""
    (r,) = raw_exchange(url, http_request("POST", route, json.dumps(body).encode(), headers))
    return r


# --------------------------------------------------------------------------- routes


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.2", "MEM-WIRE.8")
def test_healthz_is_open_and_get_only(store: Store) -> None:
    r = httpx.get(store.url + "/healthz")  # no bearer at all
    assert r.status_code == 200
    assert r.json()["ok"] is True
    assert r.headers["content-type"].startswith("application/json")
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        r = httpx.request(method, store.url + "/healthz")
        assert r.status_code == 405, method
        assert r.json() == {"error": "method not allowed"}
        assert r.headers["allow"] == "GET"
    # HEAD is not GET either; its 405 carries no body.
    r = httpx.head(store.url + "/healthz")
    assert r.status_code == 405 and r.content == b""


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.4")
@pytest.mark.parametrize(
    "path",
    ["/", "/retrieve/", "/RETRIEVE", "/healthz/", "/write/x", "/v1/retrieve", "/forgetx", "//list"],
)
def test_unknown_paths_are_404_before_anything_else(store: Store, path: str) -> None:
    # Unknown path wins over the method, the bearer and the fence.
    for method in ("GET", "POST", "DELETE"):
        r = httpx.request(method, store.url + path)
        assert r.status_code == 404, (method, path)
        assert r.json() == {"error": "not found"}


@pytest.mark.clause("MEM-WIRE.2", "MEM-WIRE.4")
@pytest.mark.parametrize("route", DATA_ROUTES)
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_data_routes_are_post_only_and_405_precedes_401(
    store: Store, route: str, method: str
) -> None:
    r = httpx.request(method, store.url + route)  # unauthenticated: 405 still comes first
    assert r.status_code == 405
    assert r.json() == {"error": "method not allowed"}
    assert r.headers["allow"] == "POST"


@pytest.mark.clause("MEM-WIRE.1")
def test_query_string_does_not_change_the_route(store: Store, scope: str) -> None:
    r = store.client.post("/list?limit=1", json={"scopeKey": scope, "limit": 5})
    assert r.status_code == 200 and r.json() == {"records": []}


# --------------------------------------------------------------------------- auth


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.8")
@pytest.mark.parametrize("route", DATA_ROUTES)
@pytest.mark.parametrize(
    "header",
    [
        None,
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer ",
        "Bearer",
        f"Basic {TOKEN}",
        f"Token {TOKEN}",
        TOKEN,
        f"Bearer  {TOKEN} extra",
    ],
)
def test_every_data_route_requires_the_bearer(store: Store, route: str, header: str | None) -> None:
    scope = unique_scope()
    headers = {} if header is None else {"Authorization": header}
    r = _raw_post(store.url, route, _valid_body(route, scope), headers)
    assert r.status == 401
    assert r.json() == {"error": "unauthorized"}
    # and nothing happened: the write was not applied
    assert store.list(scope) == []


@pytest.mark.clause("MEM-WIRE.3")
def test_only_the_exact_bearer_header_is_accepted(store: Store, scope: str) -> None:
    body = _valid_body("/list", scope)
    # optional whitespace around the field value is not part of it (RFC 9110 OWS)
    for header in (f"Bearer {TOKEN}", f"  Bearer {TOKEN}\t "):
        assert _raw_post(store.url, "/list", body, {"Authorization": header}).status == 200
    for header in (
        f"bearer {TOKEN}",
        f"BEARER {TOKEN}",
        f"Bearer  {TOKEN}",
        f"Bearer\t{TOKEN}",
        f"Bearer {TOKEN} ",
        f"Bearer {TOKEN.upper()}",
    ):
        if header.endswith(" "):
            header += "x"  # a trailing space would be OWS; keep it inside the value
        assert _raw_post(store.url, "/list", body, {"Authorization": header}).status == 401, header


@pytest.mark.clause("MEM-WIRE.3")
@pytest.mark.parametrize("server_token", [None, ""])
def test_unset_or_empty_server_token_grants_nothing(
    make_store: StoreFactory, server_token: str | None
) -> None:
    s = make_store(token=server_token)
    scope = unique_scope()
    for header in ("Bearer ", "Bearer", "Bearer None", f"Bearer {TOKEN}", ""):
        for route in DATA_ROUTES:
            r = _raw_post(s.url, route, _valid_body(route, scope), {"Authorization": header})
            assert r.status == 401, (header, route)
    assert httpx.get(s.url + "/healthz").status_code == 200


@pytest.mark.clause("MEM-WIRE.3")
def test_no_auth_mode_accepts_everything_on_data_routes(make_store: StoreFactory) -> None:
    s = make_store(token=None, require_auth=False)
    scope = unique_scope()
    r = httpx.post(s.url + "/write", json={"scopeKey": scope, "records": [fact("open door")]})
    assert r.status_code == 200 and r.json()["inserted"] == 1


@pytest.mark.clause("MEM-WIRE.4")
def test_401_precedes_the_fence_and_validation(store: Store) -> None:
    # no Content-Length and no bearer -> 401, not 411
    (r,) = raw_exchange(store.url, http_request("POST", "/write", content_length=None))
    assert r.status == 401
    # oversized and no bearer -> 401, not 413 (and the body is never read)
    (r,) = raw_exchange(
        store.url, http_request("POST", "/write", content_length="999999"), check_close=True
    )
    assert r.status == 401 and r.closed
    # invalid JSON and no bearer -> 401, not 400
    r2 = httpx.post(store.url + "/write", content=b"{nope")
    assert r2.status_code == 401


# --------------------------------------------------------------------------- the fence


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.4")
@pytest.mark.parametrize("route", DATA_ROUTES)
@pytest.mark.parametrize(
    "length",
    [None, "", "   ", "0x10", "5e2", "12.5", "+12", "-1", "1 2", "12abc", "\u0661\u0662", "١"],
)
def test_content_length_must_be_a_plain_digit_string(
    store: Store, route: str, length: str | None
) -> None:
    scope = unique_scope()
    body = json.dumps(_valid_body(route, scope)).encode()
    headers = dict(AUTH_H)
    if length is not None:
        # encode non-latin-1 digits as UTF-8 bytes on the wire
        req = http_request("POST", route, b"", headers, content_length=None)
        req = req[:-2] + b"Content-Length: " + length.encode("utf-8") + b"\r\n\r\n" + body
    else:
        req = http_request("POST", route, b"", headers, content_length=None) + body
    (r,) = raw_exchange(store.url, req, check_close=True)
    assert r.status == 411
    assert r.json() == {"error": "length required"}
    assert r.closed, "an unsized request's connection must be closed, never parsed on"
    # the body was never parsed: a write did not land
    assert store.list(scope) == []


@pytest.mark.clause("MEM-WIRE.5")
def test_chunked_or_doubled_length_is_411_and_never_read(store: Store) -> None:
    scope = unique_scope()
    body = json.dumps(_valid_body("/write", scope)).encode()
    chunked = (
        (
            "POST /write HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        + f"{len(body):x}\r\n".encode()
        + body
        + b"\r\n0\r\n\r\n"
    )
    (r,) = raw_exchange(store.url, chunked, check_close=True)
    assert r.status == 411 and r.closed
    both = http_request("POST", "/write", body, {**AUTH_H, "Transfer-Encoding": "chunked"})
    (r,) = raw_exchange(store.url, both, check_close=True)
    assert r.status == 411 and r.closed
    doubled = http_request(
        "POST", "/write", body, {**AUTH_H, "Content-Length": str(len(body))}
    )  # a second, identical Content-Length header
    (r,) = raw_exchange(store.url, doubled, check_close=True)
    assert r.status == 411 and r.closed
    assert store.list(scope) == []


@pytest.mark.clause("MEM-WIRE.6")
@pytest.mark.parametrize("length", ["524289", "1000000", "99999999999999999999999999", "0524289"])
def test_over_512_kib_is_413_without_reading_the_body(store: Store, length: str) -> None:
    # Only the headers are sent: a server that tried to read the body would hang (timeout).
    started = time.monotonic()
    (r,) = raw_exchange(
        store.url,
        http_request("POST", "/write", b"", AUTH_H, content_length=length),
        check_close=True,
    )
    assert r.status == 413
    assert r.json() == {"error": "payload too large"}
    assert r.closed
    assert time.monotonic() - started < 5


@pytest.mark.clause("MEM-WIRE.6")
def test_exactly_512_kib_is_accepted(store: Store, scope: str) -> None:
    body = json.dumps({"scopeKey": scope, "records": [fact("padded body boundary")]}).encode()
    padded = body + b" " * (524288 - len(body))
    assert len(padded) == 524288
    r = httpx.post(store.url + "/write", content=padded, headers=AUTH_H)
    assert r.status_code == 200 and r.json()["inserted"] == 1
    r = httpx.post(store.url + "/write", content=padded + b" ", headers=AUTH_H)
    assert r.status_code == 413


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.7")
def test_leading_zeros_and_zero_length(store: Store, scope: str) -> None:
    body = json.dumps({"scopeKey": scope, "limit": 5}).encode()
    (r,) = raw_exchange(
        store.url,
        http_request("POST", "/list", body, AUTH_H, content_length=f"000{len(body)}"),
    )
    assert r.status == 200 and r.json() == {"records": []}
    # a zero-length body is sized: it gets past the fence and fails as JSON (400)
    (r,) = raw_exchange(store.url, http_request("POST", "/list", b"", AUTH_H, content_length="0"))
    assert r.status == 400 and "JSON" in r.json()["error"]


# --------------------------------------------------------------------------- keep-alive


@pytest.mark.clause("MEM-WIRE.4")
def test_keep_alive_survives_early_errors_with_a_sized_body(store: Store, scope: str) -> None:
    list_body = json.dumps({"scopeKey": scope, "limit": 5}).encode()
    junk = b'{"scopeKey": "x", "records": []}' * 10
    responses = raw_exchange(
        store.url,
        http_request("POST", "/nope", junk),  # 404 with a body: drained
        http_request("GET", "/list", junk),  # 405 with a body: drained
        http_request("POST", "/list", junk),  # 401 with a body: drained
        http_request("POST", "/list", b"{bad", AUTH_H),  # 400
        http_request("POST", "/list", list_body, AUTH_H),  # 200
        http_request("GET", "/healthz"),
        check_close=True,
    )
    assert [r.status for r in responses] == [404, 405, 401, 400, 200, 200]
    assert not responses[-1].closed


@pytest.mark.clause("MEM-WIRE.5")
def test_connection_is_closed_after_a_fence_refusal(store: Store, scope: str) -> None:
    list_body = json.dumps({"scopeKey": scope, "limit": 5}).encode()
    responses = raw_exchange(
        store.url,
        http_request("POST", "/list", list_body, AUTH_H, content_length="5e2"),
        http_request("POST", "/list", list_body, AUTH_H),
        check_close=True,
    )
    assert [r.status for r in responses] == [411]
    assert responses[0].closed


@pytest.mark.clause("MEM-WIRE.4")
def test_expect_100_continue_is_answered_only_when_the_body_is_wanted(
    store: Store, scope: str
) -> None:
    host, port = store.url.removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"scopeKey": scope, "records": [fact("expect continue works")]}).encode()
    head = http_request("POST", "/write", b"", {**AUTH_H, "Expect": "100-continue"})
    head = head.replace(b"Content-Length: 0", f"Content-Length: {len(body)}".encode())
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head)
        interim = sock.recv(4096)
        assert interim.startswith(b"HTTP/1.1 100"), interim
        sock.sendall(body)
        final = b""
        while b"}" not in final:
            final += sock.recv(4096)
    assert b" 200 " in final.split(b"\r\n", 1)[0] + b" " and b'"inserted":1' in final
    # unauthenticated: a final 401 instead of 100, and the connection is closed
    (r,) = raw_exchange(
        store.url,
        http_request("POST", "/write", b"", {"Expect": "100-continue"}, content_length="20"),
        check_close=True,
    )
    assert r.status == 401 and r.closed


# --------------------------------------------------------------------------- 400 families


def _names_field(reason: str, name: str) -> bool:
    """The reason starts with the field's path: ``name``, ``records[i].name`` or ``name[i]``."""
    path = reason.split(" ", 1)[0]
    return path == name or path.endswith("." + name) or path.startswith(name + "[")


def _long(n: int) -> str:
    return "x" * n


BAD_RETRIEVE = [
    ("scopeKey", {"scopeKey": None}),
    ("scopeKey", {"scopeKey": ""}),
    ("scopeKey", {"scopeKey": _long(201)}),
    ("scopeKey", {"scopeKey": "org: acme"}),
    ("scopeKey", {"scopeKey": "org:\tacme"}),
    ("scopeKey", {"scopeKey": "org:\u00a0acme"}),
    ("scopeKey", {"scopeKey": "org:\u200bacme"}),  # format character
    ("scopeKey", {"scopeKey": "org:\ufeffacme"}),
    ("scopeKey", {"scopeKey": "org:\x00acme"}),
    ("scopeKey", {"scopeKey": "org:\x7facme"}),
    ("scopeKey", {"scopeKey": "\U0001f600" * 101}),  # 202 UTF-16 units
    ("scopeKey", {"scopeKey": 7}),
    ("scopeKey", {"scopeKey": ["org:a"]}),
    ("query", {"query": None}),
    ("query", {"query": 5}),
    ("query", {"query": _long(4001)}),
    ("query", {"query": "\U0001f600" * 2001}),
    ("limit", {"limit": None}),
    ("limit", {"limit": 0}),
    ("limit", {"limit": 51}),
    ("limit", {"limit": -1}),
    ("limit", {"limit": 2.5}),
    ("limit", {"limit": "5"}),
    ("limit", {"limit": True}),
    ("limit", {"limit": 1e300}),
]

BAD_WRITE = [
    ("scopeKey", {"scopeKey": "a b"}),
    ("records", {"records": None}),
    ("records", {"records": {}}),
    ("records", {"records": "x"}),
    ("records", {"records": [fact(f"r{i}") for i in range(51)]}),
    ("records[0]", {"records": ["fact"]}),
    ("records[1]", {"records": [fact("ok"), None]}),
    ("kind", {"records": [{**fact("x"), "kind": "note"}]}),
    ("kind", {"records": [{**fact("x"), "kind": "Fact"}]}),
    ("kind", {"records": [{"text": "x", "sourceThreadKey": "t"}]}),
    ("text", {"records": [{"kind": "fact", "sourceThreadKey": "t"}]}),
    ("text", {"records": [fact("")]}),
    ("text", {"records": [fact("   \n\t")]}),
    ("text", {"records": [fact("\u3000\u2028\ufeff")]}),
    ("text", {"records": [fact(_long(4001))]}),
    ("text", {"records": [{**fact("x"), "text": 12}]}),
    ("sourceThreadKey", {"records": [{"kind": "fact", "text": "x"}]}),
    ("sourceThreadKey", {"records": [fact("x", thread="")]}),
    ("sourceThreadKey", {"records": [fact("x", thread=_long(201))]}),
    ("keywords", {"records": [fact("x", keywords="deploy")]}),
    ("keywords", {"records": [fact("x", keywords=[f"k{i}" for i in range(21)])]}),
    ("keywords", {"records": [fact("x", keywords=[""])]}),
    ("keywords", {"records": [fact("x", keywords=[_long(65)])]}),
    ("keywords", {"records": [fact("x", keywords=[3])]}),
    ("sourceRunId", {"records": [fact("x", sourceRunId=_long(201))]}),
    ("sourceRunId", {"records": [fact("x", sourceRunId=5)]}),
    ("supersedes", {"records": [fact("x", supersedes=_long(201))]}),
    ("supersedes", {"records": [fact("x", supersedes=["mem:a:1"])]}),
    ("confidence", {"records": [fact("x", confidence=-0.01)]}),
    ("confidence", {"records": [fact("x", confidence=1.01)]}),
    ("confidence", {"records": [fact("x", confidence="0.9")]}),
    ("confidence", {"records": [fact("x", confidence=True)]}),
    ("cap", {"cap": 0}),
    ("cap", {"cap": 10001}),
    ("cap", {"cap": 2.5}),
    ("cap", {"cap": "10"}),
    ("cap", {"cap": False}),
]

BAD_LIST = [
    ("scopeKey", {"scopeKey": ""}),
    ("limit", {"limit": 0}),
    ("limit", {"limit": 51}),
    ("limit", {"limit": "1"}),
    ("query", {"query": 3}),
    ("query", {"query": _long(4001)}),
    ("query", {"query": ["deploy"]}),
]

BAD_FORGET = [
    ("scopeKey", {"scopeKey": "x\ny"}),
    ("id", {"id": None}),
    ("id", {"id": ""}),
    ("id", {"id": _long(201)}),
    ("id", {"id": "mem:org:a 1"}),
    ("id", {"id": "mem:org:a\t1"}),
    ("id", {"id": "mem:org:a\x01"}),
    ("id", {"id": 1}),
]


def _bad_cases() -> list[Any]:
    out = []
    for route, cases in (
        ("/retrieve", BAD_RETRIEVE),
        ("/write", BAD_WRITE),
        ("/list", BAD_LIST),
        ("/forget", BAD_FORGET),
    ):
        for i, (fieldname, patch) in enumerate(cases):
            out.append(pytest.param(route, fieldname, patch, id=f"{route[1:]}-{fieldname}-{i}"))
    return out


@pytest.mark.clause(
    "MEM-WIRE.8",
    "MEM-WIRE.9",
    "MEM-WIRE.11",
    "MEM-WIRE.12",
    "MEM-WIRE.13",
    "MEM-WIRE.14",
    "MEM-WIRE.15",
)
@pytest.mark.parametrize(("route", "fieldname", "patch"), _bad_cases())
def test_invalid_fields_are_400_naming_the_field(
    store: Store, route: str, fieldname: str, patch: dict[str, Any]
) -> None:
    scope = unique_scope()
    body = {**_valid_body(route, scope), **patch}
    body = {k: v for k, v in body.items() if not (v is None and k in ("scopeKey", "records"))}
    r = store.post(route, body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert isinstance(error, str) and _names_field(error, fieldname), error
    assert set(r.json()) == {"error"}
    # a refused request touched nothing
    assert store.list(scope) == []


REQUIRED = [(route, name) for route in DATA_ROUTES for name in _valid_body(route, "org:x")]


@pytest.mark.clause("MEM-WIRE.8", "MEM-WIRE.10")
@pytest.mark.parametrize(("route", "missing"), REQUIRED)
def test_required_fields_are_required(store: Store, route: str, missing: str) -> None:
    body = _valid_body(route, unique_scope())
    del body[missing]
    r = store.post(route, body)
    assert r.status_code == 400
    assert _names_field(r.json()["error"], missing)


@pytest.mark.clause("MEM-WIRE.7", "MEM-WIRE.8")
@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"[]",
        b'"x"',
        b"null",
        b"42",
        b"true",
        b"\xff\xfe{}",
        b'{"a": NaN}',
        b'{"limit": Infinity}',
        b"{} {}",
        b"[" * 100000 + b"]" * 100000,
    ],
)
@pytest.mark.parametrize("route", DATA_ROUTES)
def test_bodies_that_are_not_a_json_object_are_400(store: Store, route: str, raw: bytes) -> None:
    r = store.client.post(route, content=raw)
    assert r.status_code == 400
    assert r.json()["error"].startswith("body")


@pytest.mark.clause("MEM-WIRE.9", "MEM-WIRE.11", "MEM-WIRE.12", "MEM-WIRE.13", "MEM-WIRE.15")
def test_boundaries_that_are_accepted(store: Store, scope: str) -> None:
    astral_key = "org:" + "\U0001f600" * 98  # 4 + 196 = 200 UTF-16 units
    assert store.ok("/list", {"scopeKey": "k" * 200, "limit": 50}) == {"records": []}
    assert store.ok("/list", {"scopeKey": astral_key, "limit": 1}) == {"records": []}
    out = store.write(
        scope,
        fact(
            "t" * 4000,
            thread="h" * 200,
            keywords=["k" * 64] * 20,
            sourceRunId="",
            supersedes="",
            confidence=0,
        ),
        fact("second", confidence=1),
        cap=10000,
    )
    assert out == {"ok": True, "inserted": 2, "deduped": 0, "superseded": 0, "evicted": 0}
    assert store.write(scope) == {
        "ok": True,
        "inserted": 0,
        "deduped": 0,
        "superseded": 0,
        "evicted": 0,
    }
    assert store.write(scope, *[fact(f"batch item {i}") for i in range(50)])["inserted"] == 50
    assert store.ok("/retrieve", {"scopeKey": scope, "query": "q" * 4000, "limit": 1}) == {
        "records": []
    }
    assert store.ok("/forget", {"scopeKey": scope, "id": "i" * 200}) == {
        "ok": True,
        "forgotten": False,
    }


@pytest.mark.clause("MEM-WIRE.10")
def test_integers_follow_javascript_semantics(store: Store, scope: str) -> None:
    store.write(scope, *[fact(f"numbered fact {i}") for i in range(12)])
    for value in (5.0, 5, 5.000000000000000001, 0.5e1):
        r = store.post("/list", {"scopeKey": scope, "limit": value})
        assert r.status_code == 200 and len(r.json()["records"]) == 5, value
    raw = json.dumps({"scopeKey": scope, "limit": 1}).replace("1}", "1E1}").encode()
    assert len(store.client.post("/list", content=raw).json()["records"]) == 10
    out = store.write(scope, fact("capped by a float"), cap=3.0)
    assert out["evicted"] == 10 and len(store.list(scope)) == 3


@pytest.mark.clause("MEM-WIRE.10", "MEM-WIRE.16")
def test_unknown_fields_are_ignored_and_null_optionals_are_absent(store: Store, scope: str) -> None:
    out = store.ok(
        "/write",
        {
            "scopeKey": scope,
            "records": [
                {
                    **fact(
                        "null optionals",
                        keywords=None,
                        sourceRunId=None,
                        confidence=None,
                        supersedes=None,
                    ),
                    "status": "forgotten",
                    "id": "mem:evil:1",
                }
            ],
            "cap": None,
            "extra": {"nested": [1, 2]},
        },
    )
    assert out["inserted"] == 1
    (rec,) = store.list(scope)
    assert rec["id"] != "mem:evil:1" and rec["status"] == "active"
    for absent in ("sourceRunId", "confidence", "supersedes", "lastUsedAt"):
        assert absent not in rec
    assert None not in rec.values()
    # list: query null = no filter
    assert len(store.ok("/list", {"scopeKey": scope, "limit": 5, "query": None})["records"]) == 1


# --------------------------------------------------------------------------- the ledger routes


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.5")
def test_ledger_routes_share_auth_and_fence_and_test_controls_need_the_flag(
    make_store: StoreFactory,
) -> None:
    plain = make_store()
    r = httpx.post(plain.url + "/ledger/memory/get_consolidation_settings", json={})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == -32600
    r = plain.client.get("/ledger/memory/get_consolidation_settings")
    assert r.status_code == 405
    (raw,) = raw_exchange(
        plain.url,
        http_request(
            "POST", "/ledger/memory/list_memory_records", b"", AUTH_H, content_length=None
        ),
    )
    assert raw.status == 411
    # test controls exist only with test_control
    r = plain.client.post("/ledger/_test/reset", json={})
    assert r.status_code == 404
    controlled = make_store(test_control=True)
    r = controlled.client.post("/ledger/_test/reset", json={})
    assert r.status_code == 200 and r.json() == {"ok": True}
    assert httpx.post(controlled.url + "/ledger/_test/reset", json={}).status_code == 401


@pytest.mark.clause("MEM-WIRE.1")
def test_ledger_routes_are_503_without_the_binding(make_store: StoreFactory) -> None:
    s = make_store(with_ledger=False)
    r = s.client.post("/ledger/memory/list_memory_records", json={"scopeKey": "account:local"})
    assert r.status_code == 503
    assert r.json() == {"error": {"code": -32603, "message": "ledger binding not available"}}
    assert s.client.get("/healthz").json()["ledger"] is False


# --------------------------------------------------------------------------- access log


@pytest.mark.clause("MEM-WIRE.17")
def test_access_log_is_one_json_line_per_request_without_secrets(
    make_store: StoreFactory,
) -> None:
    log = io.StringIO()
    s = make_store(access_log=log)
    scope = unique_scope()
    secret_text = "the launch code is swordfish"
    s.write(scope, fact(secret_text))
    s.retrieve(scope, "swordfish launch")
    httpx.post(s.url + "/list", json={"scopeKey": scope, "limit": 1})  # 401
    httpx.get(s.url + "/nope?token=abc")
    deadline = time.monotonic() + 5  # the line is written right after the response is sent
    while log.getvalue().count("\n") < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["method"], e["path"], e["status"]) for e in lines] == [
        ("POST", "/write", 200),
        ("POST", "/retrieve", 200),
        ("POST", "/list", 401),
        ("GET", "/nope", 404),
    ]
    assert lines[0]["scopeKey"] == scope and lines[0]["inserted"] == 1
    assert lines[1]["records"] == 1
    assert all(isinstance(e["ms"], int | float) for e in lines)
    text = log.getvalue()
    for forbidden in ("swordfish", "launch", TOKEN, "token=abc"):
        assert forbidden not in text
    assert AUTH["Authorization"] not in text


@pytest.mark.clause("MEM-WIRE.8")
@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /healthz HTTP/2.0\r\n\r\n", 505),
        (b"POST /write HTTP/1.1\r\n" + b"X-Pad: y\r\n" * 120 + b"\r\n", 431),
    ],
)
def test_malformed_requests_get_a_json_error_and_a_closed_connection(
    store: Store, raw: bytes, status: int
) -> None:
    (r,) = raw_exchange(store.url, raw, check_close=True)
    assert r.status == status
    body = r.json()
    assert set(body) == {"error"} and isinstance(body["error"], str)
    assert b"GARBAGE".lower() not in r.body.lower()  # the request is never echoed
    assert r.closed


# --------------------------------------------------------------------------- lone surrogates

#: Every string parameter of the memory protocol: (route, field, body builder).
_STRING_FIELDS: list[tuple[str, str, Any]] = [
    ("/retrieve", "scopeKey", lambda s, v: {"scopeKey": v, "query": "deploy", "limit": 5}),
    ("/retrieve", "query", lambda s, v: {"scopeKey": s, "query": v, "limit": 5}),
    ("/list", "scopeKey", lambda s, v: {"scopeKey": v, "limit": 5}),
    ("/list", "query", lambda s, v: {"scopeKey": s, "limit": 5, "query": v}),
    ("/forget", "scopeKey", lambda s, v: {"scopeKey": v, "id": f"mem:{s}:1"}),
    ("/forget", "id", lambda s, v: {"scopeKey": s, "id": v}),
    ("/write", "scopeKey", lambda s, v: {"scopeKey": v, "records": [fact("deploy it")]}),
    ("/write", "text", lambda s, v: {"scopeKey": s, "records": [fact(v)]}),
    ("/write", "sourceThreadKey", lambda s, v: {"scopeKey": s, "records": [fact("x", thread=v)]}),
    ("/write", "keywords", lambda s, v: {"scopeKey": s, "records": [fact("x", keywords=[v])]}),
    ("/write", "sourceRunId", lambda s, v: {"scopeKey": s, "records": [fact("x", sourceRunId=v)]}),
    ("/write", "supersedes", lambda s, v: {"scopeKey": s, "records": [fact("x", supersedes=v)]}),
]


@pytest.mark.clause("MEM-WIRE.8", "MEM-WIRE.9", "MEM-WIRE.10", "MEM-WIRE.12", "MEM-WIRE.15")
@pytest.mark.parametrize(
    ("route", "fieldname", "build"),
    _STRING_FIELDS,
    ids=[f"{r[1:]}-{f}" for r, f, _ in _STRING_FIELDS],
)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prefix=st.text(alphabet="abcxyz019:", min_size=1, max_size=8),
    lone=st.sampled_from(["\ud800", "\udfff", "\udc00", "\ud83d"]),
    suffix=st.text(alphabet="abcxyz019", max_size=8),
)
def test_a_lone_surrogate_in_any_string_parameter_is_a_400_naming_it_or_accepted(
    store: Store, route: str, fieldname: str, build: Any, prefix: str, lone: str, suffix: str
) -> None:
    """A lone surrogate (sent as the JSON escape ``\\ud800``) is not Unicode text: a store may
    refuse it with a 400 naming the field or accept it (MEM-WIRE.10); never a 5xx, and the
    answer is one the reference model allows.  The bundled store refuses it wherever the value
    would be stored or compared, and accepts it in a query (a query is only tokenized)."""
    scope = unique_scope()
    value = prefix + lone + suffix
    body = build(scope, value)
    raw = json.dumps(body).encode()  # ensure_ascii: the surrogate travels as \ud800
    assert b"\\ud" in raw
    r = store.client.post(route, content=raw, headers={"Content-Type": "application/json"})
    answer = r.json()
    _, allowed = handle(empty_store(), make_request(route, raw, token=TOKEN), store.clock(), TOKEN)
    assert allowed.admits(r.status_code, answer), (route, fieldname, r.status_code, answer)
    if fieldname == "query":
        assert r.status_code == 200, answer
    elif fieldname == "id":
        assert (r.status_code, answer) == (200, {"ok": True, "forgotten": False})
    else:
        assert r.status_code == 400, answer
        assert _names_field(answer["error"], fieldname), answer
    assert store.list(scope) == []
