"""A memory driver ``raw`` step: the request built from its ``args`` (hand-made framing, auth
forms, padding), and whether the answer to it says anything about the store at all.

Part of the Memory Worker driver (:mod:`conformance.drivers.memory.driver`; ops and args in
its docstring).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.jsonutil import short_json
from conformance.oracle.memory import SentRequest
from conformance.targets.base import RAW_HTTP
from conformance.vocabulary import Exchange, StepError

ROUTES = {"write": "/write", "retrieve": "/retrieve", "list": "/list", "forget": "/forget"}


@dataclass(frozen=True)
class RawRequest:
    """What a ``raw`` step sends: ``headers`` as written on the wire (with the framing
    header, if any), ``content_length`` the declared length (``None``: none sent)."""

    method: str
    path: str
    auth: Any
    raw: bytes
    parsed: Any
    headers: list[tuple[str, str]]
    content_length: str | None
    chunked: bool

    def sent(self) -> SentRequest:
        return SentRequest(
            self.method,
            self.path,
            self.parsed,
            self.raw,
            self.content_length,
            self.auth,
            tuple((k, v) for k, v in self.headers if k.lower() != "content-length"),
        )


def build_raw(
    args: dict[str, Any], caps: frozenset[str], check_body: Callable[[str, Any], None]
) -> RawRequest:
    """The request of a ``raw`` step (``check_body(path, parsed)`` refuses a JSON object body
    naming a scope or an id the run may not use); :class:`StepError` for bad ``args``."""
    method = args.get("method", "POST")
    path = args.get("path")
    if not isinstance(method, str) or not isinstance(path, str) or not path.startswith("/"):
        raise StepError("raw needs a method and a path starting with /")
    auth = args.get("auth", True)
    if auth not in (True, False, "wrong", "scheme", "empty", "prefix", "longer", "case"):
        raise StepError(f"raw: unknown auth form {auth!r}")
    raw, parsed = _raw_body(args.get("body", None))
    if isinstance(parsed, dict):
        check_body(path, parsed)
    pad_to = args.get("pad_to")
    if pad_to is not None:
        if not isinstance(pad_to, int) or pad_to < len(raw) or pad_to > 2**21:
            raise StepError(f"raw: pad_to must be an integer >= the body length ({len(raw)})")
        raw += b" " * (pad_to - len(raw))
    headers_arg = args.get("headers") or {}
    if not isinstance(headers_arg, dict):
        raise StepError("raw: headers must be an object")
    chunked = args.get("chunked", False)
    if not isinstance(chunked, bool):
        raise StepError("raw: chunked is true or false")
    if chunked and any(k.lower() in ("content-length", "transfer-encoding") for k in headers_arg):
        raise StepError("raw: a chunked body carries no Content-Length or Transfer-Encoding")
    headers, content_length, explicit_cl = _raw_headers(headers_arg, len(raw))
    if chunked:
        headers.append(("Transfer-Encoding", "chunked"))
        content_length = None
    elif content_length is not None and (method != "GET" or raw or explicit_cl):
        headers.append(("Content-Length", content_length))
    else:
        content_length = None
    if RAW_HTTP not in caps and explicit_cl and content_length is not None:
        raise StepError("raw: a hand-made Content-Length needs the raw_http capability")
    return RawRequest(method, path, auth, raw, parsed, headers, content_length, chunked)


#: The routes a request changes nothing on: a raw request to one that got no answer is sent
#: once more (:func:`sent_again`).
READ_ONLY = frozenset({"/retrieve", "/list", "/healthz"})


def sent_again(req: RawRequest, ex: Exchange) -> bool:
    """Whether a raw step is sent once more, on a fresh connection: it got no HTTP answer at
    all (the connection closed or was reset; not a timeout, not a request the client could not
    send) and its route changes nothing, so a second copy cannot be carried out twice.  The
    case: a body the store answers before reading it (the size fence's early 413) and closes
    on, whose answer an intermediary lost when the store's reset overtook it."""
    if ex.status is not None or ex.timed_out or ex.unsendable:
        return False
    return req.path.split("?", 1)[0] in READ_ONLY


def _raw_body(body_arg: Any) -> tuple[bytes, Any]:
    """A ``raw`` step's body bytes (a string sent as UTF-8 byte for byte, any other JSON value
    serialized) and the JSON it parses to (``None``: none)."""
    parsed: Any = None
    if body_arg is None:
        raw = b""
    elif isinstance(body_arg, str):
        raw = body_arg.encode("utf-8", "surrogatepass")
        try:
            parsed = json.loads(body_arg)
        except ValueError:
            parsed = None
    else:
        raw = json.dumps(body_arg, ensure_ascii=False, separators=(",", ":")).encode()
        parsed = body_arg
    return raw, parsed


def _raw_headers(
    headers_arg: dict[str, Any], length: int
) -> tuple[list[tuple[str, str]], str | None, bool]:
    """A ``raw`` step's own headers, the Content-Length to send for a body of ``length`` bytes
    (as given, or the true length zero-padded) and whether the step gave one."""
    headers: list[tuple[str, str]] = []
    content_length: str | None = str(length)
    explicit_cl = False
    for k, v in headers_arg.items():
        if k.lower() == "content-length":
            explicit_cl = True
            if isinstance(v, dict) and set(v) == {"zero_pad"} and isinstance(v["zero_pad"], int):
                content_length = str(length).zfill(v["zero_pad"])  # the true length, 0-padded
            elif v is None or isinstance(v, str):
                content_length = v
            else:
                raise StepError('raw: Content-Length is a string, null or {"zero_pad": n}')
            continue
        if k.lower() == "authorization":
            raise StepError("raw: set the Authorization form with auth, not a header")
        if not isinstance(v, str):
            raise StepError(f"raw: header {k} must be a string")
        headers.append((k, v))
    return headers, content_length, explicit_cl


def _framing(sent: SentRequest) -> tuple[bool, int | None]:
    """(hand-made framing, declared length): a request whose framing an HTTP layer in front of
    the store may answer itself — a hand-made, missing or chunked length."""
    chunked = any(k.lower() == "transfer-encoding" for k, _ in sent.extra_headers)
    declared: int | None = None
    cl = sent.content_length
    if cl is not None and cl.strip().isdigit() and cl.strip().isascii():
        declared = int(cl.strip())
    if cl is None:
        hand_made = chunked or sent.method == "POST"
    else:
        hand_made = declared != len(sent.raw)
    return hand_made and sent.path.split("?", 1)[0] in ROUTES.values(), declared


def _not_observable(op: str, sent: SentRequest, ex: Exchange) -> str | None:
    """Why this answer says nothing about the store, or ``None``.

    Only for probes whose framing a runtime or an edge answers itself (a hand-made, missing
    or chunked ``Content-Length``), and only for answers no store of this protocol gives:
    every answer of the protocol is JSON, so a non-JSON answer came from the HTTP layer in
    front of the store (workerd's plain-text 400 on ``Content-Length: 0x8``); a request
    declaring more bytes than it sends may be held by that layer until the deadline; and a
    request the client cannot put on the wire was never asked.
    """
    if ex.unsendable:
        return f"this client cannot send the request ({ex.transport_error})"
    if op != "raw":
        return None
    hand_made, declared = _framing(sent)
    if not hand_made:
        return None
    if ex.status is not None and ex.body is None:
        kind = ex.content_type.split(";", 1)[0].strip() or "no Content-Type"
        said = short_json(ex.raw_excerpt, 60)
        return (
            f"HTTP {ex.status} ({kind}) {said} is not JSON — the HTTP layer in front of the"
            " store answered this framing itself"
        )
    if ex.timed_out and declared is not None and declared > len(sent.raw):
        return (
            f"the request declares {declared} bytes and sends {len(sent.raw)}; the HTTP layer"
            " in front of the store waited for the rest until the deadline"
        )
    return None


def _json_media_type(content_type: str) -> bool:
    """Absent, ``application/json`` or a ``+json`` type (any parameters): MEM-WIRE.1."""
    media = content_type.split(";", 1)[0].strip().lower()
    return not media or media == "application/json" or media.endswith("+json")


def _describe(parsed: Any, raw: bytes) -> Any:
    if parsed is not None:
        return parsed
    if len(raw) <= 200:
        return {"raw": raw.decode("utf-8", "replace")}
    return {"raw_bytes": len(raw), "head": raw[:60].decode("utf-8", "replace")}
