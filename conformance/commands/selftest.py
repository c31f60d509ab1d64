"""``memspec selftest``: the harness checks itself against the catalogue of altered stores.

One matrix, three kinds of rows, each a full ``memspec run`` (corpus + state machines, profile
``ci`` by default) against a freshly started bundled store:

=========  ==================================================  =============================
kind       the store                                           must be
=========  ==================================================  =============================
store      the unaltered bundled store (both protocols)        CONFORMANT
variant    one *other allowed choice* of the catalogue         CONFORMANT (no false alarm)
combin-    several variants of one protocol in one store;      CONFORMANT (allowed choices
ation      together they contain every coexisting pair         combine)
mutant     one realistic mistake of the catalogue              killed: NOT CONFORMANT, and a
                                                               divergence names one of its
                                                               clauses
=========  ==================================================  =============================

A divergence *names* the clauses of its step; a failed corpus scenario also names the clauses
it declares (the rule it was written to check).  A mutant whose divergences touch only
``reference`` clauses (``conformance.sources``) made a choice the seed leaves open: the store is
conformant at the seed level, and the row says so — ``deviates`` (killed only at ``--level
reference``), counted apart from the seed-level kills.  ``--level reference`` runs every row at
that level, where such a mutant is killed outright.  A kill named only that way is marked
``blame: scenario`` in ``--json`` (and listed as "blamed elsewhere"): the harness caught the
mistake but reported the divergent step under other clauses.

Variants and mutants run against their own protocol only.  The rows run in parallel over the
cores (``--jobs``; each in a worker process that starts its own bundled store with
``start_bundled_store(token, quirks={name})``).  For each row the matrix shows the verdict,
what killed a mutant (the hand-written **corpus**, the state **machine**, or **both**), the
time from the start of the run to its first divergent step, and the length of the machine's
shrunk replay.

``--machines-only`` measures *exploration power*: the same matrix with the corpus left out
(what ``memspec fuzz`` alone would find).  ``--json`` prints the matrix as one JSON document for
trend tracking.  Exit status: 0 when the unaltered store and every variant are conformant and
every mutant is killed; 1 otherwise; 2 for a usage mistake.

The catalogue itself lives in ``conformance/embedded/catalogue/``; this module reaches it (and
the bundled store) only through ``conformance.commands.target``, like every other command; each
row is one run of the engine (:mod:`conformance.engine`).

Size: about 630 lines, one concern (the matrix: its rows, one cell, many cells in parallel,
the summary and its print, the command); the parts share the ``Cell``/``Row`` types and are
read together when a row's verdict is in question.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import multiprocessing
import os
import platform
import secrets
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from conformance.commands.target import start_bundled_store
from conformance.engine import NullObserver, RunConfig
from conformance.engine import run as run_engine
from conformance.engine.options import add_level_option
from conformance.errors import UsageError
from conformance.machines.profiles import PROFILES
from conformance.vocabulary import Secret, StepOutcome, TargetConfig

if TYPE_CHECKING:
    from conformance.binding.catalogue import EngineEntry

SCHEMA = "memspec-selftest/1"
UNALTERED = "unaltered"
KINDS = ("store", "variant", "combination", "mutant", "engine")


# --------------------------------------------------------------------------- the matrix rows


@dataclass(frozen=True)
class Cell:
    """One row to run: the unaltered store, a variant or a mutant."""

    name: str
    kind: str  # store | variant | mutant
    protocol: str  # all | memory | ledger
    clauses: tuple[str, ...] = ()
    summary: str = ""
    #: a combination's variants (run together in one store)
    members: tuple[str, ...] = ()

    @property
    def quirks(self) -> frozenset[str]:
        if self.kind == "combination":
            return frozenset(self.members)
        return frozenset() if self.kind == "store" else frozenset({self.name})

    @property
    def spec(self) -> str:
        return self.protocol


@dataclass(frozen=True)
class Options:
    profile: str = "ci"
    seed: int | None = None
    examples: int | None = None
    machines_only: bool = False
    corpus_only: bool = False
    report: str | None = None
    timeout: float = 10.0
    level: str = "seed"


@dataclass
class Row:  # long: one field per key of a --json row (the selftest report's schema)
    """The outcome of one cell (one line of the matrix, one object of ``--json``)."""

    name: str
    kind: str
    protocol: str
    clauses: list[str]
    verdict: str  # conformant | not conformant | killed | deviates | survived | error
    ok: bool
    exit_code: int
    clause: str = ""  # the entry's clause a divergence named (mutants), or its first clause
    killed_by: str = ""  # corpus | machine | both | "" (mutants only)
    named: list[str] = field(default_factory=list)  # every clause a divergence named
    first_divergence_s: float | None = None
    replay_steps: int | None = None
    duration_s: float = 0.0
    detail: str = ""
    #: how a kill named the clause: "step" (the divergent step's own clauses) or "scenario"
    #: (only the clauses the failed corpus scenario declares -- the step was blamed elsewhere)
    blame: str = ""
    #: the reference clauses its deviations touched (a mutant caught only at --level reference)
    deviates_on: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


#: The fast subset the default test suite runs (``tests/harness/test_selftest.py``, corpus
#: only, plus the first allowed variant of each protocol): the unaltered store and mutants of
#: both protocols across store, HTTP shell and wire.
#: The full matrix (every variant and mutant, corpus + machines, profile ci) is
#: ``make selftest``.
FAST_SUBSET = (
    UNALTERED,
    "mem-substring-match",
    "mem-evict-most-recently-used",
    "mem-content-length-hex",
    "led-supersede-leaves-gap",
    "led-credential-on-merge",
    "led-sweep-strict-boundary",
)


def catalogue_cells(all_pairs: bool = False) -> list[Cell]:
    """Every row of a full selftest: the unaltered store, the variants, combinations of
    variants, then the mutants.

    The combinations contain every pair of variants of one protocol that can coexist
    (``catalogue.variant_combinations``: a few large sets; ``all_pairs``: one store per pair,
    named ``A+B``) -- each must be conformant too: two allowed choices together are allowed.
    """
    catalogue = importlib.import_module("conformance.embedded.catalogue")
    cells = [Cell(UNALTERED, "store", "all", (), "the bundled store as shipped")]
    cells += [Cell(e.name, e.kind, e.protocol, e.clauses, e.summary) for e in catalogue.variants()]
    protocols: tuple[Literal["memory", "ledger"], ...] = ("memory", "ledger")
    for protocol in protocols:
        sets = (
            list(catalogue.variant_pairs(protocol))
            if all_pairs
            else catalogue.variant_combinations(protocol)
        )
        for i, members in enumerate(sets, 1):
            clauses = tuple(dict.fromkeys(c for m in members for c in catalogue.ENTRIES[m].clauses))
            name = "+".join(members) if all_pairs else f"{protocol}-variants-{i}"
            summary = f"{len(members)} variants together: {', '.join(members)}"
            cells.append(Cell(name, "combination", protocol, clauses, summary, tuple(members)))
    cells += [
        Cell(e.name, e.kind, e.protocol, e.clauses, e.summary)
        for e in catalogue.mutants(race=False)
    ]
    return cells


def select_cells(
    cells: Sequence[Cell],
    only: Sequence[str] = (),
    kinds: Sequence[str] = (),
    protocols: Sequence[str] = (),
) -> list[Cell]:
    """The rows ``--only``/``--kind``/``--spec`` keep; an unknown name is a usage error."""
    by_name = {c.name: c for c in cells}
    unknown = [n for n in only if n not in by_name]
    if unknown:
        raise UsageError(
            f"--only: not in the catalogue: {', '.join(unknown)} (see memspec selftest --list)"
        )
    chosen = [by_name[n] for n in dict.fromkeys(only)] if only else list(cells)
    if kinds:
        chosen = [c for c in chosen if c.kind in kinds]
    if protocols:
        chosen = [c for c in chosen if c.protocol in protocols or c.protocol == "all"]
    return chosen


# --------------------------------------------------------------------------- one cell


class _FirstDivergence(NullObserver):
    """The run observer of a row: records when the first divergent step was seen."""

    def __init__(self) -> None:
        self.at: float | None = None
        self._lock = threading.Lock()  # lanes report from their own threads

    def step(self, outcome: StepOutcome) -> None:
        if outcome.verdict == "diverge":
            with self._lock:
                if self.at is None:
                    self.at = time.monotonic()


def run_cell(cell: Cell, options: Options) -> Row:
    """Start a bundled store with the cell's quirks, run ``memspec run`` against it, judge."""
    token = secrets.token_urlsafe(24)
    started = time.monotonic()
    watch = _FirstDivergence()
    sink = io.StringIO()
    try:
        handle = start_bundled_store(token, quirks=cell.quirks)
    except Exception as exc:  # a quirk that breaks the start is a broken catalogue entry
        return _row(cell, "error", False, 2, detail=f"the store did not start: {exc}")
    try:
        config = TargetConfig(
            handle.url, Secret(token), options.timeout, label=f"bundled store ({cell.name})"
        )
        run_config = RunConfig(
            target=config,
            spec=cell.spec,
            profile=options.profile,
            seed=options.seed,
            examples=options.examples,
            corpus=not options.machines_only,
            machines=not options.corpus_only,
            report_dir=Path(options.report) / cell.name if options.report else None,
            level=options.level,
        )
        with contextlib.redirect_stderr(sink):
            outcome = run_engine(run_config, watch)
    except Exception as exc:
        return _row(
            cell,
            "error",
            False,
            2,
            duration=time.monotonic() - started,
            detail=f"{type(exc).__name__}: {exc}",
        )
    finally:
        handle.stop()
    first = None if watch.at is None else watch.at - started
    return judge(cell, outcome.exit_code, outcome.data, time.monotonic() - started, first)


