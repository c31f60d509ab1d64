"""The run report: one JSON-able object every output (terminal, JSON, JUnit, HTML) is made from.

Schema ``memspec-report/1`` (``report.json``)::

    schema, memspec_version, spec_revision, corpus_revision, run_id, started_at, finished_at,
    duration_s, exit_code (0 conformant, 1 not, 3 indeterminate: conformance.report.verdict)
    target        {url, label, token: "set"|"none", timeout_s, declared, denied}   — never the token
    level         "seed" | "reference"                 — --level: what fails the run
    options       {spec, profile, seed, allow_dirty, expect}
    capabilities  {protocol: [capability, …]}
    scopes_written {protocol: [scope key, …]}          — every key the run sent data requests to
    scenarios     [{name, protocol, kind, path, verdict, reason, clauses, failed_clauses,
                    elapsed_s, steps: [StepOutcome], replay, expected_by}]
    machines      [{name, protocol, profile, seed, verdict, reason, examples, steps, elapsed_s,
                    clauses, failed_clauses, replay, expected_by, details,
                    divergences: [{clauses, reason, steps, replay, expected_by, details}]}]
                    — every distinct divergence; details.explored counts runs/steps,
                      also after the first
    clauses       [{id, title, level, source, passed, failed, deviates, skipped, indeterminate,
                    skip_reasons, expected}]            — one row per clause the run touched
    deviations    [{source, name, protocol, clauses, step, op, reason, expected, exchange,
                    replay, expected_by}]               — differences from the reference
                    implementation: every clause touched is a ``reference`` clause
                    (conformance.sources); they fail the run only at level "reference"
    divergences   [{source, name, protocol, clauses, step, op, reason, expected, exchange,
                    replay, expected_by}]
    expectations  {file, entries, stale: [{entry, status}]}
    phases        {phase: wall seconds}                — "corpus" (or "memory corpus", "ledger
                    corpus" on tracks), "<protocol> probes", "<protocol> machine"
    summary       {scenarios: {verdict: n}, probes: {verdict: n}, contract: {verdict: n},
                  machines: {verdict: n},
                   divergences, deviations, unexpected,
                   indeterminate, steps}

Verdicts: scenario/machine ``pass | fail | deviate | skip | indeterminate``; step ``pass |
diverge | deviate | indeterminate | skip`` (``deviate``: only reference clauses differ).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from conformance.clauses import Clause, load_clauses
from conformance.machines import MachineResult, finding_key
from conformance.report.expect import Expectation, match
from conformance.report.verdict import run_exit_code
from conformance.runner import ScenarioResult
from conformance.sources import DEFAULT_LEVEL, only_reference, source_of
from conformance.version import provenance, specs_dir
from conformance.vocabulary import ResultVerdict

SCHEMA = "memspec-report/1"
SPECS_DIR = specs_dir()


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def spec_clauses() -> dict[str, Clause]:
    try:
        return load_clauses(SPECS_DIR) if SPECS_DIR.is_dir() else {}
    except (OSError, ValueError):
        return {}


@dataclass(frozen=True)
class Tally:
    """One result as the clause table counts it: the clauses it speaks for, those it failed,
    its verdict and reason, and the reason of the ``--expect`` entry that accepts it."""

    clauses: list[str]
    failed: list[str]
    verdict: ResultVerdict
    reason: str
    expected: str | None = None


def clause_table(items: list[Tally]) -> list[dict[str, Any]]:
    """The clause table: per clause, how many results passed, failed, were skipped (with the
    reasons) or indeterminate, and the reasons of the expectations that accepted a failure.
    One function for a run's report and for the merge of shard reports."""
    known = spec_clauses()
    rows: dict[str, dict[str, Any]] = {}

    def row(cid: str) -> dict[str, Any]:
        if cid not in rows:
            c = known.get(cid)
            rows[cid] = {
                "id": cid,
                "title": c.title if c else "",
                "level": c.level if c else "",
                "source": source_of(cid),
                "passed": 0,
                "failed": 0,
                "deviates": 0,
                "skipped": 0,
                "indeterminate": 0,
                "skip_reasons": [],
                "expected": [],
            }
        return rows[cid]

    for t in items:
        if t.verdict == "pass":
            for cid in t.clauses:
                row(cid)["passed"] += 1
        elif t.verdict == "skip":
            for cid in t.clauses:
                r = row(cid)
                r["skipped"] += 1
                if t.reason and t.reason not in r["skip_reasons"]:
                    r["skip_reasons"].append(t.reason)
        else:
            key = {"fail": "failed", "deviate": "deviates"}.get(t.verdict, "indeterminate")
            for cid in t.failed or t.clauses:
                r = row(cid)
                r[key] += 1
                if t.expected is not None and t.expected not in r["expected"]:
                    r["expected"].append(t.expected)
    return sorted(rows.values(), key=lambda r: _clause_sort_key(r["id"]))


