"""Expected divergences (``--expect FILE``): known gaps that must not fail a run.

The file is YAML or JSON: a list of entries, each naming a ``clause`` or a ``scenario`` (a
scenario name, or a machine run's name such as ``memory-machine``) and a ``reason``::

    - clause: MEM-WIRE.5
      reason: our edge rewrites Content-Length, so 411 is unreachable (ticket OPS-12)
    - scenario: dedup_bumps_instead_of_inserting
      reason: dedup lands in v2.3

An entry may name both (``scenario`` + ``clause``: that result failing on that clause), which is
what ``--expect-update`` writes, with the failing step's ``op`` and the ``divergence`` line as
first seen::

    - clause: MEM-STORE.8
      scenario: forget_reports_whether_a_record_was_removed
      op: forget
      divergence: "step 2 (forget): answer differs: forgotten is true, the model has false"
      reason: TODO

A divergence that some entry names does not fail the run; one that no entry names does; an
entry whose clause or scenario now passes is flagged as *stale*, so the list shrinks as the
store gets fixed.

Baselines that maintain themselves (``--expect-update FILE`` / ``--expect-prune``):

* :func:`update_file` appends one entry per failing result that no entry accepts yet, with
  ``reason: TODO`` (a run whose file still has a TODO reason warns: :func:`todo_warning`);
* :func:`prune_file` drops the entries this run *checked* and did not reproduce — a scenario or
  machine entry whose result ran and matched no failure, a clause entry whose clause some result
  passed and no failure matched — and keeps what the run did not check (another shard's
  scenarios, a capability the target lacks).

An entry's key is (clause, source, op).  Existing entries are never rewritten: the file is
edited as text, block by block (one block per ``- `` item), so comments and the entries' own
wording stay, and a run on an unchanged store changes no byte of the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.clauses import CLAUSE_ID


class ExpectError(Exception):
    """The expectations file cannot be used (message names the file and the entry)."""


TODO = "TODO"
_KEYS = ("clause", "scenario", "op", "divergence", "reason")


@dataclass(frozen=True)
class Expectation:
    clause: str | None
    scenario: str | None
    reason: str
    op: str | None = None
    divergence: str | None = None

    @property
    def label(self) -> str:
        if self.clause and self.scenario:
            return f"scenario {self.scenario} on clause {self.clause}"
        return f"clause {self.clause}" if self.clause else f"scenario {self.scenario}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.clause or "", self.scenario or "", self.op or "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason}
        if self.clause:
            out["clause"] = self.clause
        if self.scenario:
            out["scenario"] = self.scenario
        if self.op:
            out["op"] = self.op
        if self.divergence:
            out["divergence"] = self.divergence
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
        unknown = set(entry) - set(_KEYS)
        if unknown:
            raise ExpectError(f"{where}: unknown key(s) {sorted(unknown)}")
        clause, scenario, reason = entry.get("clause"), entry.get("scenario"), entry.get("reason")
        if clause is None and scenario is None:
            raise ExpectError(f"{where}: name a clause or a scenario (or both)")
        for k in ("op", "divergence"):
            if entry.get(k) is not None and not isinstance(entry[k], str):
                raise ExpectError(f"{where}: {k} must be a string")
        if clause is not None and (not isinstance(clause, str) or not CLAUSE_ID.fullmatch(clause)):
            raise ExpectError(f"{where}: {clause!r} is not a clause id")
        if scenario is not None and (not isinstance(scenario, str) or not scenario):
            raise ExpectError(f"{where}: scenario must be a non-empty string")
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectError(f"{where}: every entry needs a reason")
        out.append(
            Expectation(clause, scenario, reason.strip(), entry.get("op"), entry.get("divergence"))
        )
    return out


def match(expectations: list[Expectation], name: str, clauses: list[str]) -> Expectation | None:
    """The first entry that names this failing result (by its name or a clause it failed)."""
    for e in expectations:
        if e.scenario is not None and e.scenario != name:
            continue
        if e.clause is not None and e.clause not in clauses:
            continue
        return e
    return None


# --------------------------------------------------------------------------- maintenance


@dataclass(frozen=True)
class Checked:
    """One result of a run, as the baseline sees it (from a report or from the pytest plugin)."""

    name: str  # scenario name, or ``<protocol>-machine``
    verdict: str  # pass | fail | indeterminate | skip
    clauses: tuple[str, ...]  # every clause the result checks
    failed_clauses: tuple[str, ...] = ()
    op: str = ""  # the failing step's operation
    divergence: str = ""  # the failing result's one-line reason


def checked_from_report(data: dict[str, Any]) -> list[Checked]:
    """The results of a ``report.json`` (or ``RunReport.to_json()``) as :class:`Checked`."""
    ops = {(d["source"], d["name"]): d.get("op") or "" for d in data.get("divergences", [])}
    out = []
    for kind, items in (("scenario", data.get("scenarios", [])), ("machine", data["machines"])):
        for r in items:
            out.append(
                Checked(
                    r["name"],
                    r["verdict"],
                    tuple(r.get("clauses") or ()),
                    tuple(r.get("failed_clauses") or ()),
                    ops.get((kind, r["name"]), ""),
                    r.get("reason") or "",
                )
            )
    return out


def _failing(results: list[Checked]) -> list[Checked]:
    return [r for r in results if r.verdict in ("fail", "indeterminate")]


def new_entries(results: list[Checked], existing: list[Expectation]) -> list[Expectation]:
    """One ``reason: TODO`` entry per failing result that no existing entry accepts."""
    out: dict[tuple[str, str, str], Expectation] = {}
    for r in _failing(results):
        if match(existing, r.name, list(r.failed_clauses)) is not None:
            continue
        clause = r.failed_clauses[0] if r.failed_clauses else None
        line = " ".join(r.divergence.split())
        e = Expectation(clause, r.name, TODO, r.op or None, line[:200] or None)
        out.setdefault(e.key, e)
    return [out[k] for k in sorted(out)]


def not_reproduced(results: list[Checked], entries: list[Expectation]) -> list[Expectation]:
    """The entries this run checked and did not reproduce (what ``--expect-prune`` drops)."""
    failing = _failing(results)
    ran = {r.name for r in results if r.verdict in ("pass", "fail")}
    passed_clauses = {c for r in results if r.verdict == "pass" for c in r.clauses}
    out = []
    for e in entries:
        if any(match([e], r.name, list(r.failed_clauses)) for r in failing):
            continue
        checked = e.scenario in ran if e.scenario is not None else e.clause in passed_clauses
        if checked:
            out.append(e)
    return out


def todo_warning(path: str | Path, entries: list[Expectation]) -> str | None:
    todo = [e for e in entries if e.reason.strip().upper() == TODO]
    if not todo:
        return None
    return (
        f"warning: {len(todo)} expectation(s) in {path} still say 'reason: TODO' — write why each"
        f" divergence is accepted (first: {todo[0].label})"
    )


def render_entry(e: Expectation) -> str:
    lines = []
    for k in _KEYS:
        v = e.to_json().get(k)
        if v is not None:
            lines.append(f"{k}: {json.dumps(v, ensure_ascii=True)}")
    return "- " + "\n  ".join(lines) + "\n"


_HEADER = (
    "# memspec expected divergences (--expect). Written by --expect-update: fill in every\n"
    "# 'reason: TODO'; --expect-prune drops the entries a run checked and did not reproduce.\n"
)


def _blocks(text: str, count: int) -> tuple[str, list[str]] | None:
    """The file as (header, one text block per entry), or None when it is not laid out as
    top-level ``- `` items (JSON, flow style): then the file is rewritten whole."""
    header: list[str] = []
    blocks: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("- ") or line.rstrip("\r\n") == "-":
            # comment lines right above an entry belong to it (they go when it goes)
            lead: list[str] = []
            while blocks and len(blocks[-1]) > 1 and blocks[-1][-1].lstrip().startswith("#"):
                lead.insert(0, blocks[-1].pop())
            blocks.append([*lead, line])
        elif blocks:
            blocks[-1].append(line)
        else:
            header.append(line)
    if len(blocks) != count:
        return None
    return "".join(header), ["".join(b) for b in blocks]


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def update_file(path: str | Path, results: list[Checked]) -> list[Expectation]:
    """Append an entry for every failing result the file does not accept yet; return them.
    The file is created if missing and left untouched (byte for byte) when nothing is new."""
    p = Path(path)
    existing = load_expectations(p) if p.exists() else []
    added = new_entries(results, existing)
    if not added:
        return []
    text = p.read_text(encoding="utf-8") if p.exists() else _HEADER
    if existing and _blocks(text, len(existing)) is None:
        text = _HEADER + "".join(render_entry(e) for e in existing)
    if text and not text.endswith("\n"):
        text += "\n"
    if text.strip() in ("[]", "null", "~"):
        text = _HEADER
    _write(p, text + "".join(render_entry(e) for e in added))
    return added


def prune_file(path: str | Path, results: list[Checked]) -> list[Expectation]:
    """Drop the entries this run checked and did not reproduce; return them."""
    p = Path(path)
    if not p.exists():
        return []
    existing = load_expectations(p)
    dropped = not_reproduced(results, existing)
    if not dropped:
        return []
    gone = {id(e) for e in dropped}
    text = p.read_text(encoding="utf-8")
    laid_out = _blocks(text, len(existing))
    if laid_out is None:
        keep = [render_entry(e) for e in existing if id(e) not in gone]
        _write(p, _HEADER + "".join(keep))
    else:
        header, blocks = laid_out
        _write(
            p,
            header + "".join(b for e, b in zip(existing, blocks, strict=True) if id(e) not in gone),
        )
    return dropped


def maintain(
    path: str | Path, results: list[Checked], *, update: bool, prune: bool, out: Any
) -> tuple[list[Expectation], list[Expectation]]:
    """``--expect-update`` / ``--expect-prune`` after a run: edit the file, say what changed."""
    added = update_file(path, results) if update else []
    dropped = prune_file(path, results) if prune else []
    for e in added:
        out.write(f"expect-update: recorded {e.label} ({e.op or '?'}) in {path} — reason: TODO\n")
    if update and not added:
        out.write(f"expect-update: {path} already accepts every divergence of this run\n")
    for e in dropped:
        out.write(f"expect-prune: dropped {e.label} from {path}: checked, not reproduced\n")
    if prune and not dropped:
        out.write(f"expect-prune: nothing to drop from {path}\n")
    return added, dropped
