"""The errors a command raises for the CLI to print as one line (exit code 2).

A user mistake or an unusable target never ends in a traceback: a command raises one of these
and :func:`conformance.cli.main` prints ``memspec <command>: …`` and exits 2.
"""

from __future__ import annotations


class UsageError(Exception):
    """A mistake in how memspec was called: printed as one line, exit code 2."""


class TargetUnreachable(Exception):
    """The target could not be reached at all: printed as one line, exit code 2."""


class TargetError(Exception):
    """The target cannot be used at all (unreachable, token refused, bad profile).

    The CLI prints the message as one line and exits 2.
    """


class TokenRefused(TargetError):
    """The target answered 401 to the run's own token: printed as one line, exit code 2."""
