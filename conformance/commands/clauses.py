"""``memspec clauses``: every clause of the specs with the tests and scenarios that cover it;
``memspec clauses -v ID …``: one clause and everything about it (:mod:`.clause_view`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.clauses import (
    SOURCES,
    Clause,
    Coverage,
    coverage,
    load_clauses,
    scan_scenarios,
    source_counts,
    source_problems,
)
from conformance.commands import clause_view
from conformance.errors import UsageError
from conformance.version import CORPUS_DIR, specs_dir


def installed_coverage() -> Coverage:
    """Coverage from the installed package: its specs and its corpus (no tests are shipped)."""
    clauses = load_clauses(specs_dir())
    scenarios = scan_scenarios(CORPUS_DIR, CORPUS_DIR.parent)
    unknown = {cid: where for cid, where in scenarios.items() if cid not in clauses}
    return Coverage(clauses=clauses, tests={}, scenarios=scenarios, unknown=unknown)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "clauses",
        help="list every spec clause with the tests and scenarios that cover it",
        description="List every clause of specs/*.md with the tests and scenarios covering it.",
    )
    p.add_argument(
        "--root",
        type=Path,
        default=None,
        help="project root (default: ., or the installed package when ./specs is absent)",
    )
    p.add_argument("--spec", choices=["memory", "ledger", "all"], default="all")
    p.add_argument(
        "--source",
        choices=[*SOURCES, "all"],
        default="all",
        help="only the clauses whose rule comes from this source (default: all)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if a live clause has no coverage, or no valid source (a seed clause: a quote)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--verbose",
        "-v",
        nargs="*",
        default=None,
        metavar="ID",
        help="name every covering test; with clause ids, show each of them and everything"
        " about it (text, model functions, scenarios and steps, machine rules and probes,"
        " mutants and variants, engine functions, tests)",
    )
    p.set_defaults(func=run)


def _coverage(args: argparse.Namespace) -> tuple[Coverage, Path, bool]:
    """The coverage to show, the project root and whether it is the installed package's."""
    root: Path = args.root if args.root is not None else Path(".")
    installed = args.root is None and not (root / "specs").is_dir()
    if not installed and not (root / "specs").is_dir():
        raise UsageError(f"no specs/ folder under {root.resolve()} (use --root)")
    try:
        return (installed_coverage() if installed else coverage(root)), root, installed
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _view(args: argparse.Namespace, cov: Coverage, root: Path, installed: bool) -> int:
    """``-v ID …``: each clause and everything that names it."""
    ids: list[str] = list(dict.fromkeys(args.verbose))
    clause_view.check_ids(ids, cov.clauses)
    if installed:
        base = CORPUS_DIR.parent.parent
        dirs = {"specs": specs_dir(), "corpus": CORPUS_DIR, "reference": _reference_dir()}
    else:
        base = root.resolve()
        dirs = {"specs": root / "specs", "corpus": root / "conformance" / "corpus"}
        dirs["reference"] = root / "reference"
    found = clause_view.gather(ids, cov, dirs, base)
    if args.json:
        json.dump(clause_view.as_json(ids, cov, found), sys.stdout, indent=2)
        print()
    else:
        print("\n".join(clause_view.render(ids, cov, found)))
    return 0


def _reference_dir() -> Path:
    import reference

    return Path(reference.__file__).parent


def run(args: argparse.Namespace) -> int:
    cov, root, installed = _coverage(args)
    if args.verbose:
        return _view(args, cov, root, installed)
    prefix = {"memory": "MEM-", "ledger": "LED-", "all": ""}[args.spec]
    clauses = [c for c in cov.clauses.values() if c.id.startswith(prefix)]
    problems = source_problems(clauses)
    if args.source != "all":
        clauses = [c for c in clauses if c.source == args.source]
    shown = {c.id for c in clauses}
    uncovered = [c for c in cov.uncovered() if c.id in shown]
    if installed:
        # The tests are not shipped: only a wire-observable clause must have a scenario.
        uncovered = [c for c in uncovered if c.observable.startswith("wire")]
    if args.json:
        _print_json(cov, clauses, uncovered, problems)
    else:
        _print_table(cov, clauses, installed, uncovered, verbose=args.verbose is not None)
        _print_summary(cov, clauses, installed, uncovered, problems)
    if args.check and (uncovered or cov.unknown or problems):
        return 1
    return 0


def _print_json(
    cov: Coverage, clauses: list[Clause], uncovered: list[Clause], problems: list[str]
) -> None:
    json.dump(
        {
            "clauses": [
                {
                    "id": c.id,
                    "title": c.title,
                    "level": c.level,
                    "observable": c.observable,
                    "source": c.source,
                    "quotes": [{"where": q.where, "words": q.words} for q in c.quotes],
                    "retired": c.retired,
                    "tests": cov.tests.get(c.id, []),
                    "scenarios": cov.scenarios.get(c.id, []),
                }
                for c in clauses
            ],
            "uncovered": [c.id for c in uncovered],
            "sources": source_counts(clauses),
            "source_problems": problems,
            "unknown": cov.unknown,
        },
        sys.stdout,
        indent=2,
    )
    print()


def _print_table(
    cov: Coverage,
    clauses: list[Clause],
    installed: bool,
    uncovered: list[Clause],
    *,
    verbose: bool,
) -> None:
    for c in clauses:
        tests = cov.tests.get(c.id, [])
        scen = cov.scenarios.get(c.id, [])
        mark = "retired" if c.retired else ("UNCOVERED" if not (tests or scen) else "ok")
        if installed and mark == "UNCOVERED" and c not in uncovered:
            mark = "unchecked"  # covered by tests, which an installed memspec lacks
        print(
            f"{c.id:<18} {c.source or '?':<9} {mark:<9} tests={len(tests):<3}"
            f" scenarios={len(scen):<3} {c.title}"
        )
        if verbose:
            for q in c.quotes:
                print(f'    quote     {q.where} "{q.words}"')
            for t in tests:
                print(f"    test      {t}")
            for s in scen:
                print(f"    scenario  {s}")


def _print_summary(
    cov: Coverage,
    clauses: list[Clause],
    installed: bool,
    uncovered: list[Clause],
    problems: list[str],
) -> None:
    if installed:
        print(
            "(installed memspec: specs and corpus from the package; tests/ is not shipped, so"
            " only wire-observable clauses must have scenarios — run from a checkout for all)"
        )
    live = sum(1 for c in clauses if not c.retired)
    if installed:
        unchecked = sum(1 for c in clauses if not c.retired and not cov.scenarios.get(c.id))
        print(
            f"\n{live} live clauses, {live - unchecked} with scenarios,"
            f" {unchecked - len(uncovered)} unchecked (tests), {len(uncovered)} uncovered"
        )
    else:
        print(f"\n{live} live clauses, {live - len(uncovered)} covered, {len(uncovered)} uncovered")
    counts = source_counts(clauses)
    print(
        "by source: "
        + ", ".join(f"{n} {s}" for s, n in counts.items())
        + " (seed: the seed's words, quoted; binding: memspec's ledger binding;"
        " reference: the reference implementation — a divergence is a deviation)"
    )
    for cid, where in sorted(cov.unknown.items()):
        print(f"cited but not defined: {cid} ({where[0]}{' …' if len(where) > 1 else ''})")
    for problem in problems:
        print(f"source: {problem}")
