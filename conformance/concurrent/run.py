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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.concurrent.analysis import LEDGER, MEMORY, Protocol, check_events, shrink, to_ops
from conformance.concurrent.checker import DEFAULT_MAX_STATES, PartitionResult, overall
from conformance.concurrent.driver import LEDGER_SCOPE, Event, History, run_plan
from conformance.concurrent.ledger import model as ledger_model
from conformance.concurrent.workload import (
    PlannedOp,
    generate_ledger_plan,
    generate_plan,
    plan_from_json,
    plan_to_json,
)
from conformance.targets.base import HttpTarget
from conformance.vocabulary import TargetConfig

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
    from conformance.targets.base import EMPTY_BODY, HttpTarget

    with HttpTarget(config) as target:
        for method, params in ledger_model.SETUP:
            body = EMPTY_BODY if params is None else params  # no params: an empty body
            ex = target.request("POST", f"/ledger/{method}", body)
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
    #: per client of ``plan``, the phase of each op (see :func:`phases_of`): the schedule a
    #: re-run (the schedule shrinker, ``replay-concurrent``) runs barrier-aligned
    phases: list[list[int]] = field(default_factory=list)
    reruns: int = 0  # schedules the shrinker re-ran against the target for this result

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "operations": len(self.events),
            "from_operations": self.full_ops,
            "clauses": self.clauses,
            "events": [{**e.to_json(), "blurred": e.id in self.blurred} for e in self.events],
            "shrink_checks": self.shrink_checks,
            "shrink_reruns": self.reruns,
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
            "phases": self.phases,
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
    if result.states > SHRINK_STATES:
        # Every sub-history the shrinker would try needs about as many configurations as the
        # whole, beyond its bound per check: each would come back unknown and the budget go
        # for nothing.  The whole partition is the counterexample (the schedule shrinker
        # makes it smaller by re-running less of it).
        return _as_counterexample(protocol, result.partition, part, set(), plan, 0, 0.0, len(part))
    shrunk = shrink(
        to_ops(part, proto),
        proto,
        result.partition,
        first=result,
        budget_s=budget_s,
        max_states=min(max_states, SHRINK_STATES),
        max_seconds=1.0,
    )
    if shrunk is None:  # pragma: no cover - the full partition was illegal
        return None
    kept = {op.id for op in shrunk.ops}
    blurred = {op.id for op in shrunk.ops if not op.determinate}
    events = [e for e in history.events if e.id in kept]
    return _as_counterexample(
        protocol, result.partition, events, blurred, plan, shrunk.checks, shrunk.seconds, len(part)
    )


def _as_counterexample(
    protocol: str,
    partition: str,
    events: list[Event],
    blurred: set[int],
    plan: Sequence[Sequence[PlannedOp]],
    checks: int,
    seconds: float,
    full_ops: int,
) -> Counterexample:
    """``events`` (of one partition) with their schedule: per client its planned ops, their
    invocation offsets and phases (clients renumbered from 0, the scope index 0)."""
    by_key = {(op.client, op.seq): op for ops in plan for op in ops}
    clients = sorted({e.client for e in events})
    t0 = min(e.invoke for e in events)
    level = phases_of(events)
    sub_plan: list[list[PlannedOp]] = []
    offsets: list[list[float]] = []
    phases: list[list[int]] = []
    for new_c, c in enumerate(clients):
        mine = sorted((e for e in events if e.client == c), key=lambda e: e.invoke)
        sub_plan.append([_renumber(by_key[(c, e.seq)], new_c) for e in mine])
        offsets.append([round(e.invoke - t0, 6) for e in mine])
        phases.append([level[e.id] for e in mine])
    return Counterexample(
        partition,
        events,
        blurred,
        sub_plan,
        offsets,
        _clauses(protocol, events, blurred),
        checks,
        seconds,
        full_ops,
        phases,
    )


