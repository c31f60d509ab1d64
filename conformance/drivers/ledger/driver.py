"""The ledger driver: scenario steps → ``POST /ledger/...`` → the oracle's verdict.

Ops (``Step.op``) and their ``args`` (the method's params, camelCase, sent as written):

``save {body, kind?, sessionId?}``           ``memory/save_memory_record``
``list {scopeKey, status?}``                 ``memory/list_memory_records``
``delete {recordId}``                        ``memory/delete_memory_record``
``supersede {recordId, body, kind?}``        ``memory/supersede_memory_record``
``approve {recordId}`` / ``reject {recordId}`` ``memory/approve_…`` / ``memory/reject_…``
``list_as_of {scopeKey, at}``                ``memory/list_memory_records_as_of``
``get_settings {}``                          ``memory/get_consolidation_settings``
``update_settings {mode, …}``                ``memory/update_consolidation_settings``
``reset {}``, ``sweep {at}``, ``propose {body, …}``, ``consolidate {operations}``,
``packet {}``                                the ``_test/*`` controls (``ledger.test_control``)
``set_clock {now}`` | ``{advance_ms}`` | ``{advance: "5m"}``  move the run's clock forward
                                             (``ledger.clock``; units ms, s, m, h, d)
``raw {method, params}`` | ``{method, text}`` any params value (not an object, unknown names,
                                             …) or a body that is not JSON, to any method

Values a ledger must know: when the target profile's ``[ledger]`` names a ``session``, every
non-blank ``sessionId`` a step sends (and ``sourceSessionId`` it expects) is that session; its
``harness`` and ``model`` replace memspec's ``claude`` and ``haiku`` (LED-WIRE.14, LED-WIRE.15).

A method that takes no params (``get_settings``, ``reset``, ``packet``) is called without any
when its ``args`` are empty (an empty body; no ``params`` member over JSON-RPC), never with
``{}``, which a real ledger refuses (LED-WIRE.12); a ``raw`` step sends ``{}`` on purpose.

Values are expanded before sending: a ``recordId`` or a consolidation ``targets`` entry
``"$r1"`` is the record bound to ``r1`` (its model id for the model, its target id for the
target); ``{"$repeat": "x", "times": 4001}`` and ``{"$concat": [...]}`` build long strings.
``bind`` names records of an answer, resolved in the *model's* answer (whose order is
canonical) and carried to the target through the id bijection: ``{"r1": "id"}`` (a
single-record answer), or ``{"r1": {"body": "…", "status": "active"}}`` (the one record of the
answer, or of its ``records``, with those field values).  A call the model refuses binds
nothing (a later ``$r1`` is then unbound).  ``expect`` narrows a step by hand, on the target's
answer, on top of the model's verdict: ``status``, ``body`` (members that must be equal; a
``"$r1"`` there is the target's id), ``count``, ``texts`` / ``text_set`` (the records' bodies,
in order / in any order).

Open points: each call is judged against every answer ``reference.ledger.wire.allowed`` lists
(the model's own first).  When a store's answer fits several of them that leave different
ledgers (a merge result's group shows only in a later read), the driver keeps each such ledger
in step (at most :data:`~conformance.oracle.ledger.worlds.MAX_WORLDS`, judged in
:mod:`conformance.oracle.ledger.worlds`) until later answers tell them apart; ``model`` is the
first.

Isolation: the ledger has one scope, ``account:local``, so a run cannot be confined to keys of
its own.  Before anything is written the driver lists active and proposed records and refuses
a non-empty ledger (:class:`~conformance.errors.TargetError`, exit 2) unless the run was
started with ``--allow-dirty``.  With ``ledger.test_control`` every scenario starts from
``_test/reset``; without it, the driver forgets what the previous scenario left — and, at
:meth:`LedgerDriver.close`, what the last one left — (tombstones its active records, rejects
its proposals, restores the settings) and ignores records that existed before the run.

Clock: every scenario's clock starts at 2026-03-02T09:00:00.000Z (:data:`START_MS`); a mutating
step runs at the clock's instant, or 1 s after the previous mutating step when the clock was not
moved in between — so the k-th mutating step of a scenario that never sets the clock runs at
START + k s.  With ``ledger.clock`` the target's clock is pinned to that instant before every
mutating step, and every time is compared exactly.  Without it the target stamps with its own
clock, mutating steps are kept ≥ 3 ms apart in real time, and times are compared through a
monotone correspondence (see :mod:`conformance.oracle.ledger`); steps that place an instant of
their own (``set_clock``, ``sweep``) then need ``ledger.clock`` and are skipped.

Window (``--window N``, :meth:`LedgerDriver.ahead`): with ``ledger.clock`` and
``ledger.test_control``, a step may go out before the answers to earlier ones are back -- it is
prepared from the state the model predicts (its own answer passing), written behind the others
on the one connection, and judged later, in order, from the state it was prepared from
(:meth:`LedgerDriver.settle`; what is kept per step: :mod:`conformance.drivers.ledger.ahead`).
A step that needs a store id still in flight reads answers up to it first; the caller is told
of each judged step (``on_settled``) and runs again whatever followed a step judged otherwise
than predicted (``conformance.machines.batches``, ``conformance.runner``).

The op table (``OPS``), the clock's start and the pure parts of a step are in
:mod:`conformance.drivers.ledger.steps`, the isolation checks in
:mod:`conformance.drivers.ledger.setup`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from conformance.drivers.common import check_expect, expand_macro, followed_reason, is_macro
from conformance.drivers.ledger.ahead import PREDICTED, STATE, Ahead, Call, NeedAnswers, Settled
from conformance.drivers.ledger.setup import check_clean, forget_previous, model_with_settings
from conformance.drivers.ledger.steps import (
    _NOT_JSON,
    _SYMBOL,
    OPS,
    START_MS,
    TICK_MS,
    Op,
    _bodies,
    _parse_body,
    _unpinned,
    clock_target,
    infer_requires,
    step_requires,
    takes_no_params,
    with_known_values,
)
from conformance.errors import TargetError
from conformance.jsonutil import short_json
from conformance.oracle import ledger as oracle
from conformance.oracle.ledger.worlds import (
    allowed_in_worlds,
    closest,
    kept_worlds,
    least_departed,
    passing,
)
from conformance.scenario import Scenario, Step
from conformance.sources import blamed
from conformance.targets.jsonrpc import ledger_target
from conformance.targets.ledger import CLOCK, NO_PARAMS, TEST_CONTROL, LedgerClient
from conformance.vocabulary import SPACING_S, Exchange, RunContext, StepError, StepOutcome
from reference.ledger.outcome import Ok, Outcome
from reference.ledger.records import SCOPE_LOCAL, LedgerState, empty_state
from reference.ledger.timefmt import format_rfc3339, parse_rfc3339
from reference.ledger.wire import (
    allowed,
    answer_instant,
    handle,
    same_instant,
)

__all__ = ["LedgerDriver"]

#: :meth:`LedgerDriver._before_mutation`: the clock pin is to go out with the mutation.
_DEFERRED = "deferred"


class LedgerDriver:  # long: the model, its correspondences, its clock and the window in flight
    """Drives one ledger binding in lockstep with ``reference.ledger.wire.handle``."""

    protocol = "ledger"

    def __init__(self, ctx: RunContext, *, target: LedgerClient | None = None) -> None:
        self.ctx = ctx
        self.target = target if target is not None else ledger_target(ctx.target)
        # Values the ledger knows (the target profile's ``[ledger]``), sent instead of memspec's.
        self._known: dict[str, str] = dict(self.target.config.ledger_values)
        try:
            self._caps = self.target.probe()
            self.clock = CLOCK in self._caps
            self.control = TEST_CONTROL in self._caps
            self._foreign, self._baseline = check_clean(
                self.target, control=self.control, allow_dirty=self.ctx.allow_dirty
            )
        except TargetError:
            self.target.close()
            raise
        self._wrote = False
        self._clock_pinned = False
        self._closed = False
        self.model: LedgerState = empty_state()
        self.octx = self._fresh_context()
        # Other (ledger, correspondences) pairs the answers so far allow besides the first.
        self._others: list[tuple[LedgerState, oracle.Context]] = []
        self.symbols: dict[str, str] = {}
        self.now = START_MS
        self.last_mutation: int | None = None
        self._target_clock: int | None = None
        self._last_real = 0.0
        self._setup_error: str | None = None
        # Pipelined exploration (``--window``, :meth:`ahead`): calls in flight, oldest first,
        # and the correspondences and other worlds as of the last one judged.
        self.window = 1
        self.on_settled: Settled | None = None
        self._window: list[Ahead] = []
        self._epoch = 0
        self._judged: tuple[oracle.Context, list[tuple[LedgerState, oracle.Context]]] = (
            self.octx,
            [],
        )

    # -- Driver protocol ------------------------------------------------------------------

    def capabilities(self) -> frozenset[str]:
        return self._caps

    def requirements(self, scenario: Scenario) -> set[str]:
        return infer_requires(scenario)

    def scopes_written(self) -> list[str]:
        return [SCOPE_LOCAL] if self._wrote else []

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.abandon()
            if self._clock_pinned:
                self.target.test("set_clock", {"now": None})
            if not self.control and self._wrote:
                # A ledger the run cannot reset keeps nothing active of the run's: its pins are
                # tombstoned and the settings put back (tombstones stay in history: nothing
                # deletes a row).
                forget_previous(self.target, self._foreign, self._baseline)
        finally:
            self.target.close()

    def begin(self, scenario_name: str, tag: str | None = None) -> None:
        """``tag`` is unused: the ledger has one account scope per target.  A fresh ledger (reset,
        or the previous scenario's records forgotten), a fresh model
        at :data:`START_MS`, empty symbol table and correspondences."""
        self._setup_error = None
        if self.control:
            ex = self.target.test("reset", NO_PARAMS)
            if ex.status != 200 or ex.body != {"ok": True}:
                self._setup_error = (
                    f"_test/reset answered {ex.status} {short_json(ex.body or ex.transport_error)}"
                )
        elif self._wrote:
            self._setup_error = forget_previous(self.target, self._foreign, self._baseline)
        self.model = empty_state()
        if not self.control:
            # The model starts from the settings the target has now (a harness or model name a
            # scenario set cannot be unset through the binding, so it may outlive the scenario).
            ex = self.target.call("memory/get_consolidation_settings", NO_PARAMS)
            if ex.status == 200 and isinstance(ex.body, dict):
                self.model = model_with_settings(ex.body)
            elif self._setup_error is None:
                self._setup_error = f"reading the consolidation settings answered {ex.status}"
        self._start_over()
        if self.clock and self._setup_error is None:
            self._setup_error = self._pin_clock(self.now)

    def execute(self, index: int, step: Step) -> StepOutcome:
        op = OPS.get(step.op)
        base = tuple(step.clauses) or (
            oracle.method_clauses(op.method) if op and op.method else ("LED-WIRE.1",)
        )
        if op is None:
            return StepOutcome(
                index=index,
                op=step.op,
                verdict="indeterminate",
                clauses=base,
                reason=f"unknown ledger op {step.op!r} (ops: {', '.join(OPS)})",
            )
        if self._setup_error is not None:
            return StepOutcome(
                index=index,
                op=step.op,
                verdict="indeterminate",
                clauses=base,
                reason=f"the ledger could not be prepared for this scenario: {self._setup_error}",
            )
        missing = sorted(step_requires(step) - self._caps)
        if missing:
            return StepOutcome(
                index=index,
                op=step.op,
                verdict="skip",
                clauses=base,
                reason=f"needs {', '.join(missing)}",
            )
        try:
            if step.op == "set_clock":
                return self._set_clock(index, step, base)
            return self._call(index, step, op, base)
        except StepError as exc:
            return StepOutcome(
                index=index, op=step.op, verdict="indeterminate", clauses=base, reason=str(exc)
            )

    # -- preparation ----------------------------------------------------------------------

    def _fresh_context(self) -> oracle.Context:
        # Without a pinned clock, an instant before every event of the scenario reads, on the
        # target, like the harness's wall clock now (after whatever an earlier scenario left).
        anchor = time.time_ns() // 1_000_000
        return oracle.Context(
            oracle.Ids(), oracle.Times(exact=self.clock, anchor=anchor), self._foreign
        )

    def _start_over(self) -> None:
        """A scenario's fresh start after its reset: no correspondences, no other worlds, no
        symbols, the model's clock at START_MS, no mutation yet, the target's clock unknown."""
        self.octx = self._fresh_context()
        self._others = []
        self.symbols = {}
        self.now = START_MS
        self.last_mutation = None
        self._target_clock = None

    def _pin_clock(self, at: int) -> str | None:
        return self._pinned(at, self.target.test("set_clock", {"now": format_rfc3339(at)}))

    def _pinned(self, at: int, ex: Exchange) -> str | None:
        """Check the answer to ``_test/set_clock`` pinning the clock at ``at``."""
        text = format_rfc3339(at)
        self._clock_pinned = True
        seen = answer_instant(ex.body.get("now")) if isinstance(ex.body, dict) else None
        if ex.status != 200 or seen is None or not same_instant(at, seen):
            answer = short_json(ex.body or ex.transport_error)
            return f"_test/set_clock {text} answered {ex.status} {answer}"
        self._target_clock = at
        return None

    # -- expansion ------------------------------------------------------------------------

    def _expand(self, value: Any, side: str, key: str | None = None) -> Any:
        """Macros and symbols; ``side`` is ``model`` or ``target`` (which id a symbol becomes)."""
        if isinstance(value, str):
            if (
                key in ("recordId", "targets")
                and value.startswith("$")
                and _SYMBOL.fullmatch(value)
            ):
                return self._symbol(value[1:], side)
            if key in ("recordId", "targets") and side == "model":
                self._check_literal_id(value)
            return value
        if isinstance(value, list):
            return [self._expand(v, side, key if key == "targets" else None) for v in value]
        if isinstance(value, dict):
            if is_macro(value):
                return expand_macro(value, lambda part: self._expand(part, side))
            return {k: self._expand(v, side, k) for k, v in value.items()}
        return value

    def _expand_expect(self, value: Any) -> Any:
        """An expectation is about the target's answer: every ``$name`` is its target id."""
        if isinstance(value, str) and value.startswith("$") and _SYMBOL.fullmatch(value):
            return self._symbol(value[1:], "target")
        if isinstance(value, list):
            return [self._expand_expect(v) for v in value]
        if isinstance(value, dict):
            if is_macro(value):
                return self._expand(value, "target")
            return {k: self._expand_expect(v) for k, v in value.items()}
        return value

    def _symbol(self, name: str, side: str) -> str:
        mid = self.symbols.get(name)
        if mid is None:
            raise StepError(f"symbol ${name} is not bound by an earlier step")
        if side == "model":
            return mid
        tid = self.octx.ids.m2t.get(mid)
        if tid is None and self._window:
            raise NeedAnswers(name)
        if tid is None:
            raise StepError(f"symbol ${name} names a record the target has not shown yet")
        return tid

    def _check_literal_id(self, value: str) -> None:
        if self._window:
            raise NeedAnswers(value)  # checked against every id the store has shown
        if value in self.octx.ids.m2t or value in self.octx.ids.t2m:
            raise StepError(
                f"record id {value!r} is written literally: ids are the store's own, bind it"
                " from an answer and write $name"
            )

    def _to_target_time(self, params: Any, method: str) -> Any:
        """Without a pinned clock, the ``at`` of a history read is moved onto the target's
        time line (an instant that reads the same there)."""
        if (
            self.clock
            or method != "memory/list_memory_records_as_of"
            or not isinstance(params, dict)
        ):
            return params
        at = params.get("at")
        ms = parse_rfc3339(at) if isinstance(at, str) else None
        if ms is None:
            return params
        return {**params, "at": format_rfc3339(self.octx.times.to_target(ms))}

    # -- steps ----------------------------------------------------------------------------

    def _set_clock(self, index: int, step: Step, base: tuple[str, ...]) -> StepOutcome:
        new = clock_target(step.args, self.now)
        self.now = new
        ex = self.target.test("set_clock", {"now": format_rfc3339(new)})
        return self._judge_clock(index, step, base, new, ex)

    def _judge_clock(
        self, index: int, step: Step, base: tuple[str, ...], new: int, ex: Exchange
    ) -> StepOutcome:
        text = format_rfc3339(new)
        _state, outcome = handle(self.model, "_test/set_clock", {"now": text}, new)
        self._clock_pinned = True
        j = oracle.judge(
            "_test/set_clock",
            outcome,
            ex.status,
            ex.body,
            self.octx,
            transport_error=ex.transport_error,
            body_error=ex.body_error,
        )
        if j.verdict == "pass":
            self._target_clock = new
        return self._outcome(index, step, base, j, ex)

    def _call(self, index: int, step: Step, op: Op, base: tuple[str, ...]) -> StepOutcome:
        call = self._prepare(index, step, op, base)
        if isinstance(call, StepOutcome):
            return call
        # The target's.
        pinned: Exchange | None = None
        if call.raw_text is not None:
            ex = self.target.post_bytes(call.method, call.raw_text.encode("utf-8"))
        elif call.pin is not None:
            pinned, ex = self.target.test_then_call(
                "set_clock", {"now": format_rfc3339(call.pin)}, call.method, call.params_t
            )
        else:
            ex = self.target.call(call.method, call.params_t)
        self._sent(call)
        return self._judge(call, ex, pinned)

    def _prepare(self, index: int, step: Step, op: Op, base: tuple[str, ...]) -> Call | StepOutcome:
        """Everything about a call that is known before it is sent: the params on both sides,
        the expectation, the clock pin to send with it (an outcome: the call cannot go)."""
        args = with_known_values(dict(step.args), self._known)
        raw_text: str | None = None
        if step.op == "raw":
            method = args.get("method")
            if (
                not isinstance(method, str)
                or not method
                or not (set(args) <= {"method", "params", "text"})
                or (("params" in args) == ("text" in args))
            ):
                raise StepError("raw takes {method, params} or {method, text}")
            if "text" in args:
                if not isinstance(args["text"], str):
                    raise StepError("raw: text is a string (the body, byte for byte)")
                raw_text = args["text"]
            params_m: Any = self._expand(args.get("params"), "model")
            params_t: Any = self._expand(args.get("params"), "target")
        elif not args and takes_no_params(op.method):
            # Absent params, as a method without params is called (LED-WIRE.12): an empty
            # body, no ``params`` member over JSON-RPC.  ``{}`` goes out only from a raw step.
            method = op.method
            params_m, params_t = None, NO_PARAMS
        else:
            method = op.method
            params_m = self._expand(args, "model")
            params_t = self._expand(args, "target")
        params_t = self._to_target_time(params_t, method)
        expect = (
            self._expand_expect(with_known_values(step.expect, self._known))
            if step.expect
            else None
        )
        pin: int | None = None  # a clock pin to send along with the call (one round trip)
        if op.mutating:
            problem = self._before_mutation(defer=raw_text is None)
            pin, problem = (self.now, None) if problem == _DEFERRED else (None, problem)
            if problem is not None:
                return _unpinned(index, step.op, base, problem)
        parsed: Any = params_m
        if raw_text is not None:
            parsed = _parse_body(raw_text)
        return Call(
            index, step, op, base, method, params_m, params_t, parsed, raw_text, expect, pin
        )

    def _sent(self, call: Call) -> None:
        if call.op.mutating:
            self._wrote = True
            # Space from the answer (the store stamped before answering), not from the send: a
            # request delayed on a loaded machine must not bring two stamps within one tick.
            self._last_real = time.monotonic()

    def _judge(self, call: Call, ex: Exchange, pinned: Exchange | None) -> StepOutcome:
        index, step, base = call.index, call.step, call.base
        method = call.method
        worlds = [(self.model, self.octx), *self._others]
        options = allowed_in_worlds(
            worlds,
            method,
            call.parsed,
            self.now,
            not_json=call.parsed is _NOT_JSON,
            predicted=call.predicted,
        )
        if call.pin is not None:
            assert pinned is not None
            problem = self._pinned(call.pin, pinned)
            if problem is not None:
                return _unpinned(index, step.op, base, problem)
        passes = passing(worlds, options, method, call.params_m, ex)
        state_kept = False
        departed: frozenset[str] = frozenset()
        own: oracle.Judgement | None = None
        if passes:
            new_state, outcome, j = least_departed(passes)
            self._others = kept_worlds(passes, new_state)
            departed = new_state.departures - self.model.departures
            if departed:  # against the model's own reading, for the report
                kept = self.model.departures
                own_options = [[(st, o) for st, o in options[0] if st.departures <= kept]]
                own = closest(worlds[0], own_options, method, call.params_m, ex)[2]
        else:
            new_state, outcome, j, state_kept = closest(
                worlds[0], options, method, call.params_m, ex
            )
            if not state_kept:
                self._others = []
            # A read changes neither side: a deviation it shows leaves the states as they were
            # (a packet labelled otherwise, LED-PACKET.5), so the run may go on past it.
            state_kept = state_kept or not call.op.mutating
        self.model = new_state
        if method in ("_test/set_clock", "_test/reset"):
            self._target_clock = None  # whatever the store's clock is now, pin it again
        if j.verdict == "pass":
            j = self._passed(call, ex, outcome, j)
        if own is not None and departed and j.verdict == "pass":
            return self._departure(index, step, base, own, departed, ex)
        return self._outcome(index, step, base, j, ex, state_kept=state_kept)

    def _departure(
        self,
        index: int,
        step: Step,
        base: tuple[str, ...],
        own: oracle.Judgement,
        departed: frozenset[str],
        ex: Exchange,
    ) -> StepOutcome:
        """A deviation: the store's answer is one only a ledger departing from the reference
        clauses ``departed`` allows (``own``: how it differs from the model's own).  The model
        now holds that ledger, so the run goes on (``followed``)."""
        named = tuple(sorted(departed))
        j = replace(
            own,
            verdict="diverge",
            clauses=named,
            reason=followed_reason(own.reason, named),
        )
        out = self._outcome(index, step, base, j, ex)
        out.details["followed"] = True
        return out

    def _passed(
        self, call: Call, ex: Exchange, outcome: Outcome, j: oracle.Judgement
    ) -> oracle.Judgement:
        """After a passing answer: its correspondences kept (a fresh ledger after a reset),
        the step's ids bound and its hand-written expectation checked; the judgement as they
        leave it."""
        assert j.context is not None
        self.octx = j.context
        if call.method == "_test/reset":
            # A new ledger: ids may be minted afresh, and the store runs on its real clock.
            self.octx = self._fresh_context()
            self._others = []
            self.symbols = {}
        if call.step.bind and isinstance(outcome, Ok):
            problem = self._bind(call.step.bind, outcome)
            if problem:
                j = replace(j, verdict="indeterminate", reason=problem)
        # A hand-written expectation states the reference's reading: once the run goes on in
        # a ledger that departs from it (``_departure``), the model alone judges.
        if call.expect is not None and j.verdict == "pass" and not self.model.departures:
            problem = check_expect(call.expect, ex, _bodies(ex, self._foreign), "bodies")
            if problem:
                j = replace(j, verdict="diverge", reason=f"hand-written expectation: {problem}")
        return j

    def _before_mutation(self, defer: bool = False) -> str | None:
        """``defer``: a clock pin is left to the caller (:data:`_DEFERRED`), which sends it
        pipelined with the mutation."""
        if self.last_mutation is not None and self.now <= self.last_mutation:
            self.now = self.last_mutation + TICK_MS
        self.last_mutation = self.now
        if self.clock:
            if self._target_clock != self.now:
                return _DEFERRED if defer else self._pin_clock(self.now)
            return None
        wait = self._last_real + SPACING_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_real = time.monotonic()
        return None

    def _bind(self, bind: dict[str, Any], outcome: Outcome) -> str | None:
        pairs, problem = _bound_ids(bind, outcome)
        for name, mid in pairs:
            if mid not in self.octx.ids.m2t:
                return f"bind {name}: the target's answer did not show this record"
            self.symbols[name] = mid
        return problem

    def _outcome(
        self,
        index: int,
        step: Step,
        base: tuple[str, ...],
        j: oracle.Judgement,
        ex: Exchange,
        *,
        state_kept: bool = False,
    ) -> StepOutcome:
        """The step's outcome; ``state_kept``: a divergence where the model and the target both
        refused, so neither changed (the runner may go on past it: conformance.sources)."""
        clauses = (
            blamed(tuple(step.clauses) + j.clauses, j.clauses)
            if j.verdict == "diverge"
            else tuple(dict.fromkeys(base + j.clauses))
        )
        details: dict[str, Any] = {"model_now": format_rfc3339(self.now)}
        if j.diffs:
            details["diffs"] = [d.text() for d in j.diffs]
        if self._foreign:
            details["dirty"] = f"{len(self._foreign)} record(s) predate the run and are ignored"
        if state_kept and j.verdict == "diverge":
            details["state_kept"] = True
        return StepOutcome(
            index=index,
            op=step.op,
            verdict=j.verdict,
            clauses=clauses,
            expected=j.expected,
            exchange=ex,
            reason=j.reason,
            details=details,
        )

    # -- a window of calls in flight (pipelined exploration) -------------------------------

    def can_go_ahead(self) -> bool:
        """Calls may go out before the answers to earlier ones are judged: a window of more
        than one, a store whose clock the run pins and resets (without a pinned clock, mutating
        calls are spaced in real time), and a connection that has not refused pipelining."""
        return (
            self.window > 1
            and self.clock
            and self.control
            and self.target.pipelining
            and not self.target.gone
        )

    def ahead(self, index: int, step: Step, key: Any) -> tuple[StepOutcome, bool]:
        """Run ``step`` ahead of the answers in flight: send it and return at once, ``True``
        and a *provisional* pass -- the model's own answer, which the driver's state now
        follows -- to be judged in order later (:meth:`settle`, which tells
        :attr:`on_settled`).  A step that needs a store id still in flight reads answers up to
        it first; one that cannot go ahead (a raw body, a step the model does not let pass, a
        full window...) is run in turn after every answer in flight is judged: ``False`` and
        its real outcome."""
        op = OPS.get(step.op)
        if (
            not self.can_go_ahead()
            or op is None
            or step.op == "raw"
            or self._setup_error is not None
            or step_requires(step) - self._caps
        ):
            return self._in_turn(index, step), False
        base = tuple(step.clauses) or (
            oracle.method_clauses(op.method) if op.method else ("LED-WIRE.1",)
        )
        while True:
            self._make_room()
            snapshot = self._state()
            try:
                if step.op == "set_clock":
                    return self._clock_ahead(index, step, base, key), True
                call = self._prepare(index, step, op, base)
                break
            except NeedAnswers:
                self._settle_one()
            except StepError:
                self._load(snapshot)
                return self._in_turn(index, step), False
        if isinstance(call, StepOutcome):
            self._load(snapshot)
            return self._in_turn(index, step), False
        return self._send_ahead(index, step, base, key, call, snapshot)

    def _send_ahead(
        self,
        index: int,
        step: Step,
        base: tuple[str, ...],
        key: Any,
        call: Call,
        snapshot: dict[str, Any],
    ) -> tuple[StepOutcome, bool]:
        """Send a prepared ``call`` ahead with the model's own first answer as its prediction
        (the driver's state follows it) and return its provisional pass; when its ids cannot
        be bound or the connection takes no more, it runs in turn from ``snapshot``."""
        first = allowed(self.model, call.method, call.parsed, self.now)
        call.predicted = (self.model, self.now, first)
        new_state, outcome = first[0]
        # (a call the model refuses binds nothing, and is no problem: _judge binds only on Ok)
        pairs, problem = (
            _bound_ids(step.bind, outcome) if step.bind and isinstance(outcome, Ok) else ([], None)
        )
        requests: list[tuple[str, str, Any]] = []
        if call.pin is not None:
            requests.append(("POST", "/ledger/_test/set_clock", {"now": format_rfc3339(call.pin)}))
        requests.append(("POST", f"/ledger/{call.method}", call.params_t))
        if problem is not None or not self.target.write_ahead(requests):
            self._load(snapshot)
            return self._in_turn(index, step), False
        self._sent(call)
        before = self._state()
        self.model = new_state
        if call.pin is not None:
            self._clock_pinned = True
            self._target_clock = call.pin
        if call.method in ("_test/set_clock", "_test/reset"):
            self._target_clock = None
        if call.method == "_test/reset":
            self._new_epoch()
        self.symbols.update(pairs)
        self._push(Ahead(key, "call", step, call, len(requests), before, {}, self._epoch))
        return self._provisional(index, step, base), True

    def begin_ahead(self, scenario_name: str, key: Any) -> None:
        """:meth:`begin` with its reset and clock pin sent ahead (judged in turn, as a step)."""
        if not self.can_go_ahead():
            self.settle()
            self.begin(scenario_name)
            return
        self._make_room()
        requests: list[tuple[str, str, Any]] = [
            ("POST", "/ledger/_test/reset", NO_PARAMS),
            ("POST", "/ledger/_test/set_clock", {"now": format_rfc3339(START_MS)}),
        ]
        if not self.target.write_ahead(requests):
            self.settle()
            self.begin(scenario_name)
            return
        before = self._state()
        self._setup_error = None
        self.model = empty_state()
        self._new_epoch()
        self.now = START_MS
        self.last_mutation = None
        self._clock_pinned = True
        self._target_clock = START_MS
        self._push(Ahead(key, "begin", None, None, 2, before, {}, self._epoch))

    def settle(self) -> None:
        """Judge every answer in flight, in order."""
        while self._window:
            self._settle_one()

    def abandon(self) -> None:
        """Forget what is in flight (a mispredicted window): its answers are read off the
        connection, unjudged, so the store has carried out every request sent before the next
        goes out."""
        self._window.clear()
        while self.target.ahead:
            self.target.read_ahead()

    def _in_turn(self, index: int, step: Step) -> StepOutcome:
        self.settle()
        return self.execute(index, step)

    def _clock_ahead(self, index: int, step: Step, base: tuple[str, ...], key: Any) -> StepOutcome:
        new = clock_target(step.args, self.now)
        self._make_room()
        if not self.target.write_ahead(
            [("POST", "/ledger/_test/set_clock", {"now": format_rfc3339(new)})]
        ):
            self.settle()
            return self.execute(index, step)
        self.now = new
        before = self._state()
        self._clock_pinned = True
        self._target_clock = new
        entry = Ahead(
            key, "clock", step, None, 1, before, {}, self._epoch, new, index=index, base=base
        )
        self._push(entry)
        return self._provisional(index, step, base)

    def _provisional(self, index: int, step: Step, base: tuple[str, ...]) -> StepOutcome:
        return StepOutcome(
            index=index,
            op=step.op,
            verdict="pass",
            clauses=base,
            reason="sent ahead; judged when its answer arrives",
        )

    def _new_epoch(self) -> None:
        """A new ledger (a reset): the ids shown so far name nothing in it."""
        self._epoch += 1
        self.octx = self._fresh_context()
        self._others = []
        self.symbols = {}

    def _push(self, entry: Ahead) -> None:
        entry.predicted = self._state()
        if not self._window:
            self._judged = (entry.before["octx"], entry.before["_others"])
        self._window.append(entry)

    def _make_room(self) -> None:
        while len(self._window) >= self.window:
            self._settle_one()

    def _state(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in STATE}
        state["symbols"] = dict(self.symbols)
        state["_others"] = list(self._others)
        return state

    def _load(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, dict(value) if name == "symbols" else value)

    def _settle_one(self) -> None:
        """Judge the oldest entry in flight as the one-at-a-time run would have: from the state
        it was prepared from, with the correspondences every earlier answer left."""
        entry = self._window.pop(0)
        answers = [self.target.read_ahead() for _ in range(entry.answers)]
        ahead = self._state()
        octx, others = self._judged
        self._load({**entry.before, "octx": octx, "_others": others})
        try:
            outcome: StepOutcome | None = None
            if entry.kind == "begin":
                reset, pin = answers
                self.model = empty_state()
                self._start_over()
                if reset.status != 200 or reset.body != {"ok": True}:
                    answer = short_json(reset.body or reset.transport_error)
                    self._setup_error = f"_test/reset answered {reset.status} {answer}"
                else:
                    self._setup_error = self._pinned(self.now, pin)
            elif entry.kind == "clock":
                assert entry.step is not None and entry.clock_to is not None
                outcome = self._judge_clock(
                    entry.index, entry.step, entry.base, entry.clock_to, answers[0]
                )
            else:
                assert entry.call is not None
                pinned = answers[0] if len(answers) == 2 else None
                outcome = self._judge(entry.call, answers[-1], pinned)
            after = self._state()
        finally:
            self._load(ahead)
        self._judged = (after["octx"], after["_others"])
        if entry.epoch == self._epoch:
            self.octx = after["octx"]
            if not self._window:
                self._others = after["_others"]
        as_predicted = (outcome is None or outcome.verdict == "pass") and all(
            after[name] == entry.predicted[name] for name in PREDICTED
        )
        if self.on_settled is not None:
            self.on_settled(entry.key, entry.step, outcome, as_predicted)

    # -- for machines ---------------------------------------------------------------------

    def target_id(self, symbol: str) -> str | None:
        mid = self.symbols.get(symbol)
        return self.octx.ids.m2t.get(mid) if mid is not None else None


def _bound_ids(bind: dict[str, Any], outcome: Outcome) -> tuple[list[tuple[str, str]], str | None]:
    """The model ids ``bind`` names in the model's answer, in order, up to the first name it
    cannot bind (and why: None when every name binds).  Whether the target showed each id is
    for the caller (:meth:`LedgerDriver._bind`)."""
    if not isinstance(outcome, Ok):
        return [], "bind: the model refused this call, there is nothing to bind"
    result = outcome.result
    pairs: list[tuple[str, str]] = []
    for name, sel in bind.items():
        if not _SYMBOL.fullmatch("$" + name):
            return pairs, f"bind: {name!r} is not a symbol name"
        if sel in ("id", "result.id"):
            if not isinstance(result, dict) or "id" not in result:
                return pairs, f"bind {name}: the answer is not a record"
            mid = str(result["id"])
        elif isinstance(sel, dict) and sel:
            listed = result.get("records") if isinstance(result, dict) else None
            pool: list[Any] = listed if isinstance(listed, list) else [result]
            hits = [
                r
                for r in pool
                if isinstance(r, dict) and all(r.get(k) == v for k, v in sel.items())
            ]
            if len(hits) != 1:
                return pairs, f"bind {name}: {len(hits)} records of the answer match {sel}"
            mid = str(hits[0]["id"])
        else:
            return pairs, f'bind {name}: the selector is "id" or an object of field values'
        pairs.append((name, mid))
    return pairs, None
