"""The account memory ledger (seed 003), as pure functions over a frozen ``LedgerState``.

Clauses: ``specs/ledger.md`` (``LED-<AREA>.<n>``).  Modules: ``records`` (the value types),
``lifecycle`` (save, list, supersede, delete, propose, approve, reject), ``intervals``
(validity and as-of reads), ``expiry``, ``conflicts``, ``budget``, ``consolidation`` (settings,
vocabulary, gate), ``runs``, ``packet``, ``search``, ``credentials``, ``timefmt``, ``outcome``
and ``wire`` (the binding as ``handle(state, method, params, now)``).
"""
