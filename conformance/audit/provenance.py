"""``memspec audit memory-on --store``: where every bullet came from.

With the store record the capture's proxy wrote (:mod:`conformance.audit.store_proxy`), each
memory-on provider request is held to the read rule, not just to the block's form:

* **The turn's reads.**  The store calls recorded with ``after_request == i`` arrived after
  provider request ``i - 1`` and before request ``i``: they are request ``i``'s window.  Its
  ``/retrieve`` calls are grouped by ``(query, limit)`` -- one read asks every scope the same
  query -- keeping a scope's latest answer.  A window without a retrieve inherits the previous
  window's reads (a run's later model calls reuse the block it read once).  A turn is judged
  against each read of its window, newest first, and passes when one explains it (a
  reflection pass may retrieve in the same window with its own query).
* **Scopes** (MEM-READ.3, MEM-READ.5, MEM-SCOPE.3): every scope the read retrieved is named by
  the block's prefix, and every scope the prefix names was retrieved; a bullet's record must
  come from one of them -- a record from any other scope (another user's, shown under the org
  prefix) is a leak.
* **Each bullet is a record, sanitized** (MEM-READ.2, MEM-CONTAIN.1, MEM-CONTAIN.2): exactly
  ``render_bullet`` of a record the read's answers held.  A bullet that is some record's text
  sanitized the wrong way (``&`` escaped last: ``<b>`` as ``&amp;lt;b&amp;gt;``) names the
  containment clause; one that is no record at all names MEM-READ.2.
* **The bullets are the pool** (MEM-READ.1, MEM-BUDGET.1, MEM-BUDGET.3): the union of the
  answers re-scored with the reference scorer and sorted; org first on exact ties, every other
  tie in any order; at most ``limit``; the walk stops at the first record over the token budget,
  the first record always kept.  The read's *now* is not on the wire: every instant from the
  read's first retrieve to the provider request (widened by :data:`CLOCK_SKEW_MS` for the two
  clocks) is allowed, and two records whose order could flip inside that window may come in
  either order.
* **No pool, no block; a pool, a block** (MEM-READ.4, MEM-BUDGET.1).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from conformance.audit.memory_on_block import BlockInfo, Violation
from conformance.audit.store_proxy import StoreCall, StoreRecord
from conformance.scrub import shown
from reference.memory.budget import estimate_tokens
from reference.memory.containment import (
    flatten_field,
    render_bullet,
    sanitize_memory_field,
)
from reference.memory.records import MemoryRecord
from reference.memory.scopes import scope_kind
from reference.memory.scoring import keyword_match, score_record
from reference.memory.wire.client import client_retrieve

READ_POOL = "MEM-READ.1"
READ_RETURNED = "MEM-READ.2"
READ_PREFIX = "MEM-READ.3"
READ_NO_RECORDS = "MEM-READ.4"
READ_OWN_SCOPES = "MEM-READ.5"
CONTAIN_FLAT = "MEM-CONTAIN.1"
CONTAIN_ESCAPE = "MEM-CONTAIN.2"
BUDGET_LIMIT = "MEM-BUDGET.1"
BUDGET_TOKENS = "MEM-BUDGET.3"
SCOPE_DERIVED = "MEM-SCOPE.3"

CLOCK_SKEW_MS = 5 * 60 * 1000
EPS = 1e-12
MAX_ASSIGNMENTS = 256
_ENTITY = re.compile("&(amp|lt|gt);")


@dataclass(frozen=True)
class Read:
    """One read: the retrieves of one query, a scope's latest answer each."""

    query: str
    limit: int
    answers: dict[str, tuple[MemoryRecord, ...]]  # scope key -> records, in arrival order
    first_ms: int
    calls: tuple[int, ...]  # store call indices

    @property
    def pool(self) -> list[tuple[str, MemoryRecord]]:
        """The union, in scope order then answer order (the stable sort's input)."""
        order = {"org": 0, "repo": 1, "channel": 2, "user": 3}
        keys = sorted(self.answers, key=lambda k: order.get(scope_kind(k), 4))
        return [(k, r) for k in keys for r in self.answers[k]]


