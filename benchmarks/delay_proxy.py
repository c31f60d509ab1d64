"""A loopback TCP proxy that delays every byte by a fixed one-way latency, each direction.

It stands for a store "20 ms away": the bytes a client sends reach the store ``delay_s`` later,
and the answer reaches the client ``delay_s`` after the store sent it — the round trip grows by
``2 * delay_s`` while throughput is untouched (chunks are queued with their due time, never
held back behind one another's delay).  It listens on 127.0.0.1 only and forwards only to the
loopback upstream it is given.  Used by ``bench_latency`` (never by a timed test).
"""

from __future__ import annotations

import heapq
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit


class _Pipe:
    """One direction of one connection: read chunks, deliver each ``delay_s`` after it came."""

    def __init__(self, src: socket.socket, dst: socket.socket, delay_s: float) -> None:
        self.src, self.dst, self.delay_s = src, dst, delay_s
        self.queue: list[tuple[float, int, bytes]] = []
        self.cond = threading.Condition()
        self.closed = False
        self.seq = 0

    def start(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._deliver, daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                data = self.src.recv(65536)
                if not data:
                    break
                self._put(data)
        except OSError:
            pass
        self._put(b"")  # end of stream, delivered in order after the data

    def _put(self, data: bytes) -> None:
        with self.cond:
            self.seq += 1
            heapq.heappush(self.queue, (time.monotonic() + self.delay_s, self.seq, data))
            self.cond.notify()

    def _deliver(self) -> None:
        try:
            while True:
                with self.cond:
                    while not self.queue:
                        self.cond.wait()
                    due, _, data = self.queue[0]
                    wait = due - time.monotonic()
                    if wait > 0:
                        self.cond.wait(wait)
                        continue
                    heapq.heappop(self.queue)
                if not data:
                    self.dst.shutdown(socket.SHUT_WR)
                    return
                self.dst.sendall(data)
        except OSError:
            pass


class DelayProxy:
    """``DelayProxy(upstream_url, delay_s)``; ``.url`` to point a client at; ``.stop()``."""

    def __init__(self, upstream_url: str, delay_s: float) -> None:
        parts = urlsplit(upstream_url)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the delay proxy forwards to loopback only")
        self.upstream = (parts.hostname, parts.port or 80)
        self.delay_s = delay_s
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conns += [client, upstream]
            _Pipe(client, upstream, self.delay_s).start()
            _Pipe(upstream, client, self.delay_s).start()

    def stop(self) -> None:
        self._stop.set()
        self.sock.close()
        for s in self._conns:
            try:
                s.close()
            except OSError:
                pass

    def __enter__(self) -> DelayProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def measure_rtt(url: str, get: Callable[[str], object], n: int = 5) -> float:
    """Median seconds of ``n`` calls of ``get(url + "/healthz")`` (a sanity check of the delay)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        get(url + "/healthz")
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]
