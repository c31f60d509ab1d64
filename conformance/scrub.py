"""Keep the bearer token out of everything memspec writes or prints.

Answers are judged exactly as the target sent them (a scrub before judging would turn a
target's ``after reset`` into ``a[token]er reset`` for a short token).  What is *shown* —
stdout, stderr, ``report.json``, ``report.html``, ``junit.xml``, replay files — passes through
:func:`scrub_text` / :func:`clean` first, which blank the token in every form a target can
echo it in:

* as is, and the "wrong" probe token (the token with its last character changed), and the
  token without its last character;
* JSON-escaped, character by character, in any mix: ``\\u0073`` (either hex case), ``\\/``;
* HTML/XML character references (``&#115;``, ``&#x73;``) and URL percent-encoding (``%73``).

The tokens to blank are registered once per process (:func:`register`): the CLI registers the
token it loaded or made, and every writer asks the registry.  A token shorter than
:data:`MIN_TOKEN_LENGTH` characters is refused at load time (too short to blank in prose
without blanking ordinary words).
"""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any

#: Shorter tokens are refused with a usage error (exit 2): see docs/ci.md.
MIN_TOKEN_LENGTH = 8
MASK = "[token]"

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
    if c == "/":
        forms.append(r"\\/")
    named = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}.get(c)
    if named:
        forms.append(f"&{named};")
    forms.append(f"&#0*{cp};")
    forms.append(f"&#[xX]0*(?i:{cp:x});")
    if cp < 0x80:
        forms.append(f"%(?i:{cp:02x})")
    return "(?:" + "|".join(forms) + ")"


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
    # The trailing optional character swallows the last character after ``token[:-1]``.
    return re.compile("(?:" + "|".join(alternatives) + ")")


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


def registered() -> bool:
    return _pattern is not None


def scrub_text(text: str) -> str:
    """``text`` with every registered token (in any escaped form) replaced by ``[token]``,
    lone surrogates replaced by U+FFFD (so the text can always be written as UTF-8)."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    pattern = _pattern
    if pattern is None:
        return text
    return pattern.sub(MASK, text)


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


def dumps(value: Any, **kw: Any) -> str:
    """Strict JSON of a cleaned value, scrubbed once more as text."""
    return scrub_text(json.dumps(clean(value), ensure_ascii=False, allow_nan=False, **kw))


class ScrubbingStream:
    """A text stream wrapper that blanks registered tokens in everything written to it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub_text(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        try:
            return bool(self._stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
