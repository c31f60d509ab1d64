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
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from reference.ledger.credentials import DETECTORS
from reference.memory.budget import utf16_length
from reference.memory.engine import rank_records
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.scopes import SCOPE_ORDER
from reference.memory.store import StoreState, active_records

# --------------------------------------------------------------------------- constants

REFLECT_MIN_TURNS: Final = 4
NO_REFLECT_AGENTS: Final = frozenset({"review"})
MIN_REFLECTION_CONFIDENCE: Final = 0.6
MAX_REFLECTION_CONFIDENCE: Final = 1.0
MAX_REFLECTION_FACTS: Final = 5
MAX_REFLECTION_KEYWORDS: Final = 10
REFLECTION_TRANSCRIPT_MAX_UNITS: Final = 24_000
OMITTED_MARKER: Final = "\u2026(earlier turns omitted)\u2026"
REDACTION_MARKER: Final = "[REDACTED]"
REFLECTION_MAX_TOKENS: Final = 1024
REFLECTION_SHOWN_PER_SCOPE: Final = 8

Audience = Literal["user", "repo", "channel", "org"]
AUDIENCES: Final[tuple[str, ...]] = ("user", "repo", "channel", "org")
# Narrowest first: the summary inherits the first of these any surviving fact carried.
_NARROWEST_FIRST: Final[tuple[str, ...]] = ("user", "repo", "channel", "org")

REFLECTION_SYSTEM: Final = """\
You distil a finished assistant run into durable knowledge for later runs.
Reply with one JSON object and nothing else:
{"facts": [{"text": "...", "confidence": 0.6-1, "keywords": ["..."], "audience": "org",
"supersedes": "<id>"}], "summary": "..."}
Rules:
- At most 5 facts. Each fact is one self-contained statement that will still be true next week.
- confidence is your certainty from 0.6 to 1; leave out anything you are less sure of.
- Pull-request state is ephemeral by definition and is never a fact: PR numbers, commit SHAs,
  test counts, CI results, review verdicts, "approved at ..." and similar snapshots.
- audience: "user" for something about the requesting person (their preferences, habits,
  conventions or setup; write it as "this user ..."); "repo" for something specific to the
  repository the run worked in (its code, conventions, commands, layout); "channel" for what
  this channel is for or how it works; "org" for shared knowledge. Default "org".
- supersedes: only the id of an existing record listed in the input that this fact replaces.
- summary: one impersonal sentence about what the thread established; personal details belong
  in "user" facts, never in the summary.
- Never copy secrets, tokens, passwords or keys into any field.
"""
"""The extractor's system prompt (MEM-REFLECT.4): our own wording of the seed's rules."""


# --------------------------------------------------------------------------- the gate


def should_reflect(tool_calls: int, history_turns: int, agent_name: str | None = None) -> bool:
    """Whether a finished run is distilled at all (MEM-REFLECT.1).

    Never for an agent in ``NO_REFLECT_AGENTS`` (a review), however much work it did;
    otherwise only when the run made at least one tool call or the thread already had at least
    ``REFLECT_MIN_TURNS`` prior turns.  No agent name means the work-based gate alone.
    """
    if agent_name is not None and agent_name in NO_REFLECT_AGENTS:
        return False
    return tool_calls >= 1 or history_turns >= REFLECT_MIN_TURNS


def parse_model_ref(ref: str) -> str | None:
    """``<provider>/<model>`` with both parts non-empty and no whitespace, else ``None``."""
    provider, sep, model = ref.partition("/")
    if not sep or not provider or not model or any(c.isspace() for c in ref):
        return None
    return ref


def reflection_model(memory_model: str | None, run_model: str) -> str | None:
    """The model the extractor call uses (MEM-REFLECT.3).

    ``memory.model`` when configured (``None`` if it does not parse -- the caller warns and
    skips the reflection), else the run's own resolved model; never a literal of its own.
    """
    if memory_model is None:
        return run_model
    return parse_model_ref(memory_model)


# --------------------------------------------------------------------------- redaction


def _redact_once(text: str) -> str:
    for name, pattern in DETECTORS:
        if name == "pem_private_key":
            text = _redact_pem(text, pattern)
        else:
            text = pattern.sub(REDACTION_MARKER, text)
    return text


_PEM_END: Final = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")


