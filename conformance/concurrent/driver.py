"""The concurrent driver: N client threads run a plan against one target and record a history.

Each client is a thread with its own sync ``httpx`` client (a
:class:`~conformance.targets.base.HttpTarget`), so requests, auth, bounded reads, token
scrubbing and transport failures are exactly the sequential harness's.  Threads rather than
asyncio: the target clients are synchronous (Hypothesis rules are), a thread spends its time
blocked in socket I/O with the GIL released, and the number of clients is small (≤ 64) — an
async copy of the target client would be a second implementation of its safety rules.

For every operation the driver records the harness's ``time.monotonic()`` just before the
request is sent (invocation) and just after its answer was read (completion), relative to the
moment all clients were released together.  An operation without an HTTP answer (timeout,
reset, refused) is *indeterminate*: it may or may not have taken effect, and its completion is
unknown (+∞ for the checker), as Jepsen records it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.concurrent.memory.model import UNSEEN_SUFFIX
from conformance.concurrent.workload import PlannedOp
from conformance.targets.base import HttpTarget
from conformance.vocabulary import Exchange, TargetConfig
from reference.memory.wire import is_success

#: Ids a client sends for a record it never saw: a shape the protocol accepts that names no
#: record a run of this size creates (the model reads it as naming nothing).
UNSEEN_SEQ = int(UNSEEN_SUFFIX[1:])

#: How long a client of a phased schedule waits at a phase's barrier for the others (an op
#: that outlives it aborts the run: the target hangs beyond its request deadline).
PHASE_WAIT_S = 120.0


@dataclass
class Event:
    """One operation of a recorded history (JSON: :meth:`to_json`)."""

    id: int
    client: int
    seq: int
    scope: str
    route: str
    request: Any
    invoke: float
    complete: float | None
    status: int | None
    answer: Any
    error: str | None = None

    @property
    def determinate(self) -> bool:
        return self.complete is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "client": self.client,
            "seq": self.seq,
            "scope": self.scope,
            "route": self.route,
            "request": self.request,
            "invoke": round(self.invoke, 6),
            "complete": None if self.complete is None else round(self.complete, 6),
            "status": self.status,
            "answer": self.answer,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Event:
        return cls(
            d["id"], d["client"], d["seq"], d["scope"], d["route"], d["request"], d["invoke"],
            d["complete"], d["status"], d["answer"], d.get("error"),
        )  # fmt: skip


@dataclass
class MemoryClient:
    """What one client knows: the latest target id it saw for each (scope, text)."""

    scopes: Sequence[str]
    known: dict[tuple[str, str], str] = field(default_factory=dict)

    def partition(self, route: str, body: dict[str, Any]) -> str:
        return str(body["scopeKey"])

    def request(self, op: PlannedOp) -> tuple[str, dict[str, Any]]:
        scope = self.scopes[op.scope]
        thread = f"memspec-client-{op.client}"
        if op.kind in ("write", "supersede"):
            records = []
            for text in op.texts:
                rec: dict[str, Any] = {"kind": "fact", "text": text, "sourceThreadKey": thread}
                if op.kind == "supersede" and op.target is not None:
                    known = self.known.get((scope, op.target))
                    if known is not None:
                        rec["supersedes"] = known
                records.append(rec)
            body: dict[str, Any] = {"scopeKey": scope, "records": records}
            if op.cap is not None:
                body["cap"] = op.cap
            return "/write", body
        if op.kind == "retrieve":
            return "/retrieve", {"scopeKey": scope, "query": op.query or "", "limit": op.limit}
        if op.kind == "list":
            body = {"scopeKey": scope, "limit": op.limit}
            if op.query is not None:
                body["query"] = op.query
            return "/list", body
        assert op.target is not None
        rid = self.known.get((scope, op.target), f"mem:{scope}:{UNSEEN_SEQ}")
        return "/forget", {"scopeKey": scope, "id": rid}

    def learn(self, route: str, request: dict[str, Any], ex: Exchange) -> None:
        if route not in ("/list", "/retrieve") or not is_success(ex.status):
            return
        if not isinstance(ex.body, dict):
            return
        recs = ex.body.get("records")
        if not isinstance(recs, list):
            return
        scope = request["scopeKey"]
        # Oldest first, so the newest record of a text wins (lists are newest first).
        for rec in reversed(recs):
            if (
                isinstance(rec, dict)
                and isinstance(rec.get("text"), str)
                and isinstance(rec.get("id"), str)
            ):
                self.known[(scope, rec["text"])] = rec["id"]


LEDGER_SCOPE = "account:local"
LEDGER_UNSEEN = "ffffffff-0000-4000-8000-0000ffffffff"


@dataclass
class LedgerClient:
    """What one ledger client knows: the latest record id it saw for each word of a body."""

    scopes: Sequence[str]  # unused: the ledger has one account scope
    known: dict[str, str] = field(default_factory=dict)

    def partition(self, route: str, body: dict[str, Any]) -> str:
        return LEDGER_SCOPE

    def request(self, op: PlannedOp) -> tuple[str, dict[str, Any]]:
        if op.kind == "save":
            return "/ledger/memory/save_memory_record", {"body": op.texts[0]}
        if op.kind == "list":
            return "/ledger/memory/list_memory_records", {"scopeKey": LEDGER_SCOPE}
        rid = self.known.get(op.target or "", LEDGER_UNSEEN)
        if op.kind == "consolidate":
            other = self.known.get(op.query or "", LEDGER_UNSEEN)
            merge = {"operation": "merge", "targets": [rid, other], "body": op.texts[0]}
            return "/ledger/_test/consolidate", {"operations": [merge]}
        if op.kind == "supersede":
            return "/ledger/memory/supersede_memory_record", {"recordId": rid, "body": op.texts[0]}
        return "/ledger/memory/delete_memory_record", {"recordId": rid}

    def learn(self, route: str, request: dict[str, Any], ex: Exchange) -> None:
        if ex.status != 200 or not isinstance(ex.body, dict):
            return
        recs = ex.body.get("records") if "records" in ex.body else [ex.body]
        if not isinstance(recs, list):
            return
        for rec in reversed(recs):
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                continue
            if rec.get("status") == "active" and isinstance(rec.get("body"), str):
                self.known[rec["body"].split()[1] if len(rec["body"].split()) > 1 else ""] = rec[
                    "id"
                ]


@dataclass
class History:
    events: list[Event]
    scopes: list[str]
    clients: int
    wall_s: float

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in sorted(self.events, key=lambda e: e.id)]


def run_plan(
    config: TargetConfig,
    plan: Sequence[Sequence[PlannedOp]],
    scopes: Sequence[str],
    *,
    offsets: Sequence[Sequence[float]] | None = None,
    phases: Sequence[Sequence[int]] | None = None,
    on_op: Callable[[Event], None] | None = None,
    protocol: str = "memory",
    targets: Sequence[HttpTarget] | None = None,
) -> History:
    """Run every client's ops in order, all clients at once; record the history.

    ``offsets`` (replay): per client, the invocation offset (s) each op waits for, so a replay
    keeps the recorded schedule as closely as the machine allows.

    ``phases`` (a shrunk schedule; wins over ``offsets``): per client, the phase of each op
    (increasing: one op per client and phase).  Every client waits at a barrier at the
    start of each phase, so the ops of one phase start together (their races happen as
    reliably as the target allows) and every op of an earlier phase has completed first.

    ``targets``: per client an open target client to use (and leave open), so that many short
    runs (the schedule shrinker's) reuse their connections; by default each client opens its
    own and closes it.
    """
    n = len(plan)
    barrier = threading.Barrier(n + 1)
    n_phases = 1 + max((p for ps in phases or () for p in ps), default=-1)
    step = threading.Barrier(n) if phases is not None else None
    results: list[list[Event]] = [[] for _ in range(n)]
    errors: list[BaseException] = []
    start = [0.0]

    def worker(c: int) -> None:
        target = targets[c] if targets is not None else HttpTarget(config)
        client: MemoryClient | LedgerClient = (
            LedgerClient(scopes) if protocol == "ledger" else MemoryClient(scopes)
        )

        def run(op: PlannedOp) -> None:
            results[c].append(_run_one(c, op, client, target, start[0], on_op))

        try:
            barrier.wait()
            at = offsets[c] if offsets is not None else None
            in_phase = phases[c] if phases is not None else None
            _run_client_ops(plan[c], start[0], run, at, in_phase, step, n_phases)
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
            if step is not None:
                step.abort()  # the other clients stop waiting for this one
        finally:
            if targets is None:
                target.close()

    wall = _run_clients(worker, n, barrier, start)
    if errors:
        raise errors[0]
    return _history(results, scopes, wall)


def _history(results: list[list[Event]], scopes: Sequence[str], wall: float) -> History:
    """The clients' events in invocation order, numbered in that order."""
    events = sorted((e for evs in results for e in evs), key=lambda e: (e.invoke, e.client))
    for i, e in enumerate(events):
        e.id = i
    return History(events, list(scopes), len(results), wall)


def _run_clients(
    worker: Callable[[int], None], n: int, barrier: threading.Barrier, start: list[float]
) -> float:
    """Run ``worker(c)`` for the ``n`` clients on threads of their own, released together
    through ``barrier`` once ``start[0]`` is set; the wall time until the last one ended."""
    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in range(n)]
    for t in threads:
        t.start()
    start[0] = time.monotonic()
    barrier.wait()
    for t in threads:
        t.join()
    return time.monotonic() - start[0]


