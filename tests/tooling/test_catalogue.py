"""The catalogue of altered bundled stores (allowed variants and mutants) is well formed:
every entry is reached by exactly the hook that names it, hooks name only real entries, and a
name the catalogue does not hold is refused wherever it is given."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.clauses import load_clauses
from conformance.embedded.catalogue import ENTRIES, REMOVED, Quirks, UnknownQuirk

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = ROOT / "conformance" / "embedded"


def hook_names() -> dict[str, list[str]]:
    """Every ``quirks("name")`` / ``self.quirks("name")`` call in the bundled store -> where."""
    found: dict[str, list[str]] = {}
    for path in sorted(EMBEDDED.rglob("*.py")):
        if "catalogue" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if name == "quirks" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.setdefault(arg.value, []).append(where)
    return found


@pytest.mark.clause()
def test_every_entry_has_a_hook_and_every_hook_an_entry() -> None:
    hooks = hook_names()
    assert sorted(set(hooks) - ENTRIES.keys()) == [], "hooks naming no catalogue entry"
    assert sorted(ENTRIES.keys() - set(hooks)) == [], "catalogue entries no hook reaches"


@pytest.mark.clause()
def test_entries_cite_defined_clauses() -> None:
    defined = set(load_clauses(ROOT / "specs"))
    bad = {e.name: [c for c in e.clauses if c not in defined] for e in ENTRIES.values()}
    assert {k: v for k, v in bad.items() if v} == {}


@pytest.mark.clause()
def test_removed_mutants_say_why_and_are_gone() -> None:
    assert all(reason.strip() for reason in REMOVED.values())
    assert set(REMOVED) & ENTRIES.keys() == set()


@pytest.mark.clause()
def test_an_unknown_name_is_refused() -> None:
    with pytest.raises(UnknownQuirk):
        Quirks(frozenset({"no-such-entry"}))
    with pytest.raises(UnknownQuirk):
        Quirks()("no-such-entry")


@pytest.mark.clause()
def test_serve_refuses_an_unknown_variant_with_one_line() -> None:
    env = {**os.environ, "MEMSPEC_TOKEN": "t0ken-for-the-test"}
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "serve", "--port", "0", "--db", ":memory:",
         "--variant", "no-such-entry"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "no-such-entry" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
