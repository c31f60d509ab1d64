"""Concurrent clients and a linearizability checker.

``workload``      a deterministic plan of operations per client, from a seed
``driver``        N client threads run a plan against a target and record a history
``checker``       Wing & Gong's search with Lowe's memoization, bounded, per partition
``memory``        the adapter to the reference memory model (the sequential specification):
                  ``model`` and its parts ``calls``, ``state`` (chunked, Zobrist-hashed),
                  ``hints``, ``answers`` (answer judging)
``ledger``        the adapter to the reference ledger: ``model``
``analysis``      events → checker operations per scope; shrinking a counterexample
``run``           the end-to-end check, the replay file, the report section

See docs/linearizability.md.
"""
