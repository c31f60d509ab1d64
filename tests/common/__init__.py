"""Helpers shared by the tests (never collected as tests), imported as ``tests.common.<name>``.

``memory_strategies`` / ``ledger_strategies``: Hypothesis strategies and builders over the
reference models; ``memory_store`` / ``ledger_store``: the bundled store in-process, clients
and raw sockets; ``memory_harness`` / ``ledger_harness``: the bundled store, drivers and broken
or misbehaving stores for the harness tests; ``audit``: values and captures for the audit tests.
"""
