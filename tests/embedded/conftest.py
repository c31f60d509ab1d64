"""Fixtures for the bundled store's tests (the helpers live in ``memory_helpers``)."""

from memory_helpers import make_store, scope, store

__all__ = ["make_store", "scope", "store"]
