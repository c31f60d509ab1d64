"""The whole reflection pass: which call to make (or why none), and what its outcome writes.

The provider call and the store writes are I/O and stay outside: ``plan_reflection`` says which
call to make (MEM-REFLECT.1, MEM-REFLECT.2, MEM-REFLECT.3, MEM-REFLECT.4, MEM-REFLECT.5),
``finish_reflection`` turns the call's outcome into per-scope
writes and warnings (MEM-REFLECT.2, MEM-ROUTE.1, MEM-ROUTE.2, MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5,
MEM-ROUTE.6, MEM-ROUTE.7), ``records_to_show`` picks the existing
records the extractor sees (MEM-REFLECT.11).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from reference.memory.engine import rank_records
from reference.memory.records import MemoryRecord
from reference.memory.reflection.contract import (
    REFLECTION_MAX_TOKENS,
    REFLECTION_SHOWN_PER_SCOPE,
    REFLECTION_SYSTEM,
)
from reference.memory.reflection.extractor import (
    TranscriptTurn,
    build_reflection_input,
    reflection_model,
    should_reflect,
)
from reference.memory.reflection.reply import parse_reflection
from reference.memory.reflection.routing import RunScopes, ScopeWrite, route_candidates
from reference.memory.store import StoreState, active_records


@dataclass(frozen=True)
class ReflectionCall:
    """The one extractor call a qualifying run makes: no tools, no retry (MEM-REFLECT.4)."""

    model: str
    system: str
    user_message: str
    max_tokens: int = REFLECTION_MAX_TOKENS
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkipReflection:
    """No extractor call: ``disabled``, ``not_qualifying`` or ``bad_model_ref``."""

    reason: Literal["disabled", "not_qualifying", "bad_model_ref"]
    warning: str | None = None


def plan_reflection(
    *,
    enabled: bool,
    tool_calls: int,
    history_turns: int,
    agent_name: str | None,
    memory_model: str | None,
    run_model: str,
    existing_records: Sequence[MemoryRecord],
    transcript: Sequence[TranscriptTurn],
) -> ReflectionCall | SkipReflection:
    """Decide the reflection call of a finished run (MEM-REFLECT.1, MEM-REFLECT.2, MEM-REFLECT.3,
    MEM-REFLECT.4, MEM-REFLECT.5).

    Memory off: no call and nothing else (not even a warning).  A run ``should_reflect``
    rejects: no call.  An unparseable ``memory.model``: no call and one ``[memory]`` warning
    (the run itself is unaffected).  Otherwise exactly one call on ``reflection_model`` with
    ``REFLECTION_SYSTEM``, no tools, ``REFLECTION_MAX_TOKENS`` and the
    ``build_reflection_input`` message.
    """
    if not enabled:
        return SkipReflection("disabled")
    if not should_reflect(tool_calls, history_turns, agent_name):
        return SkipReflection("not_qualifying")
    model = reflection_model(memory_model, run_model)
    if model is None:
        return SkipReflection(
            "bad_model_ref", "[memory] memory.model is not a <provider>/<model> ref; no reflection"
        )
    return ReflectionCall(
        model=model,
        system=REFLECTION_SYSTEM,
        user_message=build_reflection_input(existing_records, transcript),
    )


@dataclass(frozen=True)
class ProviderFailure:
    """The extractor call threw or timed out."""

    message: str


@dataclass(frozen=True)
class ReflectOutcome:
    """What a finished extractor call leads to: the writes and the ``[memory]`` lines."""

    writes: tuple[ScopeWrite, ...]
    warnings: tuple[str, ...]


def finish_reflection(
    reply: str | ProviderFailure,
    *,
    shown_records: Sequence[MemoryRecord],
    thread_key: str,
    run_id: str | None,
    scopes: RunScopes,
    origin_visibility: str | None,
) -> ReflectOutcome:
    """Turn the extractor's reply into per-scope writes (MEM-REFLECT.2, MEM-ROUTE.1, MEM-ROUTE.2,
    MEM-ROUTE.3, MEM-ROUTE.4, MEM-ROUTE.5, MEM-ROUTE.6, MEM-ROUTE.7).

    A failed call or a rejected envelope writes nothing and yields one warning (no retry; the
    user's reply is never touched).  Otherwise the reply is parsed against the ids of
    ``shown_records`` and routed with their scopes; nothing durable writes nothing.  The gate's
    line, when there is one, is the only other warning.
    """
    if isinstance(reply, ProviderFailure):
        return ReflectOutcome((), ("[memory] reflection call failed; nothing written",))
    result = parse_reflection(reply, [r.id for r in shown_records], thread_key, run_id)
    if result is None:
        return ReflectOutcome((), ("[memory] reflection output rejected; nothing written",))
    if not result.durable:
        return ReflectOutcome((), ())
    plan = route_candidates(
        result, scopes, {r.id: r.scope_key for r in shown_records}, origin_visibility
    )
    return ReflectOutcome(plan.writes, (plan.memory_line,) if plan.memory_line else ())


def records_to_show(
    state: StoreState, scopes: RunScopes, query: str, now: int
) -> list[MemoryRecord]:
    """The existing records the extractor is shown (MEM-REFLECT.11).

    For each of the run's scopes, in org, repo, channel, user order, the scope's relevance-gated
    ranking of its active records for ``query`` cut to ``REFLECTION_SHOWN_PER_SCOPE`` -- and no
    record of any other scope.  The model takes the run's request as ``query`` and bumps no
    usage (both implementation-defined).
    """
    shown: list[MemoryRecord] = []
    for key in scopes.keys():
        shown.extend(
            rank_records(active_records(state, key), query, REFLECTION_SHOWN_PER_SCOPE, now)
        )
    return shown
