"""A hostile Memory Worker: the bundled store behind a proxy that misbehaves in one chosen way.

The proxy forwards well-formed requests to a real bundled store (so a run gets far enough to
meet the misbehaviour) and answers the probe honestly unless the mode says otherwise; then, per
mode, it hangs, drips, lies, bloats, nests, echoes the token, … (see :data:`MODES`).  Used by
``tests/hostile/test_hostile_targets.py`` and ``benchmarks/bench_hostile.py``.

It is a test fixture, not memspec: it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import gzip
import html
import http.client
import json
import re
import socketserver
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any

#: mode -> what the target does (the docs/hostile-targets.md table is built from these).
MODES: dict[str, str] = {
    "never-answers": "accepts connections and never answers, /healthz included",
    "drips": "answers data routes one byte every 0.2 s, forever",
    "closes-mid-body": "declares 4000 bytes, sends 10, closes",
    "500s": "answers every data route 500",
    "html": "answers data routes with an HTML page instead of JSON",
    "truncated-json": "answers data routes with JSON cut off in the middle",
    "gigantic-json": "streams an endless JSON array (chunked, no end)",
    "deeply-nested-json": "answers 100 000 nested arrays",
    "nan": "answers NaN, Infinity and 1e999 in otherwise good answers",
    "lone-surrogates": "answers strings holding lone surrogates (\\ud800)",
    "wrong-content-type": "the store's answers, labelled text/html",
    "stacked-compression": "257 bytes of gzip(gzip(deflate)) that inflate to 1 GiB",
    "redirect": "answers data routes 307 to another host",
    "token-echo": "echoes the token in every form: JSON \\u escapes (mixed-case hex), \\/,"
    " headers, reason phrase, status line, /healthz",
    "duplicate-ids": "the store's answers with every record id the same",
    "ids-reused-after-forget": "hands a forgotten record's id to the next record listed",
    "time-backwards": "the store's answers with createdAt running backwards",
    "dies-after-probe": "answers the probe, then closes its listening socket",
    # -- round two (issue 23) ------------------------------------------------------------
    "million-records": "answers every data route 200 with 1 000 000 tiny records (3 MB)",
    "huge-texts": "answers every data route 200 with one record holding 4 MiB of text",
    "token-cuts": "puts the token (as is, in another case, base64 plain/url-safe/Basic at"
    " every alignment, hex, %-encoded once and twice, HTML refs without ';', repr-escaped)"
    " at every offset a cut of 40-200 characters can land on, in bodies, reason phrases,"
    " broken status lines and Content-Type",
    "terminal-escapes": "ESC sequences, C1 controls, DEL and bidi overrides in Content-Type,"
    " Content-Encoding, reason phrases, broken status lines and JSON bodies",
    "huge-health": 'answers /healthz 200 with 2.9 MB that is not {"ok": true}',
    "conflicting-length": "the store's answers with two different Content-Length values, or"
    " Content-Length beside chunked Transfer-Encoding",
    "userinfo": "an honest store; the run's URL carries user:password@ (never sent, never shown)",
}

#: The modes of the first round (issue 10's list).
ROUND_ONE = tuple(list(MODES)[:18])

#: Modes that bloat every answer: benchmarked against both protocols.
BLOAT_MODES = ("million-records", "huge-texts")

_DRIP_S = 0.2


def _json_escape_all(text: str, upper: bool) -> str:
    out = []
    for i, c in enumerate(text):
        if c == "/":
            out.append("\\/")
        elif i % 2 == 0:
            h = f"{ord(c):04x}"
            out.append("\\u" + (h.upper() if upper else h))
        else:
            out.append(c)
    return "".join(out)


#: ``gzip(gzip(deflate(1 GiB of spaces)))`` — 257 bytes, made once by :func:`make_bomb` (which
#: takes seconds) and kept here.
BOMB = base64.b64decode(
    "H4sIANDODmsC/5Pv5mC4cI4vm+n/2zuKfnMCJdouZkpcashwFGBhO83kkTVL5PIDhwY1Dxa54z4cTawlgjoMjUc2MkeJcDsoBuRq+NxgPvl/zuJ1dU+nz37+5N/HNKsq08j/X/OTvxYVsjAwMPDceXL+5p3l24//On33/N1aoEjCC779dZLn+5jq+a9tO8MIFGku//f39qU37Qcuv/x4QwYoYFChfZ7fPm17w+3pq5/aVgNFDjz4K8YDpBtEDgJJhgxBMEcMzOlA5ozKjMqMyozKjMqMyhCSmbb4e8KBH58Kn1dV133ZaKa/bL74P+atExYL73vDzwAA0c80ZxgHAAA="
)


def make_bomb() -> bytes:
    """About 250 bytes that inflate (three layers deep) to 1 GiB of spaces."""
    inner = zlib.compressobj(9)
    raw = b""
    chunk = b" " * (1 << 20)
    for _ in range(1024):
        raw += inner.compress(chunk)
    raw += inner.flush()
    return gzip.compress(gzip.compress(raw, 9), 9)


def _b64_forms(secret: str) -> list[str]:
    """base64 of ``secret`` at each of the three alignments, standard and url-safe, and the
    ``Basic`` form of ``user:secret``."""
    out = []
    for pad in ("", "a", "ab"):
        raw = (pad + secret + "!").encode()
        out.append(base64.b64encode(raw).decode())
        out.append(base64.urlsafe_b64encode(raw).decode())
    out.append("Basic " + base64.b64encode(f"ci-user:{secret}".encode()).decode())
    return out


def token_forms(secret: str) -> list[str]:
    """Every encoding of ``secret`` the token-cuts mode echoes."""
    pct = "".join(f"%{ord(c):02X}" for c in secret)
    return [
        secret,
        secret.swapcase(),
        secret.upper(),
        *_b64_forms(secret),
        secret.encode().hex(),
        secret.encode().hex().upper(),
        pct,
        pct.replace("%", "%25"),  # percent-encoded twice
        "".join(f"&#{ord(c)}" for c in secret),  # HTML numeric refs without ';'
        "".join(f"&#x{ord(c):x}" for c in secret),
        repr(secret + "'\\")[1:-1],
        json.dumps(secret)[1:-1],
    ]


class _Handler(BaseHTTPRequestHandler):
    server: HostileServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ---------------------------------------------------------------------

    def _body(self) -> bytes | None:
        cl = self.headers.get("Content-Length")
        if cl is None or not cl.strip().isdigit() or self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            return None
        n = int(cl.strip())
        if n > 524288:
            self.close_connection = True
            return None
        return self.rfile.read(n)

    def _raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def _answer(
        self,
        status: int,
        body: bytes,
        ctype: str = "application/json",
        extra: list[tuple[str, str]] | None = None,
        reason: str | None = None,
    ) -> None:
        head = [f"HTTP/1.1 {status} {reason or http.client.responses.get(status, 'X')}"]
        head.append(f"Content-Type: {ctype}")
        head.append(f"Content-Length: {len(body)}")
        if getattr(self, "_broken", False):
            if self._n % 2:  # a second, different length
                head.append(f"Content-Length: {len(body) + 7}")
            else:  # the length beside chunked framing
                head.append("Transfer-Encoding: chunked")
                body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
        for k, v in extra or []:
            head.append(f"{k}: {v}")
        self._raw(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    def _forward(self, body: bytes) -> tuple[int, bytes, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=10)
        try:
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() in ("authorization", "content-type")
            }
            headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body, headers=headers)
            r = conn.getresponse()
            return r.status, r.read(), r.getheader("Content-Type") or "application/json"
        finally:
            conn.close()

    # -- dispatch ---------------------------------------------------------------------

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def _handle(self) -> None:
        srv = self.server
        mode = srv.mode
        path = self.path.split("?", 1)[0]
        if srv.dead:  # gone: a kept-alive connection is dropped without an answer
            self.close_connection = True
            return
        with srv.lock:
            srv.requests += 1
            n = srv.requests
        # conflicting-length: every answer after the probe (the proxy's own 411s included)
        self._broken = (
            mode == "conflicting-length" and n > srv.probe_requests and path != "/healthz"
        )
        self._n = n
        body = self._body() if self.command != "GET" else b""
        if body is None:
            self._answer(411, b'{"error":"length required"}')
            return
        token = srv.token
        if mode == "token-echo" and n > srv.probe_requests:
            self._echo(n, path, token)
            return
        if mode == "huge-health" and path == "/healthz":
            self._answer(200, b'{"ok":false,"pad":"' + b"x" * 2_900_000 + b'"}')
            return
        if mode == "userinfo":
            srv.seen.append(
                self.headers.get("Host", "") + " " + self.headers.get("Authorization", "")
            )
        honest = path == "/healthz" or n <= srv.probe_requests or path.startswith("/ledger/_test/")
        if honest:
            status, data, ctype = self._forward(body)
            if n == srv.probe_requests and mode == "dies-after-probe":
                self._answer(status, data, ctype)
                srv.die()
                return
            self._answer(status, data, ctype)
            return
        if mode == "million-records":
            self._answer(200, srv.million)
            return
        if mode == "huge-texts":
            self._answer(200, srv.huge_text)
            return
        if mode == "token-cuts":
            self._token_cut(n, token)
            return
        if mode == "terminal-escapes":
            self._escapes(n)
            return
        if mode == "drips":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
            try:
                while not srv.stopping:
                    self._raw(b" ")
                    time.sleep(_DRIP_S)
            except OSError:
                pass
            self.close_connection = True
            return
        if mode == "closes-mid-body":
            self._raw(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
                b'{"records"'
            )
            self.close_connection = True
            return
        if mode == "500s":
            self._answer(500, b'{"error":"internal"}')
            return
        if mode == "html":
            self._answer(200, b"<html><body><h1>It works!</h1></body></html>", "text/html")
            return
        if mode == "truncated-json":
            self._answer(200, b'{"records": [{"id": "mem:x:1", "text": "half')
            return
        if mode == "gigantic-json":
            self._raw(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            piece = b"[" + b'"xxxxxxxxxxxxxxxx",' * 3000
            frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            try:
                while not srv.stopping:
                    self._raw(frame)
            except OSError:
                pass
            self.close_connection = True
            return
        if mode == "deeply-nested-json":
            self._answer(200, b"[" * 100_000 + b"]" * 100_000)
            return
        if mode == "stacked-compression":
            self._answer(
                200,
                srv.bomb,
                extra=[("Content-Encoding", "deflate, gzip, gzip")],
            )
            return
        if mode == "redirect":
            self._answer(
                307, b'{"error":"moved"}', extra=[("Location", f"http://198.51.100.7{self.path}")]
            )
            return
        status, data, ctype = self._forward(body)
        if mode == "never-answers":  # pragma: no cover - never gets here
            return
        if mode == "wrong-content-type":
            self._answer(status, data, "text/html")
            return
        if mode == "nan":
            text = data.decode()
            if path == "/retrieve":
                text = text.replace('"useCount":', '"useCount":NaN,"was":', 1)
                if text == data.decode():
                    text = text[:-1] + ',"score":NaN}'
            else:
                text = text[:-1] + ',"score":1e999,"other":-1e999}'
            self._answer(status, text.encode())
            return
        if mode == "lone-surrogates":
            text = data.decode()
            text = text.replace('"text":"', '"text":"\\ud800', 1)
            if text == data.decode():
                text = text[:-1] + ',"note":"\\udfff"}'
            self._answer(status, text.encode())
            return
        if mode in ("duplicate-ids", "ids-reused-after-forget", "time-backwards"):
            self._answer(status, self._rewrite(mode, path, body, status, data))
            return
        self._answer(status, data, ctype)

    def _echo(self, n: int, path: str, token: str) -> None:
        forms = [
            token,
            _json_escape_all(token, upper=False),
            _json_escape_all(token, upper=True),
            "".join(
                f"\\u{ord(c):04X}" if i % 3 else f"\\u{ord(c):04x}" for i, c in enumerate(token)
            ),
        ]
        form = forms[n % len(forms)]
        body = (
            '{"error":"bad token '
            + form
            + '","echo":"'
            + form
            + '","records":[{"id":"'
            + form
            + '"}]}'
        ).encode()
        which = n % 5
        if which == 0:  # in a header and the reason phrase
            self._answer(400, body, extra=[("X-Echo", token)], reason=f"Bad {token}")
        elif which == 1:  # a status line the parser refuses, so it lands in an error message
            self._raw(f"HTTP/1.1 2x0 {token}\r\nContent-Length: 0\r\n\r\n".encode())
            self.close_connection = True
        elif which == 2 and path != "/healthz":  # not JSON: an excerpt of raw bytes
            self._answer(400, f"token={form} {token}".encode(), "text/plain")
        else:
            if path == "/healthz":
                body = ('{"ok":true,"token":"' + form + '"}').encode()
                self._answer(200, body)
            else:
                self._answer(401 if which == 3 else 200, body)

    def _token_cut(self, n: int, token: str) -> None:
        """The token in one of its encodings, after a filler of n % 211 characters, so that
        the cuts memspec makes (40 to 200 characters) land inside it."""
        forms = token_forms(token)
        form = forms[n % len(forms)]
        filler = "q" * (n % 211)
        which = (n // len(forms)) % 4
        if which == 0:  # a JSON body: echoed into a reason as an excerpt
            body = json.dumps({"error": filler + form, "records": [{"id": filler + form}]})
            self._answer(400 if n % 3 else 200, body.encode())
        elif which == 1:  # not JSON: a raw excerpt
            self._answer(502, (filler + form + " " + form).encode(), "text/plain")
        elif which == 2:  # a broken status line: a transport error
            self._raw(f"HTTP/1.1 2x0 {filler}{form}\r\nContent-Length: 0\r\n\r\n".encode())
            self.close_connection = True
        else:  # the Content-Type and the reason phrase
            self._answer(
                200,
                b"<p>not json</p>",
                ctype=f"text/{filler[:150]}{form}",
                reason=(filler[:60] + form),
            )

    def _escapes(self, n: int) -> None:
        esc = "\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x9b1m\x7f\u202eevil\u2066x\u200f"
        which = n % 5
        if which == 0:
            self._answer(200, b"<p>no</p>", ctype="text/html\x1b[2J\x1b]0;pwned\x07")
        elif which == 1:
            self._answer(200, b"{}", extra=[("Content-Encoding", "br\x1b[31m")])
        elif which == 2:
            self._raw(b"HTTP/1.1 2x0 \x1b[2J\x1b[31mFAKE OK\r\nContent-Length: 0\r\n\r\n")
            self.close_connection = True
        elif which == 3:
            body = json.dumps({"error": esc, "records": [{"id": esc, "text": esc}]})
            self._answer(400, body.encode())
        else:
            self._answer(400, b"bad " + esc.encode("utf-8"), "text/plain", reason="Bad\x1b[5m")

    def _rewrite(self, mode: str, path: str, req: bytes, status: int, data: bytes) -> bytes:
        srv = self.server
        try:
            obj = json.loads(data)
            sent = json.loads(req) if req else {}
        except ValueError:
            return data
        if mode == "ids-reused-after-forget" and path == "/forget" and status == 200:
            if isinstance(sent, dict) and isinstance(sent.get("id"), str):
                srv.forgotten.append(sent["id"])
        records = obj.get("records") if isinstance(obj, dict) else None
        if not isinstance(records, list) or not records:
            return data
        if mode == "duplicate-ids":
            for r in records:
                if isinstance(r, dict):
                    r["id"] = records[0].get("id")
        elif mode == "ids-reused-after-forget" and srv.forgotten:
            scope = sent.get("scopeKey") if isinstance(sent, dict) else None
            reuse = [f for f in srv.forgotten if scope and f.startswith(f"mem:{scope}:")]
            if reuse and isinstance(records[0], dict):
                records[0]["id"] = reuse[-1]
        elif mode == "time-backwards":
            for r in records:
                if isinstance(r, dict) and "createdAt" in r:
                    srv.tick += 1
                    r["createdAt"] = time.strftime(
                        "%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(1_700_000_000 - srv.tick * 3600)
                    )
        return json.dumps(obj).encode()


class _NeverAnswers(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        srv: Any = self.server
        while not srv.stopping:
            time.sleep(0.05)


class HostileServer(socketserver.ThreadingTCPServer):
    """``HostileServer(mode, upstream_port, token)``; ``.url``; ``.stop()``."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(
        self,
        mode: str,
        upstream_port: int,
        token: str,
        probe_requests: int | None = None,
        protocol: str = "memory",
    ):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        handler: Any = _NeverAnswers if mode == "never-answers" else _Handler
        super().__init__(("127.0.0.1", 0), handler)
        self.mode = mode
        self.upstream_port = upstream_port
        self.token = token
        # memory: healthz, retrieve, list, forget, write-cap; ledger: list, packet, two
        # set_clock, two lists (the fresh-ledger check)
        if probe_requests is None:
            probe_requests = 5 if protocol == "memory" else 6
        self.probe_requests = probe_requests
        self.seen: list[str] = []  # userinfo: the Host and Authorization of every request
        self.requests = 0
        self.lock = threading.Lock()
        self.stopping = False
        self.dead = False
        self.forgotten: list[str] = []
        self.tick = 0
        self.bomb = BOMB
        if mode == "million-records":
            self.million = b'{"records":[' + b",".join([b"{}"] * 1_000_000) + b"]}"
        if mode == "huge-texts":
            self.huge_text = (
                b'{"records":[{"id":"mem:x:1","kind":"fact","text":"'
                + b"lorem ipsum " * ((4 * 1024 * 1024 - 200) // 12)
                + b'"}]}'
            )
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def die(self) -> None:
        """Stop listening (from a handler thread): later connections are refused."""

        self.dead = True

        def _go() -> None:
            self.shutdown()
            self.socket.close()

        threading.Thread(target=_go, daemon=True).start()

    def stop(self) -> None:
        self.stopping = True
        try:
            self.shutdown()
        except Exception:  # pragma: no cover
            pass
        try:
            self.socket.close()
        except OSError:  # pragma: no cover
            pass


#: Characters a target may put into text that must never reach a terminal or a page raw:
#: C0 controls but tab and line ends, DEL, C1 controls, and the bidi/format controls.
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _b64_cores(window: bytes) -> list[str]:
    """The base64 characters that depend on ``window`` alone, at each of the 3 alignments,
    standard and url-safe."""
    out = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + window + b"\0\0").decode()
        first = -(-8 * pad // 6)  # the first character whose 6 bits are all the window's
        last = (8 * (pad + len(window))) // 6  # one past the last such character
        core = enc[first:last]
        out += [core, core.replace("+", "-").replace("/", "_")]
    return out


def token_fragments(token: str, n: int = 6) -> list[tuple[str, bool]]:
    """(text, case-insensitive) for every run of ``n`` consecutive characters of ``token`` in
    every encoding a target or a writer may put it in: as is, JSON ``\\u`` escapes and
    ``json.dumps``, ``repr()``, HTML escapes and numeric references (with and without ``;``),
    hex, percent-encoding once and twice, base64 (standard and url-safe, every alignment)."""
    frags: set[tuple[str, bool]] = set()
    for i in range(len(token) - n + 1):
        w = token[i : i + n]
        frags.add((w, True))
        frags.add(("".join(f"\\u{ord(c):04x}" for c in w), True))
        frags.add((json.dumps(w)[1:-1], True))
        frags.add((w.replace("\\", "\\\\").replace("'", "\\'"), True))
        frags.add((html.escape(w), True))
        frags.add((w.encode().hex(), True))
        frags.add(("".join(f"%{ord(c):02x}" for c in w), True))
        frags.add(("".join(f"%25{ord(c):02x}" for c in w), True))
        frags.add(("".join(f"&#{ord(c)}" for c in w), True))
        frags.add(("".join(f"&#{ord(c)};" for c in w), True))
        frags.add(("".join(f"&#x{ord(c):x}" for c in w), True))
        frags.add(("".join(f"&#x{ord(c):x};" for c in w), True))
        frags.update((core, False) for core in _b64_cores(w.encode()))
    return sorted(frags)


def fragments_in(frags: list[tuple[str, bool]], text: str) -> list[str]:
    """The fragments found in ``text``."""
    low = text.lower()
    return [f for f, ci in frags if (f.lower() in low if ci else f in text)]


def token_leaks(token: str, text: str) -> list[str]:
    """Every form of ``token`` (or its 'wrong' twin's stem) found in ``text``."""
    found = []
    stem = token[:-1]
    candidates = {
        "plain": stem,
        "json-lower": _json_escape_all(stem, upper=False),
        "json-upper": _json_escape_all(stem, upper=True),
        "all-escaped": "".join(f"\\u{ord(c):04x}" for c in stem),
        "all-escaped-upper": "".join(f"\\u{ord(c):04X}" for c in stem),
        "slash-escaped": stem.replace("/", "\\/"),
    }
    for name, form in candidates.items():
        if form and form.lower() in text.lower():
            found.append(name)
    return found
