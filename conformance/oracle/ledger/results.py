"""A whole result against the model's, one comparer per kind of result.

Records (a single record, a listing with its 50 cut and unordered ties, a history read whose
tombstones may be left out), a sweep's expired ids as a set, a packet's lines through the id
bijection with equal ranks unordered, and exact results (settings, a consolidation batch's
counts, the clock) where only the fields the spec names are judged (LED-WIRE.6).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.oracle.ledger.clauses import LIST_LIMIT, method_clauses, uniq
from conformance.oracle.ledger.correspondences import Context
from conformance.oracle.ledger.records import ABSENT, Diff, compare_record, pair_records
from reference.jsonvalues import json_equal
from reference.ledger.outcome import Ok
from reference.ledger.timefmt import parse_rfc3339
from reference.ledger.wire import answer_instant, same_instant

#: Each line of the model's packet: its record id and its rank (LED-PACKET.3).
PacketRows = Sequence[tuple[str, tuple[Any, ...]]]


@dataclass(frozen=True)
class PacketCandidate:
    """An active record as a packet line shows it: the parts a line is compared by."""

    model_id: str
    kind: str
    body: str  # line breaks collapsed (LED-PACKET.5)
    label: str  # the reference's reason label
    key: tuple[Any, ...]  # what a reason label may depend on (provenance, confidence)


@dataclass(frozen=True)
class PacketModel:
    """What the reference declares about a packet (built by ``oracle.ledger.worlds``): the
    model's own lines (record id and rank each), every active record, and the packet the model
    builds under another labelling of the lines (``relabel``: a label per model record id ->
    the lines and their rows), so a store's own labels are judged with the cap they imply."""

    rows: PacketRows
    candidates: tuple[PacketCandidate, ...]
    relabel: Callable[[Callable[[str], str]], tuple[tuple[str, ...], PacketRows]]


def compare_result(
    method: str,
    outcome: Ok,
    body: Any,
    ctx: Context,
    full_listing: Sequence[dict[str, Any]] | None,
    packet: PacketRows | PacketModel | None,
) -> list[Diff]:
    """The differences between the target's result and the model's, by the method's kind of
    result."""
    want = outcome.result
    if method in RECORD_RESULTS:
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
        named = frozenset({"applied", "invalid", "refused", "declined"})
        for option in outcome.one_of:
            if not _compare_exact(option, body, ("LED-GATE.9",), named):
                return []
        return _compare_exact(want, body, batch_clauses(outcome, want, body), named)
    if method in ("memory/get_consolidation_settings", "memory/update_consolidation_settings"):
        return _compare_settings(want, body, ctx, outcome)
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


#: The methods whose result is one record.
RECORD_RESULTS = frozenset(
    {
        "memory/save_memory_record",
        "memory/delete_memory_record",
        "memory/supersede_memory_record",
        "memory/approve_memory_record",
        "memory/reject_memory_record",
        "_test/propose",
    }
)


def _compare_settings(want: Any, body: Any, ctx: Context, outcome: Ok) -> list[Diff]:
    """A settings answer: the fields the spec names, each difference under its setting's
    clause (LED-CONS.2, LED-CONS.1, LED-BUDGET.4)."""
    diffs = _compare_exact(
        want,
        body,
        ("LED-CONS.2", "LED-CONS.1", "LED-BUDGET.4"),
        SETTINGS_FIELDS,
        # heldRecords counts what the run did not write too when the ledger was dirty
        outcome.extra_fields if not ctx.foreign else {},
    )
    return [dataclasses.replace(d, clauses=SETTING_CLAUSES.get(d.where, d.clauses)) for d in diffs]


#: The fields of a settings answer the spec names (LED-CONS.2); any other is not judged, except
#: those the model declares in ``Ok.extra_fields`` (``heldRecords``).
SETTINGS_FIELDS = frozenset(
    {"scopeKey", "mode", "harness", "model", "maxRecords", "allowRemoval", "debounceSeconds"}
)


#: Which clauses a settings field that differs touches: the mode is the seed's (off by default,
#: LED-CONS.1); the numbers, defaults and what an update keeps are the reference binding's.
SETTING_CLAUSES: dict[str, tuple[str, ...]] = {
    "result.mode": ("LED-CONS.1", "LED-CONS.2"),
    "result.harness": ("LED-CONS.3", "LED-CONS.2"),
    "result.model": ("LED-CONS.3", "LED-CONS.2"),
    "result.maxRecords": ("LED-CONS.3", "LED-CONS.2", "LED-BUDGET.4"),
    "result.allowRemoval": ("LED-CONS.3", "LED-CONS.2"),
    "result.debounceSeconds": ("LED-CONS.3", "LED-CONS.2"),
    "result.heldRecords": ("LED-CONS.2",),
}


