"""The ledger oracle: is this answer one the model allows?

The oracle has no rules of its own.  ``reference.ledger.wire.allowed`` lists every answer a
store may give to a call (the model's own first, each with the ledger it leaves), and every
open point of ``specs/ledger.md`` is one of those alternatives or one of the value-level choices
an answer declares: ``Refused.allowed_codes`` / ``allowed_messages`` (LED-WIRE.3),
``Ok.may_omit`` (tombstones a history read may leave out, LED-ASOF.2), ``Ok.one_of`` (a batch's
open counts, LED-GATE.1/.6), ``Ok.extra_fields`` (``heldRecords``, LED-CONS.2).  This module
compares a target's answer with one allowed answer, field by field (:func:`judge`; the driver
asks it for each alternative, :func:`judge_any` reports the closest when none passes), under
four correspondences built as the run goes:

**Ids** are the target's own (LED-REC.3).  A bijection model id ↔ target id is fixed the first
time a record appears in an answer: a single-record answer pairs its ``id`` (and its
``supersedes``) directly; a listing pairs the records whose ids are already known by id and the
rest by content (every field but ``id``, under the time correspondence).  A target id that shows
up for a second model record, or a model record under a second target id, is a divergence.

**Group labels** are paired the same way (LED-GROUP.5): a store may show the subject as given,
a derived label (trimmed, case-folded) or an opaque key.

**Times.**  Any RFC 3339 UTC form is accepted (``Z`` or a zero offset, no fraction or up to 9
digits) and compared as an instant, to the precision the answer keeps
(``reference.ledger.wire.answer_instant`` / ``same_instant``; LED-WIRE.5).  With the
``ledger.clock`` capability the driver pins the target's clock to the model's ``now`` before
every mutating step, so every time must denote the model's instant (``exact`` mode).  Without it
the target stamps with its own clock; a monotone correspondence model instant ↔ target instant
is kept instead: one model instant always shows as one target instant (a batch's one run
instant, a supersession's shared boundary — LED-INT.3, LED-GATE.8), and distinct model instants
keep their order (strictly when both sides keep milliseconds).

**Unnamed fields** a store adds to a result are allowed and not judged (LED-WIRE.4, .6); a
field the spec names is never ``null``.

**Order.**  Where the spec fixes an order it is checked; where it leaves one open the answer is
compared as a set: a listing is newest ``updatedAt`` first with equal-``updatedAt`` runs
unordered (and, at the 50 cut, any members of the tie that straddles the cut may survive); a
history read, a sweep's ``expired`` and a packet's equal-rank runs are unordered.

Every judgement names the clause ids the difference touches, what the model allowed and what
the target said; a target answering garbage is judged, never a crash.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.drivers.base import JudgementVerdict
from conformance.jsonutil import short_json
from reference.jsonvalue import json_equal
from reference.ledger.outcome import INVALID_PARAMS, METHOD_NOT_FOUND, REFUSED, Ok, Outcome, Refused
from reference.ledger.timefmt import format_rfc3339, parse_rfc3339
from reference.ledger.wire import (
    RECORD_FIELDS,
    RECORD_FIELDS_WHEN_SET,
    TIME_FIELDS,
    answer_instant,
    same_instant,
)

# --------------------------------------------------------------------------- wire vocabulary

REQUIRED_FIELDS = RECORD_FIELDS
OPTIONAL_FIELDS = RECORD_FIELDS_WHEN_SET
LIST_LIMIT = 50

#: HTTP status of each error code (CONTRACTS: "The ledger binding over HTTP").
CODE_STATUS: dict[int, int] = {INVALID_PARAMS: 400, REFUSED: 409, METHOD_NOT_FOUND: 404}

#: The clauses a method's answer as a whole speaks for (the "what was checked" of a step).
METHOD_CLAUSES: dict[str, tuple[str, ...]] = {
    "memory/save_memory_record": ("LED-SAVE.1", "LED-WIRE.6"),
    "memory/list_memory_records": ("LED-LIST.1", "LED-LIST.2", "LED-STATUS.4"),
    "memory/delete_memory_record": ("LED-FORGET.1", "LED-INT.4"),
    "memory/supersede_memory_record": ("LED-EDIT.1", "LED-INT.3"),
    "memory/approve_memory_record": ("LED-REVIEW.2",),
    "memory/reject_memory_record": ("LED-REVIEW.3",),
    "memory/list_memory_records_as_of": ("LED-ASOF.1",),
    "memory/get_consolidation_settings": ("LED-CONS.1", "LED-CONS.2"),
    "memory/update_consolidation_settings": ("LED-CONS.2",),
    "_test/reset": ("LED-WIRE.7",),
    "_test/set_clock": ("LED-WIRE.7",),
    "_test/sweep": ("LED-EXP.2",),
    "_test/propose": ("LED-REVIEW.1",),
    "_test/set_expiry": ("LED-EXP.5",),
    "_test/consolidate": ("LED-GATE.9", "LED-GATE.1"),
    "_test/packet": ("LED-PACKET.1", "LED-PACKET.5"),
}


def method_clauses(method: str) -> tuple[str, ...]:
    """The clauses a method's answer speaks for (unknown method: LED-WIRE.1)."""
    return METHOD_CLAUSES.get(method, ("LED-WIRE.1",))


