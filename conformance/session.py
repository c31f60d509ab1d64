"""What the run engine, the commands and the pytest plugin share when they open
a target: the capability check and opening one protocol's driver.

The rest of opening a target differs between the two on purpose: the CLI reads target profiles,
``--ca-cert`` and may start the bundled store; the plugin reads ``--memspec-*`` options and the
``$MEMSPEC_TOKEN`` default, never starts a store, and skips a protocol the target does not serve
instead of leaving it out with a note.  Both take their run ids from :func:`new_run_id`.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from conformance.errors import TargetError

if TYPE_CHECKING:
    from conformance.drivers.base import Driver
    from conformance.vocabulary import RunContext


def new_run_id() -> str:
    """A fresh run id; every scope key a memory run writes carries it, so runs never meet."""
    return "memspec-" + secrets.token_hex(4)


def check_capabilities(declared: frozenset[str], denied: frozenset[str]) -> None:
    """A capability both declared present and declared absent is a mistake (``TargetError``)."""
    if declared & denied:
        raise TargetError(
            f"capability declared both present and absent: {sorted(declared & denied)}"
        )


def open_driver(ctx: RunContext, protocol: str) -> Driver:
    """The driver of ``protocol`` on ``ctx``'s target (``TargetError`` when it cannot open)."""
    from conformance.drivers import driver_factory

    return driver_factory(protocol)(ctx)
