"""The Memory Worker driver: scenario steps → HTTP requests → the oracle's verdict.

Ops (``Step.op``) and their ``args``:

``write {scopeKey, records, cap?}``   ``POST /write`` with ``args`` as the JSON body
``retrieve {scopeKey, query, limit}`` ``POST /retrieve``
``list {scopeKey, limit, query?}``    ``POST /list``
``forget {scopeKey, id}``             ``POST /forget``
``healthz {}``                        ``GET /healthz``
``raw {method, path, headers?, body?, auth?}``
    any request, for the routing/auth/fence/shape cases.  ``body`` is a string (sent as UTF-8,
    byte for byte) or any JSON value (serialized); ``headers`` is an object — a
    ``Content-Length`` given there is sent verbatim (``null``: no such header; ``{"zero_pad": n}``:
    the true length with leading zeros to ``n`` digits), otherwise the true length is sent.
    ``auth`` is ``true`` (the bearer), ``false`` (none), ``"wrong"``
    (same length, one character off), ``"scheme"`` (``Basic <token>``), ``"empty"``
    (``Bearer `` and nothing), ``"prefix"`` (the token less its last character), ``"longer"``
    (the token and one character more) or ``"case"`` (the token in the other letter case).
    ``chunked: true`` sends the body with ``Transfer-Encoding: chunked`` and no length — the
    form any client and any edge passes (no ``raw_http`` needed; neither is
    ``Content-Length: null``).  Raw requests go over a fresh socket when the
    target has ``raw_http``.  A raw probe with hand-made framing whose answer came from the
    HTTP layer in front of the store (not JSON; or held until the deadline because it
    declared more than it sent) is skipped as *not observable through this target* and the
    scenario goes on.
``pause_ms {ms}``                     wait, to space steps further apart

Values in ``args`` are expanded first: ``{scope:a}`` inside any string becomes the run's key for
placeholder ``a`` (``org:memspec-<run>-<n>-a``: unique to this run and this scenario, valid
under the scope-key rules); a string ``"$r1"`` becomes the target id bound to ``r1``;
``{"$repeat": "x", "times": 4001}``, ``{"$concat": [...]}`` and ``{"$pad": "{scope:a}", "to": 200,
"with": "x"}`` (pad to an exact length) build long strings; a ``raw`` step's ``pad_to: n`` pads
its body with spaces to exactly ``n`` bytes.

``bind`` (on ``retrieve``/``list``) names records of the answer: ``{"r1": {"text": "…"}}``
(the record with that text; ``"nth": k`` for the k-th of several) or ``{"r1": {"index": 0}}``.

``expect`` narrows a step by hand — ``status``, ``body`` (members that must be equal),
``count``, ``texts`` (record texts in order), ``text_set`` (in any order) — on top of the
model's verdict, so a corpus scenario also catches a model and a store that agree on a
mistake.

Safety: a request whose body names a ``scopeKey`` that does not carry this run's id is never
sent (the step is skipped with the reason), so a run can touch no data it did not create.

The clauses each op speaks for and the capabilities a step needs are in
:mod:`conformance.drivers.memory.steps`; a ``raw`` step's request is built, and its answer
checked for being observable at all, in :mod:`conformance.drivers.memory.raw`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from typing import Any

from conformance.drivers.common import check_expect, expand_macro, followed_reason, is_macro
from conformance.drivers.memory.raw import (
    ROUTES,
    _describe,
    _json_media_type,
    _not_observable,
    build_raw,
    sent_again,
)
from conformance.drivers.memory.steps import DEFAULT_CLAUSES, infer_requires, step_requires
from conformance.errors import TargetError
from conformance.oracle.memory import Judgement, MemoryOracle, SentRequest
from conformance.scenario import Scenario, Step
from conformance.sources import blamed
from conformance.targets.base import AUTH, RAW_HTTP
from conformance.targets.memory import CAP, LIST, MemoryTarget
from conformance.vocabulary import (
    SPACING_S,
    Exchange,
    JudgementVerdict,
    RunContext,
    StepError,
    StepOutcome,
)
from reference.memory.wire import is_success

__all__ = ["MemoryDriver"]

_SCOPE_RE = re.compile(r"\{scope:([A-Za-z0-9_-]{1,24})\}")
_SYMBOL_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]{0,31})")


class MemoryDriver:  # long: the oracle, the run's scopes and symbols, the clock and the spacing
    """Drives one Memory Worker target in lockstep with the model (see module docstring)."""

    protocol = "memory"

    def __init__(self, ctx: RunContext, *, probed: frozenset[str] | None = None) -> None:
        self.ctx = ctx
        self.target = MemoryTarget(ctx.target)
        self._scenario_no = 0
        self._lanes = 0  # lanes spawned from this driver
        self._lane_prefix = ""  # "" for the first driver, "l<n>." for its lanes
        self._written: dict[str, None] = {}
        self._probe_scope = self._make_scope(0, "probe")
        if probed is not None:  # a lane of a driver that already probed this target
            self._caps = probed
        else:
            try:
                self._caps = self.target.probe(self._probe_scope)
            except TargetError:
                self.target.close()
                raise
            if CAP in self._caps or AUTH in self._caps:
                self._written[self._probe_scope] = None
        self.cap_default = int(ctx.options.get("memory_cap_default", 500))
        self.spacing_slept_s = 0.0  # time spent keeping mutating steps apart (benchmarks)
        #: a read to write behind the next step's request (:meth:`follow_with`), and one so
        #: written whose answer is still unread
        self._follow: tuple[str, dict[str, Any]] | None = None
        self._pending: tuple[str, Any] | None = None
        self.begin("<init>")

    # -- Driver protocol ------------------------------------------------------------------

    def capabilities(self) -> frozenset[str]:
        return self._caps

    def begin(self, scenario_name: str, tag: str | None = None) -> None:
        """A fresh model and symbol table; the scenario's scopes are named ``<run>-<tag>-…``
        (``tag`` defaults to this driver's own count of scenarios begun)."""
        self._scenario_no += 1
        self._tag = tag if tag is not None else f"{self._lane_prefix}{self._scenario_no}"
        self.scenario_name = scenario_name
        self.oracle = MemoryOracle(self.cap_default)
        self.symbols: dict[str, str] = {}
        self.scopes: dict[str, str] = {}
        self._last_mutation: dict[str, float] = {}
        self._now = 0

    def scopes_written(self) -> list[str]:
        return list(self._written)

    def lane(self) -> MemoryDriver:
        """Another driver on the same target, with its own connection and the capabilities
        this one probed, to run scenarios and machine runs side by side.  Every lane names
        the scopes of what it begins untagged after itself (``l<n>.<count>``), so no two lanes
        ever share a scope; tagged scenarios (the corpus) keep their own names."""
        self._lanes += 1
        other = MemoryDriver(self.ctx, probed=self._caps)
        other._written = self._written  # one record of the scopes the run wrote
        other._lane_prefix = f"l{self._lanes}."
        return other

    def requirements(self, scenario: Scenario) -> set[str]:
        """Capabilities ``scenario`` needs (its ``requires`` plus what its steps use)."""
        return infer_requires(scenario)

    def bind_from(self, ex: Exchange, bind: dict[str, Any]) -> str | None:
        """Bind symbols from an answer already judged (the state machines bind after the fact)."""
        return self._bind(bind, ex)

    def close(self) -> None:
        self.target.close()

    # -- a read written behind a step (``--window``) ---------------------------------------

    def follow_with(self, path: str, args: dict[str, Any]) -> None:
        """Write the read ``POST path args`` (a ``/list``: it changes nothing) on the connection
        right behind the next step's request, before that step's answer is back: the read's
        answer is taken by the step that asks for exactly that read next (one round trip for
        the two), and read and dropped by any other.  Either way the target sees the requests
        of the one-at-a-time run, plus at most a read nobody judges.  A step that is not a
        data-route request sends nothing ahead."""
        self._follow = (path, args)

    def _post(self, path: str, body: Any) -> Exchange:
        """``POST path body``: the answer of that very read when it was written ahead (sent
        again if it was lost: a read is safe to repeat), else a request of its own."""
        pending = self._drain()
        if pending is not None and pending[0] == (path, body) and pending[1].status is not None:
            return pending[1]
        return self.target.request("POST", path, body)

    def _drain(self) -> tuple[tuple[str, Any], Exchange] | None:
        """Read the answer of the read written ahead, if one is still unread."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        return pending, self.target.read_ahead()

    def _send_with_follow(
        self, path: str, args: Any, follow: tuple[str, dict[str, Any]] | None
    ) -> Exchange:
        """``POST path args``, with ``follow`` written right behind it where the target takes
        pipelined requests."""
        if follow is None:
            return self._post(path, args)
        self._drain()
        read = (follow[0], self.expand(follow[1]))
        if not self.target.write_ahead([("POST", path, args), ("POST", *read)]):
            return self.target.request("POST", path, args)
        ex = self.target.read_ahead()
        self._pending = read
        return ex

    # -- expansion ------------------------------------------------------------------------

    def _make_scope(self, tag: int | str, name: str) -> str:
        return f"org:{self.ctx.run_id}-{tag}-{name}"

    def scope_key(self, placeholder: str) -> str:
        """The run's key for ``{scope:<placeholder>}`` in the current scenario."""
        if placeholder not in self.scopes:
            self.scopes[placeholder] = self._make_scope(self._tag, placeholder)
        return self.scopes[placeholder]

    def expand(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith("$") and _SYMBOL_RE.fullmatch(value):
                name = value[1:]
                if name not in self.symbols:
                    raise StepError(f"symbol ${name} is not bound by an earlier step")
                return self.symbols[name]
            if "{scope:" not in value:  # (most strings: no placeholder to look for)
                return value
            return _SCOPE_RE.sub(lambda m: self.scope_key(m.group(1)), value)
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            if is_macro(value):
                return expand_macro(value, self.expand)
            return {k: self.expand(v) for k, v in value.items()}
        return value

    def _check_scopes(self, body: Any) -> None:
        for key in _scope_keys_in(body):
            if key and self.ctx.run_id not in key:
                raise StepError(
                    f"refused to send scopeKey {key[:60]!r}: it is not a key of this run"
                    " (use a {scope:x} placeholder)"
                )

    def _check_ids(self, route: str, body: Any) -> None:
        """An id literal inside the request's own scope that the run never saw would be a guess
        at the target's numbering, which is implementation-defined: refuse the step."""
        if not isinstance(body, dict) or not isinstance(body.get("scopeKey"), str):
            return
        ids: list[str] = []
        if route == "/forget" and isinstance(body.get("id"), str):
            ids.append(body["id"])
        if route == "/write" and isinstance(body.get("records"), list):
            ids += [
                r["supersedes"]
                for r in body["records"]
                if isinstance(r, dict) and isinstance(r.get("supersedes"), str)
            ]
        if not ids:
            return
        prefix = f"mem:{body['scopeKey']}:"
        for rid in ids:
            if not rid.startswith(prefix) or self._id_known(rid):
                continue
            if rid[len(prefix) :].isdigit():
                raise StepError(
                    f"id {rid!r} was never returned by the target: its numbering is"
                    " implementation-defined, so bind it from an answer ($name) instead"
                )

    def _check_body(self, path: str, body: Any) -> None:
        self._check_scopes(body)
        self._check_ids(path, body)

    def _id_known(self, rid: str) -> bool:
        """The run has seen ``rid``: bound to a symbol, or paired with a model record."""
        return rid in self.symbols.values() or any(rid in w.t2m for w in self.oracle.worlds)

    # -- execution ------------------------------------------------------------------------

    def execute(self, index: int, step: Step) -> StepOutcome:
        base_clauses = tuple(step.clauses) or DEFAULT_CLAUSES.get(step.op, ())
        try:
            return self._execute(index, step, base_clauses)
        except StepError as exc:
            return StepOutcome(
                index=index, op=step.op, verdict="skip", clauses=base_clauses, reason=str(exc)
            )

    def _space(self, scopes: frozenset[str]) -> None:
        """Wait until the last mutating step on each of ``scopes`` is SPACING_S old.

        Only the remainder is slept: the time since that scope's last mutating answer (model,
        oracle and Hypothesis work included) already counts, and a step on another scope
        waits for nothing."""
        if not scopes:
            return
        last = max(self._last_mutation.get(s, -SPACING_S) for s in scopes)
        start = time.monotonic()
        wait = last + SPACING_S - start
        if wait > 0:
            time.sleep(wait)
            self.spacing_slept_s += time.monotonic() - start

    def _mutated(self, scopes: frozenset[str]) -> None:
        """Note the time a mutating step on ``scopes`` was answered (the store stamped it
        before answering, so the next stamp on those scopes comes ≥ SPACING_S later)."""
        now = time.monotonic()
        for scope in scopes:
            self._last_mutation[scope] = now

    def _clock(self) -> int:
        now = time.time_ns() // 1_000_000
        self._now = max(now, self._now + 1)
        return self._now

    def _execute(self, index: int, step: Step, clauses: tuple[str, ...]) -> StepOutcome:
        op = step.op
        if op == "pause_ms":
            return _pause(index, step, clauses)
        follow, self._follow = self._follow, None
        sent, send = self._request(step, follow)
        # The model answers first (at model time ``now``): the allowed answers say whether this
        # step may change a scope — only then is it a mutating step, spaced on that scope.
        now = self._clock()
        allowed = self.oracle.allowed(sent, now)
        self._space(allowed.changes)
        ex = send()
        self._mutated(allowed.changes)
        # Every outcome from here on is of this step and this exchange.
        outcome = partial(StepOutcome, index=index, op=op, exchange=ex)
        unobservable = _not_observable(op, sent, ex)
        if unobservable is not None:
            return outcome(
                verdict="skip",
                clauses=clauses,
                expected=_describe_allowed_statuses(allowed),
                reason=f"not observable through this target: {unobservable}",
                details={"unobservable": True},
            )
        judgement = self.oracle.judge(sent, ex, now, allowed)
        if judgement.verdict == "pass" and not _json_media_type(ex.content_type):
            return outcome(
                verdict="diverge",
                clauses=tuple(dict.fromkeys(("MEM-WIRE.1", *step.clauses))),
                expected=judgement.expected,
                reason=f"the answer is labelled Content-Type {ex.content_type!r}, not JSON",
            )
        if judgement.verdict != "pass":
            # No allowed answer changes a scope, and the target refused too: neither side
            # changed, so a run may go on past this step (a deviation: conformance.sources).
            kept = not allowed.changes and ex.status is not None and ex.status >= 400
            return outcome(
                verdict=judgement.verdict,
                clauses=blamed(
                    (*judgement.clauses, *step.clauses),
                    judgement.clauses if judgement.verdict == "diverge" else (),
                ),
                expected=judgement.expected,
                reason=judgement.reason,
                details={"state_kept": True} if kept and judgement.verdict == "diverge" else {},
            )
        return self._allowed_answer(step, clauses, sent, ex, judgement, outcome)

    def _allowed_answer(
        self,
        step: Step,
        clauses: tuple[str, ...],
        sent: SentRequest,
        ex: Exchange,
        judgement: Judgement,
        outcome: Callable[..., StepOutcome],
    ) -> StepOutcome:
        """A step whose answer the model allows: its hand-written expectation checked, the
        judgement committed (:meth:`_passed`); a deviation the run goes on past when the answer
        is allowed only in a reading of an open choice other than the reference's."""
        departed = judgement.details.get("departed")
        # A hand-written expectation states the reference's reading: not checked once the
        # store has shown it reads an open choice otherwise.
        problem = (
            check_expect(step.expect, ex, _texts(ex), "texts", any_success=True)
            if step.expect and not departed and not self._departed()
            else None
        )
        if problem is not None:
            return outcome(
                verdict="diverge",
                clauses=clauses,
                expected=judgement.expected,
                reason=f"hand-written expectation: {problem}",
            )
        self.oracle.commit(judgement)
        passed = self._passed(step, clauses, sent, ex, judgement.expected, outcome)
        if departed and passed.verdict == "pass":
            # The model now judges in the store's reading (``followed``).
            return outcome(
                verdict="diverge",
                clauses=tuple(departed),
                expected=judgement.expected,
                reason=followed_reason(judgement.details["departure"], departed),
                details={"followed": True},
            )
        return passed

    def _departed(self) -> bool:
        """Whether the store has shown it reads an open choice otherwise than the reference
        (every live world departs from a reference clause)."""
        return all(w.departures for w in self.oracle.worlds)

    def _request(
        self, step: Step, follow: tuple[str, dict[str, Any]] | None = None
    ) -> tuple[SentRequest, Callable[[], Exchange]]:
        """The request ``step`` sends (its arguments expanded) and how to send it (a data-route
        request with ``follow`` written behind it: :meth:`follow_with`); a step the driver or
        the target cannot run is a ``StepError``."""
        op = step.op
        if op not in ROUTES and op not in ("healthz", "raw"):
            raise StepError(f"unknown memory op {op!r}")
        for cap in step_requires(step):
            if cap not in self._caps:
                raise StepError(f"the target lacks capability {cap}")
        args = self.expand(step.args)
        if op == "healthz":
            self._drain()
            return SentRequest("GET", "/healthz", None, b"", None, False), self.target.healthz
        if op == "raw":
            self._drain()
            return self._raw(args)
        return self._route_request(ROUTES[op], args, follow)

    def _passed(
        self,
        step: Step,
        clauses: tuple[str, ...],
        sent: SentRequest,
        ex: Exchange,
        expected: str,
        outcome: Callable[..., StepOutcome],
    ) -> StepOutcome:
        """A step whose answer the model allows, its judgement committed: several possible
        states settled by a look, its ids bound."""
        if len(self.oracle.worlds) > 1:
            settled = self._settle(sent)
            if settled is not None:
                verdict, reason, settle_clauses = settled
                return outcome(
                    verdict=verdict,
                    clauses=blamed(
                        (*settle_clauses, *step.clauses),
                        settle_clauses if verdict == "diverge" else (),
                    ),
                    expected=expected,
                    reason=reason,
                )
        if step.bind:
            bind_problem = self._bind(step.bind, ex)
            if bind_problem is not None:
                return outcome(
                    verdict="indeterminate",
                    clauses=clauses,
                    expected=expected,
                    reason=bind_problem,
                )
        return outcome(verdict="pass", clauses=clauses, expected=expected)

    def _settle(self, sent: SentRequest) -> tuple[JudgementVerdict, str, tuple[str, ...]] | None:
        """After a step that left several model states possible (an eviction among equally old
        records, indistinguishable new records), look: one ``/list`` of the scope — which
        changes nothing on a conforming store — shows which state the target is in.  Returns
        (verdict, reason, clauses) when that look diverges, else ``None``."""
        body = sent.body if isinstance(sent.body, dict) else {}
        scope = body.get("scopeKey")
        if not isinstance(scope, str) or LIST not in self._caps or self.ctx.run_id not in scope:
            return None
        args = {"scopeKey": scope, "limit": 50}
        raw = json.dumps(args, separators=(",", ":")).encode()
        look = SentRequest("POST", "/list", args, raw, str(len(raw)), True)
        ex = self._post("/list", args)
        judgement = self.oracle.judge(look, ex, self._clock())
        if judgement.verdict == "pass":
            self.oracle.commit(judgement)
            return None
        return (
            judgement.verdict,
            f"a follow-up /list of the scope (to see which of {len(self.oracle.worlds)} equally"
            f" legal states the target chose) diverged: {judgement.reason}",
            judgement.clauses,
        )

    def _note_written(self, body: Any) -> None:
        for key in _scope_keys_in(body):
            if key and self.ctx.run_id in key:
                self._written.setdefault(key, None)

    def _route_request(
        self, path: str, args: Any, follow: tuple[str, dict[str, Any]] | None = None
    ) -> tuple[SentRequest, Callable[[], Exchange]]:
        """A data-route request with ``args`` as its JSON body, and the function sending it
        (with ``follow`` written behind it: :meth:`follow_with`)."""
        self._check_scopes(args)
        self._check_ids(path, args)
        raw = json.dumps(args, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        sent = SentRequest(
            "POST",
            path,
            args,
            raw,
            str(len(raw)),
            True,
            (("Content-Type", "application/json"),),
        )

        def send() -> Exchange:
            # the same bytes and headers as ``raw`` (the target serializes ``args`` alike), and
            # the exchange names ``args`` as its request body
            ex = self._send_with_follow(path, args, follow)
            self._note_written(args)
            return ex

        return sent, send

    def _raw(self, args: dict[str, Any]) -> tuple[SentRequest, Callable[[], Exchange]]:
        req = build_raw(args, self._caps, self._check_body)

        def send() -> Exchange:
            ex = send_once()
            if not sent_again(req, ex):
                return ex
            # No answer at all, on a route that changes nothing: a transport accident (an
            # intermediary that lost an early answer), tried once more on a fresh connection.
            again = send_once()
            if again.status is not None:
                return again
            return replace(
                again,
                transport_error=f"{again.transport_error} (sent twice, on two connections; the"
                f" first got no answer either: {ex.transport_error})",
            )

        def send_once() -> Exchange:
            method, path, raw, parsed = req.method, req.path, req.raw, req.parsed
            headers, auth, chunked = req.headers, req.auth, req.chunked
            if RAW_HTTP in self._caps:
                ex = self.target.raw(
                    method,
                    path,
                    headers=headers,
                    body=raw,
                    auth=auth,
                    described=_describe(parsed, raw),
                    chunked=chunked,
                )
            else:
                ex = self.target.request(
                    method,
                    path,
                    content=raw if raw or chunked else None,
                    headers={k: v for k, v in headers if k.lower() != "transfer-encoding"},
                    auth=auth,
                    chunked=chunked,
                )
                ex = replace(ex, request_body=_describe(parsed, raw))
            if isinstance(parsed, dict) and is_success(ex.status):
                self._note_written(parsed)
            return ex

        return req.sent(), send

    def _bind(self, bind: dict[str, Any], ex: Exchange) -> str | None:
        records = ex.body.get("records") if isinstance(ex.body, dict) else None
        if not isinstance(records, list):
            return "bind: the answer has no records"
        for name, sel in bind.items():
            if not isinstance(sel, dict):
                return f"bind {name}: selector must be an object"
            if "index" in sel:
                i = sel["index"]
                if not isinstance(i, int) or not 0 <= i < len(records):
                    return f"bind {name}: no record at index {i} (answer has {len(records)})"
                self.symbols[name] = records[i]["id"]
                continue
            if "text" in sel:
                hits = [r for r in records if isinstance(r, dict) and r.get("text") == sel["text"]]
                nth = sel.get("nth", 0)
                if not isinstance(nth, int) or not 0 <= nth < len(hits):
                    return f"bind {name}: no record with text {sel['text']!r} in the answer"
                self.symbols[name] = hits[nth]["id"]
                continue
            return f"bind {name}: selector needs text or index"
        return None


def _describe_allowed_statuses(answers: Any) -> str:
    statuses: set[int] = set()
    for _w, _req, allowed in answers.per_world:
        statuses |= set(allowed.statuses)
    return "HTTP " + " or ".join(str(s) for s in sorted(statuses))


def _scope_keys_in(body: Any) -> Iterable[str]:
    if isinstance(body, dict) and isinstance(body.get("scopeKey"), str):
        yield body["scopeKey"]


def _texts(ex: Exchange) -> list[Any] | None:
    """The texts of the answer's records (what a step's ``expect`` names ``texts``)."""
    records = ex.body.get("records") if isinstance(ex.body, dict) else None
    if not isinstance(records, list):
        return None
    return [r.get("text") for r in records if isinstance(r, dict)]


def _pause(index: int, step: Step, clauses: tuple[str, ...]) -> StepOutcome:
    """A ``pause_ms`` step: wait, and pass."""
    ms = step.args.get("ms")
    if not isinstance(ms, int) or not 0 <= ms <= 60_000:
        raise StepError("pause_ms needs 0 <= ms <= 60000")
    time.sleep(ms / 1000)
    return StepOutcome(index=index, op=step.op, verdict="pass", clauses=clauses, expected="(pause)")