def _run_client_ops(
    ops: Sequence[PlannedOp],
    t0: float,
    run: Callable[[PlannedOp], None],
    offsets: Sequence[float] | None,
    phases: Sequence[int] | None,
    step: threading.Barrier | None,
    n_phases: int,
) -> None:
    """One client's ops in order: each in its phase (all clients wait at ``step`` at the start
    of every phase), else at its recorded offset from ``t0``, else after its own delay."""
    if step is not None and phases is not None:
        mine = dict(zip(phases, ops, strict=True))
        for ph in range(n_phases):
            step.wait(PHASE_WAIT_S)
            if ph in mine:
                run(mine[ph])
        return
    for i, op in enumerate(ops):
        if offsets is not None:
            wait = t0 + offsets[i] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        elif op.delay_ms:
            time.sleep(op.delay_ms / 1000)
        run(op)


def _run_one(
    c: int,
    op: PlannedOp,
    client: MemoryClient | LedgerClient,
    target: HttpTarget,
    t0: float,
    on_op: Callable[[Event], None] | None,
) -> Event:
    """Send client ``c``'s ``op`` and record it as an event (times from ``t0``); the client
    learns from the answer, and ``on_op`` hears the event."""
    route, body = client.request(op)
    invoke = time.monotonic()
    ex = target.request("POST", route, body)
    done = time.monotonic()
    indeterminate = ex.status is None
    ev = Event(
        id=-1,
        client=c,
        seq=op.seq,
        scope=client.partition(route, body),
        route=route,
        request=body,
        invoke=invoke - t0,
        complete=None if indeterminate else done - t0,
        status=ex.status,
        answer=ex.body,
        error=ex.transport_error or ex.body_error,
    )
    client.learn(route, body, ex)
    if on_op is not None:
        on_op(ev)
    return ev
