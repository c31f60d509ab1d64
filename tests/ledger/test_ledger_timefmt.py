"""RFC 3339 on the ledger wire: exact output form, tolerant input, pure arithmetic."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.timefmt import format_rfc3339, parse_rfc3339
from tests.common.ledger_strategies import T0

pytestmark = pytest.mark.clause("LED-WIRE.5")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = st.integers(-62_135_596_800_000, 253_402_300_799_999)
WIRE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def _calendar(dt: datetime) -> str:
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )


@pytest.mark.parametrize(
    "ms, text",
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (T0, "2026-01-01T00:00:00.000Z"),
        (1_764_485_373_123, "2025-11-30T06:49:33.123Z"),
        (1_709_164_800_000, "2024-02-29T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
    ],
)
def test_exact_examples(ms: int, text: str) -> None:
    assert format_rfc3339(ms) == text
    assert parse_rfc3339(text) == ms


@given(MS)
def test_format_matches_a_calendar_and_round_trips(ms: int) -> None:
    text = format_rfc3339(ms)
    assert WIRE_TIME.fullmatch(text)
    dt = EPOCH + timedelta(milliseconds=ms)
    assert text == _calendar(dt) + f".{dt.microsecond // 1000:03d}Z"
    assert parse_rfc3339(text) == ms


@given(MS, st.integers(-23 * 60 - 59, 23 * 60 + 59), st.integers(0, 999_999))
def test_offsets_and_long_fractions(ms: int, offset_min: int, extra: int) -> None:
    dt = EPOCH + timedelta(milliseconds=ms)
    try:
        local = dt + timedelta(minutes=offset_min)
    except OverflowError:
        return
    sign = "+" if offset_min >= 0 else "-"
    hh, mm = divmod(abs(offset_min), 60)
    frac = f"{dt.microsecond // 1000:03d}{extra:06d}"  # 9 digits, extra truncated away
    text = _calendar(local) + "." + frac + f"{sign}{hh:02d}:{mm:02d}"
    assert parse_rfc3339(text) == ms


@pytest.mark.parametrize(
    "text, ms",
    [
        ("2026-01-01T01:00:00+01:00", T0),
        ("2025-12-31T19:00:00-05:00", T0),
        ("2026-01-01t00:00:00z", T0),
        ("2026-01-01 00:00:00Z", T0),
        ("2026-01-01T00:00:00.1Z", T0 + 100),
        ("2026-01-01T00:00:00.1239Z", T0 + 123),
        ("2026-01-01T00:00:00Z", T0),
    ],
)
def test_tolerant_input(text: str, ms: int) -> None:
    assert parse_rfc3339(text) == ms


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not a time",
        "2026-01-01",
        "2026-01-01T00:00:00",
        "2026-02-30T00:00:00Z",
        "2025-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:60:00Z",
        "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00.1234567890Z",
        "2026-01-01T00:00:00+24:00",
        "0000-01-01T00:00:00Z",
        " 2026-01-01T00:00:00Z",
        "2026-01-01T00:00:00Z ",
        "1767225600000",
    ],
)
def test_malformed_input(text: str) -> None:
    assert parse_rfc3339(text) is None


def test_out_of_range_output_is_an_error() -> None:
    with pytest.raises(ValueError):
        format_rfc3339(253_402_300_800_000)
