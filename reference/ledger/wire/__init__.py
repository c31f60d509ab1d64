"""The ledger binding as one pure function: ``handle(state, method, params, now)``.

Covers every method of the binding (LED-WIRE.1) and the test controls (LED-WIRE.7), so a
harness drives this model and a store with the same calls.  Params and results are camelCase
JSON values; times are RFC 3339 UTC with milliseconds (LED-WIRE.5).  Checks run in this order:
the method exists (else -32601); params is an object (absent = ``{}``); no unknown param, no
missing required param, no JSON ``null``, every value of its JSON type (else -32602 only,
LED-WIRE.2); then the method's own rules, where a bad value may be answered with 1000 or
-32602 and several applicable refusals may be reported in any order (LED-WIRE.3).

The parts: :mod:`.render` (records, settings and times on the wire), :mod:`.methods` (each
method's params and model answer), :mod:`.handle` (the structural checks and ``handle``),
:mod:`.allowed` (every allowed answer) and :mod:`.slash` (the pin commands).
"""

from __future__ import annotations

from reference.ledger.outcome import (
    INVALID_PARAMS,
    Ok,
    Outcome,
    Refused,
)
from reference.ledger.wire.allowed import (
    Answer,
    allowed,
)
from reference.ledger.wire.handle import (
    check_params,
    handle,
    lone_surrogate_param,
)
from reference.ledger.wire.methods import (
    LIST_STATUSES,
    METHODS,
    TEST_METHODS,
    Method,
)
from reference.ledger.wire.render import (
    ANSWER_TIME,
    RECORD_FIELDS,
    RECORD_FIELDS_WHEN_SET,
    TIME_FIELDS,
    WIRE_TIME,
    answer_instant,
    record_to_wire,
    same_instant,
    settings_answer,
    settings_to_wire,
)
from reference.ledger.wire.slash import (
    slash_command,
)

__all__ = [
    "ANSWER_TIME",
    "Answer",
    "INVALID_PARAMS",
    "LIST_STATUSES",
    "METHODS",
    "Method",
    "Ok",
    "Outcome",
    "RECORD_FIELDS",
    "RECORD_FIELDS_WHEN_SET",
    "Refused",
    "TEST_METHODS",
    "TIME_FIELDS",
    "WIRE_TIME",
    "allowed",
    "answer_instant",
    "check_params",
    "handle",
    "lone_surrogate_param",
    "record_to_wire",
    "same_instant",
    "settings_answer",
    "settings_to_wire",
    "slash_command",
]