def _redact_pem(text: str, begin: re.Pattern[str]) -> str:
    out: list[str] = []
    pos = 0
    while True:
        m = begin.search(text, pos)
        if m is None:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos : m.start()])
        out.append(REDACTION_MARKER)
        end = _PEM_END.search(text, m.end())
        if end is None:
            return "".join(out)
        pos = end.end()


def redact_secrets(text: str) -> str:
    """Replace every credential-shaped span with ``REDACTION_MARKER`` (MEM-REFLECT.6).

    The spans are the ledger's credential detectors (``reference.ledger.credentials``); a PEM
    private key is replaced from its BEGIN line through its END line (to the end of the text
    when the END line is missing).  The passes repeat until nothing matches: removing one span
    can expose another (a key glued to the end of a redacted one).  Every match is longer than
    the marker, so the loop ends; the result holds no span any detector matches.
    """
    while True:
        out = _redact_once(text)
        if out == text:
            return out
        text = out


# --------------------------------------------------------------------------- the extractor input


@dataclass(frozen=True)
class TextPart:
    """Text content of one transcript turn."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image attached to a turn; reflection never forwards it (MEM-REFLECT.5)."""

    media_type: str = "image/png"
    data: str = ""


@dataclass(frozen=True)
class TranscriptTurn:
    """One turn of the thread: history, the request and the answer are all turns."""

    role: str
    parts: tuple[TextPart | ImagePart, ...]


def render_turn(turn: TranscriptTurn) -> str | None:
    """``<role>: <text parts joined by newlines>``; ``None`` for a turn with no text."""
    texts = [p.text for p in turn.parts if isinstance(p, TextPart)]
    if not texts:
        return None
    return f"{turn.role}: " + "\n".join(texts)


def render_transcript(turns: Sequence[TranscriptTurn]) -> str:
    """The thread as text, turns separated by a blank line, images dropped (MEM-REFLECT.5)."""
    rendered = (render_turn(t) for t in turns)
    return "\n\n".join(r for r in rendered if r is not None)


def utf16_tail(text: str, units: int) -> str:
    """The longest suffix of ``text`` that is at most ``units`` UTF-16 code units long.

    It is exactly ``units`` long unless the cut would split a surrogate pair, in which case
    the half character is left out and the suffix is one unit shorter.
    """
    total = 0
    i = len(text)
    while i > 0:
        w = 2 if ord(text[i - 1]) > 0xFFFF else 1
        if total + w > units:
            break
        total += w
        i -= 1
    return text[i:]


def tail_cap(transcript: str, max_units: int = REFLECTION_TRANSCRIPT_MAX_UNITS) -> str:
    """Keep the end of a long transcript (MEM-REFLECT.5).

    At most ``max_units`` UTF-16 units: unchanged; otherwise ``OMITTED_MARKER``, a newline and
    ``utf16_tail(transcript, max_units)`` -- the decision usually lives at the end.
    """
    if utf16_length(transcript) <= max_units:
        return transcript
    return f"{OMITTED_MARKER}\n{utf16_tail(transcript, max_units)}"


def existing_record_line(record: MemoryRecord) -> str:
    """``- <id> [<kind>]: <text>``, the text verbatim (MEM-REFLECT.5)."""
    return f"- {record.id} [{record.kind}]: {record.text}"


EXISTING_HEADER: Final = "Existing records (use an id in supersedes to replace that record):"
NO_EXISTING: Final = "Existing records: (none)"
TRANSCRIPT_HEADER: Final = "Transcript:"


def build_reflection_input(
    existing_records: Sequence[MemoryRecord],
    transcript_turns: Sequence[TranscriptTurn],
    max_transcript_units: int = REFLECTION_TRANSCRIPT_MAX_UNITS,
) -> str:
    """The extractor's single user message (MEM-REFLECT.5, MEM-REFLECT.6).

    First the existing records, one ``existing_record_line`` each in the given order (the
    caller passes each scope's relevant records, so the extractor can name an id in
    ``supersedes``), then the transcript: every turn's text with images dropped, redacted,
    then cut by ``tail_cap`` to its last ``max_transcript_units`` UTF-16 units.  The whole
    message is redacted once more before it is returned, so nothing credential-shaped leaves
    the process -- not even a fragment the cut produced.
    """
    if existing_records:
        head = "\n".join([EXISTING_HEADER, *(existing_record_line(r) for r in existing_records)])
    else:
        head = NO_EXISTING
    transcript = tail_cap(redact_secrets(render_transcript(transcript_turns)), max_transcript_units)
    return redact_secrets(f"{head}\n\n{TRANSCRIPT_HEADER}\n{transcript}")