def epoch_ms(stamp: str) -> int:
    """An RFC 3339 ``...Z`` stamp as epoch milliseconds."""
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def _retrieve(call: StoreCall) -> tuple[str, str, int] | None:
    """``(scopeKey, query, limit)`` of a ``/retrieve`` call, or ``None``."""
    if call.route != "retrieve" or call.method != "POST":
        return None
    body = call.request_json()
    if not isinstance(body, dict):
        return None
    scope, query, limit = body.get("scopeKey"), body.get("query"), body.get("limit")
    if not isinstance(scope, str) or not isinstance(query, str):
        return None
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None
    return scope, query, limit


def reads_by_window(store: StoreRecord) -> dict[int, list[Read]]:
    """Provider request index -> the reads of its window (``after_request``), newest first."""
    windows: dict[int, dict[tuple[str, int], list[StoreCall]]] = {}
    for call in store.calls:
        got = _retrieve(call)
        if got is None:
            continue
        _, query, limit = got
        windows.setdefault(call.after_request, {}).setdefault((query, limit), []).append(call)
    out: dict[int, list[Read]] = {}
    for window, groups in windows.items():
        reads = [_read(query, limit, calls) for (query, limit), calls in groups.items()]
        out[window] = sorted(reads, key=lambda r: -max(r.calls))
    return out


def _read(query: str, limit: int, calls: list[StoreCall]) -> Read:
    answers: dict[str, tuple[MemoryRecord, ...]] = {}
    for call in calls:
        scope = _retrieve(call)
        assert scope is not None
        status = call.status if call.answered_by == "upstream" else None
        answers[scope[0]] = client_retrieve(status, call.answer.encode("utf-8")).records
    first = min(epoch_ms(c.received_at) for c in calls)
    return Read(query, limit, answers, first, tuple(c.index for c in calls))


def reads_for(index: int, windows: dict[int, list[Read]]) -> list[Read]:
    """The reads request ``index`` is judged against: its own window's, else the latest
    earlier window's (the same run's block, read once)."""
    for w in range(index, -1, -1):
        if w in windows:
            return windows[w]
    return []


# --------------------------------------------------------------------------------------------
# the order the read rule allows


def _ref(r: MemoryRecord) -> int:
    return r.last_used_at if r.last_used_at is not None else r.created_at


def _precedes(a: MemoryRecord, sa: str, b: MemoryRecord, sb: str, read: Read, now: int) -> bool:
    """Whether the read rule puts ``a`` (from scope ``sa``) before ``b`` whatever the read's
    *now* in ``[read.first_ms - skew, now + skew]``: a higher score at every instant, or an
    exact tie (same match, same recency reference) with ``a`` an org record and ``b`` not."""
    q = read.query
    if keyword_match(q, a) == keyword_match(q, b) and _ref(a) == _ref(b):
        return scope_kind(sa) == "org" and scope_kind(sb) != "org"
    lo, hi = read.first_ms - CLOCK_SKEW_MS, now + CLOCK_SKEW_MS
    points = {lo, hi} | {t for t in (_ref(a), _ref(b)) if lo < t < hi}
    return all(score_record(q, a, t) - score_record(q, b, t) > EPS for t in points)


# --------------------------------------------------------------------------------------------
# bullets to records


def _unescape_all(s: str) -> str:
    """Every layer of ``&amp;``/``&lt;``/``&gt;`` undone."""
    prev = None
    while prev != s:
        prev, s = s, _ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], s)
    return s


def _loose(s: str) -> str:
    """What a wrongly sanitized rendering of a text still shares with the right one."""
    return flatten_field(_unescape_all(s))


def _split(bullet: str) -> tuple[str, str] | None:
    if not (bullet.startswith("- ") and bullet.endswith(")")):
        return None
    body = bullet[2:-1]
    at = body.rfind(" (source: ")
    return (body[:at], body[at + len(" (source: ") :]) if at >= 0 else None


