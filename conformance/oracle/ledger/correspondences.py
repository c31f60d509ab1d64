"""The correspondences a run builds between model and target: ids, group labels, instants.

Ids and group labels are bijections fixed the first time they show (LED-REC.3, LED-GROUP.5);
instants are the identity when the target's clock is pinned, else a monotone map kept to the
precision each answer's text has (LED-WIRE.5).  A :class:`Context` holds all three and is copied
per trial, committed on pass.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import same_instant


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
                return f"expected {fmt_instant(model_ms)}" + (
                    "" if precision == 1 else f" (to the {precision} ms the answer keeps)"
                )
            return None
        known = self.m2t.get(model_ms)
        if known is not None:
            if abs(known[0] - target_ms) >= max(known[1], precision):
                return (
                    f"the same instant was shown earlier as {fmt_instant(known[0])} (one event, one"
                    " instant)"
                )
            if precision < known[1]:
                self.m2t[model_ms] = seen
            return None
        i = bisect.bisect_left(self.keys, model_ms)
        if i > 0:
            lo, lo_p = self.m2t[self.keys[i - 1]]
            if not lo - lo_p // 2 < target_ms + precision - 1:
                return f"must be later than {fmt_instant(lo)} (it stamps a later event)"
        if i < len(self.keys):
            hi, hi_p = self.m2t[self.keys[i]]
            if not target_ms - precision // 2 < hi + hi_p - 1:
                return f"must be earlier than {fmt_instant(hi)} (it stamps an earlier event)"
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


def fmt_instant(ms: int) -> str:
    """An instant for a message: RFC 3339 when it has one, else the number."""
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
