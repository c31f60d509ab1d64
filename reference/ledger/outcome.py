"""What a ledger call may answer: ``Ok(result)`` or ``Refused(code, message, allowed_codes)``.

Where the spec leaves the answer open the value says so: ``Refused.allowed_codes`` is every
error code a conforming store may use (LED-WIRE.3), ``Refused.allowed_messages`` the exact
messages it may use (None when the text is implementation-defined), and ``Ok.may_omit`` the
ids of records a conforming store may leave out of a history read (LED-ASOF.2).  Where a
choice also changes what the ledger holds, ``reference.ledger.wire.allowed`` lists every
allowed (state, answer) pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

REFUSED: Final = 1000
"""A request refused with a message for a person (LED-WIRE.3)."""
INVALID_PARAMS: Final = -32602
METHOD_NOT_FOUND: Final = -32601
INVALID_REQUEST: Final = -32600
"""JSON-RPC 2.0's code for a request that is not one: params neither an object nor an array."""


@dataclass(frozen=True)
class Ok:
    """A successful answer; ``result`` is the JSON-shaped value (or a model value)."""

    result: object
    may_omit: frozenset[str] = field(default_factory=frozenset)
    extra_fields: Mapping[str, object] = field(default_factory=dict)
    one_of: tuple[object, ...] = ()
    """When not empty, the result may be any one of these instead (a batch's open counts,
    LED-GATE.1, LED-GATE.6); ``result`` is the model's own pick among them."""
    elements: tuple[tuple[str, str], ...] = ()
    """For a consolidation batch: each element's verdict in the model's own pick and why
    (``applied``/the operation, ``refused``/the gate's reason, ...; LED-GATE.1-.9), so a count
    that differs can be traced to the element that explains it."""
    """Result fields the spec does not name but a store may add, each with the one value it
    must then have (``heldRecords`` on the settings, LED-CONS.2).  Any other unnamed field is
    allowed and not judged (LED-WIRE.6)."""


@dataclass(frozen=True)
class Refused:
    """A refusal; nothing changed.  ``code``/``message`` are the model's own pick."""

    code: int
    message: str
    allowed_codes: frozenset[int]
    allowed_messages: frozenset[str] | None = None

    def admits(self, code: int, message: str | None = None) -> bool:
        """True when a store answering ``code`` (and ``message``, if given) conforms."""
        if code not in self.allowed_codes:
            return False
        if message is None or self.allowed_messages is None:
            return True
        return message in self.allowed_messages


Outcome = Ok | Refused


def refusal(message: str, *, exact: bool = False) -> Refused:
    """A credential, budget or lifecycle refusal: code 1000 only (LED-WIRE.3)."""
    return Refused(REFUSED, message, frozenset({REFUSED}), frozenset({message}) if exact else None)


def bad_value(message: str, *, code: int = INVALID_PARAMS) -> Refused:
    """A well-typed parameter with a value outside its domain: 1000 or -32602 (LED-WIRE.3)."""
    return Refused(code, message, frozenset({REFUSED, INVALID_PARAMS}))


def not_structured(message: str) -> Refused:
    """Params that are neither an object nor an array (a string, a number, a boolean): -32602,
    or -32600, as JSON-RPC 2.0 calls such a request invalid (LED-WIRE.2)."""
    return Refused(INVALID_PARAMS, message, frozenset({INVALID_PARAMS, INVALID_REQUEST}))


def invalid_params(message: str) -> Refused:
    """A structural parameter error (unknown, missing, wrong JSON type): -32602 only."""
    return Refused(INVALID_PARAMS, message, frozenset({INVALID_PARAMS}))


def combine(refusals: Iterable[Refused]) -> Refused:
    """When several refusals apply, a store may report any of them (LED-WIRE.3).

    The model reports the first; the allowed codes are the union, and the allowed messages
    the union unless one of them leaves its text open.
    """
    items = list(refusals)
    if not items:
        raise ValueError("combine() needs at least one refusal")
    codes: frozenset[int] = frozenset().union(*(r.allowed_codes for r in items))
    messages: frozenset[str] | None = frozenset()
    for r in items:
        if r.allowed_messages is None or messages is None:
            messages = None
        else:
            messages = messages | r.allowed_messages
    return Refused(items[0].code, items[0].message, codes, messages)
