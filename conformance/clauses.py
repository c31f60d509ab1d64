"""Clause registry: which clauses the specs define and which tests and scenarios cover them.

Clauses are read from ``specs/*.md`` headings of the form ``### MEM-SCORE.1 — title`` (or
``LED-…``); a clause whose block holds ``- **Status:** retired`` is kept for its id but needs no
coverage.  Each clause declares where its rule comes from (``- **Source:** seed | binding |
reference``); a ``seed`` clause quotes the seed's words in one or more
``- **Quote:** <section> "<words>"`` lines, which :func:`quote_problems` finds in the seed text.
Coverage is found without importing or running anything:

* tests: an AST scan of ``tests/**/test_*.py`` for ``pytest.mark.clause("ID", …)`` on test
  functions, on their classes, or in a module-level ``pytestmark`` (a spread
  ``*MACHINE_CLAUSES`` imported from ``conformance`` is the one thing imported to be read);
* scenarios: ``conformance/corpus/**/*.json`` files with a top-level ``"clauses"`` list.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: Where a clause's rule comes from (specs/README.md): the seed's own words; memspec's wire
#: binding for the ledger, whose seed has no wire format; or the reference implementation (an
#: upstream fact or this project's pick the seed does not state).
SOURCES = ("seed", "binding", "reference")
#: The seed file each spec restates (in the shared seeds folder, beside the repository).
SEED_FILES = {"memory.md": "000_8e81c92b6ab8d572.txt", "ledger.md": "003_4d57c2dcdb418a9c.txt"}

CLAUSE_ID = re.compile(r"\b(?:MEM|LED)-[A-Z][A-Z0-9]*\.\d+\b")
_HEADING = re.compile(r"^###\s+((?:MEM|LED)-[A-Z][A-Z0-9]*\.\d+)\b\s*(?:[—:-]\s*)?(.*)$")
_FIELD = re.compile(r"^-\s+\*\*(\w[\w ]*):\*\*\s*(.*)$")
_QUOTE = re.compile(r'^(?P<where>[^"]+?)\s+"(?P<words>.+)"$')


@dataclass(frozen=True)
class Quote:
    """Words of the seed a clause restates, and the section they stand in (``§5``,
    ``validation table``; for the ledger a section heading, or ``opening``)."""

    where: str
    words: str


@dataclass
class Clause:
    id: str
    title: str
    spec_file: str
    fields: dict[str, str] = field(default_factory=dict)
    quotes: list[Quote] = field(default_factory=list)
    bad_quotes: list[str] = field(default_factory=list)  # Quote lines that do not parse
    line: int = 0  # the heading's line in its spec file (1-based)

    @property
    def retired(self) -> bool:
        return self.fields.get("Status", "").strip().lower().startswith("retired")

    @property
    def level(self) -> str:
        return self.fields.get("Level", "").strip()

    @property
    def observable(self) -> str:
        return self.fields.get("Observable", "").strip()

    @property
    def source(self) -> str:
        """``seed``, ``binding`` or ``reference`` (as written; :data:`SOURCES`)."""
        return self.fields.get("Source", "").strip()


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
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _HEADING.match(line)
        if m:
            current = Clause(
                id=m.group(1), title=m.group(2).strip(), spec_file=path.name, line=number
            )
            clauses.append(current)
            continue
        if line.startswith("#"):
            current = None
            continue
        if current is not None:
            f = _FIELD.match(line.strip())
            if f and f.group(1).strip() == "Quote":
                q = _QUOTE.match(f.group(2).strip())
                if q:
                    current.quotes.append(Quote(q.group("where").strip(), q.group("words")))
                else:
                    current.bad_quotes.append(f.group(2).strip())
            elif f:
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
                raise ValueError(
                    f"clause {c.id} is defined in {out[c.id].spec_file} and {path.name}"
                )
            out[c.id] = c
    return out


class _Marks:
    """The clause ids of ``pytest.mark.clause(…)`` marks in one test module: string arguments,
    and a tuple spread into the mark (``*MACHINE_CLAUSES``) that the module imports by name
    from ``conformance`` (imported here to read it: a state machine's clauses are computed
    from its rules, :mod:`conformance.machines.checks`)."""

    def __init__(self, body: list[ast.stmt]) -> None:
        self.imports: dict[str, tuple[str, str]] = {}
        for node in body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("conformance"):
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module or "", alias.name)

    def _spread(self, name: str) -> list[str]:
        if name not in self.imports:
            return []
        module, attr = self.imports[name]
        value = getattr(importlib.import_module(module), attr, ())
        return [c for c in value if isinstance(c, str)] if isinstance(value, tuple) else []

    def args(self, decorators: Iterable[ast.expr]) -> list[str]:
        ids: list[str] = []
        for dec in decorators:
            for node in ast.walk(dec):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "clause"
                ):
                    continue
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        ids.extend(CLAUSE_ID.findall(arg.value))
                    elif isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
                        ids.extend(self._spread(arg.value.id))
        return ids

    def pytestmark(self, body: list[ast.stmt]) -> list[str]:
        ids: list[str] = []
        for node in body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                ids.extend(self.args([node.value]))
        return ids


def _visit_tests(
    marks: _Marks,
    body: list[ast.stmt],
    rel: str,
    prefix: str,
    inherited: list[str],
    found: dict[str, list[str]],
) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            cls_ids = inherited + marks.args(node.decorator_list) + marks.pytestmark(node.body)
            _visit_tests(marks, node.body, rel, f"{prefix}{node.name}::", cls_ids, found)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            ids = inherited + marks.args(node.decorator_list)
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
        marks = _Marks(tree.body)
        _visit_tests(marks, tree.body, rel, "", marks.pytestmark(tree.body), found)
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


# --------------------------------------------------------------------------- sources and quotes

_MEMORY_ITEM = re.compile(r"^(\d+)\.\s")
#: The ledger seed's section headings, in order (its text before the first is ``opening``).
LEDGER_SECTIONS = (
    "What the ledger stores",
    "How pins get in",
    "Validity is an interval, not a flag",
    "Expiry",
    "Conflict groups",
    "A bounded scope refuses rather than evicts",
    "Consolidation",
    "What was dropped",
    "Not in this slice",
)


def normalize_words(text: str) -> str:
    """Text as a quote is compared: typographic quotes made plain, whitespace collapsed."""
    for a, b in (("\u2018", "'"), ("\u2019", "'"), ("\u201c", '"'), ("\u201d", '"')):
        text = text.replace(a, b)
    return " ".join(text.split())


def seed_sections(spec_file: str, text: str) -> dict[str, str]:
    """The seed restated by ``spec_file`` cut into the sections a quote may name.

    Seed 000 (memory): ``intro``, ``§1`` … ``§29`` (its numbered items), ``roadmap`` and
    ``validation table``.  Seed 003 (ledger): ``opening`` and each of :data:`LEDGER_SECTIONS`.
    """
    sections: dict[str, list[str]] = {}
    memory = spec_file == "memory.md"
    current = "intro" if memory else "opening"
    for line in text.splitlines():
        stripped = line.strip()
        if memory:
            m = _MEMORY_ITEM.match(stripped)
            if m:
                current = f"§{m.group(1)}"
            elif stripped.startswith("Roadmap (gaps)"):
                current = "roadmap"
            elif stripped == "Validation criteria":
                current = "validation table"
        elif stripped in LEDGER_SECTIONS:
            current = stripped
        sections.setdefault(current, []).append(line)
    return {k: normalize_words("\n".join(v)) for k, v in sections.items()}


def quote_found(words: str, section: str) -> bool:
    """Whether ``words`` stand in ``section`` (both normalized); an ellipsis ``…`` in the quote
    stands for words left out, so the pieces must appear in order."""
    at = 0
    for piece in normalize_words(words).split("\u2026"):
        piece = piece.strip()
        if not piece:
            continue
        found = section.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def source_problems(clauses: Iterable[Clause]) -> list[str]:
    """Clauses whose source is missing or unknown, ``seed`` clauses without a quote, quote lines
    that do not parse, and ``binding`` clauses outside the ledger (the memory seed has its own
    wire format)."""
    out: list[str] = []
    for c in clauses:
        if c.retired:
            continue
        if c.source not in SOURCES:
            out.append(f"{c.id}: Source {c.source!r} is not one of {', '.join(SOURCES)}")
        if c.source == "seed" and not c.quotes:
            out.append(f'{c.id}: a seed clause quotes the seed (- **Quote:** §n "words")')
        if c.source == "binding" and not c.id.startswith("LED-"):
            out.append(f"{c.id}: only the ledger has a binding of memspec's own")
        for bad in c.bad_quotes:
            out.append(f'{c.id}: Quote line {bad!r} is not <section> "<words>"')
    return out


def quote_problems(clauses: Iterable[Clause], seeds_dir: Path) -> list[str]:
    """Each quote of a clause that does not stand, in the section it names, in the seed its spec
    restates (``seeds_dir`` holds the seed files, :data:`SEED_FILES`)."""
    out: list[str] = []
    cache: dict[str, dict[str, str]] = {}
    for c in clauses:
        seed = SEED_FILES.get(c.spec_file)
        if seed is None or not c.quotes:
            continue
        if seed not in cache:
            text = (seeds_dir / seed).read_text(encoding="utf-8")
            cache[seed] = seed_sections(c.spec_file, text)
        sections = cache[seed]
        for q in c.quotes:
            section = sections.get(q.where)
            if section is None:
                out.append(f"{c.id}: no section {q.where!r} in {seed}")
            elif not quote_found(q.words, section):
                out.append(f"{c.id}: {q.where} of {seed} does not say {q.words!r}")
    return out


def source_counts(clauses: Iterable[Clause]) -> dict[str, int]:
    """Live clauses per source, in :data:`SOURCES` order (an unknown source under its name)."""
    counts = dict.fromkeys(SOURCES, 0)
    for c in clauses:
        if not c.retired:
            counts[c.source or "?"] = counts.get(c.source or "?", 0) + 1
    return counts
