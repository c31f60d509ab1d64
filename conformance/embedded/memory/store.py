"""SQLite persistence of the bundled Memory Worker (seed §15, §17, §18, §26-§28).

One database holds every scope: a ``records`` table keyed by ``(scope_key, seq)`` with the
record fields plus ``norm`` (the dedup key), and an FTS5 shadow table ``records_fts`` whose
rowid is the record's ``rid`` and which holds exactly the ACTIVE rows.  Every soft delete
(supersede, forget, evict) deletes the row's FTS entry in the same transaction, and every
start re-applies the idempotent schema and reconciles the FTS table down (and up) to the
active rows.

The FTS table indexes the engine's own tokens -- ``tokenize(text + keywords)`` joined by
spaces, under FTS5's ``ascii`` tokenizer -- so an FTS match on a quoted ``[a-z0-9]+`` token is
exactly the engine's whole-token test.  User text never reaches the FTS query parser: a MATCH
is built only from ``fts_match_tokens`` output, each token double-quoted and OR-joined.

Ranking, write planning, minting and eviction are the pure engine's
(``reference.memory.engine``), called here the way the real Worker bundles its engine; this
module only persists.  It does no wire validation: ``http`` hands it validated values.

Concurrency: one connection in autocommit mode, guarded by one lock; every mutating
operation is one ``BEGIN IMMEDIATE`` transaction, so a batch commits whole or not at all and
concurrent writers to one scope can never interleave between the ``seq`` read and the
inserts.  File databases run in WAL mode with ``synchronous=NORMAL``: every committed
transaction survives a process crash (SIGKILL); an OS crash may roll back the last few.

The schema and the small helpers around it live in :mod:`.schema`; what stays here is the
one class whose methods share a transaction discipline (about 600 lines).  ``plan_write`` and
``plan_eviction`` are looked up in this module's namespace: tests replace them here.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from conformance.embedded.catalogue import NONE as NO_QUIRKS
from conformance.embedded.catalogue import Quirks
from conformance.embedded.memory.schema import (
    COLUMNS,
    R_COLUMNS,
    SCHEMA,
    WriteCounts,
    fts_document,
    match_expression,
    rollback,
    row_record,
    seq_of,
    system_clock_ms,
)
from reference.memory.engine import (
    DEFAULT_SCOPE_CAP,
    Dedup,
    Insert,
    WritePlan,
    candidate_cap,
    eviction_key,
    fts_match_tokens,
    mint_record,
    normalize_text,
    plan_eviction,
    plan_write,
    rank_records,
)
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.scoring import collapse_whitespace, keyword_match, tokenize

__all__ = ["SCHEMA", "MemoryStore", "WriteCounts", "fts_document", "match_expression"]

#: Lowercase mappings of Unicode 16.0 for characters this Python's ``unicodedata`` does not
#: know (variant ``unicode-newer-lowercase``: a store whose runtime, like a recent Node, ships
#: a newer Unicode): LATIN CAPITAL LETTER RAMS HORN, S WITH DIAGONAL STROKE, LAMBDA, LAMBDA
#: WITH STROKE, and the Garay capitals.
NEWER_LOWER: dict[int, int] = {
    upper: lower
    for upper, lower in {
        0xA7CB: 0x0264,
        0xA7CC: 0xA7CD,
        0xA7DA: 0xA7DB,
        0xA7DC: 0x019B,
        **{0x10D50 + i: 0x10D70 + i for i in range(22)},
    }.items()
    if unicodedata.category(chr(upper)) == "Cn"
}


class MemoryStore:
    """All scopes of the bundled Memory Worker in one SQLite database.

    ``db`` is a file path or ``":memory:"``.  ``clock`` returns the store's "now" in epoch
    milliseconds (read once per operation, inside the lock).  ``write_hook``, when set, is
    called inside the write transaction right after a batch's first candidate has been applied
    -- a test seam for killing the process mid-batch; production never sets it.  ``quirks``
    selects catalogue alterations (allowed variants, mutants); production runs with none.
    """

    def __init__(
        self,
        db: str = ":memory:",
        *,
        clock: Callable[[], int] | None = None,
        cap_default: int = DEFAULT_SCOPE_CAP,
        write_hook: Callable[[], None] | None = None,
        quirks: Quirks = NO_QUIRKS,
    ) -> None:
        self.db = db
        self.quirks = quirks
        self.cap_default = cap_default
        self._clock = clock or system_clock_ms
        self._write_hook = write_hook
        self._lock = threading.RLock()
        self._closed = False
        self._conn = sqlite3.connect(
            db, isolation_level=None, check_same_thread=False, timeout=10.0
        )
        try:
            in_memory = db == ":memory:" or db.startswith("file::memory:") or "mode=memory" in db
            if not in_memory:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
            # The one migration path: the idempotent schema, re-applied at every start.
            with self._tx() as c:
                for statement in SCHEMA:
                    c.execute(statement)
            self.reconcile_fts()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction under the store lock: all or nothing."""
        with self._lock:
            if self._closed:
                raise RuntimeError("memory store is closed")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                rollback(self._conn)
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise RuntimeError("memory store is closed")
            yield self._conn

    def _race_window(self, c: sqlite3.Connection) -> None:
        """Race mutants only: commit, let other requests in for a moment, begin again."""
        c.execute("COMMIT")
        self._lock.release()
        try:
            time.sleep(0.002)
        finally:
            self._lock.acquire()
            c.execute("BEGIN IMMEDIATE")

    def close(self) -> None:
        """Close the connection (WAL is checkpointed by SQLite on the last close)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def now(self) -> int:
        if self.quirks("clock-a-day-behind"):
            return int(self._clock()) - 86_400_000
        return int(self._clock())

    def _mint_id(self, scope_key: str, seq: int) -> str:
        """The id of the ``seq``-th record of a scope (numbering is implementation-defined)."""
        if self.quirks("ids-from-zero"):
            return f"mem:{scope_key}:{seq - 1}"
        if self.quirks("ids-sparse"):
            return f"mem:{scope_key}:{1000 + 7 * seq}"
        return f"mem:{scope_key}:{seq}"

    def _norm(self, text: str) -> str:
        """The dedup key (seed §8), lower-cased as this store's Unicode version does."""
        if self.quirks("unicode-newer-lowercase"):
            text = text.translate(NEWER_LOWER)
        return normalize_text(text)

    def _match_tokens(self, query: str) -> list[str]:
        """The prefilter's MATCH tokens: at most the 24 longest distinct ones (seed §17)."""
        if self.quirks("no-match-token-cap"):
            return fts_match_tokens(query, max_tokens=10**6)
        if self.quirks("mem-match-token-cap-23"):  # mutant: the trim one token too early
            return fts_match_tokens(query, max_tokens=23)
        return fts_match_tokens(query)

    def _fts_document(self, text: str, keywords: Sequence[str]) -> str:
        if self.quirks(
            "fts-raw-text"
        ):  # the real Worker's choice: the text itself, tokenized by FTS
            return " ".join([text, *keywords])
        return fts_document(text, keywords)

    # ------------------------------------------------------------------ maintenance

    def reconcile_fts(self) -> tuple[int, int]:
        """Make ``records_fts`` hold exactly the active rows (seed §15).

        Deletes FTS rows whose record is missing or not active, and indexes any active record
        that lacks its FTS row.  Returns ``(deleted, added)``.  Idempotent; O(active rows).
        """
        with self._tx() as c:
            deleted = c.execute(
                "DELETE FROM records_fts WHERE rowid NOT IN"
                " (SELECT rid FROM records WHERE status = 'active')"
            ).rowcount
            missing = c.execute(
                "SELECT rid, text, keywords FROM records WHERE status = 'active'"
                " AND rid NOT IN (SELECT rowid FROM records_fts)"
            ).fetchall()
            for rid, text, keywords in missing:
                c.execute(
                    "INSERT INTO records_fts (rowid, tokens) VALUES (?, ?)",
                    (rid, self._fts_document(text, json.loads(keywords))),
                )
        return deleted, len(missing)

    def seed(self, records: Iterable[MemoryRecord]) -> int:
        """Insert already-minted records verbatim in one transaction (benchmarks, tests).

        Ids must be ``mem:<scope_key>:<seq>``.  Active ones get their FTS row.  Bypasses
        planning, dedup and the cap: a loader, not a write path.
        """
        n = 0
        with self._tx() as c:
            for r in records:
                self._insert(c, r)
                n += 1
        return n

    # ------------------------------------------------------------------ internals

    def _insert(self, c: sqlite3.Connection, r: MemoryRecord, seq: int | None = None) -> None:
        cur = c.execute(
            "INSERT INTO records (id, scope_key, seq, kind, text, norm, keywords,"
            " source_thread_key, source_run_id, created_at, last_used_at, use_count,"
            " confidence, supersedes, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                r.id,
                r.scope_key,
                seq_of(r.id) if seq is None else seq,
                r.kind,
                r.text,
                self._norm(r.text),
                json.dumps(list(r.keywords), ensure_ascii=False),
                r.source_thread_key,
                r.source_run_id,
                r.created_at,
                r.last_used_at,
                r.use_count,
                r.confidence,
                r.supersedes,
                r.status,
            ),
        )
        if r.status == "active":
            c.execute(
                "INSERT INTO records_fts (rowid, tokens) VALUES (?, ?)",
                (cur.lastrowid, self._fts_document(r.text, r.keywords)),
            )

    def _soft_delete(self, c: sqlite3.Connection, scope_key: str, record_id: str, to: str) -> bool:
        """Flip one ACTIVE record of the scope to ``to`` and drop its FTS row; False if none."""
        row = c.execute(
            "UPDATE records SET status = ? WHERE id = ? AND scope_key = ? AND status = 'active'"
            " RETURNING rid",
            (to, record_id, scope_key),
        ).fetchall()
        if not row and to == "forgotten" and self.quirks("mem-forget-dead-record"):
            # mutant: a record already dead is "forgotten" again (and answered true)
            row = c.execute(
                "UPDATE records SET status = ? WHERE id = ? AND scope_key = ? RETURNING rid",
                (to, record_id, scope_key),
            ).fetchall()
        if not row:
            return False
        if not self.quirks("mem-dead-fts-rows-kept"):  # mutant: the FTS row survives
            c.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0][0],))
        return True

    def _write_pool(
        self, c: sqlite3.Connection, scope_key: str, cand: MemoryCandidate
    ) -> list[MemoryRecord]:
        """The rows ``plan_write`` can look at: same-norm actives and the supersedes target.

        ``plan_write`` reads nothing else, so its plan over this pool equals its plan over
        the whole active set (seed §18).  Ordered by seq = insertion order.
        """
        if cand.supersedes == "" and self.quirks("mem-empty-supersedes-looked-up"):
            return []  # mutant: the !== undefined branch -- an id lookup that finds nothing
        # No ORDER BY in SQL: it would tempt the planner onto records_active_seq (a scan of
        # every active row); the norm hits are few, so they are ordered here.
        rows = c.execute(
            f"SELECT seq, {COLUMNS} FROM records INDEXED BY records_status_norm"
            " WHERE scope_key = ? AND status = 'active' AND norm = ?",
            (scope_key, self._norm(cand.text)),
        ).fetchall()
        if self.quirks("mem-dedup-case-sensitive"):  # mutant: the dedup key keeps the case
            rows = [r for r in rows if collapse_whitespace(r[4]) == collapse_whitespace(cand.text)]
        if self.quirks("mem-dedup-whitespace-sensitive"):  # mutant: no whitespace collapse
            rows = [r for r in rows if r[4].strip().lower() == cand.text.strip().lower()]
        if self.quirks("mem-batch-planned-against-old-state"):  # mutant: own batch invisible
            rows = [r for r in rows if r[0] <= self._batch_start_seq]
        if self.quirks("mem-superseded-still-dedup-target"):  # mutant: dead rows still match
            rows += c.execute(
                f"SELECT seq, {COLUMNS} FROM records"
                " WHERE scope_key = ? AND status = 'superseded' AND norm = ?",
                (scope_key, self._norm(cand.text)),
            ).fetchall()
            rows = [(*r[:13], "active") for r in rows]
        if cand.supersedes:  # plan_write's own truthiness: "" is no supersede
            target = c.execute(
                f"SELECT seq, {COLUMNS} FROM records"
                " WHERE id = ? AND scope_key = ? AND status = 'active'",
                (cand.supersedes, scope_key),
            ).fetchone()
            if target is None and self.quirks("mem-supersede-across-scopes"):
                target = c.execute(  # mutant: the target is looked up in every scope
                    f"SELECT seq, {COLUMNS} FROM records WHERE id = ? AND status = 'active'",
                    (cand.supersedes,),
                ).fetchone()
            if target is not None and all(target[0] != r[0] for r in rows):
                rows.append(target)
        rows.sort(key=lambda r: r[0])
        if self.quirks("mem-dedup-latest-wins"):  # mutant: the newest duplicate is bumped
            rows.reverse()
        return [row_record(r[1:]) for r in rows]

    # ------------------------------------------------------------------ operations

    def write(
        self,
        scope_key: str,
        candidates: Sequence[MemoryCandidate],
        cap: int | None = None,
    ) -> WriteCounts:
        """Apply one batch in one transaction: plan, dedup/supersede/insert, then evict."""
        cap = self.cap_default if cap is None else cap
        inserted = deduped = superseded = 0
        with self._tx() as c:
            now = self.now()
            last = c.execute(
                "SELECT seq FROM records WHERE scope_key = ? ORDER BY seq DESC LIMIT 1",
                (scope_key,),
            ).fetchone()
            seq = last[0] if last else 0
            self._batch_start_seq = seq
            before = 0
            if self.quirks("mem-cap-checked-before-batch"):
                (before,) = c.execute(
                    "SELECT COUNT(*) FROM records WHERE scope_key = ? AND status = 'active'",
                    (scope_key,),
                ).fetchone()
            for i, cand in enumerate(candidates):
                if i and self.quirks("race-batch-split"):
                    self._race_window(c)
                    seq = self._last_seq(c, scope_key)
                pool = self._write_pool(c, scope_key, cand)
                if self.quirks("race-dedup-unlocked"):
                    self._race_window(c)
                    seq = self._last_seq(c, scope_key)
                plan = self._plan_candidate(c, scope_key, cand, pool)
                if isinstance(plan, Dedup):
                    self._dedup(c, scope_key, plan, now)
                    deduped += 1
                else:
                    superseded += self._supersede(c, scope_key, plan)
                    seq += 1
                    now = self._insert_candidate(c, scope_key, cand, plan, seq, now, i)
                    inserted += 1
                if i == 0 and self._write_hook is not None:
                    self._write_hook()
            # The cap holds after every batch (even one that only dedups; an empty one is a
            # no-op, whatever its cap).  The indexed COUNT(*) keeps the under-cap batch from
            # ever fetching the whole active set.
            (active,) = c.execute(
                "SELECT COUNT(*) FROM records WHERE scope_key = ? AND status = 'active'",
                (scope_key,),
            ).fetchone()
            if not candidates and not self.quirks("mem-empty-batch-evicts"):
                return WriteCounts(0, 0, 0, 0)  # the validation table's "empty batch no-op"
            evicted = self._evict_over_cap(c, scope_key, active, cap, before)
        return WriteCounts(inserted, deduped, superseded, evicted)

    def _last_seq(self, c: sqlite3.Connection, scope_key: str) -> int:
        """The highest write sequence number of a scope, 0 for none (race mutants reread it)."""
        (seq,) = c.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM records WHERE scope_key = ?",
            (scope_key,),
        ).fetchone()
        return int(seq)

    def _plan_candidate(
        self,
        c: sqlite3.Connection,
        scope_key: str,
        cand: MemoryCandidate,
        pool: list[MemoryRecord],
    ) -> WritePlan:
        """The reference write plan of one candidate against ``pool``, as altered by a quirk."""
        if self.quirks("unicode-newer-lowercase"):
            plan = plan_write(pool, cand, newer_unicode=True)
        else:
            plan = plan_write(pool, cand)
        if cand.supersedes and self.quirks("mem-collision-guard-missing"):
            # mutant: a correction restating another record dedups against it
            loose = plan_write(pool, replace(cand, supersedes=None))
            plan = loose if isinstance(loose, Dedup) else plan
        if (
            plan == Insert(None)
            and cand.supersedes
            and self.quirks("mem-unresolved-supersede-dedups")
        ):  # mutant: an unresolved supersede falls back to plain dedup
            pool = self._write_pool(c, scope_key, replace(cand, supersedes=None))
            plan = plan_write(pool, replace(cand, supersedes=None))
        return plan

    def _dedup(self, c: sqlite3.Connection, scope_key: str, plan: Dedup, now: int) -> None:
        """Bump the use count of the active record a candidate restates."""
        c.execute(
            "UPDATE records SET use_count = use_count + 1"
            " WHERE id = ? AND scope_key = ? AND status = 'active'",
            (plan.target_id, scope_key),
        )
        if self.quirks("mem-dedup-sets-last-used"):  # mutant: dedup is a "use"
            c.execute(
                "UPDATE records SET last_used_at = ? WHERE id = ?",
                (now, plan.target_id),
            )

    def _supersede(self, c: sqlite3.Connection, scope_key: str, plan: Insert) -> int:
        """Retire the record an insert supersedes, if any: how many were superseded (0 or 1)."""
        if plan.supersede_id is None:
            return 0
        owner = scope_key
        if self.quirks("mem-supersede-across-scopes"):
            owner = plan.supersede_id[4:].rsplit(":", 1)[0]
        if self.quirks("mem-supersede-no-status-flip"):
            return 1  # mutant: counted, but the old record stays active
        return 1 if self._soft_delete(c, owner, plan.supersede_id, "superseded") else 0

    def _insert_candidate(
        self,
        c: sqlite3.Connection,
        scope_key: str,
        cand: MemoryCandidate,
        plan: Insert,
        seq: int,
        now: int,
        i: int,
    ) -> int:
        """Mint the ``i``-th candidate of a batch as a record at ``seq`` and insert it; the
        batch's clock afterwards (a mutant moves it)."""
        if self.quirks("keywords-as-given") and cand.keywords is None:
            cand = replace(cand, keywords=())
        if self.quirks("unresolved-supersedes-dropped") and plan.supersede_id is None:
            cand = replace(cand, supersedes=None)
        if self.quirks("mem-batch-stamps-each-record"):  # mutant: clock per insert
            now = self.now() + i
        rec = mint_record(cand, scope_key, self._mint_id(scope_key, seq), now)
        if self.quirks("last-used-at-on-mint"):
            rec = replace(rec, last_used_at=rec.created_at)
        self._insert(c, rec, seq)
        return now

    def _evict_over_cap(
        self, c: sqlite3.Connection, scope_key: str, active: int, cap: int, before: int
    ) -> int:
        """Evict a scope's ``active`` records down to ``cap`` (least recently used first):
        how many the answer counts as evicted."""
        evicted = 0
        if self.quirks("mem-eviction-counts-superseded"):  # mutant: dead rows fill the cap
            (dead,) = c.execute(
                "SELECT COUNT(*) FROM records WHERE scope_key = ? AND status = 'superseded'",
                (scope_key,),
            ).fetchone()
            active, cap = active + dead, max(cap - dead, 0)
        if self.quirks("mem-cap-checked-before-batch"):  # mutant: judged on the old count
            active = before
        if active <= cap:
            return evicted
        newest_first = self.quirks("evict-newest-of-a-tie-first")
        rows = c.execute(
            f"SELECT {COLUMNS} FROM records"
            " WHERE scope_key = ? AND status = 'active'"
            f" ORDER BY seq {'DESC' if newest_first else 'ASC'}",
            (scope_key,),
        ).fetchall()
        victims = plan_eviction([row_record(r) for r in rows], cap)
        live = [row_record(r) for r in rows]
        if self.quirks("mem-evict-most-recently-used"):
            victims = [r.id for r in sorted(live, key=eviction_key)[::-1][: len(victims)]]
        if self.quirks("mem-evict-by-creation-only"):  # mutant: FIFO, not LRU
            victims = [r.id for r in sorted(live, key=lambda r: r.created_at)][: len(victims)]
        if self.quirks("mem-evict-ties-newer-first"):  # mutant: ties by newer createdAt
            victims = [
                r.id for r in sorted(live, key=lambda r: (eviction_key(r)[0], -r.created_at))
            ][: len(victims)]
        if self.quirks("mem-evicted-not-counted"):  # mutant: the answer says 0
            evicted -= len(victims)
        for rid in victims:
            if self._soft_delete(c, scope_key, rid, "evicted"):
                evicted += 1
        return evicted

    def retrieve(self, scope_key: str, query: str, limit: int) -> list[MemoryRecord]:
        """FTS prefilter (bm25, capped) -> ``rank_records`` -> one batched usage bump.

        Returns the ranked records as they are after the bump (``lastUsedAt = now``,
        ``useCount + 1``), like the model's ``store_retrieve``.
        """
        tokens = self._match_tokens(query)
        if self.quirks("mem-prefilter-keeps-shortest-tokens"):  # mutant: the 24 shortest
            tokens = sorted(dict.fromkeys(tokenize(query)), key=len)[:24]
        if self.quirks("mem-distinct-query-tokens"):  # mutant: repeats in the query count once
            query = " ".join(dict.fromkeys(tokenize(query)))
        if not tokens or limit <= 0:
            return []
        with self._tx() as c:
            now = self.now()
            rows = self._fts_candidates(c, scope_key, query, tokens, limit)
            if self.quirks("ties-newest-first"):
                rows.sort(key=lambda r: -seq_of(r[0]))
            pool = [row_record(r) for r in rows]
            if self.quirks("mem-substring-match"):  # mutant: a query token hits inside a word
                rows = c.execute(
                    f"SELECT {COLUMNS} FROM records WHERE scope_key = ? AND status = 'active'",
                    (scope_key,),
                ).fetchall()
                pool = [
                    replace(r, keywords=(*r.keywords, *(t for t in tokens if t in r.text.lower())))
                    for r in map(row_record, rows)
                ]
            if self.quirks("mem-recency-from-created"):  # mutant: last use is not looked at
                pool = [replace(r, last_used_at=None) for r in pool]
            cut = limit + 1 if self.quirks("mem-retrieve-limit-off-by-one") else limit
            by_id = {r.id: r for r in map(row_record, rows)}
            ranked = [by_id[r.id] for r in rank_records(pool, query, cut, now)]
            self._bump_usage(c, scope_key, ranked, list(by_id.values()), now)
        if self.quirks("mem-retrieve-reversed"):  # mutant: lowest score first
            ranked.reverse()
        if self.quirks("retrieve-shows-usage-before-bump"):
            return ranked
        return [replace(r, last_used_at=now, use_count=r.use_count + 1) for r in ranked]

    def _fts_candidates(
        self, c: sqlite3.Connection, scope_key: str, query: str, tokens: list[str], limit: int
    ) -> list[Any]:
        """The prefilter: the scope's active rows the FTS match finds, the candidate cap's
        best by bm25 (a ``seq`` first, then :data:`COLUMNS`)."""
        # CROSS JOIN pins the FTS match as the outer loop (never a scan of the scope).
        trusting = self.quirks("mem-dead-fts-rows-kept")
        rows: list[Any] = c.execute(
            # mutant: trusting the FTS table to hold only active rows, the candidate LIMIT
            # is taken before the status check (which then drops the dead ones)
            (
                f"SELECT {COLUMNS} FROM (SELECT r.*, bm25(records_fts) AS fts_rank"
                if trusting
                else f"SELECT {R_COLUMNS}"
            )
            + " FROM records_fts CROSS JOIN records r"
            " ON r.rid = records_fts.rowid"
            + (
                " WHERE records_fts MATCH ? AND r.scope_key = ?"
                if trusting
                else " WHERE records_fts MATCH ? AND r.scope_key = ? AND r.status = 'active'"
            )
            + (
                # mutant: the seed's own red-verified bug -- candidates by recency
                " ORDER BY coalesce(r.last_used_at, r.created_at) DESC, r.seq DESC LIMIT ?"
                if self.quirks("mem-prefilter-by-recency")
                else " ORDER BY bm25(records_fts) LIMIT ?"
            )
            + (") WHERE status = 'active' ORDER BY fts_rank" if trusting else ""),
            (
                # mutant: the user's text reaches the FTS5 query parser as syntax
                query if self.quirks("mem-fts-raw-query") else match_expression(tokens),
                scope_key,
                limit if self.quirks("mem-prefilter-cut-at-limit") else self._candidate_cap(limit),
            ),
        ).fetchall()
        return rows

    def _bump_usage(
        self,
        c: sqlite3.Connection,
        scope_key: str,
        ranked: list[MemoryRecord],
        pool: list[MemoryRecord],
        now: int,
    ) -> None:
        """One batched usage bump (``lastUsedAt = now``, ``useCount + 1``) of the records a
        retrieve returned."""
        bumped = ranked
        if self.quirks("mem-usage-bumps-every-candidate"):  # mutant: the whole pool
            bumped = pool
        if self.quirks("mem-usage-not-bumped"):  # mutant: retrieve forgets the bump
            bumped = []
        if self.quirks("mem-usage-bump-capped"):  # mutant: one statement binds <= 32 ids
            bumped = bumped[:32]
        if bumped and self.quirks("race-usage-rmw"):
            self._race_window(c)
            for r in bumped:
                c.execute(
                    "UPDATE records SET last_used_at = ?, use_count = ? WHERE id = ?",
                    (now, r.use_count + 1, r.id),
                )
        elif bumped:
            marks = ", ".join("?" for _ in bumped)
            c.execute(
                "UPDATE records SET last_used_at = ?, use_count = use_count + 1"
                f" WHERE id IN ({marks}) AND +scope_key = ?",
                (now, *(r.id for r in bumped), scope_key),
            )

    def _candidate_cap(self, limit: int) -> int:
        if self.quirks("mem-prefilter-flat-cap"):  # mutant: the floor alone, never 5 x limit
            return 50
        if self.quirks("mem-prefilter-no-floor"):  # mutant: 5 x limit, without the floor
            return 5 * limit
        if self.quirks("candidate-cap-doubled"):
            return 2 * candidate_cap(limit)
        return candidate_cap(limit)

    def list(self, scope_key: str, limit: int, query: str | None = None) -> list[MemoryRecord]:
        """Active records newest first; with a query, only whole-token hits; no usage bump."""
        if self.quirks("mem-list-bumps-usage"):  # mutant: a list is counted as a use
            with self._tx() as c:
                c.execute(
                    "UPDATE records SET last_used_at = ?, use_count = use_count + 1 WHERE id IN"
                    " (SELECT id FROM records WHERE scope_key = ? AND status = 'active'"
                    " ORDER BY seq DESC LIMIT ?)",
                    (self.now(), scope_key, limit),
                )
        with self._read() as c:
            if query is not None and self.quirks("mem-list-substring-filter"):
                rows = c.execute(  # mutant: LIKE '%token%' instead of whole tokens
                    f"SELECT {COLUMNS} FROM records WHERE scope_key = ? AND status = 'active'"
                    " ORDER BY seq DESC",
                    (scope_key,),
                ).fetchall()
                hit = [r for r in rows if any(t in r[3].lower() for t in tokenize(query))]
                return [row_record(r) for r in hit[:limit]]
            if (
                query is not None
                and not tokenize(query)
                and self.quirks("mem-list-blank-query-lists-all")
            ):
                query = None  # mutant: a query without tokens is treated as no filter
            if query is None:
                rows = c.execute(
                    f"SELECT {COLUMNS} FROM records WHERE scope_key = ? AND status = 'active'"
                    f" ORDER BY seq {'ASC' if self.quirks('mem-list-oldest-first') else 'DESC'}"
                    " LIMIT ?",
                    (scope_key, limit),
                ).fetchall()
                return [row_record(r) for r in rows]
            tokens = self._match_tokens(query)
            if not tokens:
                return []
            cur = c.execute(
                f"SELECT {R_COLUMNS} FROM records_fts CROSS JOIN records r"
                " ON r.rid = records_fts.rowid"
                " WHERE records_fts MATCH ? AND r.scope_key = ? AND r.status = 'active'"
                " ORDER BY r.seq DESC",
                (match_expression(tokens), scope_key),
            )
            out: list[MemoryRecord] = []
            for row in cur:
                rec = row_record(row)
                # The engine's whole-token test (the relevance gate) over the full query.
                if keyword_match(query, rec) > 0:
                    out.append(rec)
                    if len(out) >= limit:
                        break
            cur.close()
            return out

    def forget(self, scope_key: str, record_id: str) -> bool:
        """Soft-delete one active record of the scope (status ``forgotten``) and its FTS row."""
        with self._tx() as c:
            if self.quirks("mem-forget-any-scope"):  # mutant: the id alone names the record
                owner = c.execute("SELECT scope_key FROM records WHERE id = ?", (record_id,))
                scope_key = next((r[0] for r in owner), scope_key)
            gone = self._soft_delete(c, scope_key, record_id, "forgotten")
            if gone and self.quirks("mem-ids-reused-after-forget"):
                # mutant: forget deletes the row, so the next id (highest seq + 1) reuses it
                c.execute("DELETE FROM records WHERE id = ?", (record_id,))
            return gone

    # ------------------------------------------------------------------ introspection

    def get(self, record_id: str) -> MemoryRecord | None:
        """Any record by id, whatever its status (tests and tools; not a wire route)."""
        with self._read() as c:
            row = c.execute(f"SELECT {COLUMNS} FROM records WHERE id = ?", (record_id,)).fetchone()
        return None if row is None else row_record(row)
