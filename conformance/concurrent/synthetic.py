"""Synthetic linearizable memory histories, for the checker's tests and its benchmark.

Clients run a plan of :mod:`conformance.concurrent.workload` (the shape of ``memspec run
--clients``) in simulated time against the reference store: every operation gets an invocation
time, a duration and a linearization point inside its interval, and its answer is what the
reference answers at that point.  So the history is linearizable, and a checker must find an
order that explains it.
"""

from __future__ import annotations

import random
from types import MappingProxyType
from typing import Any

from conformance.concurrent.driver import Event, MemoryClient
from conformance.concurrent.workload import PlannedOp, generate_plan
from conformance.drivers.base import Exchange
from reference.memory.store import StoreState, store_forget, store_list, store_retrieve, store_write
from reference.memory.wire import WriteBody, record_to_wire, validate_write, write_response


def _answer(
    state: StoreState, scope: str, route: str, body: dict[str, Any], now: int
) -> tuple[StoreState, Any]:
    if route == "/write":
        parsed = validate_write(body)
        assert isinstance(parsed, WriteBody)
        cap = 500 if parsed.cap is None else parsed.cap
        state, res = store_write(state, scope, parsed.candidates, now, cap)
        return state, write_response(res)
    if route == "/retrieve":
        state, recs = store_retrieve(state, scope, body["query"], body["limit"], now)
        return state, {"records": [record_to_wire(r) for r in recs]}
    if route == "/list":
        recs = store_list(state, scope, body["limit"], body.get("query"))
        return state, {"records": [record_to_wire(r) for r in recs]}
    state, forgotten = store_forget(state, scope, body["id"])
    return state, {"ok": True, "forgotten": forgotten}


def synthetic_history(total_ops: int, scopes: int, clients: int = 8, seed: int = 1) -> list[Event]:
    """A linearizable history of about ``total_ops`` operations: ``clients`` clients, each
    picking a scope per operation, in simulated time (seconds)."""
    rng = random.Random(seed)
    per_client = max(1, total_ops // clients)
    plan = generate_plan(seed, clients, per_client, scopes)
    keys = [f"org:memspec-bench-{s}" for s in range(scopes)]
    timed: list[tuple[float, float, float, PlannedOp]] = []
    for ops in plan:
        t = rng.uniform(0, 0.002)
        for op in ops:
            dur = rng.uniform(0.0005, 0.003)
            timed.append((t, t + dur, rng.uniform(t, t + dur), op))
            t += dur + rng.uniform(0, 0.0005)
    client_state = [MemoryClient(keys) for _ in range(clients)]
    states = {k: StoreState(scopes=MappingProxyType({})) for k in keys}
    events: list[Event] = []
    # Apply in linearization-point order; a client builds its request at invocation, after
    # everything it learned from its own earlier (completed) operations.
    for call, ret, point, op in sorted(timed, key=lambda x: x[2]):
        cl = client_state[op.client]
        route, body = cl.request(op)
        scope = body["scopeKey"]
        states[scope], answer = _answer(states[scope], scope, route, body, int(point * 1e6))
        cl.learn(route, body, Exchange("POST", route, body, 200, answer))
        events.append(
            Event(len(events), op.client, op.seq, scope, route, body, call, ret, 200, answer)
        )
    return events