@dataclass
class _Named:
    """The clauses a run report's failures and deviations named, sorted by where they came
    from (what :func:`judge` weighs), and the shortest shrunk machine replay."""

    corpus: set[str] = field(default_factory=set)
    scenario: set[str] = field(
        default_factory=set
    )  # what the failed scenarios were written to check
    machine: set[str] = field(default_factory=set)
    deviated: set[str] = field(
        default_factory=set
    )  # reference clauses a deviation touched (any level)
    declared: set[str] = field(
        default_factory=set
    )  # the clauses of the corpus scenarios that deviated
    replay: int | None = None


def _named_by_scenarios(named: _Named, data: dict[str, Any], reference_level: bool) -> None:
    """Add what the report's scenarios (corpus and transport probes) named to ``named``."""
    for s in data.get("scenarios", []):
        named.deviated.update(s.get("deviation_clauses") or ())
        if s.get("verdict") == "deviate" and s.get("kind") != "probe":
            # as for a failure: a corpus scenario names the rule it was written to check
            named.declared.update(s.get("clauses") or ())
        if reference_level and s.get("verdict") == "deviate":
            # at --level reference a deviation fails the run: it kills like a failure
            target = named.machine if s.get("kind") == "probe" else named.corpus
            target.update(s.get("deviation_clauses") or ())
            continue
        if s.get("verdict") != "fail":
            continue
        if s.get("kind") == "probe":  # the machines' transport probes, not the corpus
            named.machine.update(s.get("failed_clauses") or s.get("clauses") or ())
            continue
        named.corpus.update(s.get("failed_clauses") or s.get("clauses") or ())
        named.scenario.update(s.get("clauses") or ())


