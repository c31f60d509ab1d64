"""``memspec engine``: every vector, then Hypothesis properties, through an engine host.

Results are the ``memspec run`` report's own objects, so ``report.json``, ``junit.xml``,
``report.html``, the closing table, ``--expect`` and the exit code are those of ``memspec run``:

* one *scenario* ``engine-vectors:<function>`` per function, one step per vector (every vector
  runs; the first that diverges is the scenario's divergence), clauses = the vector's;
* one *scenario* ``engine-property:<function>`` per function: host against reference on
  Hypothesis-drawn arguments; a difference is shrunk by Hypothesis and reported as one step
  holding the smallest arguments found, annotated with the function's clauses.

A function the host answers ``{"error": "unknown function"}`` is *skipped: not provided* (both
scenarios), never failed.  A host that hangs, floods or crashes makes the step
*indeterminate* with the reason (the host is killed and started again, see
:mod:`conformance.binding.host`); one that writes garbage *diverges*.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from conformance.binding.functions import BY_NAME, Fn
from conformance.binding.host import Answer, EngineHost
from conformance.binding.judge import THROWS, Judged, describe, ok, verdict_of
from conformance.binding.vectors import Vector, function_vectors
from conformance.jsonutil import short_json
from conformance.machines.constants import pinned_local_constants
from conformance.runner import ScenarioResult
from conformance.scenario import Scenario, Step
from conformance.scrub import shown
from conformance.vocabulary import StepOutcome

JSON = Any
NOT_PROVIDED = "not provided: the host answered unknown function"
PROPERTY_EXAMPLES = {"quick": 40, "ci": 120, "deep": 1000}


@dataclass
class FunctionRun:
    """What one function's vectors and property came to."""

    fn: str
    spec: str
    vectors: ScenarioResult
    prop: ScenarioResult | None
    calls: int = 0
    elapsed_s: float = 0.0


def _excerpt(v: JSON, n: int = 300) -> str:
    """An answer as a line shows it: JSON, every hidden character and run of spaces escaped,
    then cut (:func:`conformance.jsonutil.short_json`) -- spelled as :func:`describe` spells
    the allowed answers, so two that differ never look the same."""
    return short_json(v, n, sort_keys=True)


def _outcome(answer: Answer) -> JSON:
    if answer.kind == "ok":
        return ok(answer.value)
    if answer.kind == "error":
        return THROWS
    return None


def judge_answer(
    index: int,
    fn: str,
    clauses: Sequence[str],
    label: str,
    answer: Answer,
    judged: Judged,
    args: JSON = None,
) -> StepOutcome:
    """One call's verdict: pass, diverge (a wrong or garbled answer), indeterminate (no
    answer: the host hung, flooded or died), skip (the function is not provided)."""
    expected = describe(judged)
    details: dict[str, JSON] = {"vector": label}
    if answer.kind == "unknown":
        return StepOutcome(
            index=index,
            op=fn,
            verdict="skip",
            clauses=tuple(clauses),
            reason=NOT_PROVIDED,
            details=details,
        )
    if answer.kind in ("hang", "flood", "crash", "dead"):
        return StepOutcome(
            index=index,
            op=fn,
            verdict="indeterminate",
            clauses=tuple(clauses),
            expected=expected,
            reason=f"{label}: host {answer.kind}: {shown(answer.detail)}",
            details=details,
        )
    if answer.kind == "garbage":
        return StepOutcome(
            index=index,
            op=fn,
            verdict="diverge",
            clauses=tuple(clauses),
            expected=expected,
            reason=f"{label}: not a binding answer: {shown(answer.detail)}",
            details=details,
        )
    step = _answered(index, fn, clauses, label, answer, judged)
    if step.verdict == "diverge" and args is not None and fn in BY_NAME:
        # one root cause charges its own clause, not every clause of the function
        step = replace(
            step, clauses=BY_NAME[fn].blamed(args, step.details["answered"], judged.allowed[0])
        )
    return step


