"""The catalogue of altered bundled stores: **allowed variants** and **mutants**.

A *variant* makes one *other allowed choice* on a point the seeds leave open (ids numbered
from 0, another refusal wording, a tombstone left out of history instead of shown bodiless,
...).  memspec must judge every variant CONFORMANT: a harness that fails one raises a false
alarm on a correct store.

A *mutant* makes one small, realistic mistake tied to the clause it breaks (substring instead
of whole-token matching, an eviction of the most recently used record, a sweep boundary off by
one, ...).  memspec must judge every mutant NOT CONFORMANT, naming that clause: a harness that
passes one misses a broken store.

Both are selected when the bundled store starts (``memspec serve --variant NAME`` /
``--mutant NAME``, hidden from the normal help; ``start_server(quirks=...)`` in tests), so the
catalogue exercises the real server code path: the store code asks ``quirks("name")`` at the
one place the alteration lives.  The entries themselves are declared, one file per kind and
protocol, in this package:

==========================  ===================================================
``memory_variants.py``      allowed variants of the Memory Worker
``ledger_variants.py``      allowed variants of the ledger binding
``memory_mutants.py``       mutants of the Memory Worker
``ledger_mutants.py``       mutants of the ledger binding
``race_mutants.py``         mutants only concurrent clients can observe
==========================  ===================================================

A mutant that no check can see (no observable difference the spec forbids) is removed from
the catalogue with the reason written in :data:`REMOVED` — never kept as a permanent survivor.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

Kind = Literal["variant", "mutant"]
Protocol = Literal["memory", "ledger"]

#: The modules that declare entries (each has ``ENTRIES: tuple[Entry, ...]`` and, optionally,
#: ``REMOVED: dict[str, str]`` -- name -> why the mutant was dropped as equivalent).
MODULES = ("memory_variants", "ledger_variants", "memory_mutants", "ledger_mutants", "race_mutants")


@dataclass(frozen=True)
class Entry:
    """One altered store.

    ``clauses``: for a variant, the clauses whose open point it exercises (their text must list
    this choice among the accepted answers); for a mutant, the clauses it breaks -- a verdict
    that kills it must name at least one of them.  ``race``: the alteration is observable only
    with concurrent clients (``memspec run --clients N``).
    """

    name: str
    kind: Kind
    protocol: Protocol
    clauses: tuple[str, ...]
    summary: str
    race: bool = False
    #: variants this one cannot coexist with (two answers to the same open point, such as two
    #: numberings of ids): never run together.  Declared on either side; read both ways.
    conflicts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.clauses:
            raise ValueError(f"catalogue entry {self.name!r} names no clause")
        if self.conflicts and self.kind != "variant":
            raise ValueError(f"catalogue entry {self.name!r}: only variants declare conflicts")
        prefix = "MEM-" if self.protocol == "memory" else "LED-"
        bad = [c for c in self.clauses if not c.startswith(prefix)]
        if bad:
            raise ValueError(f"catalogue entry {self.name!r}: {bad} are not {prefix}* clauses")


def _load() -> tuple[dict[str, Entry], dict[str, str]]:
    entries: dict[str, Entry] = {}
    removed: dict[str, str] = {}
    for module_name in MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{module_name}":
                continue
            raise
        for entry in getattr(module, "ENTRIES", ()):
            if entry.name in entries:
                raise ValueError(f"catalogue entry {entry.name!r} is declared twice")
            entries[entry.name] = entry
        removed.update(getattr(module, "REMOVED", {}))
    return entries, removed


ENTRIES, REMOVED = _load()


def variants(protocol: Protocol | None = None) -> list[Entry]:
    """Every allowed variant (of one protocol), in a stable order."""
    return _select("variant", protocol)


def mutants(protocol: Protocol | None = None, *, race: bool | None = None) -> list[Entry]:
    """Every mutant (of one protocol; only race or only non-race ones), in a stable order."""
    return [m for m in _select("mutant", protocol) if race is None or m.race == race]


def _select(kind: Kind, protocol: Protocol | None) -> list[Entry]:
    return sorted(
        (e for e in ENTRIES.values() if e.kind == kind and protocol in (None, e.protocol)),
        key=lambda e: (e.protocol, e.name),
    )


def coexist(a: Entry, b: Entry) -> bool:
    """Whether two variants can run in one store: same protocol, neither names the other
    among its ``conflicts``."""
    return (
        a.name != b.name
        and a.protocol == b.protocol
        and b.name not in a.conflicts
        and a.name not in b.conflicts
    )


def variant_pairs(protocol: Protocol | None = None) -> list[tuple[str, str]]:
    """Every pair of variants (of one protocol) that can coexist, in a stable order."""
    vs = variants(protocol)
    return [(a.name, b.name) for i, a in enumerate(vs) for b in vs[i + 1 :] if coexist(a, b)]


def variant_combinations(protocol: Protocol | None = None) -> list[tuple[str, ...]]:
    """Combinations of variants that together contain every pair of :func:`variant_pairs`
    (a covering set): each is a largest set of mutually coexisting variants, grown greedily
    from the first pair not yet covered (variants that cover missing pairs first).  With few
    conflicts that is a handful of stores instead of one per pair."""
    protocols: list[Protocol] = [protocol] if protocol else ["memory", "ledger"]
    out: list[tuple[str, ...]] = []
    for proto in protocols:
        vs = variants(proto)
        pending = variant_pairs(proto)  # (a, b) with a before b in name order
        while pending:
            a, b = pending[0]
            chosen = [ENTRIES[a], ENTRIES[b]]
            missing = set(pending)

            def gain(
                v: Entry, chosen: list[Entry] = chosen, missing: set[tuple[str, str]] = missing
            ) -> int:
                return sum(1 for c in chosen if tuple(sorted((c.name, v.name))) in missing)

            for v in sorted((v for v in vs if v not in chosen), key=lambda v: -gain(v)):
                if all(coexist(v, c) for c in chosen):
                    chosen.append(v)
            names = tuple(sorted(c.name for c in chosen))
            out.append(names)
            pending = [(x, y) for x, y in pending if not (x in names and y in names)]
    return out


class UnknownQuirk(KeyError):
    """A name that is not in the catalogue (a typo in a hook or on the command line)."""


@dataclass(frozen=True)
class Quirks:
    """The alterations one bundled store runs with: ``quirks("name")`` is True when enabled.

    Asking for a name the catalogue does not declare raises :class:`UnknownQuirk`, so a hook
    can never silently test for a misspelt entry.
    """

    names: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.names - ENTRIES.keys())
        if unknown:
            raise UnknownQuirk(f"not in the catalogue: {', '.join(unknown)}")

    def __call__(self, name: str) -> bool:
        if name not in ENTRIES:
            raise UnknownQuirk(name)
        return name in self.names

    def __bool__(self) -> bool:
        return bool(self.names)

    def label(self) -> str:
        return "+".join(sorted(self.names)) or "unaltered"


NONE = Quirks()
