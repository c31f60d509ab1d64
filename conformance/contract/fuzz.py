"""The generated cases: schemathesis builds valid and invalid requests from the OpenAPI
documents, the contract's client sends them, and schemathesis' checks judge the answers."""

from __future__ import annotations

import json
import time
from typing import Any

from conformance.contract.client import answer_headers, sent_headers, unanswered
from conformance.contract.model import (
    ANSWER_MEMORY,
    SPEC_FILES,
    SPECS_DIR,
    VALIDATION_MEMORY,
    OutOfTime,
    Run,
)
from conformance.contract.probes import (
    excerpt,
    expect_refused_credentials,
)
from conformance.vocabulary import Exchange


def _load_schema(protocol: str) -> Any:
    import schemathesis

    return schemathesis.openapi.from_path(SPECS_DIR / SPEC_FILES[protocol])


def operations(protocol: str) -> list[Any]:
    ops = [r.ok() for r in _load_schema(protocol).get_all_operations()]
    return [op for op in ops if "test-only" not in (op.tags or [])]


def _checks(negative: bool) -> list[tuple[str, Any]]:
    from schemathesis.checks import (
        content_type_conformance,
        negative_data_rejection,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    out = [
        ("server error", not_a_server_error),
        ("status code", status_code_conformance),
        ("content type", content_type_conformance),
        ("response schema", response_schema_conformance),
    ]
    if negative:
        out.append(("invalid input accepted", negative_data_rejection))
    return out


def _clause_for(protocol: str, route: str, check: str, status: int | None) -> str:
    if protocol == "memory":
        if check == "invalid input accepted":
            return VALIDATION_MEMORY.get(route, "MEM-WIRE.8")
        if check in ("server error", "status code", "no answer"):
            return "MEM-WIRE.4" if route != "/healthz" else "MEM-WIRE.1"
        if status is not None and status >= 400:
            return "MEM-WIRE.8"
        return ANSWER_MEMORY.get(route, "MEM-WIRE.16")
    if check == "invalid input accepted":
        return "LED-WIRE.2"
    if check in ("server error", "status code", "no answer"):
        return "LED-WIRE.1"
    if status is not None and status >= 400:
        return "LED-WIRE.2"
    return "LED-WIRE.4" if route.endswith("_records") or "record" in route else "LED-WIRE.6"


def _negative_parts(case: Any) -> tuple[bool, bool]:
    """(body negative, headers negative) of a generated case."""
    from schemathesis import GenerationMode

    meta = getattr(case, "meta", None)
    components = getattr(meta, "components", None) or {}
    body = header = False
    for location, info in components.items():
        name = getattr(location, "value", str(location)).lower()
        if getattr(info, "mode", None) == GenerationMode.NEGATIVE:
            if name == "body":
                body = True
            elif name == "header":
                header = True
    return body, header


def _as_httpx(ex: Exchange, url: str) -> Any:
    import datetime

    import httpx

    request = httpx.Request(
        ex.method, url + ex.path, headers=sent_headers(ex), content=ex.request_bytes
    )
    response = httpx.Response(
        ex.status or 0,
        headers=list(answer_headers(ex).items()),
        content=ex.answer,
        request=request,
    )
    response.elapsed = datetime.timedelta(0)
    return response


def _request(op: Any, case: Any, header_negative: bool) -> tuple[dict[str, str], bytes] | None:
    """The headers and body to send for one generated case (the generated Authorization kept
    only when the credentials are the negative part); ``None``: a body JSON cannot encode."""
    headers = {k: str(v) for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    if header_negative and "Authorization" in (case.headers or {}):
        headers["Authorization"] = str(case.headers["Authorization"])  # a generated wrong one
    payload = b""
    if op.method.upper() == "POST":
        body = case.body
        if type(body).__name__ == "NotSet":
            payload = b""
        else:
            try:
                payload = json.dumps(body, ensure_ascii=True).encode()
            except (TypeError, ValueError):
                return None
        headers.setdefault("Content-Type", case.media_type or "application/json")
    return headers, payload


def _validate(
    run: Run, protocol: str, op: Any, case: Any, ex: Exchange, body_negative: bool
) -> None:
    """Judge an answer with schemathesis's checks, one divergence (or note) per check."""
    from schemathesis.core.failures import FailureGroup

    route, label = op.path, op.label
    checks = _checks(body_negative)
    response = _as_httpx(ex, run.http.base)
    for name, fn in checks:
        try:
            case.validate_response(response, checks=[fn])
        except FailureGroup as group:
            failure = group.exceptions[0]
            message = " ".join(str(getattr(failure, "message", "") or failure).split())[:400]
            run.add(
                ex,
                clause=_clause_for(protocol, route, name, ex.status),
                title=f"{label}: {getattr(failure, 'title', name) or name}",
                detail=f"{message} (answer: {excerpt(ex, 200)})",
                protocol=protocol,
                route=route,
                check=name,
            )
        except Exception as exc:  # noqa: BLE001 - a check that cannot judge is a note
            run.notes.append(f"{label}: check {name} could not run: {type(exc).__name__}")


def check_case(run: Run, protocol: str, op: Any, case: Any, negative: bool) -> None:
    """Send one generated case and judge the answer."""
    route = op.path
    body_negative, header_negative = _negative_parts(case) if negative else (False, False)
    if body_negative:
        header_negative = False  # judge the invalid body with valid credentials
    use_auth = not header_negative and op.label != "GET /healthz"
    request = _request(op, case, header_negative)
    if request is None:
        return
    headers, payload = request
    ex = run.http.send(op.method.upper(), route, payload, headers, auth=use_auth)
    label = op.label
    run.count(label, "negative" if negative else "positive")
    error = unanswered(ex)
    if error is not None:
        run.add(
            ex,
            clause=_clause_for(protocol, route, "no answer", None),
            title=f"{label}: no answer",
            detail=error,
            protocol=protocol,
            route=route,
            check="no answer",
        )
        return
    if header_negative and op.label != "GET /healthz":
        # Credentials missing or wrong: whatever the body, the answer is 401.
        expect_refused_credentials(
            run,
            ex,
            protocol=protocol,
            route=route,
            what="a generated request without valid credentials",
        )
        return
    _validate(run, protocol, op, case, ex, negative and body_negative)


def fuzz_operation(
    run: Run,
    protocol: str,
    op: Any,
    negative: bool,
    examples: int,
    seed: int | None,
    until: float = float("inf"),
) -> None:
    """Up to ``examples`` generated cases for one operation, stopping at ``until``."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import HypothesisException

    mode = schemathesis.GenerationMode("negative" if negative else "positive")
    done = [0]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=seed is None,
    )
    @given(case=op.as_strategy(generation_mode=mode))
    def explore(case: Any) -> None:
        if done[0] and time.monotonic() > until:  # every operation and mode gets one case
            raise OutOfTime
        done[0] += 1
        check_case(run, protocol, op, case, negative)

    if seed is not None:
        explore = hypothesis_seed(seed)(explore)
    from conformance.machines.constants import pinned_local_constants

    try:
        with pinned_local_constants():  # the cases follow the seed, not the imported modules
            explore()
    except OutOfTime:
        run.notes.append(
            f"{op.label} ({'negative' if negative else 'positive'}): time budget spent"
        )
    except HypothesisException as exc:
        run.notes.append(f"{op.label}: no cases generated ({type(exc).__name__})")
