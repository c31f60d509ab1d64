"""The clauses each state-machine rule checks, declared on the rule itself.

``@checks("MEM-STORE.7", …)`` above a Hypothesis ``@rule``, ``@initialize`` or ``@invariant``
method records the clause ids the rule's steps exercise over the wire (the clauses a wrong
answer to one of them is named under).  A machine's clauses are computed from its rules
(:func:`machine_clauses`: every id one of them declares, in the order the specs define them;
each machine module exports them as ``MACHINE_CLAUSES``), and :func:`machine_rules` lists each
rule with its ids and where it is defined, for ``memspec clauses`` (coverage and ``-v``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from conformance.clauses import load_clauses
from conformance.version import specs_dir

F = TypeVar("F", bound=Callable[..., Any])

#: The attribute ``@checks`` sets on a rule's function.
_ATTR = "memspec_checks"
#: The attributes Hypothesis sets on a rule, an initialize rule and an invariant.
_MARKERS = (
    "hypothesis_stateful_rule",
    "hypothesis_stateful_initialize_rule",
    "hypothesis_stateful_invariant",
)


def checks(*ids: str) -> Callable[[F], F]:
    """Declare the clause ids a machine rule checks (at least one); the rule is unchanged."""
    if not ids:
        raise ValueError("@checks names at least one clause id")

    def mark(fn: F) -> F:
        setattr(fn, _ATTR, ids)
        return fn

    return mark


@dataclass(frozen=True)
class Rule:
    """One rule of a machine: its name, where it is defined and the clauses it declares."""

    name: str
    #: ``module.Class.method`` of the function as written (a mixin's rule: the mixin's)
    qualname: str
    path: str
    line: int
    clauses: tuple[str, ...]


def machine_rules(machine: type) -> list[Rule]:
    """Every Hypothesis rule, initialize rule and invariant of ``machine``, by name; a rule
    without ``@checks`` has no clauses."""
    out: list[Rule] = []
    for name, value in inspect.getmembers(machine):
        if not any(hasattr(value, marker) for marker in _MARKERS):
            continue
        fn = inspect.unwrap(value)
        out.append(
            Rule(
                name=name,
                qualname=f"{fn.__module__}.{fn.__qualname__}",
                path=fn.__code__.co_filename,
                line=fn.__code__.co_firstlineno,
                clauses=tuple(getattr(value, _ATTR, ())),
            )
        )
    return out


@functools.cache
def _spec_order() -> dict[str, int]:
    return {cid: i for i, cid in enumerate(load_clauses(specs_dir()))}


def machine_clauses(machine: type) -> tuple[str, ...]:
    """Every clause a rule of ``machine`` declares, once each, in spec order (an id no spec
    defines last, by id)."""
    order = _spec_order()
    declared = {c for rule in machine_rules(machine) for c in rule.clauses}
    return tuple(sorted(declared, key=lambda c: (order.get(c, len(order)), c)))
