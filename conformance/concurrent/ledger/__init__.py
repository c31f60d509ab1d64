"""The ledger binding as the linearizability checker's sequential specification
(:mod:`.model`)."""
