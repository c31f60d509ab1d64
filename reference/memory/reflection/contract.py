"""The extractor's contract: the limits of a reflection and the system prompt (MEM-REFLECT).

Every number the write path's clauses fix (MEM-REFLECT.1, .5, .7-.11) and the one system prompt
the extractor call carries (MEM-REFLECT.4), in one place.
"""

from __future__ import annotations

from typing import Final, Literal

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
NARROWEST_FIRST: Final[tuple[str, ...]] = ("user", "repo", "channel", "org")

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
