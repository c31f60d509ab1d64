"""An HTTP request as the Worker sees it, the protocol's limits, and the checks before the body.

The limits of every field (MEM-WIRE.9 to MEM-WIRE.15), the routes (MEM-WIRE.1), the bearer check
(MEM-WIRE.3) and the ``Content-Length`` check that runs before the body is read (MEM-WIRE.5,
MEM-WIRE.6).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

# --------------------------------------------------------------------------- limits

MAX_BODY_BYTES: Final = 524_288
MAX_SCOPE_KEY: Final = 200
MAX_QUERY: Final = 4000
MIN_LIMIT: Final = 1
MAX_LIMIT: Final = 50
MAX_RECORDS: Final = 50
MAX_TEXT: Final = 4000
MAX_THREAD_KEY: Final = 200
MAX_KEYWORDS: Final = 20
MAX_KEYWORD: Final = 64
MAX_RUN_ID: Final = 200
MAX_SUPERSEDES: Final = 200
MIN_CAP: Final = 1
MAX_CAP: Final = 10_000
MAX_FORGET_ID: Final = 200

DATA_ROUTES: Final[tuple[str, ...]] = ("/retrieve", "/write", "/list", "/forget")
HEALTH_ROUTE: Final = "/healthz"

_DIGITS: Final = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request as the Worker sees it; ``path`` may carry a query string."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The header's value (case-insensitive name); repeats joined with ``", "`` as fetch does.

        Optional whitespace (SP, HTAB) around a field value is not part of it (RFC 9110 §5.5),
        so it is stripped here exactly as every HTTP parser strips it.
        """
        want = name.lower()
        values = [v.strip(" \t") for k, v in self.headers if k.lower() == want]
        return ", ".join(values) if values else None

    @property
    def route(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]


def make_request(
    path: str,
    payload: object,
    *,
    token: str | None,
    method: str = "POST",
    content_length: str | None = "auto",
) -> WireRequest:
    """A JSON request as a well-behaved client sends it (helper for tests and the harness).

    ``content_length="auto"`` declares the body's byte length; ``None`` sends no header; any
    other string is sent verbatim.  ``payload`` may be ``bytes`` to send a raw body.
    """
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers: list[tuple[str, str]] = [("Content-Type", "application/json")]
    if token is not None:
        headers.append(("Authorization", f"Bearer {token}"))
    if content_length == "auto":
        headers.append(("Content-Length", str(len(body))))
    elif content_length is not None:
        headers.append(("Content-Length", content_length))
    return WireRequest(method, path, tuple(headers), body)


def content_length_fault(value: str | None) -> int | None:
    """411, 413 or ``None`` for a Content-Length header value (MEM-WIRE.5, MEM-WIRE.6).

    Only a plain ASCII digit string (leading zeros allowed) declares a length; absent, blank
    or any other form (``0x10``, ``5e2``, ``12.5``, ``+5``) is 411.  A declared length
    over ``MAX_BODY_BYTES`` is 413.
    """
    if value is None or not _DIGITS.fullmatch(value):
        return 411
    return 413 if int(value) > MAX_BODY_BYTES else None


def authorized(request: WireRequest, token: str | None) -> bool:
    """``Authorization`` is exactly ``Bearer <token>`` and the server token is set (MEM-WIRE.3)."""
    if not token:
        return False
    return request.header("Authorization") == f"Bearer {token}"
