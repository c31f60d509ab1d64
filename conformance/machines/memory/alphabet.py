"""The memory machine's alphabet: the vocabulary, texts, queries and batches its rules draw, the
invalid bodies and the requests exactly at each bound (``CASES``), the cases a target can take,
and the bundle of ids its answers fill (``ids``)."""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle

from conformance.drivers.memory.steps import step_requires
from conformance.scenario import Step

VOCAB = ("deploy", "staging", "alpha", "beta", "gamma", "prod")
#: Words outside ASCII: each is a tokenizer trap (ASCII ``[a-z0-9]+`` after lower-casing).
UNICODE_WORDS = (
    "café",  # precomposed é: token "caf"
    "cafe\u0301",  # e + combining acute: token "cafe"
    "straße",  # ß: tokens "stra", "e"
    "Москва",  # Cyrillic: no token at all
    "αλφα",  # Greek: no token
    "東京",  # CJK: no token
    "deploy🚀staging",  # an emoji between two words: tokens "deploy", "staging"
    "\u212aelvin",  # KELVIN SIGN lower-cases to ASCII k: token "kelvin"
    "\ua7dc",  # a capital of Unicode 16.0: lower-cases to U+019B only on a newer Unicode
    "\u019b",  # its lowercase: one dedup key with it there, two on an older Unicode
)
SCOPES = ("a", "b")

scopes = st.sampled_from(SCOPES)
# ASCII words twice: the shared vocabulary (dedup, matching) stays frequent; shrinking leans
# to the ASCII words (the start of the list).
words = st.lists(st.sampled_from(VOCAB + VOCAB + UNICODE_WORDS), min_size=1, max_size=3)


# The strategies the composite draws below use are built once, here: a strategy built inside a
# draw is built (and validated) again on every draw.  The draws, and so the runs a seed gives,
# are the same either way.
_text_styles = st.sampled_from(["plain", "plain", "upper", "spaces", "punct"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    ws = draw(words)
    style = draw(_text_styles)
    if style == "upper":
        ws = [w.upper() if i == 0 else w for i, w in enumerate(ws)]
    text = " ".join(ws)
    if style == "spaces":
        text = "  " + "   ".join(ws) + " "
    if style == "punct":
        text += "!"
    return text


_plain_queries = st.lists(
    st.sampled_from(
        (*VOCAB, "zeta", "a", "cafe", "kelvin", "CAFÉ", "Straße", "東京", "\u212aelvin", "deploy🚀")
    ),
    min_size=0,
    max_size=3,
).map(" ".join)
# One query in four repeats a word: a repeated query token counts each time (MEM-SCORE.2), so
# "deploy deploy alpha" ranks a deploy record above an alpha one.


def _first_twice(pair: tuple[str, str]) -> str:
    """``"a a b"`` for ``(a, b)`` (a named function: see ``machine.stopped``)."""
    return f"{pair[0]} {pair[0]} {pair[1]}"


_repeating_queries = st.tuples(st.sampled_from(VOCAB), st.sampled_from(VOCAB)).map(_first_twice)
queries = st.one_of(_plain_queries, _plain_queries, _plain_queries, _repeating_queries)
# Ids that can name no record of the scopes the machine writes: another (never written) scope
# of this run, a non-id string, a key of no run at all.  Guessing an id *inside* a written
# scope would assume the target's numbering, which is implementation-defined.
foreign_ids = st.sampled_from(["mem:{scope:z}:1", "nope", "mem:org:elsewhere:1"])

#: Long queries: ``deploy`` then spaces, 3999 (and 3998) UTF-16 units in all.
PAD_3999: dict[str, Any] = {"$concat": ["deploy", {"$repeat": " ", "times": 3993}]}
PAD_3998: dict[str, Any] = {"$concat": ["deploy", {"$repeat": " ", "times": 3992}]}
#: 24 distinct two-letter tokens no text of the machine contains: with one longer word they make
#: a query of 25 distinct tokens, one past the prefilter's 24 (the longest are kept).
FILLER_TOKENS = tuple(f"q{c}" for c in "abcdefghijklmnopqrstuvwx")


_kinds = st.sampled_from(["fact", "summary"])
_any_text = texts()
_threads = st.sampled_from(["thread:1", "thread:2"])
_keywords = st.lists(
    st.sampled_from((*VOCAB, "zeta", "Deploy-Staging", "Café", "東京", "prod🚀")),
    max_size=2,
)
_one_in_four = st.integers(0, 3)
_confidences = st.sampled_from([0, 0.5, 1])


def candidate(draw: st.DrawFn) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "kind": draw(_kinds),
        "text": draw(_any_text),
        "sourceThreadKey": draw(_threads),
    }
    if draw(st.booleans()):
        rec["keywords"] = draw(_keywords)
    # optional fields appear one time in four; "absent" is the simplest value, so shrinking
    # removes them
    if draw(_one_in_four) == 3:
        rec["sourceRunId"] = "run-1"
    if draw(_one_in_four) == 3:
        rec["confidence"] = draw(_confidences)
    return rec


@st.composite
def batches(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [candidate(draw) for _ in range(draw(st.integers(1, 4)))]


INVALID_BODIES: list[tuple[str, dict[str, Any]]] = [
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [{"kind": "opinion", "text": "x", "sourceThreadKey": "t"}],
        },
    ),
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [{"kind": "fact", "text": "   ", "sourceThreadKey": "t"}],
        },
    ),
    ("write", {"scopeKey": "{scope:a}", "records": [{"kind": "fact", "text": "deploy"}]}),
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [
                {"kind": "fact", "text": "deploy", "sourceThreadKey": "t", "confidence": 1.5}
            ],
        },
    ),
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [
                {"kind": "fact", "text": "deploy", "sourceThreadKey": "t", "keywords": [""]}
            ],
        },
    ),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 0}),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 2.5}),
    ("write", {"scopeKey": "{scope:a}", "records": "deploy"}),
    ("write", {"scopeKey": "{scope:a} x", "records": []}),
    ("write", {"scopeKey": "", "records": []}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": 0}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": 51}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": True}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": 7, "limit": 5}),
    ("retrieve", {"scopeKey": "{scope:a}", "limit": 5}),
    ("list", {"scopeKey": "{scope:a}", "limit": 0}),
    ("list", {"scopeKey": "{scope:a}", "limit": 5, "query": ["deploy"]}),
    ("forget", {"scopeKey": "{scope:a}", "id": ""}),
    ("forget", {"scopeKey": "{scope:a}", "id": "mem:x 1"}),
    # implementation-defined: null for an optional field (absent, or 400 naming it)
    ("list", {"scopeKey": "{scope:a}", "limit": 5, "query": None}),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": None}),
    # JavaScript integers: 5.0 is 5
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": 5.0}),
    # one past a bound (the bound itself: ``AT_THE_BOUNDS``)
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 10_001}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": {"$repeat": "x", "times": 4001}, "limit": 5}),
    # lengths are UTF-16 code units: 4000 code points, 4001 units (the last one astral) ...
    (
        "retrieve",
        {"scopeKey": "{scope:a}", "query": {"$concat": [PAD_3999, "🚀"]}, "limit": 5},
    ),
    # ... and 2001 astral characters, 4002 units
    ("retrieve", {"scopeKey": "{scope:a}", "query": {"$repeat": "🚀", "times": 2001}, "limit": 5}),
]

