"""Keep the bearer token out of everything memspec writes or prints.

Answers are judged exactly as the target sent them (a scrub before judging would turn a
target's ``after reset`` into ``a[token]er reset`` for a short token).  What is *shown* —
stdout, stderr, ``report.json``, ``report.html``, ``junit.xml``, replay files — passes through
:func:`scrub_text` / :func:`clean` first, which blank the token in every form a target can
echo it in:

* as is, and the "wrong" probe token (the token with its last character changed), and the
  token without its last character;
* JSON-escaped, character by character, in any mix: ``\\u0073`` (either hex case), ``\\/``,
  ``\\"``, ``\\\\``; ``repr()`` escapes (``\\'``, ``\\\\``);
* HTML/XML character references with or without the ``;`` (``&#115;``, ``&#x73``), URL
  percent-encoding once or twice (``%73``, ``%2573``), hex (``73``);
* in any letter case (the whole match is case-insensitive);
* base64, standard and url-safe, at each of the three alignments a token can have inside a
  longer encoded text (``Basic dXNlcjp0b2tlbg==`` included): the characters that depend on
  the token alone are blanked.

**Scrub first, then cut.** Every piece of target text that is shown goes through
:func:`shown` — scrub, make every character visible (:func:`visible`: controls, format
characters, separators, lone surrogates and runs of spaces escaped as JSON escapes them), then
cut to a bound — so a cut can never land inside a token that the scrub would then miss, and
two texts that differ never look the same.

The tokens to blank are registered once per process (:func:`register`): the CLI registers the
token it loaded or made, and every writer asks the registry.  A token shorter than
:data:`MIN_TOKEN_LENGTH` characters is refused at load time (too short to blank in prose
without blanking ordinary words).
"""

from __future__ import annotations

import base64
import json
import math
import re
import threading
from typing import Any

#: Shorter tokens are refused with a usage error (exit 2): see docs/ci.md.
MIN_TOKEN_LENGTH = 8
MASK = "[token]"

#: How much of a target's text one message quotes (a reason, an excerpt, an error).
SHOWN_LIMIT = 300
#: How much of a whole reason (memspec's words and the target text it quotes) a page shows.
REASON_LIMIT = 4000

_lock = threading.Lock()
_secrets: list[str] = []
_pattern: re.Pattern[str] | None = None
_SURROGATE = re.compile("[\ud800-\udfff]")


def _char_forms(c: str) -> str:
    """A regex alternation matching one character in every escaped form."""
    cp = ord(c)
    forms = [re.escape(c)]
    if cp <= 0xFFFF:
        forms.append(r"\\u" + "".join(f"[{h.lower()}{h.upper()}]" for h in f"{cp:04x}"))
    else:  # a JSON surrogate pair
        v = cp - 0x10000
        hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
        forms.append(
            r"\\u"
            + "".join(f"[{h.lower()}{h.upper()}]" for h in f"{hi:04x}")
            + r"\\u"
            + "".join(f"[{h.lower()}{h.upper()}]" for h in f"{lo:04x}")
        )
    if c == "\\":  # JSON and repr() double it, a repr() of a JSON text twice, ...
        forms.append(r"\\{1,16}")
    elif c in "/\"'":  # JSON's \/ \", repr()'s \' -- escaped once or more
        forms.append(r"\\{1,15}" + re.escape(c))
    named = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}.get(c)
    if named:
        forms.append(f"&{named};?")
    forms.append(f"&#0{{0,8}}{cp}(?![0-9]);?")
    forms.append(f"&#x0{{0,8}}{cp:x}(?![0-9a-f]);?")
    if cp < 0x80:
        forms.append(f"%(?:25)?{cp:02x}")  # percent-encoded once or twice
        forms.append(f"{cp:02x}")  # hex
    return "(?:" + "|".join(forms) + ")"


