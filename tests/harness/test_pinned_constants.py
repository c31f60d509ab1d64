"""A seed explores the same examples whatever modules are imported (conformance.machines.
constants): Hypothesis's pool of constants harvested from local modules is pinned empty while
memspec's own runs draw, so a module imported mid-run, a worker process importing fewer modules,
or an install in site-packages cannot change a machine's steps."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conformance.machines.constants import pinned_local_constants


def _draws(seed: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []

    @settings(max_examples=300, database=None, suppress_health_check=list(HealthCheck))
    @given(st.integers(0, 10**6), st.text(max_size=8))
    def collect(i: int, s: str) -> None:
        out.append((i, s))

    hypothesis_seed(seed)(collect)()
    return out


def _import_constants_module(tmp_path: Path, name: str) -> None:
    """A fresh local module (outside site-packages) full of literals Hypothesis would harvest."""
    ints = ", ".join(str(100_003 * n + 7) for n in range(1, 60))
    strs = ", ".join(repr(f"konst{n}x") for n in range(60))
    (tmp_path / f"{name}.py").write_text(f"INTS = ({ints},)\nSTRS = ({strs},)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


@pytest.mark.clause()
def test_a_module_imported_between_runs_does_not_change_the_examples(tmp_path: Path) -> None:
    with pinned_local_constants():
        before = _draws(20261201)
    _import_constants_module(tmp_path, "memspec_pin_probe_a")
    with pinned_local_constants():
        after = _draws(20261201)
    assert before == after
    drawn = {s for _, s in after}
    assert not any(s.startswith("konst") for s in drawn)


def _konst(seeds: range, pinned: bool) -> bool:
    """Whether any of the runs drew one of the probe module's strings."""
    for seed in seeds:
        if pinned:
            with pinned_local_constants():
                draws = _draws(seed)
        else:
            draws = _draws(seed)
        if any(s.startswith("konst") for _, s in draws):
            return True
    return False


@pytest.mark.clause()
def test_outside_the_pin_hypothesis_keeps_its_local_pool(tmp_path: Path) -> None:
    """The pin is memspec's own: a user's Hypothesis test in the same process (the pytest
    plugin) still draws the constants of its modules, and the cache Hypothesis shares between
    runs carries neither pool into the other kind of run."""
    _import_constants_module(tmp_path, "memspec_pin_probe_b")
    assert _konst(range(5), pinned=False)  # the user's run harvests and caches the pool
    assert not _konst(range(5), pinned=True)  # memspec's run does not see it
    assert _konst(range(5), pinned=False)  # and the user's run gets it back
