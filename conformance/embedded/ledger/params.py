"""The ledger binding's params: limits, the error answers, and parsing one request's params.

Structural problems (unknown or missing param, JSON null, wrong JSON type) are -32602 only
(LED-WIRE.2).  A well-typed value outside its domain may be 1000 or -32602 (LED-WIRE.3); this
store answers -32602 for every bad value except an unknown record id (1000).  Lengths count
code points; bodies are trimmed with Python's str.strip() set (LED-REC.6).
"""

from __future__ import annotations

import json
import math
from typing import Any

from conformance.embedded.ledger.store import KINDS

SCOPE_KEY = "account:local"
MAX_BODY_CHARS = 4000
LIST_LIMIT = 50
MAX_OPERATIONS = 20
MAX_TARGETS = 10
MAX_SCOPE_CHARS = 200
MAX_SESSION_CHARS = 200
MAX_HARNESS_CHARS = 200
MAX_RATIONALE_CHARS = 4000
MAX_SUBJECT_CHARS = 80
MAX_AFTER_DAYS = 3650
DAY_MS = 86_400_000
MODES: tuple[str, ...] = ("off", "propose")

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REFUSED = 1000

CREDENTIAL_MESSAGE = "Memory pins cannot store credentials. Nothing was saved."


def budget_message(scope_key: str, held: int, budget: int) -> str:
    return (
        f"Memory scope '{scope_key}' holds {held} of {budget} records and nothing was written."
        " Forget or consolidate a record to make room."
    )


class LedgerError(Exception):
    """A request answered with an error body instead of a result."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def invalid(message: str) -> LedgerError:
    return LedgerError(400, INVALID_PARAMS, message)


def refused(message: str) -> LedgerError:
    return LedgerError(409, REFUSED, message)


# Structural problems (unknown or missing param, JSON null, wrong JSON type) are -32602 only
# (LED-WIRE.2).  A well-typed value outside its domain may be 1000 or -32602 (LED-WIRE.3); this
# store answers -32602 for every bad value except an unknown record id (1000).  Lengths count
# code points; bodies are trimmed with Python's str.strip() set (LED-REC.6).


def _reject_constant(token: str) -> Any:
    raise ValueError(f"not JSON: {token}")


def parse_params(raw_body: bytes) -> dict[str, Any]:
    """The request body as a params object.  An empty body or JSON ``null`` means no params
    (``{}``), as a method without params accepts both (LED-WIRE.12); a method that needs
    params then finds them missing."""
    if raw_body.strip() in (b"", b"null"):
        return {}
    try:
        value = json.loads(raw_body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise invalid("params must be a JSON object; the body is not valid JSON") from None
    if not isinstance(value, dict):
        raise invalid("params must be a JSON object")
    return value


def check_names(
    params: dict[str, Any],
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    nullable: tuple[str, ...] = (),
) -> None:
    """Refuse an unknown param, a missing required one, and a JSON null (LED-WIRE.2)."""
    for name in params:
        if name not in required and name not in optional:
            raise invalid(f"unknown param '{name}'")
    for name in required:
        if name not in params:
            raise invalid(f"missing required param '{name}'")
    for name, value in params.items():
        if value is None and name not in nullable:
            raise invalid(f"'{name}' cannot be null")


def trim(text: str) -> str:
    """Leading and trailing whitespace removed as the ledger stores bodies (LED-REC.6)."""
    return text.strip()


def get_body(params: dict[str, Any], name: str = "body") -> str:
    """A required body: a string, 1-4000 code points after trimming (LED-SAVE.3, LED-REC.6)."""
    value = params.get(name)
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be a string")
    trimmed = trim(value)
    if not trimmed:
        raise invalid(f"'{name}' must not be empty or only whitespace")
    if len(trimmed) > MAX_BODY_CHARS:
        raise invalid(f"'{name}' must be at most {MAX_BODY_CHARS} characters after trimming")
    return trimmed


def get_kind(params: dict[str, Any], default: str) -> str:
    """An optional kind among the four (LED-REC.2)."""
    if "kind" not in params:
        return default
    value = params["kind"]
    if not isinstance(value, str):
        raise invalid("'kind' must be a string")
    if value not in KINDS:
        raise invalid(f"'kind' must be one of {', '.join(KINDS)}")
    return value


def get_text(
    params: dict[str, Any], name: str, max_chars: int, *, allow_blank: bool = True
) -> str | None:
    """An optional string of 1-``max_chars`` code points (not blank unless allowed)."""
    if name not in params:
        return None
    value = params[name]
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be a string")
    if not 0 < len(value) <= max_chars:
        raise invalid(f"'{name}' must be 1-{max_chars} characters")
    if not allow_blank and not value.strip():
        raise invalid(f"'{name}' must not be blank")
    return value


def get_record_id(params: dict[str, Any], name: str = "recordId") -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be a string")
    return value


def as_integer(value: object) -> int | None:
    """JavaScript semantics: ``5.0`` is the integer 5; ``5.5`` and ``true`` are not integers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def get_int(params: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    if name not in params:
        return None
    number = as_integer(params[name])
    if number is None:
        raise invalid(f"'{name}' must be an integer")
    if not lo <= number <= hi:
        raise invalid(f"'{name}' must be an integer from {lo} to {hi}")
    return number


def get_bool(params: dict[str, Any], name: str) -> bool | None:
    if name not in params:
        return None
    value = params[name]
    if not isinstance(value, bool):
        raise invalid(f"'{name}' must be a boolean")
    return value


def get_scope(params: dict[str, Any]) -> str:
    """A scope key to read: a string of 1-200 code points (LED-LIST.3)."""
    value = params.get("scopeKey")
    if not isinstance(value, str):
        raise invalid("'scopeKey' must be a string")
    if not 0 < len(value) <= MAX_SCOPE_CHARS:
        raise invalid(f"'scopeKey' must be 1-{MAX_SCOPE_CHARS} characters")
    return value
