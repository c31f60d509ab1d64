"""One ledger record against the model's, and a set of records paired by id then by content.

Every named field is compared exactly, except ``id``/``supersedes`` (through the id bijection),
``conflictGroup`` (through the group-label bijection) and the times (through the instant
correspondence); a field the spec does not name is allowed and not judged (LED-WIRE.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.jsonutil import short_json
from conformance.oracle.ledger.clauses import (
    OPTIONAL_FIELDS,
    REQUIRED_FIELDS,
    field_clauses,
    missing_clauses,
    presence_clauses,
)
from conformance.oracle.ledger.correspondences import Context
from reference.ledger.timefmt import parse_rfc3339
from reference.ledger.wire import TIME_FIELDS, answer_instant


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
        return f"{self.where}: model {short(self.want)}, target {short(self.got)}{note}"


ABSENT = "<absent>"


def short(v: Any, n: int = 160) -> str:
    """A value for a message (``absent`` for a missing field)."""
    if v is ABSENT or v == ABSENT:
        return "absent"
    return short_json(v, n, sort_keys=True)


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
                Diff(label, model[name], ABSENT, field_clauses(name, model) + ("LED-WIRE.4",))
            )
            continue
        if name not in model:
            if name not in REQUIRED_FIELDS and name not in OPTIONAL_FIELDS:
                continue  # a field the spec does not name: allowed, not judged (LED-WIRE.4)
            clauses: tuple[str, ...] = field_clauses(name, model) + ("LED-WIRE.4",)
            note = "null is never sent; an unset field is absent" if got[name] is None else ""
            diffs.append(Diff(label, ABSENT, got[name], clauses, note))
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
                diffs.append(Diff(label, want, value, field_clauses(name, model), problem))
        elif name in TIME_FIELDS:
            diffs.extend(_compare_time(label, name, model, want, value, ctx))
        elif name == "conflictGroup":
            problem = ctx.groups.link(str(want), value)
            if problem:
                problem = problem.replace("id ", "group label ").replace("record", "group")
                diffs.append(Diff(label, want, value, field_clauses(name, model), problem))
        elif type(want) is not type(value) or want != value:
            diffs.append(Diff(label, want, value, field_clauses(name, model)))
    return diffs


def _compare_time(
    label: str, name: str, model: dict[str, Any], want: Any, value: Any, ctx: Context
) -> list[Diff]:
    """A time field: an RFC 3339 UTC date-time denoting the model's instant under the correspondence
    (LED-WIRE.5)."""
    seen = answer_instant(value)
    if seen is None:
        return [Diff(label, want, value, ("LED-WIRE.5",), "times are RFC 3339 date-times in UTC")]
    m = parse_rfc3339(str(want))
    if m is None:
        return [Diff(label, want, value, ("LED-WIRE.5",), "not a valid instant")]
    problem = ctx.times.link(m, seen[0], seen[1])
    if problem:
        return [Diff(label, want, value, field_clauses(name, model), problem)]
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
    acc = _Pairing()
    unknown = _pair_known_ids(model_recs, got_recs, ctx, where, acc)
    unmatched = _pair_by_content(model_recs, got_recs, ctx, unknown, acc)
    _leftovers(model_recs, got_recs, ctx, where, may_omit, unmatched, acc)
    return acc.diffs, acc.pairs


@dataclass
class _Pairing:
    """A pairing as it is built: the differences, the pairs, the model records paired."""

    diffs: list[Diff] = field(default_factory=list)
    pairs: list[tuple[int, int]] = field(default_factory=list)
    used: set[int] = field(default_factory=set)

    def pair(self, i: int, j: int) -> None:
        """Pair model record ``i`` with target record ``j``."""
        self.used.add(i)
        self.pairs.append((i, j))


def _pair_known_ids(
    model_recs: Sequence[dict[str, Any]],
    got_recs: Sequence[Any],
    ctx: Context,
    where: str,
    acc: _Pairing,
) -> list[int]:
    """Pair the target records whose ids the run has seen (LED-REC.3); return the others'
    positions."""
    by_model_id = {str(r["id"]): i for i, r in enumerate(model_recs)}
    unknown: list[int] = []
    for j, rec in enumerate(got_recs):
        if not isinstance(rec, dict):
            acc.diffs.append(Diff(f"{where}[{j}]", "a record", rec, ("LED-WIRE.4", "LED-WIRE.6")))
            continue
        tid = rec.get("id")
        mid = ctx.ids.t2m.get(tid) if isinstance(tid, str) else None
        if mid is None:
            unknown.append(j)
            continue
        i = by_model_id.get(mid)
        if i is None or i in acc.used:
            note = "the model does not list this record here"
            acc.diffs.append(Diff(f"{where}[{j}]", ABSENT, rec, presence_clauses(where), note))
            continue
        acc.pair(i, j)
        acc.diffs.extend(compare_record(model_recs[i], rec, ctx, f"{where}[{j}]"))
    return unknown


def _pair_by_content(
    model_recs: Sequence[dict[str, Any]],
    got_recs: Sequence[Any],
    ctx: Context,
    unknown: list[int],
    acc: _Pairing,
) -> list[int]:
    """Pair each unseen target record with the first unseen model record of the same content,
    extending ``ctx``; return the positions that match none."""
    open_m = [
        i
        for i in range(len(model_recs))
        if i not in acc.used and str(model_recs[i]["id"]) not in ctx.ids.m2t
    ]
    unmatched: list[int] = []
    for j in unknown:
        hit = None
        for i in open_m:
            trial = _content_matches(model_recs[i], got_recs[j], ctx)
            if trial is not None:
                hit = (i, trial)
                break
        if hit is None:
            unmatched.append(j)
            continue
        i, trial = hit
        ctx.ids, ctx.times = trial.ids, trial.times
        open_m.remove(i)
        acc.pair(i, j)
    return unmatched


def _leftovers(
    model_recs: Sequence[dict[str, Any]],
    got_recs: Sequence[Any],
    ctx: Context,
    where: str,
    may_omit: frozenset[str],
    unmatched: list[int],
    acc: _Pairing,
) -> None:
    """What is left: one against one is compared for a readable diff; else each extra target
    record and each missing model record (not in ``may_omit``) is a difference."""
    missing = [i for i in range(len(model_recs)) if i not in acc.used]
    if len(unmatched) == 1 and len(missing) == 1:
        i, j = missing[0], unmatched[0]
        acc.pairs.append((i, j))
        acc.diffs.extend(compare_record(model_recs[i], got_recs[j], ctx, f"{where}[{j}]"))
        return
    for j in unmatched:
        note = "matches no record the model has here"
        acc.diffs.append(Diff(f"{where}[{j}]", ABSENT, got_recs[j], presence_clauses(where), note))
    for i in missing:
        if str(model_recs[i]["id"]) in may_omit:
            continue
        acc.diffs.append(
            Diff(
                f"{where}",
                model_recs[i],
                ABSENT,
                presence_clauses(where) + missing_clauses(model_recs[i]),
                "a record the model has here is missing",
            )
        )
