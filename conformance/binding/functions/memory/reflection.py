"""Reflection (``reference/memory/reflection/``): shouldReflect, parseReflection, redactSecrets."""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import strategies as st

from conformance.binding.codec import candidate_json
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import SECRETS, texts, words
from conformance.binding.judge import Judged, ok, widened
from reference.jsonvalues import js_trim
from reference.memory.reflection import (
    clean_reflection_text,
    parse_reflection,
    redact_secrets,
    should_reflect,
)
from reference.memory.scoring import collapse_whitespace

#: the reference rules the judges below add to the seed's (``widened``)
REFLECT_SPACES = ("MEM-REFLECT.12",)
REFLECT_FENCE = ("MEM-REFLECT.13",)
REFLECT_PATTERNS = ("MEM-REFLECT.14",)
SPACES_NOTE = "a text's inner whitespace runs collapsed or kept (MEM-REFLECT.12)"
FENCE_NOTE = "a non-canonical fence unwrapped or refused (MEM-REFLECT.13)"
PATTERNS_NOTE = "which shapes are secrets is the reference's list (MEM-REFLECT.14)"
#: agent names drawn for the gate: the no-reflect agent, names near it, and ordinary ones; every
#: other or unnamed agent keeps the work-based gate (MEM-REFLECT.1)
AGENT_NAMES = (
    "review",
    "coder",
    "coding",
    "triage",
    "docs",
    "release",
    "planner",
    "ops",
    "support",
    "research",
    "reviewer",
    "pr-review",
    "a",
    "",
)


def _should_reflect(a: Args) -> JSON:
    return should_reflect(int(a["toolCalls"]), int(a["historyTurns"]), a.get("agentName"))


def _reflect_boundaries() -> list[tuple[str, Args]]:
    return [
        ("no work", {"toolCalls": 0, "historyTurns": 3}),
        ("one tool call", {"toolCalls": 1, "historyTurns": 0}),
        ("four prior turns", {"toolCalls": 0, "historyTurns": 4}),
        ("a review never", {"toolCalls": 9, "historyTurns": 9, "agentName": "review"}),
        ("another agent", {"toolCalls": 1, "historyTurns": 0, "agentName": "coder"}),
        *(
            (
                f"agent {name!r} keeps the work gate",
                {"toolCalls": 1, "historyTurns": 4, "agentName": name},
            )
            for name in AGENT_NAMES
            if name not in ("review", "coder")
        ),
        ("unnamed agent, work done", {"toolCalls": 2, "historyTurns": 0, "agentName": None}),
    ]


def cand_out(c: JSON) -> JSON:
    return {**candidate_json(c.candidate), "audience": c.audience}


def keep_inner_whitespace(text: str) -> str:
    """A reflected text trimmed and redacted with its inner whitespace kept: the other reading
    the seed allows (MEM-REFLECT.8, MEM-REFLECT.10; the reference collapses, MEM-REFLECT.12)."""
    return redact_secrets(js_trim(text))


def redact_then_collapse(text: str) -> str:
    """A reflected text redacted, then collapsed and trimmed, and not redacted again: the
    upstream bot's order.  A secret only the collapsing joins (``Bearer``, a line break, a
    token) stays; which shapes are secrets is the reference's list, not the memory seed's, so
    the seed allows this reading and the reference's second pass is MEM-REFLECT.14's."""
    return collapse_whitespace(redact_secrets(text))


def _parse_reflection(a: Args, clean: Callable[[str], str] = clean_reflection_text) -> JSON:
    res = parse_reflection(
        a["raw"], list(a.get("shownIds", [])), a["threadKey"], a.get("runId"), clean=clean
    )
    if res is None:
        return None
    return {
        "facts": [cand_out(f) for f in res.facts],
        "summary": cand_out(res.summary) if res.summary is not None else None,
    }


