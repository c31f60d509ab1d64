"""The errors a command raises for the CLI to print as one line (exit code 2).

A user mistake or an unusable target never ends in a traceback: a command raises one of these
and :func:`conformance.cli.main` prints ``memspec <command>: …`` and exits 2.
"""

from __future__ import annotations


class UsageError(Exception):
    """A mistake in how memspec was called: printed as one line, exit code 2."""


class TargetUnreachable(Exception):
    """The target could not be reached at all: printed as one line, exit code 2."""


class TokenRefused(Exception):
    """The target refused the run's token (401): printed as one line, exit code 2."""