#: The rule behind an element's verdict, by the model's reason (reference.ledger.consolidation).
_ELEMENT_REASONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("-operation limit", ("LED-GATE.6",)),
    ("outside the vocabulary", ("LED-GATE.2",)),
    ("is not a record of the scope", ("LED-GATE.3",)),
    (", not active", ("LED-GATE.3",)),
    ("removal is not allowed", ("LED-GATE.4", "LED-VOCAB.6")),
    ("credential-shaped", ("LED-CRED.2",)),
    ("keep changes nothing", ("LED-VOCAB.7",)),
    ("not taken by", ("LED-GATE.5", "LED-VOCAB.8")),
)
_APPLIED: dict[str, tuple[str, ...]] = {
    "merge": ("LED-VOCAB.2",),
    "correct": ("LED-VOCAB.3",),
    "expire": ("LED-VOCAB.4",),
    "group": ("LED-VOCAB.5",),
    "retire": ("LED-VOCAB.6",),
}
_VERDICTS = ("applied", "invalid", "refused", "declined")


def element_clauses(verdict: str, reason: str) -> tuple[str, ...]:
    """The rule one element's verdict rests on (its reason in the model)."""
    if verdict == "applied":
        return _APPLIED.get(reason, ("LED-GATE.9",))
    for needle, clauses in _ELEMENT_REASONS:
        if needle in reason:
            return clauses
    return ("LED-GATE.1", "LED-VOCAB.8") if verdict == "invalid" else ("LED-GATE.9",)


def batch_clauses(outcome: Ok, want: Any, got: Any) -> tuple[str, ...]:
    """Which clauses counts that differ touch: the four counts (LED-GATE.9) and the rule of each
    element whose verdict, moved to another, gives the target's counts; when no one element
    explains them, the rules of every element."""
    culprits: list[tuple[str, str]] = []
    if isinstance(want, dict) and isinstance(got, dict):
        for verdict, reason in outcome.elements:
            for other in _VERDICTS:
                if other == verdict:
                    continue
                moved = dict(want)
                moved[verdict] = moved.get(verdict, 0) - 1
                moved[other] = moved.get(other, 0) + 1
                if all(json_equal(moved.get(k), got.get(k)) for k in _VERDICTS):
                    culprits.append((verdict, reason))
    chosen = culprits or list(outcome.elements)
    return uniq(["LED-GATE.9", *(c for v, r in chosen for c in element_clauses(v, r))])


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
        w = want.get(name, ABSENT)
        g = got.get(name, ABSENT)
        if w is ABSENT and name not in named:
            if name in extra and not json_equal(extra[name], g):
                diffs.append(Diff(f"result.{name}", extra[name], g, clauses, "if present"))
            continue
        if w is ABSENT or g is ABSENT or not json_equal(w, g):
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
    """A listing: newest ``updatedAt`` first, ties unordered, any members of the tie the 50 cut
    straddles (LED-LIST.1, LED-LIST.2)."""
    clauses = ("LED-LIST.1", "LED-LIST.2")
    bad = _envelope(want, got, clauses)
    if bad:
        return bad
    got_recs = [
        r for r in got["records"] if not (isinstance(r, dict) and r.get("id") in ctx.foreign)
    ]
    allowed = list(full) if full is not None else list(want["records"])
    n_expected = min(LIST_LIMIT, len(allowed))
    mandatory, optional = _listing_window(allowed, n_expected)
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
    return _listing_order(len(got_recs), {j: pool[i] for i, j in pairs})


