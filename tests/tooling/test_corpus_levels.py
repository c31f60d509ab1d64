"""The corpus's shape by level: a step that checks only a reference rule never stands in front of
a step that checks a seed (or binding) rule in one scenario.

A reference-level divergence is a deviation, and a deviation ends its scenario (model and store
may differ from then on): every step after it is skipped.  A reference step placed before seed
steps therefore hides them from exactly the stores that deviate -- a store refusing nothing but
the reference's format characters never reaches the seed's control characters behind them.
So each scenario's steps run seed-level first, reference-level last (or in a scenario of their
own).

A step's level: the clauses it names (``clauses``, else its op's default clauses, as the
drivers blame them) are all ``reference`` clauses, or -- for a memory step with a JSON body --
the reference refuses its request only for a bound the seed does not give
(``WireError.reference_only``, MEM-WIRE.21).  The second rule also holds each such step to
name only reference clauses, so the first rule sees it.  (Harness tooling; no spec clause of
its own.)
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from conformance.drivers.common import expand_macro, is_macro
from conformance.drivers.ledger.steps import OPS as LEDGER_OPS
from conformance.drivers.memory.steps import DEFAULT_CLAUSES
from conformance.oracle.ledger.clauses import method_clauses
from conformance.scenario import Scenario, Step, load_scenario
from conformance.sources import only_reference
from reference.memory.wire.codec import WireError
from reference.memory.wire.handle import read_body

CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "corpus"
MEMORY_ROUTES = {"write": "/write", "retrieve": "/retrieve", "list": "/list", "forget": "/forget"}
_SCOPE = re.compile(r"\{scope:([a-z0-9]+)\}")


def _expand(value: Any) -> Any:
    """The step's args as the driver sends them, near enough to validate: scope placeholders
    become valid run keys, macros their strings, ``$name`` ids a well-formed id."""
    if is_macro(value):
        return expand_macro(value, _expand)
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    if isinstance(value, str):
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", value):
            return "mem:org:memspec-levels-1-a:1"
        return _SCOPE.sub(lambda m: f"org:memspec-levels-1-{m.group(1)}", value)
    return value


def _named_clauses(protocol: str, step: Step) -> tuple[str, ...]:
    """The clauses a divergence of this step names (its own, else its op's defaults)."""
    if step.clauses:
        return tuple(step.clauses)
    if protocol == "memory":
        return DEFAULT_CLAUSES.get(step.op, ("MEM-WIRE.4",))
    op = LEDGER_OPS.get(step.op)
    return method_clauses(op.method) if op and op.method else ("LED-WIRE.1",)


def refused_only_by_reference(step: Step) -> bool:
    """A memory step whose body the reference refuses only for a reference bound."""
    route = MEMORY_ROUTES.get(step.op)
    if route is None:
        return False
    read = read_body(route, json.dumps(_expand(step.args), ensure_ascii=False))
    if read is None:
        return False
    _strict, lenient = read
    return isinstance(lenient, WireError) and lenient.reference_only


def step_is_reference_level(protocol: str, step: Step) -> bool:
    """A step that names only reference clauses, or that the reference refuses only for a
    reference bound.  A step naming no clauses is judged by what its divergence names (a seed
    rule it breaks fails, whatever its op's default clauses), so it counts as seed-level."""
    return bool(step.clauses and only_reference(step.clauses)) or (
        protocol == "memory" and refused_only_by_reference(step)
    )


def hidden_seed_steps(protocol: str, scenario: Scenario) -> list[tuple[int, int]]:
    """(reference step, later seed step) pairs: each a seed step a deviation would hide."""
    first_reference: int | None = None
    out = []
    for i, step in enumerate(scenario.steps):
        if step_is_reference_level(protocol, step):
            if first_reference is None:
                first_reference = i
        elif first_reference is not None:
            out.append((first_reference, i))
    return out


def _corpus(protocol: str) -> list[Path]:
    return sorted((CORPUS / protocol).glob("*.json"))


@pytest.mark.clause()
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in _corpus("memory")]
    + [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in _corpus("ledger")],
)
def test_no_reference_step_stands_before_a_seed_step(path: Path) -> None:
    protocol = path.parent.name
    scenario = load_scenario(path)
    hidden = hidden_seed_steps(protocol, scenario)
    assert not hidden, (
        f"{path.name}: reference-level step {hidden[0][0]} stands before seed-level step(s)"
        f" {sorted({s for _, s in hidden})}: a deviation there ends the scenario and hides"
        " them. Move the reference steps last, or into a scenario of their own."
    )


