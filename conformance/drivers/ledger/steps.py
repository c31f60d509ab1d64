"""The ledger driver's op table and the pure parts of its steps: what each op needs, the
run's clock (where it starts, how a ``set_clock`` step moves it), a raw body as the model reads
it, and the bodies an ``expect`` names.

Part of the ledger driver (:mod:`conformance.drivers.ledger.driver`; ops and args in its
docstring).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from conformance.drivers.base import scenario_requires
from conformance.scenario import Scenario, Step
from conformance.targets.ledger import CLOCK, TEST_CONTROL
from conformance.vocabulary import Exchange, StepError, StepOutcome
from reference.ledger.timefmt import parse_rfc3339
from reference.ledger.wire import METHODS, TEST_METHODS

#: Where every scenario's clock starts (a fixed instant: runs are reproducible).
START_MS = parse_rfc3339("2026-03-02T09:00:00.000Z") or 0
#: How far the model's clock moves between two mutating steps that did not set it.
TICK_MS = 1000

_SYMBOL = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]{0,31})")
_ADVANCE = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True)
class Op:
    method: str
    mutating: bool = False
    control: bool = False  # needs ledger.test_control
    places_instant: bool = False  # sends an instant of its own: needs ledger.clock


OPS: dict[str, Op] = {
    "save": Op("memory/save_memory_record", mutating=True),
    "list": Op("memory/list_memory_records"),
    "delete": Op("memory/delete_memory_record", mutating=True),
    "supersede": Op("memory/supersede_memory_record", mutating=True),
    "approve": Op("memory/approve_memory_record", mutating=True),
    "reject": Op("memory/reject_memory_record", mutating=True),
    "list_as_of": Op("memory/list_memory_records_as_of"),
    "get_settings": Op("memory/get_consolidation_settings"),
    "update_settings": Op("memory/update_consolidation_settings", mutating=True),
    "reset": Op("_test/reset", mutating=True, control=True),
    "sweep": Op("_test/sweep", mutating=True, control=True, places_instant=True),
    "propose": Op("_test/propose", mutating=True, control=True),
    "consolidate": Op("_test/consolidate", mutating=True, control=True),
    "packet": Op("_test/packet", control=True),
    "set_clock": Op("_test/set_clock", control=True, places_instant=True),
    "raw": Op("", mutating=True),
}


#: The values memspec writes where a ledger needs one it knows, by the field that carries them,
#: and the key of the target profile's ``[ledger]`` table that replaces them.
_KNOWN: dict[str, str] = {"sessionId": "session", "sourceSessionId": "session"}
#: Harness and model are replaced only where memspec names its own (a blank or malformed one
#: is a step's point, and stays).
_OWN: dict[tuple[str, str], str] = {("harness", "claude"): "harness", ("model", "haiku"): "model"}


def with_known_values(value: Any, known: dict[str, str], key: str | None = None) -> Any:
    """``value`` (a step's args or expectation) with the values the target profile declares
    (``[ledger]``: ``session``, ``harness``, ``model``) in place of memspec's own: every
    non-blank ``sessionId``/``sourceSessionId`` is the declared session, the harness ``claude``
    and the model ``haiku`` the declared ones (LED-WIRE.14, LED-WIRE.15)."""
    if not known:
        return value
    if isinstance(value, str) and key is not None:
        name = _KNOWN.get(key) or _OWN.get((key, value))
        if name in known and (value.strip() or name != "session"):
            return known[name]
        return value
    if isinstance(value, list):
        return [with_known_values(v, known) for v in value]
    if isinstance(value, dict):
        return {k: with_known_values(v, known, k) for k, v in value.items()}
    return value


def takes_no_params(method: str) -> bool:
    """Whether ``method`` takes no params: it is then called without any (LED-WIRE.12), never
    with ``{}`` -- only a ``raw`` step sends ``{}`` to it, on purpose."""
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    return spec is not None and not spec.params


def step_requires(step: Step) -> set[str]:
    """Capabilities one step needs.  A step that places an instant of its own needs the
    target's clock pinned, or its instant would not mean the same on the target."""
    op = OPS.get(step.op)
    need: set[str] = set()
    if op is None:
        return need
    if op.control:
        need.add(TEST_CONTROL)
    if op.places_instant:
        need.add(CLOCK)
    if step.op == "raw" and str(step.args.get("method", "")).startswith("_test/"):
        need.add(TEST_CONTROL)
    return need


def infer_requires(scenario: Scenario) -> set[str]:
    """Every capability a ledger scenario needs: its ``requires`` plus what its steps use."""
    return scenario_requires(scenario, step_requires)


def clock_target(args: dict[str, Any], now: int) -> int:
    """The instant a ``set_clock`` step moves the run's clock to (from ``now``);
    :class:`StepError` for bad ``args`` or a move backwards."""
    if set(args) == {"now"} and isinstance(args["now"], str):
        new = parse_rfc3339(args["now"])
        if new is None:
            raise StepError(f"set_clock: {args['now']!r} is not an RFC 3339 instant")
    elif set(args) == {"advance_ms"} and isinstance(args["advance_ms"], int):
        new = now + args["advance_ms"]
    elif (
        set(args) == {"advance"}
        and isinstance(args["advance"], str)
        and _ADVANCE.fullmatch(args["advance"])
    ):
        m = _ADVANCE.fullmatch(args["advance"])
        assert m is not None
        new = now + int(m.group(1)) * _UNIT_MS[m.group(2)]
    else:
        raise StepError("set_clock takes {now: RFC 3339} or {advance_ms: int} or {advance: '5m'}")
    if new < now:
        raise StepError("set_clock: the run's clock never moves backwards")
    return new


_NOT_JSON = object()


def _parse_body(text: str) -> Any:
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _bodies(ex: Exchange, foreign: frozenset[str]) -> list[Any] | None:
    """The bodies of the answer's records (what a step's ``expect`` names ``texts``), without
    the records that predate the run."""
    records = ex.body.get("records") if isinstance(ex.body, dict) else None
    if not isinstance(records, list):
        return None
    return [r.get("body") for r in records if isinstance(r, dict) and r.get("id") not in foreign]


def _unpinned(index: int, op: str, clauses: tuple[str, ...], problem: str) -> StepOutcome:
    """A mutating step whose clock pin failed: indeterminate, never judged (its stamp is not
    the instant the model placed)."""
    return StepOutcome(
        index=index,
        op=op,
        verdict="indeterminate",
        clauses=clauses,
        reason=f"could not pin the target's clock: {problem}",
    )