def _canonical_fence(raw: str) -> bool:
    """A reply wrapped the way the seed shows it: ```json, a newline, the JSON, a newline."""
    s = raw.strip()
    return not s.startswith("```") or (s.startswith("```json\n") and s.endswith("\n```"))


#: a wrapping fence read leniently: any tag (or none), any whitespace inside
_ANY_FENCE = re.compile(r"\A```[A-Za-z0-9_+-]*\s*(.*?)\s*```\Z", re.DOTALL)


def _unwrapped(a: Args, clean: Callable[[str], str] = clean_reflection_text) -> JSON:
    """What unwrapping a non-canonical fence gives (the reply read without its fence), or
    ``None`` when there is no fence to unwrap or its inside is not a reply."""
    m = _ANY_FENCE.match(js_trim(a["raw"]))
    return _parse_reflection({**a, "raw": m.group(1)}, clean) if m else None


def _readings(a: Args, clean: Callable[[str], str]) -> list[JSON]:
    """The reference's reading with texts cleaned by ``clean``, then, for a non-canonical
    fence, the fence refused and the fence unwrapped."""
    out = [ok(_parse_reflection(a, clean))]
    if not _canonical_fence(a["raw"]):
        out.append(ok(None))
        inner = _unwrapped(a, clean)
        if inner is not None:
            out.append(ok(inner))
    return out


def _parse_reflection_judge(a: Args) -> Judged:
    """The reference's reading; a fence other than ```json + newline … newline + ``` may be
    unwrapped or refused whatever the reference does (MEM-REFLECT.7; the reference's own
    forms: MEM-REFLECT.13); a text's inner whitespace runs may come back kept, only trimmed,
    where the reference collapses them (MEM-REFLECT.12); a secret only the collapsing joins may
    come back as the upstream's order leaves it, where the reference redacts once more
    (MEM-REFLECT.14: which shapes are secrets is the reference's list)."""
    ref, *fences = _readings(a, clean_reflection_text)
    judged = Judged([ref])
    if any(w not in judged.allowed for w in fences):
        judged = widened(judged, REFLECT_FENCE, fences, None, FENCE_NOTE)
    kept = _readings(a, keep_inner_whitespace)
    if any(k not in judged.allowed for k in kept):
        judged = widened(judged, REFLECT_SPACES, kept, None, SPACES_NOTE)
    upstream = _readings(a, redact_then_collapse)
    if any(u not in judged.allowed for u in upstream):
        judged = widened(judged, REFLECT_PATTERNS, upstream, None, PATTERNS_NOTE)
    return judged


def _reply(obj: JSON) -> str:
    import json

    return json.dumps(obj)


