"""Size limits on the product code (``reference/``, ``conformance/``), checked on the source by
AST (a tooling rule, not a spec clause): no function over :data:`MAX_FUNCTION_LINES` lines and no
class over :data:`MAX_CLASS_ATTRIBUTES` attributes.

A function's size is ``end_lineno - lineno + 1`` of its ``def`` (decorators left out, docstring
and nested functions counted in). A class's attributes are its annotated class fields (a
dataclass's fields) and the instance attributes its methods assign (``self.x = …``,
``self.x: T = …``, ``self.x += …``), each name once.

A function or class may go over a limit only with a comment on its ``def``/``class`` line
saying why, in the form ``# long: <why>`` with a non-empty why (a table of data such as one
long argparse registration, or a record whose fields are a wire format)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("reference", "conformance")
MAX_FUNCTION_LINES = 60
MAX_CLASS_ATTRIBUTES = 15
#: The exemption comment; the why is what follows the colon and must not be blank.
EXEMPTION = re.compile(r"#\s*long:(?P<why>.*)$")

pytestmark = pytest.mark.clause()


@dataclass(frozen=True)
class Oversize:
    """One function or class over its limit, where it is and by how much."""

    where: str
    kind: str
    name: str
    size: int
    limit: int

    def __str__(self) -> str:
        unit = "lines" if self.kind == "function" else "attributes"
        return f"{self.where} {self.kind} {self.name}: {self.size} {unit} (limit {self.limit})"


def exempted(lines: list[str], lineno: int) -> bool:
    """Whether the source line ``lineno`` (1-based) carries a ``# long: <why>`` comment with a
    non-empty why."""
    m = EXEMPTION.search(lines[lineno - 1])
    return m is not None and m.group("why").strip() != ""


def _self_name(method: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    params = [*method.args.posonlyargs, *method.args.args]
    return params[0].arg if params else None


def class_attributes(cls: ast.ClassDef) -> set[str]:
    """The attribute names a class declares: its annotated class fields and the ``self.x``
    its own methods assign (nested functions included, nested classes not)."""
    names: set[str] = set()
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            me = _self_name(node)
            for sub in ast.walk(node):
                targets: list[ast.expr] = []
                if isinstance(sub, ast.Assign):
                    targets = sub.targets
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                    targets = [sub.target]
                for target in targets:
                    for e in ast.walk(target):
                        if (
                            isinstance(e, ast.Attribute)
                            and isinstance(e.value, ast.Name)
                            and e.value.id == me
                        ):
                            names.add(e.attr)
    return names


def oversized(relative: str, source: str) -> list[Oversize]:
    """Every function and class of one file over its limit and not exempted on its line."""
    lines = source.splitlines()
    out: list[Oversize] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > MAX_FUNCTION_LINES and not exempted(lines, node.lineno):
                where = f"{relative}:{node.lineno}"
                out.append(Oversize(where, "function", node.name, size, MAX_FUNCTION_LINES))
        elif isinstance(node, ast.ClassDef):
            size = len(class_attributes(node))
            if size > MAX_CLASS_ATTRIBUTES and not exempted(lines, node.lineno):
                where = f"{relative}:{node.lineno}"
                out.append(Oversize(where, "class", node.name, size, MAX_CLASS_ATTRIBUTES))
    return out


def _product_files() -> list[tuple[str, str]]:
    files = []
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            files.append((relative, path.read_text(encoding="utf-8")))
    return files


def test_no_function_or_class_over_its_limit() -> None:
    found = [o for relative, source in _product_files() for o in oversized(relative, source)]
    assert not found, (
        "split these (extract named helpers / group fields into a small dataclass), or say why "
        "on the def/class line with '# long: <why>':\n" + "\n".join(map(str, found))
    )


def test_the_checker_sees_a_long_function_and_a_wide_class() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    wide = "".join(f"        self.a{i} = {i}\n" for i in range(MAX_CLASS_ATTRIBUTES + 1))
    source = f"def f():\n{body}\nclass C:\n    def __init__(self):\n{wide}"
    assert [(o.kind, o.name) for o in oversized("x.py", source)] == [
        ("function", "f"),
        ("class", "C"),
    ]


def test_an_exemption_needs_its_why() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert oversized("x.py", f"def f():  # long: a table of options\n{body}") == []
    assert [o.name for o in oversized("x.py", f"def f():  # long:   \n{body}")] == ["f"]
    assert [o.name for o in oversized("x.py", f"def f():  # long\n{body}")] == ["f"]


def test_fields_of_a_dataclass_and_assigned_attributes_count_once() -> None:
    fields = "".join(f"    f{i}: int\n" for i in range(MAX_CLASS_ATTRIBUTES))
    source = f"class D:\n{fields}    def g(self):\n        self.f0 = 1\n        self.extra = 2\n"
    cls = ast.parse(source).body[0]
    assert isinstance(cls, ast.ClassDef)
    assert class_attributes(cls) == {f"f{i}" for i in range(MAX_CLASS_ATTRIBUTES)} | {"extra"}
