"""``memspec audit``: prove what a memory-enabled system sends to its model provider.

* ``audit capture --listen 127.0.0.1:PORT --out FILE`` — a loopback stand-in for the
  provider that records every request's exact bytes.
* ``audit diff A B`` — two captures, request by request, byte for byte (exit 0 identical,
  1 different): memory off must be identical to the baseline (MEM-FLAG.3).
* ``audit memory-on BASELINE WITH_MEMORY`` — with memory on, the only change is one
  well-formed advisory block at the front of the system prompt (MEM-INJECT, MEM-CONTAIN,
  MEM-BUDGET); exit 0 pass, 1 fail.

See ``docs/audit.md``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from conformance.audit.capture import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Capture,
    CaptureError,
    CaptureFileError,
    CaptureServer,
    parse_listen,
    read_capture,
    start_capture,
)
from conformance.audit.diff import describe_body, diff_captures
from conformance.audit.memory_on import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_TOKENS,
    check_memory_on,
    describe_pair,
)
from conformance.audit.report import diff_report, memory_on_report, write_report
from conformance.audit.store_proxy import StoreProxy, read_store_record
from conformance.errors import UsageError
from conformance.sources import DEFAULT_LEVEL, LEVELS


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "audit",
        help="prove byte-identical model input with memory off (capture, diff, memory-on)",
        description=(
            "Audit what a system sends to its model provider: record requests with "
            "'capture', compare two recordings with 'diff', and check a memory-on recording "
            "against its baseline with 'memory-on'. See docs/audit.md."
        ),
    )
    p.set_defaults(func=lambda args: _help(p))
    audit_sub = p.add_subparsers(dest="audit_command", metavar="AUDIT_COMMAND")

    _register_capture(audit_sub)
    _register_diff(audit_sub)
    _register_memory_on(audit_sub)


def _register_capture(audit_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``memspec audit capture`` and its options."""
    cap = audit_sub.add_parser(
        "capture",
        help="record every request a system sends to its model provider",
        description=(
            "A recording stand-in for a model provider on a loopback address: answers "
            f"POST {ANTHROPIC_PATH} (Anthropic Messages) and POST {OPENAI_PATH} "
            "(OpenAI-compatible) with a minimal valid completion and appends every request "
            "(exact body bytes, headers with credentials fingerprinted, path, arrival order) "
            "to a JSONL file. Runs until SIGINT/SIGTERM or --max-requests."
        ),
    )
    cap.add_argument(
        "--listen",
        required=True,
        metavar="HOST:PORT",
        help="loopback address to listen on, e.g. 127.0.0.1:8787 (port 0 picks a free port)",
    )
    cap.add_argument("--out", required=True, type=Path, metavar="FILE", help="JSONL file to write")
    cap.add_argument(
        "--max-requests", type=_positive, metavar="N", help="stop after recording N requests"
    )
    cap.add_argument(
        "--overwrite", action="store_true", help="replace FILE if it exists and is not empty"
    )
    cap.add_argument("--quiet", action="store_true", help="do not log each request to stderr")
    cap.add_argument(
        "--store-upstream",
        metavar="URL",
        help="also run a recording reverse proxy in front of this Memory Worker base URL; "
        "point the system's memory.worker.baseUrl at the proxy (see docs/audit.md)",
    )
    cap.add_argument(
        "--store-listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="loopback address of the store proxy (default 127.0.0.1:0, a free port)",
    )
    cap.add_argument(
        "--store-out",
        type=Path,
        metavar="FILE",
        help="the store record (default: FILE of --out with .store.jsonl)",
    )
    cap.set_defaults(func=run_capture)


