"""Which runs are distilled, with which model, and the extractor's one input message.

MEM-REFLECT.1 (the gate), MEM-REFLECT.3 (the model), MEM-REFLECT.5 (the input: existing
records, then the transcript's tail) with MEM-REFLECT.6 (redacted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from reference.memory.budget import utf16_length
from reference.memory.records import MemoryRecord
from reference.memory.reflection.contract import (
    NO_REFLECT_AGENTS,
    OMITTED_MARKER,
    REFLECT_MIN_TURNS,
    REFLECTION_TRANSCRIPT_MAX_UNITS,
)
from reference.memory.reflection.redaction import redact_secrets


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
