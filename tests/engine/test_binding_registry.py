"""The binding's registry: every family module under ``conformance/binding/functions/`` is
listed in ``FAMILIES`` once, and every function name is unique."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import conformance.binding.functions as registry

#: modules of the package that hold no family (the entry type, the shared strategies)
NOT_FAMILIES = frozenset(
    {
        "conformance.binding.functions.base",
        "conformance.binding.functions.common",
        "conformance.binding.functions.ledger.common",
    }
)


def _family_modules() -> list[str]:
    found = []
    for info in pkgutil.walk_packages(registry.__path__, registry.__name__ + "."):
        if info.ispkg or info.name in NOT_FAMILIES:
            continue
        found.append(info.name)
    return sorted(found)


@pytest.mark.clause()
def test_every_family_module_is_registered_once() -> None:
    registered = [m.__name__ for m in registry.FAMILIES]
    assert len(registered) == len(set(registered))
    assert sorted(registered) == _family_modules()
    for name in _family_modules():
        assert importlib.import_module(name).FUNCTIONS, f"{name} registers no function"


@pytest.mark.clause()
def test_function_names_are_unique_and_the_registry_is_every_family_in_order() -> None:
    names = [f.name for f in registry.FUNCTIONS]
    assert len(names) == len(set(names)) == len(registry.BY_NAME)
    assert names == [f.name for m in registry.FAMILIES for f in m.FUNCTIONS]
