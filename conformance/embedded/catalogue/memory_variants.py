"""Allowed variants of the Memory Worker: one other allowed choice each (see the package doc).

Every entry names the clauses whose text lists its choice among the accepted answers; the
harness must judge each one CONFORMANT (``tests/embedded/test_memory_variants.py``).
"""

from conformance.embedded.catalogue import Entry


def _v(name: str, clauses: tuple[str, ...], summary: str, conflicts: tuple[str, ...] = ()) -> Entry:
    return Entry(name, "variant", "memory", clauses, summary, conflicts=conflicts)


ENTRIES: tuple[Entry, ...] = (
    _v("ids-from-zero", ("MEM-STORE.9",), "each scope numbers its ids 0, 1, 2, ..."),
    _v(
        "ids-sparse",
        ("MEM-STORE.9",),
        "ids are mem:<scope>:1007, 1014, 1021, ... (base 1000, step 7)",
        ("ids-from-zero",),  # one numbering per store
    ),
    _v(
        "keywords-as-given",
        ("MEM-RECORD.5", "MEM-WIRE.16"),
        "a record written without keywords stores keywords [] instead of the text's tokens",
    ),
    _v(
        "ties-newest-first",
        ("MEM-SCORE.5",),
        "equal scores rank newest first, so a tie cut by the limit keeps the newest",
    ),
    _v(
        "last-used-at-on-mint",
        ("MEM-RECORD.4",),
        "a new record carries lastUsedAt = createdAt instead of no lastUsedAt",
    ),
    _v(
        "evict-newest-of-a-tie-first",
        ("MEM-CAP.2",),
        "among records equal on (last use or creation, creation) the later inserted goes first",
    ),
    _v(
        "retrieve-shows-usage-before-bump",
        ("MEM-STORE.3", "MEM-WIRE.11"),
        "a retrieve answer shows useCount/lastUsedAt from before its own bump",
    ),
    _v(
        "clock-a-day-behind",
        ("MEM-STORE.11",),
        "the store's clock runs a day behind the harness's",
    ),
    _v(
        "post-healthz-404",
        ("MEM-WIRE.2",),
        "POST /healthz answers 404 (the literal reading of 'non-POST is 405') instead of 405",
    ),
    _v(
        "error-reasons-reworded",
        ("MEM-WIRE.8",),
        "every 400 reason is worded differently (still naming the offending field)",
    ),
    _v(
        "null-optional-refused",
        ("MEM-WIRE.10",),
        "a JSON null for an optional field is a 400 naming it instead of being read as absent",
    ),
    _v(
        "no-match-token-cap",
        ("MEM-STORE.5",),
        "the prefilter ORs every distinct query token (no 24-longest trim)",
    ),
    _v(
        "fts-raw-text",
        ("MEM-STORE.5", "MEM-STORE.6"),
        "the full-text index holds the raw text (FTS5 ascii tokenizer) as the real Worker's does:"
        " a token glued to a non-ASCII letter is no prefilter hit",
    ),
    _v(
        "candidate-cap-doubled",
        ("MEM-STORE.6",),
        "the prefilter hands the engine 2 x max(50, 5 x limit) candidates",
    ),
    _v(
        "unresolved-supersedes-dropped",
        ("MEM-RECORD.4",),
        "a supersedes that resolves to no active record is not kept on the new record",
    ),
    _v(
        "unicode-newer-lowercase",
        ("MEM-WRITE.2",),
        "the dedup key is lower-cased by a newer Unicode (16.0) than the harness's Python knows:"
        " U+A7DC and U+019B are one key",
    ),
    _v(
        "write-201-on-insert",
        ("MEM-WIRE.22",),
        "/write answers 201 Created when the batch inserted a record (the seed names no success"
        " status: any 2xx is a success)",
    ),
    _v(
        "bom-refused",
        ("MEM-WIRE.7",),
        "a body starting with a UTF-8 byte-order mark is a 400 instead of being read without it",
    ),
)
