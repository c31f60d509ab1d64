"""The extractor's reply: a strict envelope, lenient inside (MEM-REFLECT.7, MEM-REFLECT.8,
MEM-REFLECT.9, MEM-REFLECT.10, MEM-REFLECT.12, MEM-ROUTE.2)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from reference.jsonvalues import is_number, js_trim, parse_json_unbounded
from reference.memory.records import MemoryCandidate
from reference.memory.reflection.contract import (
    AUDIENCES,
    MAX_REFLECTION_CONFIDENCE,
    MAX_REFLECTION_FACTS,
    MAX_REFLECTION_KEYWORDS,
    MIN_REFLECTION_CONFIDENCE,
    NARROWEST_FIRST,
)
from reference.memory.reflection.redaction import redact_secrets
from reference.memory.scoring import collapse_whitespace


@dataclass(frozen=True)
class ReflectionCandidate:
    """A parsed candidate plus its audience tag, which never reaches the store (MEM-ROUTE.6)."""

    candidate: MemoryCandidate
    audience: str


@dataclass(frozen=True)
class ReflectionResult:
    """What survived validation: up to five facts and at most one summary (MEM-REFLECT.7,
    MEM-REFLECT.8, MEM-REFLECT.9, MEM-REFLECT.10)."""

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


def _unfence(raw: str) -> str:
    """The reply trimmed, without one wrapping ```` ```json ```` fence (MEM-REFLECT.7)."""
    stripped = js_trim(raw)
    m = _FENCE.match(stripped)
    return m.group(1) if m else stripped


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
    for a in NARROWEST_FIRST:
        if a in audiences:
            return a
    return "org"


def clean_reflection_text(text: str) -> str:
    """A fact's or the summary's text as reflection keeps it (MEM-REFLECT.12, MEM-REFLECT.10):
    secrets redacted, every run of (JavaScript) whitespace collapsed to one space, trimmed.

    Collapsing can join a span no detector matched into one that does (``Bearer`` and a token
    on separate lines), so the collapsed text is redacted once more: nothing credential-shaped
    survives (MEM-REFLECT.6).  Redaction never creates a whitespace run (every span it
    replaces starts and ends with a non-space character), so the result stays collapsed.
    """
    return redact_secrets(collapse_whitespace(redact_secrets(text)))


Clean = Callable[[str], str]


def _parse_fact(
    item: object, shown: frozenset[str], thread_key: str, run_id: str | None, clean: Clean
) -> ReflectionCandidate | None:
    """One fact as a candidate, or ``None`` when it does not stand (MEM-REFLECT.8,
    MEM-REFLECT.10)."""
    if not isinstance(item, dict):
        return None
    text = item.get("text")
    if not isinstance(text, str) or not js_trim(text):
        return None
    conf = item.get("confidence")
    if not is_number(conf):
        return None
    assert isinstance(conf, int | float)
    if not MIN_REFLECTION_CONFIDENCE <= conf <= MAX_REFLECTION_CONFIDENCE:
        return None
    supersedes = item.get("supersedes")
    audience = item.get("audience")
    return ReflectionCandidate(
        MemoryCandidate(
            kind="fact",
            text=clean(text),
            source_thread_key=thread_key,
            keywords=normalize_keywords(item.get("keywords")),
            source_run_id=run_id,
            confidence=float(conf),
            supersedes=supersedes if isinstance(supersedes, str) and supersedes in shown else None,
        ),
        audience if isinstance(audience, str) and audience in AUDIENCES else "org",
    )


def parse_reflection(
    raw: str,
    shown_ids: Sequence[str],
    thread_key: str,
    run_id: str | None,
    *,
    clean: Clean = clean_reflection_text,
) -> ReflectionResult | None:
    """Validate the extractor's reply (MEM-REFLECT.7, MEM-REFLECT.8, MEM-REFLECT.9, MEM-REFLECT.10,
    MEM-ROUTE.2).

    Strict envelope -- ``None`` (nothing is written) when the reply, after removing one
    wrapping ```` ```json ```` fence, is not JSON, not an object, or its ``facts`` is not an
    array -- valid JSON is read whatever its integers' length or its nesting depth
    (``parse_json_unbounded``).  Lenient inside -- each fact independently needs a non-blank
    string ``text`` and a
    numeric (never boolean) ``confidence`` in [0.6, 1], else it is dropped; the first five
    valid facts survive, in order.  A non-blank string ``summary`` adds one summary candidate.
    Texts go through ``clean`` -- by default ``clean_reflection_text``: redacted, whitespace
    runs collapsed, trimmed (MEM-REFLECT.12) -- ; keywords go through ``normalize_keywords``;
    ``supersedes`` survives only when it is one of ``shown_ids``; ``audience`` is user, repo,
    channel or org (anything else, or missing, is org) and the summary takes the narrowest
    audience of the surviving facts.  Every candidate carries ``thread_key`` and ``run_id``.
    """
    try:
        envelope = parse_json_unbounded(_unfence(raw))
    except ValueError:
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("facts"), list):
        return None
    shown = frozenset(shown_ids)
    facts: list[ReflectionCandidate] = []
    for item in envelope["facts"]:
        fact = _parse_fact(item, shown, thread_key, run_id, clean)
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
                text=clean(raw_summary),
                source_thread_key=thread_key,
                source_run_id=run_id,
            ),
            narrowest_audience([f.audience for f in facts]),
        )
    return ReflectionResult(tuple(facts), summary)
