"""The engine binding's functions: name, clauses, the reference behind it, what is allowed.

Every entry of :data:`FUNCTIONS` is one pure function of ``specs/engine-binding.md``
(:class:`~conformance.binding.functions.base.Fn`):

* ``call(args)`` -- the reference model behind the binding (what ``conformance.engine_host``
  answers); it raises :class:`Refused` where the function refuses its input;
* ``judge(args)`` -- every allowed outcome (the open points of the seed accepted, each named in
  the vector's comment), or a checker where the set is too large to list;
* ``strategy`` -- Hypothesis arguments for the sample and the properties;
* ``boundaries`` -- the hand-picked vectors: ``(comment, args)``.

The functions live by family, one module each, laid out like ``reference/`` (``memory/``,
``ledger/``): a family module holds its functions' calls, judges, boundary cases and strategies
and ends with its own ``FUNCTIONS``. :data:`FAMILIES` is the registry: a new family is a module
and one line here. The order of :data:`FAMILIES` is the order of the export's files.
"""

from __future__ import annotations

from types import ModuleType

from conformance.binding.codec import ArgError
from conformance.binding.functions.base import JSON, Args, Fn, Refused, outcome_of
from conformance.binding.functions.ledger import credentials, intervals, packet
from conformance.binding.functions.memory import (
    budget,
    commands,
    containment,
    eviction,
    extractor,
    listing,
    parameters,
    pool,
    reflection,
    routing,
    scope_cap,
    scopes,
    scoring,
    writing,
)

#: every family, in the order of the export
FAMILIES: tuple[ModuleType, ...] = (
    scoring,
    parameters,
    writing,
    eviction,
    scope_cap,
    containment,
    budget,
    pool,
    scopes,
    reflection,
    extractor,
    routing,
    commands,
    listing,
    intervals,
    packet,
    credentials,
)

FUNCTIONS: tuple[Fn, ...] = tuple(f for family in FAMILIES for f in family.FUNCTIONS)
BY_NAME: dict[str, Fn] = {f.name: f for f in FUNCTIONS}


def reference_call(name: str, args: Args) -> JSON:
    """The reference's answer as the binding carries it (raises Refused / ArgError / KeyError)."""
    return BY_NAME[name].call(args)


__all__ = [
    "ArgError",
    "Args",
    "BY_NAME",
    "FAMILIES",
    "FUNCTIONS",
    "Fn",
    "Refused",
    "outcome_of",
    "reference_call",
]