_BAD_VALUE_CLAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory body", ("LED-SAVE.3", "LED-REC.6")),
    ("kind", ("LED-REC.2",)),
    ("No memory record", ("LED-FORGET.2", "LED-EDIT.2")),
    ("expiresAt", ("LED-EXP.5",)),
    ("maxRecords", ("LED-BUDGET.1", "LED-CONS.1")),
    ("debounceSeconds", ("LED-CONS.1",)),
    ("mode must", ("LED-CONS.1",)),
    ("harness", ("LED-CONS.1",)),
    ("model must", ("LED-CONS.1",)),
    ("status must", ("LED-LIST.1",)),
    ("scopeKey must", ("LED-LIST.3",)),
    ("RFC 3339", ("LED-WIRE.5", "LED-ASOF.3")),
    ("conflictGroup", ("LED-GROUP.5",)),
    ("confidenceBps", ("LED-REVIEW.1",)),
    ("rationale", ("LED-REVIEW.1",)),
    ("sessionId", ("LED-SAVE.1",)),
)


def refusal_clauses(method: str, refused: Refused) -> tuple[str, ...]:
    """Which clauses a refusal the model made is about (from its codes and its message)."""
    msg = refused.message
    if refused.code == METHOD_NOT_FOUND:
        return ("LED-WIRE.1",)
    if REFUSED not in refused.allowed_codes:
        if "scopeKey cannot be passed" in msg:
            return ("LED-SAVE.2", "LED-WIRE.2")
        return ("LED-WIRE.2",)
    if msg.startswith("Memory pins cannot store credentials"):
        return ("LED-CRED.2", "LED-CRED.1", "LED-WIRE.3")
    if msg.startswith("Memory scope '"):
        return ("LED-BUDGET.2", "LED-BUDGET.5", "LED-WIRE.3")
    if msg.startswith("Memory record '"):
        return ("LED-STATUS.3", "LED-WIRE.3")
    out: list[str] = []
    for needle, clauses in _BAD_VALUE_CLAUSES:
        if needle in msg:
            out.extend(clauses)
    return _uniq(out + ["LED-WIRE.3"])


def _field_clauses(name: str, model_rec: dict[str, Any]) -> tuple[str, ...]:
    """The clauses a difference in one record field touches, given the model's record."""
    status = model_rec.get("status")
    prov = model_rec.get("provenance")
    if name == "id":
        return ("LED-REC.3",)
    if name == "scopeKey":
        return ("LED-REC.5",)
    if name == "kind":
        return ("LED-REC.2",)
    if name == "body":
        return ("LED-FORGET.3",) if status == "deleted" else ("LED-REC.6",)
    if name == "provenance":
        return {
            "user_explicit": ("LED-PROV.1",),
            "model_proposal": ("LED-PROV.2",),
            "model_consolidation": ("LED-PROV.3",),
        }.get(str(prov), ("LED-PROV.1",))
    if name == "status":
        return ("LED-STATUS.2", "LED-STATUS.1")
    if name == "validTo":
        return {
            "superseded": ("LED-INT.3",),
            "deleted": ("LED-INT.4",),
            "expired": ("LED-EXP.2",),
            "proposed": ("LED-INT.2",),
            "rejected": ("LED-INT.2",),
        }.get(str(status), ("LED-INT.1",))
    if name == "validFrom":
        return ("LED-INT.3", "LED-INT.1") if model_rec.get("supersedes") else ("LED-INT.1",)
    if name == "expiresAt":
        return ("LED-EXP.5", "LED-VOCAB.4", "LED-EXP.1")
    if name == "conflictGroup":
        return ("LED-GROUP.4", "LED-VOCAB.5")
    if name == "supersedes":
        return ("LED-VOCAB.2", "LED-VOCAB.3") if prov == "model_consolidation" else ("LED-EDIT.1",)
    if name in ("confidenceBps", "rationale"):
        return ("LED-REVIEW.1",)
    if name == "sourceSessionId":
        return ("LED-SAVE.1", "LED-REVIEW.1")
    if name in ("createdAt", "updatedAt"):
        return ()
    return ("LED-WIRE.4",)


# --------------------------------------------------------------------------- correspondences


@dataclass
class Ids:
    """The bijection model id ↔ target id (LED-REC.3)."""

    m2t: dict[str, str] = field(default_factory=dict)
    t2m: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Ids:
        return Ids(dict(self.m2t), dict(self.t2m))

    def link(self, model_id: str, target_id: Any) -> str | None:
        """Pair two ids; a message when that contradicts an earlier pairing."""
        if not isinstance(target_id, str) or not target_id:
            return f"id {target_id!r} is not a non-empty string"
        known_t = self.m2t.get(model_id)
        known_m = self.t2m.get(target_id)
        if known_t is not None and known_t != target_id:
            return f"this record was shown earlier with id {known_t!r}, now {target_id!r}"
        if known_m is not None and known_m != model_id:
            return f"id {target_id!r} was already given to a different record"
        self.m2t[model_id] = target_id
        self.t2m[target_id] = model_id
        return None