def misrendered(bullet: str, pool: Sequence[tuple[str, MemoryRecord]]) -> Violation | None:
    """The containment clause a bullet breaks when it is some pool record rendered wrongly:
    MEM-CONTAIN.2 when only the escaping differs, MEM-CONTAIN.1 otherwise."""
    parts = _split(bullet)
    if parts is None:
        return None
    for _, r in pool:
        fields = list(zip(parts, (r.text, r.source_thread_key), ("text", "source"), strict=True))
        if not all(_loose(got) == _loose(raw) for got, raw, _ in fields):
            continue
        for got, raw, name in fields:
            want = sanitize_memory_field(raw)
            if got == want:
                continue
            same = _unescape_all(got) == _unescape_all(want)
            at = next(
                (i for i, (x, y) in enumerate(zip(got, want, strict=False)) if x != y), len(want)
            )
            lo = max(0, at - 12)
            return Violation(
                CONTAIN_ESCAPE if same else CONTAIN_FLAT,
                f"is record {r.id}'s {name} sanitized wrongly: from character {at} it shows "
                f"{shown(got[lo : at + 30], 60)!r}, the sanitizer gives "
                f"{shown(want[lo : at + 30], 60)!r}",
            )
    return None


def _assignments(
    bullets: Sequence[str], pool: Sequence[tuple[str, MemoryRecord]]
) -> Iterator[list[int]]:
    """Each way to read the bullets as distinct pool records (indices), up to a bound."""
    cands = [[i for i, (_, r) in enumerate(pool) if render_bullet(r) == b] for b in bullets]
    made = 0

    def walk(i: int, used: list[int]) -> Iterator[list[int]]:
        nonlocal made
        if made >= MAX_ASSIGNMENTS:
            return
        if i == len(bullets):
            made += 1
            yield list(used)
            return
        for c in cands[i]:
            if c not in used:
                used.append(c)
                yield from walk(i + 1, used)
                used.pop()

    yield from walk(0, [])


# --------------------------------------------------------------------------------------------
# judging one request


def check_provenance(
    info: BlockInfo | None,
    reads: Sequence[Read],
    sent_ms: int,
    limit: int,
    max_tokens: int,
) -> list[Violation]:
    """What is wrong with a request's block (``None``: it carries none) against the reads of
    its window: nothing when some read explains it (see the module docstring)."""
    if not reads:
        if info is None:
            return []
        return [
            Violation(
                READ_RETURNED,
                f"no /retrieve precedes this request in the store record, yet its block holds "
                f"{len(info.bullets)} bullet(s): they come from no store answer",
            )
        ]
    judged = [judge_read(info, read, sent_ms, limit, max_tokens) for read in reads]
    return [] if any(not v for v in judged) else judged[0]


def judge_read(
    info: BlockInfo | None, read: Read, sent_ms: int, limit: int, max_tokens: int
) -> list[Violation]:
    """What is wrong with the block against one read."""
    v: list[Violation] = []
    if read.limit != limit:
        v.append(
            Violation(
                READ_POOL,
                f"the read asked each scope for {read.limit} records; the deployment's "
                f"limit is {limit} (every scope is retrieved with the request's limit)",
            )
        )
    pool = read.pool
    if info is None:
        if pool:
            v.append(
                Violation(
                    BUDGET_LIMIT,
                    f"the store returned {len(pool)} record(s) to this turn's read "
                    f"({_scopes(read)}), yet no block was injected: the first ranked record "
                    "is always kept",
                )
            )
        return v
    prefix = info.resource.split(" + ")
    v.extend(_scope_problems(prefix, read))
    own = [(s, r) for s, r in pool if s in prefix]
    foreign = [(s, r) for s, r in pool if s not in prefix]
    for n, bullet in enumerate(info.bullets, start=1):
        v.extend(_bullet_problem(n, bullet, own, foreign, prefix))
    if v:
        return v
    return _selection_problems(info, own, read, sent_ms, limit, max_tokens)


def _scopes(read: Read) -> str:
    return ", ".join(f"{k}: {len(rs)}" for k, rs in read.answers.items())


