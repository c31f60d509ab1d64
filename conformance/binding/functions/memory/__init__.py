"""The memory seed's pure functions, one module per family (mirrors ``reference/memory/``)."""
