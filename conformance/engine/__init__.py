"""The run engine: one run against one reachable target, whichever front end asked for it.

``memspec run``/``fuzz``/``selftest`` and the GitHub Action (through the CLI) build a
:class:`RunConfig`, call :func:`run` with an :class:`Observer`, and read the :class:`RunResult`.
The parts: ``config`` (``RunConfig``, the options' defaults and bounds), ``options`` (each run
and target option declared once; the ``memspec`` and the pytest options built from it),
``observer``, ``pipeline`` (:func:`run`: the phases and the report), ``drivers`` (drivers,
lanes, worker processes), ``explore`` (probes and state machines), ``concurrent``
(``--clients N``).

The engine never starts a store and never imports the command line: opening the target (or
starting the bundled store) is the front end's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.engine.config import RunConfig
    from conformance.engine.observer import NullObserver, Observer
    from conformance.engine.pipeline import RunResult, run

__all__ = ["NullObserver", "Observer", "RunConfig", "RunResult", "run"]

#: Where each name lives: imported on first use, so that reading the option declaration
#: (``conformance.engine.options``, in every pytest session) loads no run machinery.
_HOMES = {
    "RunConfig": "conformance.engine.config",
    "NullObserver": "conformance.engine.observer",
    "Observer": "conformance.engine.observer",
    "RunResult": "conformance.engine.pipeline",
    "run": "conformance.engine.pipeline",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
