"""Run scenarios through protocol drivers and collect what happened.

A scenario runs step by step through its protocol's driver; the first step that diverges (or
is indeterminate) ends the scenario — later steps would be judged against a model that no
longer describes the target.  A scenario that needs a capability the target lacks is skipped
with the reason, never failed.  Nothing here knows a protocol: drivers do.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.drivers.base import Driver
from conformance.scenario import Scenario, ScenarioError, Step, load_scenario
from conformance.sources import only_reference
from conformance.vocabulary import Mispredicted, ResultVerdict, StepOutcome

ScenarioVerdict = ResultVerdict
CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


@dataclass
class ScenarioResult:
    scenario: Scenario
    verdict: ScenarioVerdict
    outcomes: list[StepOutcome] = field(default_factory=list)
    reason: str = ""
    path: str | None = None
    elapsed_s: float = 0.0
    kind: str = "scenario"  # "scenario" | "machine"
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def protocol(self) -> str:
        return self.scenario.protocol

    @property
    def failing_step(self) -> StepOutcome | None:
        for o in self.outcomes:
            if o.verdict in ("diverge", "indeterminate"):
                return o
        return None

    @property
    def deviating_steps(self) -> list[StepOutcome]:
        """The steps that differ from the reference implementation only (reference clauses)."""
        return [o for o in self.outcomes if o.verdict == "deviate"]

    def deviation_clauses(self) -> list[str]:
        """The reference clauses the deviating steps touch."""
        return list(dict.fromkeys(c for o in self.deviating_steps for c in o.clauses))

    def clauses(self) -> list[str]:
        """Clauses this result speaks for: the scenario's, plus those a divergence named."""
        out = dict.fromkeys(self.scenario.all_clauses())
        step = self.failing_step
        if step is not None:
            out.update(dict.fromkeys(step.clauses))
        return list(out)

    def failed_clauses(self) -> list[str]:
        step = self.failing_step
        if step is None:
            return []
        if self.kind == "engine":  # every vector runs: each divergence names its root cause
            steps = [o for o in self.outcomes if o.verdict in ("diverge", "indeterminate")]
            return list(dict.fromkeys(c for o in steps for c in o.clauses))
        return list(dict.fromkeys(step.clauses or tuple(self.scenario.clauses)))


OnStep = Callable[[ScenarioResult, StepOutcome], None]


def scenario_requirements(driver: Driver, scenario: Scenario) -> set[str]:
    """What a scenario needs: its declared ``requires`` plus what the driver infers."""
    return set(scenario.requires) | driver.requirements(scenario)


def run_scenario(
    driver: Driver,
    scenario: Scenario,
    *,
    path: str | None = None,
    on_step: OnStep | None = None,
    tag: str | None = None,
) -> ScenarioResult:
    """Run one scenario to its end or its first divergence.

    ``tag`` names the scenario's scopes in the run (the corpus passes ``c<index>``) so that the
    keys a scenario writes do not depend on which lane ran it or what ran before it.
    """
    result = ScenarioResult(scenario, "pass", path=path)
    missing = sorted(scenario_requirements(driver, scenario) - set(driver.capabilities()))
    if missing:
        result.verdict = "skip"
        result.reason = f"target lacks {', '.join(missing)}"
        return result
    started = time.perf_counter()
    deviated = False
    outcomes = _outcomes(driver, scenario, tag)
    for index, (step, outcome) in enumerate(zip(scenario.steps, outcomes, strict=False)):
        outcome = _blamed(scenario, step, outcome)
        result.outcomes.append(outcome)
        if on_step is not None:
            on_step(result, outcome)
        if outcome.verdict == "skip" and outcome.details.get("unobservable"):
            continue  # this probe says nothing about the store; the rest of the scenario does
        if outcome.verdict == "deviate":
            if result.verdict == "pass":
                result.verdict = "deviate"
                result.reason = f"step {index} ({step.op}) differs from the reference"
                result.reason += f" implementation: {outcome.reason}"
            # When neither side changed anything (both refused the call), or the model went
            # on in the store's reading of a choice the seed leaves open (``followed``), the
            # model still follows the store: the scenario goes on and its later steps are
            # judged at the seed level.  Otherwise model and store may now differ, and it
            # stops here.
            if goes_on(outcome):
                continue
            deviated = True
            break
        if outcome.verdict == "diverge":
            result.verdict = "fail"
            result.reason = f"step {index} ({step.op}): {outcome.reason}"
            break
        if outcome.verdict == "indeterminate":
            result.verdict = "indeterminate"
            result.reason = f"step {index} ({step.op}): {outcome.reason}"
            break
        if outcome.verdict == "skip":
            if result.verdict == "pass":  # a deviation before it stays the verdict
                result.verdict = "skip"
                result.reason = f"step {index} ({step.op}): {outcome.reason}"
            break
    _close(result, scenario, deviated)
    result.elapsed_s = time.perf_counter() - started
    return result


