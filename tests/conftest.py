"""Shared test configuration: Hypothesis profiles (select with HYPOTHESIS_PROFILE).

The names are the machines' profile names (``conformance/machines/profiles.py``): ``quick``
(the default, for working), ``ci`` (derandomized) and ``deep``; ``dev``, the old name of
``quick``, is still accepted."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("quick", max_examples=40, deadline=None)
settings.register_profile("dev", settings.get_profile("quick"))  # the old name of quick
settings.register_profile(
    "ci",
    max_examples=120,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=3000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


#: The tests marked ``slow`` (each tens of seconds: whole runs compared, shrinking to its end,
#: every hostile mode) run only with this set, as ``make slow-check`` and CI do.
SLOW = os.environ.get("MEMSPEC_SLOW_TESTS") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the ``slow`` tests unless ``MEMSPEC_SLOW_TESTS=1``."""
    if SLOW:
        return
    skip = pytest.mark.skip(
        reason="slow: run with `make slow-check` (MEMSPEC_SLOW_TESTS=1), as CI does"
    )
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
