"""The ``memspec`` command.

Each subcommand lives in ``conformance/commands/<name>.py`` and exposes
``register(subparsers) -> None``; the parser it adds sets ``func`` to a callable taking the
parsed arguments and returning an exit code.

Exit codes, for every subcommand: 0 conformant / success, 1 divergence found / check failed,
2 usage error or target unreachable.  A user mistake never ends in a traceback: commands raise
an error of :mod:`conformance.errors` (:class:`UsageError`, :class:`TargetUnreachable`,
:class:`TokenRefused`) and this module prints one line.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from conformance.errors import TargetUnreachable, TokenRefused, UsageError
from conformance.scrub import ScrubbingStream

EXIT_USAGE = 2

# One entry per subcommand module under conformance/commands/. Add a line to register a command.
COMMAND_MODULES: tuple[str, ...] = (
    "clauses",
    "audit",
    "serve",
    "run",
    "replay",
    "fuzz",
    "selftest",
    "contract",
    "report",
    "replay_concurrent",
    "vectors",
    "engine",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"memspec: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


class _VersionAction(argparse.Action):
    """``--version``: the memspec version, the spec and corpus revisions (computed on use)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kw: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kw.get("help", "")))

    def __call__(self, parser: argparse.ArgumentParser, *_a: object, **_k: object) -> None:
        from conformance.version import version_line

        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memspec",
        description="Reference spec and conformance harness for agent-memory stores.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"conformance.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command.  While it runs, stdout and stderr blank every registered token (in
    every escaped form: :mod:`conformance.scrub`), whatever a target put into a message."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = wrapped_out, _ = ScrubbingStream(out), ScrubbingStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err
        if wrapped_out.closed_by_reader:
            _quiet_closed_stdout(out)


def _quiet_closed_stdout(out: object) -> None:
    """The reader of stdout went away (``memspec run | head``): the run kept going to its exit
    code; point stdout at /dev/null so the interpreter's last flush does not complain."""
    try:
        fd = out.fileno()  # type: ignore[attr-defined]
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(func(args))
    except BrokenPipeError:  # a pipe closed under a stream we do not wrap: end quietly
        return EXIT_USAGE
    except UsageError as exc:
        print(f"memspec {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except TargetUnreachable as exc:
        print(f"memspec {args.command}: target unreachable: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except TokenRefused as exc:
        print(f"memspec {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"memspec {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours must still not print a traceback to a CI log
        if os.environ.get("MEMSPEC_DEBUG"):
            raise
        print(
            f"memspec {args.command}: internal error: {type(exc).__name__}: {exc}"
            " (set MEMSPEC_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