def _register_diff(audit_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``memspec audit diff`` and its options."""
    diff = audit_sub.add_parser(
        "diff",
        help="compare two captures request by request, byte for byte",
        description=(
            "Compare two captures request by request, byte for byte. Exit 0 when identical, "
            "1 when any request (or the request count) differs, 2 on a usage error."
        ),
    )
    diff.add_argument("a", type=Path, metavar="A", help="first capture (e.g. the baseline)")
    diff.add_argument("b", type=Path, metavar="B", help="second capture (e.g. memory off)")
    diff.add_argument(
        "--headers",
        action="store_true",
        help="also compare request headers (Host is always ignored)",
    )
    diff.add_argument(
        "--ignore-header",
        action="append",
        default=[],
        metavar="NAME",
        help="with --headers, a header to leave out of the comparison (repeatable)",
    )
    diff.add_argument("--report", type=Path, metavar="FILE", help="write a JSON + Markdown report")
    diff.set_defaults(func=run_diff)


def _register_memory_on(audit_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``memspec audit memory-on`` and its options."""
    mon = audit_sub.add_parser(
        "memory-on",
        help="check that memory on changes only the advisory block in the system prompt",
        description=(
            "Check each memory-on request against its baseline: equal except for one "
            "well-formed advisory block folded onto the front of the system prompt. "
            "Exit 0 pass, 1 fail, 2 usage error."
        ),
    )
    mon.add_argument("baseline", type=Path, metavar="BASELINE", help="capture without memory")
    mon.add_argument("with_memory", type=Path, metavar="WITH_MEMORY", help="capture, memory on")
    mon.add_argument(
        "--limit",
        type=_positive,
        default=DEFAULT_LIMIT,
        help=f"the deployment's memory.limit (default {DEFAULT_LIMIT})",
    )
    mon.add_argument(
        "--max-tokens",
        type=_positive,
        default=DEFAULT_MAX_TOKENS,
        help=f"the deployment's memory.maxTokens (default {DEFAULT_MAX_TOKENS})",
    )
    mon.add_argument(
        "--require-block",
        action="store_true",
        help="fail a request that carries no block (by default an unchanged request passes)",
    )
    mon.add_argument(
        "--store",
        type=Path,
        metavar="STORE_RECORD",
        help="the store record 'audit capture --store-upstream' wrote beside WITH_MEMORY: "
        "also prove every bullet came from the store's answers by the read rule",
    )
    mon.add_argument(
        "--level",
        choices=LEVELS,
        default=DEFAULT_LEVEL,
        help="seed (default): a shape only the reference rules out is a deviation (exit 0); "
        "reference: it fails",
    )
    mon.add_argument("--report", type=Path, metavar="FILE", help="write a JSON + Markdown report")
    mon.set_defaults(func=run_memory_on)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _read(path: Path) -> Capture:
    try:
        return read_capture(path)
    except CaptureFileError as exc:
        raise UsageError(str(exc)) from None


def _write_report(path: Path, rep: dict[str, Any]) -> None:
    try:
        json_path, md_path = write_report(path, rep)
    except OSError as exc:
        raise UsageError(f"cannot write report {path}: {exc.strerror}") from None
    print(f"report: {json_path} and {md_path}")


def _short(cap: Capture) -> str:
    n = len(cap.requests)
    return f"{cap.path} ({n} request{'s' if n != 1 else ''}, sha256 {cap.sha256[:16]}…)"


# --------------------------------------------------------------------------------------------


def run_capture(args: argparse.Namespace) -> int:
    def log(line: str) -> None:
        print(f"memspec audit capture: {line}", file=sys.stderr, flush=True)

    try:
        host, port = parse_listen(args.listen)
        server = start_capture(
            args.out,
            host=host,
            port=port,
            max_requests=args.max_requests,
            overwrite=args.overwrite,
            log=None if args.quiet else log,
        )
    except CaptureError as exc:
        raise UsageError(str(exc)) from None
    try:
        proxy = _start_proxy(args, server)
    except CaptureError as exc:
        server.stop()
        raise UsageError(str(exc)) from None
    stop = threading.Event()
    previous: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        _banner(server, proxy, args.out)
        while not stop.is_set() and not server.done.is_set():
            server.done.wait(0.2)
    finally:
        server.stop()
        if proxy is not None:
            proxy.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    cap = read_capture(args.out)
    reason = "--max-requests reached" if server.done.is_set() else "stopped by signal"
    print(
        f"memspec audit capture: {reason}; {len(cap.requests)} request(s) in {args.out} "
        f"(sha256 {cap.sha256})",
        flush=True,
    )
    if proxy is not None:
        rec = read_store_record(proxy.out)
        print(
            f"memspec audit capture: {len(rec.calls)} store call(s) in {proxy.out} "
            f"(sha256 {rec.sha256})",
            flush=True,
        )
    return 0


def _banner(server: CaptureServer, proxy: StoreProxy | None, out: Path) -> None:
    """The lines that tell the auditor where to point the system."""
    print(f"memspec audit capture: listening on {server.url} (recording to {out})")
    print(f"  Anthropic Messages: base URL {server.url}  (POST {ANTHROPIC_PATH})")
    print(f"  OpenAI-compatible:  base URL {server.url}/v1  (POST {OPENAI_PATH})", flush=True)
    if proxy is not None:
        print(
            f"  Memory Worker:      base URL {proxy.url}  (forwarding to {proxy.upstream}; "
            f"recording to {proxy.out})",
            flush=True,
        )


def store_out_for(out: Path) -> Path:
    """The default store record beside a capture: ``on.jsonl`` -> ``on.store.jsonl``."""
    name = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(name + ".store.jsonl")


def _start_proxy(args: argparse.Namespace, server: CaptureServer) -> StoreProxy | None:
    """The store proxy ``--store-upstream`` asks for (``None`` without it)."""
    if args.store_upstream is None:
        if args.store_out is not None:
            raise CaptureError("--store-out needs --store-upstream")
        return None
    host, port = parse_listen(args.store_listen)
    out = args.store_out or store_out_for(args.out)
    if out.resolve() == Path(args.out).resolve():
        raise CaptureError("--store-out must differ from --out")
    return StoreProxy(
        out, args.store_upstream, lambda: server.count, host, port, overwrite=args.overwrite
    )


def run_diff(args: argparse.Namespace) -> int:
    a, b = _read(args.a), _read(args.b)
    ignored = frozenset({"host", *(h.lower() for h in args.ignore_header)})
    result = diff_captures(a, b, headers=args.headers, ignored_headers=ignored)
    print(f"A: {_short(a)}")
    print(f"B: {_short(b)}")
    for r in result.requests:
        if r.identical:
            assert r.a is not None
            print(f"request {r.index}: identical ({r.a.label}, {len(r.a.body)} bytes)")
            continue
        print(f"request {r.index}: DIFFERENT")
        for problem in r.problems:
            print(f"    {problem}")
        if r.body is not None:
            for line in describe_body(r.body):
                print(f"    {line}")
    if result.count_a != result.count_b:
        print(f"request counts differ: A has {result.count_a}, B has {result.count_b}")
    n = len(result.differing)
    verdict = (
        f"IDENTICAL ({result.count_a} request{'s' if result.count_a != 1 else ''}, byte for byte)"
        if result.identical
        else f"DIFFERENT ({n} of {len(result.requests)} requests differ)"
    )
    print(f"verdict: {verdict}")
    if args.report is not None:
        _write_report(args.report, diff_report(a, b, result))
    return 0 if result.identical else 1


def run_memory_on(args: argparse.Namespace) -> int:
    base, mem = _read(args.baseline), _read(args.with_memory)
    store = None
    if args.store is not None:
        try:
            store = read_store_record(args.store)
        except CaptureFileError as exc:
            raise UsageError(str(exc)) from None
    result = check_memory_on(
        base, mem, args.limit, args.max_tokens, args.require_block, args.level, store
    )
    print(f"baseline:    {_short(base)}")
    print(f"with memory: {_short(mem)}")
    print(f"budget: limit {args.limit}, max-tokens {args.max_tokens}")
    print(f"provenance: {result.provenance}")
    for p in result.pairs:
        for line in describe_pair(p):
            print(line)
    for v in result.problems:
        print(f"FAIL {v}")
    failing = sum(1 for p in result.pairs if not p.ok)
    with_block = sum(1 for p in result.pairs if p.status in ("block", "deviation"))
    deviating = sum(1 for p in result.pairs if p.status == "deviation")
    if result.ok:
        print(
            f"verdict: PASS ({len(result.pairs)} requests: {with_block} with one advisory block, "
            f"{len(result.pairs) - with_block} unchanged"
            + (f"; {deviating} deviating from the reference" if deviating else "")
            + ")"
        )
    else:
        print(
            f"verdict: FAIL ({failing} of {len(result.pairs)} requests fail"
            + (f"; {len(result.problems)} capture-level problem(s)" if result.problems else "")
            + ")"
        )
    if args.report is not None:
        _write_report(args.report, memory_on_report(base, mem, result, store))
    return 0 if result.ok else 1
