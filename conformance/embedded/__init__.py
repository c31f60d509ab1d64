"""The bundled store: a loopback HTTP server backed by SQLite (FTS5) serving the Memory Worker
protocol and the account-memory ledger binding.  It is memspec's default target and a second,
independent implementation of the wire rules that keeps the reference model honest."""

from conformance.embedded.memory.store import MemoryStore, WriteCounts
from conformance.embedded.server import ServerHandle, start_server

__all__ = ["MemoryStore", "ServerHandle", "WriteCounts", "start_server"]
