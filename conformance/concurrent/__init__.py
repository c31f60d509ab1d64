"""Concurrent clients and a linearizability checker.

``workload``      a deterministic plan of operations per client, from a seed
``driver``        N client threads run a plan against a target and record a history
``checker``       Wing & Gong's search with Lowe's memoization, bounded, per partition
``memory_model``  the adapter to the reference memory model (the sequential specification)
``memory_*``      its parts: calls, states (chunked, Zobrist-hashed), hints, answer judging
``analysis``      events → checker operations per scope; shrinking a counterexample
``run``           the end-to-end check, the replay file, the report section

See docs/linearizability.md.
"""