@dataclass
class Times:
    """Model instant ↔ target instant: identity (``exact``) or a monotone map.

    A target time is kept with the precision its text has (LED-WIRE.5): ``(ms, p)`` stands for
    any instant less than ``p`` ms away.  Distinct model instants must keep their order
    strictly when both sides keep milliseconds, and may not be seen out of order otherwise.
    """

    exact: bool
    m2t: dict[int, tuple[int, int]] = field(default_factory=dict)
    keys: list[int] = field(default_factory=list)  # sorted model instants
    anchor: int | None = None  # target instant that reads like "before everything"

    def copy(self) -> Times:
        return Times(self.exact, dict(self.m2t), list(self.keys), self.anchor)

    def link(self, model_ms: int, target_ms: int, precision: int = 1) -> str | None:
        """Record that ``model_ms`` shows as ``target_ms`` (kept to ``precision`` ms); a message
        when that is inconsistent."""
        seen = (target_ms, precision)
        if self.exact:
            if not same_instant(model_ms, seen):
                return f"expected {_fmt(model_ms)}" + (
                    "" if precision == 1 else f" (to the {precision} ms the answer keeps)"
                )
            return None
        known = self.m2t.get(model_ms)
        if known is not None:
            if abs(known[0] - target_ms) >= max(known[1], precision):
                return (
                    f"the same instant was shown earlier as {_fmt(known[0])} (one event, one"
                    " instant)"
                )
            if precision < known[1]:
                self.m2t[model_ms] = seen
            return None
        i = bisect.bisect_left(self.keys, model_ms)
        if i > 0:
            lo, lo_p = self.m2t[self.keys[i - 1]]
            if not lo - lo_p // 2 < target_ms + precision - 1:
                return f"must be later than {_fmt(lo)} (it stamps a later event)"
        if i < len(self.keys):
            hi, hi_p = self.m2t[self.keys[i]]
            if not target_ms - precision // 2 < hi + hi_p - 1:
                return f"must be earlier than {_fmt(hi)} (it stamps an earlier event)"
        self.keys.insert(i, model_ms)
        self.m2t[model_ms] = seen
        return None

    def to_target(self, model_ms: int) -> int:
        """The target instant that reads like ``model_ms`` (for a query's ``at``).

        Every interval boundary is a mapped instant, so any instant in ``[a, b)`` between two
        mapped instants reads like ``a``; before every mapped instant, like one ms before the
        first.
        """
        if self.exact:
            return model_ms
        if model_ms in self.m2t:
            return self.m2t[model_ms][0]
        i = bisect.bisect_right(self.keys, model_ms)
        if i == 0:
            if self.keys:
                return self.m2t[self.keys[0]][0] - 1
            return self.anchor if self.anchor is not None else model_ms
        return self.m2t[self.keys[i - 1]][0]


def _fmt(ms: int) -> str:
    try:
        return format_rfc3339(ms)
    except ValueError:
        return str(ms)


@dataclass
class Context:
    """The correspondences one judgement may extend (copied per trial, committed on pass)."""

    ids: Ids
    times: Times
    foreign: frozenset[str] = frozenset()  # target ids that existed before the run (dirty)
    groups: Ids = field(default_factory=Ids)  # model group label ↔ target label (LED-GROUP.5)

    def copy(self) -> Context:
        return Context(self.ids.copy(), self.times.copy(), self.foreign, self.groups.copy())


# --------------------------------------------------------------------------- judgement


@dataclass(frozen=True)
class Diff:
    """One difference between the model's answer and the target's."""

    where: str
    want: Any
    got: Any
    clauses: tuple[str, ...]
    note: str = ""

    def text(self) -> str:
        note = f" — {self.note}" if self.note else ""
        return f"{self.where}: model {_short(self.want)}, target {_short(self.got)}{note}"


@dataclass
class Judgement:
    verdict: JudgementVerdict
    clauses: tuple[str, ...]
    expected: str
    reason: str = ""
    diffs: list[Diff] = field(default_factory=list)
    context: Context | None = None  # the extended correspondences (commit on pass)


_ABSENT = "<absent>"


def _short(v: Any, n: int = 160) -> str:
    if v is _ABSENT or v == _ABSENT:
        return "absent"
    return short_json(v, n, sort_keys=True)