def phases_of(events: Sequence[Event]) -> dict[int, int]:
    """Event id → phase: 0 for an event nothing precedes, else one more than the latest phase
    of an event that precedes it (completed before it was invoked, or came earlier from the
    same client).  The events of one phase are pairwise concurrent; running the phases in
    order, each released at once, keeps every real-time precedence of ``events``."""
    order = sorted(events, key=lambda e: (e.invoke, e.id))
    level: dict[int, int] = {}
    for i, e in enumerate(order):
        level[e.id] = 1 + max(
            (
                level[p.id]
                for p in order[:i]
                if p.client == e.client or (p.complete is not None and p.complete < e.invoke)
            ),
            default=-1,
        )
    return level


#: The history shrinker's bound per check (configurations).
SHRINK_STATES = 20_000

#: A counterexample this small ends the search for a smaller one in other scopes, and is not
#: handed to the schedule shrinker.
GOOD_ENOUGH = 4

#: The schedule shrinker's budget per run (shared by its failing rounds): schedules re-run
#: against the target (work, not seconds: a loaded machine does not change how far it gets),
#: and how many times a candidate schedule is run before it counts as not reproducing.
RERUNS = {"quick": 50, "ci": 150, "deep": 400}
TRIES = 2
#: Runs of a starting schedule (the counterexample's, then the whole scope's) before the next
#: is tried: until one reproduces nothing can be cut, so these get more luck.
START_TRIES = 6
#: Passes over a schedule's candidates that cut nothing before the schedule shrinker stops.
PASSES = 3
#: Up to this many clients (ops) the schedule shrinker drops them one at a time only.
SINGLES = 10


#: A schedule to run: per client its planned ops, their phases and their invocation offsets.
Schedule = tuple[list[list[PlannedOp]], list[list[int]], list[list[float]]]


def shrink_schedule(
    config: TargetConfig,
    protocol: str,
    found: Counterexample,
    *,
    whole: Counterexample | None = None,
    scope_key: Callable[[int], str],
    budget: int,
    search_s: float,
    max_states: int,
    history_budget_s: float = 2.0,
) -> Counterexample:
    """A smaller counterexample by re-running parts of ``found``'s schedule on fresh scopes.

    The history shrinker only picks a sub-history of what was recorded: a race that struck
    late (a lost bump on a record retrieved five times) needs every op that explains the
    state it struck in.  Re-running the schedule without some of its ops lets the race strike
    in a simpler state.  Candidates drop whole clients first (halves, then quarters, … then
    one client), then ops (halves … one op, latest first).  A candidate runs up to ``TRIES``
    times, alternating its recorded invocation offsets (the overlaps as they were) and its
    phases (:func:`phases_of`, barrier-aligned: the ops of a phase start together); a run
    whose history is not linearizable is shrunk as a history and kept when it is smaller.
    Every result is a real recorded history the checker rejects, so soundness never depends
    on the candidate.  ``scope_key(n)``: the fresh scope of run n.

    ``whole``: the failing partition's whole schedule, the start when ``found``'s own does not
    reproduce (the history shrinker may have blurred away an op the race needed).
    """
    pool: list[HttpTarget] = []  # one client connection per lane, kept across the runs
    try:
        return _shrink_schedule(
            config,
            protocol,
            found,
            whole,
            pool,
            scope_key=scope_key,
            budget=budget,
            search_s=search_s,
            max_states=max_states,
            history_budget_s=history_budget_s,
        )
    finally:
        for target in pool:
            target.close()


