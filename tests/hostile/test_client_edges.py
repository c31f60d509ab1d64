"""Small edges of the client and the writers: bad --timeout values, the scrub of every escaped
form, a probe the client cannot send, and how a divergence shows what was sent and answered."""

from __future__ import annotations

import json

import pytest

from conformance import scrub
from conformance.cli import main
from conformance.report.console import said_line, sent_line
from conformance.targets.base import parse_answer
from conformance.vocabulary import Exchange

TOKEN = "sk/Live-Ab12/cd34"


@pytest.mark.clause()
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1"])
def test_a_timeout_that_is_not_a_positive_number_is_a_one_line_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--spec", "memory", "--quiet", f"--timeout={value}"])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--timeout" in err
    assert "Traceback" not in err


@pytest.mark.clause()
def test_the_scrub_blanks_the_token_in_every_form_a_target_can_echo() -> None:
    scrub.register(TOKEN)
    forms = [
        TOKEN,
        TOKEN.replace("/", "\\/"),
        "".join(f"\\u{ord(c):04x}" for c in TOKEN),
        "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(TOKEN)),
        "".join(f"&#{ord(c)};" for c in TOKEN),
        "".join(f"&#x{ord(c):x};" for c in TOKEN),
        TOKEN.replace("/", "%2F"),
        TOKEN[:-1] + "A",  # the "wrong token" probe
    ]
    for form in forms:
        text = scrub.scrub_text(f"before {form} after")
        assert text == "before [token] after" or "[token]" in text, (form, text)
        assert TOKEN[:-1] not in text and "Live-Ab12" not in text, (form, text)
    # Decoded strings are scrubbed too, keys included; the output is strict JSON.
    cleaned = scrub.clean({TOKEN: [TOKEN, float("nan"), float("inf"), "\ud800x"]})
    out = json.dumps(cleaned, allow_nan=False, ensure_ascii=False)
    assert "Live" not in out and '"NaN"' in out and '"Infinity"' in out
    out.encode("utf-8")  # no lone surrogate left
    # A short ordinary word is never touched: nothing short enough is ever registered.
    assert scrub.scrub_text("after reset") == "after reset"


@pytest.mark.clause("MEM-WIRE.8")
def test_answers_are_parsed_as_strict_bounded_json() -> None:
    assert parse_answer(b'{"a": 1}') == ({"a": 1}, "", None)
    for bad in (b'{"a": NaN}', b"[Infinity]", b"[" * 5000 + b"]" * 5000, b"[" * 70 + b"]" * 70):
        body, _, problem = parse_answer(bad)
        assert body is None and problem and problem.startswith("not JSON")
    body, excerpt, problem = parse_answer(b"\xff\xfe")
    assert body is None and "UTF-8" in (problem or "")


@pytest.mark.clause("MEM-WIRE.8")
def test_a_divergence_shows_the_headers_sent_and_the_answer_as_it_came() -> None:
    ex = Exchange(
        "POST",
        "/write",
        {"raw": "not json"},
        400,
        None,
        raw_excerpt="Bad Request",
        body_error="not JSON (broken at character 0)",
        request_headers=(("Content-Length", "0x8"), ("Authorization", "Bearer [token]")),
        content_type="text/plain",
    ).to_json()
    assert sent_line(ex) == (
        'POST /write [Content-Length: 0x8, Authorization: Bearer [token]] {"raw": "not json"}'
    )
    said = said_line(ex)
    assert said.startswith("400 (text/plain) 'Bad Request'") and "None" not in said
    ok = Exchange("POST", "/list", {}, 200, {"records": []}).to_json()
    assert said_line(ok) == '200 {"records": []}'