def _reflection_boundaries() -> list[tuple[str, Args]]:  # long: a data table of boundary cases
    base = {"shownIds": ["mem:org:acme:1"], "threadKey": "t:1", "runId": "run-1"}
    fact = {"text": "deploys on friday", "confidence": 0.8}
    return [
        ("not JSON", {**base, "raw": "sure! here you go"}),
        ("not an object", {**base, "raw": "[1]"}),
        ("facts not an array", {**base, "raw": '{"facts": {}}'}),
        ("empty facts", {**base, "raw": '{"facts": []}'}),
        ("fenced", {**base, "raw": "```json\n" + _reply({"facts": [fact]}) + "\n```"}),
        (
            "fence without newlines (open point)",
            {**base, "raw": "```json" + _reply({"facts": [fact]}) + "```"},
        ),
        (
            "confidence edge 0.6 kept",
            {**base, "raw": _reply({"facts": [{**fact, "confidence": 0.6}]})},
        ),
        (
            "confidence just under 0.6 dropped",
            {**base, "raw": _reply({"facts": [{**fact, "confidence": 0.5999999999999999}]})},
        ),
        (
            "confidence 1 kept, one past dropped",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {**fact, "confidence": 1},
                            {**fact, "confidence": 1.0000000000000002},
                        ]
                    }
                ),
            },
        ),
        (
            "boolean confidence dropped",
            {**base, "raw": _reply({"facts": [{**fact, "confidence": True}]})},
        ),
        ("blank text dropped", {**base, "raw": _reply({"facts": [{**fact, "text": " \u3000 "}]})}),
        (
            "first five valid facts",
            {**base, "raw": _reply({"facts": [{**fact, "text": f"f{i}"} for i in range(7)]})},
        ),
        (
            "supersedes kept only when shown; audience checked",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {**fact, "supersedes": "mem:org:acme:1", "audience": "user"},
                            {
                                **fact,
                                "text": "b",
                                "supersedes": "mem:org:acme:2",
                                "audience": "team",
                            },
                        ]
                    }
                ),
            },
        ),
        (
            "summary takes the narrowest audience",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {**fact, "audience": "repo"},
                            {**fact, "text": "c", "audience": "channel"},
                        ],
                        "summary": " did things ",
                    }
                ),
            },
        ),
        (
            "keywords normalized",
            {
                **base,
                "raw": _reply(
                    {
                        "facts": [
                            {
                                **fact,
                                "keywords": [" DB ", "db", 3, "", *[f"k{i}" for i in range(12)]],
                            }
                        ]
                    }
                ),
            },
        ),
        (
            "integer of 5000 digits is valid JSON",
            {**base, "raw": '{"facts": [], "n": ' + "9" * 5000 + "}"},
        ),
        (
            "nesting of 1200 levels is valid JSON",
            {**base, "raw": '{"facts": [], "deep": ' + "[" * 1200 + "]" * 1200 + "}"},
        ),
        ("NaN is not JSON", {**base, "raw": '{"facts": [], "x": NaN}'}),
        (
            "astral text kept",
            {**base, "raw": _reply({"facts": [{**fact, "text": "\U0001f600 ok"}]})},
        ),
        (
            "inner whitespace runs in the texts",
            {
                **base,
                "raw": _reply(
                    {"facts": [{**fact, "text": "deploys  on\tfriday"}], "summary": "a \n b"}
                ),
            },
        ),
        (
            "a secret joined by collapsing the whitespace is redacted",
            {
                **base,
                "raw": _reply(
                    {"facts": [{**fact, "text": "auth Bearer\n" + "a1b2c3d4e5f6g7h8i9j0"}]}
                ),
            },
        ),
        (
            "a fence tagged js",
            {**base, "raw": "```js\n" + _reply({"facts": [fact]}) + "\n```"},
        ),
    ]


def _redact(a: Args) -> JSON:
    return redact_secrets(a["text"])


def _redact_judge(a: Args) -> Judged:
    """The marker and the exact span are the engine's (open point); the listed ordinary words
    kept; every listed secret gone -- at the reference level, since which shapes count as
    secrets is the reference's list, not the memory seed's (MEM-REFLECT.14)."""
    ref = ok(_redact(a))
    secrets = [s for s in a.get("secrets", []) if s in a["text"]]
    kept = list(a.get("kept", []))
    judged = Judged([ref], {"name": "redacted", "secrets": secrets, "kept": kept})
    if not secrets:
        return judged
    seed = {"name": "redacted", "secrets": [], "kept": kept}
    return widened(judged, REFLECT_PATTERNS, [], seed, PATTERNS_NOTE)


def _redact_boundaries() -> list[tuple[str, Args]]:
    return [
        (
            f"a {s[:4]}… key",
            {"text": f"use {s} for prod", "secrets": [s], "kept": ["use", "for prod"]},
        )
        for s in SECRETS
    ] + [
        (
            "ordinary text untouched",
            {"text": "task-runner sk is fine", "secrets": [], "kept": ["task-runner sk is fine"]},
        ),
        (
            "PEM block",
            {
                "text": "a -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- b",
                "secrets": ["MIIE"],
                "kept": ["a ", " b"],
            },
        ),
    ]


