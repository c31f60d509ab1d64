"""The account memory ledger binding of the bundled store (``POST /ledger/...``).

``LedgerService`` is the whole ledger behind the HTTP shell (``server.py``,
``http_handler.py``): it parses and validates the params of each method, applies the lifecycle
(save, supersede, delete, propose, approve, reject, expire, conflict groups, budget, the
consolidation gate) in SQLite through :mod:`.store`, and serialises records for the wire.
Its parts, one concern each:

* ``service``       -- the entry points (``handle``/``handle_test``) and the methods;
* ``core``          -- the state and the lifecycle steps the methods share;
* ``controls``      -- the ``_test/*`` controls (LED-WIRE.7);
* ``consolidation`` -- one consolidation batch through the gate;
* ``params``        -- limits, error answers, parsing params;
* ``time``          -- RFC 3339 instants and the clock;
* ``records``       -- a record's and the settings' wire shapes, new rows, the packet.

It is an independent second implementation of ``specs/ledger.md``: apart from the pure
credential detector (``reference.ledger.credentials.detect_credential``, the spec's exact
detector list) it does not call the reference model, so the model and this store keep each
other honest.  Where the spec leaves a choice open this store answers every bad value with
``-32602`` (an unknown record id with ``1000``) and leaves tombstones out of history reads.

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
import re
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.embedded.catalogue import NONE as NO_QUIRKS
from conformance.embedded.catalogue import Quirks
from conformance.embedded.ledger.controls import LedgerControls
from conformance.embedded.ledger.params import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LIST_LIMIT,
    MAX_BODY_CHARS,
    MAX_HARNESS_CHARS,
    MAX_SESSION_CHARS,
    METHOD_NOT_FOUND,
    MODES,
    REFUSED,
    SCOPE_KEY,
    LedgerError,
    check_names,
    get_body,
    get_bool,
    get_int,
    get_kind,
    get_record_id,
    get_scope,
    get_text,
    invalid,
    parse_params,
    refused,
)
from conformance.embedded.ledger.records import fresh_row, record_to_wire
from conformance.embedded.ledger.store import Settings
from conformance.embedded.ledger.time import (
    iso_style,
    offset_style,
    parse_time,
    restyle_times,
    seconds_style,
    surrogate_param,
)
from conformance.embedded.storage_faults import storage_fault
from reference.ledger.wire.methods import METHODS, TEST_METHODS

__all__ = ["LedgerError", "LedgerService", "record_to_wire"]

#: Messages of structural param errors (LED-WIRE.2): -32602 whatever a store picks for values.
_STRUCTURAL = re.compile(
    r"unknown param|missing required|cannot be null|must be an? (?:string|boolean|array)"
    r"|must be an integer(?! from)"
    r"|params must be a JSON object|cannot be sent on save|lone surrogate|takes no params"
    r"|must be an RFC 3339 date-time string"  # an instant of the wrong JSON type
)

Handler = Callable[[dict[str, Any], int], dict[str, Any]]


def _paramless(method: str) -> bool:
    """Whether ``method`` takes no params (LED-WIRE.12)."""
    spec = METHODS.get(method) or TEST_METHODS.get(method)
    return spec is not None and not spec.params


class LedgerService(LedgerControls):
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
        super().__init__(db, clock, quirks)
        self._test_control = test_control
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

    def handle(self, method: str, raw_body: bytes) -> tuple[int, dict[str, Any]]:
        """Answer one ``POST /ledger/<method>`` (LED-WIRE.1)."""
        handler = self._methods.get(method)
        if handler is None:
            return 404, {
                "error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
            }
        return self._run(handler, self._by_name(method, raw_body), method)

    def handle_test(self, name: str, raw_body: bytes) -> tuple[int, dict[str, Any]]:
        """Answer one ``POST /ledger/_test/<name>`` (404 unless built with ``test_control``)."""
        handler = self._controls.get(name) if self._test_control else None
        if handler is None:
            return 404, {
                "error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: _test/{name}"}
            }
        return self._run(handler, self._by_name(f"_test/{name}", raw_body), f"_test/{name}")

    def _by_name(self, method: str, raw_body: bytes) -> bytes:
        """The variant ``ledger-params-by-position`` reads a JSON array of params by position,
        in the order the method lists them (LED-WIRE.11), as the real ledger does."""
        if not self.quirks("ledger-params-by-position") or not raw_body.lstrip().startswith(b"["):
            return raw_body
        try:
            values = json.loads(raw_body)
        except ValueError:
            return raw_body
        spec = METHODS.get(method) or TEST_METHODS.get(method)
        if spec is None or not isinstance(values, list) or len(values) > len(spec.params):
            return raw_body
        names = list(spec.params)[: len(values)]
        return json.dumps(dict(zip(names, values, strict=True))).encode()

    def _run(self, handler: Handler, raw_body: bytes, method: str) -> tuple[int, dict[str, Any]]:
        try:
            if self.quirks("ledger-paramless-refuses-empty-object") and _paramless(method):
                # variant: as the real ledger, a method without params takes absent or null
                # params and refuses any object, {} included (LED-WIRE.12)
                if raw_body.lstrip().startswith(b"{"):
                    raise invalid(f"{method} takes no params: send none, not an object")
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
                result = restyle_times(result, offset_style)
            if self.quirks("ledger-times-isoformat"):
                result = restyle_times(result, iso_style)
            if self.quirks("ledger-times-seconds"):
                result = restyle_times(result, seconds_style)
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
        if session is not None and self.quirks("ledger-known-sessions-only"):
            # variant: as the real ledger, a session the app does not know is refused
            raise refused(f"Session '{session}' does not exist.")
        self.check_credential(body)
        row = fresh_row(
            body=body,
            kind=kind,
            provenance="user_explicit",
            status="active",
            at=now,
            source_session_id=session,
        )
        return self.insert_within_budget(row)

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
            row = self.existing(record_id)
            self.require_status(row, "active", "forgotten")
            self.tombstone(row, now)
            answer = self.fetch(record_id)
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
            old = self.existing(record_id)
            self.require_status(old, "active", "edited")
            if not self.quirks("led-credential-on-edit"):  # mutant: the edit path forgets it
                self.check_credential(body)
            if self.quirks("led-replacement-refused-at-budget"):  # mutant: an edit is growth
                self.check_budget()
            new = self.replace_record(
                old,
                now,
                body=body,
                kind=kind or old.kind,
                provenance=old.provenance
                if self.quirks("led-edit-keeps-provenance")
                else "user_explicit",
            )
            return self.fetch(new.id)

    def _approve(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-REVIEW.2, LED-GROUP.2, LED-BUDGET.3."""
        check_names(p, ("recordId",))
        record_id = get_record_id(p)
        with self._store.write():
            row = self.existing(record_id)
            self.require_status(row, "proposed", "approved")
            if self.quirks("led-approve-refused-at-budget"):  # mutant: approval counted as growth
                self.check_budget()
            if row.conflict_group is not None:
                for loser in self._store.active_in_group(SCOPE_KEY, row.conflict_group):
                    self.supersede_row(loser, row.id, now)
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
            return self.fetch(record_id)

    def _reject(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-REVIEW.3, LED-INT.2."""
        check_names(p, ("recordId",))
        record_id = get_record_id(p)
        with self._store.write():
            row = self.existing(record_id)
            self.require_status(row, "proposed", "rejected")
            self._store.update(row.id, {"status": "rejected", "updated_at": now})
            if self.quirks(
                "led-reject-closes-at-now"
            ):  # mutant: the interval runs to the rejection
                self._store.update(row.id, {"valid_to": now})
            return self.fetch(record_id)

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
        return self.settings_answer()

    def _update_settings(self, p: dict[str, Any], now: int) -> dict[str, Any]:
        """LED-CONS.1, LED-CONS.2, LED-BUDGET.4 (absent fields keep their value)."""
        check_names(
            p, ("mode",), ("harness", "model", "maxRecords", "allowRemoval", "debounceSeconds")
        )
        if self.quirks("led-settings-model-untyped") and "model" in p:
            p["model"].strip()  # mutant: assumes a string; any other type raises (a 500)
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
        if harness not in (None, "claude") and self.quirks("ledger-one-harness"):
            # variant: as the real ledger, only its one consolidation adapter is offered
            raise refused(f"Harness '{harness}' cannot run consolidation.")
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
            return self.settings_answer()
