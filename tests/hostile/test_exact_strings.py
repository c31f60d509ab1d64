"""Exact strings: wherever memspec shows a target's text -- the console, ``report.html``,
``junit.xml`` -- two texts that differ never look the same.

The rule (:func:`conformance.scrub.visible`, docs/hostile-targets.md "Exact strings"): every
control, format character, line/paragraph separator, space separator but the ASCII space and
lone surrogate is written as JSON writes it escaped, and so is every ASCII space that is
leading, trailing or one of a run; a single space between two characters stays a space.
Values (an answer, an allowed answer) are shown as JSON with that rule applied, which
``json.loads`` reads back to the value: the shown form is injective.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from io import StringIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import scrub
from conformance.binding.check import judge_answer
from conformance.binding.host import Answer
from conformance.binding.judge import Judged, ok
from conformance.jsonutil import short_json
from conformance.report import _render
from conformance.report.console import print_summary
from conformance.report.model import RunReport
from conformance.runner import ScenarioResult
from conformance.scenario import Scenario, Step
from conformance.scrub import HIDDEN, shown, visible
from conformance.vocabulary import StepOutcome

#: The characters the issue names, each a class a terminal or a page hides or draws alike.
SPECIAL = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\x00",
    "\x1b",
    "\x7f",
    "\x85",
    "\xa0",
    "\u2007",
    "\u202f",
    "\u3000",
    "\u2028",
    "\u2029",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\u00ad",
    "\u202e",
    "\u2066",
    "\U000e0001",
    "\ud800",
    "\udfff",
    "\ufffe",
    "\ufffd",
    "\\",
    '"',
    "\\u0020",
    "\\x20",
    "é",
    "😀",
]
#: Text built of the classes above, plain letters and anything else (lone surrogates too).
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")

# Every string a target can hand us: JSON text decodes a high surrogate followed by a low one
# into one astral character, and undecodable bytes become low surrogates only, so a string
# holding such a pair of code points never reaches a line (JSON itself cannot spell it apart
# from the astral character).
TEXT = (
    st.lists(
        st.one_of(st.sampled_from(SPECIAL), st.text(max_size=4), st.sampled_from("ab:/")),
        max_size=12,
    )
    .map("".join)
    .filter(lambda t: not _SURROGATE_PAIR.search(t))
)

#: What a page or a stream may hold raw: nothing of HIDDEN but tab and line ends.
_RAW_HIDDEN = scrub._HIDDEN_IN_STREAM


def _value_shown(v: object) -> str:
    """A value as a line shows it (an answered or an allowed value), uncut."""
    return short_json(v, 100_000)


@pytest.mark.clause()
def test_the_hidden_class_is_unicodes() -> None:
    """HIDDEN is every Cc, Cf, Zl, Zp, Cs and Zs character but U+0020, and U+FFFE/U+FFFF, of
    the running Python's Unicode database (14.0 on 3.11)."""
    if unicodedata.unidata_version != "14.0.0":
        pytest.skip(f"HIDDEN is Unicode 14's; this Python has {unicodedata.unidata_version}")
    cats = {"Cc", "Cf", "Zl", "Zp", "Zs", "Cs"}
    want = {
        cp
        for cp in range(sys.maxunicode + 1)
        if (unicodedata.category(chr(cp)) in cats and cp != 0x20) or cp in (0xFFFE, 0xFFFF)
    }
    import re

    pattern = re.compile(f"[{HIDDEN}]")
    have = {cp for cp in range(sys.maxunicode + 1) if pattern.match(chr(cp))}
    assert have == want, sorted(have ^ want)[:20]


@pytest.mark.clause()
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("a b", "a b"),
        ("a  b", "a\\u0020\\u0020b"),
        (" a", "\\u0020a"),
        ("a ", "a\\u0020"),
        ("a\u00a0b", "a\\u00a0b"),
        ("a\u200bb", "a\\u200bb"),
        ("a\ufeff", "a\\ufeff"),
        ("a\u2028b\u2029", "a\\u2028b\\u2029"),
        ("x\ud800", "x\\ud800"),
        ("\U000e0001", "\\udb40\\udc01"),
        ("a\tb\n\r\x00\x1b", "a\\tb\\n\\r\\u0000\\u001b"),
        ("café 😀", "café 😀"),
    ],
)
def test_visible_spells_each_class_as_json_escapes_it(text: str, want: str) -> None:
    assert visible(text) == want
    assert json.loads(f'"{want}"') == text  # each escape is JSON's own spelling


