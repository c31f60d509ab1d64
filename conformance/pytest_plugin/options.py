"""The ``--memspec-*`` options (read in ``settings``), built when pytest asks for them from the
one declaration of the run and target options, :mod:`conformance.engine.options` -- imported
only then, so that importing the plugin loads nothing of the harness."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

#: The xdist group every ledger item joins (see ``conformance.pytest_plugin.xdist``).
LEDGER_GROUP = "memspec-ledger"

#: Names passed on from :mod:`conformance.engine.options`, read on first use.
DECLARED = ("DEFAULT_REPLAY_DIR", "DEFAULT_TOKEN_ENV", "PROFILES", "SPECS")


def __getattr__(name: str) -> Any:
    if name not in DECLARED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("conformance.engine.options"), name)


def pytest_addoption(parser: pytest.Parser) -> None:
    from conformance.engine.options import add_pytest_options

    g = parser.getgroup("memspec", "memspec conformance checks (active only with --memspec-target)")
    add_pytest_options(g)
