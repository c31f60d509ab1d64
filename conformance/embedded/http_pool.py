"""The bundled store's listening server: a ``ThreadingHTTPServer`` with a listen backlog of 128
and a bounded pool of worker threads (MEM-WIRE.19).  While every worker is busy, new
connections wait in the kernel's backlog and a connection idle between requests is closed to
free a worker; ``stop()`` is never blocked behind a full pool."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from socket import AF_INET6, SHUT_RDWR, socket
from typing import IO, Any

from conformance.embedded.catalogue import Quirks
from conformance.embedded.memory.store import MemoryStore
from conformance.embedded.storage_faults import FaultLog

# Resource bounds (MEM-WIRE.19).  A connection waits at most IDLE_TIMEOUT_S for the first byte
# of a request, then must deliver the whole request head within HEAD_TIMEOUT_S and the body
# within BODY_TIMEOUT_S (deadlines for the whole head/body, not per read), else it is dropped.
# At most MAX_WORKERS connections are served at once; more wait in the listen backlog.
LISTEN_BACKLOG = 128
MAX_WORKERS = 128
IDLE_TIMEOUT_S = 30.0
HEAD_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0


class Server(ThreadingHTTPServer):  # long: what the handler reads per request + the pool's state
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG  # the stdlib's 5 drops SYNs under a burst of clients

    # Set by start_server before serving.
    store: MemoryStore
    ledger: Any | None
    token: bytes | None
    require_auth: bool
    test_control: bool
    access_log: IO[str] | None
    quirks: Quirks
    faults: FaultLog
    idle_timeout: float = IDLE_TIMEOUT_S
    head_timeout: float = HEAD_TIMEOUT_S
    body_timeout: float = BODY_TIMEOUT_S

    def server_bind(self) -> None:
        self.stopping = False
        self.accepting = True
        self.in_flight = 0
        self.idle = threading.Condition()
        self.connections: set[socket] = set()
        self.slots = threading.BoundedSemaphore(MAX_WORKERS)
        self.saturated = False
        self.waiting: set[socket] = set()  # connections idle between requests
        super().server_bind()

    # ---- a bounded number of worker threads

    def process_request(self, request: Any, client_address: Any) -> None:
        # Wait for a free worker (the kernel's backlog holds the next connections meanwhile),
        # closing connections that sit idle between requests to free one; poll so that stop()
        # is never blocked behind a full pool.
        while not self.slots.acquire(blocking=False):
            self.saturated = True
            self._close_one_idle()
            if self.slots.acquire(timeout=0.05):
                break
            if not self.accepting:
                self.shutdown_request(request)
                return
        self.saturated = False
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def _close_one_idle(self) -> None:
        """End one connection that waits for its next request (a client reconnects, as after
        any keep-alive timeout); its worker then serves a waiting connection."""
        with self.idle:
            if not self.waiting:
                return
            conn = self.waiting.pop()
        try:
            conn.shutdown(SHUT_RDWR)
        except OSError:
            pass

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class Server6(Server):
    address_family = AF_INET6