def _answered(
    index: int, fn: str, clauses: Sequence[str], label: str, answer: Answer, judged: Judged
) -> StepOutcome:
    """The verdict on an answer or a refusal: pass, deviate (the seed allows it, a reference
    rule does not: charged to that rule alone) or diverge."""
    got = _outcome(answer)
    verdict = verdict_of(got, judged)
    if verdict == "pass":
        return StepOutcome(index=index, op=fn, verdict="pass", clauses=tuple(clauses))
    said = f"refused ({shown(answer.detail)})" if answer.kind == "error" else _excerpt(answer.value)
    details: dict[str, JSON] = {"vector": label, "answered": got}
    if verdict == "deviate" and judged.reference is not None:
        return StepOutcome(
            index=index,
            op=fn,
            verdict="deviate",
            clauses=judged.reference.clauses,
            expected=describe(judged.at_reference()),
            reason=f"{label}: answered {said}",
            details={**details, "seed_allows": True},
        )
    return StepOutcome(
        index=index,
        op=fn,
        verdict="diverge",
        clauses=tuple(clauses),
        expected=describe(judged),
        reason=f"{label}: answered {said}",
        details=details,
    )


def _scenario(name: str, fn: Fn, steps: list[Step]) -> Scenario:
    proto = "ledger" if fn.spec == "ledger" else "memory"
    return Scenario(
        protocol=proto,  # type: ignore[arg-type]
        name=name,
        description=f"engine binding: {fn.name} ({fn.summary})",
        clauses=list(fn.rules),
        steps=steps or [Step(op=fn.name)],
        origin="engine",
    )


def run_vectors(host: EngineHost, fn: Fn, vectors: Sequence[Vector]) -> ScenarioResult:
    steps = [Step(op=fn.name, args=v.args, clauses=list(v.clauses), note=v.id) for v in vectors]
    if not vectors:
        result = ScenarioResult(_scenario(f"engine-vectors:{fn.name}", fn, []), "pass")
        result.kind, result.reason = "engine", "no vectors"
        return result
    result = ScenarioResult(_scenario(f"engine-vectors:{fn.name}", fn, steps), "pass")
    result.kind = "engine"
    started = time.perf_counter()
    for i, v in enumerate(vectors):
        answer = host.call(fn.name, v.args)
        label = f"{v.id} ({v.comment})"
        outcome = judge_answer(i, fn.name, v.clauses, label, answer, v.judged, v.args)
        result.outcomes.append(outcome)
        if outcome.verdict == "skip" and i == 0:
            result.verdict, result.reason = "skip", NOT_PROVIDED
            break
    result.elapsed_s = time.perf_counter() - started
    _settle(result)
    return result


def _settle(result: ScenarioResult) -> None:
    """A function's verdict from its steps: failed or indeterminate at its first such step,
    else ``deviate`` when a step differs from the reference implementation only."""
    bad = result.failing_step
    if bad is not None:
        result.verdict = "fail" if bad.verdict == "diverge" else "indeterminate"
        result.reason = bad.reason
    elif result.deviating_steps and result.verdict == "pass":
        result.verdict = "deviate"
        first = result.deviating_steps[0]
        result.reason = f"differs from the reference implementation: {first.reason}"


@dataclass
class _Found:
    args: JSON = None
    outcome: StepOutcome | None = None
    examples: int = 0
    stop: list[str] = field(default_factory=list)
    #: the first example the engine answered as the seed allows but the reference does not
    deviation: tuple[JSON, StepOutcome] | None = None


class _Mismatch(AssertionError):
    pass


