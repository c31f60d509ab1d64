"""``memspec report merge DIR... --out DIR``: one report from the reports of N shards.

``memspec run --shard K/N --report DIR_K`` on N runners, then::

    memspec report merge shard-1 shard-2 shard-3 shard-4 --out merged

writes ``merged/report.json``, ``report.html``, ``junit.xml`` and ``replays/``, prints the clause
table, and exits like ``memspec run`` would have: 0 conformant, 1 a divergence no expectation
accepts.  Shards of different runs (run ids, seeds, versions, revisions, options), a shard
given twice, a shard missing or killed half-way: one line naming it, exit 2 — never a smaller
green report.  See :mod:`conformance.report.merge`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.errors import UsageError
from conformance.report.console import print_summary
from conformance.report.merge import MergeError, load_shards, merge_reports, write_merged


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="work with run reports (merge the reports of shards)",
        description="Work with the reports memspec run writes.",
    )
    actions = p.add_subparsers(dest="report_command", metavar="ACTION", parser_class=type(p))
    m = actions.add_parser(
        "merge",
        help="merge the reports of the N shards of one run (memspec run --shard K/N)",
        description="Merge the report directories of all N shards of one sharded run into one"
        " report, identical in content to the unsharded run's.",
    )
    m.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="one report dir per shard")
    m.add_argument("--out", required=True, type=Path, metavar="DIR", help="merged report dir")
    m.add_argument("--quiet", "-q", action="store_true", help="no clause table")
    m.set_defaults(func=merge)
    p.set_defaults(func=lambda _args: _usage(p))


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


def merge(args: argparse.Namespace) -> int:
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a directory")
    if any(args.out.resolve() == d.resolve() for d in args.dirs):
        raise UsageError(f"--out {args.out} is one of the shard directories")
    try:
        shards = load_shards(list(args.dirs))
    except MergeError as exc:
        raise UsageError(str(exc)) from exc
    data = merge_reports(shards)
    write_merged(shards, data, args.out)
    if not args.quiet:
        print_summary(data, sys.stdout, report_dir=str(args.out))
    else:
        print(f"merged {len(shards)} shards into {args.out}/: exit {data['exit_code']}")
    return int(data["exit_code"])
