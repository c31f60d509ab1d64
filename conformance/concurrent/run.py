"""A concurrent check end to end: plan → N clients → history → linearizability →
counterexample.

:func:`run_concurrent` runs ``rounds`` independent rounds (each its own seed and its own
run-unique scopes) until one is not linearizable; :class:`ConcurrentResult` is what the report
shows (``report.json`` key ``concurrent``), the timeline draws and the replay file re-runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.concurrent import ledger_model
from conformance.concurrent.analysis import LEDGER, MEMORY, Protocol, check_events, shrink, to_ops
from conformance.concurrent.checker import DEFAULT_MAX_STATES, PartitionResult, overall
from conformance.concurrent.driver import Event, History, run_plan
from conformance.concurrent.workload import (
    PlannedOp,
    generate_ledger_plan,
    generate_plan,
    plan_from_json,
    plan_to_json,
)
from conformance.drivers.base import TargetConfig

REPLAY_FORMAT = "memspec-concurrent-replay/1"

#: Concurrent workload per exploration profile: (ops per client, scopes, rounds, seconds per
#: partition search, shrink budget in seconds per failing round).  A round is short (races
#: show up within a few dozen operations per scope, and short histories shrink fast); more
#: rounds explore more schedules.
PROFILES: dict[str, tuple[int, int, int, float, float]] = {
    "quick": (12, 4, 1, 5.0, 10.0),
    "ci": (12, 4, 3, 10.0, 10.0),
    "deep": (40, 4, 25, 60.0, 120.0),
}

#: The clause every concurrent violation breaks, and the clauses an op's route adds.
LINEARIZABLE_CLAUSE = {"memory": "MEM-STORE.13", "ledger": "LED-REC.7"}
ROUTE_CLAUSES = {
    "/write": ("MEM-WRITE.1", "MEM-WRITE.7", "MEM-CAP.4"),
    "/retrieve": ("MEM-STORE.2", "MEM-STORE.3"),
    "/list": ("MEM-STORE.7",),
    "/forget": ("MEM-STORE.8",),
    "/ledger/memory/save_memory_record": ("LED-SAVE.1", "LED-BUDGET.2"),
    "/ledger/memory/list_memory_records": ("LED-LIST.1",),
    "/ledger/memory/supersede_memory_record": ("LED-EDIT.1", "LED-BUDGET.3"),
    "/ledger/memory/delete_memory_record": ("LED-FORGET.1", "LED-FORGET.2"),
    "/ledger/_test/consolidate": ("LED-VOCAB.2", "LED-BUDGET.3"),
}

PROTOCOLS: dict[str, Protocol] = {"memory": MEMORY, "ledger": LEDGER}


class SetupError(RuntimeError):
    """The target refused the setup of a concurrent round (e.g. no ledger test controls)."""


def _setup(config: TargetConfig, protocol: str) -> None:
    if protocol != "ledger":
        return
    from conformance.targets.base import HttpTarget

    with HttpTarget(config) as target:
        for method, params in ledger_model.SETUP:
            ex = target.request("POST", f"/ledger/{method}", params)
            if ex.status != 200:
                raise SetupError(
                    f"ledger concurrent check needs {method}"
                    f" (answered {ex.status or ex.transport_error})"
                )


def _plan(protocol: str, seed: int, clients: int, ops: int, scopes: int) -> list[list[PlannedOp]]:
    if protocol == "ledger":
        return generate_ledger_plan(seed, clients, ops)
    return generate_plan(seed, clients, ops, scopes)


def scope_keys(protocol: str, run_id: str, round_no: int, n: int) -> list[str]:
    if protocol == "ledger":
        return ["account:local"]
    return [f"org:{run_id}-c{round_no}-{i}" for i in range(n)]


@dataclass
class Counterexample:
    partition: str
    events: list[Event]
    blurred: set[int]  # ids of events whose answers the counterexample does not need
    plan: list[list[PlannedOp]]
    offsets: list[list[float]]
    clauses: list[str]
    shrink_checks: int
    shrink_s: float
    full_ops: int

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "operations": len(self.events),
            "from_operations": self.full_ops,
            "clauses": self.clauses,
            "events": [{**e.to_json(), "blurred": e.id in self.blurred} for e in self.events],
            "shrink_checks": self.shrink_checks,
            "shrink_s": round(self.shrink_s, 3),
        }

    def replay_json(self, protocol: str, seed: int, scopes: int) -> dict[str, Any]:
        return {
            "format": REPLAY_FORMAT,
            "protocol": protocol,
            "seed": seed,
            "clients": len(self.plan),
            "scopes": scopes,
            "plan": plan_to_json(self.plan),
            "offsets": self.offsets,
            "expected": "not linearizable",
            "history": [{**e.to_json(), "blurred": e.id in self.blurred} for e in self.events],
            "clauses": self.clauses,
        }


@dataclass
class ConcurrentResult:
    protocol: str
    clients: int
    seed: int
    rounds_run: int
    verdict: str  # "linearizable" | "not linearizable" | "unknown"
    partitions: list[PartitionResult]
    history: History | None
    counterexample: Counterexample | None
    ops: int
    wall_s: float
    check_s: float
    scopes_written: list[str] = field(default_factory=list)
    replay_path: str | None = None
    timeline_path: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict == "linearizable"

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "clients": self.clients,
            "seed": self.seed,
            "rounds": self.rounds_run,
            "verdict": self.verdict,
            "operations": self.ops,
            "wall_s": round(self.wall_s, 3),
            "check_s": round(self.check_s, 3),
            "ops_per_s": round(self.ops / self.wall_s, 1) if self.wall_s > 0 else None,
            "partitions": [
                {
                    "scope": r.partition,
                    "verdict": r.verdict,
                    "operations": r.ops,
                    "configurations": r.states,
                    "seconds": round(r.seconds, 4),
                    "reason": r.reason,
                }
                for r in self.partitions
            ],
            "indeterminate": sum(
                1 for e in (self.history.events if self.history else []) if not e.determinate
            ),
            "counterexample": self.counterexample.to_json() if self.counterexample else None,
            "replay": self.replay_path,
            "timeline": self.timeline_path,
            "scopes_written": self.scopes_written,
        }


def _clauses(protocol: str, events: Sequence[Event], blurred: set[int]) -> list[str]:
    out = [LINEARIZABLE_CLAUSE[protocol]]
    for e in events:
        if e.id not in blurred:
            out.extend(c for c in ROUTE_CLAUSES.get(e.route, ()) if c not in out)
    return out


def _counterexample(
    protocol: str,
    history: History,
    plan: Sequence[Sequence[PlannedOp]],
    result: PartitionResult,
    budget_s: float,
    max_states: int,
) -> Counterexample | None:
    proto = PROTOCOLS[protocol]
    part = [e for e in history.events if e.scope == result.partition]
    shrunk = shrink(
        to_ops(part, proto),
        proto,
        result.partition,
        first=result,
        budget_s=budget_s,
        max_states=min(max_states, 20_000),
        max_seconds=1.0,
    )
    if shrunk is None:  # pragma: no cover - the full partition was illegal
        return None
    kept = {op.id for op in shrunk.ops}
    blurred = {op.id for op in shrunk.ops if not op.determinate}
    events = [e for e in history.events if e.id in kept]
    by_key = {(op.client, op.seq): op for ops in plan for op in ops}
    clients = sorted({e.client for e in events})
    t0 = min(e.invoke for e in events)
    sub_plan: list[list[PlannedOp]] = []
    offsets: list[list[float]] = []
    for new_c, c in enumerate(clients):
        mine = sorted((e for e in events if e.client == c), key=lambda e: e.invoke)
        sub_plan.append([_renumber(by_key[(c, e.seq)], new_c) for e in mine])
        offsets.append([round(e.invoke - t0, 6) for e in mine])
    return Counterexample(
        result.partition,
        events,
        blurred,
        sub_plan,
        offsets,
        _clauses(protocol, events, {e.id for e in events if e.id in blurred}),
        shrunk.checks,
        shrunk.seconds,
        len(part),
    )


#: A counterexample this small ends the search for a smaller one in other scopes.
GOOD_ENOUGH = 4


def _size(c: Counterexample) -> tuple[int, int]:
    return (len(c.events), len(c.events) - len(c.blurred))


def _renumber(op: PlannedOp, client: int) -> PlannedOp:
    from dataclasses import replace

    return replace(op, client=client, scope=0)


def run_concurrent(
    config: TargetConfig,
    *,
    run_id: str,
    protocol: str = "memory",
    clients: int = 8,
    seed: int = 0,
    profile: str = "ci",
    ops_per_client: int | None = None,
    scopes: int | None = None,
    rounds: int | None = None,
    shrink_budget_s: float | None = None,
    max_states: int = DEFAULT_MAX_STATES,
    on_round: Callable[[int, History], None] | None = None,
) -> ConcurrentResult:
    """Run rounds of the concurrent workload until one is not linearizable (or all pass)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"no concurrent check for protocol {protocol!r}")
    d_ops, d_scopes, d_rounds, search_s, shrink_s = PROFILES[profile]
    ops_per_client = ops_per_client or d_ops
    scopes = scopes or d_scopes
    rounds = rounds or d_rounds
    shrink_s = shrink_budget_s if shrink_budget_s is not None else shrink_s
    proto = PROTOCOLS[protocol]
    written: list[str] = []
    total_ops = 0
    wall = check_s = 0.0
    results: list[PartitionResult] = []
    history: History | None = None
    verdict = "linearizable"
    counter: Counterexample | None = None
    round_no = 0
    for round_no in range(1, rounds + 1):
        round_seed = seed * 1000 + round_no
        keys = scope_keys(protocol, run_id, round_no, scopes)
        written.extend(k for k in keys if k not in written)
        plan = _plan(protocol, round_seed, clients, ops_per_client, scopes)
        _setup(config, protocol)
        history = run_plan(config, plan, keys, protocol=protocol)
        if on_round is not None:
            on_round(round_no, history)
        total_ops += len(history.events)
        wall += history.wall_s
        started = time.perf_counter()
        results = check_events(history.events, proto, max_states=max_states, max_seconds=search_s)
        check_s += time.perf_counter() - started
        v = overall(results)
        if v == "illegal":
            verdict = "not linearizable"
            # Shrink every illegal scope (sharing the budget) and keep the smallest result.
            # Shrink the illegal scopes (smallest first, sharing the budget) until one gives a
            # counterexample of at most GOOD_ENOUGH operations; keep the smallest.
            bad = sorted((r for r in results if r.verdict == "illegal"), key=lambda r: r.ops)
            deadline = time.process_time() + shrink_s  # CPU seconds, as the checker's bound
            found: list[Counterexample] = []
            for r in bad:
                left = deadline - time.process_time()
                if found and (left <= 0 or len(min(found, key=_size).events) <= GOOD_ENOUGH):
                    break
                c = _counterexample(protocol, history, plan, r, max(left, 0.5), max_states)
                if c is not None:
                    found.append(c)
            counter = min(found, key=_size, default=None)
            break
        if v == "unknown":
            verdict = "unknown"
    return ConcurrentResult(
        protocol,
        clients,
        seed,
        round_no,
        verdict,
        results,
        history,
        counter,
        total_ops,
        wall,
        check_s,
        written,
    )


