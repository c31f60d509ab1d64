"""pytest plugin shipped with memspec (registered through the ``pytest11`` entry point).

It registers the ``clause`` marker so any suite can tag tests with the clause ids they cover.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "clause(*ids): the spec clause ids (MEM-…, LED-…) this test covers"
    )
