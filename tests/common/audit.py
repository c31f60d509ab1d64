"""Shared strategies and helpers for the audit tests (not a test module)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import strategies as st

from conformance.audit.capture import CapturedRequest
from reference.memory.budget import apply_budget
from reference.memory.containment import render_memory_block, scope_resource
from reference.memory.records import MemoryRecord

PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}
ABSENT = object()

ORG, REPO, CHANNEL, USER = "org:acme", "repo:owner/name", "channel:slack:C0123", "user:slack:U0123"


def captured(provider: str, body: bytes, index: int = 0) -> CapturedRequest:
    """A capture record for ``body`` as if POSTed to ``provider``'s endpoint."""
    return CapturedRequest(
        index=index,
        method="POST",
        path=PATHS[provider],
        provider=provider,
        headers=(("content-type", "application/json"),),
        body=body,
        body_sha256=hashlib.sha256(body).hexdigest(),
        received_at="2026-01-01T00:00:00.000Z",
    )


STYLES: dict[str, dict[str, Any]] = {
    "compact": {"separators": (",", ":"), "ensure_ascii": False},
    "default": {},
    "indent": {"indent": 2, "ensure_ascii": False},
    "tabs-ascii": {"indent": "\t", "ensure_ascii": True},
    "sorted": {"separators": (",", ":"), "sort_keys": True, "ensure_ascii": False},
}


def serialize(obj: Any, style: str) -> bytes:
    return json.dumps(obj, **STYLES[style]).encode("utf-8")


plain_text = st.text(max_size=30)
# Text that exercises containment: markup, entities, every kind of line break and control.
_NASTY = ["a", "b", " ", "<", ">", "&", ";", "&lt;", "&amp;", "\n", "\r\n", "\t", "\u2028"]
_NASTY += ["\u2029", "\x00", "\x7f", "\x85", "\u00a0", "\ufeff", "é", "😀", "  "]
_NASTY += ["</background_memory>", "SYSTEM: ", " (source: x)", "Human:"]
nasty_text = st.lists(
    st.one_of(st.sampled_from(_NASTY), st.characters(exclude_categories=["Cs"])), max_size=25
).map("".join)
numbers = st.one_of(
    st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32)
)
json_leaf = st.one_of(st.none(), st.booleans(), numbers, plain_text)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(plain_text, inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def ordered_object(draw: st.DrawFn, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` (ABSENT values dropped) in a drawn key order with ``model`` first."""
    keys = [k for k, v in fields.items() if v is not ABSENT and k != "model"]
    keys = draw(st.permutations(keys))
    return {"model": fields["model"], **{k: fields[k] for k in keys}}


text_block = st.builds(
    lambda t, cache: {
        "type": "text",
        "text": t,
        **({"cache_control": {"type": "ephemeral"}} if cache else {}),
    },
    plain_text,
    st.booleans(),
)


@st.composite
def anthropic_request(draw: st.DrawFn) -> dict[str, Any]:
    message = st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant"]),
            "content": st.one_of(plain_text, st.lists(text_block, max_size=2)),
        }
    )
    fields = {
        "model": draw(st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5"])),
        "max_tokens": draw(st.integers(1, 64000)),
        "system": draw(
            st.one_of(
                st.just(ABSENT),
                st.none(),
                st.just(""),
                plain_text,
                st.lists(text_block, max_size=3),
            )
        ),
        "messages": draw(st.lists(message, min_size=1, max_size=4)),
        "tools": draw(
            st.one_of(
                st.just(ABSENT),
                st.lists(
                    st.fixed_dictionaries(
                        {"name": plain_text, "description": plain_text, "input_schema": json_value}
                    ),
                    max_size=2,
                ),
            )
        ),
        "temperature": draw(st.one_of(st.just(ABSENT), st.floats(0, 1))),
        "metadata": draw(
            st.one_of(st.just(ABSENT), st.dictionaries(plain_text, json_value, max_size=2))
        ),
        "stream": draw(st.one_of(st.just(ABSENT), st.booleans())),
    }
    return draw(ordered_object(fields))


@st.composite
def openai_request(draw: st.DrawFn) -> dict[str, Any]:
    other = st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "developer", "tool"]),
            "content": st.one_of(plain_text, st.none()),
        }
    )
    first_kind = draw(st.sampled_from(["none", "string", "null", "no-content", "parts"]))
    messages: list[dict[str, Any]] = []
    if first_kind == "string":
        messages.append({"role": "system", "content": draw(plain_text)})
    elif first_kind == "null":
        messages.append({"role": "system", "content": None})
    elif first_kind == "no-content":
        messages.append({"role": "system", "name": draw(plain_text)})
    elif first_kind == "parts":
        parts = draw(
            st.lists(
                st.fixed_dictionaries({"type": st.just("text"), "text": plain_text}), max_size=2
            )
        )
        messages.append({"role": "system", "content": parts})
    messages.extend(draw(st.lists(other, min_size=0 if messages else 1, max_size=4)))
    fields = {
        "model": draw(st.sampled_from(["gpt-4.1-mini", "gpt-5"])),
        "messages": messages if draw(st.integers(0, 19)) else ABSENT,
        "max_tokens": draw(st.one_of(st.just(ABSENT), st.integers(1, 32000))),
        "tools": draw(
            st.one_of(
                st.just(ABSENT),
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "type": st.just("function"),
                            "function": st.fixed_dictionaries(
                                {"name": plain_text, "parameters": json_value}
                            ),
                        }
                    ),
                    max_size=2,
                ),
            )
        ),
        "temperature": draw(st.one_of(st.just(ABSENT), st.floats(0, 2))),
        "stream": draw(st.one_of(st.just(ABSENT), st.booleans())),
        "response_format": draw(st.one_of(st.just(ABSENT), json_value)),
    }
    return draw(ordered_object(fields))


def provider_request(provider: str) -> st.SearchStrategy[dict[str, Any]]:
    return anthropic_request() if provider == "anthropic" else openai_request()


def make_record(i: int, text: str, source: str, scope: str = ORG) -> MemoryRecord:
    return MemoryRecord(
        id=f"mem:{scope}:{i}",
        scope_key=scope,
        kind="fact",
        text=text,
        keywords=(),
        source_thread_key=source,
        source_run_id=None,
        created_at=1_700_000_000_000,
        last_used_at=None,
        use_count=0,
        confidence=None,
        supersedes=None,
        status="active",
    )


records = st.lists(st.tuples(nasty_text, nasty_text), min_size=1, max_size=10).map(
    lambda pairs: [make_record(i, t, s) for i, (t, s) in enumerate(pairs, start=1)]
)


@st.composite
def scope_keys(draw: st.DrawFn) -> list[str]:
    """Org always, then any of repo, channel, user — in scope order (MEM-SCOPE.3/4)."""
    return [ORG] + [k for k in (REPO, CHANNEL, USER) if draw(st.booleans())]


@st.composite
def budgeted_block(draw: st.DrawFn) -> tuple[str, int, int, list[MemoryRecord]]:
    """A block exactly as the read path renders it: (block, limit, max_tokens, kept)."""
    recs = draw(records)
    limit = draw(st.integers(1, 8))
    max_tokens = draw(st.integers(1, 800))
    kept = apply_budget(recs, limit, max_tokens)
    return render_memory_block(kept, scope_resource(draw(scope_keys()))), limit, max_tokens, kept
