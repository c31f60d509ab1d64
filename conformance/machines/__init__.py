"""Differential state machines: Hypothesis drives model and target in lockstep.

A protocol's machine subclasses :class:`DifferentialMachine` and, in its rules, builds
:class:`~conformance.scenario.Step` objects and hands them to :meth:`DifferentialMachine.run_step`.
The step goes through the protocol's driver (model, target, oracle) exactly as a scenario step
would, and is recorded.  On a divergence the step raises, Hypothesis shrinks the run — every
shrink attempt is a fresh run against the target in fresh scopes — and the steps of the
minimal failing run become a replay :class:`~conformance.scenario.Scenario` that
``memspec replay`` (and the corpus) can run again.

**Every distinct divergence, not the first.**  A divergence is known by its *signature*: the
leading clause the oracle named (the clauses a rule attached to the step itself left out, so
the same wrong answer seen after a write and after a forget is one divergence).  Once a divergence
is found and shrunk, exploration goes on in fresh batches with its signature *set aside*: meeting
it again ends that one run quietly (a read that changes nothing lets the run go on) instead of
failing it, so the next, different divergence can be found and shrunk in its turn — up to
:data:`MAX_FINDINGS`.  A divergence an ``--expect`` entry names is set aside from the start:
it is recorded once, as met (not shrunk), and never stops exploration.

Rules stop a run with a ``precondition`` (:func:`live`), never with ``assume(False)``; the
only rejections left are in ``__init__`` (a harness bug, or the shrink budget spent), where no
precondition can act.

Per-run state (the recorded steps, whether the run was stopped) lives in the machine instance,
per-exploration state (findings, signatures set aside, counters) in :class:`MachineSession`.

:func:`run_machine` runs one protocol's machine under a profile and a seed and returns a
:class:`MachineResult`.  ``MACHINES`` maps a protocol to ``"module:Class"``.
"""

from __future__ import annotations

import dataclasses
import importlib
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import HealthCheck, Phase, Verbosity, assume, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from conformance.drivers.base import Driver, ResultVerdict, StepOutcome
from conformance.machines.profiles import Profile
from conformance.scenario import Scenario, Step

MACHINES: dict[str, str] = {
    "memory": "conformance.machines.memory:MemoryMachine",
    "ledger": "conformance.machines.ledger:LedgerMachine",
}

#: At most this many distinct divergences are found and shrunk in one exploration.
MAX_FINDINGS = 8

Signature = str


class Divergence(AssertionError):
    """Raised by a rule when the target's answer is not one the model allows."""


def signature(step: Step, outcome: StepOutcome) -> Signature:
    """What tells one divergence from another: the first clause the oracle named for it.

    The clauses the machine attached to the step itself (a follow-up read carries the clauses
    of the step it checks) are left out, so one wrong answer is one divergence wherever it
    shows; and only the leading clause counts, so one mistake seen from two sides (a reversed
    ranking breaking a keyword-match order here and a recency tie there, both MEM-SCORE.1
    first) is one divergence, not two."""
    own = set(step.clauses)
    named = [c for c in outcome.clauses if c not in own] or list(outcome.clauses)
    return named[0] if named else f"{outcome.op}: {outcome.reason[:60]}"


def noted(step: Step, outcome: StepOutcome) -> StepOutcome:
    """``outcome`` with the step's note (a check read says which step it checks) in front of
    its reason."""
    if not step.note or outcome.verdict == "pass" or outcome.reason.startswith(step.note):
        return outcome
    return dataclasses.replace(outcome, reason=f"{step.note}: {outcome.reason}")


@dataclass
class Finding:
    """One distinct divergence: the failing step and the (shrunk) steps that reach it."""

    signature: Signature
    failure: StepOutcome
    steps: list[Step]
    expected: bool = False  # an --expect entry names it: recorded as met, not shrunk
    replay: Scenario | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def clauses(self) -> tuple[str, ...]:
        return tuple(self.failure.clauses)

    @property
    def reason(self) -> str:
        return f"step {self.failure.index} ({self.failure.op}): {self.failure.reason}"


