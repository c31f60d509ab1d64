"""The engine rows of ``memspec selftest``: the reference engine host with one mutant or one
allowed variant of ``conformance.binding.catalogue`` applied, checked by ``memspec engine``'s own
code (the function's vectors, then its property) through a real host process.

A mutant row is *killed* when a divergence names one of the entry's clauses (``killed_by``:
``vectors``, ``property`` or ``both``); a variant row must be *conformant*.  Selected by
``--kind engine``, by name with ``--only``, and included in a selftest without ``--kind``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from conformance.binding.catalogue import ENTRIES_LIST, EngineEntry
from conformance.binding.check import PROPERTY_EXAMPLES, FunctionRun, check_engine
from conformance.binding.functions import BY_NAME
from conformance.binding.host import EngineHost
from conformance.commands.selftest import Row
from conformance.runner import ScenarioResult

KIND = "engine"


def names() -> set[str]:
    return {e.name for e in ENTRIES_LIST}


def select(
    only: Sequence[str] = (), kinds: Sequence[str] = (), protocols: Sequence[str] = ()
) -> list[EngineEntry]:
    """The engine entries the selftest's ``--only``/``--kind``/``--spec`` keep."""
    if only:
        chosen = [e for e in ENTRIES_LIST if e.name in only]
    elif kinds and KIND not in kinds:
        return []
    else:
        chosen = list(ENTRIES_LIST)
    if protocols:
        chosen = [e for e in chosen if BY_NAME[e.function].spec in protocols]
    return chosen


def host_command(entry: EngineEntry) -> str:
    return f"{sys.executable} -m conformance.engine_host --{entry.kind} {entry.name}"


def run_entry(
    entry: EngineEntry,
    profile: str = "ci",
    examples: int | None = None,
    *,
    vectors: bool = True,
    properties: bool = True,
) -> Row:
    """One row: the entry's function checked through its host (``vectors``/``properties``
    choose the checks, for measuring each alone)."""
    fn = BY_NAME[entry.function]
    fns = [BY_NAME[name] for name in entry.patches()]
    started = time.monotonic()
    first: list[float] = []

    def seen(r: object) -> None:
        if getattr(r, "verdict", "") in ("fail", "indeterminate") and not first:
            first.append(time.monotonic() - started)

    with EngineHost(host_command(entry)) as host:
        runs = check_engine(
            host,
            fns,
            vectors=None if vectors else {f.name: [] for f in fns},
            examples=examples or PROPERTY_EXAMPLES.get(profile, PROPERTY_EXAMPLES["ci"]),
            properties=properties,
            on_result=seen,
        )
    hits, named, killed_by, bad = _judged(entry, runs)
    detail = bad[0].reason[:300] if bad else ""
    ok = bool(hits) if entry.kind == "mutant" else not bad
    if entry.kind == "mutant":
        verdict = "killed" if ok else "survived"
    else:
        verdict = "conformant" if ok else "not conformant"
    return Row(
        name=entry.name,
        kind=entry.kind,
        protocol=f"{KIND}/{fn.spec}",
        clauses=list(entry.clauses),
        verdict=verdict,
        ok=ok,
        exit_code=0 if not bad else 1,
        clause=hits[0] if hits else entry.clauses[0],
        killed_by=killed_by,
        named=sorted(named),
        first_divergence_s=round(first[0], 3) if first else None,
        duration_s=round(time.monotonic() - started, 3),
        detail="" if ok else detail or "no divergence named the entry's clauses",
    )


def _judged(
    entry: EngineEntry, runs: Sequence[FunctionRun]
) -> tuple[list[str], dict[str, str], str, list[ScenarioResult]]:
    """The entry's clauses a failure named, every clause named with the check that named it
    first, ``killed_by`` (``vectors``, ``property``, ``both``; a mutant's) and the failed or
    indeterminate results -- a deviation (an answer the seed allows, a reference rule does
    not) is no failure."""
    results = [
        (s, r) for run in runs for s, r in (("vectors", run.vectors), ("property", run.prop))
    ]
    named: dict[str, str] = {}
    for source, res in results:
        if res is not None and res.verdict in ("fail", "indeterminate"):
            for c in res.failed_clauses():
                named.setdefault(c, source)
    hits = [c for c in entry.clauses if c in named]
    sources = {named[c] for c in hits}
    killed_by = ""
    if entry.kind == "mutant":
        killed_by = "both" if len(sources) > 1 else (sources.pop() if sources else "")
    bad = [r for _, r in results if r is not None and r.verdict in ("fail", "indeterminate")]
    return hits, named, killed_by, bad


def run_entries(entries: Sequence[EngineEntry], profile: str, examples: int | None) -> list[Row]:
    return [run_entry(e, profile, examples) for e in entries]
