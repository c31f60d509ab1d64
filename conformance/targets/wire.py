"""Reading one HTTP/1.1 answer off a socket: the client's own response parser.

:mod:`conformance.targets.base` writes requests by hand; this reads what comes back.  It
replaces :class:`http.client.HTTPResponse`, whose header parsing goes through
:mod:`email.parser` (tens of microseconds an answer, several reads of a buffered file per
answer).  Here the socket is read in large chunks into one buffer (a whole answer usually
arrives in one ``recv``) and only the fields the client uses are looked at:

* the status line: ``HTTP/1.x`` (``HTTP/1.0`` and ``HTTP/0.9`` count as 1.0), a three-digit
  status 100–999, the reason phrase (latin-1, stripped);
* interim answers (1xx but 101) are skipped, at most :data:`MAX_INTERIM` of them; a 101 is an
  answer without a body after which the connection is not used again (we never ask to switch);
* at most :data:`MAX_HEADERS` header lines (folded lines count) of at most :data:`MAX_LINE`
  bytes each (the status line, chunk-size and trailer lines too); a folded line (obs-fold)
  continues the field above it, joined by one space; a line that is no ``name: value`` field is
  ignored; lines may end in CRLF or a bare LF;
* the body, framed as RFC 9112 section 6.3 says: none for HEAD, 1xx, 204 and 304; chunked when
  ``chunked`` is the last transfer coding (a chunk's data must be followed by a line end, the
  trailer lines are bounded like header lines); else ``Content-Length`` (one value, or a list of
  equal values, digits only); else up to the close of the connection.  Two different
  ``Content-Length`` values, or ``Content-Length`` beside ``Transfer-Encoding``, are framing
  a client must reject (RFC 9112 6.3): a :class:`FramingConflict`, never a body to judge.
  The body is read up to ``limit`` bytes: one byte more and the answer is cut
  (``truncated``) and the connection given up;
* keep-alive: an ``HTTP/1.1`` answer keeps the connection unless ``Connection`` mentions
  ``close``; an ``HTTP/1.0`` one only with ``keep-alive`` (``Connection``, ``Keep-Alive`` or
  ``Proxy-Connection``).  An answer without a length, with ``Transfer-Encoding`` beside
  ``Content-Length`` (a smuggling shape), or with transfer codings not ending in ``chunked``
  never leaves its connection for reuse.

Whatever breaks the framing raises a :class:`WireError` (never anything else but the
socket's own ``OSError``/:class:`ssl.SSLError`): the caller turns it into an exchange with a
transport error.  The class names and messages are those :mod:`http.client` used, so reports
read as before.  Content codings are not undone here (the caller does, bounded).

The deadline of a request is enforced outside (a watchdog shuts the socket down); the reader
also gives up by itself at ``deadline`` between two reads.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Longest line (status line, header line, chunk size, trailer), line end included.
MAX_LINE = 65536
#: Most header lines in one answer (folded continuation lines count), and trailer lines.
MAX_HEADERS = 100
#: Most interim (1xx) answers skipped before the final one.
MAX_INTERIM = 16
#: Bytes asked for in one ``recv``: a whole answer of the protocols usually fits.
RECV_SIZE = 65536

_WANTED = frozenset(
    {
        b"content-type",
        b"content-encoding",
        b"content-length",
        b"transfer-encoding",
        b"connection",
        b"keep-alive",
        b"proxy-connection",
    }
)
_HEX = frozenset(b"0123456789abcdefABCDEF")
#: The usual status line; any other form goes the long way (:func:`_status`).
_STATUS = re.compile(rb"HTTP/1\.([0-9]) ([1-9][0-9][0-9])(?: ([^\r\n]*))?\r\n")
#: A field the client uses, on one line of a head without folded lines.
_FIELD = re.compile(
    rb"^(content-type|content-encoding|content-length|transfer-encoding|connection|keep-alive"
    rb"|proxy-connection):([^\r\n]*)\r$",
    re.IGNORECASE | re.MULTILINE,
)


class WireError(Exception):
    """The answer breaks HTTP/1.1 framing; the connection cannot be used again."""


class RemoteDisconnected(WireError):
    """The connection closed before a single byte of an answer came."""


class BadStatusLine(WireError):
    def __init__(self, line: str) -> None:
        super().__init__(line or repr(line))


class UnknownProtocol(WireError):
    pass


class LineTooLong(WireError):
    def __init__(self, what: str) -> None:
        super().__init__(f"got more than {MAX_LINE} bytes when reading {what}")


class TooManyHeaders(WireError):
    pass


class IncompleteRead(WireError):
    def __init__(self, got: int, expected: int | None = None) -> None:
        more = f", {expected} more expected" if expected is not None else ""
        super().__init__(f"IncompleteRead({got} bytes read{more})")


class BadChunk(WireError):
    pass


class FramingConflict(WireError):
    """Two different ``Content-Length`` values, or ``Content-Length`` with
    ``Transfer-Encoding``: the answer's end cannot be known (RFC 9112 6.3)."""