def _outcomes(driver: Driver, scenario: Scenario, tag: str | None) -> Iterable[StepOutcome]:
    """The scenario's steps run one after another as they are read (steps sent ahead when
    the driver has a window), starting with ``driver.begin``."""
    if getattr(driver, "window", 1) > 1 and hasattr(driver, "ahead"):
        return _steps_ahead(driver, scenario)
    if tag is None:
        driver.begin(scenario.name)
    else:
        driver.begin(scenario.name, tag=tag)
    return (_step(driver, index, step) for index, step in enumerate(scenario.steps))


def _blamed(scenario: Scenario, step: Step, outcome: StepOutcome) -> StepOutcome:
    """A step's outcome as the scenario reports it: no answer blamed on the scenario's and the
    step's clauses, a divergence on reference clauses only made a deviation, the answer kept
    short."""
    if outcome.verdict == "indeterminate" and outcome.exchange is not None:
        if outcome.exchange.status is None:
            # No answer (a timeout, a reset): blame the scenario and the step that asked,
            # not the route the request happened to go to.
            outcome = replace(
                outcome,
                clauses=tuple(dict.fromkeys((*scenario.clauses, *step.clauses))),
            )
    if outcome.verdict == "diverge" and only_reference(outcome.clauses):
        # A deviation from the reference implementation, not from the seed (every clause
        # it touches is a reference clause: conformance.sources).
        outcome = replace(outcome, verdict="deviate")
    return outcome.kept()  # not the whole answer, once judged


def _close(result: ScenarioResult, scenario: Scenario, deviated: bool) -> None:
    """After the last step run: the steps a stopped scenario did not reach, skipped; a
    scenario whose every step was skipped, skipped."""
    stopped = len(result.outcomes)
    after = ", a deviation after which model and store may differ" if deviated else ""
    if result.verdict != "pass" and stopped < len(scenario.steps):
        for index in range(stopped, len(scenario.steps)):
            step = scenario.steps[index]
            result.outcomes.append(
                StepOutcome(
                    index=index,
                    op=step.op,
                    verdict="skip",
                    clauses=tuple(step.clauses),
                    reason=f"not reached (the scenario stopped at step {stopped - 1}{after})",
                    details={"not_reached": True},
                )
            )
    if (
        result.verdict == "pass"
        and result.outcomes
        and all(o.verdict == "skip" for o in result.outcomes)
    ):
        result.verdict = "skip"
        result.reason = f"step 0 ({result.outcomes[0].op}): {result.outcomes[0].reason}"


def _step(driver: Driver, index: int, step: Step) -> StepOutcome:
    try:
        return driver.execute(index, step)
    except Exception as exc:  # a driver bug must not end the run; report it as such
        return _harness_error(index, step, exc)


def _harness_error(index: int, step: Step, exc: Exception) -> StepOutcome:
    return StepOutcome(
        index=index,
        op=step.op,
        verdict="indeterminate",
        clauses=tuple(step.clauses),
        reason=f"harness error: {type(exc).__name__}: {exc}",
    )


def _stops(outcome: StepOutcome) -> bool:
    """Whether the scenario ends at this outcome (see :func:`run_scenario`)."""
    if outcome.verdict == "skip" and outcome.details.get("unobservable"):
        return False
    if outcome.verdict in ("diverge", "deviate") and only_reference(outcome.clauses):
        if goes_on(outcome):
            return False  # a deviation the model still follows the store past: it goes on
    return outcome.verdict != "pass"


def goes_on(outcome: StepOutcome) -> bool:
    """Whether the model still follows the store past this deviation: both sides refused
    (``state_kept``), or the model went on in the store's reading of an open choice
    (``followed``)."""
    return bool(outcome.details.get("state_kept") or outcome.details.get("followed"))


def _steps_ahead(driver: Any, scenario: Scenario) -> list[StepOutcome]:
    """The outcomes of ``scenario``'s steps, up to the first that ends it, with the steps sent
    ahead of the answers (``--window``, a driver with ``ahead``): the same outcomes as one step
    at a time.  A step judged otherwise than the model predicted (``Mispredicted``) makes the
    scenario run again, from its start, with that step run in turn: the ones after it were
    sent from a state the one-at-a-time run would not have had."""
    in_turn: set[int] = set()
    judged: dict[int, StepOutcome] = {}

    def settled(key: Any, _step: Any, outcome: StepOutcome | None, ok: bool) -> None:
        if not ok:
            raise Mispredicted(key)
        if outcome is not None:
            judged[key] = outcome

    while True:
        judged.clear()
        driver.on_settled = settled
        try:
            if -1 in in_turn:
                driver.settle()
                driver.begin(scenario.name)
            else:
                driver.begin_ahead(scenario.name, -1)
            outcomes: list[StepOutcome | None] = []
            for index, step in enumerate(scenario.steps):
                try:
                    if index in in_turn:
                        driver.settle()
                        outcome, provisional = driver.execute(index, step), False
                    else:
                        outcome, provisional = driver.ahead(index, step, index)
                except Exception as exc:
                    outcome, provisional = _harness_error(index, step, exc), False
                outcomes.append(None if provisional else outcome)
                if not provisional and _stops(outcome):
                    break
            driver.settle()
            return [judged[i] if o is None else o for i, o in enumerate(outcomes)]
        except Mispredicted as exc:
            driver.abandon()
            in_turn.add(exc.key)
        finally:
            driver.on_settled = None