#: Valid requests exactly at a bound: limit 50, a query of 4000 UTF-16 units (ASCII, or ending
#: in an astral character), cap 10000.
AT_THE_BOUNDS: list[tuple[str, dict[str, Any]]] = [
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy alpha", "limit": 50}),
    ("list", {"scopeKey": "{scope:a}", "limit": 50, "query": "deploy"}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": {"$concat": [PAD_3999, "x"]}, "limit": 5}),
    (
        "retrieve",
        {"scopeKey": "{scope:a}", "query": {"$concat": [PAD_3998, "🚀"]}, "limit": 5},
    ),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 10_000}),
]


#: Candidates a write must refuse (400), put last in an otherwise valid batch.
INVALID_CANDIDATES: list[dict[str, Any]] = [
    {"kind": "opinion", "text": "deploy", "sourceThreadKey": "thread:1"},
    {"kind": "fact", "text": "   ", "sourceThreadKey": "thread:1"},
    {"kind": "fact", "text": "deploy"},
    {"kind": "fact", "text": "deploy", "sourceThreadKey": "thread:1", "confidence": 1.5},
]


#: The case lists :meth:`MemoryMachine._sendable` filters, by name.
CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "invalid": INVALID_BODIES,
    "bounds": AT_THE_BOUNDS,
}


@functools.cache
def _sendable_cases(which: str, have: frozenset[str]) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The cases of ``CASES[which]`` a target with capabilities ``have`` can take, in their
    order — worked out once per capability set, as the rules' preconditions ask on every rule
    draw."""
    return tuple((op, a) for op, a in CASES[which] if step_requires(Step(op=op, args=a)) <= have)


@functools.cache
def _sendable_strategy(
    which: str, have: frozenset[str]
) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """One of those cases (a strategy built once per case list and capability set)."""
    return st.sampled_from(_sendable_cases(which, have))


#: The ids ``/list`` and ``/retrieve`` answers showed (the machine never guesses an id).
ids = Bundle("ids")
