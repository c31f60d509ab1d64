"""Test servers on 127.0.0.1: the accept loop every hand-written one shares."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


class Listener:
    """Accepts on ``sock`` in a daemon thread until it is closed; connection *n* (from 1, in
    the order accepted) is handled by ``on_connection(conn, n)`` in a daemon thread of its own.
    ``count``: connections accepted so far."""

    def __init__(
        self, sock: socket.socket, on_connection: Callable[[socket.socket, int], None]
    ) -> None:
        self.sock = sock
        self.count = 0
        self._on_connection = on_connection
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1  # only this thread writes it
            args = (conn, self.count)
            threading.Thread(target=self._on_connection, args=args, daemon=True).start()


def serve_connections(
    sock: socket.socket, on_connection: Callable[[socket.socket, int], None]
) -> Listener:
    """Start a :class:`Listener` on ``sock``."""
    return Listener(sock, on_connection)