# --------------------------------------------------------------------------- parsing the reply


@dataclass(frozen=True)
class ReflectionCandidate:
    """A parsed candidate plus its audience tag, which never reaches the store (MEM-ROUTE.6)."""

    candidate: MemoryCandidate
    audience: str


@dataclass(frozen=True)
class ReflectionResult:
    """What survived validation: up to five facts and at most one summary (MEM-REFLECT.7-10)."""

    facts: tuple[ReflectionCandidate, ...]
    summary: ReflectionCandidate | None

    @property
    def candidates(self) -> tuple[ReflectionCandidate, ...]:
        """Facts in the extractor's order, then the summary."""
        return self.facts + ((self.summary,) if self.summary is not None else ())

    @property
    def durable(self) -> bool:
        """False when there is nothing to write at all (MEM-ROUTE.1)."""
        return bool(self.facts) or self.summary is not None


_FENCE: Final = re.compile(r"\A```(?:json\b)?\s*(.*?)\s*```\Z", re.DOTALL | re.IGNORECASE)
JS_TRIM_CHARS: Final = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(s: str) -> str:
    """JavaScript ``String.prototype.trim``: strip ECMAScript whitespace and line terminators."""
    return s.strip(JS_TRIM_CHARS)


def _reject_constant(name: str) -> object:
    raise ValueError(f"not JSON: {name}")


def parse_json_strict(text: str) -> object:
    """JSON as ``JSON.parse`` reads it: ``NaN``/``Infinity`` are not JSON (ValueError)."""
    return json.loads(text, parse_constant=_reject_constant)


def _unfence(raw: str) -> str:
    stripped = js_trim(raw)
    m = _FENCE.match(stripped)
    return m.group(1) if m else stripped


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def normalize_keywords(value: object) -> tuple[str, ...] | None:
    """Keywords kept only as strings: trimmed, redacted, lower-cased, deduplicated, first ten.

    ``None`` (omitted, so the store tokenizes the text) when ``value`` is not an array or
    nothing non-empty survives.  Non-string elements are skipped (MEM-REFLECT.9).
    """
    if not isinstance(value, list):
        return None
    out: dict[str, None] = {}
    for item in value:
        if not isinstance(item, str):
            continue
        kw = js_trim(redact_secrets(js_trim(item)).lower())
        if kw:
            out.setdefault(kw, None)
        if len(out) >= MAX_REFLECTION_KEYWORDS:
            break
    return tuple(out) if out else None


def narrowest_audience(audiences: Sequence[str]) -> str:
    """user > repo > channel > org: the narrowest audience present, ``org`` for none."""
    for a in _NARROWEST_FIRST:
        if a in audiences:
            return a
    return "org"


def _parse_fact(
    item: object, shown: frozenset[str], thread_key: str, run_id: str | None
) -> ReflectionCandidate | None:
    if not isinstance(item, dict):
        return None
    text = item.get("text")
    if not isinstance(text, str) or not js_trim(text):
        return None
    conf = item.get("confidence")
    if not _is_number(conf):
        return None
    assert isinstance(conf, int | float)
    if not MIN_REFLECTION_CONFIDENCE <= conf <= MAX_REFLECTION_CONFIDENCE:
        return None
    supersedes = item.get("supersedes")
    audience = item.get("audience")
    return ReflectionCandidate(
        MemoryCandidate(
            kind="fact",
            text=redact_secrets(js_trim(text)),
            source_thread_key=thread_key,
            keywords=normalize_keywords(item.get("keywords")),
            source_run_id=run_id,
            confidence=float(conf),
            supersedes=supersedes if isinstance(supersedes, str) and supersedes in shown else None,
        ),
        audience if isinstance(audience, str) and audience in AUDIENCES else "org",
    )


