"""``memspec serve``: run the bundled store (Memory Worker protocol + ledger binding)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from argparse import SUPPRESS
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from conformance.embedded.catalogue import Quirks, mutants, variants
from conformance.errors import UsageError

if TYPE_CHECKING:
    from conformance.embedded.server import ServerHandle

DEFAULT_DB = "./memspec-data/store.sqlite3"
DEFAULT_TOKEN_ENV = "MEMSPEC_TOKEN"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the bundled store (SQLite + FTS5) over HTTP on loopback",
        description=(
            "Serve the Memory Worker protocol (/healthz, /retrieve, /write, /list, /forget) and "
            "the ledger binding (/ledger/<method>) from one SQLite database.  Data routes need "
            "'Authorization: Bearer <token>' with the token read from an environment variable."
        ),
    )
    p.add_argument(
        "--host",
        default=None,
        help="address to bind (default 127.0.0.1; a non-loopback address must be given here "
        "explicitly and is announced with a warning)",
    )
    p.add_argument("--port", type=int, default=8787, help="port (default 8787; 0 = any free one)")
    p.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"SQLite file (default {DEFAULT_DB}) or :memory: (nothing survives a restart)",
    )
    auth = p.add_mutually_exclusive_group()
    auth.add_argument(
        "--token-env",
        metavar="VAR",
        default=DEFAULT_TOKEN_ENV,
        help=f"environment variable holding the bearer token (default {DEFAULT_TOKEN_ENV})",
    )
    auth.add_argument(
        "--no-auth",
        action="store_true",
        help="accept every request without a bearer token (loopback only; prints a warning)",
    )
    p.add_argument(
        "--cap", type=int, default=500, help="default per-scope cap of active records (1-10000)"
    )
    p.add_argument(
        "--test-control",
        action="store_true",
        help="enable the ledger's POST /ledger/_test/* controls (reset, clock, sweep, ...)",
    )
    _add_socket_options(p)
    p.add_argument("--quiet", action="store_true", help="no access log on stderr")
    # The catalogue of altered stores (conformance/embedded/catalogue): hidden from the normal
    # help -- they exist to test memspec itself, never to serve anyone's data.
    p.add_argument("--variant", action="append", default=[], metavar="NAME", help=SUPPRESS)
    p.add_argument("--mutant", action="append", default=[], metavar="NAME", help=SUPPRESS)
    p.set_defaults(func=run)


def _add_socket_options(p: argparse.ArgumentParser) -> None:
    """``--ledger-ws`` and ``--ledger-unix``: the ledger as JSON-RPC over a WebSocket."""
    p.add_argument(
        "--ledger-ws",
        type=int,
        metavar="PORT",
        default=None,
        help="also serve the ledger as JSON-RPC 2.0 over a WebSocket on this port of the same"
        " host (0 = any free one; loopback only): target ws://HOST:PORT/",
    )
    p.add_argument(
        "--ledger-unix",
        metavar="PATH",
        default=None,
        help="also serve the ledger as JSON-RPC 2.0 over a WebSocket on this Unix socket"
        " (created mode 0600, removed on stop): target ws+unix://PATH",
    )


def quirks_from_args(variant_names: list[str], mutant_names: list[str]) -> Quirks:
    """The catalogue entries ``--variant`` / ``--mutant`` name, or a usage error naming the
    unknown one and what the catalogue holds."""
    names: set[str] = set()
    for kind, given in (("variant", variant_names), ("mutant", mutant_names)):
        known = {e.name for e in (variants() if kind == "variant" else mutants())}
        for name in given:
            if name not in known:
                listing = ", ".join(sorted(known)) or "none"
                raise UsageError(f"--{kind} {name}: not in the catalogue (known: {listing})")
            names.add(name)
    return Quirks(frozenset(names))


def _checked_host(args: argparse.Namespace) -> str:
    """The host to bind (loopback unless ``--host`` says otherwise); a non-loopback host is
    warned about, and refused with ``--no-auth``."""
    from conformance.embedded.server import is_loopback

    host = args.host if args.host is not None else "127.0.0.1"
    if not is_loopback(host):
        if args.host is None:  # pragma: no cover - the default is loopback
            raise UsageError(f"refusing non-loopback host {host}")
        if args.no_auth:
            raise UsageError(f"--no-auth is refused on a non-loopback host ({host})")
        print(
            f"memspec serve: WARNING: binding {host}, which is reachable from other machines",
            file=sys.stderr,
        )
    return host


def _token(args: argparse.Namespace) -> str | None:
    """The bearer token from ``--token-env``'s variable (``None`` with ``--no-auth``, warned
    about); no token and no ``--no-auth`` is a usage error."""
    if args.no_auth:
        print(
            "memspec serve: WARNING: --no-auth: every request is accepted WITHOUT a bearer token."
            " Never expose this server.",
            file=sys.stderr,
        )
        return None
    token = os.environ.get(args.token_env) or None
    if token is None:
        raise UsageError(
            f"no bearer token: set {args.token_env} (or name another variable with "
            "--token-env VAR), or pass --no-auth for an unauthenticated local server"
        )
    return token


def _prepared_db(db: str) -> str:
    """``--db``, its folder created (``:memory:`` as is); a folder as the file is a usage
    error."""
    if db != ":memory:":
        path = Path(db)
        if path.is_dir():
            raise UsageError(f"--db {db} is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {path.parent}: {exc.strerror}") from exc
    return db


def _serve_until_signalled(
    handle: ServerHandle, quirks: Quirks, sockets: list[str] | None = None
) -> None:
    """Announce the server, serve until SIGINT/SIGTERM, then stop it."""
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"memspec serve: listening on {handle.url}", flush=True)
        for url in sockets or ():
            print(f"memspec serve: ledger JSON-RPC on {url}", flush=True)
        if quirks:
            print(
                f"memspec serve: ALTERED store ({quirks.label()}): for testing memspec only",
                file=sys.stderr,
            )
        if handle.ledger is None:
            print("memspec serve: ledger binding not available (503 on /ledger/*)", file=sys.stderr)
        while not done.wait(timeout=0.5):
            pass
    finally:
        handle.stop()
        for sig, old in previous.items():
            signal.signal(sig, old)


def _ledger_sockets(handle: ServerHandle, host: str, args: argparse.Namespace) -> list[str]:
    """The JSON-RPC WebSocket forms of the ledger ``--ledger-ws`` / ``--ledger-unix`` ask for
    (their target URLs)."""
    urls = []
    if args.ledger_ws is not None:
        if not 0 <= args.ledger_ws <= 65535:
            raise ValueError(f"--ledger-ws must be a port 0-65535, not {args.ledger_ws}")
        urls.append(handle.serve_ledger_socket(host=host, port=args.ledger_ws))
    if args.ledger_unix is not None:
        if os.path.exists(args.ledger_unix):
            raise ValueError(f"--ledger-unix {args.ledger_unix} exists already")
        urls.append(handle.serve_ledger_socket(unix_path=args.ledger_unix))
    return urls


def run(args: argparse.Namespace) -> int:
    from conformance.embedded.server import pause_hook_from_env, start_server

    host = _checked_host(args)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0-65535, not {args.port}")
    if not 1 <= args.cap <= 10000:
        raise UsageError(f"--cap must be an integer from 1 to 10000, not {args.cap}")
    token = _token(args)
    quirks = quirks_from_args(args.variant, args.mutant)
    db = _prepared_db(args.db)
    try:
        handle = start_server(
            host=host,
            port=args.port,
            db=db,
            token=token,
            test_control=args.test_control,
            cap_default=args.cap,
            require_auth=not args.no_auth,
            allow_non_loopback=args.host is not None,
            access_log=None if args.quiet else sys.stderr,
            write_hook=pause_hook_from_env(),
            quirks=quirks,
        )
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{args.port}: {exc.strerror or exc}") from exc
    except Exception as exc:  # e.g. a file that is not a SQLite database
        raise UsageError(f"cannot open the store at {db}: {exc}") from exc
    try:
        sockets = _ledger_sockets(handle, host, args)
    except (OSError, ValueError) as exc:
        handle.stop()
        raise UsageError(f"cannot serve the ledger socket: {exc}") from exc
    _serve_until_signalled(handle, quirks, sockets)
    print("memspec serve: stopped", flush=True)
    return 0