def _shrink_schedule(
    config: TargetConfig,
    protocol: str,
    found: Counterexample,
    whole: Counterexample | None,
    pool: list[HttpTarget],
    *,
    scope_key: Callable[[int], str],
    budget: int,
    search_s: float,
    max_states: int,
    history_budget_s: float,
) -> Counterexample:
    """``found`` with a schedule cut down by running smaller ones against the target: whole
    clients, then ops, dropped while the violation still reproduces (within ``budget`` runs)."""
    runs = _ScheduleRuns(
        config, protocol, pool, scope_key, budget, search_s, max_states, history_budget_s
    )
    runs.checks = found.shrink_checks
    best = found
    started = time.perf_counter()
    # A schedule that does not reproduce cannot be shrunk this way: start from the first that
    # does (``found``'s, else the whole partition's); ``base`` is the schedule being cut down.
    base = None
    for start in (found, whole):
        if start is not None:
            base = runs.attempt((start.plan, start.phases, start.offsets), START_TRIES)
            if base is not None:
                break
    # Passes over the candidates; a pass that cut nothing is repeated (each candidate gets
    # TRIES more runs of luck) up to PASSES times while the budget lasts.
    stale = 0
    while (
        base is not None
        and stale < PASSES
        and runs.runs < budget
        and _size(base) > (GOOD_ENOUGH, 0)
    ):
        best = min(best, base, key=_size)
        stale += 1
        for drop in _candidates(base):
            cand = _without(base, drop)
            if cand is None:
                continue
            c = runs.attempt(cand)
            if c is not None and _size(c) < _size(base):
                base, stale = c, 0
                break
            if runs.runs >= budget:
                break
    if base is not None:
        best = min(best, base, key=_size)
    return replace(
        best,
        full_ops=found.full_ops,
        shrink_checks=runs.checks,
        shrink_s=found.shrink_s + time.perf_counter() - started,
        reruns=runs.runs,
    )


@dataclass
class _ScheduleRuns:
    """The schedule shrinker's runs against the target: counted against ``budget``, with the
    checker's work on what they recorded."""

    config: TargetConfig
    protocol: str
    pool: list[HttpTarget]
    scope_key: Callable[[int], str]
    budget: int
    search_s: float
    max_states: int
    history_budget_s: float
    runs: int = 0
    checks: int = 0

    def attempt(self, sched: Schedule, tries: int = TRIES) -> Counterexample | None:
        """Run ``sched`` up to ``tries`` times (every other try phased); the first violation
        it reproduces, shrunk, else ``None``."""
        plan, phases, offsets = sched
        self.pool.extend(HttpTarget(self.config) for _ in range(len(plan) - len(self.pool)))
        for t in range(tries):
            if self.runs >= self.budget:
                return None
            self.runs += 1
            _setup(self.config, self.protocol)
            history = run_plan(
                self.config,
                plan,
                [self.scope_key(self.runs)],
                offsets=offsets,
                phases=phases if t % 2 else None,
                protocol=self.protocol,
                targets=self.pool[: len(plan)],
            )
            results = check_events(
                history.events,
                PROTOCOLS[self.protocol],
                max_states=self.max_states,
                max_seconds=self.search_s,
            )
            bad = [r for r in results if r.verdict == "illegal"]
            if bad:
                c = _counterexample(
                    self.protocol, history, plan, bad[0], self.history_budget_s, self.max_states
                )
                if c is not None:
                    self.checks += c.shrink_checks
                    return c
        return None


def _rerun_scopes(
    protocol: str, run_id: str, round_no: int, written: list[str]
) -> Callable[[int], str]:
    """The fresh scope of the schedule shrinker's run k (recorded in ``written``)."""

    def key(k: int) -> str:
        out = LEDGER_SCOPE if protocol == "ledger" else f"org:{run_id}-c{round_no}-r{k}"
        if out not in written:
            written.append(out)
        return out

    return key


def _chunks(units: list[Any]) -> list[list[Any]]:
    """Halves, then quarters, … then single units (ddmin's complements, coarse to fine); only
    single units for a few (a race needs both racers: a coarse cut rarely keeps them)."""
    out: list[list[Any]] = []
    size = len(units) // 2 if len(units) > SINGLES else 1
    while size >= 1:
        out.extend(units[i : i + size] for i in range(0, len(units), size))
        size //= 2
    return out


