"""Test servers on 127.0.0.1: the accept loop every hand-written one shares."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


def serve_connections(sock: socket.socket, on_connection: Callable[[socket.socket], None]) -> None:
    """Accept on ``sock`` in a daemon thread until it is closed, each connection handled by
    ``on_connection`` in a daemon thread of its own."""

    def accept() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=on_connection, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