class DeadlinePassed(Exception):
    """The request's deadline passed between two reads."""


@dataclass(slots=True)
class Answer:
    status: int
    reason: str
    data: bytes
    #: the body was longer than the bound: ``data`` holds its first ``limit`` bytes
    truncated: bool
    content_type: str
    #: content codings, then transfer codings other than ``chunked``, as sent (the last one
    #: applied last): the caller undoes them from the end
    encoding: str
    #: the connection may carry another request (answer complete, its end known, kept alive)
    reusable: bool
    #: the target said it closes the connection after this answer (or spoke HTTP/1.0)
    will_close: bool
    #: bytes that came after this answer (the start of a pipelined request's answer)
    rest: bytes


class _Source:
    """The socket and the bytes read from it but not yet used (``buf[pos:]``)."""

    __slots__ = ("sock", "buf", "pos", "eof", "chunk", "deadline")

    def __init__(
        self, sock: socket.socket, pending: bytes, chunk: int, deadline: float | None
    ) -> None:
        self.sock = sock
        self.buf = bytearray(pending)
        self.pos = 0
        self.eof = False
        self.chunk = chunk
        self.deadline = deadline

    def more(self) -> bool:
        """Read once more; False at the end of the connection."""
        if self.eof:
            return False
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlinePassed()
        if self.pos > RECV_SIZE:  # drop what was used, so the buffer stays small
            del self.buf[: self.pos]
            self.pos = 0
        data = self.sock.recv(self.chunk)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def line(self, what: str) -> bytes | None:
        """The next line without its line end (None: the connection ended before one)."""
        buf = self.buf
        seen = 0  # bytes past pos already searched (a line dripping in is searched once)
        while True:
            nl = buf.find(b"\n", self.pos + seen)
            if nl >= 0:
                if nl - self.pos >= MAX_LINE:
                    raise LineTooLong(what)
                line = bytes(buf[self.pos : nl])
                self.pos = nl + 1
                return line[:-1] if line.endswith(b"\r") else line
            seen = len(buf) - self.pos
            if seen > MAX_LINE:
                raise LineTooLong(what)
            if not self.more():
                return None


def read_answer(
    sock: socket.socket,
    pending: bytes,
    method: str,
    limit: int,
    deadline: float | None = None,
    chunk: int = RECV_SIZE,
) -> Answer:
    """The next answer on ``sock`` (``pending``: bytes of it already read).  ``limit``: the
    most body bytes kept.  ``chunk``: bytes asked for per ``recv`` (tests read one at a time)."""
    src = _Source(sock, pending, chunk, deadline)
    interim = 0
    while True:
        version, status, reason, fields = _head(src)
        if 100 <= status < 200 and status != 101:
            interim += 1
            if interim > MAX_INTERIM:
                raise WireError(f"more than {MAX_INTERIM} interim (1xx) answers")
            continue
        break
    return _body(src, version, status, reason, fields, method, limit)