@dataclass
class MachineSession:
    """What all examples of one machine exploration share: the driver, counters, findings."""

    driver: Driver
    protocol: str
    shrink_budget_s: float = 30.0
    on_step: Callable[[StepOutcome], None] | None = None
    #: whether an ``--expect`` entry names a divergence with these clauses
    is_expected: Callable[[tuple[str, ...]], bool] = lambda _clauses: False
    started: float = field(default_factory=time.monotonic)
    examples: int = 0  # every run, shrink attempts included
    explored: int = 0  # runs of exploration (the profile's max_examples bounds these)
    steps: int = 0
    # the divergence the current batch is shrinking
    hunting: Signature | None = None
    failure_steps: list[Step] | None = None
    failure: StepOutcome | None = None
    first_failure_at: float | None = None
    hunt_started: float = 0.0
    shrink_cut: bool = False
    # across the whole exploration
    findings: list[Finding] = field(default_factory=list)
    set_aside: dict[Signature, int] = field(default_factory=dict)  # met again after found
    first_divergence: dict[str, Any] | None = None
    harness_error: BaseException | None = None
    indeterminate: StepOutcome | None = None
    skipped: dict[str, int] = field(default_factory=dict)

    def met(self) -> None:
        """Note when the first divergence of the exploration was met (before any shrinking)."""
        if self.first_divergence is None:
            self.first_divergence = {
                "elapsed_s": round(time.monotonic() - self.started, 3),
                "examples": self.examples,
                "steps": self.steps,
            }


def live(machine: DifferentialMachine) -> bool:
    """Precondition of every rule: this run has not been stopped."""
    return machine.stopped is None


class DifferentialMachine(RuleBasedStateMachine):
    """Base of every protocol machine.  Subclasses set ``protocol`` and write rules, each
    under ``@precondition(live)``."""

    protocol: ClassVar[str] = ""
    #: Target capabilities the machine cannot run without; lacking one, it is skipped.
    requires: ClassVar[frozenset[str]] = frozenset()
    #: Ops that change nothing on the target: after a set-aside divergence on one of them the
    #: model still describes the target, so the run goes on.
    READ_ONLY_OPS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, session: MachineSession) -> None:
        super().__init__()
        self.session = session
        self.driver = session.driver
        if session.harness_error is not None:
            assume(False)  # a bug in the harness itself: report it, do not shrink it
        if session.first_failure_at is not None and (
            time.monotonic() - session.first_failure_at > session.shrink_budget_s
        ):
            # Shrinking has had its time: every further candidate is rejected unseen, so
            # Hypothesis stops; the smallest failing run found so far is the replay.
            session.shrink_cut = True
            assume(False)
        session.examples += 1
        if session.hunting is None:
            session.explored += 1  # a run of exploration, not a shrink attempt
        self.example_no = session.examples
        self.recorded: list[Step] = []
        #: the outcome that stopped this run (nothing more is sent), or None
        self.stopped: StepOutcome | None = None
        self.driver.begin(f"{self.protocol}-machine example {self.example_no}")

    @precondition(lambda self: self.stopped is not None)
    @rule()
    def stopped_run(self) -> None:
        """The only rule left once a run is stopped: it sends nothing."""

    def _stop(self, outcome: StepOutcome) -> StepOutcome:
        self.stopped = outcome
        return outcome

    def run_step(self, step: Step) -> StepOutcome:
        """Run ``step`` through the driver and record it.

        A new divergence raises (Hypothesis shrinks it); one already found, or one an
        ``--expect`` entry names, is set aside: the run stops quietly (or goes on, after a
        read that changes nothing).  Rules use the outcome only when it passed."""
        session = self.session
        if self.stopped is not None:
            return self.stopped
        if session.indeterminate is not None and session.hunting is None:
            return self._stop(session.indeterminate)  # the target stopped answering
        try:
            outcome = self.driver.execute(len(self.recorded), step)
        except Exception as exc:
            session.harness_error = exc
            raise
        self.recorded.append(step)
        outcome = noted(step, outcome)
        session.steps += 1
        if session.on_step is not None:
            session.on_step(outcome)
        if outcome.verdict == "diverge":
            session.met()
            sig = signature(step, outcome)
            if sig in session.set_aside:
                session.set_aside[sig] += 1
                return self._set_aside(step, outcome)
            if session.hunting is not None and sig != session.hunting:
                # Another divergence met while shrinking this one: not this hunt's (a later
                # batch finds it); a shrink must not slip from one divergence to another.
                return self._stop(outcome)
            if session.is_expected(tuple(outcome.clauses)):
                session.findings.append(Finding(sig, outcome, list(self.recorded), expected=True))
                session.set_aside[sig] = 0
                return self._set_aside(step, outcome)
            if session.hunting is None:
                session.hunting = sig
                session.hunt_started = time.monotonic()
            if session.first_failure_at is None:
                session.first_failure_at = time.monotonic()
            # Hypothesis replays the minimal failing run last, so the last one recorded is it.
            session.failure_steps = list(self.recorded)
            session.failure = outcome
            raise Divergence(f"step {outcome.index} ({outcome.op}): {outcome.reason}")
        if outcome.verdict == "indeterminate":
            if session.hunting is None:
                session.indeterminate = outcome
            return self._stop(outcome)
        if outcome.verdict == "skip":
            session.skipped[outcome.reason] = session.skipped.get(outcome.reason, 0) + 1
            self.recorded.pop()
            return self._stop(outcome)
        return outcome

    def _set_aside(self, step: Step, outcome: StepOutcome) -> StepOutcome:
        if step.op in self.READ_ONLY_OPS:
            # Nothing changed on the target: the run goes on as if the read had not been
            # made (rules use no answer that did not pass), so a replay of this run never
            # stops at a divergence already reported.
            self.recorded.pop()
            return outcome
        return self._stop(outcome)


