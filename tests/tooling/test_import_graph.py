"""The import graph between the parts of ``conformance/`` (architecture, not a spec clause).

A *part* is a subpackage (``targets``, ``oracle``, ...) or a top-level module (``runner``,
``scrub``, ...) of ``conformance/``.  Every import one part makes of another is an arrow, in
whatever form :func:`tests.tooling.test_walls.imports` sees it (an import inside a function
body or under ``TYPE_CHECKING`` included).  The graph must have no cycle, and no arrow may go
from a lower layer of :data:`LAYERS` to a higher one; ``docs/architecture.md`` (Layers) shows
the same table, and a test checks that it does.

An *entry point* (:data:`ENTRY_POINTS`: a module run as a program that calls the command line)
is a node of its own above every layer, not part of the package it sits in: calling
``memspec`` from ``python -m conformance.embedded`` is no arrow from the bundled store up to
the CLI."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.tooling.test_walls import ROOT, files, imports

#: The layers of ``conformance/``, lowest first.  A part may import the parts of its own layer
#: (without a cycle) and of every layer below it, never a part of a layer above.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    # The words and helpers every layer shares: the standard library only (``vocabulary`` and
    # ``jsonutil`` also use ``scrub``).
    ("ground", frozenset({"errors", "scrub", "jsonutil", "version", "vocabulary"})),
    # The bundled store: reached over HTTP only, so nothing above it is imported by it.
    ("store", frozenset({"embedded"})),
    # What a run reads: the clause registry, scenario files, clause sources, shards.
    ("formats", frozenset({"clauses", "scenario", "sources", "shard"})),
    # The HTTP client and the protocols' routes.
    ("targets", frozenset({"targets"})),
    # Which answers the model allows.
    ("oracle", frozenset({"oracle"})),
    # Model, target and oracle in lockstep.
    ("drivers", frozenset({"drivers"})),
    # A scenario to its end; opening a target's driver.
    ("runner", frozenset({"runner", "session"})),
    # The state machines, the worker processes, concurrent clients, the OpenAPI contract.
    ("exploration", frozenset({"machines", "workers", "concurrent", "contract"})),
    # What a run writes; the memory-off audit.
    ("results", frozenset({"report", "audit"})),
    # The run engine (the run pipeline) and, beside it, the engine binding.
    ("engine", frozenset({"engine", "binding"})),
    # The front ends: the command line, the pytest plugin, the reference engine host.
    ("front ends", frozenset({"cli", "commands", "pytest_plugin", "engine_host"})),
)

#: Modules run as programs that call the command line (``python -m …``): each is a node of its
#: own, above every layer.
ENTRY_POINTS = frozenset({"embedded/__main__.py", "commands/action.py"})

#: Arrows that break the rules today and are not fixed yet, as ``(from part, to part)`` with
#: the reason.  Each must still occur (a fixed one is taken off the list).
KNOWN: dict[tuple[str, str], str] = {}

CONFORMANCE = ROOT / "conformance"
_ENTRY = len(LAYERS)  # the layer of an entry point: above every other


def _part(path: Path) -> str:
    rel = path.relative_to(CONFORMANCE)
    if rel.as_posix() in ENTRY_POINTS:
        return rel.as_posix()
    return rel.parts[0].removesuffix(".py")


def _modules() -> list[Path]:
    """Every module of ``conformance/`` but the package's own ``__init__.py``."""
    return [
        p
        for p in files("conformance")
        if p != CONFORMANCE / "__init__.py" and "_specs" not in p.relative_to(ROOT).parts
    ]


def graph() -> dict[str, dict[str, set[str]]]:
    """``{from part: {to part: the files that import it}}`` (a part's own imports left out)."""
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in _modules():
        source = _part(path)
        out[source]  # a part that imports no other part is a node too
        for name in imports(path):
            if not name.startswith("conformance."):
                continue
            target = name.split(".")[1]
            if target != source:
                out[source][target].add(str(path.relative_to(ROOT)))
    return out


