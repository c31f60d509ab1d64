"""``memspec vectors export DIR``: the pure functions' test vectors as JSON files any language
can load (``docs/vectors.md``; schema ``specs/engine-vectors.schema.json``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from conformance.errors import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "vectors",
        help="export language-neutral test vectors of the pure engine functions",
        description="Write one JSON vector file per pure function (boundaries + a fixed-seed"
        " sample), versioned with the spec revision; see docs/vectors.md.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    e = verbs.add_parser("export", help="write the vector files into DIR")
    e.add_argument("dir", metavar="DIR")
    e.add_argument("--spec", choices=["memory", "ledger", "all"], default="all")
    e.set_defaults(func=run_export)

    def no_verb(_args: argparse.Namespace) -> int:
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=no_verb)


def run_export(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from conformance.binding.vectors import export

    out = out or sys.stdout
    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target}: exists and is not a directory")
    started = time.perf_counter()
    try:
        index = export(target, args.spec)
    except OSError as exc:
        raise UsageError(f"{target}: cannot write: {exc.strerror or exc}") from exc
    out.write(
        f"{index['vectors']} vectors in {len(index['files'])} files written to {target}/"
        f" (spec {index['spec_revision']}, {time.perf_counter() - started:.1f}s)\n"
    )
    return 0
