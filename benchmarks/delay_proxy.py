"""A loopback TCP proxy that delays every byte by a fixed one-way latency, each direction.

It stands for a store "20 ms away": the bytes a client sends reach the store ``delay_s`` later,
and the answer reaches the client ``delay_s`` after the store sent it — the round trip grows by
``2 * delay_s`` while throughput is untouched (chunks are queued with their due time, never
held back behind one another's delay).  It listens on 127.0.0.1 only and forwards only to the
loopback upstream it is given.  Used by ``bench_latency`` (never by a timed test).

:class:`TlsTerminator` puts TLS in front of a plain loopback store, for the https rows of
``bench_latency``: harness -> delay proxy (bytes as they are: TLS records, the handshake
delayed like everything else) -> terminator -> store.
"""

from __future__ import annotations

import heapq
import select
import socket
import ssl
import threading
import time
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


#: After the store closed, what the client still sends is read and dropped this long before the
#: client's side is closed too (a lingering close: an early answer such as a 413 sent before a
#: large body was read reaches the client instead of being destroyed by a reset).
LINGER_S = 2.0


def _answer_end(buf: bytes | bytearray) -> int | None:
    """Where the first whole answer in ``buf`` ends (the store frames every answer with a
    ``Content-Length``), or None while it is incomplete."""
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    length = 0
    for line in bytes(buf[:head_end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    end = head_end + 4 + length
    return end if len(buf) >= end else None


def tls_relay(
    tls: ssl.SSLSocket,
    up: socket.socket,
    idle_s: float = 60.0,
    stats: dict[str, int] | None = None,
    lose: frozenset[int] = frozenset(),
) -> None:
    """Relay both directions of one connection in ONE thread.

    An OpenSSL connection object must never be used by two threads at once.  The first version
    of this proxy relayed each direction in its own thread (``tls.recv`` in one, ``tls.sendall``
    in the other).  Traced: the client's pipelined pair is forwarded, the store answers the
    first request while the forwarding thread is still on its way back into ``SSL_read``, so
    ``SSL_read`` (reader thread) and ``SSL_write`` (the first answer) overlap on one connection;
    now and then ``SSL_read`` then failed with ``SSL_ERROR_SYSCALL`` and an empty error queue,
    which Python reports as a bare "EOF occurred in violation of protocol" and ``recv`` turns
    into ``b""`` (``suppress_ragged_eofs``).  The proxy took that for the client's close and
    closed the connection -- after the store had carried out the second request, before its
    answer was relayed: the "lost pipelined answer over TLS" of issue 11 (and a resend of it
    would carry it out twice).  Here one thread owns the TLS object, waits with ``select`` on
    both sockets and serves what the TLS object has already decrypted (``pending()``) before
    waiting on its socket.

    ``stats`` (counted into when given): ``pipelined`` (chunks from the client holding more than
    one request), ``closes_passed_on``, ``lost``, ``errors`` (and ``last_error``).
    ``lose`` (fault injection, for tests): the pipelined pairs (numbered from 1 over the
    terminator's life) whose second answer the relay loses on purpose, the way the two-thread
    version did: it relays the first answer, waits until the store has answered the second too
    (so it was carried out), and closes.
    """
    if stats is None:
        stats = {}
    tls.setblocking(False)
    up.setblocking(False)
    to_up = bytearray()
    to_tls = bytearray()
    writing: bytes | None = None  # a TLS write to retry with the same bytes (OpenSSL's rule)
    store_open = True  # the store still sends
    linger_until: float | None = None
    losing: bytearray | None = None  # the store's answers to a pair whose second is lost
    try:
        while True:
            if linger_until is not None and (time.monotonic() >= linger_until):
                return
            readable: list[socket.socket] = [tls]
            if store_open:
                readable.append(up)
            writable: list[socket.socket] = []
            if to_up:
                writable.append(up)
            if to_tls or writing is not None:
                writable.append(tls)
            ready_r: list[socket.socket]
            ready_w: list[socket.socket]
            if tls.pending():
                ready_r, ready_w = [tls], []
            else:
                wait = LINGER_S if linger_until is not None else idle_s
                ready_r, ready_w, _ = select.select(readable, writable, [], wait)
                if not ready_r and not ready_w:
                    return  # idle (or lingering) long enough
            if tls in ready_r:
                while True:
                    try:
                        data = tls.recv(65536)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                        break
                    if not data:  # the client closed: so does the relay
                        return
                    if linger_until is None:
                        to_up += data
                        if data.count(b" HTTP/1.1\r\n") > 1:
                            stats["pipelined"] = stats.get("pipelined", 0) + 1
                            if stats["pipelined"] in lose:
                                losing = bytearray()
                    if not tls.pending():
                        break
            if up in ready_r:
                answer: bytes | None
                try:
                    answer = up.recv(65536)
                except BlockingIOError:
                    answer = None
                except OSError:
                    answer = b""
                if answer == b"":
                    store_open = False
                elif answer and losing is None:
                    to_tls += answer
                elif answer and losing is not None:
                    losing += answer
                    first_end = _answer_end(losing)
                    if first_end is not None and _answer_end(losing[first_end:]) is not None:
                        tls.setblocking(True)
                        tls.sendall(bytes(to_tls) + bytes(losing[:first_end]))
                        stats["lost"] = stats.get("lost", 0) + 1
                        return  # the second answer is in: lost with the connection
            if up in ready_w and to_up:
                try:
                    sent = up.send(to_up)
                    del to_up[:sent]
                except BlockingIOError:
                    pass
                except OSError:  # the store closed while the client still sends: drop it
                    to_up.clear()
            if tls in ready_w or (writing is None and to_tls):
                if writing is None and to_tls:
                    writing = bytes(to_tls[:16384])
                    del to_tls[: len(writing)]
                if writing is not None:
                    try:
                        tls.send(writing)
                        writing = None
                    except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                        pass
            if not store_open and not to_tls and writing is None and linger_until is None:
                # Everything the store said is relayed: close the client's side for writing
                # and drain what it still sends for a while (a lingering close).
                try:  # the plain socket's shutdown: SSLSocket.shutdown would drop the TLS object
                    socket.socket.shutdown(tls, socket.SHUT_WR)
                except OSError:
                    pass
                stats["closes_passed_on"] = stats.get("closes_passed_on", 0) + 1
                to_up.clear()
                linger_until = time.monotonic() + LINGER_S
    except (OSError, ValueError) as exc:
        # A TLS failure or a socket closed under us (TlsTerminator.stop): counted, so a test can
        # see the relay never dropped a connection on its own.
        stats["errors"] = stats.get("errors", 0) + 1
        stats.setdefault("last_error", repr(exc))  # type: ignore[arg-type]
    finally:
        for s in (tls, up):
            try:
                s.close()
            except OSError:
                pass


class TlsTerminator:
    """TLS on 127.0.0.1 in front of a plain loopback store (``ctx``: a server context with
    its certificate), one thread per connection relaying both directions (:func:`tls_relay`).
    ``.port``; ``.stop()``; ``.connections`` (accepted so far); ``.stats`` (see
    :func:`tls_relay`, summed over the connections); ``lose``: see :func:`tls_relay`."""

    def __init__(
        self, upstream_url: str, ctx: ssl.SSLContext, lose: frozenset[int] = frozenset()
    ) -> None:
        parts = urlsplit(upstream_url)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the TLS terminator forwards to loopback only")
        self.upstream = (parts.hostname, parts.port or 80)
        self.ctx = ctx
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = self.sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self.lose = lose
        self.connections = 0
        self.stats: dict[str, int] = {}
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(30)
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except OSError:  # ssl.SSLError included
            raw.close()
            return
        try:
            up = socket.create_connection(self.upstream)
        except OSError:
            tls.close()
            return
        for s in (tls, up):  # each answer leaves at once (no Nagle wait behind the last one)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conns += [tls, up]
        tls_relay(tls, up, stats=self.stats, lose=self.lose)

    def stop(self) -> None:
        self.sock.close()
        for s in self._conns:
            try:
                s.close()
            except OSError:
                pass