@dataclass
class RunReport:  # long: one field per part of report.json the run fills in
    run_id: str
    target: dict[str, Any]
    options: dict[str, Any]
    started_at: str = field(default_factory=now_iso)
    finished_at: str = ""
    duration_s: float = 0.0
    capabilities: dict[str, list[str]] = field(default_factory=dict)
    scopes_written: dict[str, list[str]] = field(default_factory=dict)
    scenarios: list[ScenarioResult] = field(default_factory=list)
    machines: list[MachineResult] = field(default_factory=list)
    machine_clauses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    expectations: list[Expectation] = field(default_factory=list)
    expect_file: str | None = None
    replays: dict[str, str] = field(default_factory=dict)  # result key -> replay file (relative)
    notes: list[str] = field(default_factory=list)
    #: wall seconds of each phase of the run ("corpus", "memory probes", "ledger machine", ...);
    #: phases may overlap (see ``docs/architecture.md``)
    phases: dict[str, float] = field(default_factory=dict)
    level: str = DEFAULT_LEVEL  # --level: "reference" fails the run on a deviation too

    # -- derived ----------------------------------------------------------------------------

    def failing(self) -> list[tuple[str, str, list[str], str]]:
        """(kind, name, failed clauses, verdict) of every failed or indeterminate result, and at
        level ``reference`` of every deviation too (verdict ``deviate``)."""
        out: list[tuple[str, str, list[str], str]] = []
        for r in self.scenarios:
            if r.verdict in ("fail", "indeterminate"):
                out.append(("scenario", r.name, r.failed_clauses(), r.verdict))
        for m in self.machines:
            if m.findings:  # every distinct divergence the machine found
                for f in m.findings:
                    if not only_reference(f.clauses):
                        out.append(("machine", machine_name(m), list(f.clauses), "fail"))
            elif m.verdict in ("fail", "indeterminate"):
                out.append(("machine", machine_name(m), list(m.clauses), m.verdict))
        if self.level == "reference":
            out += [(k, n, c, "deviate") for k, n, c in self.deviating()]
        return out

    def deviating(self) -> list[tuple[str, str, list[str]]]:
        """(kind, name, reference clauses) of every deviation from the reference
        implementation: a scenario's deviating steps (also before a later failure), a machine's
        findings whose clauses are all reference clauses."""
        out: list[tuple[str, str, list[str]]] = []
        for r in self.scenarios:
            if r.deviating_steps:
                out.append(("scenario", r.name, r.deviation_clauses()))
        for m in self.machines:
            for f in m.findings:
                if only_reference(f.clauses):
                    out.append(("machine", machine_name(m), list(f.clauses)))
        return out

    def expected_by(self, name: str, clauses: list[str]) -> Expectation | None:
        return match(self.expectations, name, clauses)

    def unexpected(self) -> list[tuple[str, str, list[str], str]]:
        return [f for f in self.failing() if self.expected_by(f[1], f[2]) is None]

    def exit_code(self) -> int:
        return run_exit_code([f[3] for f in self.unexpected()])

    def clause_rows(self) -> list[dict[str, Any]]:
        items: list[Tally] = []

        def add(
            clauses: list[str], failed: list[str], verdict: ResultVerdict, reason: str, name: str
        ) -> None:
            exp = (
                self.expected_by(name, failed)
                if verdict in ("fail", "deviate", "indeterminate")
                else None
            )
            items.append(Tally(clauses, failed, verdict, reason, exp.reason if exp else None))

        for s in self.scenarios:
            if s.verdict == "deviate":  # its clauses pass but those it deviated on
                dev = s.deviation_clauses()
                passed = [c for c in s.scenario.all_clauses() if c not in dev]
                add(passed, [], "pass", s.reason, s.name)
            else:
                add(s.scenario.all_clauses(), s.failed_clauses(), s.verdict, s.reason, s.name)
            if s.deviating_steps:
                add(s.deviation_clauses(), s.deviation_clauses(), "deviate", s.reason, s.name)
            for o in s.outcomes:
                # A probe this target cannot carry (an answer made by the HTTP layer in front
                # of the store): the clause is reported skipped with the reason, per clause.
                if o.verdict == "skip" and o.details.get("unobservable") and s.verdict != "skip":
                    cids = dict.fromkeys((*s.scenario.clauses, *o.clauses))
                    add(list(cids), [], "skip", f"step {o.index}: {o.reason}", s.name)
        for m in self.machines:
            clauses = list(self.machine_clauses.get(m.protocol, ()))
            if m.findings:
                for f in m.findings:
                    kind: ResultVerdict = "deviate" if only_reference(f.clauses) else "fail"
                    add(clauses, list(f.clauses), kind, f.reason, machine_name(m))
            else:
                add(clauses, list(m.clauses), m.verdict, m.reason, machine_name(m))
        return clause_table(items)

    def stale_expectations(self) -> list[dict[str, Any]]:
        failing = self.failing()
        ran_names: dict[str, str] = {s.name: s.verdict for s in self.scenarios}
        ran_names.update({machine_name(m): m.verdict for m in self.machines})
        rows = {r["id"]: r for r in self.clause_rows()}
        out = []
        for e in self.expectations:
            hit = any(match([e], name, clauses) is not None for _, name, clauses, _ in failing)
            if hit:
                continue
            if e.scenario is not None:
                status = "passes now" if ran_names.get(e.scenario) == "pass" else "not run"
            else:
                r = rows.get(e.clause or "")
                status = "passes now" if r and r["passed"] and not r["failed"] else "not exercised"
            out.append({"entry": e.to_json(), "status": status})
        return out

    def to_json(self) -> dict[str, Any]:
        """``report.json`` (schema :data:`SCHEMA`)."""
        divergences: list[dict[str, Any]] = []
        deviations: list[dict[str, Any]] = []
        scenarios = [self._scenario_json(s, divergences, deviations) for s in self.scenarios]
        machines = [self._machine_json(m, divergences, deviations) for m in self.machines]
        counts = self._verdict_counts()
        steps = sum(
            1 for s in self.scenarios for o in s.outcomes if not o.details.get("not_reached")
        ) + sum(m.steps for m in self.machines)
        return {
            "schema": SCHEMA,
            **provenance(),  # memspec_version, spec_revision, corpus_revision
            "run_id": self.run_id,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_s": round(self.duration_s, 3),
            "exit_code": self.exit_code(),
            "level": self.level,
            "target": self.target,
            "options": self.options,
            "capabilities": self.capabilities,
            "scopes_written": self.scopes_written,
            "scenarios": scenarios,
            "machines": machines,
            "clauses": self.clause_rows(),
            "divergences": divergences,
            "deviations": deviations,
            "expectations": {
                "file": self.expect_file,
                "entries": [e.to_json() for e in self.expectations],
                "stale": self.stale_expectations(),
            },
            "summary": {
                **counts,
                "divergences": len(divergences),
                "deviations": len(deviations),
                "unexpected": len(self.unexpected()),
                "indeterminate": sum(1 for f in self.failing() if f[3] == "indeterminate"),
                "steps": steps,
            },
            "notes": self.notes,
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
        }

    def _scenario_json(
        self,
        s: ScenarioResult,
        divergences: list[dict[str, Any]],
        deviations: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """One scenario's entry of ``report.json``; its divergence and deviations are added to
        ``divergences`` and ``deviations``."""
        exp = (
            self.expected_by(s.name, s.failed_clauses())
            if s.verdict in ("fail", "indeterminate")
            else None
        )
        replay = self.replays.get(f"scenario:{s.name}")
        entry: dict[str, Any] = {
            "name": s.name,
            "protocol": s.protocol,
            "kind": s.kind,
            "path": s.path,
            "verdict": s.verdict,
            "reason": s.reason,
            "clauses": s.scenario.all_clauses(),
            "declared_clauses": list(s.scenario.clauses),
            "failed_clauses": s.failed_clauses(),
            "deviation_clauses": s.deviation_clauses(),
            "elapsed_s": round(s.elapsed_s, 4),
            "steps": [o.to_json() for o in s.outcomes],
            "replay": replay,
            "expected_by": exp.to_json() if exp else None,
        }
        step = s.failing_step
        if step is not None:
            divergences.append(_divergence("scenario", s.name, s.protocol, step, replay, exp))
        if step is not None and s.kind == "engine":  # every diverging vector, not the first
            for o in s.outcomes:
                if o is not step and o.verdict in ("diverge", "indeterminate"):
                    more = _divergence("scenario", s.name, s.protocol, o, replay, exp)
                    divergences.append(more)
        for o in s.deviating_steps:
            d_exp = self.expected_by(s.name, list(o.clauses))
            deviations.append(_divergence("scenario", s.name, s.protocol, o, replay, d_exp))
        return entry

    def _machine_json(
        self,
        m: MachineResult,
        divergences: list[dict[str, Any]],
        deviations: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """One machine's entry of ``report.json``, each distinct divergence it found listed;
        each is also added to ``divergences`` or (only reference clauses) ``deviations``."""
        name = machine_name(m)
        exp = (
            self.expected_by(name, list(m.clauses))
            if m.verdict in ("fail", "indeterminate")
            else None
        )
        replay = self.replays.get(f"machine:{name}")
        entry: dict[str, Any] = {
            "name": name,
            "protocol": m.protocol,
            "profile": m.profile,
            "seed": m.seed,
            "verdict": machine_verdict(m),
            "reason": m.reason,
            "examples": m.examples,
            "steps": m.steps,
            "elapsed_s": round(m.elapsed_s, 3),
            "clauses": list(self.machine_clauses.get(m.protocol, ())),
            "failed_clauses": list(dict.fromkeys(c for f in m.findings for c in f.clauses))
            or list(m.clauses),
            "replay": replay,
            "expected_by": exp.to_json() if exp else None,
            "details": m.details,
        }
        found = []
        for n, f in enumerate(m.findings):
            f_replay = self.replays.get(f"machine:{finding_key(m.protocol, n)}")
            f_exp = self.expected_by(name, list(f.clauses))
            deviation = only_reference(f.clauses)
            found.append(
                {
                    "deviation": deviation,
                    "clauses": list(f.clauses),
                    "reason": f.reason,
                    "steps": len(f.steps),
                    "replay": f_replay,
                    "expected_by": f_exp.to_json() if f_exp else None,
                    "details": {k: v for k, v in f.details.items() if k != "replay_steps"},
                }
            )
            (deviations if deviation else divergences).append(
                _divergence("machine", name, m.protocol, f.failure, f_replay, f_exp)
            )
        entry["divergences"] = found
        if not m.findings and m.failure is not None:
            divergences.append(_divergence("machine", name, m.protocol, m.failure, replay, exp))
        return entry

    def _verdict_counts(self) -> dict[str, dict[str, int]]:
        """The summary's verdict counts of scenarios, probes, contract checks and machines."""
        counts: dict[str, dict[str, int]] = {
            "scenarios": {},
            "probes": {},
            "contract": {},
            "machines": {},
        }
        for s in self.scenarios:
            group = {"probe": "probes", "contract": "contract"}.get(s.kind, "scenarios")
            counts[group][s.verdict] = counts[group].get(s.verdict, 0) + 1
        for m in self.machines:
            v = machine_verdict(m)
            counts["machines"][v] = counts["machines"].get(v, 0) + 1
        return counts


def machine_name(m: MachineResult) -> str:
    return f"{m.protocol}-machine"


def machine_verdict(m: MachineResult) -> str:
    """A machine's verdict as reported: ``deviate`` when every divergence it found is a
    deviation from the reference implementation."""
    if m.verdict == "fail" and m.findings and all(only_reference(f.clauses) for f in m.findings):
        return "deviate"
    return m.verdict


def _divergence(
    source: str, name: str, protocol: str, step: Any, replay: str | None, exp: Expectation | None
) -> dict[str, Any]:
    return {
        "source": source,
        "name": name,
        "protocol": protocol,
        "verdict": step.verdict,
        "clauses": list(step.clauses),
        "step": step.index,
        "op": step.op,
        "reason": step.reason,
        "expected": step.expected,
        "exchange": step.exchange.to_json() if step.exchange else None,
        "replay": replay,
        "expected_by": exp.to_json() if exp else None,
    }


def _clause_sort_key(cid: str) -> tuple[str, int]:
    area, _, n = cid.rpartition(".")
    return (area, int(n) if n.isdigit() else 0)
