"""The judgement of one answer against one allowed answer, and against every allowed answer.

A refusal the model makes is judged by its code, its HTTP status and its message (LED-WIRE.3,
LED-WIRE.8); a result by :func:`conformance.oracle.ledger.results.compare_result`.  With several
allowed answers (``reference.ledger.wire.allowed``) the first that passes wins; when none does,
the closest is reported with the others listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.oracle.judgement import Judgement as BaseJudgement
from conformance.oracle.ledger.clauses import (
    CODE_STATUS,
    error_code,
    message_clauses,
    method_clauses,
    refusal_clauses,
    refusal_reason_clauses,
    unexpected_error_clauses,
    uniq,
)
from conformance.oracle.ledger.correspondences import Context
from conformance.oracle.ledger.records import Diff, short
from conformance.oracle.ledger.results import PacketModel, PacketRows, compare_result
from reference.ledger.outcome import Ok, Outcome, Refused


@dataclass
class Judgement(BaseJudgement):
    diffs: list[Diff] = field(default_factory=list)
    context: Context | None = None  # the extended correspondences (commit on pass)


def describe_outcome(outcome: Outcome) -> str:
    """What the model allows, for a report."""
    if isinstance(outcome, Refused):
        codes = sorted(outcome.allowed_codes)
        statuses = sorted({CODE_STATUS.get(c, 400) for c in codes})
        msg = (
            f" with message {sorted(outcome.allowed_messages)[0]!r}"
            if outcome.allowed_messages and len(outcome.allowed_messages) == 1
            else ""
        )
        return (
            f"HTTP {'/'.join(map(str, statuses))} error code in {codes}{msg}"
            f" (the model refuses: {outcome.message})"
        )
    text = f"HTTP 200 {short(outcome.result, 400)}"
    if outcome.may_omit:
        text += f" (tombstones {sorted(outcome.may_omit)} may be left out)"
    return text


def judge(
    method: str,
    outcome: Outcome,
    status: int | None,
    body: Any,
    ctx: Context,
    *,
    transport_error: str | None = None,
    body_error: str | None = None,
    full_listing: Sequence[dict[str, Any]] | None = None,
    packet: PacketRows | PacketModel | None = None,
) -> Judgement:
    """Judge one answer against the model's outcome.

    ``full_listing`` (for ``list_memory_records``): every record of the listed status in the
    model, newest update first, so the 50 cut can be judged with ties.  ``packet`` (for
    ``_test/packet``): each model line's record id and rank key, so short ids go through the
    bijection and equal ranks are unordered.
    """
    expected = describe_outcome(outcome)
    base = method_clauses(method)
    trial = ctx.copy()
    if status is None:
        return Judgement(
            "indeterminate", base, expected, f"no answer from the target: {transport_error}"
        )
    if isinstance(outcome, Refused):
        return _judge_refusal(method, outcome, status, body, body_error, expected, trial)
    if status != 200:
        code = error_code(body)
        # A refusal in the store's own words (its budget or credential sentence) says which
        # rule it applied; otherwise the method's and the error code's clauses.
        said = refusal_reason_clauses(body)
        return Judgement(
            "diverge",
            said or uniq(base + unexpected_error_clauses(status, code)),
            expected,
            f"the model accepts this call; the target answered HTTP {status}"
            f" {short(body if body is not None else body_error)}",
        )
    if body_error or body is None:
        return Judgement(
            "diverge",
            uniq(base + ("LED-WIRE.6",)),
            expected,
            f"HTTP 200 without a JSON body ({body_error or 'empty'})",
        )
    diffs = compare_result(method, outcome, body, trial, full_listing, packet)
    if diffs:
        # The fields that differ say which rules were broken; the method's own clauses only
        # when no field names one.
        clauses = uniq([c for d in diffs for c in d.clauses]) or base
        reason = "; ".join(d.text() for d in diffs[:6])
        if len(diffs) > 6:
            reason += f"; … {len(diffs) - 6} more"
        return Judgement("diverge", clauses, expected, reason, diffs)
    return Judgement("pass", base, expected, context=trial)


def _judge_refusal(
    method: str,
    outcome: Refused,
    status: int,
    body: Any,
    body_error: str | None,
    expected: str,
    ctx: Context,
) -> Judgement:
    """An answer to a call the model refuses: an error object with an allowed code, its HTTP status
    and message (LED-WIRE.3, LED-WIRE.8)."""
    clauses = uniq(refusal_clauses(method, outcome) + method_clauses(method) + ("LED-WIRE.8",))
    why = refusal_clauses(method, outcome) or method_clauses(method)  # what the refusal is about
    if status == 200:
        return Judgement(
            "diverge",
            why,
            expected,
            f"the model refuses this call ({outcome.message}); the target accepted it and"
            f" answered {short(body)}",
        )
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or set(body) != {"error"}:
        return Judgement(
            "diverge",
            uniq(("LED-WIRE.3",) + clauses),
            expected,
            f'an error answer is {{"error": {{"code", "message"}}}}; got HTTP {status}'
            f" {short(body if body is not None else body_error)}",
        )
    code, message = err.get("code"), err.get("message")
    if isinstance(code, bool) or not isinstance(code, int) or code not in outcome.allowed_codes:
        return Judgement(
            "diverge",
            uniq(("LED-WIRE.3",) + why),
            expected,
            f"error code {code!r} is not one the model allows {sorted(outcome.allowed_codes)}",
        )
    if status != CODE_STATUS.get(code, 400):
        return Judgement(
            "diverge",
            uniq(("LED-WIRE.3",) + clauses),
            expected,
            f"code {code} travels as HTTP {CODE_STATUS.get(code, 400)}, not {status}",
        )
    if not isinstance(message, str) or not message.strip():
        return Judgement(
            "diverge", uniq(("LED-WIRE.3",) + clauses), expected, "a refusal carries a message"
        )
    if outcome.allowed_messages is not None and message not in outcome.allowed_messages:
        # Only the words differ: the exact sentences are the reference binding's.
        return Judgement(
            "diverge",
            message_clauses(outcome) or why,
            expected,
            f"message {message!r} is not the exact text the spec requires"
            f" ({sorted(outcome.allowed_messages)[0]!r})",
        )
    return Judgement("pass", clauses, expected, context=ctx)


# ---- several allowed answers ------------------------------------------------------------


def judge_any(
    method: str,
    outcomes: Sequence[Outcome],
    status: int | None,
    body: Any,
    ctx: Context,
    *,
    transport_error: str | None = None,
    body_error: str | None = None,
    full_listing: Sequence[dict[str, Any]] | None = None,
    packet: PacketRows | PacketModel | None = None,
) -> tuple[Judgement, int]:
    """Judge an answer against every answer the model allows (``reference.ledger.wire.allowed``,
    the model's own first).  Returns the first passing judgement and its index; when none
    passes, the judgement against the closest allowed answer (one of the same kind — a result
    for HTTP 200, a refusal otherwise — the model's own when it is) and that index."""
    judgements: list[Judgement] = []
    for i, outcome in enumerate(outcomes):
        j = judge(
            method,
            outcome,
            status,
            body,
            ctx,
            transport_error=transport_error,
            body_error=body_error,
            full_listing=full_listing,
            packet=packet,
        )
        if j.verdict != "diverge":
            return j, i
        judgements.append(j)
    accepted = status == 200
    best = next((i for i, o in enumerate(outcomes) if isinstance(o, Ok) == accepted), 0)
    j = judgements[best]
    if len(outcomes) > 1:
        others = "; ".join(describe_outcome(o) for k, o in enumerate(outcomes) if k != best)
        j = Judgement(
            j.verdict,
            j.clauses,
            f"{j.expected} — or any of {len(outcomes) - 1} other allowed answer(s): "
            + (others if len(others) <= 300 else others[:299] + "…"),
            j.reason,
            j.diffs,
            j.context,
        )
    return j, best
