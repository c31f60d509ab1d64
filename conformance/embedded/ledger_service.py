"""The account memory ledger binding of the bundled store (``POST /ledger/...``).

``LedgerService`` is the whole ledger behind the HTTP shell in ``server.py``: it parses and
validates the params of each method, applies the lifecycle (save, supersede, delete, propose,
approve, reject, expire, conflict groups, budget, the consolidation gate) in SQLite through
:mod:`ledger_store`, and serialises records for the wire.  It is an independent second
implementation of ``specs/ledger.md``: apart from the pure credential detector
(``reference.ledger.credentials.detect_credential``, the spec's exact detector list) it does not
call the reference model, so the model and this store keep each other honest.  Where the spec
leaves a choice open this store answers every bad value with ``-32602`` (an unknown record id
with ``1000``) and leaves tombstones out of history reads.

Every call returns ``(http_status, json_body)``:

* 200 and the method's result;
* 400 ``{"error": {"code": -32602, "message": ...}}`` for invalid params;
* 409 ``{"error": {"code": 1000, "message": ...}}`` for a refused request (credential, budget,
  lifecycle, unknown record);
* 404 ``{"error": {"code": -32601, "message": ...}}`` for an unknown method (and for every test
  control when the service was built without ``test_control``).

Thread-safety: one SQLite connection guarded by one lock; every mutation is a single
``BEGIN IMMEDIATE`` transaction, so a refused or failing request leaves the database unchanged.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from conformance.embedded.catalogue import NONE as NO_QUIRKS
from conformance.embedded.catalogue import Quirks
from conformance.embedded.ledger_store import (
    KINDS,
    LedgerStore,
    Row,
    Settings,
)
from conformance.embedded.storage_faults import storage_fault
from reference.ledger.credentials import credential_verdict, detect_credential

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


# ---- time ----------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_INSTANT_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
MAX_INSTANT_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"([Zz]|[+-]\d{2}:\d{2})"
)


def format_time(ms: int) -> str:
    """Epoch milliseconds as RFC 3339 UTC with exactly three fraction digits (LED-WIRE.5)."""
    m = _EPOCH + timedelta(milliseconds=ms)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{m.microsecond // 1000:03d}Z"
    )


def parse_time(value: object, name: str) -> int:
    """An RFC 3339 date-time (``T``/``t``/space, ``Z``/``z`` or an offset, 0-9 fraction digits)
    as epoch milliseconds; digits past the millisecond are truncated, a leap second ``:60``
    reads as the minute's last millisecond (LED-WIRE.5).  Anything else is a bad value."""
    if not isinstance(value, str):
        raise invalid(f"'{name}' must be an RFC 3339 date-time string")
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise invalid(f"'{name}' is not an RFC 3339 date-time: {value!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, offset = m.group(7), m.group(8)
    millis = int(((fraction or "") + "000")[:3])
    if second == 60:
        second, millis = 59, 999
    try:
        if offset in ("Z", "z"):
            tz = UTC
        else:
            hours, minutes = int(offset[1:3]), int(offset[4:6])
            if hours > 23 or minutes > 59:
                raise ValueError("offset out of range")
            sign = 1 if offset[0] == "+" else -1
            tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
        moment = datetime(year, month, day, hour, minute, second, tzinfo=tz)
    except ValueError:
        raise invalid(f"'{name}' is not a valid instant: {value!r}") from None
    delta = moment - _EPOCH
    ms = (delta.days * 86_400 + delta.seconds) * 1000 + millis
    if not MIN_INSTANT_MS <= ms <= MAX_INSTANT_MS:
        raise invalid(f"'{name}' lies outside the years 0001-9999: {value!r}")
    return ms


def real_clock() -> int:
    return time.time_ns() // 1_000_000


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def surrogate_param(params: dict[str, Any]) -> str | None:
    """The first param whose name or value holds a lone surrogate (``\\ud800``): such a string
    is not text and cannot be stored (LED-WIRE.2); None when there is none."""
    for name, value in params.items():
        if _has_surrogate(name) or _has_surrogate(value):
            return name
    return None


_TIME_KEYS = ("validFrom", "validTo", "createdAt", "updatedAt", "expiresAt", "now")


def restyle_times(value: Any, style: Callable[[int], str]) -> Any:
    """Every time field of an answer rewritten by ``style`` (the allowed variants of LED-WIRE.5)."""
    if isinstance(value, list):
        return [restyle_times(v, style) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _TIME_KEYS and isinstance(v, str) and _RFC3339.fullmatch(v):
                out[k] = style(parse_time(v, k))
            else:
                out[k] = restyle_times(v, style)
        return out
    return value


def _iso_style(ms: int) -> str:
    """``datetime.isoformat()``: ``+00:00``, microseconds, no fraction at all when zero."""
    return (_EPOCH + timedelta(milliseconds=ms)).isoformat()


def _offset_style(ms: int) -> str:
    return format_time(ms)[:-1] + "+00:00"


def _seconds_style(ms: int) -> str:
    return format_time(ms)[:-5] + "Z"


# ---- params --------------------------------------------------------------------------------
# Structural problems (unknown or missing param, JSON null, wrong JSON type) are -32602 only
# (LED-WIRE.2).  A well-typed value outside its domain may be 1000 or -32602 (LED-WIRE.3); this
# store answers -32602 for every bad value except an unknown record id (1000).  Lengths count
# code points; bodies are trimmed with Python's str.strip() set (LED-REC.6).


def _reject_constant(token: str) -> Any:
    raise ValueError(f"not JSON: {token}")


def parse_params(raw_body: bytes) -> dict[str, Any]:
    """The request body as a params object.  An empty body means no params (``{}``)."""
    if raw_body.strip() == b"":
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


# ---- wire shapes ---------------------------------------------------------------------------


def record_to_wire(row: Row) -> dict[str, Any]:
    """A record as the binding returns it: camelCase, optional fields only when set, a
    tombstone's body empty (LED-WIRE.4, LED-WIRE.5, LED-FORGET.3)."""
    out: dict[str, Any] = {
        "id": row.id,
        "scopeKey": row.scope_key,
        "kind": row.kind,
        "body": "" if row.status == "deleted" else row.body,
        "provenance": row.provenance,
        "status": row.status,
        "validFrom": format_time(row.valid_from),
        "createdAt": format_time(row.created_at),
        "updatedAt": format_time(row.updated_at),
    }
    if row.source_session_id is not None:
        out["sourceSessionId"] = row.source_session_id
    if row.confidence_bps is not None:
        out["confidenceBps"] = row.confidence_bps
    if row.rationale is not None:
        out["rationale"] = row.rationale
    if row.supersedes is not None:
        out["supersedes"] = row.supersedes
    if row.valid_to is not None:
        out["validTo"] = format_time(row.valid_to)
    if row.expires_at is not None:
        out["expiresAt"] = format_time(row.expires_at)
    if row.conflict_group is not None:
        out["conflictGroup"] = row.conflict_group
    return out


def settings_to_wire(scope_key: str, s: Settings, held: int | None = None) -> dict[str, Any]:
    """The settings as both settings methods answer them (LED-CONS.2), with ``heldRecords``
    (how full the budget is) when ``held`` is given."""
    out: dict[str, Any] = {"scopeKey": scope_key, "mode": s.mode}
    if s.harness is not None:
        out["harness"] = s.harness
    if s.model is not None:
        out["model"] = s.model
    out["maxRecords"] = s.max_records
    out["allowRemoval"] = s.allow_removal
    out["debounceSeconds"] = s.debounce_seconds
    if held is not None:
        out["heldRecords"] = held
    return out


def new_record_id() -> str:
    """32 lower-case hex digits of a random UUID: unique, and the first 8 (the packet's short
    id) are already distinctive (LED-REC.3)."""
    return uuid.uuid4().hex


def fresh_row(
    *,
    body: str,
    kind: str,
    provenance: str,
    status: str,
    at: int,
    record_id: str | None = None,
    supersedes: str | None = None,
    conflict_group: str | None = None,
    source_session_id: str | None = None,
    confidence_bps: int | None = None,
    rationale: str | None = None,
) -> Row:
    """A new row of ``account:local`` written at ``at``: open when active, empty otherwise."""
    return Row(
        id=record_id if record_id is not None else new_record_id(),
        scope_key=SCOPE_KEY,
        kind=kind,
        body=body,
        provenance=provenance,
        status=status,
        source_session_id=source_session_id,
        supersedes=supersedes,
        superseded_by=None,
        confidence_bps=confidence_bps,
        rationale=rationale,
        valid_from=at,
        valid_to=None if status == "active" else at,
        expires_at=None,
        conflict_group=conflict_group,
        created_at=at,
        updated_at=at,
    )


# ---- the service ---------------------------------------------------------------------------

#: Messages of structural param errors (LED-WIRE.2): -32602 whatever a store picks for values.
_STRUCTURAL = re.compile(
    r"unknown param|missing required|cannot be null|must be an? (?:string|boolean|array)"
    r"|must be an integer(?! from)"
    r"|params must be a JSON object|cannot be sent on save|lone surrogate"
)

Handler = Callable[[dict[str, Any], int], dict[str, Any]]


class LedgerService:
    """The ledger binding over one SQLite database (``":memory:"`` or a file path).

    ``clock`` gives the store's now in epoch milliseconds (default: the system clock);
    ``test_control`` enables the ``_test/*`` controls (LED-WIRE.7); ``quirks`` selects catalogue
    alterations (allowed variants, mutants) -- production runs with none.
    """

    def __init__(
        self,
        db: str | Path = ":memory:",
        clock: Callable[[], int] | None = None,
        test_control: bool = False,
        quirks: Quirks = NO_QUIRKS,
    ) -> None:
        self.quirks = quirks
        self._store = LedgerStore(str(db))
        self._clock = clock if clock is not None else real_clock
        self._frozen: int | None = None
        self._test_control = test_control
        self._lock = threading.RLock()
        self._methods: dict[str, Handler] = {
            "memory/save_memory_record": self._save,
            "memory/list_memory_records": self._list,
            "memory/delete_memory_record": self._delete,
            "memory/supersede_memory_record": self._supersede,
            "memory/approve_memory_record": self._approve,
            "memory/reject_memory_record": self._reject,
            "memory/list_memory_records_as_of": self._list_as_of,
            "memory/get_consolidation_settings": self._get_settings,
            "memory/update_consolidation_settings": self._update_settings,
        }
        self._controls: dict[str, Handler] = {
            "reset": self._t_reset,
            "set_clock": self._t_set_clock,
            "sweep": self._t_sweep,
            "propose": self._t_propose,
            "set_expiry": self._t_set_expiry,
            "consolidate": self._t_consolidate,
            "packet": self._t_packet,
        }

    # ---- entry points --------------------------------------------------------------------

    @property
    def methods(self) -> tuple[str, ...]:
        """The binding's method names (LED-WIRE.1)."""
        return tuple(self._methods)

    @property
    def controls(self) -> tuple[str, ...]:
        """The test control names served under ``_test/`` (LED-WIRE.7)."""
        return tuple(self._controls)

    @property
    def store(self) -> LedgerStore:
        """The storage (tests inspect the SQLite tables through it; hold ``lock`` meanwhile)."""
        return self._store

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def handle(self, method: str, raw_body: bytes) -> tuple[int, dict[str, Any]]:
        """Answer one ``POST /ledger/<method>`` (LED-WIRE.1)."""
        handler = self._methods.get(method)
        if handler is None:
            return 404, {
                "error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
            }
        return self._run(handler, raw_body)

    def handle_test(self, name: str, raw_body: bytes) -> tuple[int, dict[str, Any]]:
        """Answer one ``POST /ledger/_test/<name>`` (404 unless built with ``test_control``)."""
        handler = self._controls.get(name) if self._test_control else None
        if handler is None:
            return 404, {
                "error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: _test/{name}"}
            }
        return self._run(handler, raw_body)

    def close(self) -> None:
        with self._lock:
            self._store.close()

    def now(self) -> int:
        """The store's current instant: the frozen test clock if set, else ``clock()``."""
        return self._frozen if self._frozen is not None else self._clock()

    def _run(self, handler: Handler, raw_body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            params = parse_params(raw_body)
            bad_text = surrogate_param(params)
            if bad_text is not None:
                raise invalid(f"'{bad_text}' is not valid text: it holds a lone surrogate")
            if self.quirks("ledger-null-is-absent") and handler != self._t_set_clock:
                params = {k: v for k, v in params.items() if v is not None}
            if self.quirks("ledger-integral-floats-refused"):
                for k, v in params.items():
                    if isinstance(v, float):
                        raise invalid(f"'{k}' must be an integer")
            with self._lock:
                result = handler(params, self.now())
            if self.quirks("ledger-times-offset"):
                result = restyle_times(result, _offset_style)
            if self.quirks("ledger-times-isoformat"):
                result = restyle_times(result, _iso_style)
            if self.quirks("ledger-times-seconds"):
                result = restyle_times(result, _seconds_style)
            return 200, result
        except LedgerError as err:
            if self.quirks("ledger-bad-value-1000") and err.code == INVALID_PARAMS:
                if not _STRUCTURAL.search(err.message):
                    return 409, {"error": {"code": REFUSED, "message": err.message}}
            if self.quirks("ledger-refusal-wording") and err.code == REFUSED:
                if err.message.startswith(("Memory record '", "No memory record '")):
                    return 409, {
                        "error": {"code": REFUSED, "message": "That pin can't do that now."}
                    }
            return err.status, err.body()
        except sqlite3.Error as err:  # a broken invariant or a database fault, never a 200
            if storage_fault(err) is not None:
                raise  # the disk, not the ledger: the server answers 503 naming the cause
            return 500, {"error": {"code": INTERNAL_ERROR, "message": f"storage error: {err}"}}

    # ---- shared lifecycle steps ----------------------------------------------------------

    def _existing(self, record_id: str) -> Row:
        """The record of ``account:local`` with this id; an unknown id is refused (1000)."""
        row = self._store.get(record_id)
        if row is None or row.scope_key != SCOPE_KEY:
            raise refused(
                f"No memory record '{record_id}' in scope '{SCOPE_KEY}'. Nothing was changed."
            )
        return row

    @staticmethod
    def _require_status(row: Row, status: str, action: str) -> None:
        """A lifecycle refusal unless ``row`` has ``status`` (LED-STATUS.3)."""
        if row.status != status:
            article = "an" if status == "active" else "a"
            raise refused(
                f"Memory record '{row.id}' is {row.status}; only {article} {status} record can"
                f" be {action}. Nothing was changed."
            )

    def _check_budget(self) -> None:
        """Refuse growth while held >= maxRecords, with the exact message (LED-BUDGET.2)."""
        held = self._store.held(SCOPE_KEY)
        if self.quirks("led-budget-counts-only-active"):  # mutant: proposals are not counted
            held = len(self._store.by_status(SCOPE_KEY, "active"))
        budget = self._store.settings(SCOPE_KEY).max_records
        if held >= budget and self.quirks("led-budget-evicts-oldest"):
            oldest = self._store.by_status(SCOPE_KEY, "active")[-1:]  # mutant: make room
            for row in oldest:
                self._tombstone(row, self.now())
            held -= len(oldest)
        if held >= budget + (1 if self.quirks("led-budget-off-by-one") else 0):
            raise refused(budget_message(SCOPE_KEY, held, budget))

    def _is_credential(self, body: str) -> bool:
        """A credential-shaped body (LED-CRED.1); the variant keeps the thresholds the seed
        leaves open (a ``gh?_`` token of 20-35 characters, a PEM header without END) stored."""
        if self.quirks("ledger-credential-strict-thresholds"):
            return credential_verdict(body) == "refuse"
        return detect_credential(body) is not None

    def _check_credential(self, body: str) -> None:
        """Refuse a credential-shaped body with the exact message (LED-CRED.2)."""
        if self._is_credential(body):
            raise refused(CREDENTIAL_MESSAGE)

    def _supersede_row(self, row: Row, by: str, at: int) -> None:
        """Close an active record at ``at`` as superseded by ``by`` (LED-INT.3)."""
        self._store.update(
            row.id,
            {"status": "superseded", "valid_to": at, "updated_at": at, "superseded_by": by},
        )

    def _tombstone(self, row: Row, at: int) -> None:
        """Close an active record at ``at`` as deleted and forget its body (LED-FORGET.1,
        LED-FORGET.3, LED-INT.4)."""
        self._store.update(
            row.id,
            {
                "status": "deleted",
                "valid_to": row.valid_from if self.quirks("led-tombstone-empty-interval") else at,
                "updated_at": at,
                "body": row.body if self.quirks("led-tombstone-body-in-history") else "",
            },
        )

    def _replace(self, old: Row, at: int, *, body: str, kind: str, provenance: str) -> Row:
        """Supersede ``old`` by a new active record opening at ``at`` with its conflict group
        (an edit or a correction: LED-EDIT.1, LED-VOCAB.3, LED-GROUP.4)."""
        new = fresh_row(
            body=body,
            kind=kind,
            provenance=provenance,
            status="active",
            at=at,
            supersedes=old.id,
            conflict_group=None
            if self.quirks("led-replacement-drops-group")
            else old.conflict_group,
            source_session_id=(
                old.source_session_id if self.quirks("ledger-successor-keeps-session") else None
            ),
        )
        if self.quirks("led-supersede-leaves-gap"):  # mutant: the successor opens 1 ms late
            new = replace(new, valid_from=at + 1, created_at=at + 1, updated_at=at + 1)
        closing = at + 1 if self.quirks("led-supersede-overlaps") else at  # mutant: 1 ms overlap
        self._supersede_row(old, new.id, closing)  # first: the group's one active slot frees up
        self._store.insert(new)
        return new

    def _fetch(self, record_id: str) -> dict[str, Any]:
        """The record as now stored, for the answer."""
        row = self._store.get(record_id)
        assert row is not None
        return record_to_wire(row)

    # ---- methods -------------------------------------------------------------------------

    def _save(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-SAVE.1-.3, LED-PROV.1, LED-REC.5, LED-REC.6, LED-CRED.2, LED-BUDGET.2."""
        if "scopeKey" in p:
            raise invalid("'scopeKey' cannot be sent on save: the server chooses the scope")
        check_names(p, ("body",), ("kind", "sessionId"))
        if self.quirks("led-body-length-before-trim") and isinstance(p.get("body"), str):
            if len(p["body"]) > MAX_BODY_CHARS:  # mutant: the untrimmed length is judged
                raise invalid(f"'body' must be at most {MAX_BODY_CHARS} characters")
        body = get_body(p)
        if self.quirks("led-body-stored-untrimmed"):  # mutant: validated trimmed, stored raw
            body = p["body"]
        kind = get_kind(p, "preference")
        session = get_text(p, "sessionId", MAX_SESSION_CHARS)
        self._check_credential(body)
        row = fresh_row(
            body=body,
            kind=kind,
            provenance="user_explicit",
            status="active",
            at=now,
            source_session_id=session,
        )
        if self.quirks("race-ledger-budget-unlocked"):
            self._check_budget()  # outside the transaction, and others run before the insert
            self._lock.release()
            try:
                time.sleep(0.002)
            finally:
                self._lock.acquire()
            with self._store.write():
                self._store.insert(row)
                return self._fetch(row.id)
        with self._store.write():
            self._check_budget()
            self._store.insert(row)
            return self._fetch(row.id)

    def _list(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-LIST.1-.3."""
        check_names(p, ("scopeKey",), ("status",))
        scope = get_scope(p)
        if self.quirks("ledger-foreign-scope-refused") and scope != SCOPE_KEY:
            raise refused(f"Only the scope '{SCOPE_KEY}' exists here.")
        status = p.get("status", "active")
        if not isinstance(status, str):
            raise invalid("'status' must be a string")
        if status not in ("active", "proposed"):
            raise invalid("'status' must be 'active' or 'proposed'")
        rows = self._store.by_status(
            scope, status, LIST_LIMIT + 1 if self.quirks("led-list-51") else LIST_LIMIT
        )
        if self.quirks("led-list-oldest-first"):  # mutant: oldest update first
            rows = sorted(rows, key=lambda r: (r.updated_at, r.seq))
        return {"scopeKey": scope, "records": [record_to_wire(r) for r in rows]}

    def _delete(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-FORGET.1-.3, LED-INT.4."""
        check_names(p, ("recordId",))
        record_id = get_record_id(p)
        with self._store.write():
            row = self._existing(record_id)
            self._require_status(row, "active", "forgotten")
            self._tombstone(row, now)
            answer = self._fetch(record_id)
            if self.quirks("ledger-delete-returns-body"):
                answer["body"] = row.body
            return answer

    def _supersede(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-EDIT.1-.3, LED-INT.3, LED-GROUP.4."""
        check_names(p, ("recordId", "body"), ("kind",))
        record_id = get_record_id(p)
        body = get_body(p)
        kind = get_kind(p, "")  # "" = keep the edited record's kind
        with self._store.write():
            old = self._existing(record_id)
            self._require_status(old, "active", "edited")
            if not self.quirks("led-credential-on-edit"):  # mutant: the edit path forgets it
                self._check_credential(body)
            if self.quirks("led-replacement-refused-at-budget"):  # mutant: an edit is growth
                self._check_budget()
            new = self._replace(
                old,
                now,
                body=body,
                kind=kind or old.kind,
                provenance=old.provenance
                if self.quirks("led-edit-keeps-provenance")
                else "user_explicit",
            )
            return self._fetch(new.id)

    def _approve(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-REVIEW.2, LED-GROUP.2, LED-BUDGET.3."""
        check_names(p, ("recordId",))
        record_id = get_record_id(p)
        with self._store.write():
            row = self._existing(record_id)
            self._require_status(row, "proposed", "approved")
            if self.quirks("led-approve-refused-at-budget"):  # mutant: approval counted as growth
                self._check_budget()
            if row.conflict_group is not None and not self.quirks("led-approve-keeps-rival"):
                for loser in self._store.active_in_group(SCOPE_KEY, row.conflict_group):
                    self._supersede_row(loser, row.id, now)
            self._store.update(
                row.id,
                {
                    "status": "active",
                    "valid_from": row.valid_from
                    if self.quirks("led-approve-keeps-valid-from")
                    else now,
                    "valid_to": None,
                    "updated_at": now,
                },
            )
            return self._fetch(record_id)

    def _reject(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-REVIEW.3, LED-INT.2."""
        check_names(p, ("recordId",))
        record_id = get_record_id(p)
        with self._store.write():
            row = self._existing(record_id)
            self._require_status(row, "proposed", "rejected")
            self._store.update(row.id, {"status": "rejected", "updated_at": now})
            if self.quirks(
                "led-reject-closes-at-now"
            ):  # mutant: the interval runs to the rejection
                self._store.update(row.id, {"valid_to": now})
            return self._fetch(record_id)

    def _list_as_of(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-ASOF.1-.3.  Tombstones are left out (LED-ASOF.2: implementation-defined)."""
        check_names(p, ("scopeKey", "at"))
        scope = get_scope(p)
        if self.quirks("ledger-foreign-scope-refused") and scope != SCOPE_KEY:
            raise refused(f"Only the scope '{SCOPE_KEY}' exists here.")
        at = parse_time(p["at"], "at")
        hide = () if self.quirks("ledger-history-shows-tombstones") else ("deleted",)
        rows = self._store.as_of(scope, at, exclude_statuses=hide)
        if self.quirks("led-asof-includes-valid-to"):  # mutant: [validFrom, validTo] closed
            rows += [r for r in self._store.as_of(scope, at - 1, ("deleted",)) if r.valid_to == at]
        if self.quirks("led-tombstone-body-in-history"):  # mutant: tombstones with their body
            rows += [r for r in self._store.as_of(scope, at, ()) if r.status == "deleted"]
            return {
                "scopeKey": scope,
                "records": [{**record_to_wire(r), "body": r.body} for r in rows],
            }
        return {"scopeKey": scope, "records": [record_to_wire(r) for r in rows]}

    def _get_settings(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-CONS.1, LED-CONS.2."""
        check_names(p, ())
        return self._settings_answer()

    def _update_settings(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-CONS.1, LED-CONS.2, LED-BUDGET.4 (absent fields keep their value)."""
        check_names(
            p, ("mode",), ("harness", "model", "maxRecords", "allowRemoval", "debounceSeconds")
        )
        mode = p["mode"]
        if not isinstance(mode, str):
            raise invalid("'mode' must be a string")
        if mode not in MODES:
            raise invalid(f"'mode' must be one of {', '.join(MODES)}")
        clear = set()
        if self.quirks("ledger-settings-clear-omitted"):
            clear |= {n for n in ("harness", "model") if n not in p}
        if self.quirks("ledger-blank-harness-unsets"):
            clear |= {n for n in ("harness", "model") if p.get(n) == ""}
            p = {k: v for k, v in p.items() if k not in clear}
        harness = get_text(p, "harness", MAX_HARNESS_CHARS, allow_blank=False)
        model = get_text(p, "model", MAX_HARNESS_CHARS, allow_blank=False)
        max_records = get_int(p, "maxRecords", 1, 10_000)
        allow_removal = get_bool(p, "allowRemoval")
        debounce = get_int(p, "debounceSeconds", 30, 86_400)
        with self._store.write():
            old = self._store.settings(SCOPE_KEY)
            if self.quirks("led-settings-omitted-reset"):  # mutant: omitted means default
                old = replace(old, max_records=200, allow_removal=False, debounce_seconds=600)
            new = Settings(
                mode=mode,
                harness=None if "harness" in clear else old.harness if harness is None else harness,
                model=None if "model" in clear else old.model if model is None else model,
                max_records=old.max_records if max_records is None else max_records,
                allow_removal=old.allow_removal if allow_removal is None else allow_removal,
                debounce_seconds=old.debounce_seconds if debounce is None else debounce,
            )
            if self.quirks("ledger-propose-needs-model") and new.mode == "propose":
                if new.harness is None or new.model is None:
                    raise refused("Set a harness and a model before turning consolidation on.")
            self._store.put_settings(SCOPE_KEY, new, now)
            return self._settings_answer()

    def _settings_answer(self) -> dict[str, Any]:
        """The settings of ``account:local`` with ``heldRecords``, how full the budget is
        (LED-CONS.2, LED-BUDGET.1)."""
        held = None if self.quirks("ledger-settings-without-held") else self._store.held(SCOPE_KEY)
        return settings_to_wire(SCOPE_KEY, self._store.settings(SCOPE_KEY), held)

    # ---- test controls (LED-WIRE.7) ------------------------------------------------------

    def _t_reset(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """An empty ledger with default settings, on the real clock again."""
        check_names(p, ())
        self._store.reset()
        self._frozen = None
        return {"ok": True}

    def _t_set_clock(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """Freeze the store's clock at ``now``; ``null`` returns to the real clock."""
        check_names(p, ("now",), nullable=("now",))
        value = p["now"]
        self._frozen = None if value is None else parse_time(value, "now")
        return {"now": format_time(self.now())}

    def _t_sweep(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-EXP.2-.4: the sweep's instant is its argument, never the clock."""
        check_names(p, ("at",))
        at = parse_time(p["at"], "at")
        with self._store.write():
            expired: list[str] = []
            strict = self.quirks("led-sweep-strict-boundary")  # mutant: "<" where "<=" is due
            for row in self._store.due_for_expiry(SCOPE_KEY, at - 1 if strict else at):
                assert row.expires_at is not None
                self._store.update(
                    row.id,
                    {
                        "status": "deleted" if self.quirks("led-expiry-deletes") else "expired",
                        "valid_to": at
                        if self.quirks("led-sweep-closes-at-sweep")
                        else row.expires_at,
                        "updated_at": at,
                    },
                )
                expired.append(row.id)
        return {"expired": expired}

    def _t_propose(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-REVIEW.1, LED-REVIEW.4, LED-INT.2, LED-PROV.2, LED-GROUP.5."""
        check_names(
            p, ("body",), ("kind", "sessionId", "confidenceBps", "rationale", "conflictGroup")
        )
        body = get_body(p)
        kind = get_kind(p, "preference")
        session = get_text(p, "sessionId", MAX_SESSION_CHARS)
        lenient = self.quirks("ledger-test-controls-unchecked")
        confidence = get_int(p, "confidenceBps", 0, 10_000)
        rationale = get_text(p, "rationale", 10**9 if lenient else MAX_RATIONALE_CHARS)
        group = get_text(
            p, "conflictGroup", 10**9 if lenient else MAX_SUBJECT_CHARS, allow_blank=lenient
        )
        if group is not None and self.quirks("ledger-groups-casefolded"):
            group = group.strip().casefold() or group
        if not self.quirks("led-credential-on-propose"):  # mutant: proposals skip the detector
            self._check_credential(body)
        row = fresh_row(
            body=body,
            kind=kind,
            provenance="model_proposal",
            status="proposed",
            at=now,
            source_session_id=session,
            confidence_bps=confidence,
            rationale=rationale,
            conflict_group=group,
        )
        if self.quirks("race-ledger-budget-unlocked"):
            self._check_budget()  # outside the transaction, and others run before the insert
            self._lock.release()
            try:
                time.sleep(0.002)
            finally:
                self._lock.acquire()
            with self._store.write():
                self._store.insert(row)
                return self._fetch(row.id)
        with self._store.write():
            self._check_budget()
            self._store.insert(row)
            return self._fetch(row.id)

    def _t_set_expiry(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-EXP.5: an active record only, and never before its ``validFrom``."""
        check_names(p, ("recordId", "expiresAt"))
        record_id = get_record_id(p)
        expires_at = parse_time(p["expiresAt"], "expiresAt")
        with self._store.write():
            row = self._existing(record_id)
            self._require_status(row, "active", "given an expiry")
            if expires_at < row.valid_from:
                raise invalid("'expiresAt' cannot precede the record's validFrom")
            stamp = {} if self.quirks("ledger-test-controls-unchecked") else {"updated_at": now}
            self._store.update(row.id, {"expires_at": expires_at, **stamp})
            return self._fetch(record_id)

    def _t_consolidate(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-GATE.*, LED-VOCAB.*: one batch, one instant (the store's now)."""
        check_names(p, ("operations",))
        operations = p["operations"]
        if not isinstance(operations, list):
            raise invalid("'operations' must be an array")
        with self._store.write():
            return _Consolidation(self, now).run(operations)

    def _t_packet(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-PACKET.1-.5."""
        check_names(p, ())
        lines = build_packet(self._store.by_status(SCOPE_KEY, "active"), self.quirks)
        return {"lines": lines, "text": "\n".join(lines)}


# ---- consolidation -------------------------------------------------------------------------

_OPERATION_FIELDS: dict[str, tuple[str, ...]] = {
    "merge": ("body",),
    "correct": ("body",),
    "expire": ("afterDays",),
    "group": ("subject",),
    "retire": (),
    "keep": (),
}
_ARITY: dict[str, tuple[int, int]] = {
    "merge": (2, MAX_TARGETS),
    "correct": (1, 1),
    "expire": (1, 1),
    "group": (2, MAX_TARGETS),
    "retire": (1, 1),
    "keep": (1, 1),
}


class _Verdict(Exception):
    """How the gate classified an element that was not applied."""

    def __init__(self, outcome: str, reason: str, *, must: bool = False) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.must = must  # invalid whatever a store picks (a field the gate derives, LED-GATE.5)


class _Consolidation:
    """One consolidation batch through the gate, every stamp at the one run instant
    (LED-GATE.1-.9).  Runs inside the caller's transaction."""

    def __init__(self, service: LedgerService, at: int) -> None:
        self.service = service
        self.store = service.store
        self.at = at

    def run(self, operations: list[Any]) -> dict[str, int]:
        counts = {"applied": 0, "invalid": 0, "refused": 0, "declined": 0}
        quirks = self.service.quirks
        for index, element in enumerate(operations):
            extra = 1 if quirks("led-21st-element-applied") else 0  # mutant
            if index >= MAX_OPERATIONS + extra:  # LED-GATE.6: never looked at
                if quirks("ledger-past-20-uncounted"):
                    continue
                counts["refused" if quirks("ledger-past-20-refused") else "invalid"] += 1
                continue
            try:
                self.apply(element)
                if self.service.quirks("led-one-instant-per-element"):  # mutant: clock per element
                    self.at += 1
            except _Verdict as verdict:
                outcome = verdict.outcome
                if outcome == "invalid" and not verdict.must and quirks("ledger-shape-refused"):
                    outcome = "refused"
                counts[outcome] += 1
            else:
                counts["applied"] += 1
        return counts

    def apply(self, element: object) -> None:
        """Shape first (invalid), then the gate (refused), then keep (declined), else apply."""
        if not isinstance(element, dict):
            raise _Verdict("invalid", "not an object")
        operation = element.get("operation")
        if not isinstance(operation, str):
            raise _Verdict("invalid", "operation missing or not a string")
        if operation not in _OPERATION_FIELDS:
            if self.service.quirks("led-unknown-operation-invalid"):  # mutant: shape, not gate
                raise _Verdict("invalid", "outside the vocabulary")
            raise _Verdict("refused", "outside the vocabulary")
        if self.store.settings(SCOPE_KEY).mode == "off" and self.service.quirks(
            "led-gate-reads-mode"
        ):  # mutant: consolidation off refuses everything
            raise _Verdict("refused", "consolidation is off")
        fields = _OPERATION_FIELDS[operation]
        for name in element:
            if name not in ("operation", "targets", *fields):
                must = not (operation == "keep" and name == "body")
                raise _Verdict("invalid", f"{operation} does not take {name}", must=must)
        targets = element.get("targets")
        lo, hi = _ARITY[operation]
        if (
            not isinstance(targets, list)
            or not all(isinstance(t, str) and t for t in targets)
            or len(set(targets)) != len(targets)
            or not lo <= len(targets) <= hi
        ):
            raise _Verdict("invalid", "targets")
        body = self._body(element) if "body" in fields else ""
        after_days = self._after_days(element) if "afterDays" in fields else 0
        subject = self._subject(element) if "subject" in fields else ""

        rows: list[Row] = []
        for target in targets:
            row = self.store.get(target)
            if row is None or row.scope_key != SCOPE_KEY:
                raise _Verdict("refused", "target not in the scope")
            if row.status != "active" and not (
                operation == "expire" and self.service.quirks("led-expire-dead-target")
            ):  # mutant above: expire takes any target that exists
                raise _Verdict("refused", "target not active")
            rows.append(row)
        removal = self.store.settings(SCOPE_KEY).allow_removal
        if (
            operation == "retire"
            and not removal
            and not self.service.quirks("led-retire-ignores-removal")
        ):
            raise _Verdict("refused", "removal not allowed")
        skip = (operation == "merge" and self.service.quirks("led-credential-on-merge")) or (
            operation == "correct" and self.service.quirks("led-credential-on-correct")
        )  # mutants: one consolidation path forgets the credential detector
        if body and not skip and self.service._is_credential(body):
            raise _Verdict("refused", "credential-shaped body")
        if operation == "expire" and self.at + after_days * DAY_MS > MAX_INSTANT_MS:
            # Not in the spec: an expiry past 9999-12-31 has no RFC 3339 form to answer with.
            raise _Verdict("refused", "expiry beyond the representable range")

        if operation == "keep" and not self.service.quirks("led-keep-counted-applied"):
            raise _Verdict("declined", "keep")
        if operation == "keep":
            return
        if operation == "merge":
            self._merge(rows, body)
        elif operation == "correct":
            self.service._replace(
                rows[0], self.at, body=body, kind=rows[0].kind, provenance="model_consolidation"
            )
        elif operation == "expire":
            start = (
                rows[0].created_at if self.service.quirks("led-expire-from-created") else self.at
            )
            self.store.update(
                rows[0].id, {"expires_at": start + after_days * DAY_MS, "updated_at": self.at}
            )
        elif operation == "group":
            self._group(rows, subject)
        else:  # retire
            self.service._tombstone(rows[0], self.at)

    @staticmethod
    def _body(element: dict[str, Any]) -> str:
        value = element.get("body")
        if not isinstance(value, str):
            raise _Verdict("invalid", "body")
        trimmed = trim(value)
        if not trimmed or len(trimmed) > MAX_BODY_CHARS:
            raise _Verdict("invalid", "body")
        return trimmed

    def _after_days(self, element: dict[str, Any]) -> int:
        value = element.get("afterDays")
        if isinstance(value, float) and self.service.quirks("ledger-integral-floats-refused"):
            raise _Verdict("invalid", "afterDays")
        days = as_integer(value)
        if days is None or not 1 <= days <= MAX_AFTER_DAYS:
            raise _Verdict("invalid", "afterDays")
        return days

    def _subject(self, element: dict[str, Any]) -> str:
        value = element.get("subject")
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_SUBJECT_CHARS:
            raise _Verdict("invalid", "subject")
        if self.service.quirks("ledger-groups-casefolded"):
            return value.strip().casefold()
        return value

    def _merge(self, rows: list[Row], body: str) -> None:
        """LED-VOCAB.2."""
        kinds = {r.kind for r in rows}
        quirks = self.service.quirks
        new = fresh_row(
            body=body,
            kind=kinds.pop() if len(kinds) == 1 else "fact",
            provenance="model_consolidation",
            status="active",
            at=self.at,
            supersedes=rows[0].id,
            conflict_group=(
                next((r.conflict_group for r in rows if r.conflict_group), None)
                if quirks("ledger-merge-keeps-a-group")
                else None
            ),
            source_session_id=(
                rows[0].source_session_id if quirks("ledger-successor-keeps-session") else None
            ),
        )
        for row in rows:
            self.service._supersede_row(row, new.id, self.at)
        self.store.insert(new)

    def _group(self, rows: list[Row], subject: str) -> None:
        """LED-VOCAB.5: latest update survives (ties: written later), keeps its ``validFrom``,
        and is stamped with the run instant; every other member is superseded by it."""
        members = {r.id: r for r in rows}
        for existing in self.store.active_in_group(SCOPE_KEY, subject):
            members.setdefault(existing.id, existing)
        pick = min if self.service.quirks("led-group-keeps-oldest") else max
        survivor = pick(members.values(), key=lambda r: (r.updated_at, r.seq))
        for loser in members.values():
            if loser.id != survivor.id:
                self.store.update(
                    loser.id,
                    {
                        "status": "superseded",
                        "valid_to": self.at,
                        "updated_at": self.at,
                        "superseded_by": survivor.id,
                        "conflict_group": subject,
                    },
                )
        self.store.update(survivor.id, {"conflict_group": subject, "updated_at": self.at})


# ---- packet --------------------------------------------------------------------------------

PACKET_MAX_CHARS = 4000
_LINE_BREAKS = re.compile(r"[\r\n]+")


def packet_line(row: Row) -> str:
    """``[<first 8 of id>] <kind> (<provenance>): <body>``, line breaks collapsed
    (LED-PACKET.5)."""
    return f"[{row.id[:8]}] {row.kind} ({row.provenance}): {_LINE_BREAKS.sub(' ', row.body)}"


def build_packet(active: list[Row], quirks: Quirks = NO_QUIRKS) -> list[str]:
    """The packet lines (LED-PACKET.1-.5): active records only; explicit pins first, then
    higher confidence (none last), then newest update, then written later; one member per
    conflict group; a line that would push the text past 4000 characters is dropped whole."""

    def order(row: Row) -> tuple[int, int, int, int]:
        explicit = 0 if row.provenance == "user_explicit" else 1
        confidence = row.confidence_bps if row.confidence_bps is not None else -1
        if quirks("led-packet-oldest-first"):  # mutant: oldest update first
            return (explicit, -confidence, row.updated_at, row.seq)
        if quirks("led-packet-unscored-first") and row.confidence_bps is None:
            confidence = 10_001  # mutant: no confidence sorts before every confidence
        return (explicit, -confidence, -row.updated_at, -row.seq)

    lines: list[str] = []
    length = 0
    groups: set[str] = set()
    for row in sorted(active, key=order):
        if row.status != "active":
            continue
        if row.conflict_group is not None and row.conflict_group in groups:
            continue
        line = packet_line(row)
        if quirks("led-packet-keeps-carriage-returns"):  # mutant: only \n is collapsed
            line = f"[{row.id[:8]}] {row.kind} ({row.provenance}): " + re.sub(r"\n+", " ", row.body)
        added = len(line) + (1 if lines and not quirks("led-packet-uncounted-newlines") else 0)
        if length + added > PACKET_MAX_CHARS and quirks("led-packet-cuts-entry"):
            line = line[: PACKET_MAX_CHARS - length - (1 if lines else 0)]  # mutant: cut, not drop
            added = len(line) + (1 if lines else 0)
        if length + added > PACKET_MAX_CHARS or not line:
            continue
        length += added
        lines.append(line)
        if row.conflict_group is not None:
            groups.add(row.conflict_group)
    return lines
