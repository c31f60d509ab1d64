"""The write path: post-run reflection, its output validation and audience routing.

MEM-REFLECT (seed §9-13): which runs are distilled, the one extractor call and its input
(existing records, then the transcript, tail-capped and redacted), and the strict-envelope /
lenient-inside parsing of the extractor's reply.  MEM-ROUTE (seed §14, §23): where each
surviving candidate is written -- its audience's scope when the run has it, a correction to its
target's scope, and the write gate that narrows org writes from non-public origins -- and the
one ``[memory]`` line that reports what the gate did.

The provider call and the store writes are I/O and stay outside: ``plan_reflection`` says
which call to make (or why none), ``finish_reflection`` turns the call's outcome into the
per-scope writes and the warnings.

The parts: :mod:`.contract` (the limits and the system prompt), :mod:`.redaction`,
:mod:`.extractor` (the gate, the model, the input message), :mod:`.reply` (parsing the reply),
:mod:`.routing` (where each candidate is written) and :mod:`.plan` (the whole pass).
"""

from __future__ import annotations

from reference.memory.reflection.contract import (
    AUDIENCES,
    MAX_REFLECTION_CONFIDENCE,
    MAX_REFLECTION_FACTS,
    MAX_REFLECTION_KEYWORDS,
    MIN_REFLECTION_CONFIDENCE,
    NO_REFLECT_AGENTS,
    OMITTED_MARKER,
    REDACTION_MARKER,
    REFLECT_MIN_TURNS,
    REFLECTION_MAX_TOKENS,
    REFLECTION_SHOWN_PER_SCOPE,
    REFLECTION_SYSTEM,
    REFLECTION_TRANSCRIPT_MAX_UNITS,
    Audience,
)
from reference.memory.reflection.extractor import (
    EXISTING_HEADER,
    NO_EXISTING,
    TRANSCRIPT_HEADER,
    ImagePart,
    TextPart,
    TranscriptTurn,
    build_reflection_input,
    existing_record_line,
    parse_model_ref,
    reflection_model,
    render_transcript,
    render_turn,
    should_reflect,
    tail_cap,
    utf16_tail,
)
from reference.memory.reflection.plan import (
    ProviderFailure,
    ReflectionCall,
    ReflectOutcome,
    SkipReflection,
    finish_reflection,
    plan_reflection,
    records_to_show,
)
from reference.memory.reflection.redaction import (
    redact_secrets,
)
from reference.memory.reflection.reply import (
    ReflectionCandidate,
    ReflectionResult,
    clean_reflection_text,
    narrowest_audience,
    normalize_keywords,
    parse_reflection,
)
from reference.memory.reflection.routing import (
    OriginToken,
    RouteDecision,
    RouteReason,
    RoutingPlan,
    RunScopes,
    ScopeWrite,
    gate_line,
    normalize_origin,
    route_candidates,
    route_decision,
)

__all__ = [
    "AUDIENCES",
    "Audience",
    "EXISTING_HEADER",
    "ImagePart",
    "MAX_REFLECTION_CONFIDENCE",
    "MAX_REFLECTION_FACTS",
    "MAX_REFLECTION_KEYWORDS",
    "MIN_REFLECTION_CONFIDENCE",
    "NO_EXISTING",
    "NO_REFLECT_AGENTS",
    "OMITTED_MARKER",
    "OriginToken",
    "ProviderFailure",
    "REDACTION_MARKER",
    "REFLECTION_MAX_TOKENS",
    "REFLECTION_SHOWN_PER_SCOPE",
    "REFLECTION_SYSTEM",
    "REFLECTION_TRANSCRIPT_MAX_UNITS",
    "REFLECT_MIN_TURNS",
    "ReflectOutcome",
    "ReflectionCall",
    "ReflectionCandidate",
    "ReflectionResult",
    "RouteDecision",
    "RouteReason",
    "RoutingPlan",
    "RunScopes",
    "ScopeWrite",
    "SkipReflection",
    "TRANSCRIPT_HEADER",
    "TextPart",
    "TranscriptTurn",
    "build_reflection_input",
    "clean_reflection_text",
    "existing_record_line",
    "finish_reflection",
    "gate_line",
    "narrowest_audience",
    "normalize_keywords",
    "normalize_origin",
    "parse_model_ref",
    "parse_reflection",
    "plan_reflection",
    "records_to_show",
    "redact_secrets",
    "reflection_model",
    "render_transcript",
    "render_turn",
    "route_candidates",
    "route_decision",
    "should_reflect",
    "tail_cap",
    "utf16_tail",
]
