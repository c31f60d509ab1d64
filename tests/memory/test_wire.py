"""MEM-WIRE / MEM-CLIENT: the Memory Worker wire protocol model and the bot-side client rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reference.memory.engine import default_keywords
from reference.memory.records import MemoryCandidate
from reference.memory.store import (
    StoreState,
    active_records,
    empty_store,
    store_list,
    store_retrieve,
    store_write,
)
from reference.memory.wire import (
    CAP_FLOORS,
    MAX_BODY_BYTES,
    Allowed,
    ErrorBody,
    RetrieveBody,
    WireError,
    WireRequest,
    client_forget,
    client_list,
    client_list_request,
    client_retrieve,
    client_write,
    client_write_request,
    handle,
    make_request,
    record_from_wire,
    record_to_wire,
    select_store,
    tighter_cap,
    validate_cap_config,
    validate_forget,
    validate_list,
    validate_retrieve,
    validate_write,
)
from tests.common.memory_strategies import T0, make_record, records

TOKEN = "s3cret-token"
SCOPE = "org:acme"
NOW = T0 + 10_000

ROUTES = ["/retrieve", "/write", "/list", "/forget"]
VALID: dict[str, dict[str, Any]] = {
    "/retrieve": {"scopeKey": SCOPE, "query": "deploy", "limit": 5},
    "/write": {
        "scopeKey": SCOPE,
        "records": [{"kind": "fact", "text": "deploy with make ship", "sourceThreadKey": "t1"}],
    },
    "/list": {"scopeKey": SCOPE, "limit": 5},
    "/forget": {"scopeKey": SCOPE, "id": "mem:org:acme:1"},
}


def respond(
    req: WireRequest,
    state: StoreState | None = None,
    token: str | None = TOKEN,
    cap_default: int = 500,
) -> tuple[StoreState, Allowed]:
    return handle(state or empty_store(), req, NOW, token, cap_default)


def post(path: str, payload: object, **kw: Any) -> WireRequest:
    return make_request(path, payload, token=kw.pop("token", TOKEN), **kw)


def statuses(a: Allowed) -> set[int]:
    return {o.status for o in a.options}


def only_400_naming(a: Allowed, field: str) -> bool:
    return (
        statuses(a) == {400}
        and a.admits(400, {"error": f"{field} is not valid"})
        and not a.admits(400, {"error": "something is wrong"})
        and not a.admits(400, {"error": "invalid value"})  # "id" hides in "invalid"
    )


def seeded(n: int = 3) -> StoreState:
    st_, _ = store_write(
        empty_store(),
        SCOPE,
        [MemoryCandidate("fact", f"deploy step {i}", "t1") for i in range(n)],
        T0,
    )
    return st_


# --------------------------------------------------------------------------- MEM-WIRE.1 / .2


@pytest.mark.clause("MEM-WIRE.1")
@given(
    path=st.text(alphabet="/abcdefhilorstvwz?=_", max_size=12),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]),
)
def test_unknown_paths_are_404(path: str, method: str) -> None:
    assume(path.split("?", 1)[0] not in [*ROUTES, "/healthz"])
    _, a = respond(WireRequest(method, path, (), b"{"), token=None)
    assert statuses(a) == {404}
    assert a.admits(404, {"error": "not found"})
    assert not a.admits(404, {"error": "not found", "path": path})


@pytest.mark.clause("MEM-WIRE.1")
def test_healthz() -> None:
    _, a = respond(WireRequest("GET", "/healthz"), token=None)
    assert a.admits(200, {"ok": True}) and a.admits(200, {"ok": True, "version": "1"})
    assert (
        not a.admits(200, {"ok": 1}) and not a.admits(200, {}) and not a.admits(401, {"error": "x"})
    )
    _, a = respond(WireRequest("GET", "/healthz?probe=1"), token="")
    assert a.admits(200, {"ok": True})
    _, a = respond(WireRequest("GET", "/healthz/"))
    assert statuses(a) == {404}


@pytest.mark.clause("MEM-WIRE.2")
@given(
    path=st.sampled_from([*ROUTES, "/healthz"]),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "post"]),
)
def test_wrong_method_is_405_before_auth(path: str, method: str) -> None:
    ok = method == ("GET" if path == "/healthz" else "POST")
    assume(not ok)
    _, a = respond(WireRequest(method, path, (), b"not json"), token=None)
    # Any method but GET on /healthz: 404 ("everything else is 404"; POST is not "non-POST")
    # or 405 — both readings of §15 are accepted.
    assert statuses(a) == ({404, 405} if path == "/healthz" else {405})


@pytest.mark.clause("MEM-WIRE.5")
def test_a_bodiless_post_without_a_length_may_be_411_or_400() -> None:
    """An edge stamps ``Content-Length: 0`` on a bodiless POST (§16: 411 "unreachable from the
    public edge"), so the store reads an empty body: 400 is accepted next to 411.  A body sent
    chunked without a length reaches the store as such: 411 only."""
    auth = (("Authorization", f"Bearer {TOKEN}"),)
    for route in ROUTES:
        _, a = respond(WireRequest("POST", route, auth, b""))
        assert statuses(a) == {411, 400}
        chunked = auth + (("Transfer-Encoding", "chunked"),)
        _, a = respond(WireRequest("POST", route, chunked, b'{"x":1}'))
        assert statuses(a) == {411}
        _, a = respond(WireRequest("POST", route, chunked, b""))
        assert statuses(a) == {411}


# --------------------------------------------------------------------------- MEM-WIRE.3


@pytest.mark.clause("MEM-WIRE.3")
@given(
    route=st.sampled_from(ROUTES),
    auth=st.one_of(
        st.none(),
        st.sampled_from(
            [
                "",
                "Bearer",
                "Bearer ",
                f"bearer {TOKEN}",
                f"Bearer  {TOKEN}",
                f"Basic {TOKEN}",
                TOKEN,
                f"Bearer {TOKEN[:-1]}",
                f"Bearer {TOKEN}x",
            ]
        ),
        st.text(max_size=20),
    ),
)
def test_bearer_must_match_exactly(route: str, auth: str | None) -> None:
    assume(auth is None or auth.strip(" \t") != f"Bearer {TOKEN}")  # OWS is not the value
    headers = (("Content-Length", "5e2"),) + (
        (("Authorization", auth),) if auth is not None else ()
    )
    _, a = respond(WireRequest("POST", route, headers, b"{"))
    assert statuses(a) == {401}  # and auth runs before the length fence and the body


@pytest.mark.clause("MEM-WIRE.3")
@pytest.mark.parametrize("server_token", [None, ""])
@pytest.mark.parametrize("auth", ["Bearer ", "Bearer", "", "Bearer None"])
def test_fail_closed_without_a_server_token(server_token: str | None, auth: str) -> None:
    req = WireRequest(
        "POST", "/retrieve", (("Authorization", auth), ("Content-Length", "2")), b"{}"
    )
    _, a = respond(req, token=server_token)
    assert statuses(a) == {401}


@pytest.mark.clause("MEM-WIRE.3")
def test_repeated_authorization_headers_do_not_authenticate() -> None:
    body = json.dumps(VALID["/list"]).encode()
    req = WireRequest(
        "POST",
        "/list",
        (
            ("Authorization", f"Bearer {TOKEN}"),
            ("authorization", f"Bearer {TOKEN}"),
            ("Content-Length", str(len(body))),
        ),
        body,
    )
    assert statuses(respond(req)[1]) == {401}
    ok = WireRequest(
        "POST",
        "/list",
        (("AUTHORIZATION", f"Bearer {TOKEN}"), ("content-length", str(len(body)))),
        body,
    )
    assert statuses(respond(ok)[1]) == {200}


# --------------------------------------------------------------------------- MEM-WIRE.4


FAULTS = ["path", "method", "auth", "length411", "length413", "body"]


@pytest.mark.clause("MEM-WIRE.4")
@given(route=st.sampled_from(ROUTES), faults=st.sets(st.sampled_from(FAULTS)))
def test_precedence(route: str, faults: set[str]) -> None:
    body = b"{not json" if "body" in faults else json.dumps(VALID[route]).encode()
    headers: list[tuple[str, str]] = []
    if "auth" not in faults:
        headers.append(("Authorization", f"Bearer {TOKEN}"))
    if "length411" in faults:
        headers.append(("Content-Length", "12.5"))
    elif "length413" in faults:
        headers.append(("Content-Length", str(MAX_BODY_BYTES + 1)))
    else:
        headers.append(("Content-Length", str(len(body))))
    req = WireRequest(
        "GET" if "method" in faults else "POST",
        "/nope" if "path" in faults else route,
        tuple(headers),
        body,
    )
    expected = {
        "path": 404,
        "method": 405,
        "auth": 401,
        "length411": 411,
        "length413": 413,
        "body": 400,
    }
    first = next((expected[f] for f in FAULTS if f in faults), 200)
    assert statuses(respond(req, seeded())[1]) == {first}


# --------------------------------------------------------------------------- MEM-WIRE.5 / .6


@pytest.mark.clause("MEM-WIRE.5")
@given(
    route=st.sampled_from(ROUTES),
    length=st.one_of(
        st.none(),
        st.sampled_from(
            [
                "",
                " ",
                "0x10",
                "5e2",
                "12.5",
                "+5",
                "-1",
                "1_0",
                "\uff15",
                "\u0665",
                "5,5",
                "Infinity",
            ]
        ),
        st.text(max_size=6),
    ),
    body=st.binary(max_size=20),
)
def test_length_not_a_digit_string_is_411_whatever_the_body(
    route: str, length: str | None, body: bytes
) -> None:
    stripped = None if length is None else length.strip(" \t")
    assume(stripped is None or not (stripped.isascii() and stripped.isdigit()))
    headers = (("Authorization", f"Bearer {TOKEN}"),) + (
        (("Content-Length", length),) if length is not None else ()
    )
    _, a = respond(WireRequest("POST", route, headers, body))
    # Only a bodiless POST with no length at all may also be 400 (an edge stamps a zero).
    assert statuses(a) == ({411, 400} if length is None and not body else {411})
    assert a.admits(411, {"error": "length required"})


@pytest.mark.clause("MEM-WIRE.5")
@pytest.mark.parametrize(
    "length",
    ["", " ", "0x10", "5e2", "12.5", "+5", "-1", "1_0", "\uff15", "\u0665", "5,5"],
)
def test_length_examples_are_411_before_the_body(length: str) -> None:
    body = json.dumps(VALID["/list"]).encode()
    req = WireRequest(
        "POST", "/list", (("Authorization", f"Bearer {TOKEN}"), ("Content-Length", length)), body
    )
    assert statuses(respond(req)[1]) == {411}


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.6")
@given(route=st.sampled_from(ROUTES), n=st.integers(0, 10**12), zeros=st.integers(0, 3))
def test_digit_lengths(route: str, n: int, zeros: int) -> None:
    req = make_request(route, b"{bad", token=TOKEN, content_length="0" * zeros + str(n))
    got = statuses(respond(req)[1])
    assert got == ({413} if n > MAX_BODY_BYTES else {400})


@pytest.mark.clause("MEM-WIRE.6")
def test_size_fence_edges() -> None:
    at = make_request("/list", VALID["/list"], token=TOKEN, content_length=str(MAX_BODY_BYTES))
    assert statuses(respond(at)[1]) == {200}
    over = make_request(
        "/list", VALID["/list"], token=TOKEN, content_length=str(MAX_BODY_BYTES + 1)
    )
    assert statuses(respond(over)[1]) == {413}


# --------------------------------------------------------------------------- MEM-WIRE.7 / .8


@pytest.mark.clause("MEM-WIRE.7", "MEM-WIRE.8")
@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b"42",
        b'"x"',
        b'{"scopeKey": NaN}',
        b"{} {}",
        b"{'a': 1}",
        b"Infinity",
    ],
)
@pytest.mark.parametrize("route", ROUTES)
def test_not_a_json_object_is_400(route: str, body: bytes) -> None:
    _, a = respond(post(route, body))
    assert statuses(a) == {400}
    assert a.admits(400, {"error": "invalid JSON body"})
    assert not a.admits(400, {"error": 1})
    assert not a.admits(400, {"error": "bad", "field": "x"})
    assert not a.admits(400, "bad")


@pytest.mark.clause("MEM-WIRE.7")
def test_invalid_utf8_and_bom_are_implementation_defined() -> None:
    payload = {
        "scopeKey": SCOPE,
        "records": [{"kind": "fact", "text": "caf\u00e9", "sourceThreadKey": "t"}],
    }
    raw = json.dumps(payload, ensure_ascii=False).encode()
    bad = raw.replace("\u00e9".encode(), b"\xe9")
    _, a = respond(post("/write", bad))
    assert statuses(a) == {200, 400}
    assert a.admits(400, {"error": "body is not UTF-8"})
    ok = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
    assert a.admits(200, ok)
    after = a.next_state(200, ok)
    assert after is not None and [r.text for r in active_records(after, SCOPE)] == ["caf\ufffd"]
    assert a.next_state(400, {"error": "x"}) == empty_store()
    _, a = respond(post("/write", b"\xef\xbb\xbf" + raw))
    assert statuses(a) == {200, 400} and a.admits(200, ok)


# field -> (route, bad values)
FIELD_CASES: list[tuple[str, str, list[Any]]] = [
    (
        "/retrieve",
        "scopeKey",
        [
            None,
            3,
            "",
            "a" * 201,
            "org acme",
            "org:\tacme",
            "org:\u200bacme",
            "org:\u2028x",
            "org:\x00",
            "org:\u00a0x",
            True,
            ["org:acme"],
        ],
    ),
    ("/retrieve", "query", [None, 3, "x" * 4001, ["deploy"], True]),
    ("/retrieve", "limit", [None, 0, 51, 5.5, "5", True, -1, 1e300, [5]]),
    ("/list", "limit", [None, 0, 51, 2.5, "5", False]),
    ("/list", "query", [3, "x" * 4001, ["a"], True]),
    ("/forget", "id", [None, "", "a" * 201, "mem:org:acme 1", "mem:org:acme:1\n", 7, "a\u3000b"]),
    ("/forget", "scopeKey", [None, "", "a b"]),
    (
        "/write",
        "records",
        [
            None,
            "x",
            {"kind": "fact"},
            [1],
            [None],
            [{"kind": "fact", "text": "t", "sourceThreadKey": "t"}] * 51,
        ],
    ),
    ("/write", "cap", [0, 10001, 1.5, "5", True, -3, [5]]),
    ("/write", "scopeKey", ["", "x" * 201, "org acme"]),
]
RECORD_CASES: list[tuple[str, list[Any]]] = [
    ("kind", [None, "note", "Fact", 1]),
    ("text", [None, "", "   ", "\n\t", "x" * 4001, 5, ["t"]]),
    ("sourceThreadKey", [None, "", "t" * 201, 3]),
    ("keywords", ["deploy", [1], [""], ["k" * 65], ["k"] * 21, {"a": 1}]),
    ("sourceRunId", [3, "r" * 201, ["r"], True]),
    ("supersedes", [3, "s" * 201, False]),
    ("confidence", [-0.01, 1.01, "0.5", True, [0.5]]),
]


@pytest.mark.clause(
    "MEM-WIRE.8", "MEM-WIRE.9", "MEM-WIRE.11", "MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.15"
)
@pytest.mark.parametrize(("route", "field", "values"), FIELD_CASES)
def test_field_rules_are_400_naming_the_field(route: str, field: str, values: list[Any]) -> None:
    for v in values:
        body = dict(VALID[route])
        if v is None and field in ("query", "cap") and route != "/retrieve":
            continue  # a null optional is implementation-defined (see below)
        if v is None:
            body.pop(field, None)
        else:
            body[field] = v
        _, a = respond(post(route, body), seeded())
        assert only_400_naming(a, field), (route, field, v, a.describe())
        assert not a.admits(200, {"records": []})


@pytest.mark.clause("MEM-WIRE.10", "MEM-WIRE.11")
@pytest.mark.parametrize(
    "raw",
    [
        b'{"scopeKey":"org:acme","query":"q","limit":1e400}',
        b'{"scopeKey":"org:acme","query":"q","limit":-0}',
    ],
)
def test_overflowing_numbers_are_ordinary_400s(raw: bytes) -> None:
    _, a = respond(post("/retrieve", raw))
    assert only_400_naming(a, "limit")


@pytest.mark.clause("MEM-WIRE.8", "MEM-WIRE.12")
@pytest.mark.parametrize(("field", "values"), RECORD_CASES)
def test_record_field_rules(field: str, values: list[Any]) -> None:
    for v in values:
        rec: dict[str, Any] = {"kind": "fact", "text": "ok", "sourceThreadKey": "t1"}
        if v is None:
            rec.pop(field)
        else:
            rec[field] = v
        good = {"kind": "fact", "text": "fine", "sourceThreadKey": "t1"}
        _, a = respond(post("/write", {"scopeKey": SCOPE, "records": [good, rec]}))
        assert statuses(a) == {400}, (field, v)
        assert a.admits(400, {"error": f"records[1].{field}: invalid"})
        assert a.admits(400, {"error": f"{field} is invalid"})
        assert not a.admits(400, {"error": "scopeKey is invalid"})


@pytest.mark.clause("MEM-WIRE.8")
@given(
    bad=st.sets(st.sampled_from(["scopeKey", "query", "limit"]), min_size=1),
)
def test_several_bad_fields_any_may_be_named(bad: set[str]) -> None:
    body: dict[str, Any] = {"scopeKey": "a b" if "scopeKey" in bad else SCOPE}
    body["query"] = 9 if "query" in bad else "q"
    body["limit"] = 0 if "limit" in bad else 3
    _, a = respond(post("/retrieve", body))
    for f in ["scopeKey", "query", "limit"]:
        assert a.admits(400, {"error": f"bad {f}"}) is (f in bad)
    assert not a.admits(400, {"error": "invalid"})  # "id" inside "invalid" names nothing


@pytest.mark.clause("MEM-WIRE.9")
@pytest.mark.parametrize("ch", ["\ud800", "\ue000", "\U000e0080"])
def test_exotic_scope_characters_are_implementation_defined(ch: str) -> None:
    body = {"scopeKey": f"org:{ch}", "limit": 5}
    _, a = respond(post("/list", json.dumps(body).encode()))
    assert statuses(a) == {200, 400}
    assert a.admits(200, {"records": []}) and a.admits(400, {"error": "scopeKey"})


@pytest.mark.clause("MEM-WIRE.9")
@given(key=st.text(min_size=1, max_size=12))
def test_scope_key_characters(key: str) -> None:
    import unicodedata

    cats = {unicodedata.category(c) for c in key}
    _, a = respond(post("/list", json.dumps({"scopeKey": key, "limit": 1}).encode()))
    if cats & {"Cc", "Cf", "Zs", "Zl", "Zp"}:
        assert only_400_naming(a, "scopeKey")
    elif cats & {"Cs", "Co", "Cn"}:
        assert statuses(a) == {200, 400}
    else:
        assert statuses(a) == {200}


# --------------------------------------------------------------------------- MEM-WIRE.10


@pytest.mark.clause("MEM-WIRE.10")
@pytest.mark.parametrize(
    ("limit", "ok"), [(5, True), (5.0, True), (1, True), (50.0, True), (True, False), (5.5, False)]
)
def test_js_integers(limit: object, ok: bool) -> None:
    _, a = respond(post("/list", {"scopeKey": SCOPE, "limit": limit}))
    assert statuses(a) == ({200} if ok else {400})
    assert validate_list({"scopeKey": SCOPE, "limit": 5e0}) == validate_list(
        {"scopeKey": SCOPE, "limit": 5}
    )


@pytest.mark.clause("MEM-WIRE.10")
@given(
    route=st.sampled_from(ROUTES),
    extra=st.dictionaries(
        st.text(max_size=6).filter(
            lambda k: k not in {"scopeKey", "query", "limit", "records", "cap", "id"}
        ),
        st.one_of(st.none(), st.integers(), st.text(max_size=4)),
        max_size=3,
    ),
    rec_extra=st.dictionaries(
        st.sampled_from(["id", "audience", "status", "createdAt", "scopeKey", "useCount"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=4)),
        max_size=3,
    ),
)
def test_unknown_fields_are_ignored(
    route: str, extra: dict[str, Any], rec_extra: dict[str, Any]
) -> None:
    base = json.loads(json.dumps(VALID[route]))
    noisy = {**base, **extra}
    if route == "/write":
        noisy["records"] = [{**r, **rec_extra} for r in base["records"]]
    state = seeded()
    s1, a1 = respond(post(route, base), state)
    s2, a2 = respond(post(route, noisy), state)
    assert s1 == s2
    assert [(o.status, o.body) for o in a1.options] == [(o.status, o.body) for o in a2.options]


@pytest.mark.clause("MEM-WIRE.10")
@pytest.mark.parametrize(
    ("route", "field", "body"),
    [
        ("/write", "cap", {**VALID["/write"], "cap": None}),
        ("/list", "query", {**VALID["/list"], "query": None}),
        (
            "/write",
            "keywords",
            {"scopeKey": SCOPE, "records": [{**VALID["/write"]["records"][0], "keywords": None}]},
        ),
        (
            "/write",
            "supersedes",
            {"scopeKey": SCOPE, "records": [{**VALID["/write"]["records"][0], "supersedes": None}]},
        ),
        (
            "/write",
            "confidence",
            {"scopeKey": SCOPE, "records": [{**VALID["/write"]["records"][0], "confidence": None}]},
        ),
        (
            "/write",
            "sourceRunId",
            {
                "scopeKey": SCOPE,
                "records": [{**VALID["/write"]["records"][0], "sourceRunId": None}],
            },
        ),
    ],
)
def test_null_optional_fields_are_implementation_defined(
    route: str, field: str, body: dict[str, Any]
) -> None:
    _, a = respond(post(route, body), seeded())
    assert statuses(a) == {200, 400}
    assert a.admits(400, {"error": f"{field} must not be null"})
    assert not a.admits(400, {"error": "limit must not be null"})
    assert a.next_state(400, {"error": f"{field}: null"}) == seeded()
    if route == "/write":
        ok = {"ok": True, "inserted": 1, "deduped": 0, "superseded": 0, "evicted": 0}
        after = a.next_state(200, ok)
        assert after is not None and len(active_records(after, SCOPE)) == 4


# --------------------------------------------------------------------------- MEM-WIRE.11


@pytest.mark.clause("MEM-WIRE.11")
def test_retrieve_ties_any_order_and_bump_either_side() -> None:
    state = seeded(3)  # three records, same time, same score for "deploy"
    _, a = respond(post("/retrieve", {"scopeKey": SCOPE, "query": "deploy", "limit": 2}), state)
    recs = active_records(state, SCOPE)
    wire = [record_to_wire(r) for r in recs]
    bumped = [{**w, "useCount": 1, "lastUsedAt": NOW + 5} for w in wire]
    for pick in ([0, 1], [1, 0], [2, 0], [1, 2]):
        assert a.admits(200, {"records": [wire[i] for i in pick]})
        assert a.admits(200, {"records": [bumped[i] for i in pick]})
    assert not a.admits(200, {"records": [wire[0]]})  # the limit must be filled
    assert not a.admits(200, {"records": [wire[0], wire[0]]})
    assert not a.admits(200, {"records": [{**wire[0], "useCount": 2}, wire[1]]})
    assert not a.admits(200, {"records": [{**bumped[0], "useCount": 5}, bumped[1]]})
    assert not a.admits(200, {"records": [{**bumped[0], "useCount": 0}, bumped[1]]})
    assert not a.admits(200, {"records": [{**wire[0], "text": "other"}, wire[1]]})
    assert a.admits(200, {"records": [wire[0], wire[1]], "took_ms": 1})  # extras ignored
    assert not a.admits(200, {"recs": [wire[0], wire[1]]})
    after = a.next_state(200, {"records": [wire[2], wire[0]]})
    assert after is not None
    used = {r.id: r.use_count for r in active_records(after, SCOPE)}
    assert used == {recs[0].id: 1, recs[1].id: 0, recs[2].id: 1}


@pytest.mark.clause("MEM-WIRE.11")
def test_retrieve_strict_order_between_scores() -> None:
    state, _ = store_write(
        empty_store(),
        SCOPE,
        [MemoryCandidate("fact", "deploy ship", "t"), MemoryCandidate("fact", "deploy only", "t")],
        T0,
    )
    _, a = respond(
        post("/retrieve", {"scopeKey": SCOPE, "query": "deploy ship", "limit": 5}), state
    )
    recs = active_records(state, SCOPE)
    w = [record_to_wire(r) for r in recs]
    assert a.admits(200, {"records": [w[0], w[1]]})
    assert not a.admits(200, {"records": [w[1], w[0]]})
    _, a = respond(post("/retrieve", {"scopeKey": SCOPE, "query": "!!!", "limit": 5}), state)
    assert a.admits(200, {"records": []}) and not a.admits(200, {"records": [w[0]]})


@pytest.mark.clause("MEM-WIRE.11", "MEM-WIRE.16")
@given(
    recs=records(min_size=1, max_size=6),
    query=st.sampled_from(["deploy", "make ship", "a x", "ci 42"]),
    limit=st.integers(1, 6),
)
def test_model_answer_is_admitted_and_reaches_model_state(
    recs: list[Any], query: str, limit: int
) -> None:
    state = StoreState(scopes={SCOPE: tuple(recs)})
    expected_state, got = store_retrieve(state, SCOPE, query, limit, NOW)
    primary, a = respond(
        post("/retrieve", {"scopeKey": SCOPE, "query": query, "limit": limit}), state
    )
    body = {"records": [record_to_wire(r) for r in got]}
    assert a.admits(200, body)
    assert a.next_state(200, body) == expected_state == primary
    if len(got) >= 1:
        wrong_scope = {"records": [{**record_to_wire(r), "id": "mem:org:other:1"} for r in got]}
        assert not a.admits(200, wrong_scope)


# --------------------------------------------------------------------------- MEM-WIRE.12 / .13


wire_record = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["fact", "summary"]),
        "text": st.sampled_from(["deploy with make", "Deploy  with make", "ci uses x", "db on 42"]),
        "sourceThreadKey": st.sampled_from(["t1", "slack:C1:2"]),
    },
    optional={
        "keywords": st.lists(st.sampled_from(["deploy", "ci", "x"]), max_size=3),
        "sourceRunId": st.sampled_from(["", "run-1"]),
        "confidence": st.sampled_from([0, 0.5, 1, 1.0]),
        "supersedes": st.sampled_from(["", "mem:org:acme:1", "mem:org:acme:9"]),
    },
)


@pytest.mark.clause("MEM-WIRE.12", "MEM-WIRE.13")
@given(recs=st.lists(wire_record, max_size=8), cap=st.one_of(st.none(), st.integers(1, 6)))
def test_valid_write_answers_exact_counts(recs: list[dict[str, Any]], cap: int | None) -> None:
    body: dict[str, Any] = {"scopeKey": SCOPE, "records": recs}
    if cap is not None:
        body["cap"] = cap
    state = seeded(2)
    parsed = validate_write(body)
    assert not isinstance(parsed, WireError)
    expected_state, res = store_write(
        state, SCOPE, parsed.candidates, NOW, cap if cap is not None else 4
    )
    primary, a = respond(post("/write", body), state, cap_default=4)
    ok = {
        "ok": True,
        "inserted": res.inserted,
        "deduped": res.deduped,
        "superseded": res.superseded,
        "evicted": res.evicted,
    }
    assert statuses(a) == {200}
    assert a.admits(200, ok) and primary == expected_state == a.next_state(200, ok)
    assert not a.admits(200, {**ok, "inserted": res.inserted + 1})
    assert not a.admits(200, {**ok, "ok": 1})
    assert a.admits(200, {**ok, "active": 3})  # members the seed does not name are allowed
    assert not a.admits(200, {k: v for k, v in ok.items() if k != "evicted"})


@pytest.mark.clause("MEM-WIRE.13")
def test_cap_default_applies_when_absent() -> None:
    recs = [{"kind": "fact", "text": f"item {i}", "sourceThreadKey": "t"} for i in range(3)]
    _, a = respond(post("/write", {"scopeKey": SCOPE, "records": recs}), cap_default=2)
    assert a.admits(200, {"ok": True, "inserted": 3, "deduped": 0, "superseded": 0, "evicted": 1})
    _, a = respond(
        post("/write", {"scopeKey": SCOPE, "records": recs, "cap": 10000}), cap_default=2
    )
    assert a.admits(200, {"ok": True, "inserted": 3, "deduped": 0, "superseded": 0, "evicted": 0})
    _, a = respond(post("/write", {"scopeKey": SCOPE, "records": []}))
    assert a.admits(200, {"ok": True, "inserted": 0, "deduped": 0, "superseded": 0, "evicted": 0})


# --------------------------------------------------------------------------- MEM-WIRE.14 / .15


@pytest.mark.clause("MEM-WIRE.14")
@given(
    n=st.integers(0, 6),
    limit=st.integers(1, 50),
    query=st.one_of(st.none(), st.sampled_from(["step", "2", "zzz", "?"])),
)
def test_list_is_exact_newest_first(n: int, limit: int, query: str | None) -> None:
    state = seeded(n)
    body: dict[str, Any] = {"scopeKey": SCOPE, "limit": limit}
    if query is not None:
        body["query"] = query
    after, a = respond(post("/list", body), state)
    expected = store_list(state, SCOPE, limit, query)
    wire = [record_to_wire(r) for r in expected]
    assert a.admits(200, {"records": wire}) and after == state
    if len(wire) >= 2:
        assert not a.admits(200, {"records": list(reversed(wire))})
    if wire:
        assert not a.admits(200, {"records": wire[:-1]})
        assert not a.admits(200, {"records": [{**wire[0], "useCount": 1}, *wire[1:]]})
        assert not a.admits(200, {"records": [{**wire[0], "lastUsedAt": 5}, *wire[1:]]})
        assert a.admits(
            200, {"records": [{**w, "id": f"{w['id']}0", "createdAt": 1} for w in wire]}
        )


@pytest.mark.clause("MEM-WIRE.15")
def test_forget_answers() -> None:
    state = seeded(2)
    after, a = respond(post("/forget", {"scopeKey": SCOPE, "id": "mem:org:acme:1"}), state)
    assert a.admits(200, {"ok": True, "forgotten": True})
    assert not a.admits(200, {"ok": True, "forgotten": False})
    assert not a.admits(200, {"ok": True, "forgotten": 1})
    assert [r.id for r in active_records(after, SCOPE)] == ["mem:org:acme:2"]
    _, a = respond(post("/forget", {"scopeKey": SCOPE, "id": "mem:org:acme:1"}), after)
    assert a.admits(200, {"ok": True, "forgotten": False})
    _, a = respond(post("/forget", {"scopeKey": "org:other", "id": "mem:org:acme:2"}), after)
    assert a.admits(200, {"ok": True, "forgotten": False})
    _, a = respond(post("/forget", {"scopeKey": SCOPE, "id": "mem:org:acme:2\u200b"}), after)
    assert statuses(a) == {200, 400}  # a format character in an id is implementation-defined
    assert a.admits(200, {"ok": True, "forgotten": False})


# --------------------------------------------------------------------------- MEM-WIRE.16


@pytest.mark.clause("MEM-WIRE.16")
@given(recs=records(min_size=1, max_size=4))
def test_record_wire_roundtrip(recs: list[Any]) -> None:
    for r in recs:
        w = record_to_wire(r)
        assert None not in w.values()
        for opt, attr in (
            ("sourceRunId", r.source_run_id),
            ("lastUsedAt", r.last_used_at),
            ("confidence", r.confidence),
            ("supersedes", r.supersedes),
        ):
            assert (opt in w) is (attr is not None)
        assert record_from_wire(json.loads(json.dumps(w))) == r


@pytest.mark.clause("MEM-WIRE.16")
@pytest.mark.parametrize(
    "change",
    [
        {"sourceRunId": None},
        {"lastUsedAt": None},
        {"confidence": None},
        {"supersedes": None},
        {"id": ""},
        {"kind": "note"},
        {"keywords": "x"},
        {"keywords": [1]},
        {"createdAt": 1.5},
        {"createdAt": True},
        {"useCount": -1},
        {"status": "deleted"},
        {"text": None},
    ],
)
def test_malformed_wire_records(change: dict[str, Any]) -> None:
    w = {**record_to_wire(make_record("mem:org:acme:1", confidence=0.7)), **change}
    assert isinstance(record_from_wire(w), WireError)


@pytest.mark.clause("MEM-WIRE.16")
def test_keywords_of_keywordless_records_are_free() -> None:
    state, _ = store_write(
        empty_store(), SCOPE, [MemoryCandidate("fact", "Deploy with make", "t")], T0
    )
    state2, _ = store_write(
        empty_store(), SCOPE, [MemoryCandidate("fact", "Deploy with make", "t", ("ops",))], T0
    )
    for st_, free in ((state, True), (state2, False)):
        _, a = respond(post("/list", VALID["/list"]), st_)
        w = record_to_wire(active_records(st_, SCOPE)[0])
        assert a.admits(200, {"records": [w]})
        assert a.admits(200, {"records": [{**w, "keywords": []}]}) is free
    assert active_records(state, SCOPE)[0].keywords == default_keywords("Deploy with make")


@pytest.mark.clause("MEM-WIRE.16")
def test_id_map_pins_ids() -> None:
    state = seeded(1)
    _, a = respond(post("/list", VALID["/list"]), state)
    w = {**record_to_wire(active_records(state, SCOPE)[0]), "id": "mem:org:acme:100"}
    assert a.admits(200, {"records": [w]})
    assert a.admits(200, {"records": [w]}, id_map={"mem:org:acme:1": "mem:org:acme:100"})
    assert not a.admits(200, {"records": [w]}, id_map={"mem:org:acme:1": "mem:org:acme:101"})


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.8")
def test_describe_is_human() -> None:
    _, a = respond(post("/retrieve", {"scopeKey": SCOPE, "query": 1, "limit": 0}))
    text = a.describe()
    assert text.startswith("400 ") and "query" in text and "limit" in text
    assert isinstance(a.options[0].body, ErrorBody)


# --------------------------------------------------------------------------- validators


@pytest.mark.clause("MEM-WIRE.11", "MEM-WIRE.15")
def test_validators_parse() -> None:
    assert validate_retrieve({"scopeKey": SCOPE, "query": "", "limit": 50.0}) == RetrieveBody(
        SCOPE, "", 50
    )
    got = validate_forget({"scopeKey": SCOPE, "id": "x" * 200})
    assert not isinstance(got, WireError) and got.id == "x" * 200
    err = validate_retrieve({"scopeKey": SCOPE})
    assert isinstance(err, WireError) and set(err.fields) == {"query", "limit"}
    write_err = validate_write({"records": [{"kind": "x", "text": "t", "sourceThreadKey": "t"}]})
    assert isinstance(write_err, WireError) and {"scopeKey", "kind", "records"} <= set(
        write_err.fields
    )


# --------------------------------------------------------------------------- MEM-CLIENT


def _records_body(*recs: Any) -> bytes:
    return json.dumps({"records": list(recs)}).encode()


@pytest.mark.clause("MEM-CLIENT.1")
@pytest.mark.parametrize(
    ("status", "body"),
    [
        (None, None),
        (500, _records_body()),
        (401, b'{"error":"x"}'),
        (200, b"<html>"),
        (200, b"[]"),
        (200, b'{"records": 3}'),
        (302, _records_body()),
    ],
)
def test_retrieve_degrades_with_one_warning(status: int | None, body: bytes | None) -> None:
    got = client_retrieve(status, body)
    assert got.records == () and got.warning is not None and got.warning.startswith("[memory]")


@pytest.mark.clause("MEM-CLIENT.1")
@given(
    recs=records(min_size=0, max_size=4),
    junk=st.lists(st.one_of(st.none(), st.integers(), st.just({"id": "x"})), max_size=3),
    data=st.data(),
)
def test_malformed_records_dropped_one_by_one(
    recs: list[Any], junk: list[Any], data: st.DataObject
) -> None:
    items: list[Any] = [record_to_wire(r) for r in recs]
    for j in junk:
        items.insert(data.draw(st.integers(0, len(items))), j)
    got = client_retrieve(200, _records_body(*items))
    assert got.warning is None and got.records == tuple(recs)


@pytest.mark.clause("MEM-CLIENT.2")
def test_write_client() -> None:
    assert client_write_request(SCOPE, [], 5) is None  # no round trip for an empty batch
    body = client_write_request(SCOPE, [MemoryCandidate("fact", "t", "th")], None)
    assert body == {
        "scopeKey": SCOPE,
        "records": [{"kind": "fact", "text": "t", "sourceThreadKey": "th"}],
    }
    assert client_write(200, b'{"ok":true}') is None
    fail = client_write(400, b'{"error":"text must be non-blank"}')
    assert fail is not None and "400" in fail.message and "text must be non-blank" in fail.message
    assert client_write(None, None) is not None


@pytest.mark.clause("MEM-CLIENT.2", "MEM-CLIENT.5")
@given(
    cands=st.lists(
        st.builds(
            MemoryCandidate,
            st.sampled_from(["fact", "summary"]),
            st.just("txt"),
            st.just("th"),
            st.one_of(st.none(), st.just(("k",))),
            st.one_of(st.none(), st.just("r")),
            st.one_of(st.none(), st.just(0.7)),
            st.one_of(st.none(), st.just("mem:org:acme:1")),
        ),
        min_size=1,
        max_size=3,
    ),
    cap=st.one_of(st.none(), st.integers(1, 10000)),
)
def test_write_request_is_valid_on_the_wire(cands: list[MemoryCandidate], cap: int | None) -> None:
    body = client_write_request(SCOPE, cands, cap)
    assert body is not None and ("cap" in body) is (cap is not None)
    assert "null" not in json.dumps(body)
    parsed = validate_write(json.loads(json.dumps(body)))
    assert not isinstance(parsed, WireError)
    assert parsed.candidates == tuple(cands) and parsed.cap == cap


@pytest.mark.clause("MEM-CLIENT.3")
def test_list_and_forget_clients_throw() -> None:
    assert client_list_request(SCOPE, 20, None) == {"scopeKey": SCOPE, "limit": 20}
    assert client_list_request(SCOPE, 20, "deploy")["query"] == "deploy"
    for status, body in ((500, _records_body()), (None, None), (200, b"nope")):
        assert not isinstance(client_list(status, body), tuple)
        assert not isinstance(client_forget(status, body), bool)
    r = make_record("mem:org:acme:1")
    assert client_list(200, _records_body(record_to_wire(r), {"bad": 1})) == (r,)
    assert client_forget(200, b'{"ok":true,"forgotten":false}') is False
    assert client_forget(200, b'{"ok":true,"forgotten":true}') is True


@pytest.mark.clause("MEM-CLIENT.4")
@given(
    enabled=st.booleans(),
    url=st.one_of(st.none(), st.just(""), st.just("https://mem.example")),
    token_env=st.one_of(st.none(), st.just("CUSTOM_TOKEN")),
    env=st.dictionaries(
        st.sampled_from(["MEMORY_TOKEN", "CUSTOM_TOKEN"]), st.sampled_from(["", "t"]), max_size=2
    ),
)
def test_store_selection(
    enabled: bool, url: str | None, token_env: str | None, env: dict[str, str]
) -> None:
    got = select_store(enabled=enabled, worker_base_url=url, token_env=token_env, env=env)
    var = token_env or "MEMORY_TOKEN"
    if not enabled:
        assert got.kind == "none" and got.warnings == ()
    elif url and env.get(var):
        assert got.kind == "worker" and got.warnings == ()
    else:
        assert got.kind == "in_process"
        (w,) = got.warnings
        assert "restart" in w and ("baseUrl" in w if not url else var in w)


@pytest.mark.clause("MEM-CLIENT.5")
@pytest.mark.parametrize(
    ("value", "cap", "warns"),
    [
        (None, 500, False),
        (1, 1, False),
        (10000, 10000, False),
        (250.0, 250, False),
        (0, 500, True),
        (-5, 500, True),
        (2.5, 500, True),
        (10001, 500, True),
        (float("nan"), 500, True),
        (True, 500, True),
        ("100", 500, True),
    ],
)
def test_cap_config(value: object, cap: int, warns: bool) -> None:
    got, warning = validate_cap_config(value)
    assert got == cap and (warning is not None) is warns
    if warning:
        assert "maxRecordsPerScope" in warning and "500" in warning
    choice = select_store(
        enabled=True,
        worker_base_url="https://m",
        token_env=None,
        env={"MEMORY_TOKEN": "t"},
        max_records_per_scope=value,
    )
    assert choice.cap == cap and len(choice.warnings) == int(warns)


# --------------------------------------------------------------------------- MEM-WIRE.21 caps

_CAPPED = ("sourceThreadKey", "sourceRunId", "supersedes", "keywords")


@pytest.mark.clause("MEM-WIRE.21")
@given(
    st.sampled_from(_CAPPED),
    st.integers(1, 200),
    st.sampled_from(["names it", "names nothing", "names kind"]),
)
def test_a_tighter_cap_explains_a_refusal_only_past_its_floor(
    name: str, length: int, reason_kind: str
) -> None:
    """``tighter_cap``: a refusal is a cap tighter than the reference's only for a value over
    its floor (``CAP_FLOORS``: what every store must accept), and never when the reason names
    a field no cap bounds."""
    value: object = ["k" * length] if name == "keywords" else "v" * length
    body = {"scopeKey": "org:t", "records": [{"kind": "fact", "text": "t", name: value}]}
    reason = {"names it": f"records[0].{name} too long", "names nothing": "bad request",
              "names kind": "records[0].kind must be fact or summary"}[reason_kind]  # fmt: skip
    found = tighter_cap(body, reason)
    if length <= CAP_FLOORS[name] or reason_kind == "names kind":
        assert found is None
    else:
        assert found == (name, length)
