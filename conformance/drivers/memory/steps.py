"""The Memory Worker driver's ops: the clauses each op speaks for when a step names none, and
the capabilities a step or a scenario needs.

Part of the Memory Worker driver (:mod:`conformance.drivers.memory.driver`; ops and args in its
docstring).
"""

from __future__ import annotations

from conformance.drivers.base import scenario_requires
from conformance.drivers.memory.raw import ROUTES
from conformance.scenario import Scenario, Step
from conformance.targets.base import AUTH, RAW_HTTP
from conformance.targets.memory import CAP, FORGET, LIST

DEFAULT_CLAUSES: dict[str, tuple[str, ...]] = {
    "write": ("MEM-WIRE.12", "MEM-WIRE.13"),
    "retrieve": ("MEM-WIRE.11", "MEM-STORE.2"),
    "list": ("MEM-WIRE.14", "MEM-STORE.7"),
    "forget": ("MEM-WIRE.15", "MEM-STORE.8"),
    "healthz": ("MEM-WIRE.1",),
    "raw": ("MEM-WIRE.4",),
    "pause_ms": (),
}


def step_requires(step: Step) -> set[str]:
    """Capabilities one step needs."""
    need: set[str] = set()
    if step.op in ROUTES:
        need.add(AUTH)
    if step.op == "list":
        need.add(LIST)
    if step.op == "forget":
        need.add(FORGET)
    if step.op == "write" and "cap" in step.args:
        need.add(CAP)
    if step.op == "raw":
        headers = step.args.get("headers") or {}
        # A hand-made length needs a raw socket; no length at all (``null``) and a chunked
        # body are what any streaming client sends, and what a public edge passes.
        if any(
            k.lower() == "transfer-encoding" or (k.lower() == "content-length" and v is not None)
            for k, v in headers.items()
        ):
            need.add(RAW_HTTP)
        if step.args.get("auth", True) is not False and step.args.get("path") in ROUTES.values():
            need.add(AUTH)
    return need


def infer_requires(scenario: Scenario) -> set[str]:
    """Every capability a memory scenario needs (declared ``requires`` plus what its steps use)."""
    return scenario_requires(scenario, step_requires)
