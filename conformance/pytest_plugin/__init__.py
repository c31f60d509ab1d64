"""pytest plugin shipped with memspec (registered through the ``pytest11`` entry point).

It always registers the ``clause`` marker, so any suite can tag tests with the clause ids they
cover.  Everything else happens only when ``--memspec-target URL`` is given: then the session
gets one test item per corpus scenario and one per state machine, run against that URL over
HTTP — the same drivers, oracle and machines as ``memspec run``::

    pytest --memspec-target http://127.0.0.1:8787 --memspec-profile ci --junitxml=out/junit.xml

Items are named ``memspec::<protocol>::<scenario name>`` and ``memspec::<protocol>::<protocol>-
machine``; each carries ``pytest.mark.clause(...)`` with the clause ids it checks and
``pytest.mark.memspec``.  A divergence fails the item with the step, the clauses, what the model
allowed, what the target said and the path of a replay file; a scenario needing a capability
the target lacks is skipped with the reason; a target that cannot be reached at all is one
``pytest.UsageError`` before any item runs.  Sharding with pytest-xdist (``-n N``) is described
in :mod:`conformance.pytest_plugin.xdist`.

Without ``--memspec-target`` every hook returns at once and nothing beyond this package and
pytest is imported: the plugin is loaded for every pytest run of every project that installs
memspec.  The plugin never imports ``conformance.embedded``; it reaches stores over HTTP only.

The parts, one concern each:

- ``options``  — the ``--memspec-*`` command-line options and their defaults;
- ``hooks``    — the pytest hooks (this package re-exports them, so pytest finds them here);
- ``state``    — ``MemspecRun``: what one pytest process knows (the run's ``RunConfig``,
  drivers, results);
- ``settings`` — reading and checking the options into a ``MemspecRun``;
- ``corpus``   — the scenarios and machines checked, and how their files are shown;
- ``items``    — the collectors and test items;
- ``xdist``    — sharding with pytest-xdist (roles, the ledger group, what workers exchange);
- ``messages`` — the text of a failing item.
"""

from __future__ import annotations

from typing import Any

from conformance.pytest_plugin import options
from conformance.pytest_plugin.hooks import (
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_header,
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
)
from conformance.pytest_plugin.options import DECLARED, LEDGER_GROUP, pytest_addoption
from conformance.pytest_plugin.xdist import pytest_configure_node, pytest_testnodedown

__all__ = [
    "LEDGER_GROUP",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_configure_node",
    "pytest_report_header",
    "pytest_sessionfinish",
    "pytest_sessionstart",
    "pytest_terminal_summary",
    "pytest_testnodedown",
]


def __getattr__(name: str) -> Any:
    """``DEFAULT_REPLAY_DIR``, ``DEFAULT_TOKEN_ENV``, ``PROFILES``, ``SPECS``, read on first use."""
    if name not in DECLARED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(options, name)