def _uniq(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def describe_outcome(outcome: Outcome) -> str:
    """What the model allows, for a report."""
    if isinstance(outcome, Refused):
        codes = sorted(outcome.allowed_codes)
        statuses = sorted({CODE_STATUS.get(c, 400) for c in codes})
        msg = (
            f" with message {sorted(outcome.allowed_messages)[0]!r}"
            if outcome.allowed_messages and len(outcome.allowed_messages) == 1
            else ""
        )
        return (
            f"HTTP {'/'.join(map(str, statuses))} error code in {codes}{msg}"
            f" (the model refuses: {outcome.message})"
        )
    text = f"HTTP 200 {_short(outcome.result, 400)}"
    if outcome.may_omit:
        text += f" (tombstones {sorted(outcome.may_omit)} may be left out)"
    return text


# ---- records ----------------------------------------------------------------------------


def compare_record(
    model: dict[str, Any], got: Any, ctx: Context, where: str, *, link_id: bool = True
) -> list[Diff]:
    """Differences between a model record and a target record; extends ``ctx`` as it goes."""
    if not isinstance(got, dict):
        return [Diff(where, model, got, ("LED-WIRE.4", "LED-WIRE.6"), "a record is an object")]
    diffs: list[Diff] = []
    for name in model.keys() | got.keys():
        label = f"{where}.{name}"
        if name not in got:
            diffs.append(
                Diff(label, model[name], _ABSENT, _field_clauses(name, model) + ("LED-WIRE.4",))
            )
            continue
        if name not in model:
            if name not in REQUIRED_FIELDS and name not in OPTIONAL_FIELDS:
                continue  # a field the spec does not name: allowed, not judged (LED-WIRE.4)
            clauses: tuple[str, ...] = _field_clauses(name, model) + ("LED-WIRE.4",)
            note = "null is never sent; an unset field is absent" if got[name] is None else ""
            diffs.append(Diff(label, _ABSENT, got[name], clauses, note))
            continue
        want, value = model[name], got[name]
        if name == "id":
            if link_id:
                problem = ctx.ids.link(str(want), value)
                if problem:
                    diffs.append(Diff(label, "(paired)", value, ("LED-REC.3",), problem))
        elif name == "supersedes":
            problem = ctx.ids.link(str(want), value)
            if problem:
                diffs.append(Diff(label, want, value, _field_clauses(name, model), problem))
        elif name in TIME_FIELDS:
            diffs.extend(_compare_time(label, name, model, want, value, ctx))
        elif name == "conflictGroup":
            problem = ctx.groups.link(str(want), value)
            if problem:
                problem = problem.replace("id ", "group label ").replace("record", "group")
                diffs.append(Diff(label, want, value, _field_clauses(name, model), problem))
        elif type(want) is not type(value) or want != value:
            diffs.append(Diff(label, want, value, _field_clauses(name, model)))
    return diffs


def _compare_time(
    label: str, name: str, model: dict[str, Any], want: Any, value: Any, ctx: Context
) -> list[Diff]:
    seen = answer_instant(value)
    if seen is None:
        return [Diff(label, want, value, ("LED-WIRE.5",), "times are RFC 3339 date-times in UTC")]
    m = parse_rfc3339(str(want))
    if m is None:
        return [Diff(label, want, value, ("LED-WIRE.5",), "not a valid instant")]
    problem = ctx.times.link(m, seen[0], seen[1])
    if problem:
        return [Diff(label, want, value, _field_clauses(name, model), problem)]
    return []


def _content_matches(model: dict[str, Any], got: Any, ctx: Context) -> Context | None:
    """``ctx`` extended by pairing ``model`` with ``got``, or None when they differ."""
    trial = ctx.copy()
    if compare_record(model, got, trial, "?", link_id=True):
        return None
    return trial


def pair_records(
    model_recs: Sequence[dict[str, Any]],
    got_recs: Sequence[Any],
    ctx: Context,
    where: str,
    may_omit: frozenset[str] = frozenset(),
) -> tuple[list[Diff], list[tuple[int, int]]]:
    """Match a target's records with the model's as a set.

    Returns the differences and the pairs (model index, target index).  Known ids pair by id;
    the rest by content.  Model records listed in ``may_omit`` may be missing.
    """
    diffs: list[Diff] = []
    pairs: list[tuple[int, int]] = []
    by_model_id = {str(r["id"]): i for i, r in enumerate(model_recs)}
    used_m: set[int] = set()
    unknown_t: list[int] = []
    for j, rec in enumerate(got_recs):
        if not isinstance(rec, dict):
            diffs.append(Diff(f"{where}[{j}]", "a record", rec, ("LED-WIRE.4", "LED-WIRE.6")))
            continue
        tid = rec.get("id")
        mid = ctx.ids.t2m.get(tid) if isinstance(tid, str) else None
        if mid is None:
            unknown_t.append(j)
            continue
        i = by_model_id.get(mid)
        if i is None or i in used_m:
            diffs.append(
                Diff(
                    f"{where}[{j}]",
                    _ABSENT,
                    rec,
                    _presence_clauses(where),
                    "the model does not list this record here",
                )
            )
            continue
        used_m.add(i)
        pairs.append((i, j))
        diffs.extend(compare_record(model_recs[i], rec, ctx, f"{where}[{j}]"))
    # Content pairing for the records the run has not seen yet.
    open_m = [
        i
        for i in range(len(model_recs))
        if i not in used_m and str(model_recs[i]["id"]) not in ctx.ids.m2t
    ]
    still_t: list[int] = []
    for j in unknown_t:
        hit = None
        for i in open_m:
            trial = _content_matches(model_recs[i], got_recs[j], ctx)
            if trial is not None:
                hit = (i, trial)
                break
        if hit is None:
            still_t.append(j)
            continue
        i, trial = hit
        ctx.ids, ctx.times = trial.ids, trial.times
        open_m.remove(i)
        used_m.add(i)
        pairs.append((i, j))
    # What is left: pair one-to-one for a readable diff, else report presence.
    missing = [i for i in range(len(model_recs)) if i not in used_m]
    if len(still_t) == 1 and len(missing) == 1:
        i, j = missing[0], still_t[0]
        pairs.append((i, j))
        diffs.extend(compare_record(model_recs[i], got_recs[j], ctx, f"{where}[{j}]"))
        return diffs, pairs
    for j in still_t:
        diffs.append(
            Diff(
                f"{where}[{j}]",
                _ABSENT,
                got_recs[j],
                _presence_clauses(where),
                "matches no record the model has here",
            )
        )
    for i in missing:
        if str(model_recs[i]["id"]) in may_omit:
            continue
        diffs.append(
            Diff(
                f"{where}",
                model_recs[i],
                _ABSENT,
                _presence_clauses(where) + _missing_clauses(model_recs[i]),
                "a record the model has here is missing",
            )
        )
    return diffs, pairs


def _presence_clauses(where: str) -> tuple[str, ...]:
    if where.startswith("as_of"):
        return ("LED-ASOF.1",)
    return ("LED-LIST.1", "LED-STATUS.4")


def _missing_clauses(model_rec: dict[str, Any]) -> tuple[str, ...]:
    return ("LED-BUDGET.5", "LED-REC.4") if model_rec.get("status") == "active" else ("LED-REC.4",)


# ---- whole answers ----------------------------------------------------------------------


def judge(
    method: str,
    outcome: Outcome,
    status: int | None,
    body: Any,
    ctx: Context,
    *,
    transport_error: str | None = None,
    body_error: str | None = None,
    full_listing: Sequence[dict[str, Any]] | None = None,
    packet: Sequence[tuple[str, tuple[Any, ...]]] | None = None,
) -> Judgement:
    """Judge one answer against the model's outcome.

    ``full_listing`` (for ``list_memory_records``): every record of the listed status in the
    model, newest update first, so the 50 cut can be judged with ties.  ``packet`` (for
    ``_test/packet``): each model line's record id and rank key, so short ids go through the
    bijection and equal ranks are unordered.
    """
    expected = describe_outcome(outcome)
    base = method_clauses(method)
    trial = ctx.copy()
    if status is None:
        return Judgement(
            "indeterminate", base, expected, f"no answer from the target: {transport_error}"
        )
    if isinstance(outcome, Refused):
        return _judge_refusal(method, outcome, status, body, body_error, expected, trial)
    if status != 200:
        code = _error_code(body)
        return Judgement(
            "diverge",
            _uniq(_refusal_reason_clauses(body) + base + _unexpected_error_clauses(status, code)),
            expected,
            f"the model accepts this call; the target answered HTTP {status}"
            f" {_short(body if body is not None else body_error)}",
        )
    if body_error or body is None:
        return Judgement(
            "diverge",
            _uniq(base + ("LED-WIRE.6",)),
            expected,
            f"HTTP 200 without a JSON body ({body_error or 'empty'})",
        )
    diffs = _compare_result(method, outcome, body, trial, full_listing, packet)
    if diffs:
        clauses = _uniq([c for d in diffs for c in d.clauses] + list(base))
        reason = "; ".join(d.text() for d in diffs[:6])
        if len(diffs) > 6:
            reason += f"; … {len(diffs) - 6} more"
        return Judgement("diverge", clauses, expected, reason, diffs)
    return Judgement("pass", base, expected, context=trial)


def _error_code(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("code")
    return None


def _refusal_reason_clauses(body: Any) -> tuple[str, ...]:
    """What a refusal the model does not make is about, judged by the store's own words."""
    err = body.get("error") if isinstance(body, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    if not isinstance(message, str):
        return ()
    if message.startswith("Memory scope '"):
        return ("LED-BUDGET.1", "LED-BUDGET.3")
    if message.startswith("Memory pins cannot store credentials"):
        return ("LED-CRED.3", "LED-CRED.4")
    return ()


def _unexpected_error_clauses(status: int, code: Any) -> tuple[str, ...]:
    if code == REFUSED:
        return ("LED-WIRE.3",)
    if code == INVALID_PARAMS or status == 400:
        return ("LED-WIRE.2",)
    if status == 404:
        return ("LED-WIRE.1",)
    return ("LED-WIRE.6",)


def _judge_refusal(
    method: str,
    outcome: Refused,
    status: int,
    body: Any,
    body_error: str | None,
    expected: str,
    ctx: Context,
) -> Judgement:
    clauses = _uniq(refusal_clauses(method, outcome) + method_clauses(method) + ("LED-WIRE.8",))
    if status == 200:
        return Judgement(
            "diverge",
            clauses,
            expected,
            f"the model refuses this call ({outcome.message}); the target accepted it and"
            f" answered {_short(body)}",
        )
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or set(body) != {"error"}:
        return Judgement(
            "diverge",
            _uniq(("LED-WIRE.3",) + clauses),
            expected,
            f'an error answer is {{"error": {{"code", "message"}}}}; got HTTP {status}'
            f" {_short(body if body is not None else body_error)}",
        )
    code, message = err.get("code"), err.get("message")
    if isinstance(code, bool) or not isinstance(code, int) or code not in outcome.allowed_codes:
        return Judgement(
            "diverge",
            clauses,
            expected,
            f"error code {code!r} is not one the model allows {sorted(outcome.allowed_codes)}",
        )
    if status != CODE_STATUS.get(code, 400):
        return Judgement(
            "diverge",
            _uniq(("LED-WIRE.3",) + clauses),
            expected,
            f"code {code} travels as HTTP {CODE_STATUS.get(code, 400)}, not {status}",
        )
    if not isinstance(message, str) or not message.strip():
        return Judgement(
            "diverge", _uniq(("LED-WIRE.3",) + clauses), expected, "a refusal carries a message"
        )
    if outcome.allowed_messages is not None and message not in outcome.allowed_messages:
        return Judgement(
            "diverge",
            clauses,
            expected,
            f"message {message!r} is not the exact text the spec requires"
            f" ({sorted(outcome.allowed_messages)[0]!r})",
        )
    return Judgement("pass", clauses, expected, context=ctx)


def _compare_result(
    method: str,
    outcome: Ok,
    body: Any,
    ctx: Context,
    full_listing: Sequence[dict[str, Any]] | None,
    packet: Sequence[tuple[str, tuple[Any, ...]]] | None,
) -> list[Diff]:
    want = outcome.result
    if method in (
        "memory/save_memory_record",
        "memory/delete_memory_record",
        "memory/supersede_memory_record",
        "memory/approve_memory_record",
        "memory/reject_memory_record",
        "_test/propose",
        "_test/set_expiry",
    ):
        assert isinstance(want, dict)
        return compare_record(want, body, ctx, "record")
    if method == "memory/list_memory_records":
        assert isinstance(want, dict)
        return _compare_listing(want, body, ctx, full_listing)
    if method == "memory/list_memory_records_as_of":
        assert isinstance(want, dict)
        return _compare_as_of(want, body, ctx, outcome.may_omit)
    if method == "_test/sweep":
        assert isinstance(want, dict)
        return _compare_sweep(want, body, ctx)
    if method == "_test/packet":
        assert isinstance(want, dict)
        return _compare_packet(want, body, ctx, packet)
    if method == "_test/consolidate":
        clauses = ("LED-GATE.9", "LED-GATE.1", "LED-GATE.6")
        named = frozenset({"applied", "invalid", "refused", "declined"})
        for option in outcome.one_of:
            if not _compare_exact(option, body, clauses, named):
                return []
        return _compare_exact(want, body, clauses, named)
    if method in ("memory/get_consolidation_settings", "memory/update_consolidation_settings"):
        return _compare_exact(
            want,
            body,
            ("LED-CONS.2", "LED-CONS.1", "LED-BUDGET.4"),
            SETTINGS_FIELDS,
            # heldRecords counts what the run did not write too when the ledger was dirty
            outcome.extra_fields if not ctx.foreign else {},
        )
    if method == "_test/set_clock" and isinstance(want, dict) and isinstance(body, dict):
        seen = answer_instant(body.get("now"))
        m = parse_rfc3339(str(want.get("now")))
        if seen is None or m is None or not same_instant(m, seen):
            return [Diff("result.now", want.get("now"), body.get("now"), ("LED-WIRE.7",))]
        return []
    return _compare_exact(
        want,
        body,
        method_clauses(method),
        frozenset(want) if isinstance(want, dict) else frozenset(),
    )


#: The fields of a settings answer the spec names (LED-CONS.2); any other is not judged, except
#: those the model declares in ``Ok.extra_fields`` (``heldRecords``).
SETTINGS_FIELDS = frozenset(
    {"scopeKey", "mode", "harness", "model", "maxRecords", "allowRemoval", "debounceSeconds"}
)


def _compare_exact(
    want: Any,
    got: Any,
    clauses: tuple[str, ...],
    named: frozenset[str] = frozenset(),
    extra: Any = None,
) -> list[Diff]:
    """Compare the fields the spec names exactly; a field it does not name is allowed (and, if
    the model declares it in ``extra``, must have the declared value) (LED-WIRE.6)."""
    if not isinstance(got, dict) or not isinstance(want, dict):
        return [] if json_equal(want, got) else [Diff("result", want, got, clauses)]
    diffs = []
    extra = extra or {}
    for name in want.keys() | got.keys():
        w = want.get(name, _ABSENT)
        g = got.get(name, _ABSENT)
        if w is _ABSENT and name not in named:
            if name in extra and not json_equal(extra[name], g):
                diffs.append(Diff(f"result.{name}", extra[name], g, clauses, "if present"))
            continue
        if w is _ABSENT or g is _ABSENT or not json_equal(w, g):
            diffs.append(Diff(f"result.{name}", w, g, clauses))
    return diffs


def _envelope(want: dict[str, Any], got: Any, clauses: tuple[str, ...]) -> list[Diff] | list[Any]:
    """Check ``{scopeKey, records}``; returns diffs, or [] and leaves records to the caller."""
    if not isinstance(got, dict) or not {"scopeKey", "records"} <= set(got):
        keys = sorted(got) if isinstance(got, dict) else type(got).__name__
        return [Diff("result", "{scopeKey, records}", keys, ("LED-WIRE.6",) + clauses)]
    if got["scopeKey"] != want["scopeKey"]:
        return [Diff("result.scopeKey", want["scopeKey"], got["scopeKey"], clauses)]
    if not isinstance(got["records"], list):
        return [Diff("result.records", "an array", got["records"], ("LED-WIRE.6",) + clauses)]
    return []


def _compare_listing(
    want: dict[str, Any],
    got: Any,
    ctx: Context,
    full: Sequence[dict[str, Any]] | None,
) -> list[Diff]:
    clauses = ("LED-LIST.1", "LED-LIST.2")
    bad = _envelope(want, got, clauses)
    if bad:
        return bad
    got_recs = [
        r for r in got["records"] if not (isinstance(r, dict) and r.get("id") in ctx.foreign)
    ]
    allowed = list(full) if full is not None else list(want["records"])
    # Which records may appear: every record of the tie classes above the cut, and any members
    # of the class the cut falls into (LED-LIST.2, ties unordered).
    n_expected = min(LIST_LIMIT, len(allowed))
    mandatory: list[dict[str, Any]] = []
    optional: list[dict[str, Any]] = []
    taken = 0
    for cls in _tie_classes(allowed, lambda r: r["updatedAt"]):
        if taken >= n_expected:
            break
        if taken + len(cls) <= n_expected:
            mandatory.extend(cls)
            taken += len(cls)
        else:
            optional.extend(cls)
            taken = n_expected
    diffs: list[Diff] = []
    if len(got_recs) != n_expected:
        diffs.append(
            Diff(
                "result.records.length",
                n_expected,
                len(got_recs),
                ("LED-LIST.2",) if len(got_recs) > LIST_LIMIT else ("LED-LIST.1", "LED-STATUS.4"),
            )
        )
    pool = mandatory + optional
    may_skip = frozenset(str(r["id"]) for r in optional)
    pdiffs, pairs = pair_records(pool, got_recs, ctx, "list", may_omit=may_skip)
    # Every missing optional record is fine only as long as the length matched (checked above).
    diffs.extend(pdiffs)
    if diffs:
        return diffs
    # Order: the target's sequence must be non-increasing in the model's updatedAt.
    model_of_target = {j: pool[i] for i, j in pairs}
    prev: str | None = None
    for j in range(len(got_recs)):
        rec = model_of_target.get(j)
        if rec is None:
            continue
        ts = str(rec["updatedAt"])
        if prev is not None and ts > prev:
            diffs.append(
                Diff(
                    f"list[{j}]",
                    "newest updatedAt first",
                    f"updatedAt {ts} after {prev}",
                    ("LED-LIST.2",),
                )
            )
            break
        prev = ts
    return diffs


def _tie_classes(
    recs: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], Any]
) -> list[list[dict[str, Any]]]:
    classes: list[list[dict[str, Any]]] = []
    for r in recs:
        if classes and key(classes[-1][0]) == key(r):
            classes[-1].append(r)
        else:
            classes.append([r])
    return classes


def _compare_as_of(
    want: dict[str, Any], got: Any, ctx: Context, may_omit: frozenset[str]
) -> list[Diff]:
    clauses = ("LED-ASOF.1",)
    bad = _envelope(want, got, clauses)
    if bad:
        return bad
    got_recs = [
        r for r in got["records"] if not (isinstance(r, dict) and r.get("id") in ctx.foreign)
    ]
    diffs, _pairs = pair_records(want["records"], got_recs, ctx, "as_of", may_omit=may_omit)
    return [
        Diff(d.where, d.want, d.got, _uniq(d.clauses + ("LED-ASOF.2",)), d.note)
        if _about_tombstone(d)
        else d
        for d in diffs
    ]


def _about_tombstone(d: Diff) -> bool:
    return (
        (isinstance(d.want, dict) and d.want.get("status") == "deleted")
        or (isinstance(d.got, dict) and d.got.get("status") == "deleted")
        or d.where.endswith(".body")
    )


def _compare_sweep(want: dict[str, Any], got: Any, ctx: Context) -> list[Diff]:
    clauses = ("LED-EXP.2",)
    if not isinstance(got, dict) or not isinstance(got.get("expired"), list):
        return [Diff("result", want, got, ("LED-WIRE.7",) + clauses, "{expired: [ids]}")]
    got_ids = got["expired"]
    want_ids = [str(x) for x in want["expired"]]
    if len(got_ids) != len(set(map(str, got_ids))) or len(got_ids) != len(want_ids):
        return [Diff("result.expired", want_ids, got_ids, clauses, "as a set")]
    unknown_m = [m for m in want_ids if m not in ctx.ids.m2t]
    expect_known = {ctx.ids.m2t[m] for m in want_ids if m in ctx.ids.m2t}
    extra = [t for t in got_ids if t not in expect_known]
    if len(extra) != len(unknown_m):
        return [Diff("result.expired", want_ids, got_ids, clauses, "as a set")]
    for t in extra:
        if t in ctx.ids.t2m:  # a known record the model did not expire
            return [Diff("result.expired", want_ids, got_ids, clauses, f"{t} should not expire")]
    if len(extra) == 1:
        problem = ctx.ids.link(unknown_m[0], extra[0])
        if problem:
            return [Diff("result.expired", want_ids, got_ids, ("LED-REC.3",), problem)]
    return []


_LINE = re.compile(r"\[([^\]]{8})\] (.*)", re.DOTALL)


def _compare_packet(
    want: dict[str, Any],
    got: Any,
    ctx: Context,
    packet: Sequence[tuple[str, tuple[Any, ...]]] | None,
) -> list[Diff]:
    """Lines as ``[short id] rest``: the rest exactly, the short id through the bijection,
    equal-rank runs unordered (LED-PACKET.3), text = lines joined (LED-PACKET.4/.5)."""
    clauses = ("LED-PACKET.5", "LED-PACKET.3", "LED-PACKET.1", "LED-PACKET.2")
    if not isinstance(got, dict) or not {"lines", "text"} <= set(got):
        return [Diff("result", "{lines, text}", got, ("LED-WIRE.7",) + clauses)]
    lines, text = got["lines"], got["text"]
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        return [Diff("result.lines", "an array of strings", lines, clauses)]
    if not isinstance(text, str) or text != "\n".join(lines):
        return [Diff("result.text", "the lines joined by \\n", text, ("LED-PACKET.4",))]
    if len(text) > 4000:
        return [Diff("result.text", "at most 4000 characters", len(text), ("LED-PACKET.4",))]
    want_lines: list[str] = list(want["lines"])
    ids = [mid for mid, _key in packet] if packet is not None else []
    if len(lines) != len(want_lines):
        return [Diff("result.lines", want_lines, lines, clauses, "a different number of lines")]
    ranks: list[tuple[Any, ...]] = (
        [key for _mid, key in packet]
        if packet is not None
        else [(i,) for i in range(len(want_lines))]
    )
    i = 0
    diffs: list[Diff] = []
    while i < len(want_lines):
        k = i
        while k < len(want_lines) and ranks[k] == ranks[i]:
            k += 1
        group = list(range(i, k))
        for j in range(i, k):
            m = _LINE.fullmatch(lines[j])
            if m is None:
                diffs.append(Diff(f"lines[{j}]", want_lines[j], lines[j], ("LED-PACKET.5",)))
                continue
            short, rest = m.group(1), m.group(2)
            hit = None
            for gi in group:
                wm = _LINE.fullmatch(want_lines[gi])
                assert wm is not None
                if wm.group(2) != rest:
                    continue
                target_id = ctx.ids.m2t.get(ids[gi]) if gi < len(ids) else None
                if target_id is not None and target_id[:8] != short:
                    continue
                hit = gi
                break
            if hit is None:
                diffs.append(
                    Diff(
                        f"lines[{j}]",
                        [want_lines[g] for g in group],
                        lines[j],
                        clauses,
                        "no line of the model's rank at this position matches",
                    )
                )
            else:
                group.remove(hit)
        i = k
    return diffs


# ---- several allowed answers ------------------------------------------------------------


def judge_any(
    method: str,
    outcomes: Sequence[Outcome],
    status: int | None,
    body: Any,
    ctx: Context,
    *,
    transport_error: str | None = None,
    body_error: str | None = None,
    full_listing: Sequence[dict[str, Any]] | None = None,
    packet: Sequence[tuple[str, tuple[Any, ...]]] | None = None,
) -> tuple[Judgement, int]:
    """Judge an answer against every answer the model allows (``reference.ledger.wire.allowed``,
    the model's own first).  Returns the first passing judgement and its index; when none
    passes, the judgement against the closest allowed answer (one of the same kind — a result
    for HTTP 200, a refusal otherwise — the model's own when it is) and that index."""
    judgements: list[Judgement] = []
    for i, outcome in enumerate(outcomes):
        j = judge(
            method,
            outcome,
            status,
            body,
            ctx,
            transport_error=transport_error,
            body_error=body_error,
            full_listing=full_listing,
            packet=packet,
        )
        if j.verdict != "diverge":
            return j, i
        judgements.append(j)
    accepted = status == 200
    best = next((i for i, o in enumerate(outcomes) if isinstance(o, Ok) == accepted), 0)
    j = judgements[best]
    if len(outcomes) > 1:
        others = "; ".join(describe_outcome(o) for k, o in enumerate(outcomes) if k != best)
        j = Judgement(
            j.verdict,
            j.clauses,
            f"{j.expected} — or any of {len(outcomes) - 1} other allowed answer(s): "
            + (others if len(others) <= 300 else others[:299] + "…"),
            j.reason,
            j.diffs,
            j.context,
        )
    return j, best
