"""``memspec clauses -v ID …``: one clause and everything about it, one hop each.

For each id: its title, source and seed quotes; where its text is (``specs/<file>.md:line``);
the model functions whose docstrings cite it (``reference/``, read by AST, as
``module.function``); the corpus scenarios naming it and the steps naming it; the state-machine
rules declaring it (``@checks``, :mod:`conformance.machines.checks`) and the transport probes
naming it; the catalogue's mutants and variants (store and engine) naming it; the engine-binding
functions naming it (their vectors, ``<function>/<nnnn>``, carry the function's clauses); and
the tests marking it.  Every kind is listed, ``none`` when nothing names the clause.
"""

from __future__ import annotations

import ast
import difflib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from conformance.clauses import CLAUSE_ID, Clause, Coverage
from conformance.errors import UsageError

#: The kinds of things a clause is named by, in the order they are printed.
KINDS = (
    "text",
    "model",
    "scenario",
    "step",
    "rule",
    "probe",
    "mutant",
    "variant",
    "engine",
    "test",
)
Found = dict[str, dict[str, list[str]]]  # clause id -> kind -> items


def _rel(path: Path, base: Path) -> str:
    path = path.resolve()
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)


def check_ids(ids: list[str], clauses: dict[str, Clause]) -> None:
    """A usage error (one line) naming the first id no spec defines, and the closest known."""
    for cid in ids:
        if cid not in clauses:
            close = difflib.get_close_matches(cid, list(clauses), n=3, cutoff=0.6)
            hint = f" (closest: {', '.join(close)})" if close else ""
            raise UsageError(f"no clause {cid} in the specs{hint}")


def _docstring_owners(tree: ast.Module, module: str) -> Iterator[tuple[str, int, str]]:
    """``(module.Class.function, line, docstring)`` for every function and class with one."""

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, int, str]]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node)
                if doc:
                    yield f"{prefix}{node.name}", node.lineno, doc
                if isinstance(node, ast.ClassDef):
                    yield from walk(node.body, f"{prefix}{node.name}.")

    yield from walk(tree.body, f"{module}.")


def model_citations(reference_dir: Path, base: Path, wanted: set[str]) -> dict[str, list[str]]:
    """clause id -> ``module.function (file:line)`` for each docstring under ``reference_dir``
    that cites it exactly."""
    out: dict[str, list[str]] = {}
    for path in sorted(reference_dir.rglob("*.py")):
        parts = path.relative_to(reference_dir.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, line, doc in _docstring_owners(tree, module):
            for cid in dict.fromkeys(CLAUSE_ID.findall(doc)):
                if cid in wanted:
                    out.setdefault(cid, []).append(f"{name} ({_rel(path, base)}:{line})")
    return out


def corpus_steps(corpus_dir: Path, base: Path, wanted: set[str]) -> dict[str, list[str]]:
    """clause id -> ``file step N (op)`` for each corpus step that names it itself."""
    out: dict[str, list[str]] = {}
    for path in sorted(corpus_dir.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        steps = data.get("steps") if isinstance(data, dict) else None
        for i, step in enumerate(steps if isinstance(steps, list) else []):
            named = step.get("clauses") if isinstance(step, dict) else None
            for cid in dict.fromkeys(named if isinstance(named, list) else []):
                if cid in wanted:
                    out.setdefault(cid, []).append(f"{_rel(path, base)} step {i} ({step['op']})")
    return out


def harness_names(wanted: set[str], base: Path) -> dict[str, dict[str, list[str]]]:
    """kind -> clause id -> items, for the machines' rules and probes, the catalogues and the
    engine-binding functions."""
    from conformance.binding.catalogue import ENTRIES_LIST
    from conformance.binding.functions import FUNCTIONS
    from conformance.embedded import catalogue
    from conformance.machines import MACHINES, machine_class
    from conformance.machines.checks import machine_rules
    from conformance.machines.probes import PROBES

    out: dict[str, dict[str, list[str]]] = {k: {} for k in ("rule", "probe", "mutant", "variant")}
    out["engine"] = {}

    def add(kind: str, clauses: tuple[str, ...], item: str) -> None:
        for cid in dict.fromkeys(clauses):
            if cid in wanted:
                out[kind].setdefault(cid, []).append(item)

    for protocol in MACHINES:
        for r in machine_rules(machine_class(protocol)):
            add("rule", r.clauses, f"{r.qualname} ({_rel(Path(r.path), base)}:{r.line})")
    for protocol, probes in PROBES.items():
        for name, (clauses, _args) in probes.items():
            add("probe", clauses, f"{protocol}-probe:{name}")
    for e in catalogue.ENTRIES.values():
        race = ", race" if e.race else ""
        add(e.kind, e.clauses, f"{e.name} ({e.protocol}{race}): {e.summary}")
    for x in ENTRIES_LIST:
        add(x.kind, x.clauses, f"{x.name} (engine, {x.function}): {x.summary}")
    for fn in FUNCTIONS:
        add("engine", fn.rules, f"{fn.name} ({fn.spec}; vectors {fn.name}/*): {fn.summary}")
    return out


def gather(ids: list[str], cov: Coverage, dirs: Mapping[str, Path], base: Path) -> Found:
    """Everything that names each of ``ids`` (known ids), by kind, paths shown relative to
    ``base``.  ``dirs``: the ``specs``, ``reference`` and ``corpus`` folders."""
    wanted = set(ids)
    found: Found = {cid: {k: [] for k in KINDS} for cid in ids}
    specs, reference, corpus = dirs["specs"], dirs["reference"], dirs["corpus"]
    for cid in ids:
        c = cov.clauses[cid]
        found[cid]["text"] = [f"{_rel(specs / c.spec_file, base)}:{c.line}"]
        found[cid]["scenario"] = list(cov.scenarios.get(cid, []))
        found[cid]["test"] = list(cov.tests.get(cid, []))
    by_kind: dict[str, dict[str, list[str]]] = {
        "model": model_citations(reference, base, wanted),
        "step": corpus_steps(corpus, base, wanted),
        **harness_names(wanted, base),
    }
    for kind, per_clause in by_kind.items():
        for cid, items in per_clause.items():
            found[cid][kind] = items
    return found


def render(ids: list[str], cov: Coverage, found: Found) -> list[str]:
    """The text view: a heading per clause, then one line per item, kind by kind."""
    lines: list[str] = []
    for cid in ids:
        c = cov.clauses[cid]
        retired = " (retired)" if c.retired else ""
        lines.append(f"{cid} — {c.title}{retired}")
        lines.append(f"  {'source':<9} {c.source or '?'}")
        lines += [f'  {"quote":<9} {q.where} "{q.words}"' for q in c.quotes]
        for kind in KINDS:
            items = found[cid][kind] or ["none"]
            lines += [f"  {kind:<9} {item}" for item in items]
        lines.append("")
    return lines[:-1]


def as_json(ids: list[str], cov: Coverage, found: Found) -> dict[str, Any]:
    return {
        cid: {
            "title": cov.clauses[cid].title,
            "source": cov.clauses[cid].source,
            "retired": cov.clauses[cid].retired,
            "quotes": [{"where": q.where, "words": q.words} for q in cov.clauses[cid].quotes],
            **found[cid],
        }
        for cid in ids
    }
