"""Mutants of the Memory Worker (see the package doc)."""

from conformance.embedded.catalogue import Entry

ENTRIES: tuple[Entry, ...] = ()