def save_replay(result: ConcurrentResult, path: Path, scopes: int = 1) -> Path:
    assert result.counterexample is not None
    data = result.counterexample.replay_json(result.protocol, result.seed, scopes)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result.replay_path = str(path)
    return path


class ReplayError(ValueError):
    """A file that is not a concurrent replay."""


def load_replay(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ReplayError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != REPLAY_FORMAT:
        raise ReplayError(f"{path} is not a concurrent replay file (format {REPLAY_FORMAT})")
    if data.get("protocol") not in PROTOCOLS:
        raise ReplayError(f"{path}: unknown protocol {data.get('protocol')!r}")
    try:
        plan_from_json(data["plan"])
        offsets = data["offsets"]
        if len(offsets) != len(data["plan"]) or any(
            len(o) != len(p) for o, p in zip(offsets, data["plan"], strict=True)
        ):
            raise ReplayError(f"{path}: offsets do not match the plan")
    except (KeyError, TypeError) as exc:
        raise ReplayError(f"{path}: malformed plan ({exc})") from exc
    return data


def replay_once(
    config: TargetConfig, data: dict[str, Any], run_id: str, attempt: int
) -> tuple[str, History, list[PartitionResult]]:
    """Re-run a replay file's schedule once on fresh scopes; the verdict of its history."""
    plan = plan_from_json(data["plan"])
    keys = scope_keys(data["protocol"], run_id, attempt, int(data.get("scopes", 1)))
    _setup(config, data["protocol"])
    history = run_plan(config, plan, keys, offsets=data["offsets"], protocol=data["protocol"])
    results = check_events(history.events, PROTOCOLS[data["protocol"]])
    v = overall(results)
    return {"ok": "linearizable", "illegal": "not linearizable"}.get(v, "unknown"), history, results
