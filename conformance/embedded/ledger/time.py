"""Instants on the ledger's wire: epoch milliseconds inside, RFC 3339 outside (LED-WIRE.5),
the store's clock, lone surrogates in params, and the allowed time styles of the variants."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from conformance.embedded.ledger.params import invalid

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_INSTANT_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
MAX_INSTANT_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"([Zz]|[+-]\d{2}:\d{2})"
)


def format_time(ms: int) -> str:
    """Epoch milliseconds as RFC 3339 UTC with exactly three fraction digits (LED-WIRE.5)."""
    m = _EPOCH + timedelta(milliseconds=ms)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{m.microsecond // 1000:03d}Z"
    )


def parse_time(value: object, name: str) -> int:
    """An RFC 3339 date-time (``T``/``t``/space, ``Z``/``z`` or an offset, 0-9 fraction digits)
    as epoch milliseconds; digits past the millisecond are truncated, a leap second ``:60``
    reads as the minute's last millisecond (LED-WIRE.5).  Anything else is a bad value."""
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be an RFC 3339 date-time string")
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise invalid(f"'{name}' is not an RFC 3339 date-time: {value!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, offset = m.group(7), m.group(8)
    millis = int(((fraction or "") + "000")[:3])
    if second == 60:
        second, millis = 59, 999
    try:
        if offset in ("Z", "z"):
            tz = UTC
        else:
            hours, minutes = int(offset[1:3]), int(offset[4:6])
            if hours > 23 or minutes > 59:
                raise ValueError("offset out of range")
            sign = 1 if offset[0] == "+" else -1
            tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
        moment = datetime(year, month, day, hour, minute, second, tzinfo=tz)
    except ValueError:
        raise invalid(f"'{name}' is not a valid instant: {value!r}") from None
    delta = moment - _EPOCH
    ms = (delta.days * 86_400 + delta.seconds) * 1000 + millis
    if not MIN_INSTANT_MS <= ms <= MAX_INSTANT_MS:
        raise invalid(f"'{name}' lies outside the years 0001-9999: {value!r}")
    return ms


def real_clock() -> int:
    return time.time_ns() // 1_000_000


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def surrogate_param(params: dict[str, Any]) -> str | None:
    """The first param whose name or value holds a lone surrogate (``\\ud800``): such a string
    is not text and cannot be stored (LED-WIRE.2); None when there is none."""
    for name, value in params.items():
        if _has_surrogate(name) or _has_surrogate(value):
            return name
    return None


_TIME_KEYS = ("validFrom", "validTo", "createdAt", "updatedAt", "expiresAt", "now")


def restyle_times(value: Any, style: Callable[[int], str]) -> Any:
    """Every time field of an answer rewritten by ``style`` (the allowed variants of LED-WIRE.5)."""
    if isinstance(value, list):
        return [restyle_times(v, style) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _TIME_KEYS and isinstance(v, str) and _RFC3339.fullmatch(v):
                out[k] = style(parse_time(v, k))
            else:
                out[k] = restyle_times(v, style)
        return out
    return value


def iso_style(ms: int) -> str:
    """``datetime.isoformat()``: ``+00:00``, microseconds, no fraction at all when zero."""
    return (_EPOCH + timedelta(milliseconds=ms)).isoformat()


def offset_style(ms: int) -> str:
    return format_time(ms)[:-1] + "+00:00"


def seconds_style(ms: int) -> str:
    return format_time(ms)[:-5] + "Z"
