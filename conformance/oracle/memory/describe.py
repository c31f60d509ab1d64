"""What the model allowed, in words a reader of a report can check against the target's data.

Records are named by the target's ids (the model's numbering only where the target has not
shown the record yet), retrieve answers as their tie groups (MEM-SCORE.5), list answers newest
first (MEM-WIRE.14).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from conformance.oracle.memory.worlds import World
from reference.memory.judge import rank_allowed
from reference.memory.records import MemoryRecord
from reference.memory.scoring import keyword_match, tokenize
from reference.memory.store import StoreState, active_records, store_list
from reference.memory.wire import ErrorBody, ExactBody, HealthBody, Option, RecordsBody


def describe_allowed(options: Sequence[Option], w: World) -> str:
    """Every allowed answer, one line each (records answers: their records in ``w``)."""
    lines = []
    for o in options:
        spec = o.body
        note = f"  ({o.note})" if o.note else ""
        if isinstance(spec, ExactBody):
            lines.append(f"{o.status} {json.dumps(spec.value, sort_keys=True)}{note}")
        elif isinstance(spec, ErrorBody):
            names = " or ".join(spec.fields)
            lines.append(
                f'{o.status} {{"error": <reason{" naming " + names if names else ""}>}}{note}'
            )
        elif isinstance(spec, HealthBody):
            lines.append(f'{o.status} {{"ok": true, ...}}')
        else:  # retrieve and list are judged from this world's state, not the option's pick
            lines.append(f"{o.status} " + describe_records(spec, w.state, w))
    return "\n".join(lines)


def show(r: MemoryRecord, w: World) -> str:
    """One model record as the target shows it (its id, text, usage)."""
    tid = w.m2t.get(r.id)
    # The target's id: the reader looks at the target's data, not at the model's numbering.
    label = tid if tid else f"(a record the target has not shown yet; model {r.id})"
    used = ""
    if r.last_used_at is not None:
        # Show the target's own stamp of that event when the run has seen it.
        seen = w.times.get(r.scope_key, {}).get(r.last_used_at)
        used = f", last used {seen}" if seen is not None else ", last used (not yet seen)"
    return f"{label} {r.text!r} useCount {r.use_count}{used}"


def describe_records(spec: RecordsBody, state: StoreState, w: World) -> str:
    """The records a retrieve or list answer may show in ``state``."""
    if spec.route == "/list":
        want = store_list(state, spec.scope_key, spec.limit, spec.query)
        lines = [f"  {i + 1}. {show(r, w)}" for i, r in enumerate(want)]
        return "records, newest first:" + ("\n" + "\n".join(lines) if lines else " none")
    active = active_records(state, spec.scope_key)
    if not tokenize(spec.query or ""):
        return "records: none (the query has no tokens)"
    query = spec.query or ""
    by_id = {r.id: r for r in active}
    groups = rank_allowed(active, query, spec.limit, spec.now)
    lines = []
    for n, g in enumerate(groups):
        # created_at, then id: a tie group is a set, and its iteration order follows
        # PYTHONHASHSEED; the text must be the same on every run of a seed.
        members = sorted((by_id[i] for i in g), key=lambda r: (r.created_at, r.id))
        km = keyword_match(query, members[0])
        lines.append(f"  group {n + 1} (keyword match {km:.3f}, any order):")
        lines.extend(f"     {show(r, w)}" for r in members)
    want_n = min(spec.limit, sum(len(g) for g in groups))
    return (
        f"records: the first {want_n} of these tie groups (a group cut by the limit keeps any of"
        " its members; usage shown before or after this retrieval's bump; see MEM-STORE.5 and"
        " MEM-STORE.6 for"
        " what a prefilter may leave out):" + ("\n" + "\n".join(lines) if lines else " none")
    )