def _candidates(c: Counterexample) -> list[set[tuple[int, int]]]:
    """What to drop, as sets of (client, index) positions: clients first, then ops (latest
    phase first)."""
    by_client = [{(k, i) for i in range(len(ops))} for k, ops in enumerate(c.plan)]
    ops = sorted(
        ((k, i) for k, ops in enumerate(c.plan) for i in range(len(ops))),
        key=lambda p: (-c.phases[p[0]][p[1]], p),
    )
    drops = [set().union(*g) for g in _chunks(by_client)] if len(c.plan) > 1 else []
    return drops + [set(g) for g in _chunks(ops)]


def _without(c: Counterexample, drop: set[tuple[int, int]]) -> Schedule | None:
    """``c``'s schedule without the ops at ``drop`` (clients renumbered, phases compacted,
    offsets from the first kept op)."""
    kept = [
        [(op, c.phases[k][i], c.offsets[k][i]) for i, op in enumerate(ops) if (k, i) not in drop]
        for k, ops in enumerate(c.plan)
    ]
    kept = [ops for ops in kept if ops]
    if not kept or sum(map(len, kept)) >= len(c.events):
        return None
    rank = {ph: n for n, ph in enumerate(sorted({ph for ops in kept for _, ph, _ in ops}))}
    t0 = min(at for ops in kept for _, _, at in ops)
    return (
        [[_renumber(op, k) for op, _, _ in ops] for k, ops in enumerate(kept)],
        [[rank[ph] for _, ph, _ in ops] for ops in kept],
        [[round(at - t0, 6) for _, _, at in ops] for ops in kept],
    )


def _size(c: Counterexample) -> tuple[int, int]:
    return (len(c.events), len(c.events) - len(c.blurred))


def _renumber(op: PlannedOp, client: int) -> PlannedOp:
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
    shrink_reruns: int | None = None,
    max_states: int = DEFAULT_MAX_STATES,
    on_round: Callable[[int, History], None] | None = None,
) -> ConcurrentResult:
    """Run rounds of the concurrent workload until one is not linearizable (or all pass); after
    a violation whose counterexample is larger than GOOD_ENOUGH operations, the remaining
    rounds run on for a smaller one (the verdict stands; the smallest is kept)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"no concurrent check for protocol {protocol!r}")
    d_ops, d_scopes, d_rounds, search_s, shrink_s = PROFILES[profile]
    ops_per_client = ops_per_client or d_ops
    scopes = scopes or d_scopes
    rounds = rounds or d_rounds
    shrink_s = shrink_budget_s if shrink_budget_s is not None else shrink_s
    reruns = shrink_reruns if shrink_reruns is not None else RERUNS[profile]
    acc = _Rounds()
    results: list[PartitionResult] = []
    history: History | None = None
    round_no = 0
    for round_no in range(1, rounds + 1):
        keys = scope_keys(protocol, run_id, round_no, scopes)
        acc.written.extend(k for k in keys if k not in acc.written)
        plan = _plan(protocol, seed * 1000 + round_no, clients, ops_per_client, scopes)
        history, results = acc.run_round(
            config, protocol, plan, keys, search_s, max_states, on_round, round_no
        )
        v = overall(results)
        if v == "illegal":
            c = _shrink_round(
                config,
                protocol,
                history,
                plan,
                results,
                shrink_s=shrink_s,
                reruns=reruns,
                search_s=search_s,
                max_states=max_states,
                scope_key=_rerun_scopes(protocol, run_id, round_no, acc.written),
            )
            reruns -= c.reruns if c is not None else 0  # one budget for the whole run
            if acc.violation(c, results, history):
                break
        elif v == "unknown" and acc.verdict == "linearizable":
            acc.verdict = "unknown"
    if acc.failed is not None:
        results, history = acc.failed
    return acc.result(protocol, clients, seed, round_no, results, history)


@dataclass
class _Rounds:
    """What the rounds of one :func:`run_concurrent` add up to: the scopes written, the
    operations and times, the verdict so far, and the smallest counterexample with its round's
    results and history."""

    written: list[str] = field(default_factory=list)
    total_ops: int = 0
    wall: float = 0.0
    check_s: float = 0.0
    verdict: str = "linearizable"
    counter: Counterexample | None = None
    failed: tuple[list[PartitionResult], History] | None = None

    def run_round(
        self,
        config: TargetConfig,
        protocol: str,
        plan: list[list[PlannedOp]],
        keys: list[str],
        search_s: float,
        max_states: int,
        on_round: Callable[[int, History], None] | None,
        round_no: int,
    ) -> tuple[History, list[PartitionResult]]:
        """Run one round's plan on a fresh setup and check its history, counted here."""
        _setup(config, protocol)
        history = run_plan(config, plan, keys, protocol=protocol)
        if on_round is not None:
            on_round(round_no, history)
        self.total_ops += len(history.events)
        self.wall += history.wall_s
        started = time.perf_counter()
        results = check_events(
            history.events, PROTOCOLS[protocol], max_states=max_states, max_seconds=search_s
        )
        self.check_s += time.perf_counter() - started
        return history, results

    def violation(
        self, c: Counterexample | None, results: list[PartitionResult], history: History
    ) -> bool:
        """A round that is not linearizable, with its shrunk counterexample ``c``: kept when it
        is the first violation or a smaller one; whether the one kept is small enough to stop
        (a large counterexample: the profile's remaining rounds may race more simply)."""
        self.verdict = "not linearizable"
        if self.failed is None or (
            c is not None and (self.counter is None or _size(c) < _size(self.counter))
        ):
            self.counter, self.failed = c, (results, history)
        return self.counter is not None and len(self.counter.events) <= GOOD_ENOUGH

    def result(
        self,
        protocol: str,
        clients: int,
        seed: int,
        round_no: int,
        results: list[PartitionResult],
        history: History | None,
    ) -> ConcurrentResult:
        """The run's result once ``round_no`` rounds ran."""
        return ConcurrentResult(
            protocol,
            clients,
            seed,
            round_no,
            self.verdict,
            results,
            history,
            self.counter,
            self.total_ops,
            self.wall,
            self.check_s,
            self.written,
        )