def _listing_window(
    allowed: list[dict[str, Any]], n_expected: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Which records may appear: every record of the tie classes above the cut (mandatory),
    and any members of the class the cut falls into (optional) (LED-LIST.2, ties unordered)."""
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
    return mandatory, optional


def _listing_order(n: int, model_of_target: dict[int, dict[str, Any]]) -> list[Diff]:
    """The target's sequence must be non-increasing in the model's ``updatedAt`` (LED-LIST.2)."""
    prev: str | None = None
    for j in range(n):
        rec = model_of_target.get(j)
        if rec is None:
            continue
        ts = str(rec["updatedAt"])
        if prev is not None and ts > prev:
            return [
                Diff(
                    f"list[{j}]",
                    "newest updatedAt first",
                    f"updatedAt {ts} after {prev}",
                    ("LED-LIST.2",),
                )
            ]
        prev = ts
    return []


def _tie_classes(
    recs: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], Any]
) -> list[list[dict[str, Any]]]:
    """Runs of consecutive records with equal ``key``."""
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
    """A history read: the records valid at the instant as a set; tombstones may be left out
    (LED-ASOF.1, LED-ASOF.2)."""
    clauses = ("LED-ASOF.1",)
    bad = _envelope(want, got, clauses)
    if bad:
        return bad
    got_recs = [
        r for r in got["records"] if not (isinstance(r, dict) and r.get("id") in ctx.foreign)
    ]
    diffs, _pairs = pair_records(want["records"], got_recs, ctx, "as_of", may_omit=may_omit)
    return [
        Diff(d.where, d.want, d.got, uniq(d.clauses + ("LED-ASOF.2",)), d.note)
        if _about_tombstone(d)
        else d
        for d in diffs
    ]


def _about_tombstone(d: Diff) -> bool:
    """Whether a difference is about a tombstone (a deleted record or its body)."""
    return (
        (isinstance(d.want, dict) and d.want.get("status") == "deleted")
        or (isinstance(d.got, dict) and d.got.get("status") == "deleted")
        or d.where.endswith(".body")
    )


def _compare_sweep(want: dict[str, Any], got: Any, ctx: Context) -> list[Diff]:
    """A sweep's ``expired`` ids as a set, through the id bijection (LED-EXP.2)."""
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
    packet: PacketRows | PacketModel | None,
) -> list[Diff]:
    """Lines by their parts -- ``[short id] kind (reason): body`` -- the short id through the
    bijection, equal-rank runs unordered (LED-PACKET.3), text = lines joined (LED-PACKET.4/.5).
    A store that labels its lines otherwise (LED-PACKET.5, a reference rule) is judged against
    the packet the model builds with the store's own labels, which may fit other lines under
    the cap; the labels alone then differ, a deviation (LED-PACKET.6)."""
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
    rows = packet.rows if isinstance(packet, PacketModel) else packet
    if isinstance(packet, PacketModel):
        relabelled = _store_labels(lines, packet, ctx)
        if relabelled is not None:
            label_diffs, store_lines, store_rows = relabelled
            rest = _packet_lines(lines, list(store_lines), store_rows, ctx, clauses)
            return rest + label_diffs
    return _packet_lines(lines, list(want["lines"]), rows, ctx, clauses)


def _packet_lines(
    lines: list[str],
    want_lines: list[str],
    rows: PacketRows | None,
    ctx: Context,
    clauses: tuple[str, ...],
) -> list[Diff]:
    """The target's lines against the model's, run of equal rank by run (LED-PACKET.3)."""
    ids = [mid for mid, _key in rows] if rows is not None else []
    if len(lines) != len(want_lines):
        return [Diff("result.lines", want_lines, lines, clauses, "a different number of lines")]
    ranks: list[tuple[Any, ...]] = (
        [key for _mid, key in rows] if rows is not None else [(i,) for i in range(len(want_lines))]
    )
    diffs: list[Diff] = []
    i = 0
    while i < len(want_lines):
        k = i
        while k < len(want_lines) and ranks[k] == ranks[i]:
            k += 1
        diffs += _packet_rank_run(lines, want_lines, ids, range(i, k), ctx, clauses)
        i = k
    if diffs and not _packet_rank_run(
        lines, want_lines, ids, range(len(want_lines)), ctx.copy(), clauses
    ):
        # The model's lines, every one of them, in another order: only the packet's order
        # differs (LED-PACKET.3, a reference clause).
        diffs = [dataclasses.replace(d, clauses=("LED-PACKET.3",)) for d in diffs]
    return diffs


