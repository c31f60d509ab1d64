"""Race mutants (observable only with concurrent clients) of either protocol (see the package doc)."""

from conformance.embedded.catalogue import Entry

ENTRIES: tuple[Entry, ...] = ()
