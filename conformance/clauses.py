"""Clause registry: which clauses the specs define and which tests and scenarios cover them.

Clauses are read from ``specs/*.md`` headings of the form ``### MEM-SCORE.1 — title`` (or
``LED-…``); a clause whose block holds ``- **Status:** retired`` is kept for its id but needs no
coverage.  Coverage is found without importing or running anything:

* tests: an AST scan of ``tests/**/test_*.py`` for ``pytest.mark.clause("ID", …)`` on test
  functions, on their classes, or in a module-level ``pytestmark``;
* scenarios: ``conformance/corpus/**/*.json`` files with a top-level ``"clauses"`` list.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

CLAUSE_ID = re.compile(r"\b(?:MEM|LED)-[A-Z][A-Z0-9]*\.\d+\b")
_HEADING = re.compile(r"^###\s+((?:MEM|LED)-[A-Z][A-Z0-9]*\.\d+)\b\s*(?:[—:-]\s*)?(.*)$")
_FIELD = re.compile(r"^-\s+\*\*(\w[\w ]*):\*\*\s*(.*)$")


@dataclass
class Clause:
    id: str
    title: str
    source: str
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def retired(self) -> bool:
        return self.fields.get("Status", "").strip().lower().startswith("retired")

    @property
    def level(self) -> str:
        return self.fields.get("Level", "").strip()

    @property
    def observable(self) -> str:
        return self.fields.get("Observable", "").strip()


@dataclass
class Coverage:
    clauses: dict[str, Clause]
    tests: dict[str, list[str]]  # clause id -> test node ids
    scenarios: dict[str, list[str]]  # clause id -> scenario files
    unknown: dict[str, list[str]]  # cited id that no spec defines -> where it was cited

    def uncovered(self) -> list[Clause]:
        return [
            c
            for c in self.clauses.values()
            if not c.retired and not self.tests.get(c.id) and not self.scenarios.get(c.id)
        ]


def parse_spec(path: Path) -> list[Clause]:
    """Read the clauses of one spec file, in file order; duplicate ids are an error."""
    clauses: list[Clause] = []
    current: Clause | None = None
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _HEADING.match(line)
        if m:
            current = Clause(id=m.group(1), title=m.group(2).strip(), source=path.name)
            clauses.append(current)
            continue
        if line.startswith("#"):
            current = None
            continue
        if current is not None:
            f = _FIELD.match(line.strip())
            if f:
                current.fields.setdefault(f.group(1).strip(), f.group(2).strip())
    seen: set[str] = set()
    for c in clauses:
        if c.id in seen:
            raise ValueError(f"{path}: clause {c.id} is defined twice")
        seen.add(c.id)
    return clauses


def load_clauses(specs_dir: Path) -> dict[str, Clause]:
    out: dict[str, Clause] = {}
    for path in sorted(specs_dir.glob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        for c in parse_spec(path):
            if c.id in out:
                raise ValueError(f"clause {c.id} is defined in {out[c.id].source} and {path.name}")
            out[c.id] = c
    return out


def _clause_args(decorators: Iterable[ast.expr]) -> list[str]:
    ids: list[str] = []
    for dec in decorators:
        for node in ast.walk(dec):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "clause"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        ids.extend(CLAUSE_ID.findall(arg.value))
    return ids


def _pytestmark_ids(body: list[ast.stmt]) -> list[str]:
    ids: list[str] = []
    for node in body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            ids.extend(_clause_args([node.value]))
    return ids


def _visit_tests(
    body: list[ast.stmt], rel: str, prefix: str, inherited: list[str], found: dict[str, list[str]]
) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            cls_ids = inherited + _clause_args(node.decorator_list) + _pytestmark_ids(node.body)
            _visit_tests(node.body, rel, f"{prefix}{node.name}::", cls_ids, found)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            ids = inherited + _clause_args(node.decorator_list)
            for cid in dict.fromkeys(ids):
                found.setdefault(cid, []).append(f"{rel}::{prefix}{node.name}")
        elif isinstance(node, ast.Assign) and prefix == "":
            # A Hypothesis state machine exposed as ``TestX = Machine.TestCase`` carries its
            # clauses in a module-level ``CLAUSES_TestX = ("MEM-…", …)`` (a marker cannot be
            # put on the generated class).
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id.startswith("CLAUSES_"):
                    ids = CLAUSE_ID.findall(ast.unparse(node.value))
                    for cid in dict.fromkeys(ids):
                        found.setdefault(cid, []).append(f"{rel}::{t.id[len('CLAUSES_') :]}")


def scan_tests(tests_dir: Path, root: Path) -> dict[str, list[str]]:
    """Map clause id -> test node ids, from the source of every ``test_*.py`` under tests_dir."""
    found: dict[str, list[str]] = {}
    for path in sorted(tests_dir.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        _visit_tests(tree.body, rel, "", _pytestmark_ids(tree.body), found)
    return found


def scan_scenarios(corpus_dir: Path, root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    if not corpus_dir.is_dir():
        return found
    for path in sorted(corpus_dir.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        for cid in dict.fromkeys(data.get("clauses") or []):
            if isinstance(cid, str):
                found.setdefault(cid, []).append(rel)
    return found


def coverage(root: Path) -> Coverage:
    clauses = load_clauses(root / "specs")
    tests = scan_tests(root / "tests", root)
    scenarios = scan_scenarios(root / "conformance" / "corpus", root)
    unknown: dict[str, list[str]] = {}
    for source in (tests, scenarios):
        for cid, where in source.items():
            if cid not in clauses:
                unknown.setdefault(cid, []).extend(where)
    return Coverage(clauses=clauses, tests=tests, scenarios=scenarios, unknown=unknown)
