"""``memspec selftest``: the harness checks itself.

1. It runs the corpus and the memory state machine against the bundled store, which must come
   out conformant (the model and a second, independent implementation agree).
2. It puts the bundled store behind a *fault injector* — a small loopback HTTP proxy that
   forwards every request unchanged and corrupts one kind of answer — and runs again.  Each
   broken variant must be caught (a divergence naming the clause the fault breaks).

The faults live at the HTTP level, so the harness sees them exactly as it would see a broken
deployed store; nothing in the bundled store is modified.

==================  ==========================================================  ==============
fault               what the proxy does                                         must be caught
==================  ==========================================================  ==============
retrieve-reversed   reverses the records of every ``/retrieve`` answer          MEM-SCORE.*
forget-lies         answers ``forgotten: true`` to every ``/forget``            MEM-STORE.8
list-oldest-first   reverses the records of every ``/list`` answer              MEM-STORE.7
==================  ==========================================================  ==============
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import secrets
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

from conformance.commands.run import run_pipeline, start_bundled_store
from conformance.driver import Secret, TargetConfig

Fault = Callable[[str, int, Any], Any]
_DIGITS = re.compile(r"[0-9]+")
MAX_BODY = 512 * 1024


def _reverse_records(route: str) -> Fault:
    def fault(path: str, status: int, body: Any) -> Any:
        if (
            path == route
            and status == 200
            and isinstance(body, dict)
            and isinstance(body.get("records"), list)
        ):
            return {**body, "records": list(reversed(body["records"]))}
        return body

    return fault


def _forget_lies(path: str, status: int, body: Any) -> Any:
    if path == "/forget" and status == 200 and isinstance(body, dict) and "forgotten" in body:
        return {**body, "forgotten": True}
    return body


#: fault name -> (what it corrupts, clause prefixes one of which a divergence must name)
FAULTS: dict[str, tuple[Fault, tuple[str, ...]]] = {
    "retrieve-reversed": (_reverse_records("/retrieve"), ("MEM-SCORE.",)),
    "forget-lies": (_forget_lies, ("MEM-STORE.8",)),
    "list-oldest-first": (_reverse_records("/list"), ("MEM-STORE.7",)),
}


class FaultProxy:
    """A loopback HTTP proxy in front of ``upstream`` that corrupts answers with ``fault``.

    Requests are forwarded as they came, including a missing, blank or malformed
    ``Content-Length`` (the body is read only when the length is a plain digit string within
    512 KiB; otherwise none is forwarded and the upstream's fence answers).
    """

    def __init__(self, upstream_url: str, fault: Fault) -> None:
        m = re.fullmatch(r"http://([^:/\[\]]+|\[[^\]]+\]):(\d+)", upstream_url)
        if m is None:
            raise ValueError(f"not an http://host:port URL: {upstream_url}")
        host, port = m.group(1).strip("[]"), int(m.group(2))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _forward(self) -> None:
                lengths = self.headers.get_all("Content-Length") or []
                body = b""
                readable = len(lengths) == 1 and _DIGITS.fullmatch(lengths[0]) is not None
                if readable and int(lengths[0]) <= MAX_BODY:
                    body = self.rfile.read(int(lengths[0]))
                else:
                    self.close_connection = True
                conn = http.client.HTTPConnection(host, port, timeout=30)
                try:
                    conn.putrequest(
                        self.command, self.path, skip_host=True, skip_accept_encoding=True
                    )
                    for k, v in self.headers.items():
                        if k.lower() in ("connection", "keep-alive", "transfer-encoding", "expect"):
                            continue
                        conn.putheader(k, v)
                    conn.putheader("Connection", "close")
                    conn.endheaders()
                    if body:
                        conn.send(body)
                    resp = conn.getresponse()
                    status, data = resp.status, resp.read()
                finally:
                    conn.close()
                route = self.path.split("?", 1)[0]
                try:
                    parsed = json.loads(data)
                    data = json.dumps(
                        proxy.fault(route, status, parsed), separators=(",", ":")
                    ).encode()
                except ValueError:
                    pass
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _forward

        self.fault = fault
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "selftest",
        help="check the harness: the bundled store passes, deliberately broken variants are caught",
        description="Run the memory corpus and state machine against the bundled store (must pass)"
        " and against the bundled store behind fault injectors (each must be caught).",
    )
    p.add_argument(
        "--fault", action="append", choices=sorted(FAULTS), help="fault(s) to inject (default: all)"
    )
    p.add_argument("--seed", type=int, help="state-machine seed")
    p.add_argument("--examples", type=int, metavar="N", help="state-machine runs per variant")
    p.add_argument(
        "--report", metavar="DIR", default="memspec-selftest", help="reports go to DIR/<variant>/"
    )
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    faults = args.fault or sorted(FAULTS)
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token)
    lines: list[str] = []
    ok = True
    try:
        config = TargetConfig(handle.url, Secret(token), 10.0, label="bundled store")
        out.write("== the bundled store (must be conformant)\n")
        clean = run_pipeline(
            config,
            spec="memory",
            seed=args.seed,
            max_examples=args.examples,
            report_dir=Path(args.report) / "clean",
            quiet=args.quiet,
            out=out,
        )
        good = clean.exit_code == 0
        ok &= good
        lines.append(
            f"{'ok ' if good else 'BAD'} bundled store: {'conformant' if good else 'NOT conformant'}"
        )
        for name in faults:
            fault, wanted = FAULTS[name]
            proxy = FaultProxy(handle.url, fault)
            try:
                out.write(f"\n== broken variant {name} (must be caught)\n")
                cfg = TargetConfig(
                    proxy.url, Secret(token), 10.0, label=f"bundled store + fault {name}"
                )
                res = run_pipeline(
                    cfg,
                    spec="memory",
                    seed=args.seed,
                    max_examples=args.examples,
                    report_dir=Path(args.report) / name,
                    quiet=args.quiet,
                    out=out,
                )
            finally:
                proxy.stop()
            named = sorted({c for d in res.data["divergences"] for c in d["clauses"]})
            caught = res.exit_code == 1 and any(c.startswith(w) for c in named for w in wanted)
            ok &= caught
            lines.append(
                f"{'ok ' if caught else 'BAD'} {name}: "
                + (
                    f"caught, naming {', '.join(named[:6])}"
                    if caught
                    else f"NOT caught (clauses named: {named or 'none'})"
                )
            )
    finally:
        handle.stop()
    out.write("\nselftest:\n" + "\n".join("  " + ln for ln in lines) + "\n")
    out.write("selftest passed\n" if ok else "selftest FAILED\n")
    return 0 if ok else 1