def parse_reflection(
    raw: str, shown_ids: Sequence[str], thread_key: str, run_id: str | None
) -> ReflectionResult | None:
    """Validate the extractor's reply (MEM-REFLECT.7-10, MEM-ROUTE.2).

    Strict envelope -- ``None`` (nothing is written) when the reply, after removing one
    wrapping ```` ```json ```` fence, is not JSON, not an object, or its ``facts`` is not an
    array.  Lenient inside -- each fact independently needs a non-blank string ``text`` and a
    numeric (never boolean) ``confidence`` in [0.6, 1], else it is dropped; the first five
    valid facts survive, in order.  A non-blank string ``summary`` adds one summary candidate.
    Texts are trimmed and redacted; keywords go through ``normalize_keywords``;
    ``supersedes`` survives only when it is one of ``shown_ids``; ``audience`` is user, repo,
    channel or org (anything else, or missing, is org) and the summary takes the narrowest
    audience of the surviving facts.  Every candidate carries ``thread_key`` and ``run_id``.
    """
    try:
        envelope = parse_json_strict(_unfence(raw))
    except (ValueError, RecursionError):
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("facts"), list):
        return None
    shown = frozenset(shown_ids)
    facts: list[ReflectionCandidate] = []
    for item in envelope["facts"]:
        fact = _parse_fact(item, shown, thread_key, run_id)
        if fact is not None:
            facts.append(fact)
        if len(facts) >= MAX_REFLECTION_FACTS:
            break
    summary: ReflectionCandidate | None = None
    raw_summary = envelope.get("summary")
    if isinstance(raw_summary, str) and js_trim(raw_summary):
        summary = ReflectionCandidate(
            MemoryCandidate(
                kind="summary",
                text=redact_secrets(js_trim(raw_summary)),
                source_thread_key=thread_key,
                source_run_id=run_id,
            ),
            narrowest_audience([f.audience for f in facts]),
        )
    return ReflectionResult(tuple(facts), summary)


# --------------------------------------------------------------------------- routing

OriginToken = Literal["public", "machine", "private", "dm", "unknown", "unstamped"]
_DM_VALUES: Final = frozenset({"dm", "group_dm", "mpim", "im"})


def normalize_origin(visibility: str | None) -> str:
    """The origin channel's visibility as one fixed token (MEM-ROUTE.5).

    ``public``, ``machine`` and ``private`` as given; ``dm`` for a direct or group direct
    message (``dm``, ``group_dm``, ``mpim``, ``im``); ``unstamped`` when the run carries no
    stamp; ``unknown`` for any other value.
    """
    if visibility is None or visibility == "":
        return "unstamped"
    if visibility in ("public", "machine", "private"):
        return visibility
    if visibility in _DM_VALUES:
        return "dm"
    return "unknown"


@dataclass(frozen=True)
class RunScopes:
    """The scope keys one run has: always the org's, the others when the run has that input."""

    org: str
    user: str | None = None
    repo: str | None = None
    channel: str | None = None

    def of_kind(self, kind: str) -> str | None:
        """The run's scope key of ``kind`` (org/repo/channel/user), or ``None``."""
        return {"org": self.org, "user": self.user, "repo": self.repo, "channel": self.channel}.get(
            kind
        )

    def keys(self) -> tuple[str, ...]:
        """The run's scope keys in org, repo, channel, user order."""
        out = (self.of_kind(k) for k in SCOPE_ORDER)
        return tuple(k for k in out if k is not None)


RouteReason = Literal[
    "audience", "fallback_org", "supersedes", "narrowed_user", "narrowed_channel", "dropped"
]


@dataclass(frozen=True)
class RouteDecision:
    """Where one candidate went and why (MEM-ROUTE.3-5)."""

    index: int
    audience: str
    target: str | None
    reason: str
    supersedes_dropped: bool


@dataclass(frozen=True)
class ScopeWrite:
    """One ``store.write`` call: a scope and its candidates, audience tags stripped."""

    scope_key: str
    candidates: tuple[MemoryCandidate, ...]


@dataclass(frozen=True)
class RoutingPlan:
    """Every write of one reflection plus the gate's report line (MEM-ROUTE.1-7)."""

    writes: tuple[ScopeWrite, ...]
    decisions: tuple[RouteDecision, ...]
    memory_line: str | None


def _narrow(origin: str, scopes: RunScopes) -> tuple[str | None, str]:
    order = ("user", "channel") if origin == "dm" else ("channel", "user")
    for kind in order:
        key = scopes.of_kind(kind)
        if key is not None:
            return key, f"narrowed_{kind}"
    return None, "dropped"


