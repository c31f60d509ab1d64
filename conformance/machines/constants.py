"""The same seed explores the same examples, whatever modules happen to be imported.

Hypothesis (6.1xx) now and then draws a literal constant instead of a random value: from a
fixed global pool, and from a *local* pool it harvests from the source of every module in
``sys.modules`` that lives outside site-packages and the standard library.  That local pool
made a machine's exploration depend on things that have nothing to do with the seed:

* which of memspec's modules were imported when a batch ran (a module imported lazily in the
  middle of a run changed the later batches; a worker process imports fewer modules than the
  parent, so the same batch explored differently there than in a thread lane);
* how memspec is installed (a checkout or an editable install has local modules; a wheel in
  site-packages has none), so a user reproducing a seed on their machine got other examples.

:func:`pinned_local_constants` makes the local pool empty while memspec's own Hypothesis runs
draw (the global pool, which holds the classic edge values, stays), so a batch's examples depend
on its seed and the strategies alone.  It switches per thread: a user's own Hypothesis tests in
the same process (the pytest plugin) keep their local pool.  Hypothesis caches the constants
each draw may use in one process-wide cache computed from whichever pool was current, so the
cache is cleared whenever the pool in use changes.

An older Hypothesis without the local pool needs nothing pinned; if a newer one moves it,
``tests/harness/test_pinned_constants.py`` fails (exploration is compared with and without a
freshly imported local module full of constants).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

try:
    from hypothesis.internal.conjecture import providers as _providers
except ImportError:  # pragma: no cover - a Hypothesis laid out otherwise: nothing to pin
    _providers = None  # type: ignore[assignment]

_state = threading.local()
_lock = threading.Lock()
_original: Callable[[], Any] | None = None
_empty: Any = None
_last_pinned: bool | None = None


def _local_constants() -> Any:
    """Hypothesis's ``_get_local_constants``, answering an empty pool in a pinned thread."""
    global _last_pinned
    pinned = bool(getattr(_state, "pinned", 0))
    if pinned != _last_pinned:
        # The cache of usable constants was filled from the other pool: start it afresh.
        _providers.CONSTANTS_CACHE.cache.clear()
        _last_pinned = pinned
    if pinned:
        return _empty
    assert _original is not None
    return _original()


def _install() -> bool:
    """Put :func:`_local_constants` in Hypothesis's place once; False if there is nothing to
    pin in this Hypothesis."""
    global _original, _empty
    if _providers is None or not hasattr(_providers, "_get_local_constants"):
        return False
    with _lock:
        if _original is None:
            from hypothesis.internal.constants_ast import Constants

            _empty = Constants()
            _original = _providers._get_local_constants
            _providers._get_local_constants = _local_constants
    return True


@contextmanager
def pinned_local_constants() -> Iterator[None]:
    """Hypothesis runs in this thread, inside the block, draw no module-harvested constant."""
    if not _install():
        yield
        return
    _state.pinned = getattr(_state, "pinned", 0) + 1
    try:
        yield
    finally:
        _state.pinned -= 1
