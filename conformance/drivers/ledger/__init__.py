"""The ledger driver: the driver (:mod:`.driver`, ``LedgerDriver``; ops and args in its
docstring), the op table, the run's clock and the pure parts of a step (:mod:`.steps`), the
isolation checks (:mod:`.setup`) and what is kept of a step in flight (:mod:`.ahead`)."""
