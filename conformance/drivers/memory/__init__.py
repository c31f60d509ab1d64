"""The Memory Worker driver: the driver (:mod:`.driver`, ``MemoryDriver``; ops and args in its
docstring), the ops' default clauses and the capabilities a step needs (:mod:`.steps`) and a
``raw`` step's request and answer (:mod:`.raw`)."""
