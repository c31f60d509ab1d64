"""The ledgers a run keeps in step while the store's answers have not told apart choices the spec
leaves open (a merge result's group, say, shows only in a later read).

A *world* is one such ledger with the correspondences its answers were judged under; the
driver keeps the list (the model's own world first) and asks, for each call, every answer the
model allows in every world (:func:`allowed_in_worlds`), which of them the target's answer
matches (:func:`passing`), which one the run goes on with (:func:`least_departed`), which
worlds stay possible after a match (:func:`kept_worlds`, at most :data:`MAX_WORLDS`) and, when
none matches, the model's closest answer (:func:`closest`).

Some of those ledgers depart from a reference clause (``LedgerState.departures``: a choice the
seed leaves open that the reference makes otherwise, such as the instant ``expire`` counts
from).  When only such a ledger explains the store's answers, the driver goes on in it and
reports a deviation naming the clause, once: later answers are judged in the store's reading,
so a seed rule is not failed for a choice the seed left open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from conformance.oracle.ledger.correspondences import Context
from conformance.oracle.ledger.judge import Judgement, judge, judge_any
from conformance.oracle.ledger.results import PacketCandidate, PacketModel, PacketRows
from conformance.vocabulary import Exchange
from reference.ledger.lifecycle import listing_order
from reference.ledger.outcome import INVALID_PARAMS, Ok, Outcome, Refused
from reference.ledger.packet import (
    build_packet,
    collapsed_body,
    packet_rank,
    provenance_reason,
    reason_key,
)
from reference.ledger.records import SCOPE_LOCAL, LedgerState, active_records
from reference.ledger.wire import allowed, record_to_wire

#: How many ledgers are kept in step at once.
MAX_WORLDS = 32

#: A JSON-RPC parse error: allowed, besides -32602, for a body that is not JSON at all.
PARSE_ERROR = -32700

#: A ledger the answers so far leave possible, with its correspondences.
World = tuple[LedgerState, Context]
#: Per world, in the worlds' order: every answer the model allows there, each with the ledger
#: it leaves.
Options = list[list[tuple[LedgerState, Outcome]]]
#: An allowed answer the target's answer matched: the ledger it leaves, the answer, the judgement.
Pass = tuple[LedgerState, Outcome, Judgement]


def allowed_in_worlds(
    worlds: Sequence[World],
    method: str,
    params: Any,
    now: int,
    *,
    not_json: bool,
    predicted: tuple[Any, int, list[Any]] | None,
) -> Options:
    """Every answer the model allows to ``method`` with ``params`` at ``now``, in every world.
    ``not_json``: the body sent was not JSON (one answer: refused).  ``predicted``: the answers
    already asked of one ledger at one instant (``(ledger, now, answers)``), reused for that
    world when both match."""
    options: Options = []
    for state, _ctx in worlds:
        if predicted is not None and predicted[0] is state and predicted[1] == now:
            options.append(predicted[2])
        elif not_json:
            not_json_refusal = Refused(
                INVALID_PARAMS,
                "the body is not JSON",
                frozenset({INVALID_PARAMS, PARSE_ERROR}),
            )
            options.append([(state, not_json_refusal)])
        else:
            options.append(allowed(state, method, params, now))
    return options


def passing(
    worlds: Sequence[World], options: Options, method: str, params: Any, ex: Exchange
) -> list[Pass]:
    """Every allowed answer, in every world, that the target's answer matches."""
    passes: list[Pass] = []
    for (state, ctx), alts in zip(worlds, options, strict=True):
        full_listing, packet = read_extras(state, method, params, alts[0][1])
        for new_state, alt in alts:
            trial = judge(
                method,
                alt,
                ex.status,
                ex.body,
                ctx,
                transport_error=ex.transport_error,
                body_error=ex.body_error,
                full_listing=full_listing,
                packet=packet,
            )
            if trial.verdict == "pass":
                passes.append((new_state, alt, trial))
    return passes


def least_departed(passes: Sequence[Pass]) -> Pass:
    """The matched answer the run goes on with: the first of those whose ledger departs from
    the fewest reference clauses (the model's own answer when it matched)."""
    return min(passes, key=lambda p: len(p[0].departures))


def kept_worlds(passes: Sequence[Pass], new_state: LedgerState) -> list[World]:
    """The worlds still possible besides ``new_state`` (the one the run goes on in): one per
    distinct ledger the matched answers leave, in their order, at most :data:`MAX_WORLDS` in
    all."""
    kept: dict[LedgerState, Context] = {}
    for st, _alt, trial in passes:
        if len(kept) < MAX_WORLDS and st not in kept and trial.context is not None:
            kept[st] = trial.context
    return [(st, c) for st, c in kept.items() if st is not new_state][: MAX_WORLDS - 1]


def closest(
    world: World, options: Options, method: str, params: Any, ex: Exchange
) -> tuple[LedgerState, Outcome, Judgement, bool]:
    """The closest of the answers ``world`` (the model's own; ``options[0]``) allows, when the
    target matched none: the ledger it leaves, the answer, the judgement, and whether both
    sides refused (every allowed answer, in every world, refuses and so did the target: no
    ledger changed and the worlds still possible stay possible)."""
    state, ctx = world
    full_listing, packet = read_extras(state, method, params, options[0][0][1])
    j, best = judge_any(
        method,
        [o for _s, o in options[0]],
        ex.status,
        ex.body,
        ctx,
        transport_error=ex.transport_error,
        body_error=ex.body_error,
        full_listing=full_listing,
        packet=packet,
    )
    new_state, outcome = options[0][best]
    state_kept = (
        all(isinstance(o, Refused) for alts in options for _s, o in alts)
        and ex.status is not None
        and ex.status != 200
    )
    return new_state, outcome, j, state_kept


def read_extras(
    state: LedgerState, method: str, params: Any, outcome: Outcome
) -> tuple[list[dict[str, Any]] | None, PacketModel | None]:
    """What the oracle needs beyond the answer, as the reference declares it: a listing's
    full order (LED-LIST.2), a packet's ranks (LED-PACKET.3).  ``None`` params are absent ones
    (a method without params, LED-WIRE.12)."""
    if params is None:
        params = {}
    if not isinstance(outcome, Ok) or not isinstance(params, dict):
        return None, None
    if method == "memory/list_memory_records":
        scope, status = params.get("scopeKey"), params.get("status") or "active"
        rows = listing_order(state, str(scope), str(status))
        return [record_to_wire(r) for r in rows], None
    if method == "_test/packet":
        return None, packet_model(state)
    return None, None


def packet_model(state: LedgerState) -> PacketModel:
    """The packet as the reference declares it: the model's own lines with their ranks
    (LED-PACKET.3), every active record's parts, and the packet under another labelling of
    the lines (LED-PACKET.5: a store's own labels change which lines fit the cap)."""
    own = build_packet(state, SCOPE_LOCAL)
    candidates = tuple(
        PacketCandidate(r.id, r.kind, collapsed_body(r), provenance_reason(r), reason_key(r))
        for r in active_records(state, SCOPE_LOCAL)
    )

    def relabel(label_of: Callable[[str], str]) -> tuple[tuple[str, ...], PacketRows]:
        """The model's packet with each line labelled ``label_of(record id)``."""
        p = build_packet(state, SCOPE_LOCAL, reason=lambda rec: label_of(rec.id))
        return p.lines, tuple((r.id, packet_rank(r)) for r in p.records)

    return PacketModel(tuple((r.id, packet_rank(r)) for r in own.records), candidates, relabel)
