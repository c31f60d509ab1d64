"""The reference engine host: the Python reference model behind the engine binding.

``python -m conformance.engine_host`` reads one JSON line per call from stdin,
``{"fn": NAME, "args": {...}}``, and writes one line back: ``{"ok": RESULT}``,
``{"error": "unknown function"}`` or ``{"error": "refused: …"}`` (the function refused its
input) / ``{"error": "bad arguments: …"}`` (specs/engine-binding.md).  ``--mutant NAME`` /
``--variant NAME`` serve an altered engine of ``conformance.binding.catalogue``; ``--only
FN,…`` serves only those functions (every other one is unknown).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from conformance.binding.catalogue import ENTRIES
from conformance.binding.codec import ArgError
from conformance.binding.functions import BY_NAME, Args, Refused


def answer(table: dict[str, object], line: bytes) -> dict[str, object]:
    try:
        msg = json.loads(line)
    except ValueError:
        return {"error": "bad request: not JSON"}
    if not isinstance(msg, dict) or not isinstance(msg.get("fn"), str):
        return {"error": "bad request: no fn"}
    impl = table.get(msg["fn"])
    if impl is None:
        return {"error": "unknown function"}
    args = msg.get("args", {})
    if not isinstance(args, dict):
        return {"error": "bad arguments: args is not an object"}
    try:
        return {"ok": impl(args)}  # type: ignore[operator]
    except Refused as exc:
        return {"error": f"refused: {exc}"}
    except (ArgError, KeyError, TypeError, ValueError) as exc:
        return {"error": f"bad arguments: {type(exc).__name__}: {exc}"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.engine_host")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--mutant", metavar="NAME")
    group.add_argument("--variant", metavar="NAME")
    parser.add_argument("--only", metavar="FN,…", help="serve only these functions")
    args = parser.parse_args(argv)
    table: dict[str, object] = {name: fn.call for name, fn in BY_NAME.items()}
    altered = args.mutant or args.variant
    if altered:
        entry = ENTRIES.get(altered)
        if entry is None or entry.kind != ("mutant" if args.mutant else "variant"):
            print(f"engine_host: no such entry {altered!r}", file=sys.stderr)
            return 2
        table.update(entry.patches())
    if args.only:
        keep = {n.strip() for n in args.only.split(",")}
        table = {n: f for n, f in table.items() if n in keep}
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        reply: Args = answer(table, line)
        out.write(json.dumps(reply, ensure_ascii=True).encode("ascii") + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