def layer_of(part: str) -> int:
    if part in ENTRY_POINTS:
        return _ENTRY
    for i, (_, parts) in enumerate(LAYERS):
        if part in parts:
            return i
    raise KeyError(part)


def cycles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one part (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def upward(edges: dict[str, dict[str, set[str]]]) -> dict[tuple[str, str], list[str]]:
    """Every arrow from a part to a part of a higher layer, with the files that make it."""
    return {
        (a, b): sorted(where)
        for a, targets in edges.items()
        for b, where in targets.items()
        if layer_of(b) > layer_of(a)
    }


@pytest.mark.clause()
def test_every_part_of_the_harness_has_a_layer() -> None:
    declared = [p for _, parts in LAYERS for p in parts]
    assert len(declared) == len(set(declared)), "a part is declared in two layers"
    edges = graph()
    assert {"targets", "oracle", "drivers", "vocabulary", "commands"} <= set(edges)
    parts = set(edges) | {b for targets in edges.values() for b in targets}
    undeclared = sorted(p for p in parts if p not in ENTRY_POINTS and p not in declared)
    assert undeclared == [], "give each part its layer in LAYERS (and in docs/architecture.md)"
    for entry in ENTRY_POINTS:
        assert (CONFORMANCE / entry).is_file(), f"entry point {entry} is gone"


@pytest.mark.clause()
def test_the_parts_of_the_harness_import_each_other_without_a_cycle() -> None:
    edges = graph()
    found = cycles(
        {a: {b: w for b, w in t.items() if (a, b) not in KNOWN} for a, t in edges.items()}
    )
    detail = {
        " ↔ ".join(c): {f"{a} -> {b}": sorted(edges[a][b]) for a in c for b in c if b in edges[a]}
        for c in found
    }
    assert found == [], detail


@pytest.mark.clause()
def test_no_part_imports_a_part_of_a_higher_layer() -> None:
    bad = {k: v for k, v in upward(graph()).items() if k not in KNOWN}
    assert bad == {}, "move the code down, or (only as a last resort) list the arrow in KNOWN"


@pytest.mark.clause()
def test_the_known_exceptions_still_occur() -> None:
    edges = graph()
    stale = sorted(k for k in KNOWN if k[1] not in edges.get(k[0], {}))
    assert stale == [], "fixed: take these arrows off KNOWN"


@pytest.mark.clause()
def test_the_scan_finds_cycles_and_upward_arrows() -> None:
    """The checks themselves, on a made-up graph: a cycle of two parts, an arrow from the
    targets up to the drivers, then a cycle through four parts."""
    edges = {
        "targets": {"drivers": {"t.py"}},
        "drivers": {"oracle": {"d.py"}, "targets": {"d.py"}},
        "oracle": {"scrub": {"o.py"}},
        "scrub": {},
    }
    assert cycles(edges) == [["drivers", "targets"]]
    assert upward(edges) == {("targets", "drivers"): ["t.py"]}
    edges["scrub"]["drivers"] = {"s.py"}
    assert cycles(edges) == [["drivers", "oracle", "scrub", "targets"]]


_DOC_ROW = re.compile(r"^\| (\d+) \| ([^|]+) \| ([^|]+) \|")


@pytest.mark.clause()
def test_the_architecture_page_shows_the_same_layers() -> None:
    """``docs/architecture.md`` (Layers) lists :data:`LAYERS` in order, one row each:
    ``| n | layer | `part.py`, `part/` | … |``."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = []
    for line in text.splitlines():
        m = _DOC_ROW.match(line)
        if m:
            names = re.findall(r"`([^`]+)`", m.group(3))
            parts = frozenset(n.rstrip("/").removesuffix(".py") for n in names)
            rows.append((int(m.group(1)), m.group(2).strip(), parts))
    assert rows == [(i, name, parts) for i, (name, parts) in enumerate(LAYERS, 1)]