def _named_by_machines(named: _Named, data: dict[str, Any], reference_level: bool) -> None:
    """Add what the report's state machines named to ``named``, and their shortest replay."""
    for m in data.get("machines", []):
        for d in m.get("divergences") or ():
            if d.get("deviation"):
                named.deviated.update(d.get("clauses") or ())
        if m.get("verdict") == "fail" or (reference_level and m.get("verdict") == "deviate"):
            failing = [
                c
                for d in m.get("divergences") or ()
                if reference_level or not d.get("deviation")
                for c in d.get("clauses") or ()
            ]
            named.machine.update(failing or m.get("failed_clauses") or m.get("clauses") or ())
            steps = (m.get("details") or {}).get("replay_steps")
            if isinstance(steps, list) and (named.replay is None or len(steps) < named.replay):
                named.replay = len(steps)


def judge(
    cell: Cell,
    exit_code: int,
    data: dict[str, Any],
    duration: float,
    first_divergence_s: float | None,
) -> Row:
    """The verdict of one row from its run report."""
    reference_level = data.get("level") == "reference"
    found = _Named()
    _named_by_scenarios(found, data, reference_level)
    _named_by_machines(found, data, reference_level)
    named = sorted(found.corpus | found.machine)
    indeterminate = (data.get("summary") or {}).get("indeterminate", 0)
    if cell.kind != "mutant":
        ok = exit_code == 0
        detail = ""
        if not ok:
            divs = data.get("divergences") or []
            first = divs[0] if divs else {}
            detail = (
                f"{len(divs)} divergence(s), {indeterminate} indeterminate; first: "
                f"{first.get('where', '')} {first.get('reason', '')}".strip()
            )[:300]
        return _row(
            cell,
            "conformant" if ok else "not conformant",
            ok,
            exit_code,
            clause=cell.clauses[0] if cell.clauses else "",
            named=named,
            first=first_divergence_s,
            replay=found.replay,
            duration=duration,
            detail=detail,
        )
    return _judge_mutant(cell, exit_code, found, named, indeterminate, duration, first_divergence_s)


