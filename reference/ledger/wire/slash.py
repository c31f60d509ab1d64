"""The Bridge's pin commands as binding calls (LED-WIRE.9)."""

from __future__ import annotations

import re
from typing import Final

from reference.ledger.outcome import (
    Refused,
    refusal,
)
from reference.ledger.records import (
    SCOPE_LOCAL,
)

_SLASH: Final = re.compile(r"(\S+)(?:\s+(.*))?", re.DOTALL)


def slash_command(text: str) -> tuple[str, dict[str, object]] | Refused | None:
    """The Bridge's pin commands as binding calls (LED-WIRE.9).

    ``/pin <text>`` is a save of ``<text>``, ``/pins`` the listing of ``account:local`` and
    ``/unpin <id>`` the tombstone of ``<id>``.  Anything else -- Claude's ``/memory``
    included -- is not a ledger command and answers ``None`` (left to the harness); a pin
    command with the wrong arguments is refused with a usage line.  Either way nothing here
    picks or switches a harness: the answer is a ledger call or nothing.
    """
    m = _SLASH.fullmatch(text.strip())
    if m is None:
        return None
    word, rest = m.group(1), m.group(2) or ""
    if word == "/pin":
        return "memory/save_memory_record", {"body": rest}
    if word == "/pins":
        if rest:
            return refusal("Usage: /pins (it takes no arguments).")
        return "memory/list_memory_records", {"scopeKey": SCOPE_LOCAL}
    if word == "/unpin":
        if not rest or any(ch.isspace() for ch in rest):
            return refusal("Usage: /unpin <id>.")
        return "memory/delete_memory_record", {"recordId": rest}
    return None
