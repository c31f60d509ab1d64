"""Where each clause's rule comes from, and what a divergence on it therefore is.

Every clause declares its source (``specs/README.md``): ``seed`` (the seed's own words),
``binding`` (memspec's wire binding for the ledger, whose seed has no wire format) or
``reference`` (a fact of the reference implementation, or this project's pick, that the seed
does not state).  A divergence is judged by the clauses it touches: when every one of them is a
``reference`` clause the store merely *differs from the reference implementation* — a
**deviation**, reported apart and failing a run only at ``--level reference``; when any of them
is ``seed`` or ``binding`` it is a **failure**.  A clause the specs do not define counts as
``seed`` (the strict side).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Final, Literal

from conformance.clauses import load_clauses
from conformance.version import specs_dir

Level = Literal["seed", "reference"]
#: ``--level``: ``seed`` (the default) fails a run on seed and binding clauses only;
#: ``reference`` also on a deviation from the reference implementation.
LEVELS: Final = ("seed", "reference")
DEFAULT_LEVEL: Final[Level] = "seed"


@lru_cache(maxsize=1)
def clause_sources() -> dict[str, str]:
    """Clause id -> its declared source, from the specs this memspec carries."""
    try:
        return {cid: c.source for cid, c in load_clauses(specs_dir()).items()}
    except (OSError, ValueError):  # pragma: no cover - a broken install: judge strictly
        return {}


def source_of(clause: str) -> str:
    """``seed``, ``binding`` or ``reference``; an unknown id is ``seed``."""
    return clause_sources().get(clause, "seed") or "seed"


def only_reference(clauses: Iterable[str]) -> bool:
    """Whether a divergence touching ``clauses`` is a deviation: at least one clause, and every
    one of them a ``reference`` clause."""
    ids = list(clauses)
    return bool(ids) and all(source_of(c) == "reference" for c in ids)


def blamed(clauses: Iterable[str], difference: Iterable[str]) -> tuple[str, ...]:
    """The clauses a divergence names: ``clauses`` (what the difference names and what the step
    was built to check -- for a check read, the call it follows), each once; but when every
    clause ``difference`` names is a reference clause, only the reference clauses among them: a
    difference in a choice the seeds leave open is a deviation, whatever seed rule the step
    that showed it was built to check."""
    named = tuple(dict.fromkeys(clauses))
    if only_reference(difference):
        return tuple(c for c in named if source_of(c) == "reference")
    return named


def level_fails(level: str, deviation: bool) -> bool:
    """Whether a divergence fails the run at ``level`` (a failure always does)."""
    return not deviation or level == "reference"