def _judge_mutant(
    cell: Cell,
    exit_code: int,
    found: _Named,
    named: list[str],
    indeterminate: int,
    duration: float,
    first_divergence_s: float | None,
) -> Row:
    """A mutant's row: killed (a failure named one of its clauses), deviates (only a deviation
    from the reference implementation did) or survived."""
    wanted = set(cell.clauses)
    corpus_named, machine_named = found.corpus, found.machine
    by_step = bool((corpus_named | machine_named) & wanted)
    by_corpus = bool((corpus_named | found.scenario) & wanted)
    by_machine = bool(machine_named & wanted)
    killed = exit_code == 1 and (by_corpus or by_machine)
    named_all = corpus_named | machine_named | found.scenario
    hit = next((c for c in cell.clauses if c in corpus_named | machine_named), "") or next(
        (c for c in cell.clauses if c in named_all), ""
    )
    # Not killed at the seed level, but a deviation named one of its clauses: its mistake is a
    # choice the seed leaves open (reference clauses only) — caught, at --level reference.
    deviates = not killed and bool((found.deviated | found.declared) & wanted)
    deviates_on = sorted(found.deviated & wanted) or sorted(found.declared & wanted)
    detail = ""
    if deviates:
        detail = (
            "differs from the reference implementation (reference clauses "
            f"{', '.join(deviates_on)}): killed only at --level reference"
        )
        if named:
            detail += f"; the run also failed naming only {', '.join(named)}"
    elif not killed:
        detail = (
            f"divergences named only {', '.join(named)}"
            if named
            else f"no divergence (exit {exit_code}, {indeterminate} indeterminate)"
        )
    return _row(
        cell,
        "killed" if killed else "deviates" if deviates else "survived",
        killed or deviates,
        exit_code,
        clause=hit or cell.clauses[0],
        killed_by=(
            ("both" if by_corpus and by_machine else "corpus" if by_corpus else "machine")
            if killed
            else ""
        ),
        named=named,
        first=first_divergence_s,
        replay=found.replay if by_machine else None,
        duration=duration,
        detail=detail,
        blame=("step" if by_step else "scenario") if killed else "",
        deviates_on=deviates_on if deviates else [],
    )


def _row(
    cell: Cell,
    verdict: str,
    ok: bool,
    exit_code: int,
    *,
    clause: str = "",
    killed_by: str = "",
    named: list[str] | None = None,
    first: float | None = None,
    replay: int | None = None,
    duration: float = 0.0,
    detail: str = "",
    blame: str = "",
    deviates_on: list[str] | None = None,
) -> Row:
    return Row(
        name=cell.name,
        kind=cell.kind,
        protocol=cell.protocol,
        clauses=list(cell.clauses),
        verdict=verdict,
        ok=ok,
        exit_code=exit_code,
        clause=clause,
        killed_by=killed_by,
        named=named or [],
        first_divergence_s=None if first is None else round(first, 3),
        replay_steps=replay,
        duration_s=round(duration, 3),
        detail=detail,
        blame=blame,
        deviates_on=deviates_on or [],
    )


