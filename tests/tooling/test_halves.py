"""The two protocols side by side (architecture, not a spec clause): the table "The two halves
side by side" of ``docs/architecture.md`` names only modules that exist, and the parts whose
roles match keep one shape -- a package per protocol (one module per protocol in ``targets/``),
the same module names, one entry point name for the wire layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conformance.drivers import DRIVERS
from conformance.machines.explore import MACHINES

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PROTOCOLS = ("memory", "ledger")
#: The parts of ``conformance/`` where each protocol is a package (``<part>/memory/``,
#: ``<part>/ledger/``).
PACKAGE_PER_PROTOCOL = ("embedded", "machines", "oracle", "drivers", "concurrent")
#: The part where each protocol is one module (``targets/memory.py``, ``targets/ledger.py``: the
#: protocol's routes and capability probes).
MODULE_PER_PROTOCOL = ("targets",)


def side_by_side() -> list[list[str]]:
    """The rows of the side-by-side table: part, role, memory, ledger."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## The two halves side by side", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| `")
    ]
    assert rows, "the side-by-side table is missing"
    return rows


def _paths(cell: str) -> list[str]:
    return [t for t in re.findall(r"`([^`]+)`", cell) if t.endswith((".py", "/"))]


@pytest.mark.clause()
def test_the_side_by_side_table_names_modules_that_exist() -> None:
    missing = []
    for part, _role, *halves in side_by_side():
        name = part.strip("`")
        base = ROOT / name if name == "reference/" else ROOT / "conformance" / name
        assert base.is_dir(), part
        missing += [
            f"{name}{p}" for cell in halves for p in _paths(cell) if not (base / p).exists()
        ]
    assert missing == []


@pytest.mark.clause()
def test_every_part_of_the_table_has_one_of_the_two_shapes() -> None:
    parts = {part.strip("`").rstrip("/") for part, *_ in side_by_side()} - {"reference"}
    assert parts == {*PACKAGE_PER_PROTOCOL, *MODULE_PER_PROTOCOL}


@pytest.mark.clause()
def test_protocol_modules_live_in_a_package_per_protocol() -> None:
    for part in PACKAGE_PER_PROTOCOL:
        base = ROOT / "conformance" / part
        loose = [p.name for p in base.glob("*.py") if p.name.startswith(PROTOCOLS)]
        assert loose == [], f"conformance/{part}/: {loose} belong in its protocol's package"
        for protocol in PROTOCOLS:
            assert (base / protocol / "__init__.py").is_file(), f"{part}/{protocol}/"


@pytest.mark.clause()
def test_targets_keep_one_module_per_protocol() -> None:
    for part in MODULE_PER_PROTOCOL:
        base = ROOT / "conformance" / part
        named = sorted(p.name for p in base.iterdir() if p.name.startswith(PROTOCOLS))
        assert named == sorted(f"{protocol}.py" for protocol in PROTOCOLS), f"conformance/{part}/"


def _modules(part: str) -> dict[str, set[str]]:
    return {p: {m.stem for m in (ROOT / "conformance" / part / p).glob("*.py")} for p in PROTOCOLS}


@pytest.mark.clause()
def test_the_driver_and_checker_model_packages_share_one_shape() -> None:
    drivers = _modules("drivers")
    assert {"__init__", "driver", "steps"} <= drivers["memory"] & drivers["ledger"]
    registry = {p: f"conformance.drivers.{p}.driver:{p.capitalize()}Driver" for p in PROTOCOLS}
    assert DRIVERS == registry
    models = _modules("concurrent")
    assert {"__init__", "model"} <= models["ledger"] <= models["memory"]


@pytest.mark.clause()
def test_the_machine_packages_share_one_shape() -> None:
    modules = _modules("machines")
    assert {"__init__", "alphabet", "base", "lifecycle", "reads"} <= modules["memory"]
    assert modules["memory"] <= modules["ledger"]
    assert MACHINES == {p: f"conformance.machines.{p}:{p.capitalize()}Machine" for p in PROTOCOLS}


@pytest.mark.clause()
def test_the_wire_layers_have_one_entry_point_name() -> None:
    for protocol in PROTOCOLS:
        path = ROOT / "reference" / protocol / "wire" / "handle.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "handle" in names, path
