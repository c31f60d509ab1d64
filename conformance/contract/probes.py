"""The deterministic probes: missing and wrong credentials on every data route, oversized,
unsized (streamed) and badly sized bodies, and a body of exactly the largest allowed size."""

from __future__ import annotations

import json
from typing import Any

from conformance.contract.client import Http, unanswered, without_token
from conformance.contract.model import (
    AUTH,
    ERROR_SHAPE,
    LEDGER_METHODS,
    LENGTH,
    MAX_BODY,
    MEMORY_ROUTES,
    ORDER,
    SIZE,
    Run,
)
from conformance.scrub import shown, window
from conformance.vocabulary import Exchange, Secret


def excerpt(ex: Exchange, limit: int = 300) -> str:
    error = unanswered(ex)
    if error:
        return error
    head = ex.answer[: 4 * window(limit)]
    text = head.decode("utf-8", "replace") + ("…" if len(ex.answer) > len(head) else "")
    return f"{ex.status} {shown(text, limit)}"


def _error_shape_ok(protocol: str, ex: Exchange) -> bool:
    body = ex.body
    if not isinstance(body, dict) or set(body) != {"error"}:
        return False
    err = body["error"]
    if protocol == "memory":
        return isinstance(err, str) and bool(err)
    return (
        isinstance(err, dict)
        and isinstance(err.get("code"), int)
        and not isinstance(err.get("code"), bool)
        and isinstance(err.get("message"), str)
    )


def expect_status(
    run: Run,
    ex: Exchange,
    want: set[int],
    *,
    protocol: str,
    route: str,
    clause: str,
    title: str,
    check: str,
    what: str = "",
) -> None:
    label = f"POST {route}"
    run.count(label, "probes")
    if unanswered(ex) is not None or ex.status not in want:
        expected = " or ".join(map(str, sorted(want)))
        prefix = f"{what}: " if what else ""
        run.add(
            ex,
            clause=clause,
            title=title,
            detail=f"{prefix}expected {expected}, got {excerpt(ex, 160)}",
            protocol=protocol,
            route=route,
            check=check,
        )
        return
    if ex.status >= 400 and not _error_shape_ok(protocol, ex):
        run.add(
            ex,
            clause=ERROR_SHAPE[protocol],
            title=f"{route}: the {ex.status} answer is not the protocol's error body",
            detail=excerpt(ex),
            protocol=protocol,
            route=route,
            check="error body",
        )


def expect_refused_credentials(
    run: Run, ex: Exchange, *, protocol: str, route: str, what: str
) -> None:
    """A request without the exact bearer is 401 whatever else it holds (the auth clause)."""
    expect_status(
        run,
        ex,
        {401},
        protocol=protocol,
        route=route,
        clause=AUTH[protocol],
        title=f"{route} answers a request without the exact bearer",
        check="auth",
        what=what,
    )


def _routes(protocol: str) -> dict[str, dict[str, Any]]:
    if protocol == "memory":
        return MEMORY_ROUTES
    return {f"/ledger/{m}": body for m, body in LEDGER_METHODS.items()}


def probe_auth(run: Run, protocol: str, token: Secret | None) -> None:
    """Every data route refuses a request without the exact bearer, before its body."""
    http = run.http
    wrong: list[tuple[str, dict[str, str]]] = [
        ("no Authorization header", {}),
        ("a wrong token", {"Authorization": "Bearer memspec-contract-wrong-token"}),
        ("an empty bearer", {"Authorization": "Bearer "}),
        ("another scheme", {"Authorization": "Basic bWVtc3BlYzp3cm9uZw=="}),
    ]
    if token:
        secret = token.reveal()
        wrong += [
            ("the token without the Bearer scheme", {"Authorization": secret}),
            ("the token with a suffix", {"Authorization": f"Bearer {secret}x"}),
        ]
    for route, body in _routes(protocol).items():
        raw = json.dumps(body).encode()
        for what, headers in wrong:
            ex = http.send(
                "POST", route, raw, {"Content-Type": "application/json", **headers}, auth=False
            )
            ex = without_token(ex, token)
            expect_refused_credentials(run, ex, protocol=protocol, route=route, what=what)
        # Auth is judged before the length: no token and no length is still 401.
        ex = http.send("POST", route, b"", {}, auth=False, framing="none")
        expect_status(
            run,
            ex,
            {401},
            protocol=protocol,
            route=route,
            clause=ORDER[protocol],
            title=f"{route}: an unauthenticated unsized request is not 401",
            check="auth order",
            what="no credentials and no Content-Length",
        )


def _fence_cases(
    http: Http, protocol: str, route: str, raw: bytes
) -> list[tuple[str, Exchange, set[int], str]]:
    """Each body the fence must refuse, sent to ``route``: what it is, the exchange, the
    statuses wanted and the clause."""
    json_type = {"Content-Type": "application/json"}
    return [
        (
            "an unsized (chunked) body",
            http.send("POST", route, raw, json_type, framing="chunked"),
            {411},
            LENGTH[protocol],
        ),
        (
            "no Content-Length",
            http.send("POST", route, b"", json_type, framing="none"),
            {411},
            LENGTH[protocol],
        ),
        (
            "Content-Length +5",
            http.send("POST", route, b"{}   ", json_type, framing="raw", declared_length="+5"),
            {411},
            LENGTH[protocol],
        ),
        (
            "Content-Length 0x10",
            http.send(
                "POST",
                route,
                b"{}" + b" " * 14,
                json_type,
                framing="raw",
                declared_length="0x10",
            ),
            {411},
            LENGTH[protocol],
        ),
        (
            "a body one byte over 512 KiB",
            http.send(
                "POST",
                route,
                raw + b" " * (MAX_BODY + 1 - len(raw)),
                json_type,
                hold_body=True,
            ),
            {413},
            SIZE[protocol],
        ),
    ]


def _probe_largest_body(run: Run, protocol: str, route: str, raw: bytes) -> None:
    """A body of exactly 512 KiB (``raw`` padded) passes the fence of ``route``."""
    json_type = {"Content-Type": "application/json"}
    ex = run.http.send("POST", route, raw + b" " * (MAX_BODY - len(raw)), json_type)
    run.count(f"POST {route}", "probes")
    if unanswered(ex) is not None or ex.status in (411, 413) or (ex.status or 0) >= 500:
        run.add(
            ex,
            clause=SIZE[protocol],
            title=f"{route}: a body of exactly 512 KiB is refused by the size fence",
            detail=f"expected it to pass the fence, got {excerpt(ex)}",
            protocol=protocol,
            route=route,
            check="size fence",
        )


def probe_fence(run: Run, protocol: str) -> None:
    """Unsized, badly sized and oversized bodies; the largest allowed body passes the fence."""
    for route, body in _routes(protocol).items():
        raw = json.dumps(body).encode()
        for what, ex, want, clause in _fence_cases(run.http, protocol, route, raw):
            expect_status(
                run,
                ex,
                want,
                protocol=protocol,
                route=route,
                clause=clause,
                title=(
                    f"{route} answers an unsized or badly sized body without 411"
                    if want == {411}
                    else f"{route} answers a body over 512 KiB without 413"
                ),
                check="size fence",
                what=what,
            )
        _probe_largest_body(run, protocol, route, raw)
