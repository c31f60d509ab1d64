"""RFC 3339 times on the ledger wire, written purely (no datetime, no clock).

Output is always UTC with exactly three fraction digits, ``2026-11-30T06:49:33.123Z``
(LED-WIRE.5).  Input accepts any RFC 3339 ``date-time``: ``T``/``t``/space separator, ``Z``/``z``
or a numeric offset, and 0–9 fraction digits (digits past the millisecond are truncated toward
the earlier instant).  Years 0001–9999 only.
"""

from __future__ import annotations

import re

MS_PER_DAY = 86_400_000
_MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return (y + (m <= 2), m, d)


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
        return 29 if leap else 28
    return 30 if m in (4, 6, 9, 11) else 31


def format_rfc3339(ms: int) -> str:
    """Render epoch milliseconds as ``YYYY-MM-DDTHH:MM:SS.sssZ`` (LED-WIRE.5)."""
    if not _MIN_MS <= ms <= _MAX_MS:
        raise ValueError(f"instant out of the RFC 3339 range: {ms}")
    days, rem = divmod(ms, MS_PER_DAY)
    y, mo, d = _civil_from_days(days)
    hh, rem = divmod(rem, 3_600_000)
    mi, rem = divmod(rem, 60_000)
    ss, milli = divmod(rem, 1000)
    return f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mi:02d}:{ss:02d}.{milli:03d}Z"


def parse_rfc3339(text: str) -> int | None:
    """Parse an RFC 3339 date-time into epoch milliseconds, or None if malformed (LED-WIRE.5)."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        return None
    y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
    if y < 1 or not 1 <= mo <= 12 or not 1 <= d <= _days_in_month(y, mo):
        return None
    # RFC 3339 allows a leap second (60); it is read as the last millisecond of the minute's end.
    if hh > 23 or mi > 59 or ss > 60:
        return None
    frac = m.group(7) or ""
    milli = int((frac + "000")[:3])
    if m.group(8) is not None:
        offset = 0
    else:
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            return None
        offset = (oh * 60 + om) * 60_000 * (1 if m.group(9) == "+" else -1)
    if ss == 60:
        ss, milli = 59, 999
    ms = _days_from_civil(y, mo, d) * MS_PER_DAY + ((hh * 60 + mi) * 60 + ss) * 1000 + milli
    ms -= offset
    if not _MIN_MS <= ms <= _MAX_MS:
        return None
    return ms
