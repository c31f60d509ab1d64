"""Shards: ``memspec run|fuzz --shard K/N`` splits one run across N processes (CI runners).

Pure functions, no I/O.  A sharded run is defined against the unsharded run with the same
options and the same ``--seed``:

* **Corpus.** Every scenario is in exactly one shard.  Shards are balanced by expected cost
  (:func:`scenario_cost`: the number of steps, plus one for setting the scenario up), not by
  count: longest-processing-time first — scenarios by decreasing cost (ties by protocol and
  name), each to the shard with the least cost so far (ties to the lowest shard).  Within a
  shard the corpus keeps its order.
* **State machines.** A machine's examples run in batches (``conformance.machines.BATCH``
  examples each, batch ``b`` seeded by ``batch_seed(seed, b)``).  Shard K of N runs the batches
  ``b`` with ``b % N == K - 1``: N disjoint seed ranges derived from the one seed, whose union is
  exactly the batches of the unsharded run.  (Exactly, as long as exploration runs to the end:
  a failure stops the shard that found it, and a profile's time budget — ``quick`` and
  ``deep``; ``ci`` has none — is checked by each shard on its own clock.)
* **Run ids.** All shards share one base run id (``--run-id``, or one derived from the seed and
  the options, so the N processes agree without talking); shard K writes its report under the
  run id ``<base>s<K>of<N>`` and only into scope keys made from it — shards never share a key.
  The ledger has one account scope per store, so each ledger shard needs its own store
  instance (the report says so).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
MAX_SHARDS = 256


@dataclass(frozen=True)
class Shard:
    index: int  # K, 1-based
    count: int  # N

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def to_json(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}


WHOLE = Shard(1, 1)


def parse_shard(text: str) -> Shard:
    """``"K/N"`` with 1 ≤ K ≤ N ≤ 256; a ValueError names what is wrong."""
    m = _SHARD.fullmatch(text or "")
    if m is None:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 2/4")
    k, n = int(m.group(1)), int(m.group(2))
    if not 1 <= n <= MAX_SHARDS:
        raise ValueError(f"--shard {text}: N must be between 1 and {MAX_SHARDS}")
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text}: K must be between 1 and N ({n})")
    return Shard(k, n)


def scenario_cost(scenario: Any) -> int:
    """Expected cost of a scenario: its steps, plus one for beginning it (fresh scopes)."""
    return len(getattr(scenario, "steps", ())) + 1


def partition(costs: Sequence[int], keys: Sequence[Any], count: int) -> list[list[int]]:
    """Indexes of ``costs`` split into ``count`` groups by longest-processing-time first."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], keys[i]))
    loads = [0] * count
    groups: list[list[int]] = [[] for _ in range(count)]
    for i in order:
        target = min(range(count), key=lambda g: (loads[g], g))
        groups[target].append(i)
        loads[target] += costs[i]
    return [sorted(g) for g in groups]


def select_scenarios(scenarios: Sequence[tuple[Any, T]], shard: Shard) -> list[tuple[Any, T]]:
    """The corpus entries ``(scenario, path)`` of this shard, in corpus order."""
    if shard.count == 1:
        return list(scenarios)
    costs = [scenario_cost(s) for s, _ in scenarios]
    keys = [(s.protocol, s.name) for s, _ in scenarios]
    mine = partition(costs, keys, shard.count)[shard.index - 1]
    return [scenarios[i] for i in mine]


def batch_in_shard(batch_no: int, shard: Shard) -> bool:
    """Whether shard K of N runs the machines' batch ``batch_no`` (0-based)."""
    return batch_no % shard.count == shard.index - 1


def base_run_id(seed: int, options: dict[str, Any]) -> str:
    """The run id every shard of one sharded run derives from the same seed and options."""
    text = repr((seed, sorted((k, str(v)) for k, v in options.items())))
    return "memspec-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def shard_run_id(base: str, shard: Shard) -> str:
    return base if shard.count == 1 else f"{base}s{shard.index}of{shard.count}"
