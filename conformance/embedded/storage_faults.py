"""Storage faults of the bundled store: which SQLite errors mean "storage unavailable".

A fault of the storage itself -- the disk is full, the file became read-only, an I/O error, the
database is locked past its busy timeout, the file is corrupt or not a database -- is not a bug
of the store and not the client's mistake: the server answers 503 with a one-line message
naming the cause (MEM-WIRE.18, LED-WIRE.10), logs one line when the fault starts and one when
it clears, and keeps serving; the next request after the fault clears succeeds.

Classified by SQLite's primary result code (Python 3.11+ exposes it on the exception), never by
the message text: a constraint violation or an SQL logic error is a bug of the store (500).
SQLite's messages for these codes are fixed strings ("database or disk is full", "attempt to
write a readonly database", ...) that carry no request data.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from typing import IO

# Primary SQLite result codes that are faults of the storage, not of the code.
_FAULT_CODES = frozenset(
    {
        3,  # SQLITE_PERM
        5,  # SQLITE_BUSY
        6,  # SQLITE_LOCKED
        7,  # SQLITE_NOMEM
        8,  # SQLITE_READONLY
        10,  # SQLITE_IOERR
        11,  # SQLITE_CORRUPT
        13,  # SQLITE_FULL
        14,  # SQLITE_CANTOPEN
        15,  # SQLITE_PROTOCOL
        22,  # SQLITE_NOLFS
        26,  # SQLITE_NOTADB
    }
)
_MAX_CAUSE = 160


def storage_fault(exc: BaseException) -> str | None:
    """The one-line cause when ``exc`` is a storage fault, else None."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int) or code & 0xFF not in _FAULT_CODES:
        return None
    cause = " ".join(str(exc).split()) or str(getattr(exc, "sqlite_errorname", "storage fault"))
    return cause[:_MAX_CAUSE]


def unavailable_message(cause: str) -> str:
    return f"storage unavailable: {cause}"


class FaultLog:
    """One log line when a component's storage starts failing (or its cause changes) and one
    when it works again -- never one per request, never a traceback."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._current: dict[str, str] = {}

    def _write(self, line: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            stream.write(f"{stamp} memspec-embedded: {line}\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def fault(self, component: str, cause: str) -> None:
        with self._lock:
            if self._current.get(component) == cause:
                return
            self._current[component] = cause
        self._write(f"{component} storage unavailable: {cause} (answering 503 until it clears)")

    def ok(self, component: str) -> None:
        if component not in self._current:  # the common case: no lock, no work
            return
        with self._lock:
            cause = self._current.pop(component, None)
        if cause is not None:
            self._write(f"{component} storage recovered (was: {cause})")
