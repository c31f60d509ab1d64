"""The walls of DESIGN.md, checked on the source (architecture, not a spec clause):
``reference/`` imports nothing from ``conformance/`` and nothing that does I/O or reads a clock
or randomness; the harness reaches stores only over HTTP (only the CLI wires the bundled store
in); the bundled store never uses the oracle or the state machines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

IO_OR_CLOCK = {
    "os", "sys", "time", "datetime", "random", "secrets", "uuid", "socket", "sqlite3",
    "subprocess", "threading", "asyncio", "httpx", "urllib", "http", "pathlib", "io",
    "shutil", "tempfile", "logging", "conformance",
}  # fmt: skip
HARNESS = ["targets", "drivers", "oracle", "machines", "report", "runner.py", "scenario.py",
           "pytest_plugin.py", "audit"]  # fmt: skip


def imports(path: Path) -> set[str]:
    """Top-level module names and full dotted names imported anywhere in a file."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                out |= {a.name, a.name.split(".")[0]}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module, node.module.split(".")[0]}
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def files(*parts: str) -> list[Path]:
    base = ROOT.joinpath(*parts)
    return [base] if base.is_file() else sorted(base.rglob("*.py"))


@pytest.mark.clause()
def test_reference_is_pure() -> None:
    bad = {
        str(p.relative_to(ROOT)): sorted(imports(p) & IO_OR_CLOCK)
        for p in files("reference")
        if imports(p) & IO_OR_CLOCK
    }
    assert bad == {}


@pytest.mark.clause()
def test_the_harness_reaches_stores_only_over_http() -> None:
    bad = [
        str(p.relative_to(ROOT))
        for part in HARNESS
        for p in files("conformance", part)
        if any(name.startswith("conformance.embedded") for name in imports(p))
    ]
    assert bad == []


@pytest.mark.clause()
def test_the_bundled_store_never_uses_the_oracle_or_machines() -> None:
    forbidden = ("conformance.oracle", "conformance.machines", "conformance.drivers")
    bad = [
        str(p.relative_to(ROOT))
        for p in files("conformance", "embedded")
        if any(name.startswith(forbidden) for name in imports(p))
    ]
    assert bad == []
