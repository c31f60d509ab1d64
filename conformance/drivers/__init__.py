"""Protocol drivers, found by protocol name.

``DRIVERS`` maps a protocol to ``"module:attribute"``; the attribute is a
:data:`conformance.drivers.base.DriverFactory` (a class taking a ``RunContext`` works).  Modules are
imported only when a run asks for the protocol, so one protocol's dependencies never load for
another's run.
"""

from __future__ import annotations

import importlib
from typing import cast

from conformance.drivers.base import DriverFactory

DRIVERS: dict[str, str] = {
    "memory": "conformance.drivers.memory.driver:MemoryDriver",
    "ledger": "conformance.drivers.ledger.driver:LedgerDriver",
}


def driver_factory(protocol: str) -> DriverFactory:
    """The factory registered for ``protocol``; ``KeyError`` if none is."""
    target = DRIVERS[protocol]
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return cast(DriverFactory, getattr(module, attr))