def _store_labels(
    lines: list[str], packet: PacketModel, ctx: Context
) -> tuple[list[Diff], tuple[str, ...], PacketRows] | None:
    """When the store's lines label records otherwise than the reference (LED-PACKET.5): one
    difference per label, and the packet the model builds with the store's labels (a label
    learned per provenance and confidence; a record whose label the store has not shown keeps
    the reference's).  None when every label shown is the reference's."""
    by_short: dict[str, PacketCandidate] = {}
    for c in packet.candidates:
        target = ctx.ids.m2t.get(c.model_id)
        if target is not None:
            by_short.setdefault(target[:8], c)
    learned: dict[tuple[Any, ...], tuple[str, str]] = {}
    for line in lines:
        parts = _parts(line, by_short)
        if parts is not None:
            cand, label = parts
            learned.setdefault(cand.key, (cand.label, label))
    differing = {k: v for k, v in learned.items() if v[0] != v[1]}
    if not differing:
        return None
    label_of_key = {k: store for k, (_ref, store) in learned.items()}
    by_id = {c.model_id: c for c in packet.candidates}

    def label_of(model_id: str) -> str:
        c = by_id[model_id]
        return label_of_key.get(c.key, c.label)

    store_lines, store_rows = packet.relabel(label_of)
    diffs = [
        Diff(
            f"lines.reason{list(k)}",
            ref,
            store,
            ("LED-PACKET.5",),
            "the reason label (the reference writes the provenance)",
        )
        for k, (ref, store) in sorted(differing.items(), key=repr)
    ]
    return diffs, store_lines, store_rows


def _parts(line: str, by_short: dict[str, PacketCandidate]) -> tuple[PacketCandidate, str] | None:
    """A line read by its parts against the record its short id names: that record and the
    line's reason label, when the line's kind and body are the record's (else None)."""
    m = _LINE.fullmatch(line)
    if m is None:
        return None
    cand = by_short.get(m.group(1))
    if cand is None:
        return None
    rest, head, tail = m.group(2), f"{cand.kind} (", f"): {cand.body}"
    if len(rest) < len(head) + len(tail) or not (rest.startswith(head) and rest.endswith(tail)):
        return None
    return cand, rest[len(head) : len(rest) - len(tail)]


_LINE_BREAKS = re.compile(r"[\r\n]+")
_PARTS = re.compile(r"(\S+) \((.*?)\): (.*)", re.DOTALL)


def _part_clauses(line: str, want_line: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """Which clauses a line that differs from the model's line of the same record touches, by
    the part that differs: the kind (LED-REC.2), the body (its text, LED-PACKET.1; only its
    line breaks, LED-PACKET.5), the reason label alone (LED-PACKET.5)."""
    g, w = _LINE.fullmatch(line), _LINE.fullmatch(want_line)
    gp = _PARTS.fullmatch(g.group(2)) if g else None
    wp = _PARTS.fullmatch(w.group(2)) if w else None
    if gp is None or wp is None:
        return default
    out: list[str] = ["LED-PACKET.5"]
    if gp.group(1) != wp.group(1):
        out.append("LED-REC.2")
    if gp.group(3) != wp.group(3) and _LINE_BREAKS.sub(" ", gp.group(3)) != wp.group(3):
        out.append("LED-PACKET.1")
    return uniq(out)


def _packet_rank_run(
    lines: list[str],
    want_lines: list[str],
    ids: list[str],
    run: range,
    ctx: Context,
    clauses: tuple[str, ...],
) -> list[Diff]:
    """One run of equal-rank lines, in any order: each target line of the run matches a model
    line of the run by its text and, when the run has seen the record, its short id
    (LED-PACKET.3, LED-PACKET.5); a line that matches none is blamed by the part that differs
    from the model's line of the same record (:func:`_part_clauses`)."""
    group = list(run)
    diffs: list[Diff] = []
    for j in run:
        m = _LINE.fullmatch(lines[j])
        if m is None:
            diffs.append(Diff(f"lines[{j}]", want_lines[j], lines[j], ("LED-PACKET.5",)))
            continue
        short, rest = m.group(1), m.group(2)
        hit = None
        same_record = None
        for gi in group:
            wm = _LINE.fullmatch(want_lines[gi])
            assert wm is not None
            target_id = ctx.ids.m2t.get(ids[gi]) if gi < len(ids) else None
            if target_id is not None and target_id[:8] != short:
                continue
            if target_id is not None:
                same_record = gi
            if wm.group(2) != rest:
                continue
            hit = gi
            break
        if hit is None:
            blame = (
                _part_clauses(lines[j], want_lines[same_record], clauses)
                if same_record is not None
                else clauses
            )
            diffs.append(
                Diff(
                    f"lines[{j}]",
                    [want_lines[g] for g in group],
                    lines[j],
                    blame,
                    "no line of the model's rank at this position matches",
                )
            )
        else:
            group.remove(hit)
    return diffs