Lanes = Mapping[str, "Driver | Sequence[Driver]"]


def run_scenarios(
    drivers: Lanes,
    scenarios: Iterable[tuple[Scenario, str | None]],
    *,
    on_step: OnStep | None = None,
    on_result: Callable[[ScenarioResult], None] | None = None,
    on_begin: Callable[[Scenario], None] | None = None,
) -> list[ScenarioResult]:
    """Run every scenario through a driver of its protocol (skipped if none was built).

    ``drivers`` maps a protocol to one driver or to several *lanes* — drivers of the same
    protocol, each with its own connection, that run scenarios side by side (memory lanes share
    one target: every scenario writes only its own run-unique scopes; ledger lanes are separate
    instances, since a ledger has one account scope).  Each lane runs one scenario at a time,
    taking the next one of its protocol when it is free, so at most ``len(lanes)`` scenarios of
    a protocol are in flight.  Every scenario's scopes are named after its place in the corpus,
    never after the lane, so results, divergences and replays are the same for any number of
    lanes; results come back in corpus order.  A lane may live in a worker process
    (:class:`conformance.workers.RemoteLane`): it runs the same :func:`run_scenario` there.
    ``on_begin``, ``on_step`` and ``on_result`` are called from the lanes' threads (for a
    remote lane, from the thread receiving its steps; the outcome then carries no exchange),
    one call at a time.
    """
    items = list(scenarios)
    lanes = {p: [d] if not isinstance(d, Sequence) else list(d) for p, d in drivers.items()}
    run = _CorpusRun(items, {p: deque() for p in lanes}, on_step, on_result, on_begin)
    for i, (scenario, path) in enumerate(items):
        if lanes.get(scenario.protocol):
            run.queues[scenario.protocol].append(i)
        else:
            run.finish(
                i,
                ScenarioResult(
                    scenario, "skip", reason=f"no {scenario.protocol} target in this run", path=path
                ),
            )
    queues = run.queues
    work = [(p, d) for p, ds in lanes.items() for d in ds[: max(1, len(queues[p]))] if queues[p]]
    if len(work) <= 1:
        for protocol, driver in work:
            run.lane(protocol, driver)
    else:
        threads = [
            threading.Thread(target=run.lane, args=w, name=f"memspec-lane-{w[0]}", daemon=True)
            for w in work
        ]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():  # a bounded wait, so that Ctrl-C is seen at once
                t.join(0.2)
    return [r for r in run.results if r is not None]


class _CorpusRun:
    """The scenarios of one :func:`run_scenarios`, the queue of each protocol, the results in
    corpus order and the callbacks, called one at a time."""

    def __init__(
        self,
        items: list[tuple[Scenario, str | None]],
        queues: dict[str, deque[int]],
        on_step: OnStep | None,
        on_result: Callable[[ScenarioResult], None] | None,
        on_begin: Callable[[Scenario], None] | None,
    ) -> None:
        self.items, self.queues = items, queues
        self.results: list[ScenarioResult | None] = [None] * len(items)
        self.on_step, self.on_result, self.on_begin = on_step, on_result, on_begin
        self.lock = threading.Lock()

    def finish(self, i: int, result: ScenarioResult) -> None:
        with self.lock:
            self.results[i] = result
            if self.on_result is not None:
                self.on_result(result)

    def step_hook(self, result: ScenarioResult, outcome: StepOutcome) -> None:
        if self.on_step is not None:
            with self.lock:
                self.on_step(result, outcome)

    def lane(self, protocol: str, driver: Driver) -> None:
        """Run the protocol's next scenario on ``driver`` while its queue holds one."""
        queue = self.queues[protocol]
        while True:
            with self.lock:
                if not queue:
                    return
                i = queue.popleft()
                if self.on_begin is not None:
                    self.on_begin(self.items[i][0])
            scenario, path = self.items[i]
            hook, tag = self.step_hook, f"c{i}"
            if getattr(driver, "remote", False) is True:  # a lane in a worker process
                remote: Any = driver
                result = remote.run_scenario(scenario, path=path, on_step=hook, tag=tag)
            else:
                result = run_scenario(driver, scenario, path=path, on_step=hook, tag=tag)
            self.finish(i, result)


def load_corpus(
    protocols: Sequence[str], corpus_dir: Path = CORPUS_DIR
) -> list[tuple[Scenario, str]]:
    """Every corpus scenario of the given protocols, in file-name order.

    Raises :class:`ScenarioError` for a file that does not load — a broken corpus is a usage
    error, not a pass.
    """
    out: list[tuple[Scenario, str]] = []
    for protocol in protocols:
        folder = corpus_dir / protocol
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            scenario = load_scenario(path)
            if scenario.protocol != protocol:
                raise ScenarioError(
                    f"{path}: protocol {scenario.protocol!r} in the {protocol}/ folder"
                )
            out.append((scenario, _display(path)))
    return out


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        try:
            return "conformance/corpus/" + path.resolve().relative_to(CORPUS_DIR).as_posix()
        except ValueError:
            return str(path)