def _head(src: _Source) -> tuple[int, int, str, dict[bytes, list[bytes]]]:
    """(version 10 or 11, status, reason, the wanted fields) of the next answer's head."""
    buf = src.buf
    # The status line first, checked as soon as it is in (a target sending garbage and then
    # nothing is told at once, not at its deadline).
    seen = 0
    while True:
        nl = buf.find(b"\n", src.pos + seen)
        if nl >= 0:
            break
        seen = len(buf) - src.pos
        if seen > MAX_LINE:
            raise LineTooLong("status line")
        if not src.more():
            if len(buf) == src.pos:
                raise RemoteDisconnected("Remote end closed connection without response")
            nl = len(buf)  # the connection ended: what came is the status line
            break
    start = src.pos
    if nl - start >= MAX_LINE:
        raise LineTooLong("status line")
    version, status, reason = _status(bytes(buf[start : nl + 1]))
    # Fast path: the status line and every header line end in CRLF, the head in CRLF CRLF.
    if nl > start and buf[nl - 1] == 13:
        end = buf.find(b"\r\n\r\n", nl - 1)
        if end >= 0:
            stop = max(end + 2, nl + 1)  # past the last header line's CRLF
            count = buf.count(b"\n", nl + 1, stop)
            if count == buf.count(b"\r\n", nl + 1, stop):  # no bare LF: no earlier end
                if count > MAX_HEADERS:
                    raise TooManyHeaders(f"got more than {MAX_HEADERS} headers")
                folded = buf.find(b"\n ", nl, end) >= 0 or buf.find(b"\n\t", nl, end) >= 0
                if stop - nl > MAX_LINE - 1 or folded:
                    block = bytes(buf[nl + 1 : end]).split(b"\r\n") if count else []
                    if block and max(map(len, block)) >= MAX_LINE - 1:
                        raise LineTooLong("header line")
                    fields = _fields(block)
                else:
                    fields = {}
                    for name, value in _FIELD.findall(buf, nl + 1, stop):
                        fields.setdefault(name.lower(), []).append(value.strip(b" \t"))
                src.pos = end + 4
                return version, status, reason, fields
    # Line by line: bare LF line ends, or the head not all in yet.
    src.pos = min(nl + 1, len(buf))
    lines = []
    while True:
        line = src.line("header line")
        if not line:  # the blank line, or the end of the connection
            break
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise TooManyHeaders(f"got more than {MAX_HEADERS} headers")
    return version, status, reason, _fields(lines)


def _status(raw: bytes) -> tuple[int, int, str]:
    m = _STATUS.fullmatch(raw)
    if m is not None:  # the usual form: "HTTP/1.1 200 OK" CRLF
        return 10 if m[1] == b"0" else 11, int(m[2]), (m[3] or b"").decode("latin-1").strip()
    line = raw.decode("latin-1")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise BadStatusLine(line)
    code = parts[1]
    if len(code) != 3 or not code.isascii() or not code.isdigit() or code[0] == "0":
        raise BadStatusLine(line)
    version = parts[0]
    if version in ("HTTP/1.0", "HTTP/0.9"):
        v = 10
    elif version.startswith("HTTP/1."):
        v = 11
    else:
        raise UnknownProtocol(version)
    return v, int(code), parts[2].strip() if len(parts) > 2 else ""


def _fields(lines: list[bytes]) -> dict[bytes, list[bytes]]:
    """The fields the client uses, by lower-case name, each value stripped."""
    out: dict[bytes, list[bytes]] = {}
    last: list[bytes] | None = None  # the values of the field a folded line continues
    for line in lines:
        if line[:1] in (b" ", b"\t"):  # obs-fold: continues the field above
            if last is not None:
                last[-1] = (last[-1] + b" " + line.strip(b" \t")).strip(b" \t")
            continue
        name, sep, value = line.partition(b":")
        key = name.lower()
        if not sep or key not in _WANTED:
            last = None  # not a field we use, or not a field at all: ignored
            continue
        last = out.setdefault(key, [])
        last.append(value.strip(b" \t"))
    return out


def _text(values: list[bytes] | None) -> str:
    if not values:
        return ""
    return ", ".join(v.decode("latin-1") for v in values).replace("\r", " ")


def _length(values: list[bytes]) -> int | None:
    """The one ``Content-Length`` the values agree on (None: not a valid length); two
    different lengths are a :class:`FramingConflict`."""
    found: set[bytes] = set()
    for v in values:
        found.update(p.strip(b" \t") for p in v.split(b","))
    if len(found) > 1 and all(f.isdigit() for f in found):
        if len({int(f) for f in found}) > 1:
            raise FramingConflict("conflicting Content-Length values")
        found = {b"%d" % int(next(iter(found)))}
    if len(found) != 1:
        return None
    (one,) = found
    if not one.isdigit():
        return None
    return int(one) if len(one) <= 18 else 10**18


_Make = Callable[[bytes, bool, bool], Answer]


