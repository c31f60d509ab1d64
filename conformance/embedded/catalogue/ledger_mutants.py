"""Mutants of the ledger binding (see the package doc)."""

from conformance.embedded.catalogue import Entry

ENTRIES: tuple[Entry, ...] = ()
