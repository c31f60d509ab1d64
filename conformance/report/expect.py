"""Expected divergences (``--expect FILE``): known gaps that must not fail a run.

The file is YAML or JSON: a list of entries, each naming a ``clause`` or a ``scenario`` (a
scenario name, or a machine run's name such as ``memory-machine``) and a ``reason``::

    - clause: MEM-WIRE.5
      reason: our edge rewrites Content-Length, so 411 is unreachable (ticket OPS-12)
    - scenario: dedup_bumps_instead_of_inserting
      reason: dedup lands in v2.3

A divergence that some entry names does not fail the run; one that no entry names does; an
entry whose clause or scenario now passes is flagged as *stale*, so the list shrinks as the
store gets fixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.clauses import CLAUSE_ID


class ExpectError(Exception):
    """The expectations file cannot be used (message names the file and the entry)."""


@dataclass(frozen=True)
class Expectation:
    clause: str | None
    scenario: str | None
    reason: str

    @property
    def label(self) -> str:
        return f"clause {self.clause}" if self.clause else f"scenario {self.scenario}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason}
        if self.clause:
            out["clause"] = self.clause
        if self.scenario:
            out["scenario"] = self.scenario
        return out


def load_expectations(path: str | Path) -> list[Expectation]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ExpectError(f"cannot read {p}: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ExpectError(f"{p} is neither YAML nor JSON: {str(exc).splitlines()[0]}") from exc
    if data is None:
        return []
    if not isinstance(data, list):
        raise ExpectError(f"{p}: expected a list of {{clause|scenario, reason}} entries")
    out = []
    for i, entry in enumerate(data):
        where = f"{p}: entry {i + 1}"
        if not isinstance(entry, dict):
            raise ExpectError(f"{where}: not a mapping")
        unknown = set(entry) - {"clause", "scenario", "reason"}
        if unknown:
            raise ExpectError(f"{where}: unknown key(s) {sorted(unknown)}")
        clause, scenario, reason = entry.get("clause"), entry.get("scenario"), entry.get("reason")
        if (clause is None) == (scenario is None):
            raise ExpectError(f"{where}: name exactly one of clause or scenario")
        if clause is not None and (not isinstance(clause, str) or not CLAUSE_ID.fullmatch(clause)):
            raise ExpectError(f"{where}: {clause!r} is not a clause id")
        if scenario is not None and (not isinstance(scenario, str) or not scenario):
            raise ExpectError(f"{where}: scenario must be a non-empty string")
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectError(f"{where}: every entry needs a reason")
        out.append(Expectation(clause, scenario, reason.strip()))
    return out


def match(expectations: list[Expectation], name: str, clauses: list[str]) -> Expectation | None:
    """The first entry that names this failing result (by its name or a clause it failed)."""
    for e in expectations:
        if e.scenario is not None and e.scenario == name:
            return e
        if e.clause is not None and e.clause in clauses:
            return e
    return None
