"""``handle``: what a conforming Worker may answer to one HTTP request (MEM-WIRE.1,
MEM-WIRE.2, MEM-WIRE.3, MEM-WIRE.4, MEM-WIRE.5, MEM-WIRE.6, MEM-WIRE.7, MEM-WIRE.8, MEM-WIRE.9,
MEM-WIRE.10, MEM-WIRE.11, MEM-WIRE.12, MEM-WIRE.13, MEM-WIRE.14, MEM-WIRE.15, MEM-WIRE.16).

The checks in their fixed order (MEM-WIRE.4): route, method, bearer, ``Content-Length``, then
the body -- every implementation-defined reading of its bytes and its values gives an option of
its own -- and finally the store model's answer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Final

from reference.jsonvalues import parse_json
from reference.memory.engine import DEFAULT_SCOPE_CAP, has_unassigned
from reference.memory.store import (
    StoreState,
    WriteResult,
    active_records,
    store_forget,
    store_retrieve,
    store_write,
)
from reference.memory.wire.allowed import (
    Allowed,
    ErrorBody,
    ExactBody,
    HealthBody,
    Option,
    RecordsBody,
)
from reference.memory.wire.codec import WireError
from reference.memory.wire.request import (
    DATA_ROUTES,
    HEALTH_ROUTE,
    WireRequest,
    authorized,
    content_length_fault,
)
from reference.memory.wire.validation import (
    LENIENT,
    STRICT,
    ForgetBody,
    ListBody,
    Policy,
    RetrieveBody,
    WriteBody,
    validate_forget,
    validate_list,
    validate_retrieve,
    validate_write,
)


def _error(
    state: StoreState,
    status: int,
    note: str,
    fields: tuple[str, ...] = (),
    reference_only: bool = False,
) -> Option:
    """An error option: ``{"error": <reason>}`` naming one of ``fields`` when given (MEM-WIRE.8,
    MEM-WIRE.20); ``reference_only``: the faults break only bounds of MEM-WIRE.21."""
    return Option(status, ErrorBody(fields, reference_only), state, note)


def _only(option: Option, now: int) -> Allowed:
    """The one answer a request allows."""
    return Allowed((option,), now)


def _process(
    state: StoreState,
    route: str,
    parsed: object,
    now: int,
    cap_default: int,
    newer_unicode: bool = False,
) -> Option:
    """The 200 option of a valid body: the store model's answer and the state after (MEM-WIRE.11 to
    MEM-WIRE.15)."""
    if isinstance(parsed, RetrieveBody):
        active = tuple(active_records(state, parsed.scope_key))
        # The option's state is the model's own pick (``store_retrieve``); ``next_state`` bumps
        # exactly the records the target returned, starting from ``before``.
        after, _ = store_retrieve(state, parsed.scope_key, parsed.query, parsed.limit, now)
        spec = RecordsBody(
            "/retrieve",
            parsed.scope_key,
            active=active,
            query=parsed.query,
            limit=parsed.limit,
            now=now,
            before=state,
        )
        return Option(200, spec, after, "ranked retrieval (any order within a tie)")
    if isinstance(parsed, WriteBody):
        cap = parsed.cap if parsed.cap is not None else cap_default
        after, res = store_write(
            state, parsed.scope_key, parsed.candidates, now, cap, newer_unicode=newer_unicode
        )
        note = "write batch, keys lower-cased by a newer Unicode" if newer_unicode else ""
        return Option(
            200, ExactBody(write_response(res)), after, note or "write batch", newer_unicode
        )
    if isinstance(parsed, ListBody):
        spec = RecordsBody(
            "/list",
            parsed.scope_key,
            active=tuple(active_records(state, parsed.scope_key)),
            query=parsed.query,
            limit=parsed.limit,
            now=now,
        )
        return Option(200, spec, state, "newest first")
    assert isinstance(parsed, ForgetBody)
    after, forgotten = store_forget(state, parsed.scope_key, parsed.id)
    return Option(200, ExactBody({"ok": True, "forgotten": forgotten}), after, "forget")


def write_response(result: WriteResult) -> dict[str, object]:
    """``{"ok": true, "inserted", "deduped", "superseded", "evicted"}`` (MEM-WIRE.13)."""
    return {
        "ok": True,
        "inserted": result.inserted,
        "deduped": result.deduped,
        "superseded": result.superseded,
        "evicted": result.evicted,
    }


_VALIDATORS: Final[dict[str, Callable[[object, Policy], object]]] = {
    "/retrieve": validate_retrieve,
    "/write": validate_write,
    "/list": validate_list,
    "/forget": validate_forget,
}


def _decodings(body: bytes) -> list[tuple[str | None, str]]:
    """(text or None for "400", note) per implementation-defined way to read the bytes."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        lenient = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
        return [(None, "body is not valid UTF-8: 400"), (lenient, "decoded with U+FFFD")]
    if text.startswith("\ufeff"):
        return [(None, "body starts with a BOM: 400"), (text[1:], "BOM skipped")]
    return [(text, "")]