#: what each clause of parseReflection fixes in a candidate
_CANDIDATE_FIELDS = (
    (("kind", "text", "confidence"), "MEM-REFLECT.8"),
    (("keywords",), "MEM-REFLECT.9"),
    (("sourceThreadKey", "sourceRunId", "supersedes"), "MEM-REFLECT.10"),
    (("audience",), "MEM-ROUTE.2"),
)


def _reflection_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """The envelope read otherwise (a reply rejected or accepted): MEM-REFLECT.7; another number
    of facts or another summary presence: MEM-REFLECT.8; else the clauses of the candidate
    fields that differ."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if (value is None) != (want is None):
        return ("MEM-REFLECT.7",)
    if not isinstance(value, dict) or not isinstance(want, dict):
        return ()
    facts, wanted = value.get("facts"), want["facts"]
    if not isinstance(facts, list) or len(facts) != len(wanted):
        return ("MEM-REFLECT.8",)
    pairs = list(zip(facts, wanted, strict=True))
    if (value.get("summary") is None) != (want["summary"] is None):
        return ("MEM-REFLECT.8",)
    if want["summary"] is not None:
        pairs.append((value["summary"], want["summary"]))
    out: list[str] = []
    for fields, clause in _CANDIDATE_FIELDS:
        for c, w in pairs:
            if not isinstance(c, dict) or any(c.get(f) != w.get(f) for f in fields):
                out.append(clause)
                break
    return tuple(out)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "shouldReflect",
        MEMORY,
        ("MEM-REFLECT.1",),
        "is a finished run distilled",
        _should_reflect,
        st.fixed_dictionaries(
            {"toolCalls": st.integers(0, 3), "historyTurns": st.integers(0, 6)},
            optional={
                "agentName": st.one_of(
                    st.none(), st.sampled_from(AGENT_NAMES), st.text(max_size=10)
                )
            },
        ),
        _reflect_boundaries,
    ),
    fn(
        "parseReflection",
        MEMORY,
        ("MEM-REFLECT.7", "MEM-REFLECT.8", "MEM-REFLECT.9", "MEM-REFLECT.10", "MEM-ROUTE.2"),
        "the extractor's reply: strict envelope, lenient inside",
        _parse_reflection,
        st.fixed_dictionaries(
            {
                "raw": st.builds(
                    _reply,
                    st.fixed_dictionaries(
                        {
                            "facts": st.lists(
                                st.fixed_dictionaries(
                                    {
                                        "text": st.one_of(texts, st.just(" ")),
                                        "confidence": st.sampled_from(
                                            (0.5, 0.6, 0.9, 1, 1.5, True)
                                        ),
                                    },
                                    optional={
                                        "audience": st.sampled_from(("user", "repo", "team")),
                                        "keywords": st.lists(
                                            st.one_of(words, st.integers()), max_size=3
                                        ),
                                    },
                                ),
                                max_size=7,
                            )
                        },
                        optional={"summary": st.one_of(texts, st.just(""))},
                    ),
                ),
                "shownIds": st.just(["mem:org:acme:1"]),
                "threadKey": st.just("t:1"),
                "runId": st.just("run-1"),
            }
        ),
        _reflection_boundaries,
        _parse_reflection_judge,
        references=("MEM-REFLECT.12", "MEM-REFLECT.13", "MEM-REFLECT.14"),
        blame=_reflection_blame,
    ),
    fn(
        "redactSecrets",
        MEMORY,
        ("MEM-REFLECT.6",),
        "credential-shaped spans replaced",
        _redact,
        st.builds(
            lambda w, s: {"text": f"{w} {s} end", "secrets": [s], "kept": ["end"]},
            texts,
            st.sampled_from(SECRETS),
        ),
        _redact_boundaries,
        _redact_judge,
        references=("MEM-REFLECT.14",),
    ),
)
