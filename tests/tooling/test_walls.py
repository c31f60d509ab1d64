"""The walls of DESIGN.md, checked on the source (architecture, not a spec clause):
``reference/`` imports nothing from ``conformance/`` and nothing that does I/O or reads a clock
or randomness; the harness reaches stores only over HTTP (only the CLI — ``cli.py`` and
``commands/`` — wires the bundled store in); the bundled store never uses the oracle, the
machines or the drivers.

An import is any of: ``import x``, ``from x import y``, a relative ``from .x import y`` (resolved
against the file's package), ``importlib.import_module("x")`` / ``__import__("x")`` with a
literal name (an f-string counts by its literal head), and a ``"module:attribute"`` registry
string (how :data:`conformance.drivers.DRIVERS` names a driver)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

IO_OR_CLOCK = {
    "os", "sys", "time", "datetime", "random", "secrets", "uuid", "socket", "sqlite3",
    "subprocess", "threading", "asyncio", "httpx", "urllib", "http", "pathlib", "io",
    "shutil", "tempfile", "logging", "conformance", "importlib",
}  # fmt: skip
#: The parts of conformance/ that may start the bundled store: the command line.
CLI = ["cli.py", "commands"]
_REGISTRY = re.compile(r"([A-Za-z_][\w.]*):[A-Za-z_]\w*")


def _dotted(name: str) -> set[str]:
    return {name, name.split(".")[0]} if name else set()


def _package(path: Path) -> list[str]:
    """The dotted parts of the package a file's relative imports start from."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1]  # a module's own package; for __init__.py, the package it makes


def _literal_head(node: ast.expr) -> str | None:
    """The module name a call's first argument spells: a literal, or an f-string's literal
    head (``f"conformance.commands.{name}"`` → ``conformance.commands``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value.rstrip(".")
    return None


def imports(path: Path, source: str | None = None) -> set[str]:
    """Top-level module names and full dotted names imported anywhere in a file."""
    text = path.read_text(encoding="utf-8") if source is None else source
    out: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for a in node.names:
                out |= _dotted(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(path)[: len(_package(path)) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            out |= _dotted(module)
            out |= {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                out |= _dotted(_literal_head(node.args[0]) or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _REGISTRY.fullmatch(node.value)
            if m and "." in m.group(1):
                out |= _dotted(m.group(1))
    return out


def files(*parts: str) -> list[Path]:
    base = ROOT.joinpath(*parts)
    return [base] if base.is_file() else sorted(base.rglob("*.py"))


def harness_files() -> list[Path]:
    """Every module of conformance/ but the bundled store itself and the command line."""
    skip = [ROOT / "conformance" / "embedded", *(ROOT / "conformance" / p for p in CLI)]
    return [
        p
        for p in files("conformance")
        if not any(p == s or s in p.parents for s in skip)
        and "_specs" not in p.relative_to(ROOT).parts
    ]


@pytest.mark.clause()
def test_the_import_scan_sees_every_form(tmp_path: Path) -> None:
    """The scan itself: the forms a wall could be broken in are all seen as imports."""
    path = ROOT / "conformance" / "drivers" / "probe.py"  # where the source pretends to live
    source = "\n".join(
        [
            "import importlib",
            "from . import memory",
            "from ..embedded import server",
            "from .. import oracle",
            "def f(name):",
            "    importlib.import_module('conformance.machines.memory')",
            "    __import__('sqlite3')",
            "    importlib.import_module(f'conformance.commands.{name}')",
            "REGISTRY = {'x': 'conformance.targets.memory:MemoryTarget'}",
            "NOT_AN_IMPORT = 'ratio: 3:1'",
        ]
    )
    seen = imports(path, source)
    assert {
        "conformance.drivers.memory",
        "conformance.embedded",
        "conformance.embedded.server",
        "conformance.oracle",
        "conformance.machines.memory",
        "sqlite3",
        "conformance.commands",
        "conformance.targets.memory",
    } <= seen
    assert not any(name.startswith("ratio") for name in seen)


@pytest.mark.clause()
def test_reference_is_pure() -> None:
    bad = {
        str(p.relative_to(ROOT)): sorted(imports(p) & IO_OR_CLOCK)
        for p in files("reference")
        if imports(p) & IO_OR_CLOCK
    }
    assert bad == {}


@pytest.mark.clause()
def test_imports_are_absolute() -> None:
    """``reference/`` and ``conformance/`` name every module they import in full
    (``from reference.ledger.records import …``), never relative to their own package."""
    relative = {
        str(p.relative_to(ROOT)): node.lineno
        for p in files("reference") + files("conformance")
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level
    }
    assert relative == {}


@pytest.mark.clause()
def test_the_harness_reaches_stores_only_over_http() -> None:
    checked = harness_files()
    assert len(checked) > 40  # the whole harness, not a list that can fall behind
    bad = [
        str(p.relative_to(ROOT))
        for p in checked
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


@pytest.mark.clause()
def test_only_the_command_line_imports_the_command_line() -> None:
    """The front end sits on top: no module of the harness imports ``conformance.commands`` or
    ``conformance.cli`` (the circle ``concurrent`` ↔ ``commands`` and the plugin reaching into
    ``commands.run`` were such arrows).  The bundled store's ``__main__`` calls the CLI, as an
    entry point does, and is outside the harness."""
    checked = harness_files()
    assert len(checked) > 40
    bad = [
        str(p.relative_to(ROOT))
        for p in checked
        if any(n == "conformance.cli" or n.startswith("conformance.commands") for n in imports(p))
    ]
    assert bad == []


def _front_end_of(module: str, front_ends: tuple[str, ...]) -> str | None:
    """The command a ``conformance.commands.…`` module name belongs to, if it is one's."""
    parts = module.split(".")
    if parts[:2] != ["conformance", "commands"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in front_ends else None


@pytest.mark.clause()
def test_no_front_end_imports_another_front_end() -> None:
    """The front ends (each command of ``cli.COMMAND_MODULES``; the pytest plugin) are thin and
    side by side: what two of them share lives below them (``conformance.engine``,
    ``session.py``) or in a helper module of ``commands/`` that is no command
    (``commands/target.py``, ``commands/launch.py``).  A helper named after a command
    (``selftest_engine.py``) is that command's own part and may import it."""
    from conformance.cli import COMMAND_MODULES

    commands = ROOT / "conformance" / "commands"
    checked = sorted(commands.rglob("*.py"))
    assert len(checked) > 10
    bad = []
    for path in checked:
        rel = path.relative_to(commands).with_suffix("").parts
        own = rel[0].split("_")[0] if rel[0] not in COMMAND_MODULES else rel[0]
        for name in imports(path):
            other = _front_end_of(name, COMMAND_MODULES)
            if other is not None and other != own:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    plugin = files("conformance", "pytest_plugin")
    assert plugin
    bad += [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in plugin
        for n in imports(p)
        if n == "conformance.cli" or n.startswith("conformance.commands")
    ]
    assert bad == []
