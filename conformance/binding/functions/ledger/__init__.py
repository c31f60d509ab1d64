"""The ledger seed's pure functions, one module per family (mirrors ``reference/ledger/``)."""
