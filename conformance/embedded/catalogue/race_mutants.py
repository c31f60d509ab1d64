"""Race mutants (observable only with concurrent clients) of either protocol (see the package doc).

Each opens a window at its racy point: the store commits, lets other requests in for a moment
(a tiny sleep, so that the race is reproducible — mutants exist only to test memspec) and starts
again.  ``memspec run --clients N`` must find each with a non-linearizable history.
"""

from conformance.embedded.catalogue import Entry

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "race-batch-split",
        "mutant",
        "memory",
        ("MEM-CAP.4", "MEM-WRITE.7", "MEM-STORE.13"),
        "a write batch is applied one candidate per transaction: another request can observe"
        " (or interleave with) half a batch",
        race=True,
    ),
    Entry(
        "race-dedup-unlocked",
        "mutant",
        "memory",
        ("MEM-WRITE.1", "MEM-WRITE.2", "MEM-STORE.13"),
        "the dedup lookup runs outside the write lock: two concurrent writes of one fact both"
        " insert it",
        race=True,
    ),
    Entry(
        "race-usage-rmw",
        "mutant",
        "memory",
        ("MEM-STORE.3", "MEM-STORE.13"),
        "a retrieve bumps useCount as read-then-write without the lock: concurrent retrieves"
        " lose bumps",
        race=True,
    ),
    Entry(
        "race-ledger-budget-unlocked",
        "mutant",
        "ledger",
        ("LED-BUDGET.2", "LED-REC.7"),
        "a save checks the budget outside its transaction: concurrent saves at maxRecords - 1"
        " held all succeed and the scope ends over its budget",
        race=True,
    ),
)