def handle(
    state: StoreState,
    request: WireRequest,
    now: int,
    token: str | None,
    cap_default: int = DEFAULT_SCOPE_CAP,
) -> tuple[StoreState, Allowed]:
    """What a conforming Memory Worker may answer, and the state after (MEM-WIRE.1, MEM-WIRE.2,
    MEM-WIRE.3, MEM-WIRE.4, MEM-WIRE.5, MEM-WIRE.6, MEM-WIRE.7, MEM-WIRE.8, MEM-WIRE.9, MEM-WIRE.10,
    MEM-WIRE.11, MEM-WIRE.12, MEM-WIRE.13, MEM-WIRE.14, MEM-WIRE.15, MEM-WIRE.16).

    Checks in order: unknown path 404; wrong method 405 (``GET /healthz``, ``POST`` data
    routes); missing or wrong bearer, or no server token, 401; Content-Length 411/413 before
    the body is read; body not JSON / not an object / a field rule 400 naming the field;
    otherwise 200 with the store model's answer.  The returned state is the first option's;
    when the target may pick among options use ``Allowed.next_state``.
    """
    early = _before_body(state, request, now, token)
    if early is not None:
        return state, early
    options: list[Option] = []
    for text, note in _decodings(request.body):
        if text is None:
            options.append(_error(state, 400, note))
            continue
        options += _body_options(state, request.route, text, now, cap_default)
    # Strict choices first so that the primary state is the conservative one.
    if len(options) > 1:
        options.sort(key=lambda o: 0 if o.status == 400 else 1)
    deduped: list[Option] = []
    for o in options:
        # Same answer, other state (a newer Unicode's dedup bumping another twin): kept apart.
        if not any(
            d.status == o.status and d.body == o.body and d.state == o.state for d in deduped
        ):
            deduped.append(o)
    return deduped[0].state, Allowed(tuple(deduped), now)


def fence_statuses(request: WireRequest, token: str | None) -> frozenset[int]:
    """Every check before the body that ``request`` fails, as the status it answers (MEM-WIRE.4).

    404 for a path that is no route; 405 for a method a route does not serve (``non-POST`` on a
    data route, or on any path that is not ``/healthz``); on a data route, 401 for a missing or
    wrong bearer and 411/413 for its ``Content-Length``.  :func:`handle` answers the
    first of them in the reference Worker's order 404, 405, 401, 411, 413; the seed orders none
    of them, so a store answering another one deviates from the reference (MEM-WIRE.4) but not
    from the seed.
    """
    route = request.route
    out: set[int] = set()
    data = route in DATA_ROUTES
    if not data and route != HEALTH_ROUTE:
        out.add(404)
    if (data or route != HEALTH_ROUTE) and request.method != "POST":
        out.add(405)
    if data:
        if not authorized(request, token):
            out.add(401)
        fault = content_length_fault(request.header("Content-Length"))
        if fault is not None:
            out.add(fault)
    return frozenset(out)


