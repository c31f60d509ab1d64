"""Mutants of the Memory Worker (see the package doc).

Each entry is one small, realistic mistake, switched on by ``quirks("name")`` at the one place
in the bundled store (``memory/store.py``, ``memory/http.py``, ``server.py``) where a careful
engineer could make it.  ``clauses`` are the clauses it breaks: a verdict that kills it must
name at least one of them.
"""

from conformance.embedded.catalogue import Entry


def _m(name: str, clauses: tuple[str, ...], summary: str) -> Entry:
    return Entry(name, "mutant", "memory", clauses, summary)


ENTRIES: tuple[Entry, ...] = (
    # ---- scoring and retrieval (MEM-SCORE, MEM-STORE)
    _m(
        "mem-substring-match",
        ("MEM-SCORE.2", "MEM-SCORE.4", "MEM-STORE.2", "MEM-SEAM.2"),
        "retrieve counts a query token as a hit when it occurs inside a word ('art' hits 'start')",
    ),
    _m(
        "mem-tighter-field-caps",
        ("MEM-WIRE.21",),
        "caps sourceThreadKey, sourceRunId and supersedes at 100 and a keyword at 32, below the"
        " reference's 200 and 64 (§16 caps them without a number: a deviation from the"
        " reference, killed at --level reference)",
    ),
    _m(
        "mem-distinct-query-tokens",
        ("MEM-SCORE.7",),
        "keyword match divides by the distinct query tokens, so a repeated token counts once"
        " (the other reading of §5: a deviation from the reference, killed at --level"
        " reference)",
    ),
    _m(
        "mem-recency-from-created",
        ("MEM-SCORE.3", "MEM-SCORE.1", "MEM-SCORE.5", "MEM-STORE.2", "MEM-SEAM.2"),
        "recency decays from createdAt, ignoring lastUsedAt",
    ),
    _m(
        "mem-retrieve-reversed",
        ("MEM-SCORE.1", "MEM-SCORE.5", "MEM-STORE.2"),
        "retrieve answers its ranking lowest score first (the sort's direction flipped)",
    ),
    _m(
        "mem-retrieve-limit-off-by-one",
        ("MEM-SCORE.5", "MEM-STORE.2", "MEM-WIRE.11", "MEM-SEAM.2"),
        "retrieve cuts the ranking at limit + 1",
    ),
    _m(
        "mem-prefilter-cut-at-limit",
        ("MEM-STORE.6", "MEM-STORE.2", "MEM-SCORE.5", "MEM-SEAM.2"),
        "the full-text prefilter hands the engine only `limit` bm25-best candidates",
    ),
    _m(
        "mem-prefilter-flat-cap",
        ("MEM-STORE.6", "MEM-STORE.2"),
        "the prefilter hands the engine at most 50 candidates whatever the limit (the floor of"
        " max(50, 5 x limit) alone), so above limit 10 the engine misses candidates",
    ),
    _m(
        "mem-prefilter-no-floor",
        ("MEM-STORE.6", "MEM-STORE.2"),
        "the prefilter hands the engine 5 x limit candidates without the floor of 50, so a"
        " small limit over more than 5 x limit matches misses candidates",
    ),
    _m(
        "mem-prefilter-by-recency",
        ("MEM-STORE.6",),
        "the prefilter orders candidates by recency, not bm25, so a relevant-but-old record"
        " past the candidate cap never reaches the engine (seed §17, red-verified row)",
    ),
    _m(
        "mem-dead-fts-rows-kept",
        ("MEM-STORE.6", "MEM-STORE.2", "MEM-STORE.4"),
        "supersede, forget and evict leave the record's full-text row, and the prefilter,"
        " trusting that table to hold only active rows, cuts its candidates before the status"
        " check: dead rows burn candidate slots (seed §15, red-verified: dead FTS rows survive)",
    ),
    _m(
        "mem-fts-raw-query",
        ("MEM-STORE.5", "MEM-STORE.2"),
        "retrieve hands the query text itself to FTS5 MATCH (seed §17: each token quoted and"
        " OR-joined), so words are AND-ed and quotes, OR, NEAR or * are query syntax",
    ),
    _m(
        "mem-prefilter-keeps-shortest-tokens",
        ("MEM-STORE.5", "MEM-STORE.2", "MEM-SEAM.2"),
        "past 24 distinct query tokens the prefilter keeps the 24 shortest, not the longest",
    ),
    _m(
        "mem-match-token-cap-23",
        ("MEM-STORE.5", "MEM-STORE.2"),
        "the prefilter keeps the 23 longest distinct query tokens, so a query of exactly 24"
        " (which the seed leaves untouched) loses its shortest token",
    ),
    _m(
        "mem-usage-not-bumped",
        ("MEM-STORE.3",),
        "retrieve never records the use (lastUsedAt/useCount unchanged)",
    ),
    _m(
        "mem-usage-bumps-every-candidate",
        ("MEM-STORE.3",),
        "retrieve bumps every prefiltered candidate, not only the returned records",
    ),
    _m(
        "mem-usage-bump-capped",
        ("MEM-STORE.3",),
        "the batched usage bump binds at most 32 ids, so a retrieve at limit 50 leaves the rest"
        " unbumped (seed validation row: the batched bump works at MAX_LIMIT)",
    ),
    # ---- list and forget
    _m(
        "mem-list-bumps-usage",
        ("MEM-STORE.7", "MEM-STORE.3"),
        "list counts as a use and bumps what it lists",
    ),
    _m(
        "mem-list-substring-filter",
        ("MEM-STORE.7", "MEM-SCORE.2", "MEM-SEAM.2"),
        "list's query filter is LIKE '%token%' instead of whole tokens",
    ),
    _m(
        "mem-list-blank-query-lists-all",
        ("MEM-STORE.7", "MEM-WIRE.14"),
        "a list query with no token is treated as no filter (everything listed)",
    ),
    _m(
        "mem-list-oldest-first",
        ("MEM-STORE.7",),
        "list answers oldest first",
    ),
    _m(
        "mem-scope-key-controls-accepted",
        ("MEM-WIRE.9",),
        "the scope key is checked for whitespace alone (a /\\s/ test), so a control character"
        " that is not whitespace (U+0001, U+007F, U+009F) passes",
    ),
    _m(
        "mem-scope-key-case-folded",
        ("MEM-SCOPE.9", "MEM-SCOPE.5"),
        "the store serves a scope key lower-cased, so keys differing only in letter case share"
        " one scope",
    ),
    _m(
        "mem-scope-key-nfkc",
        ("MEM-SCOPE.9", "MEM-SCOPE.5"),
        "the store serves a scope key NFKC-normalized, so canonically or compatibly equal keys"
        " (e + U+0301 and U+00E9, U+FB01 and fi) share one scope",
    ),
    _m(
        "mem-forget-any-scope",
        ("MEM-STORE.8", "MEM-SCOPE.5", "MEM-WIRE.15"),
        "forget finds the record by id alone, so a forget in one scope deletes another's",
    ),
    _m(
        "mem-forget-id-controls-accepted",
        ("MEM-WIRE.15",),
        "the forget id is checked for whitespace alone, so an id holding a control character"
        " that is not whitespace (U+0001, U+007F, U+009F) is looked up (forgotten: false)"
        " instead of refused",
    ),
    _m(
        "mem-forget-dead-record",
        ("MEM-STORE.8", "MEM-WIRE.15"),
        "forgetting a record that is already dead answers forgotten: true",
    ),
    _m(
        "mem-forget-always-true",
        ("MEM-STORE.8", "MEM-WIRE.15"),
        "forget answers forgotten: true whether or not a record was forgotten (an unknown id,"
        " another scope's, a dead one)",
    ),
    _m(
        "mem-ids-reused-after-forget",
        ("MEM-STORE.9",),
        "forget deletes the row, so the next id (highest seq + 1) mints a forgotten newest id"
        " again",
    ),
    # ---- writing (MEM-WRITE)
    _m(
        "mem-dedup-case-sensitive",
        ("MEM-WRITE.2", "MEM-WRITE.1", "MEM-WRITE.6"),
        "the dedup key keeps the case ('Paris' and 'paris' are two records)",
    ),
    _m(
        "mem-dedup-whitespace-sensitive",
        ("MEM-WRITE.2", "MEM-WRITE.1", "MEM-WRITE.6"),
        "the dedup key does not collapse inner whitespace",
    ),
    _m(
        "mem-dedup-latest-wins",
        ("MEM-WRITE.2", "MEM-WRITE.1"),
        "with two active duplicates the newest one is bumped, not the earliest",
    ),
    _m(
        "mem-dedup-sets-last-used",
        ("MEM-WRITE.1", "MEM-STORE.3"),
        "a dedup bump also sets lastUsedAt (only a retrieve is a use)",
    ),
    _m(
        "mem-superseded-still-dedup-target",
        ("MEM-WRITE.8", "MEM-RECORD.2", "MEM-WRITE.1"),
        "restating a superseded record's text is deduped against the dead record",
    ),
    _m(
        "mem-collision-guard-missing",
        ("MEM-WRITE.5", "MEM-WRITE.3"),
        "a correction whose text restates some other record dedups against that record",
    ),
    _m(
        "mem-supersede-no-status-flip",
        ("MEM-WRITE.3", "MEM-RECORD.2"),
        "a supersede inserts the correction and counts it, but never flips the old record to"
        " superseded (seed validation row, red-verified: disabling the status flip)",
    ),
    _m(
        "mem-empty-supersedes-looked-up",
        ("MEM-WRITE.4", "MEM-WRITE.1"),
        'supersedes: "" is looked up as an id (found nothing), so the candidate dedups against'
        " nothing and is inserted (seed validation row, red-verified: the !== undefined branch)",
    ),
    _m(
        "mem-unresolved-supersede-dedups",
        ("MEM-WRITE.4",),
        "a supersede naming no active record falls back to plain dedup",
    ),
    _m(
        "mem-supersede-across-scopes",
        ("MEM-WRITE.3", "MEM-WRITE.4", "MEM-SCOPE.5"),
        "a supersede may retire a record of another scope",
    ),
    _m(
        "mem-batch-planned-against-old-state",
        ("MEM-WRITE.7", "MEM-WRITE.1"),
        "each candidate is planned against the scope as it was before the batch",
    ),
    _m(
        "mem-batch-stamps-each-record",
        ("MEM-STORE.11",),
        "each inserted record of a batch reads the clock again (one batch, several createdAt)",
    ),
    _m(
        "mem-batch-half-applied",
        ("MEM-WIRE.12", "MEM-CAP.4"),
        "a batch whose last candidate is invalid is answered 400 after the others were written",
    ),
    # ---- the cap and eviction (MEM-CAP)
    _m(
        "mem-evict-most-recently-used",
        ("MEM-CAP.2",),
        "eviction takes the most recently used records",
    ),
    _m(
        "mem-evict-by-creation-only",
        ("MEM-CAP.2",),
        "eviction is first-in first-out by createdAt, ignoring lastUsedAt",
    ),
    _m(
        "mem-evict-ties-newer-first",
        ("MEM-CAP.2",),
        "on equal last use, the record created later is evicted first",
    ),
    _m(
        "mem-eviction-counts-superseded",
        ("MEM-CAP.3", "MEM-CAP.1"),
        "superseded rows count toward the cap, so live records are evicted too early",
    ),
    _m(
        "mem-cap-checked-before-batch",
        ("MEM-CAP.1",),
        "the cap is judged on the count before the batch, so a batch can leave the scope over it",
    ),
    _m(
        "mem-empty-batch-evicts",
        ("MEM-CAP.1",),
        "an empty /write batch applies its cap: one below the active count evicts (the"
        " validation table says: empty batch no-op)",
    ),
    _m(
        "mem-cap-silently-ignored",
        ("MEM-CAP.1", "MEM-WIRE.13"),
        "write validates cap and answers an evicted count, but evicts by the default of 500"
        " whatever cap was sent (judged by its evictions, not read as a store without caps)",
    ),
    _m(
        "mem-default-cap-ignored",
        ("MEM-CAP.1", "MEM-WIRE.13"),
        "a write without cap evicts nothing however many records the scope holds (the"
        " default of 500 never applies)",
    ),
    _m(
        "mem-evicted-not-counted",
        ("MEM-WRITE.6", "MEM-WIRE.13", "MEM-CAP.1"),
        "the write answer reports evicted: 0 even when it evicted",
    ),
    # ---- the wire (MEM-WIRE)
    _m(
        "mem-limit-51-accepted",
        ("MEM-WIRE.11",),
        "retrieve accepts limit 51",
    ),
    _m(
        "mem-query-4001-accepted",
        ("MEM-WIRE.11",),
        "retrieve accepts a query of 4001 code units",
    ),
    _m(
        "mem-query-length-in-code-points",
        ("MEM-WIRE.11",),
        "the query length is counted in code points, so astral characters count once",
    ),
    _m(
        "mem-cap-0-accepted",
        ("MEM-WIRE.13",),
        "write accepts cap 0 (the bound checked as >= 0); a harness probing caps with cap 0"
        " would take the store for one without caps and skip every cap scenario",
    ),
    _m(
        "mem-cap-10001-accepted",
        ("MEM-WIRE.13",),
        "write accepts cap 10001",
    ),
    _m(
        "mem-confidence-untyped",
        ("MEM-WIRE.12", "MEM-WIRE.10"),
        "a record's confidence is range-checked before its type, so a string, array or object"
        " there is a 500 instead of a 400",
    ),
    _m(
        "mem-optional-fields-null",
        ("MEM-WIRE.16", "MEM-RECORD.1"),
        "unset optional record fields are sent as null instead of being absent",
    ),
    _m(
        "mem-content-length-hex",
        ("MEM-WIRE.5",),
        "Content-Length: 0x10 is parsed as 16 instead of refused with 411",
    ),
    _m(
        "mem-413-at-the-limit",
        ("MEM-WIRE.6",),
        "a body of exactly 512 KiB is refused with 413",
    ),
    _m(
        "mem-auth-prefix-compare",
        ("MEM-WIRE.3",),
        "the bearer is compared as a prefix, so an empty secret ('Bearer ') is let in",
    ),
    _m(
        "mem-auth-compares-given-length",
        ("MEM-WIRE.3",),
        "the bearer is compared over the presented token's length only, so any non-empty"
        " prefix of the token is let in",
    ),
    _m(
        "mem-auth-compares-token-length",
        ("MEM-WIRE.3",),
        "the bearer is compared over the token's length only, so the token with anything"
        " appended is let in",
    ),
    _m(
        "mem-auth-case-insensitive",
        ("MEM-WIRE.3",),
        "the bearer is compared without letter case, so the token in another case is let in",
    ),
    _m(
        "mem-auth-before-method",
        ("MEM-WIRE.4", "MEM-WIRE.2"),
        "the bearer is checked before the method (GET /retrieve without a token is 401)",
    ),
    _m(
        "mem-length-before-auth",
        ("MEM-WIRE.4", "MEM-WIRE.3"),
        "the length fence runs before the bearer (a bad length without a token is 411)",
    ),
)

#: Mutants dropped because no check can see them (name -> why).
REMOVED: dict[str, str] = {
    "mem-fts-row-left-on-forget": (
        "equivalent in this store: every full-text read joins back to the records table and"
        " re-checks status = 'active', so a stale FTS row of a forgotten record can never"
        " reach an answer (nor use a prefilter slot: the LIMIT applies after that check);"
        " mem-dead-fts-rows-kept is the observable form, with the LIMIT before the check"
    ),
    "mem-score-weights-swapped": (
        "equivalent over HTTP: the Memory Worker has no clock control, so records a run can"
        " create are seconds old and their recency differs by < 1e-5; with either weighting"
        " keyword match alone decides every order the oracle does not already call a tie"
    ),
    "mem-amp-escaped-after-lt": (
        "not wire-observable: escaping happens when the caller renders the memory block"
        " (MEM-CONTAIN, model-side); the store returns text verbatim"
    ),
}