def _b64_cores(secret: str) -> list[str]:
    """The base64 characters that depend on ``secret`` alone, at each of the three
    alignments it can have inside a longer encoded text, standard and url-safe."""
    raw = secret.encode("utf-8")
    out = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw + b"\0\0").decode("ascii")
        first = -(-8 * pad // 6)
        last = (8 * (pad + len(raw))) // 6
        core = enc[first:last]
        out += [core, core.replace("+", "-").replace("/", "_")]
    return out


def _build() -> re.Pattern[str] | None:
    variants: set[str] = set()
    for token in _secrets:
        variants.add(token)
        if len(token) > 1:
            variants.add(token[:-1])  # covers the "wrong" probe token and any last character
    if not variants:
        return None
    alternatives = [
        "".join(_char_forms(c) for c in v) for v in sorted(variants, key=len, reverse=True)
    ]
    # base64 is case-sensitive: those alternatives opt out of the case-insensitive match.
    cores = {core for v in variants for core in _b64_cores(v)}
    alternatives += [f"(?-i:{re.escape(core)})" for core in sorted(cores, key=len, reverse=True)]
    return re.compile("(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


def register(token: str | None) -> None:
    """Blank ``token`` in every output from now on (idempotent; ``None``/empty is ignored)."""
    global _pattern
    if not token:
        return
    with _lock:
        if token in _secrets:
            return
        _secrets.append(token)
        _pattern = _build()


def scrub_text(text: str) -> str:
    """``text`` with every registered token (in any escaped form) replaced by ``[token]``,
    lone surrogates replaced by U+FFFD (so the text can always be written as UTF-8)."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    return _blank(text)


def _blank(text: str) -> str:
    """``text`` with every registered token (in any escaped form) replaced by ``[token]``;
    lone surrogates left as they are (:func:`shown` escapes them)."""
    pattern = _pattern
    if pattern is None:
        return text
    return pattern.sub(MASK, text)


#: What is shown as an escape, never as itself (docs/hostile-targets.md, "Exact strings"):
#: every control (Cc: C0, DEL, C1), every format character (Cf: U+00AD, U+200B, U+FEFF, the
#: bidi marks, embeddings, overrides and isolates, ...), the line and paragraph separators
#: (U+2028, U+2029), every space separator but the ASCII space (Zs: NBSP, U+2000-200A, U+202F,
#: U+3000, ...), lone surrogates and the noncharacters U+FFFE/U+FFFF -- each of them a
#: character a terminal or a browser obeys, hides, or draws like another.  The class is
#: Unicode 14's (Python 3.11); ``tests/hostile/test_exact_strings.py`` checks it against
#: ``unicodedata``.
HIDDEN = (
    "\x00-\x1f\x7f-\xa0\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000"
    "\ud800-\udfff\ufeff\ufff9-\ufffb\ufffe\uffff\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
#: A hidden character, or an ASCII space that is not a single space between two other
#: characters (leading, trailing, or one of a run): shown as an escape.
_HIDDEN_OR_SPACE = re.compile(f"[{HIDDEN}]+|\\A +| +\\Z| {{2,}}")
#: Hidden characters but tab and line ends: what a stream of memspec's own lines, or a page
#: of its own layout, may hold raw (spaces there are memspec's layout, left alone).
_HIDDEN_IN_STREAM_CLASS = "[\x00-\x08\x0b\x0c\x0e-\x1f" + HIDDEN.removeprefix("\x00-\x1f") + "]"
_HIDDEN_IN_STREAM = re.compile(_HIDDEN_IN_STREAM_CLASS + "+")
#: The same, one character: what a whole page or file is searched with first (a class
#: without ``+`` is searched about twice as fast, and most pages hold none).
_ANY_HIDDEN_IN_STREAM = re.compile(_HIDDEN_IN_STREAM_CLASS)

_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escape_one(c: str) -> str:
    """One character as JSON's ``ensure_ascii`` writes it: ``\\n``, ``\\t``, ``\\u00a0``;
    a character past U+FFFF as its surrogate pair (``\\udb40\\udc01``)."""
    short = _SHORT_ESCAPES.get(c)
    if short is not None:
        return short
    cp = ord(c)
    if cp > 0xFFFF:
        v = cp - 0x10000
        return f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"
    return f"\\u{cp:04x}"


def _escape_match(m: re.Match[str]) -> str:
    return "".join(map(_escape_one, m.group()))


def visible(text: str) -> str:
    """``text`` as memspec shows a target's text: every :data:`HIDDEN` character, and every
    ASCII space that is leading, trailing or one of a run of two or more, written as JSON
    writes it escaped (``\\n``, ``\\u00a0``, ``\\u200b``, ``\\ud800``, ``\\u0020``); a
    single space between two other characters, and everything else, as itself.

    Each escape is JSON's own spelling, so applied to a JSON text (the form every value --
    an answer, an allowed answer, a key -- is shown in) the result is JSON text of the same
    value: ``json.loads(visible(json.dumps(v, ensure_ascii=False))) == v``, and two values
    that differ never look the same.  Free text (a reason phrase, a body that is not JSON)
    has its own backslashes left as they are.  Idempotent: ``visible(visible(t)) ==
    visible(t)``."""
    if _HIDDEN_OR_SPACE.search(text) is None:
        return text
    return _HIDDEN_OR_SPACE.sub(_escape_match, text)


#: A JSON string literal (the last one of a text may be cut short).
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)


def _visible_laid_out(text: str) -> str:
    """A text memspec laid out over lines (indented JSON): tab, line ends and spaces outside
    string literals are its layout and pass; every hidden character is escaped, and inside
    each JSON string literal the whole :func:`visible` rule applies (runs of spaces too)."""
    return _JSON_STRING.sub(lambda m: visible(m.group()), escape_unsafe(text, keep_lines=True))


def escape_unsafe(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with what a terminal or a page would obey or hide shown escaped.  Without
    ``keep_lines`` this is :func:`visible`; with it (memspec's own lines and pages: a whole
    console stream, ``report.html``, ``junit.xml``) tab, CR, LF and every ASCII space pass
    as they are, every other :data:`HIDDEN` character is escaped."""
    if not keep_lines:
        return visible(text)
    if _ANY_HIDDEN_IN_STREAM.search(text) is None:
        return text
    return _HIDDEN_IN_STREAM.sub(_escape_match, text)


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out.  Only for text that
    is already scrubbed (:func:`shown` is the one to call on a target's text)."""
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 0)
    return f"{text[:keep]}…[{len(text) - keep} more characters cut]"


#: The longest text one character of a token can be written as (``&#x0000000073;``, a JSON
#: surrogate pair); see :func:`window`.
_LONGEST_FORM = 16


def window(limit: int) -> int:
    """How much of a text :func:`shown` scrubs to show ``limit`` characters of it: the limit
    and room for a whole token in its longest form past it, so a token that starts before
    the cut is wholly inside what is scrubbed."""
    longest = max((len(s) for s in _secrets), default=0)
    return limit + _LONGEST_FORM * (longest + 2) + 64


def shown(text: str, limit: int = SHOWN_LIMIT, *, keep_lines: bool = False) -> str:
    """The one way a target's text is shown: the token blanked in every form, then made
    :func:`visible` (every control, format, separator and lone surrogate escaped, and every
    space that is not a single space between two characters), *then* cut to ``limit``
    characters (a cut made first could land inside the token and leave all of it but its
    last characters).  ``keep_lines`` (indented JSON a page shows) leaves the tabs, line ends
    and spaces of the layout as they are, and applies the whole rule inside string literals.

    Only the first :func:`window` characters are scrubbed (a token that starts before the cut
    ends inside them), so showing 300 characters of a 4 MiB text costs no more than of a
    short one."""
    head = text[: window(limit)]
    out = cut(_visible_laid_out(_blank(head)) if keep_lines else visible(_blank(head)), limit)
    if len(text) > len(head):  # say how long the whole text was, not only the window
        keep = out.rpartition("…[")[0] if "…[" in out else out
        out = f"{keep}…[{len(text) - len(keep)} more characters cut]"
    return out


def clean(value: Any, _depth: int = 0) -> Any:
    """A copy of a JSON-able value that is safe to write: every string (keys included)
    scrubbed, non-finite floats as strings (``"NaN"``, ``"Infinity"``) so the output is strict
    JSON, anything else JSON cannot hold as its ``repr``; nesting cut at 200 levels."""
    if isinstance(value, str):
        return scrub_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if _depth > 200:
        return "…(nested too deeply)"
    if isinstance(value, dict):
        return {scrub_text(str(k)): clean(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, _depth + 1) for v in value]
    return scrub_text(repr(value))


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (a target may send any)."""
    return _XML_INVALID.sub("\ufffd", text)


#: Every :data:`HIDDEN` character JSON writes raw (C1, DEL, format characters, separators):
#: written as ``\\u`` escapes (the same JSON value), so an editor or a terminal showing the
#: file is safe and shows every character.
_UNSAFE_IN_JSON = _HIDDEN_IN_STREAM


def dumps(value: Any, **kw: Any) -> str:
    """Strict JSON of a cleaned value, scrubbed once more as text; every hidden character
    (C1, DEL, format characters, separators) as a ``\\u`` escape."""
    text = scrub_text(json.dumps(clean(value), ensure_ascii=False, allow_nan=False, **kw))
    if _ANY_HIDDEN_IN_STREAM.search(text) is None:
        return text
    return _UNSAFE_IN_JSON.sub(_escape_match, text)


def page_safe(text: str) -> str:
    """An HTML or XML page's text with every :data:`HIDDEN` character but tab and line ends
    written as a visible ``\\u001b``/``\\u202e`` escape (a numeric reference would still be
    obeyed by a browser, a raw one by a terminal showing the file)."""
    return escape_unsafe(text, keep_lines=True)


#: ASCII stand-ins for the marks memspec prints, for a terminal that cannot encode them.
_ASCII_MARKS = str.maketrans(
    {"✓": "ok", "✗": "x", "…": "...", "—": "-", "→": "->", "←": "<-", "·": "."}
)


class ScrubbingStream:
    """A text stream wrapper that blanks registered tokens in everything written to it,
    escapes every :data:`HIDDEN` character (but tab and line ends), falls back to ASCII marks
    on a terminal that cannot encode ``✓``/``✗``, and ends quietly when the reader goes
    away."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        #: the reader went away (``| head``): later writes are dropped, the run goes on to its
        #: exit code
        self.closed_by_reader = False
        enc = getattr(stream, "encoding", None) or "utf-8"
        try:
            "✓✗…—→←·".encode(enc)
            self._ascii = False
        except (UnicodeEncodeError, LookupError):
            self._ascii = True
        self._encoding = enc

    def write(self, text: str) -> int:
        out = escape_unsafe(scrub_text(text), keep_lines=True)
        if self._ascii:
            out = out.translate(_ASCII_MARKS)
            out = out.encode(self._encoding, "backslashreplace").decode(self._encoding)
        if self.closed_by_reader:
            return len(text)
        try:
            self._stream.write(out)
        except (BrokenPipeError, ValueError):  # the reader closed the pipe / the stream
            self.closed_by_reader = True
        return len(text)

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self._stream.flush()
        except (BrokenPipeError, ValueError):
            self.closed_by_reader = True

    def isatty(self) -> bool:
        try:
            return bool(self._stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