def _before_body(
    state: StoreState, request: WireRequest, now: int, token: str | None
) -> Allowed | None:
    """The answer when a check before the body decides it (MEM-WIRE.1, MEM-WIRE.2, MEM-WIRE.3,
    MEM-WIRE.5, MEM-WIRE.6), else ``None``: route, method, bearer, ``Content-Length``."""
    route = request.route
    if route != HEALTH_ROUTE and route not in DATA_ROUTES:
        return _only(_error(state, 404, "unknown path"), now)
    if route == HEALTH_ROUTE:
        if request.method != "GET":
            # §15: "Everything else is 404; non-POST is 405" — a POST is not non-POST, so 404
            # is the literal reading for POST /healthz; 405 (GET only) is read as well, for
            # every method but GET (MEM-WIRE.2).
            return Allowed(
                (
                    _error(state, 405, "/healthz is GET only"),
                    _error(state, 404, "/healthz serves GET only (404: everything else)"),
                ),
                now,
            )
        return _only(Option(200, HealthBody(), state, "health check"), now)
    if request.method != "POST":
        return _only(_error(state, 405, "data routes are POST only"), now)
    if not authorized(request, token):
        return _only(_error(state, 401, "bearer missing or wrong"), now)
    fault = content_length_fault(request.header("Content-Length"))
    if (
        fault == 411
        and request.header("Content-Length") is None
        and request.header("Transfer-Encoding") is None
        and not request.body
    ):
        # A bodiless POST with no length: an edge stamps ``Content-Length: 0`` on it, so the
        # store reads an empty body (400) — or it arrives as sent (411).  MEM-WIRE.5.
        return Allowed(
            (
                _error(state, 411, "no Content-Length"),
                _error(state, 400, "empty body (the edge stamped Content-Length: 0)"),
            ),
            now,
        )
    if fault is not None:
        note = "Content-Length not a digit string" if fault == 411 else "body over 512 KiB"
        return _only(_error(state, fault, note), now)
    return None


@lru_cache(maxsize=16)
def read_body(route: str, text: str) -> tuple[object, object] | None:
    """One reading of a data route's body, as ``(strict, lenient)``: what each policy makes of
    it, a valid body or a ``WireError`` (MEM-WIRE.8 to MEM-WIRE.15); ``None`` when it is not
    JSON (MEM-WIRE.7).

    The strict policy refuses all the lenient one refuses and more, and a body it accepts reads
    the same under both (see ``Policy``): the lenient reading is made only after a strict
    refusal.  Memoized per (route, text), a pure function of two strings: an oracle asks it
    once per live model world, and again for a write it admitted."""
    try:
        obj = parse_json(text)
    except (ValueError, RecursionError):
        return None
    validate = _VALIDATORS[route]
    strict = validate(obj, STRICT)
    lenient = strict if not isinstance(strict, WireError) else validate(obj, LENIENT)
    return strict, lenient


def _unicode_sensitive(state: StoreState, body: WriteBody) -> bool:
    """Whether a candidate or an active record of the scope holds a character this Python's
    ``unicodedata`` does not know (only then may a newer Unicode dedup otherwise)."""
    return any(has_unassigned(c.text) for c in body.candidates) or any(
        has_unassigned(r.text) for r in active_records(state, body.scope_key)
    )


def _body_options(
    state: StoreState, route: str, text: str, now: int, cap_default: int
) -> list[Option]:
    """The options for one reading of the body: not JSON or a field rule broken under every
    policy is 400 (MEM-WIRE.7, MEM-WIRE.8); else the store's answer, with a 400 as well when
    the strict policy refuses it (MEM-WIRE.9, MEM-WIRE.10)."""
    read = read_body(route, text)
    if read is None:
        return [_error(state, 400, "body is not JSON")]
    strict, lenient = read
    if isinstance(lenient, WireError):
        assert isinstance(strict, WireError)
        fields = strict.fields if strict.field is not None else ()
        return [_error(state, 400, strict.reason, fields, strict.reference_only)]
    options = [_process(state, route, lenient, now, cap_default)]
    if isinstance(lenient, WriteBody) and _unicode_sensitive(state, lenient):
        # A store on a newer Unicode may lower-case a character this Python does not know,
        # so two dedup keys unequal here may be one there (MEM-WRITE.2): both readings.
        newer = _process(state, route, lenient, now, cap_default, newer_unicode=True)
        if newer.state != options[0].state:
            options.append(newer)
    if isinstance(strict, WireError):
        options.append(_error(state, 400, "implementation-defined rejection", strict.fields))
    return options
