"""Scrub first, then cut (issue 23): wherever memspec shows a target's text, a cut at any
position and the token in any encoding leave no run of 6 characters of the token.

The property drives :func:`conformance.scrub.shown` -- the one function every piece of target
text passes through before it is shown -- and the writers built on it (``short_json``, the
console's lines, an answer's excerpt) with a random token, a random encoding of it embedded at
a random place in random text, and a random cut position.  ``token_fragments`` (the hostile
tests' leak finder) lists every 6-character run of the token in every encoding.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hostile_server import UNSAFE, fragments_in, token_fragments
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conformance import scrub
from conformance.jsonutil import short_json
from conformance.report.console import said_line
from conformance.targets.base import _excerpt, _short


def _b64(pad: int, urlsafe: bool) -> Callable[[str], str]:
    def enc(t: str) -> str:
        raw = ("x" * pad + t + "yz").encode()
        return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()

    return enc


def _pct(t: str, upper: bool = True) -> str:
    return "".join(f"%{ord(c):02X}" if upper else f"%{ord(c):02x}" for c in t)


#: Every encoding the issue names, each a function of the token.
ENCODINGS: dict[str, Callable[[str], str]] = {
    "as is": lambda t: t,
    "upper case": str.upper,
    "lower case": str.lower,
    "swapped case": str.swapcase,
    **{f"base64 at offset {p}": _b64(p, False) for p in range(3)},
    **{f"url-safe base64 at offset {p}": _b64(p, True) for p in range(3)},
    "Basic user:token": lambda t: "Basic " + base64.b64encode(f"ci:{t}".encode()).decode(),
    "hex": lambda t: t.encode().hex(),
    "HEX": lambda t: t.encode().hex().upper(),
    "percent once": _pct,
    "percent once, lower hex": lambda t: _pct(t, upper=False),
    "percent twice": lambda t: _pct(t).replace("%", "%25"),
    "HTML decimal refs with ;": lambda t: "".join(f"&#{ord(c)};" for c in t),
    "HTML decimal refs without ;": lambda t: "".join(f"&#{ord(c)}" for c in t),
    "HTML hex refs without ;": lambda t: "".join(f"&#x{ord(c):X}" for c in t),
    "html.escape": lambda t: html.escape(t),
    "JSON \\u escapes": lambda t: "".join(f"\\u{ord(c):04x}" for c in t),
    "json.dumps": json.dumps,
    "repr()": repr,
    "repr(repr())": lambda t: repr(repr(t)),
    "repr(json.dumps())": lambda t: repr(json.dumps(t)),
}

#: What memspec itself writes around a cut: a window of 6 of the token inside these is not a
#: leak (a token holding "charac" ...), so such tokens are not drawn.
_OWN_TEXT = "[token]…[0123456789 more characters cut]"

TOKEN_CHARS = st.sampled_from(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/'\\-_+=.~"
)
#: Text around the token: characters no encoding of a token is made of, and controls.
AROUND = st.text(st.sampled_from(" \n\t\x1b\u202e!@*() "), max_size=400)


@contextmanager
def only_token(token: str) -> Iterator[None]:
    """The scrub's registry holding ``token`` alone for the block (other tests register
    theirs for the whole process)."""
    saved = (list(scrub._secrets), scrub._pattern)
    scrub._secrets.clear()
    scrub._pattern = None
    try:
        scrub.register(token)
        yield
    finally:
        scrub._secrets[:] = saved[0]
        scrub._pattern = saved[1]


WRITERS: dict[str, Callable[[str, int], str]] = {
    "shown": scrub.shown,
    "short_json": lambda text, n: short_json(text, max(n, 1)),
    "excerpt": lambda text, n: _excerpt(text.encode("utf-8")),
    "error message": lambda text, n: _short(ValueError(text)),
    "said line": lambda text, n: said_line(
        {"status": 400, "body": None, "raw_excerpt": text, "body_error": "not JSON"}
    ),
}


@pytest.mark.clause()
@settings(max_examples=300, deadline=None)
@given(
    token=st.text(TOKEN_CHARS, min_size=8, max_size=40),
    encoding=st.sampled_from(sorted(ENCODINGS)),
    before=AROUND,
    after=AROUND,
    copies=st.integers(1, 3),
    cut_at=st.integers(0, 900),
    writer=st.sampled_from(sorted(WRITERS)),
)
def test_no_six_characters_of_the_token_survive_any_cut_in_any_encoding(
    token: str, encoding: str, before: str, after: str, copies: int, cut_at: int, writer: str
) -> None:
    frags = token_fragments(token)
    assume(not fragments_in(frags, _OWN_TEXT))
    text = before + " ".join([ENCODINGS[encoding](token)] * copies) + after
    with only_token(token):
        out = WRITERS[writer](text, cut_at)
    assert not fragments_in(frags, out), (encoding, writer, out)
    assert not UNSAFE.search(out), out  # controls and bidi characters shown escaped


@pytest.mark.clause()
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_every_cut_position_of_every_encoding(encoding: str) -> None:
    """The same, exhaustively for one token: every cut position from 0 to past the end."""
    token = "cut'Tok3n\\Zq9/xYw2"
    frags = token_fragments(token)
    text = "q" * 37 + ENCODINGS[encoding](token) + " and more"
    with only_token(token):
        for n in range(len(text) + 2):
            out = scrub.shown(text, n)
            assert not fragments_in(frags, out), (n, out)
            assert len(out) <= n + 40  # the cut and what it says of itself


@pytest.mark.clause()
def test_shown_says_when_it_cut_and_escapes_what_a_terminal_obeys() -> None:
    with only_token("Zz9-QQ-not-shown"):
        assert scrub.shown("short") == "short"
        out = scrub.shown("a\x1b[2J\u202eb\x9b\x7f\n" + "x" * 1000, 40)
        assert out.startswith("a\\u001b[2J\\u202eb\\u009b\\u007f\\n")
        assert "more characters cut]" in out and len(out) < 80
        assert scrub.shown("x" * 5000 + "Zz9-QQ-not-shown", 10).endswith(
            "xxxxxxxxx…[5007 more characters cut]"
        )
