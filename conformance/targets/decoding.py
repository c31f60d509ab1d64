"""Reading an answer's bytes: ``Content-Encoding`` undone under a hard bound, strict JSON at
most :data:`MAX_DEPTH` levels deep, and the short texts a report shows.

Part of the HTTP client (:mod:`conformance.targets.base`, which re-exports every name here).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

MAX_DEPTH = 64


def parse_answer(data: bytes) -> tuple[Any, str, str | None]:
    """(parsed JSON or None, excerpt, body_error) for an answer's bytes: strict JSON
    (``NaN``/``Infinity`` are not JSON), at most :data:`MAX_DEPTH` levels deep."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, _excerpt(data), "not JSON: the body is not UTF-8"
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return None, _excerpt(data), f"not JSON: nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return None, _excerpt(data), f"not JSON ({_json_problem(exc)})"
    if _too_deep(parsed):
        return None, _excerpt(data), f"not JSON: nested deeper than {MAX_DEPTH} levels"
    return parsed, "", None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_problem(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"broken at character {exc.pos}"
    return _short(exc)


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            if d > MAX_DEPTH:
                return True
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            if d > MAX_DEPTH:
                return True
            stack.extend((x, d + 1) for x in v)
    return False


def _excerpt(data: bytes) -> str:
    return data[:200].decode("utf-8", "replace")


def _content_decode(data: bytes, encoding: str, limit: int) -> tuple[bytes, str | None]:
    """Undo ``Content-Encoding`` (we ask for ``identity``; a target may send anything) with a
    hard limit on the decoded size, however the codings are stacked."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip", "deflate"):
            wbits = 47 if coding != "deflate" else 15  # gzip or zlib header (auto)
            try:
                d = zlib.decompressobj(wbits)
                out = d.decompress(data, limit + 1)
                if coding == "deflate" and not out and data:
                    raise zlib.error("empty")
            except zlib.error:
                if coding != "deflate":
                    return data, f"body not decodable as {coding}"
                try:
                    d = zlib.decompressobj(-15)
                    out = d.decompress(data, limit + 1)
                except zlib.error:
                    return data, "body not decodable as deflate"
            if len(out) > limit or d.unconsumed_tail:
                return out[:200], f"answer larger than {limit} bytes once decoded ({coding})"
            data = out
            continue
        return data, f"answer in an unsupported Content-Encoding ({coding})"
    return data, None


def _describe_bytes(data: bytes) -> Any:
    """A raw body for a report: its JSON if it is JSON, else a short description."""
    if len(data) <= 2048:
        try:
            return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            text = data.decode("utf-8", "replace")
            return {"raw": text[:200] + ("…" if len(text) > 200 else "")}
    return {"raw_bytes": len(data), "head": data[:80].decode("utf-8", "replace")}


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    lines = text.splitlines()
    return (lines[0] if lines else text)[:200]