# --------------------------------------------------------------------------- many cells


def run_cells(
    cells: Sequence[Cell],
    options: Options,
    jobs: int,
    on_done: Callable[[Row, int, int], None] | None = None,
) -> list[Row]:
    """Run every cell, ``jobs`` at a time (1: in this process); rows in the cells' order."""
    rows: dict[str, Row] = {}
    total = len(cells)

    def done(row: Row) -> None:
        rows[row.name] = row
        if on_done is not None:
            on_done(row, len(rows), total)

    if jobs <= 1 or total <= 1:
        for cell in cells:
            done(run_cell(cell, options))
    else:
        # Longest first: the unaltered store and the variants run to the end of their
        # exploration, a killed mutant usually stops early.
        order = sorted(cells, key=lambda c: KINDS.index(c.kind))
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=ctx)
        try:
            pending: dict[Future[Row], Cell] = {
                pool.submit(run_cell, cell, options): cell for cell in order
            }
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    cell = pending.pop(fut)
                    try:
                        done(fut.result())
                    except Exception as exc:  # a worker that died
                        done(_row(cell, "error", False, 2, detail=f"worker failed: {exc}"))
        except BaseException:
            # Interrupted: no worker may outlive the command (each runs a store and a run).
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
            raise
        pool.shutdown()
    return [rows[c.name] for c in cells]


def summarize(rows: Sequence[Row]) -> dict[str, Any]:
    mutants = [r for r in rows if r.kind == "mutant"]
    killed = [r for r in mutants if r.ok and r.verdict == "killed"]
    deviating = [r for r in mutants if r.verdict == "deviates"]
    variants = [r for r in rows if r.kind == "variant"]
    combinations = [r for r in rows if r.kind == "combination"]
    store = [r for r in rows if r.kind == "store"]
    firsts = [r.first_divergence_s for r in killed if r.first_divergence_s is not None]
    replays = [r.replay_steps for r in killed if r.replay_steps is not None]
    by_protocol: dict[str, dict[str, int]] = {}
    for r in mutants:
        p = by_protocol.setdefault(r.protocol, {"mutants": 0, "killed": 0, "deviates": 0})
        p["mutants"] += 1
        p["killed"] += int(r.verdict == "killed")
        p["deviates"] += int(r.verdict == "deviates")
    return {
        "mutants": len(mutants),
        "killed": len(killed),
        "kill_rate": round(len(killed) / len(mutants), 4) if mutants else None,
        # caught only as deviations from the reference implementation (reference clauses)
        "deviates": len(deviating),
        "deviates_only": [{"name": r.name, "clauses": r.deviates_on} for r in deviating],
        "caught_rate": (
            round((len(killed) + len(deviating)) / len(mutants), 4) if mutants else None
        ),
        "killed_by": {
            k: sum(1 for r in killed if r.killed_by == k) for k in ("corpus", "machine", "both")
        },
        "machine_kill_rate": (
            round(sum(1 for r in killed if r.killed_by in ("machine", "both")) / len(mutants), 4)
            if mutants
            else None
        ),
        "by_protocol": by_protocol,
        "survivors": [r.name for r in mutants if not r.ok],
        "blamed_elsewhere": [r.name for r in killed if r.blame == "scenario"],
        "variants": len(variants),
        "variants_conformant": sum(1 for r in variants if r.ok),
        "false_alarms": [r.name for r in [*variants, *combinations] if not r.ok],
        "combinations": len(combinations),
        "combinations_conformant": sum(1 for r in combinations if r.ok),
        "unaltered": (store[0].verdict if store else None),
        "median_first_divergence_s": round(statistics.median(firsts), 3) if firsts else None,
        "median_replay_steps": statistics.median(replays) if replays else None,
        "ok": all(r.ok for r in rows),
    }