def _property_result(fn: Fn, found: _Found, error: str) -> ScenarioResult:
    """The property's scenario result: skipped (the host does not provide ``fn``), the shrunk
    counterexample as its one step, or a pass (indeterminate on a harness ``error``)."""
    name = f"engine-property:{fn.name}"
    if found.stop:
        res = ScenarioResult(_scenario(name, fn, []), "skip", reason=NOT_PROVIDED)
    elif found.outcome is not None:
        step = Step(op=fn.name, args=found.args, clauses=list(fn.clauses), note="shrunk")
        res = ScenarioResult(_scenario(name, fn, [step]), "pass")
        o = found.outcome
        reason = f"shrunk counterexample {_excerpt(found.args, 400)}: {o.reason}"
        o = StepOutcome(
            index=0,
            op=o.op,
            verdict=o.verdict,
            clauses=o.clauses,
            expected=o.expected,
            reason=reason,
            details={**o.details, "args": found.args},
        )
        res.outcomes.append(o)
        res.verdict = "fail" if o.verdict == "diverge" else "indeterminate"
        res.reason = reason
    elif found.deviation is not None and not error:
        args, o = found.deviation
        step = Step(op=fn.name, args=args, clauses=list(o.clauses), note="first deviation")
        res = ScenarioResult(_scenario(name, fn, [step]), "deviate")
        reason = f"example {_excerpt(args, 400)}: {o.reason}"
        res.outcomes.append(replace(o, reason=reason, details={**o.details, "args": args}))
        res.reason = f"differs from the reference implementation: {reason}"
    else:
        res = ScenarioResult(_scenario(name, fn, []), "pass" if not error else "indeterminate")
        res.reason = error or f"{found.examples} examples"
        res.outcomes.append(
            StepOutcome(
                index=0,
                op=fn.name,
                verdict="pass" if not error else "indeterminate",
                clauses=fn.clauses,
                reason=res.reason,
            )
        )
    return res


def run_property(host: EngineHost, fn: Fn, examples: int, seed: int) -> ScenarioResult:
    """Host against reference on drawn arguments; the shrunk counterexample is one step."""
    found = _Found()

    @settings(
        max_examples=examples,
        database=None,
        derandomize=False,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )
    @hypothesis_seed(seed)
    @given(fn.strategy)
    def prop(args: JSON) -> None:
        found.examples += 1
        answer = host.call(fn.name, args)
        if answer.kind == "unknown":
            found.stop.append(NOT_PROVIDED)
            return
        outcome = judge_answer(0, fn.name, fn.clauses, "property", answer, fn.judge(args), args)
        if outcome.verdict == "deviate" and found.deviation is None:
            found.deviation = (copy.deepcopy(args), outcome)
        if outcome.verdict in ("diverge", "indeterminate"):
            found.args, found.outcome = args, outcome
            raise _Mismatch(outcome.reason)

    started = time.perf_counter()
    error = ""
    try:
        with pinned_local_constants():  # the same seed draws the same examples everywhere
            prop()
    except _Mismatch:
        pass
    except Exception as exc:  # a flaky host (a hang once, not twice) ends up here
        if found.outcome is None:
            error = f"harness error: {type(exc).__name__}: {exc}"
    elapsed = time.perf_counter() - started
    res = _property_result(fn, found, error)
    res.kind = "engine"
    res.elapsed_s = elapsed
    res.details = {"examples": found.examples}
    return res


def check_engine(
    host: EngineHost,
    functions: Sequence[Fn],
    *,
    vectors: dict[str, list[Vector]] | None = None,
    examples: int = PROPERTY_EXAMPLES["ci"],
    seed: int = 0,
    properties: bool = True,
    on_result: Callable[[ScenarioResult], None] | None = None,
) -> list[FunctionRun]:
    """Every function's vectors (from ``vectors`` when given: an exported directory read back,
    else built now), then its property."""
    out = []
    for fn in functions:
        started = time.perf_counter()
        calls = host.calls
        vs = vectors[fn.name] if vectors is not None else function_vectors(fn)
        vr = run_vectors(host, fn, vs)
        if on_result is not None:
            on_result(vr)
        pr: ScenarioResult | None = None
        if properties:
            if vr.verdict == "skip":
                pr = ScenarioResult(
                    _scenario(f"engine-property:{fn.name}", fn, []), "skip", reason=NOT_PROVIDED
                )
                pr.kind = "engine"
            else:
                pr = run_property(host, fn, examples, seed)
            if on_result is not None:
                on_result(pr)
        out.append(
            FunctionRun(fn.name, fn.spec, vr, pr, host.calls - calls, time.perf_counter() - started)
        )
    return out


__all__ = ["BY_NAME", "FunctionRun", "check_engine", "judge_answer", "run_property", "run_vectors"]