@pytest.mark.clause()
@settings(max_examples=400, deadline=None)
@given(a=TEXT, b=TEXT)
def test_two_values_that_differ_never_look_the_same(a: str, b: str) -> None:
    """The shown form of a value is JSON that reads back to it (so it is injective), holds no
    hidden character and no run of spaces, and showing it again changes nothing."""
    sa, sb = _value_shown(a), _value_shown(b)
    assert json.loads(sa) == a
    assert (sa == sb) == (a == b), (a, b, sa)
    assert not _RAW_HIDDEN.search(sa) and "\t" not in sa and "\n" not in sa
    assert "  " not in sa and not sa.startswith(" ") and not sa.endswith(" ")
    assert shown(sa, 100_000) == sa  # idempotent: a reason quoting it is shown again as is
    # nested in an answer, key or value, the same
    assert json.loads(_value_shown({a: [b]})) == {a: [b]}


@pytest.mark.clause()
@settings(max_examples=300, deadline=None)
@given(a=TEXT)
def test_free_text_is_shown_visible_and_idempotent(a: str) -> None:
    out = shown(a, 100_000)
    assert not _RAW_HIDDEN.search(out) and "\t" not in out and "\n" not in out
    assert "  " not in out and not out.startswith(" ") and not out.endswith(" ")
    assert shown(out, 100_000) == out
    out.encode("utf-8")  # no lone surrogate left to break a writer (raises if one is)


@pytest.mark.clause()
@settings(max_examples=200, deadline=None)
@given(a=TEXT, b=TEXT)
def test_a_page_shows_indented_json_exactly(a: str, b: str) -> None:
    """``report.html``'s indented JSON (``keep_lines``): still JSON of the same value, the
    layout kept, every value's hidden characters and runs of spaces escaped."""
    text = json.dumps({"k": a, "l": [b, a]}, indent=1, ensure_ascii=False)
    out = shown(text, 1_000_000, keep_lines=True)
    assert json.loads(out) == {"k": a, "l": [b, a]}
    assert not _RAW_HIDDEN.search(out)
    assert all("  " not in line.strip() for line in out.splitlines())


def _engine_report(answered: str, allowed: str) -> dict[str, object]:
    """A ``memspec engine`` report whose one vector answered ``answered`` where ``allowed``
    was the only answer allowed."""
    outcome = judge_answer(
        0,
        "deriveScopeKey",
        ("MEM-SCOPE.1",),
        "deriveScopeKey[0]",
        Answer("ok", answered),
        Judged([ok(allowed)]),
    )
    assert outcome.verdict == "diverge"
    scenario = Scenario(
        protocol="memory",
        name="engine-deriveScopeKey",
        description="engine binding",
        clauses=["MEM-SCOPE.1"],
        steps=[Step(op="deriveScopeKey")],
        origin="engine",
    )
    result = ScenarioResult(scenario, "fail", [outcome], reason=outcome.reason)
    report = RunReport(run_id="memspec-exact001", target={}, options={})
    report.scenarios.append(result)
    return scrub.clean(report.to_json())  # type: ignore[no-any-return]


def _report_with_reason(reason: str) -> dict[str, object]:
    """A run report whose one divergence has ``reason`` as its oracle wrote it (an oracle
    may quote a target's text with ``repr``, a run of spaces and all)."""
    outcome = StepOutcome(
        index=0, op="get", verdict="diverge", clauses=("MEM-SCOPE.1",), reason=reason
    )
    scenario = Scenario(
        protocol="memory", name="s", description="d", clauses=["MEM-SCOPE.1"],
        steps=[Step(op="get")],
    )  # fmt: skip
    report = RunReport(run_id="memspec-exact002", target={}, options={})
    report.scenarios.append(ScenarioResult(scenario, "fail", [outcome], reason=reason))
    return scrub.clean(report.to_json())  # type: ignore[no-any-return]


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.mark.clause("MEM-SCOPE.1")
@pytest.mark.parametrize(
    ("answered", "allowed"),
    [
        ("repo:acme  api", "repo:acme api"),  # a collapsed double space
        ("repo:acme api ", "repo:acme api"),  # an extra trailing space
        ("repo:acme\u00a0api", "repo:acme api"),  # NBSP for a space
        ("repo:acme\u200bapi", "repo:acme api"),  # an inserted U+200B
        ("repo:acme\tapi", "repo:acme api"),
        ("repo:acme\u2028api", "repo:acme\u2029api"),
        ("repo:acme\ud800", "repo:acme\ufffd"),  # a lone surrogate and what it was replaced by
    ],
)
def test_the_answered_and_the_allowed_line_differ_everywhere(answered: str, allowed: str) -> None:
    """The console, ``report.html`` and ``junit.xml`` of an engine vector whose answer differs
    from the allowed one by whitespace or a hidden character show the two differently, and
    the page and the XML stay well formed."""
    data = _engine_report(answered, allowed)
    a, b = _value_shown(answered), _value_shown({"ok": allowed})
    assert a != b
    out = StringIO()
    print_summary(data, out)
    console = out.getvalue()
    assert f"answered {a}" in console and f"model allows: {b}" in console, console
    files = _render(data)
    root = ET.fromstring(files["junit.xml"])  # valid XML
    failure = root.find(".//failure")
    assert failure is not None
    assert f"answered {a}" in failure.get("message", "")
    assert f"answered {a}" in (failure.text or "") and b in (failure.text or "")
    page = files["report.html"]
    parser = _Text()
    parser.feed(page)
    parser.close()
    text = "".join(parser.text)
    assert f"answered {a}" in text and b in text
    for name in ("report.html", "junit.xml"):
        assert not _RAW_HIDDEN.search(files[name]), name
        files[name].encode("utf-8")