# --------------------------------------------------------------------------- output


def _fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}s"


def print_matrix(rows: Sequence[Row], summary: dict[str, Any], out: TextIO, mode: str) -> None:
    headers = ("name", "kind", "clause", "verdict", "killed by", "1st div", "replay", "time")
    table = [
        (
            r.name,
            r.kind if r.kind == "store" else f"{r.kind}/{r.protocol[:3]}",
            r.clause or "-",
            r.verdict if r.ok else r.verdict.upper(),
            r.killed_by or "-",
            _fmt_s(r.first_divergence_s),
            "-" if r.replay_steps is None else str(r.replay_steps),
            _fmt_s(r.duration_s),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(headers)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    out.write(line.format(*headers).rstrip() + "\n")
    out.write(line.format(*("-" * w for w in widths)).rstrip() + "\n")
    for t in table:
        out.write(line.format(*t).rstrip() + "\n")
    bad = [r for r in rows if (not r.ok or r.verdict == "deviates") and r.detail]
    if bad:
        out.write("\n")
        for r in bad:
            out.write(f"{r.name}: {r.detail}\n")
    out.write("\n")
    if summary["mutants"]:
        kb = summary["killed_by"]
        out.write(
            f"mutants: {summary['killed']}/{summary['mutants']} killed"
            f" ({100 * summary['kill_rate']:.1f} %) {mode}; by corpus only {kb['corpus']},"
            f" machine only {kb['machine']}, both {kb['both']};"
            f" machine kill rate {100 * summary['machine_kill_rate']:.1f} %\n"
        )
        if summary["deviates"]:
            out.write(
                f"{summary['deviates']} mutant(s) only differ from the reference implementation"
                " (a choice the seed leaves open; killed only at --level reference): "
                + ", ".join(d["name"] for d in summary["deviates_only"])
                + "\n"
            )
        out.write(
            f"median time to first divergence {_fmt_s(summary['median_first_divergence_s'])},"
            f" median shrunk replay {summary['median_replay_steps'] or '-'} step(s)\n"
        )
    if summary["variants"]:
        out.write(f"variants: {summary['variants_conformant']}/{summary['variants']} conformant\n")
    if summary["combinations"]:
        out.write(
            f"combinations of variants: {summary['combinations_conformant']}/"
            f"{summary['combinations']} conformant\n"
        )
    if summary["unaltered"] is not None:
        out.write(f"unaltered store: {summary['unaltered']}\n")
    out.write("selftest passed\n" if summary["ok"] else "selftest FAILED\n")


# --------------------------------------------------------------------------- the command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "selftest",
        help="check the harness: the bundled store and its allowed variants pass, mutants are"
        " killed",
        description=(
            "Run memspec (corpus + state machines) against the unaltered bundled store, every"
            " allowed variant (each must be conformant) and every mutant of the catalogue (each"
            " must be killed by a divergence naming one of its clauses), in parallel, and print"
            " the matrix."
        ),
    )
    p.add_argument(
        "--only", nargs="+", action="extend", default=[], metavar="NAME", help="run these rows"
    )
    p.add_argument(
        "--kind", action="append", choices=KINDS, default=[], help="run rows of this kind"
    )
    p.add_argument(
        # --spec as in the other commands; --protocol, its first spelling, still accepted
        "--spec", "--protocol", dest="protocol", action="append", choices=["memory", "ledger"],
        default=[], help="run variants and mutants of this protocol (and the unaltered store)",
    )  # fmt: skip
    p.add_argument(
        "--jobs", "-j", type=int, metavar="N", help="rows run at once (default: the CPU count)"
    )
    only = p.add_mutually_exclusive_group()
    only.add_argument(
        "--machines-only",
        action="store_true",
        help="leave the corpus out: the kill rate of the state machines alone (exploration power)",
    )
    only.add_argument(
        "--corpus-only",
        action="store_true",
        help="leave the state machines out (the fast subset the test suite runs)",
    )
    p.add_argument(
        "--profile", choices=list(PROFILES), default="ci", help="exploration profile (default ci)"
    )
    p.add_argument("--seed", type=int, help="state-machine seed")
    p.add_argument("--examples", type=int, metavar="N", help="state-machine runs per row")
    p.add_argument("--report", metavar="DIR", help="write each row's run report to DIR/<name>/")
    add_level_option(p)
    p.add_argument("--json", action="store_true", help="print the matrix as one JSON document")
    p.add_argument(
        "--all-pairs",
        action="store_true",
        help="run every coexisting pair of variants as its own store (default: a few"
        " combinations that together contain every pair)",
    )
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def _selected(args: argparse.Namespace) -> tuple[list[Cell], list[EngineEntry]]:
    """The store rows and the engine rows ``--only``/``--kind``/``--spec`` keep."""
    from conformance.commands import selftest_engine  # the engine rows (engine catalogue)

    engine = selftest_engine.select(args.only, args.kind, args.protocol)
    store_only = [n for n in args.only if n not in selftest_engine.names()]
    store_kinds = [k for k in args.kind if k != selftest_engine.KIND]
    cells = (
        select_cells(
            catalogue_cells(all_pairs=args.all_pairs),
            only=store_only,
            kinds=store_kinds,
            protocols=args.protocol,
        )
        if (store_only or not args.only) and (store_kinds or not args.kind)
        else []
    )
    return cells, engine


def _mode(args: argparse.Namespace) -> str:
    """What the kill rate counts (the matrix's summary line and the JSON ``options.mode``)."""
    return (
        "by the machines alone"
        if args.machines_only
        else "by the corpus alone"
        if args.corpus_only
        else "by corpus + machines"
    )


def _json_document(
    rows: Sequence[Row],
    summary: dict[str, Any],
    options: Options,
    jobs: int,
    mode: str,
    started: float,
) -> dict[str, Any]:
    """The ``--json`` document: the machine, the options, the summary and every row."""
    return {
        "schema": SCHEMA,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "options": {**asdict(options), "jobs": jobs, "mode": mode},
        "duration_s": round(time.monotonic() - started, 1),
        "summary": summary,
        "rows": [r.to_json() for r in rows],
    }


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    from conformance.commands import selftest_engine  # the engine rows (engine catalogue)

    cells, engine = _selected(args)
    if args.list:
        for c in cells:
            out.write(f"{c.name:<40} {c.kind:<8} {c.protocol:<7} {','.join(c.clauses)}\n")
        for e in engine:
            out.write(f"{e.name:<40} {e.kind:<8} engine  {','.join(e.clauses)}\n")
        return 0
    if not cells and not engine:
        raise UsageError("no row selected")
    if args.examples is not None and args.examples < 1:
        raise UsageError("--examples must be at least 1")
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    options = Options(
        profile=args.profile,
        seed=args.seed,
        examples=args.examples,
        machines_only=args.machines_only,
        corpus_only=args.corpus_only,
        report=args.report,
        level=args.level,
    )
    progress = sys.stderr if not args.quiet else None
    started = time.monotonic()
    if progress is not None:
        progress.write(
            f"memspec selftest: {len(cells)} row(s), profile {args.profile}, {jobs} job(s)"
            f"{', machines only' if args.machines_only else ''}"
            f"{', corpus only' if args.corpus_only else ''}\n"
        )
        progress.flush()

    def on_done(row: Row, n: int, total: int) -> None:
        if progress is None:
            return
        extra = f" by {row.killed_by}" if row.killed_by else ""
        progress.write(
            f"  [{n}/{total}] {row.kind} {row.name}: {row.verdict}{extra}"
            f" ({row.duration_s:.1f}s; {time.monotonic() - started:.0f}s elapsed)\n"
        )
        progress.flush()

    rows = run_cells(cells, options, jobs, on_done) if cells else []
    for e in engine:
        rows.append(selftest_engine.run_entry(e, args.profile, args.examples))
        on_done(rows[-1], len(rows), len(cells) + len(engine))
    summary = summarize(rows)
    if args.json:
        doc = _json_document(rows, summary, options, jobs, _mode(args), started)
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        print_matrix(rows, summary, out, _mode(args))
    return 0 if summary["ok"] else 1