@dataclass
class MachineResult:
    protocol: str
    profile: str
    seed: int
    verdict: ResultVerdict
    examples: int
    steps: int
    elapsed_s: float
    reason: str = ""
    failure: StepOutcome | None = None  # the first finding's (kept for single-result readers)
    replay: Scenario | None = None
    clauses: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    #: every distinct divergence, in the order found (``failure``/``replay`` are the first's)
    findings: list[Finding] = field(default_factory=list)


def finding_key(protocol: str, n: int) -> str:
    """The report key of a machine's ``n``-th finding (0-based): the first keeps the name the
    report always used, later ones are numbered."""
    return f"{protocol}-machine" if n == 0 else f"{protocol}-machine-{n + 1}"


def machine_class(protocol: str) -> type[DifferentialMachine]:
    module_name, _, attr = MACHINES[protocol].partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, attr)
    assert issubclass(cls, DifferentialMachine)
    return cls  # type: ignore[no-any-return]


BATCH = 10


def batch_seed(seed: int, batch_no: int) -> int:
    """The seed of one batch of examples (batch 0 uses the run's seed itself)."""
    return seed if batch_no == 0 else (seed * 1_000_003 + batch_no) % 2**32


def _run_batch(
    factory: Callable[[], DifferentialMachine], seed: int, size: int, base: settings
) -> BaseException | None:
    """One Hypothesis run of ``size`` examples; the exception it ended with, if any."""

    def make() -> DifferentialMachine:
        return factory()

    try:
        run_state_machine_as_test(  # Hypothesis accepts a factory as well as the class
            hypothesis_seed(seed)(make),  # type: ignore[arg-type]
            settings=settings(base, max_examples=size),
        )
    except Divergence:
        return None  # recorded in the session
    except (Flaky, HypothesisException, Exception) as exc:  # flaky target, rule or driver bug
        return exc
    return None


