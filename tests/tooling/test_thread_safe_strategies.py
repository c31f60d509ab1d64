"""The state machines run on lanes that are threads, and Hypothesis describes a lambda given to
it (a precondition, a strategy's ``map``/``filter``/``flatmap``) by parsing the lambda's source
with ``ast.parse``: CPython 3.11 does not do that safely from several threads at once
("SystemError: AST constructor recursion depth mismatch"), and the batch then ends in a
``FlakyFailure`` -- a harness error on a conforming store.  So the harness hands Hypothesis
named functions only (``conformance/machines``: what runs on lanes; the engine binding's
properties run on one thread)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the calls through which Hypothesis gets a function it may describe
DESCRIBED = frozenset({"precondition", "map", "filter", "flatmap", "invariant", "builds"})


def lambdas_given_to_hypothesis(source: str) -> list[int]:
    """Line numbers of lambdas passed to one of :data:`DESCRIBED`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in DESCRIBED:
            args = [*node.args, *(k.value for k in node.keywords)]
            found += [a.lineno for a in args if isinstance(a, ast.Lambda)]
    return found


@pytest.mark.clause()
def test_the_harness_gives_hypothesis_no_lambda() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "conformance" / "machines").rglob("*.py"))
        for line in lambdas_given_to_hypothesis(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], f"use a named function (see this module's docstring): {offenders}"


@pytest.mark.clause()
def test_the_check_sees_a_lambda_precondition_and_a_lambda_map() -> None:
    source = (
        "@precondition(lambda self: True)\ndef f(): pass\n"
        "s = st.integers().map(lambda x: x)\nt = st.integers().map(str)\n"
    )
    assert lambdas_given_to_hypothesis(source) == [1, 3]
