"""Hypothesis strategies and builders shared by the memory model tests (not a test module)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from hypothesis import strategies as st

from reference.memory.records import STATUSES, MemoryCandidate, MemoryRecord

DAY = 24 * 3600 * 1000
T0 = 1_780_000_000_000  # an arbitrary epoch-ms origin

# A small vocabulary so that generated queries and records actually collide, plus the
# characters that matter: case, punctuation, markup, whitespace variants, controls, astral.
WORDS = ["deploy", "Deploy", "make", "ship", "a", "alpha", "ci", "x", "db", "test", "on", "42"]
SPECIAL = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u2028",
    "\u2029",
    "\u00a0",
    "\ufeff",
    "\x00",
    "\x1b",
    "\x7f",
    "\x85",
    "\x9f",
    "<",
    ">",
    "&",
    "&lt;",
    "&amp;",
    "&gt;",
    "</background_memory>",
    "<background_memory>",
    "SYSTEM:",
    "Human:",
    "é",
    "café",
    "😀",
    "-",
    ".",
    '"',
    "*",
]

word = st.sampled_from(WORDS)
piece = st.one_of(word, st.sampled_from(SPECIAL))

# Text built from pieces (likely to match queries) or arbitrary unicode (everything else).
vocab_text = st.lists(piece, max_size=8).map(
    lambda ps: "".join(p + (" " if i % 2 else "") for i, p in enumerate(ps))
)
any_text = st.one_of(vocab_text, st.text(max_size=40))
query_text = st.one_of(
    st.lists(st.one_of(word, st.sampled_from([" ", "!", "é", "\n"])), max_size=6).map(" ".join),
    st.text(max_size=20),
)
nonblank_text = vocab_text.filter(lambda s: s.strip() != "")


def make_record(
    rid: str,
    *,
    scope_key: str = "org:acme",
    kind: str = "fact",
    text: str = "text",
    keywords: Sequence[str] = (),
    source_thread_key: str = "slack:C1:1",
    source_run_id: str | None = None,
    created_at: int = T0,
    last_used_at: int | None = None,
    use_count: int = 0,
    confidence: float | None = None,
    supersedes: str | None = None,
    status: str = "active",
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        scope_key=scope_key,
        kind=kind,
        text=text,
        keywords=tuple(keywords),
        source_thread_key=source_thread_key,
        source_run_id=source_run_id,
        created_at=created_at,
        last_used_at=last_used_at,
        use_count=use_count,
        confidence=confidence,
        supersedes=supersedes,
        status=status,
    )


@st.composite
def records(
    draw: Any,
    *,
    min_size: int = 0,
    max_size: int = 12,
    statuses: Sequence[str] = ("active",),
    scope_key: str = "org:acme",
    coarse_times: bool = True,
) -> list[MemoryRecord]:
    """Records with unique ids ``mem:<scope>:<i>``; coarse times make score/LRU ties likely."""
    n = draw(st.integers(min_size, max_size))
    out: list[MemoryRecord] = []
    times = (
        st.sampled_from([T0, T0 + 1000, T0 + DAY, T0 + 7 * DAY])
        if coarse_times
        else st.integers(T0, T0 + 30 * DAY)
    )
    for i in range(n):
        created = draw(times)
        used = draw(st.one_of(st.none(), times.map(partial(max, created))))
        out.append(
            make_record(
                f"mem:{scope_key}:{i + 1}",
                scope_key=scope_key,
                kind=draw(st.sampled_from(["fact", "summary"])),
                text=draw(any_text),
                keywords=draw(st.lists(st.one_of(word, st.text(max_size=8)), max_size=3)),
                source_thread_key=draw(
                    st.one_of(st.just("slack:C1:1"), st.text(min_size=1, max_size=12))
                ),
                created_at=created,
                last_used_at=used,
                use_count=draw(st.integers(0, 3)),
                status=draw(st.sampled_from(list(statuses))),
            )
        )
    return out


any_status_records = records(statuses=STATUSES)


def candidates(
    supersedes: st.SearchStrategy[str | None] | None = None,
) -> st.SearchStrategy[MemoryCandidate]:
    if supersedes is None:
        supersedes = st.none()
    return st.builds(
        MemoryCandidate,
        kind=st.sampled_from(["fact", "summary"]),
        text=nonblank_text,
        source_thread_key=st.sampled_from(["slack:C1:1", "slack:C2:9", "cli:local:3"]),
        keywords=st.one_of(st.none(), st.lists(word.map(str.lower), max_size=3).map(tuple)),
        source_run_id=st.one_of(st.none(), st.sampled_from(["run-1", "run-2"])),
        confidence=st.one_of(st.none(), st.floats(0.6, 1.0)),
        supersedes=supersedes,
    )