@pytest.mark.clause()
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in _corpus("memory")])
def test_a_step_refused_only_by_a_reference_bound_names_only_reference_clauses(
    path: Path,
) -> None:
    scenario = load_scenario(path)
    wrong = [
        i
        for i, step in enumerate(scenario.steps)
        if refused_only_by_reference(step) and not only_reference(_named_clauses("memory", step))
    ]
    assert not wrong, (
        f"{path.name}: step(s) {wrong} are refused by the reference only for a bound the seed"
        " does not give (MEM-WIRE.21) but name seed clauses: give them their reference clauses"
    )


def _step(op: str, args: dict[str, Any], clauses: list[str] | None = None) -> dict[str, Any]:
    return {"op": op, "args": args, **({"clauses": clauses} if clauses else {})}


@pytest.mark.clause()
def test_the_rule_sees_a_format_character_step_hiding_a_control_character_step() -> None:
    """The shape the rule exists for: U+200B (format, a reference rule) before U+0001
    (control, the seed's)."""
    recs = [{"kind": "fact", "text": "t", "sourceThreadKey": "thread:1"}]
    bad = Scenario.model_validate(
        {
            "format": "memspec-scenario/1",
            "protocol": "memory",
            "name": "hiding",
            "description": "a format-character step hiding a control-character step",
            "clauses": ["MEM-WIRE.9"],
            "steps": [
                _step("write", {"scopeKey": "{scope:a}\u200bx", "records": recs}),
                _step("write", {"scopeKey": "{scope:a}\u0001x", "records": recs}),
            ],
            "origin": "corpus",
        }
    )
    assert step_is_reference_level("memory", bad.steps[0])
    assert not step_is_reference_level("memory", bad.steps[1])
    assert hidden_seed_steps("memory", bad) == [(0, 1)]
    good = bad.model_copy(update={"steps": list(reversed(bad.steps))})
    assert hidden_seed_steps("memory", good) == []


# ------------------------------------------------ one value per class, never one for all


def char_class(c: str) -> str | None:
    """The class of §16/§26's "whitespace/control chars" a character falls in (None: neither)."""
    cp = ord(c)
    if cp < 0x20 or cp == 0x7F:
        return "whitespace (ASCII)" if c in "\t\n\v\f\r" else ("DEL" if cp == 0x7F else "C0")
    if 0x80 <= cp <= 0x9F:
        return "C1"
    if c == " ":
        return "whitespace (ASCII)"
    cat = unicodedata.category(c)
    return {"Zs": "Zs", "Zl": "Zl", "Zp": "Zp"}.get(cat)


#: Every class a rule names, each of which needs a refused step of its own.
CLASSES = frozenset({"C0", "DEL", "C1", "whitespace (ASCII)", "Zs", "Zl", "Zp"})
FIELDS = {"scopeKey": CLASSES, "id": CLASSES - {"Zp"}}


def refused_classes(field: str) -> set[str]:
    """The classes of the characters the memory corpus sends in ``field`` in a step that
    expects a 400, one class per step (a step mixing classes speaks for none)."""
    out: set[str] = set()
    for path in _corpus("memory"):
        for step in load_scenario(path).steps:
            value = _expand(step.args).get(field) if isinstance(step.args, dict) else None
            if not isinstance(value, str) or (step.expect or {}).get("status") != 400:
                continue
            classes = {k for k in map(char_class, value) if k is not None}
            if len(classes) == 1:
                out |= classes
    return out


@pytest.mark.clause()
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_character_class_a_rule_names_has_its_own_refused_step(field: str) -> None:
    """§16 ("scopeKey … no whitespace/control chars") and §26 (the forget id): one value of a
    class never stands for another -- a tab proves nothing about U+0001."""
    missing = sorted(FIELDS[field] - refused_classes(field))
    assert not missing, f"no corpus step sends {field} holding only a {missing} character"
