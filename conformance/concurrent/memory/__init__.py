"""The Memory Worker as the linearizability checker's sequential specification: the step
(:mod:`.model`), an operation as the model reads it (:mod:`.calls`), a scope's state
(:mod:`.state`), the indexes every state of a search shares (:mod:`.hints`) and judging an
answer (:mod:`.answers`)."""