def route_candidates(
    result: ReflectionResult,
    scopes: RunScopes,
    shown_record_scopes: Mapping[str, str],
    origin_visibility: str | None,
) -> RoutingPlan:
    """Route every surviving candidate to the scope it is written to (MEM-ROUTE.1-7).

    1. A candidate whose ``supersedes`` names a shown record of one of the run's scopes goes
       to that record's scope, whatever its audience (the pointer is kept).  A pointer to a
       record the routing cannot place is removed and the candidate is routed by audience.
    2. Otherwise the audience picks the scope -- user, repo, channel -- when the run has it,
       and the org scope when it does not (or the audience is org).
    3. The write gate: an org write is allowed from a ``public`` or ``machine`` origin only.
       From a ``dm`` origin it is narrowed to the user's scope (else the channel's); from a
       ``private``, ``unknown`` or unstamped origin to the channel's (else the user's); never
       to repo and never widened.  A narrowed candidate loses its ``supersedes``.  With
       neither scope available the candidate is dropped -- and counted, never silently.
       User, repo and channel writes are never moved.
    4. The audience tag is stripped: each ``ScopeWrite`` holds plain ``MemoryCandidate``s, one
       per target scope in org, repo, channel, user order, candidates in their original order.
       Nothing durable means no writes at all.

    ``memory_line`` is ``None`` when the gate changed nothing, else the one ``[memory]`` line
    (``gate_line``): counts and fixed reason tokens, never a candidate's text.
    """
    origin = normalize_origin(origin_visibility)
    run_keys = set(scopes.keys())
    decisions: list[RouteDecision] = []
    routed: list[tuple[str, MemoryCandidate]] = []
    for i, rc in enumerate(result.candidates):
        cand = rc.candidate
        target: str | None
        reason: str
        sup_scope = shown_record_scopes.get(cand.supersedes) if cand.supersedes else None
        if sup_scope is not None and sup_scope in run_keys:
            target, reason = sup_scope, "supersedes"
        else:
            if cand.supersedes:
                cand = replace(cand, supersedes=None)
            own = scopes.of_kind(rc.audience) if rc.audience != "org" else scopes.org
            if own is not None:
                target, reason = own, "audience"
            else:
                target, reason = scopes.org, "fallback_org"
        dropped_sup = False
        if target == scopes.org and origin not in ("public", "machine"):
            target, reason = _narrow(origin, scopes)
            if cand.supersedes:
                cand = replace(cand, supersedes=None)
                dropped_sup = True
        decisions.append(RouteDecision(i, rc.audience, target, reason, dropped_sup))
        if target is not None:
            routed.append((target, cand))
    writes: list[ScopeWrite] = []
    for key in scopes.keys():
        batch = tuple(c for t, c in routed if t == key)
        if batch:
            writes.append(ScopeWrite(key, batch))
    return RoutingPlan(tuple(writes), tuple(decisions), gate_line(origin, decisions))


def gate_line(origin: str, decisions: Sequence[RouteDecision]) -> str | None:
    """The write gate's one report line, or ``None`` if it narrowed nothing (MEM-ROUTE.7).

    ``[memory] reflection write gate: origin=<token> candidates=<n> written=<n> narrowed=<n>
    dropped=<n> supersedes_dropped=<n> reasons=<token>,…`` where each reason token is
    ``org_denied_<origin>_to_user``, ``org_denied_<origin>_to_channel`` or
    ``org_denied_<origin>_no_scope`` with a ``:<count>`` suffix.  Only fixed tokens and
    integers: a candidate's text never appears.
    """
    narrowed = [d for d in decisions if d.reason in ("narrowed_user", "narrowed_channel")]
    dropped = [d for d in decisions if d.reason == "dropped"]
    if not narrowed and not dropped:
        return None
    counts: dict[str, int] = {}
    for d in decisions:
        suffix = {"narrowed_user": "to_user", "narrowed_channel": "to_channel"}.get(d.reason)
        if d.reason == "dropped":
            suffix = "no_scope"
        if suffix is not None:
            tok = f"org_denied_{origin}_{suffix}"
            counts[tok] = counts.get(tok, 0) + 1
    reasons = ",".join(f"{t}:{n}" for t, n in counts.items())
    written = sum(1 for d in decisions if d.target is not None)
    sup = sum(1 for d in decisions if d.supersedes_dropped)
    return (
        f"[memory] reflection write gate: origin={origin} candidates={len(decisions)}"
        f" written={written} narrowed={len(narrowed)} dropped={len(dropped)}"
        f" supersedes_dropped={sup} reasons={reasons}"
    )


# --------------------------------------------------------------------------- the whole pass


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
    """Decide the reflection call of a finished run (MEM-REFLECT.1-5).

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
    """Turn the extractor's reply into per-scope writes (MEM-REFLECT.2, MEM-ROUTE.1-7).

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