@pytest.mark.clause("MEM-SCOPE.1")
@settings(max_examples=60, deadline=None)
@given(answered=TEXT, allowed=TEXT)
def test_any_target_text_keeps_the_page_and_the_xml_well_formed(
    answered: str, allowed: str
) -> None:
    if answered == allowed:
        return
    data = _engine_report(answered, allowed)
    files = _render(data)
    root = ET.fromstring(files["junit.xml"])
    failure = root.find(".//failure")
    assert failure is not None and _value_shown(answered)[:200] in failure.get("message", "")
    for name in ("report.html", "junit.xml"):
        assert not _RAW_HIDDEN.search(files[name]), name
        files[name].encode("utf-8")
    parser = _Text()
    parser.feed(files["report.html"])
    parser.close()


@pytest.mark.clause("MEM-SCOPE.1")
@pytest.mark.parametrize(
    ("got", "want"),
    [("'a  b'", "'a b'"), ("'a '", "'a'"), ("'a\tb'", "'a b'"), ("'a\nb'", "'a b'")],
)
def test_a_reason_quoting_a_target_raw_keeps_its_whitespace(got: str, want: str) -> None:
    """A reason an oracle wrote with the target's text in it raw (a ``repr``): its runs of
    spaces, tabs and line ends are shown escaped on every writer, never collapsed."""
    shown_got, shown_want = shown(f"answered {got}"), shown(f"answered {want}")
    assert shown_got != shown_want
    for reason, line in ((got, shown_got), (want, shown_want)):
        data = _report_with_reason(f"answered {reason}")
        out = StringIO()
        print_summary(data, out)
        assert f"      {line}\n" in out.getvalue(), out.getvalue()
        files = _render(data)
        failure = ET.fromstring(files["junit.xml"]).find(".//failure")
        assert failure is not None and failure.get("message") == line
        parser = _Text()
        parser.feed(files["report.html"])
        assert line in "".join(parser.text)


@pytest.mark.clause("MEM-SCOPE.1")
def test_replay_shows_each_record_and_the_reason_exactly() -> None:
    """``memspec replay``'s side by side: a record's id and text as JSON with every character
    visible, the reason through the same rule."""
    from conformance.commands.replay import print_side_by_side  # noqa: PLC0415
    from conformance.vocabulary import Exchange  # noqa: PLC0415

    def said(text: str) -> str:
        ex = Exchange(
            method="POST",
            path="/retrieve",
            request_body={},
            status=200,
            body={"records": [{"id": "mem:1 ", "text": text, "useCount": 1}]},
        )
        o = StepOutcome(
            index=0, op="retrieve", verdict="diverge", clauses=("MEM-SCOPE.1",),
            expected="200 records: 'a b'", exchange=ex, reason=f"answered {text!r}",
        )  # fmt: skip
        out = StringIO()
        print_side_by_side(o, out, 60)
        return out.getvalue()

    double, single = said("a  b"), said("a b")
    assert double != single
    assert '"mem:1 " "a\\u0020\\u0020b" useCount 1' in double, double
    assert "→ answered 'a\\u0020\\u0020b'" in double
    assert '"mem:1 " "a b" useCount 1' in single
