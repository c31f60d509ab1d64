"""Redaction: nothing credential-shaped leaves the process (MEM-REFLECT.6); the shapes, the marker
and the span replaced are the reference's (MEM-REFLECT.14)."""

from __future__ import annotations

import re
from typing import Final

from reference.ledger.credentials import DETECTORS
from reference.memory.reflection.contract import REDACTION_MARKER


def _redact_once(text: str) -> str:
    """One pass of every credential detector over ``text`` (MEM-REFLECT.6)."""
    for name, pattern in DETECTORS:
        if name == "pem_private_key":
            text = _redact_pem(text, pattern)
        else:
            text = pattern.sub(REDACTION_MARKER, text)
    return text


_PEM_END: Final = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")


def _redact_pem(text: str, begin: re.Pattern[str]) -> str:
    """Every PEM private key from its BEGIN line through its END line (or the end) replaced
    (MEM-REFLECT.6)."""
    out: list[str] = []
    pos = 0
    while True:
        m = begin.search(text, pos)
        if m is None:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos : m.start()])
        out.append(REDACTION_MARKER)
        end = _PEM_END.search(text, m.end())
        if end is None:
            return "".join(out)
        pos = end.end()


def redact_secrets(text: str) -> str:
    """Replace every credential-shaped span with ``REDACTION_MARKER`` (MEM-REFLECT.6,
    MEM-REFLECT.14).

    The spans are the ledger's credential detectors (``reference.ledger.credentials``); a PEM
    private key is replaced from its BEGIN line through its END line (to the end of the text
    when the END line is missing).  The passes repeat until nothing matches: removing one span
    can expose another (a key glued to the end of a redacted one).  Every match is longer than
    the marker, so the loop ends; the result holds no span any detector matches.
    """
    while True:
        out = _redact_once(text)
        if out == text:
            return out
        text = out