def _body(
    src: _Source,
    version: int,
    status: int,
    reason: str,
    fields: dict[bytes, list[bytes]],
    method: str,
    limit: int,
) -> Answer:
    will_close, encoding, chunked, keep_ok, length, no_body = _framing(
        version, status, fields, method
    )
    ctype = _text(fields.get(b"content-type"))

    def make(data: bytes, truncated: bool, complete: bool) -> Answer:
        return Answer(
            status,
            reason,
            data,
            truncated,
            ctype,
            encoding,
            keep_ok and complete and not truncated,
            will_close,
            bytes(src.buf[src.pos :]),
        )

    if no_body:
        return make(b"", False, True)
    if chunked:
        return _chunked(src, limit, make)
    if length is not None:
        return _by_length(src, length, limit, make)
    buf = src.buf
    # Up to the close of the connection.
    while len(buf) - src.pos <= limit and src.more():
        pass
    data = bytes(buf[src.pos : src.pos + limit])
    truncated = len(buf) - src.pos > limit
    src.pos = len(buf)
    return make(data, truncated, False)


def _framing(
    version: int, status: int, fields: dict[bytes, list[bytes]], method: str
) -> tuple[bool, str, bool, bool, int | None, bool]:
    """How an answer's body is framed, from its head: whether the connection closes after it,
    its content (and extra transfer) codings, whether it is chunked, whether the connection
    may be kept if the body is read whole, its declared length, and whether it has no body."""
    conn = _text(fields.get(b"connection")).lower()
    if version == 11:
        will_close = "close" in conn
    else:
        will_close = not (
            fields.get(b"keep-alive")
            or "keep-alive" in conn
            or "keep-alive" in _text(fields.get(b"proxy-connection")).lower()
        )
    encoding = _text(fields.get(b"content-encoding"))
    te = fields.get(b"transfer-encoding")
    if te is not None and b"content-length" in fields:
        raise FramingConflict("Content-Length together with Transfer-Encoding")
    chunked = False
    keep_ok = status != 101
    if te is not None:
        codings = [c for c in _text(te).lower().replace(" ", "").split(",") if c]
        chunked = bool(codings) and codings[-1] == "chunked"
        others = codings[:-1] if chunked else codings
        if others:  # transfer codings besides chunked: undone like content codings
            encoding = ", ".join(filter(None, [encoding, *others]))
        if not chunked or b"content-length" in fields:
            keep_ok = False  # a body that ends with the connection, or a smuggling shape
    length: int | None = None
    if te is None and b"content-length" in fields:
        length = _length(fields[b"content-length"])
    no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
    if not no_body and not chunked and length is None:
        will_close = True  # the body ends with the connection
    keep_ok = keep_ok and not will_close
    return will_close, encoding, chunked, keep_ok, length, no_body


def _by_length(src: _Source, length: int, limit: int, make: _Make) -> Answer:
    """A body of a declared ``length``: read whole, or its first ``limit`` bytes (truncated)."""
    buf = src.buf
    want = min(length, limit + 1)
    while len(buf) - src.pos < want:
        if not src.more():
            got = len(buf) - src.pos
            raise IncompleteRead(got, length - got)
    start = src.pos
    if length > limit:
        src.pos = start + limit + 1
        return make(bytes(buf[start : start + limit]), True, False)
    src.pos = start + length
    return make(bytes(buf[start : src.pos]), False, True)


def _chunked(src: _Source, limit: int, make: _Make) -> Answer:
    body = bytearray()
    buf = src.buf
    while True:
        line = src.line("chunk size")
        if line is None:
            raise IncompleteRead(len(body))
        size_text = line.split(b";", 1)[0].strip(b" \t")
        if not size_text or not _HEX.issuperset(size_text):
            raise BadChunk(f"invalid chunk size {size_text!r}")  # cut where shown
        size = int(size_text, 16)
        if size == 0:
            break
        take = min(size, limit + 1 - len(body))
        while len(buf) - src.pos < take:
            if not src.more():
                raise IncompleteRead(len(body) + len(buf) - src.pos, size)
        body += buf[src.pos : src.pos + take]
        src.pos += take
        if len(body) > limit:
            return make(bytes(body[:limit]), True, False)
        while len(buf) - src.pos < 2 and src.more():
            pass
        if buf[src.pos : src.pos + 2] == b"\r\n":
            src.pos += 2
        elif buf[src.pos : src.pos + 1] == b"\n":
            src.pos += 1
        elif len(buf) == src.pos:
            raise IncompleteRead(len(body))
        else:
            raise BadChunk("chunk data not followed by a line end (a chunk longer than its size)")
    # The trailer: lines up to a blank one (a target closing instead ends it too).
    count = 0
    while True:
        line = src.line("trailer line")
        if line is None:
            return make(bytes(body), False, False)
        if not line:
            return make(bytes(body), False, True)
        count += 1
        if count > MAX_HEADERS:
            raise TooManyHeaders(f"got more than {MAX_HEADERS} trailer lines")
