"""``handle``: one binding call, checked structurally and answered by the model (LED-WIRE.1-.8).

Checks run in this order: the method exists (else -32601); params is an object (absent =
``{}``); no unknown param, no missing required param, no JSON ``null``, every value of its JSON
type (else -32602 only, LED-WIRE.2); then the method's own rules.
"""

from __future__ import annotations

import re

from reference.ledger.consolidation import (
    json_int,
)
from reference.ledger.outcome import (
    METHOD_NOT_FOUND,
    Outcome,
    Refused,
    bad_value,
    invalid_params,
    not_structured,
)
from reference.ledger.records import (
    LedgerState,
)
from reference.ledger.wire.methods import METHODS, TEST_METHODS, Method


def _type_ok(value: object, json_type: str) -> bool:
    """Whether a param value has its JSON type (``integer`` in JavaScript's sense) (LED-WIRE.2)."""
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "integer":
        return json_int(value) is not None
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "array":
        return isinstance(value, list)
    raise AssertionError(json_type)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(value: object) -> bool:
    """Whether a JSON value holds a lone surrogate anywhere (LED-WIRE.2)."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


def lone_surrogate_param(params: object) -> str | None:
    """The first param whose name or value holds a lone surrogate, or None (LED-WIRE.2)."""
    if not isinstance(params, dict):
        return None
    for name, value in params.items():
        if _has_lone_surrogate(name) or _has_lone_surrogate(value):
            return str(name) if not _has_lone_surrogate(name) else "a param name"
    return None


def check_params(
    method: Method, params: object, *, text_only: bool = True
) -> dict[str, object] | Refused:
    """Structural checks shared by every method; -32602 only (LED-WIRE.2, LED-SAVE.2).

    ``text_only``: a string holding a lone surrogate is -32602 (the model's answer; a store may
    instead handle it as any other string, :func:`allowed`)."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        if not isinstance(params, list):  # neither object nor array: JSON-RPC's -32600 too
            return not_structured("params must be a JSON object.")
        return invalid_params("params must be a JSON object.")
    bad_text = lone_surrogate_param(params) if text_only else None
    if bad_text is not None:
        return invalid_params(f"{bad_text} is not valid text (a lone surrogate).")
    unknown = sorted(str(k) for k in params if k not in method.params)
    if unknown:
        if "scopeKey" in unknown:
            # LED-SAVE.2: refused, nothing written; the code is open (-32602 or 1000).
            return bad_value("scopeKey cannot be passed here: the server chooses the scope.")
        return invalid_params(f"unknown param(s): {', '.join(unknown)}")
    for name, (json_type, required) in method.params.items():
        if name not in params:
            if required:
                return invalid_params(f"missing param: {name}")
            continue
        value = params[name]
        if value is None:
            if name in method.nullable:
                continue
            return invalid_params(f"{name} cannot be null.")
        if not _type_ok(value, json_type):
            return invalid_params(f"{name} must be a JSON {json_type}.")
    return {str(k): v for k, v in params.items()}


def handle(
    state: LedgerState, method: str, params: object, now: int, *, text_only: bool = True
) -> tuple[LedgerState, Outcome]:
    """Answer one binding call at instant ``now`` (LED-WIRE.1-.8).

    Returns the new state and ``Ok(result)`` or ``Refused``; on a refusal the state is the one
    passed in, unchanged.
    """
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    if spec is None:
        return state, Refused(
            METHOD_NOT_FOUND, f"Method not found: {method}", frozenset({METHOD_NOT_FOUND})
        )
    checked = check_params(spec, params, text_only=text_only)
    if isinstance(checked, Refused):
        return state, checked
    new_state, outcome = spec.run(state, checked, now)
    if isinstance(outcome, Refused):
        assert new_state is state
    return new_state, outcome