def minimize(
    driver: Driver,
    protocol: str,
    steps: list[Step],
    failure: StepOutcome,
    max_replays: int = 80,
    wanted: Signature | None = None,
) -> tuple[list[Step], StepOutcome, int]:
    """Delete steps from a failing run while it still fails the same way.

    Hypothesis's shrinker works within a budget (of calls, and here of time) and can leave
    steps that do nothing for the failure (a retrieve of an empty query between two writes).
    Runs of steps are deleted first — halves, quarters, … single steps — each candidate
    replayed as a scenario in fresh scopes; a step whose removal leaves a later ``$name``
    unbound makes the candidate fail to run, so it is kept.  "The same way": with the same
    signature when ``wanted`` is given (see :func:`signature`), else on one of the same
    clauses.  Returns the steps, the failing outcome of the last replay that failed, and how
    many steps were removed.
    """
    from conformance.runner import run_scenario  # local: the runner imports nothing from here

    clauses = set(failure.clauses)
    current = list(steps)
    best = failure
    replays = 0

    def fails_the_same(candidate: list[Step]) -> StepOutcome | None:
        nonlocal replays
        replays += 1
        scenario = Scenario(
            protocol=protocol,  # type: ignore[arg-type]
            name="minimize",
            clauses=list(clauses) or ["MEM-SEAM.2"],
            steps=candidate,
        )
        result = run_scenario(driver, scenario)
        step = result.failing_step
        if result.verdict != "fail" or step is None:
            return None
        if wanted is not None:
            return step if signature(candidate[step.index], step) == wanted else None
        return step if clauses & set(step.clauses) else None

    chunk = max(1, (len(current) - 1) // 2)
    while replays < max_replays:
        removed = False
        end = len(current) - 1  # the last step is where it fails: never deleted
        while end > 0 and replays < max_replays:
            start = max(0, end - chunk)
            candidate = current[:start] + current[end:]
            step = fails_the_same(candidate)
            if step is not None:
                current = candidate[: step.index + 1]
                best = step
                removed = True
                end = min(start, len(current) - 1)
            else:
                end = start
        if chunk == 1 and not removed:
            break
        chunk = max(1, chunk // 2)
    return current, best, len(steps) - len(current)


def pick_seed(profile: Profile, seed: int | None) -> int:
    if seed is not None:
        return seed
    if profile.fixed_seed is not None:
        return profile.fixed_seed
    return random.SystemRandom().randrange(2**32)


def _replay_scenario(
    protocol: str, profile: Profile, seed: int, n: int, steps: list[Step], outcome: StepOutcome
) -> Scenario:
    suffix = "" if n == 0 else f"-divergence-{n + 1}"
    return Scenario(
        protocol=protocol,  # type: ignore[arg-type]
        name=f"{protocol}-machine-seed-{seed}{suffix}",
        description=(
            f"Shrunk counterexample found by the {protocol} state machine"
            f" (profile {profile.name}, seed {seed}, divergence {n + 1}): {outcome.reason}"
        ),
        clauses=list(outcome.clauses) or ["MEM-SEAM.2" if protocol == "memory" else "LED-WIRE.1"],
        steps=steps,
        origin=f"shrunk from the {protocol} machine, profile {profile.name}, seed {seed}",
    )


def _close_hunt(
    session: MachineSession, driver: Driver, protocol: str, profile: Profile, seed: int, error: Any
) -> Finding:
    """The divergence the last batch shrank, minimized further and set aside from now on."""
    assert session.failure is not None and session.failure_steps is not None
    sig = session.hunting or signature(session.failure_steps[-1], session.failure)
    steps, outcome, removed = minimize(
        driver, protocol, session.failure_steps, session.failure, wanted=sig
    )
    if 0 <= outcome.index < len(steps):
        outcome = noted(steps[outcome.index], outcome)
    finding = Finding(sig, outcome, steps)
    finding.details["steps_removed_after_shrinking"] = removed
    finding.details["shrink_s"] = round(time.monotonic() - session.hunt_started, 3)
    finding.details["found_after"] = {"examples": session.explored, "steps": session.steps}
    if session.shrink_cut:
        finding.details["shrink_cut"] = True
        finding.details["note"] = (
            f"shrinking stopped after {profile.shrink_budget_s:g}s: the replay is the smallest"
            " failing run found by then"
        )
    elif isinstance(error, Flaky):
        finding.details["flaky"] = True
        finding.details["note"] = "the failure did not reproduce on every replay"
    session.findings.append(finding)
    session.set_aside[sig] = 0
    session.hunting = None
    session.failure = None
    session.failure_steps = None
    session.first_failure_at = None
    session.shrink_cut = False
    return finding


@dataclass
class _BatchRun:
    """What one batch found, before it is merged (in batch order) into the exploration."""

    batch_no: int
    session: MachineSession
    error: BaseException | None = None


def _explore_batch(
    batch_no: int,
    driver: Driver,
    main: MachineSession,
    cls: type[DifferentialMachine],
    seed: int,
    size: int,
    run_settings: settings,
    profile: Profile,
) -> _BatchRun:
    """One batch in a session of its own, setting aside what ``main`` has found so far; a new
    divergence it meets is shrunk and minimized on its own ``driver``."""
    session = MachineSession(
        driver,
        main.protocol,
        main.shrink_budget_s,
        main.on_step,
        is_expected=main.is_expected,
        set_aside=dict.fromkeys(main.set_aside, 0),
    )
    error = _run_batch(lambda: cls(session), batch_seed(seed, batch_no), size, run_settings)
    if session.failure is not None:
        _close_hunt(session, driver, main.protocol, profile, seed, error)
        if isinstance(error, Flaky):
            error = None
    return _BatchRun(batch_no, session, error)


def _merge_batch(main: MachineSession, run: _BatchRun) -> None:
    """Fold one batch into the exploration, in batch order: counters add up, a divergence
    already found (by an earlier batch) counts as met again, a new one becomes a finding."""
    s = run.session
    if s.first_divergence is not None and main.first_divergence is None:
        main.first_divergence = {
            "elapsed_s": round(time.monotonic() - main.started, 3),
            "examples": main.examples + s.first_divergence["examples"],
            "steps": main.steps + s.first_divergence["steps"],
        }
    for finding in s.findings:
        if finding.signature in main.set_aside:
            main.set_aside[finding.signature] += 1
            continue
        finding.details["found_after"] = {
            "examples": main.explored + finding.details.get("found_after", {}).get("examples", 0),
            "steps": main.steps + finding.details.get("found_after", {}).get("steps", 0),
        }
        main.findings.append(finding)
        main.set_aside[finding.signature] = 0
    for sig, n in s.set_aside.items():
        if sig in main.set_aside:
            main.set_aside[sig] += n
    main.examples += s.examples
    main.explored += s.explored
    main.steps += s.steps
    for reason, n in s.skipped.items():
        main.skipped[reason] = main.skipped.get(reason, 0) + n
    if main.indeterminate is None and s.indeterminate is not None:
        main.indeterminate = s.indeterminate
    if main.harness_error is None and s.harness_error is not None:
        main.harness_error = s.harness_error


def _run_round(
    batches: list[tuple[int, int]],
    drivers: list[Driver],
    main: MachineSession,
    cls: type[DifferentialMachine],
    seed: int,
    run_settings: settings,
    profile: Profile,
) -> list[_BatchRun]:
    """Explore ``batches`` (batch number, examples) side by side, one per driver, setting aside
    what ``main`` holds; the runs come back in batch order."""
    sizes = dict(batches)
    batch_nos = [b for b, _ in batches]
    if len(drivers) == 1 or len(batch_nos) == 1:
        return [
            _explore_batch(b, drivers[0], main, cls, seed, sizes[b], run_settings, profile)
            for b in batch_nos
        ]
    results: dict[int, _BatchRun] = {}
    pending = list(batch_nos)
    lock = threading.Lock()

    def lane(d: Driver) -> None:
        while True:
            with lock:
                if not pending:
                    return
                b = pending.pop(0)
            run = _explore_batch(b, d, main, cls, seed, sizes[b], run_settings, profile)
            with lock:
                results[b] = run

    threads = [threading.Thread(target=lane, args=(d,), daemon=True) for d in drivers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[b] for b in batch_nos]


def run_machine(
    protocol: str,
    driver: Driver,
    profile: Profile,
    seed: int | None = None,
    *,
    on_step: Callable[[StepOutcome], None] | None = None,
    machine: type[DifferentialMachine] | None = None,
    shard: tuple[int, int] = (1, 1),
    is_expected: Callable[[tuple[str, ...]], bool] | None = None,
    max_findings: int = MAX_FINDINGS,
    lanes: Sequence[Driver] = (),
) -> MachineResult:
    """Explore ``protocol`` against ``driver``'s target under ``profile``; shrink every
    distinct divergence (up to ``max_findings``).

    ``is_expected(clauses)``: an ``--expect`` entry names a divergence with these clauses (it
    is set aside, never shrunk).  ``shard`` (K, N): run only the batches ``b`` with
    ``b % N == K - 1`` (:mod:`conformance.shard`).  ``lanes``: more drivers of the same
    protocol (each with its own scopes or its own instance) that explore the next batches side
    by side with ``driver``; the result is the same with or without them.
    """
    cls = machine or machine_class(protocol)
    seed = pick_seed(profile, seed)
    missing = sorted(cls.requires - driver.capabilities())
    if missing:
        return MachineResult(
            protocol,
            profile.name,
            seed,
            "skip",
            0,
            0,
            0.0,
            reason=f"the target lacks {', '.join(missing)}",
        )
    session = MachineSession(driver, protocol, profile.shrink_budget_s, on_step)
    if is_expected is not None:
        session.is_expected = is_expected
    run_settings = settings(
        max_examples=BATCH,
        stateful_step_count=profile.step_count,
        deadline=None,
        database=None,
        derandomize=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    started = time.monotonic()
    error: BaseException | None = None
    drivers = [driver, *lanes]
    # Examples run in batches of at most BATCH, each batch a Hypothesis run with its own seed
    # derived from the run's seed.  A batch never looks at the clock, so a batch is exactly
    # reproducible.  The plan (batch b: its seed and min(BATCH, max_examples - b * BATCH)
    # examples) is fixed up front, so that N shards, each taking every N-th batch, run exactly
    # the batches of one run.  A batch that meets a new divergence ends there and shrinks it;
    # later batches set it aside, and batches past the plan make up the runs it left.  The time
    # budget (quick/deep only) is checked between
    # windows of batches.
    plan = [
        (b, min(BATCH, profile.max_examples - b * BATCH))
        for b in range(-(-profile.max_examples // BATCH))
        if b % shard[1] == shard[0] - 1
    ]
    owed = sum(n for _, n in plan)  # runs of exploration this shard owes
    i = 0
    while i < len(plan) or (plan and session.explored < owed):
        if i >= len(plan):
            # Batches that ended at a divergence left runs unexplored: make them up with
            # batches past the plan, in this shard's own numbering.
            plan.append((plan[-1][0] + shard[1], min(BATCH, owed - session.explored)))
        if i and profile.fixed_seed is None and time.monotonic() - started > profile.budget_s:
            break
        # Speculation: the next batches run side by side, each setting aside what is found so
        # far.  They are taken in batch order; once one finds something new, the later ones
        # ran with too little set aside, so they are dropped and run again -- the result is
        # exactly that of one batch after the other, whatever the number of lanes.
        window = plan[i : i + len(drivers)]
        runs = _run_round(window, drivers, session, cls, seed, run_settings, profile)
        before = session.examples
        stop = False
        for run in runs:
            _merge_batch(session, run)
            i += 1
            error = error or run.error
            stop = (
                session.indeterminate is not None
                or error is not None
                or session.harness_error is not None
                or len(session.findings) >= max_findings
            )
            if stop or run.session.findings:
                break
        if stop or session.examples == before:  # stopped, or nothing could run at all
            break
    elapsed = time.monotonic() - started
    result = MachineResult(
        protocol,
        profile.name,
        seed,
        "pass",
        session.examples,
        session.steps,
        elapsed,
        details={"skipped_steps": dict(session.skipped)},
        findings=session.findings,
    )
    explored: dict[str, Any] = {
        "examples": session.examples,
        "exploring_examples": session.explored,
        "steps": session.steps,
    }
    if session.first_divergence is not None:
        first = session.first_divergence
        explored["first_divergence"] = first
        explored["after_first"] = {
            "examples": session.examples - first["examples"],
            "steps": session.steps - first["steps"],
        }
        explored["set_aside"] = dict(session.set_aside)
    result.details["explored"] = explored
    for n, finding in enumerate(session.findings):
        finding.replay = _replay_scenario(
            protocol, profile, seed, n, finding.steps, finding.failure
        )
    if session.findings:
        # The first unexpected finding speaks for the machine in single-result views.
        lead = next((f for f in session.findings if not f.expected), session.findings[0])
        result.verdict = "fail"
        result.failure = lead.failure
        result.clauses = lead.clauses
        result.replay = lead.replay
        result.reason = lead.reason + (
            f" ({lead.details['note']})" if "note" in lead.details else ""
        )
        result.details.update({k: v for k, v in lead.details.items() if k != "note"})
        if len(session.findings) > 1:
            result.reason += f" — and {len(session.findings) - 1} more distinct divergence(s)"
        stopped_by = session.harness_error or error
        if stopped_by is not None:  # what ended exploration early is not hidden by a finding
            result.details["stopped_by"] = f"{type(stopped_by).__name__}: {stopped_by}"[:300]
        if session.indeterminate is not None:
            result.details["stopped_by"] = f"indeterminate: {session.indeterminate.reason}"[:300]
        return result
    if session.indeterminate is not None:
        outcome = session.indeterminate
        result.verdict = "indeterminate"
        result.failure = outcome
        result.clauses = tuple(outcome.clauses)
        result.reason = f"step {outcome.index} ({outcome.op}): {outcome.reason}"
        return result
    error = session.harness_error or error
    if error is not None:
        import traceback

        result.details["traceback"] = traceback.format_exception(error)[-6:]
        result.verdict = "indeterminate"
        first_line = str(error).splitlines()[0] if str(error) else ""
        result.reason = f"harness error: {type(error).__name__}: {first_line}"
        return result
    if session.steps == 0:
        result.verdict = "skip"
        result.reason = (
            "no step could run against this target"
            if plan
            else f"no batch of examples falls in shard {shard[0]}/{shard[1]}"
        )
    return result