def _shrink_round(
    config: TargetConfig,
    protocol: str,
    history: History,
    plan: list[list[PlannedOp]],
    results: list[PartitionResult],
    *,
    shrink_s: float,
    reruns: int,
    search_s: float,
    max_states: int,
    scope_key: Callable[[int], str],
) -> Counterexample | None:
    """The smallest counterexample found for a failing round: the illegal scopes' histories
    shrunk (smallest first, sharing ``shrink_s`` CPU seconds, until one is at most
    GOOD_ENOUGH operations), then, if still larger, the schedule shrinker (``reruns`` runs)."""
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
    if counter is None or len(counter.events) <= GOOD_ENOUGH or reruns <= 0:
        return counter
    part = [e for e in history.events if e.scope == counter.partition]
    return shrink_schedule(
        config,
        protocol,
        counter,
        whole=_as_counterexample(protocol, counter.partition, part, set(), plan, 0, 0.0, len(part)),
        scope_key=scope_key,
        budget=reruns,
        search_s=search_s,
        max_states=max_states,
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
        phases = data.get("phases") or []
        if phases and (
            len(phases) != len(data["plan"])
            or any(len(f) != len(p) for f, p in zip(phases, data["plan"], strict=True))
            or any(
                not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= 10_000
                for f in phases
                for x in f
            )
            or any(list(f) != sorted(set(f)) for f in phases)
        ):
            raise ReplayError(f"{path}: phases do not match the plan")
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
    # Odd attempts run the recorded offsets, even ones the barrier-aligned phases (if saved).
    phases = (data.get("phases") or None) if attempt % 2 == 0 else None
    history = run_plan(
        config, plan, keys, offsets=data["offsets"], phases=phases, protocol=data["protocol"]
    )
    results = check_events(history.events, PROTOCOLS[data["protocol"]])
    v = overall(results)
    return {"ok": "linearizable", "illegal": "not linearizable"}.get(v, "unknown"), history, results
