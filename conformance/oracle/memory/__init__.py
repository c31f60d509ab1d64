"""The Memory Worker oracle: is this answer one the model allows, and what holds afterwards?

The model (``reference.memory.wire.handle``) says, for one request, which statuses a
conforming Worker may answer, with which bodies, and what its store holds afterwards.  This
module compares a target's actual answer with that, field by field, and keeps the model in
step with the target across a whole run.  Four things make that more than an equality test.

**Ids are the target's own.**  The model numbers each scope 1, 2, 3 …; a target may number
however it likes (MEM-STORE.9).  A *bijection* between model ids and target ids is built as
the run goes: the first time a target shows a record, it is matched to the model record with
exactly the same content (every field except ``id``, times and — for a record written without
keywords — ``keywords``), and from then on that pairing is fixed.  A target id that shows up
paired with a second model record is an id reused; a record whose content matches no model
record is a divergence.  Every target id must have the shape ``mem:<scopeKey>:<n>``.  Ids sent
to the target (``forget``'s ``id``, a candidate's ``supersedes``) are translated back through
the same bijection before the model sees the request; an id the run never saw is replaced on
the model side by a "ghost" of the same length that can name no model record.

**Times are the target's own.**  ``createdAt`` and ``lastUsedAt`` come from the store's clock
(MEM-STORE.11), so the harness never compares them with its own.  Instead the model's clock is
the harness wall clock (ms, strictly increasing from step to step) read as each request is
prepared — model times only label events in their order — and the driver keeps mutating steps
on one scope at least 3 ms apart: a step the model allows to change a scope (``allowed``'s
``changes``) is sent only once 3 ms have passed since that scope's last mutating answer, which
the store stamped before answering.  Each model event then has a distinct model time, and the
target's time of the same event must be one consistent value: a *monotone time correspondence*
(model time ↔ target time) is built as answers arrive.  It checks that every record of one batch
shows one creation time and every record bumped by one retrieve one last-use time, that a
record's times never change between answers, and that target times are ordered exactly like
the events they stamp (strictly, since the events are ≥ 3 ms apart).  Times are only compared
within a scope — ranking, eviction and MEM-STORE.11 never look across scopes — so each scope has
its own correspondence, and steps on different scopes need no spacing.  A store whose clock runs
backwards between requests fails this check, which the report says in so many words.

**One judge.**  What answers are allowed is not decided here: the reference declares it as
pure functions (``reference.memory.judge``: ``retrieval_problem``, ``listing_problem``,
``eviction_picks``, ``content_problems``/``usage_problems``/``keywords_problem``; and
``reference.memory.wire.handle`` for statuses, error bodies and result members).  This
package only maps the target's ids and times onto the model's and asks those functions.

**Ranking ties are judged by event order, never by clock values.**  The spec ranks by
``0.7·keywordMatch + 0.3·exp(−age/τ)`` with τ = 7 days; the judge scores the model's records at
the model's *now*.  Within one run every record of a scope is minutes old at most, so the
recency term of two records differs by less than ``0.3·(1 − e^(−run/τ))`` — about 3·10⁻⁶ for a
ten-minute run — while two different keyword matches differ by at least ``0.7/q²`` (≥ 4·10⁻⁵
for q ≤ 128): the score order is the lexicographic order (keyword match desc, last-touch time
desc), and two records tie exactly when both are equal.  Because the last-touch comparison only
asks which event came later — and mutating steps are ≥ 3 ms apart — no clock skew between
harness and target, and no difference in the absolute values of either clock, can move a record
from one tie group to another.  (The spacing matters: with it switched off, distinct events get
equal store stamps and this check reports them — the benchmark shows it.)  Within a group any
order is allowed, and when the limit cuts a group any of its members may survive
(MEM-SCORE.5).  The prefilter freedoms are the judge's too: a record matched only by a token
the 24-longest trim drops, or only by a token glued to non-ASCII text, may be missing
(MEM-STORE.5), and with more matching records than ``max(50, 5·limit)`` the store picks its
candidates (MEM-STORE.6).

**Where the spec leaves a choice, the model runs every choice.**  The oracle keeps a small set
of *worlds* — (model state, id bijection, time correspondence) triples — that all agree with
everything the target said so far.  A choice the target makes visibly (which tied records a
retrieve returned, ``null`` read as absent or refused) simply selects the matching world.  A
choice the target makes invisibly forks the world: which of several equally-old records an
over-cap write evicted (MEM-CAP.2), or which of two indistinguishable records got which id.
Later answers prune the worlds that disagree; when none is left, the step diverges.  Past
``MAX_WORLDS`` live worlds the step is reported indeterminate rather than guessed.

Nothing else is tolerated: every other field is compared exactly, absent and ``null`` differ,
and counts are exact.  A divergence names the clauses involved, what the model allowed (every
option) and what the target said.

The parts: :mod:`.oracle` (``MemoryOracle``: the allowed answers per world, the judgement of one
answer), :mod:`.requests` (a sent request and its model-side twin), :mod:`.worlds` (a world, its
id bijection and time correspondence, state edits), :mod:`.records` (one wire record against one
model record, as small comparers), :mod:`.answers` (a records answer: shape, which model record
each position shows, order), :mod:`.clauses` (which clauses a difference names) and
:mod:`.describe` (what the model allowed, for a report).
"""

from conformance.oracle.memory.oracle import (
    MAX_WORLDS,
    AllowedInWorlds,
    Judgement,
    MemoryOracle,
)
from conformance.oracle.memory.requests import MODEL_TOKEN, SentRequest, model_auth_header
from conformance.oracle.memory.worlds import RecMeta, TimeProblem, World

__all__ = [
    "MAX_WORLDS",
    "MODEL_TOKEN",
    "AllowedInWorlds",
    "Judgement",
    "MemoryOracle",
    "RecMeta",
    "SentRequest",
    "TimeProblem",
    "World",
    "model_auth_header",
]
