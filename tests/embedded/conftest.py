"""Fixtures for the bundled store's tests (the helpers live in ``tests.common.memory_store``)."""

from tests.common.memory_store import make_store, scope, store

__all__ = ["make_store", "scope", "store"]