def _scope_problems(prefix: Sequence[str], read: Read) -> list[Violation]:
    v: list[Violation] = []
    for scope in read.answers:
        if scope not in prefix:
            v.append(
                Violation(
                    READ_PREFIX,
                    f"this turn's read retrieved {scope!r}, which the prefix does not name "
                    f"(it names {' + '.join(prefix)})",
                )
            )
    for scope in prefix:
        if scope not in read.answers:
            v.append(
                Violation(
                    READ_PREFIX,
                    f"the prefix names {scope!r}, but this turn's read did not retrieve it",
                )
            )
    users = [s for s in read.answers if scope_kind(s) == "user"]
    if len(users) > 1:
        v.append(Violation(SCOPE_DERIVED, f"one read retrieved {len(users)} user scopes: {users}"))
    return v


def _bullet_problem(
    n: int,
    bullet: str,
    own: Sequence[tuple[str, MemoryRecord]],
    foreign: Sequence[tuple[str, MemoryRecord]],
    prefix: Sequence[str],
) -> list[Violation]:
    where = f"bullet {n}"
    if any(render_bullet(r) == bullet for _, r in own):
        return []
    leaked = next(((s, r) for s, r in foreign if render_bullet(r) == bullet), None)
    if leaked is not None:
        return [
            Violation(
                READ_OWN_SCOPES,
                f"{where} is record {leaked[1].id} of scope {leaked[0]!r}, not one of this "
                f"request's scopes ({' + '.join(prefix)}): another scope's record entered the "
                "pool",
            )
        ]
    wrong = misrendered(bullet, [*own, *foreign])
    if wrong is not None:
        return [Violation(wrong.clause, f"{where} {wrong.message}")]
    return [
        Violation(
            READ_RETURNED,
            f"{where} is no record the store returned during this turn: {shown(bullet, 100)!r}",
        )
    ]


def _selection_problems(
    info: BlockInfo,
    pool: Sequence[tuple[str, MemoryRecord]],
    read: Read,
    sent_ms: int,
    limit: int,
    max_tokens: int,
) -> list[Violation]:
    """Nothing when some reading of the bullets as pool records is a selection the read rule
    allows; else the first reading's problems."""
    first: list[Violation] | None = None
    for assign in _assignments(info.bullets, pool):
        problems = _selection(assign, pool, read, sent_ms, limit, max_tokens)
        if not problems:
            return []
        first = first if first is not None else problems
    if first is None:
        return [Violation(READ_POOL, "the block shows one record twice")]
    return first


def _selection(  # long: the four conditions of the read rule's selection, in order
    assign: Sequence[int],
    pool: Sequence[tuple[str, MemoryRecord]],
    read: Read,
    sent_ms: int,
    limit: int,
    max_tokens: int,
) -> list[Violation]:
    """Whether the records ``assign`` (in bullet order) are what the read rule may select."""

    def before(i: int, j: int) -> bool:
        return _precedes(pool[i][1], pool[i][0], pool[j][1], pool[j][0], read, sent_ms)

    def name(i: int) -> str:
        return f"record {pool[i][1].id} ({pool[i][0]})"

    for x, later in enumerate(assign):
        for y in range(x + 1, len(assign)):
            if before(assign[y], later):
                return [
                    Violation(
                        READ_POOL,
                        f"bullet {y + 1}, {name(assign[y])}, ranks above bullet {x + 1}, "
                        f"{name(later)}, in the re-scored pool, yet comes after it",
                    )
                ]
    left = [i for i in range(len(pool)) if i not in assign]
    for i in left:
        for pos, k in enumerate(assign):
            if before(i, k):
                return [
                    Violation(
                        BUDGET_LIMIT,
                        f"{name(i)} ranks above bullet {pos + 1}'s {name(k)} but is left out: "
                        "the block is a prefix of the ranked pool",
                    )
                ]
    if len(assign) >= limit or not left:
        return []
    used = sum(estimate_tokens(render_bullet(pool[k][1])) for k in assign)
    nexts = [i for i in left if not any(before(j, i) for j in left if j != i)]
    if all(used + estimate_tokens(render_bullet(pool[i][1])) <= max_tokens for i in nexts):
        i = nexts[0]
        cost = estimate_tokens(render_bullet(pool[i][1]))
        return [
            Violation(
                BUDGET_TOKENS,
                f"the block stops after {len(assign)} bullet(s) ({used} tokens), but the next "
                f"ranked {name(i)} fits: {used} + {cost} <= {max_tokens}, and the limit is "
                f"{limit}",
            )
        ]
    return []
