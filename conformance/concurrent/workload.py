"""Deterministic generation of a concurrent workload (a *plan*) from a seed.

A plan is, per client, an ordered list of :class:`PlannedOp`.  Records are named by their text
(symbolically): a forget or a supersede names "the record with text X", and each client resolves
that at run time to the target id it last saw for X in an answer (ids are the store's, so they
cannot be planned).  Texts come from a small pool per scope so that clients collide: the same
text written by two clients at once is a dedup race, two supersedes of one record a supersede
race, a forget racing a supersede, a retrieve racing a write.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any, Literal

Kind = Literal["write", "supersede", "retrieve", "list", "forget", "save", "delete", "consolidate"]

WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord")
#: Every ``PHASE`` operations a client moves on to fresh texts (``amber3 note``) and queries
#: (``amber3``).  Clients run at about the same pace, so they collide on the same young
#: records, whose usage is small: a race on them has a short explanation (a counterexample
#: needs every write and retrieve that touched a record it shows).
PHASE = 6


#: Texts per phase: few, so that clients collide often.
PER_PHASE = 3


def pool(phase: int) -> tuple[str, ...]:
    words = [WORDS[(phase + i) % len(WORDS)] for i in range(PER_PHASE)]
    return tuple(f"{w}{phase} note" for w in words)


#: The cap every write to the *capped* scope sends (the last scope of a round of at least
#: two): each write past it evicts, so eviction races (a batch that saw room, a list that sees
#: the scope over its cap) happen on it.  Small, so the actives an eviction chooses among are
#: few: the model does not know the store's times, so any excess of them may go.
EVICTION_CAP = 3


def capped_scope(scopes: int) -> int | None:
    """The index of the scope whose writes send ``EVICTION_CAP`` (None: no such scope)."""
    return scopes - 1 if scopes >= 2 else None


#: Operation mix (weights) for the memory workload.
MIX: tuple[tuple[Kind, int], ...] = (
    ("write", 35),
    ("supersede", 10),
    ("retrieve", 20),
    ("list", 25),
    ("forget", 10),
)


@dataclass(frozen=True)
class PlannedOp:
    client: int
    seq: int
    scope: int  # index into the run's scope keys
    kind: Kind
    texts: tuple[str, ...] = ()  # write / supersede: candidate texts
    target: str | None = None  # supersede / forget: the text of the record it names
    query: str | None = None  # retrieve / list; consolidate: the word of the second target
    limit: int = 50
    delay_ms: float = 0.0  # client think time before this op (0: back to back)
    cap: int | None = None  # write / supersede: the per-scope cap sent (None: none)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["texts"] = list(self.texts)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlannedOp:
        return cls(**{**data, "texts": tuple(data.get("texts", ()))})


def generate_plan(
    seed: int, clients: int, ops_per_client: int, scopes: int
) -> list[list[PlannedOp]]:
    """The same (seed, clients, ops, scopes) always gives the same plan."""
    plan: list[list[PlannedOp]] = []
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    capped = capped_scope(scopes)
    for c in range(clients):
        rng = random.Random(f"memspec-concurrent:{seed}:{c}")
        ops: list[PlannedOp] = []
        for s in range(ops_per_client):
            kind: Kind = rng.choices(kinds, weights)[0]
            scope = rng.randrange(scopes)
            texts = pool(s // PHASE)
            cap = EVICTION_CAP if scope == capped else None
            if kind == "write":
                n = rng.choice((1, 1, 2, 3))
                picked = tuple(rng.choice(texts) for _ in range(n))
                ops.append(PlannedOp(c, s, scope, kind, texts=picked, cap=cap))
            elif kind == "supersede":
                base = rng.choice(texts)
                # Its own token (not the base word), so queries for the base word do not show
                # it; unique, because two records with one content could not be told apart.
                text = f"{base.split()[0]}x{c}n{s} revised"
                ops.append(PlannedOp(c, s, scope, kind, texts=(text,), target=base, cap=cap))
            elif kind == "retrieve":
                query = rng.choice(texts).split()[0]
                ops.append(PlannedOp(c, s, scope, kind, query=query, limit=rng.choice((2, 5))))
            elif kind == "list":
                lq = rng.choice(texts).split()[0] if rng.random() < 0.9 else None
                ops.append(PlannedOp(c, s, scope, kind, query=lq, limit=50))
            else:
                ops.append(PlannedOp(c, s, scope, kind, target=rng.choice(texts)))
        plan.append(ops)
    return plan


def plan_to_json(plan: list[list[PlannedOp]]) -> list[list[dict[str, Any]]]:
    return [[op.to_json() for op in ops] for ops in plan]


def plan_from_json(data: Any) -> list[list[PlannedOp]]:
    return [[PlannedOp.from_json(d) for d in ops] for ops in data]


#: Operation mix of the ledger workload (one account scope; budget, supersede and delete races).
LEDGER_MIX: tuple[tuple[Kind, int], ...] = (
    ("save", 40),
    ("list", 25),
    ("supersede", 20),
    ("delete", 15),
    ("consolidate", 10),
)


def generate_ledger_plan(seed: int, clients: int, ops_per_client: int) -> list[list[PlannedOp]]:
    """A ledger plan: bodies ``pin <word> c<client>n<op>`` (unique), targets named by word;
    saves at the budget (the round sets ``maxRecords`` 2), supersedes, deletes and merges."""
    plan: list[list[PlannedOp]] = []
    kinds = [k for k, _ in LEDGER_MIX]
    weights = [w for _, w in LEDGER_MIX]
    for c in range(clients):
        rng = random.Random(f"memspec-concurrent-ledger:{seed}:{c}")
        ops: list[PlannedOp] = []
        for s in range(ops_per_client):
            kind: Kind = rng.choices(kinds, weights)[0]
            word = rng.choice(WORDS[:PER_PHASE])
            body = f"pin {word} c{c}n{s}"
            if kind == "save":
                ops.append(PlannedOp(c, s, 0, kind, texts=(body,)))
            elif kind == "consolidate":
                # A merge of the records last seen for two words (``_test/consolidate``): at
                # the budget it makes room, so it races saves; it races edits of its targets.
                other = rng.choice([w for w in WORDS[:PER_PHASE] if w != word])
                merged = f"pin {word} c{c}n{s} merged"
                ops.append(PlannedOp(c, s, 0, kind, texts=(merged,), target=word, query=other))
            elif kind == "list":
                ops.append(PlannedOp(c, s, 0, kind))
            elif kind == "supersede":
                ops.append(PlannedOp(c, s, 0, kind, texts=(body,), target=word))
            else:
                ops.append(PlannedOp(c, s, 0, kind, target=word))
        plan.append(ops)
    return plan
