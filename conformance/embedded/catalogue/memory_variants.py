"""Allowed variants of the Memory Worker: one other allowed choice each (see the package doc)."""

from conformance.embedded.catalogue import Entry

ENTRIES: tuple[Entry, ...] = ()
