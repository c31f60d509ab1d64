"""Reflection (``reference/memory/reflection/``): shouldReflect, parseReflection, redactSecrets."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import candidate_json
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import SECRETS, texts, words
from conformance.binding.judge import Judged, ok
from reference.memory.reflection import parse_reflection, redact_secrets, should_reflect


def _should_reflect(a: Args) -> JSON:
    return should_reflect(int(a["toolCalls"]), int(a["historyTurns"]), a.get("agentName"))


def _reflect_boundaries() -> list[tuple[str, Args]]:
    return [
        ("no work", {"toolCalls": 0, "historyTurns": 3}),
        ("one tool call", {"toolCalls": 1, "historyTurns": 0}),
        ("four prior turns", {"toolCalls": 0, "historyTurns": 4}),
        ("a review never", {"toolCalls": 9, "historyTurns": 9, "agentName": "review"}),
        ("another agent", {"toolCalls": 1, "historyTurns": 0, "agentName": "coder"}),
    ]


def cand_out(c: JSON) -> JSON:
    return {**candidate_json(c.candidate), "audience": c.audience}


def _parse_reflection(a: Args) -> JSON:
    res = parse_reflection(a["raw"], list(a.get("shownIds", [])), a["threadKey"], a.get("runId"))
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


def _parse_reflection_judge(a: Args) -> Judged:
    """A fence other than ```json + newline … newline + ``` may be unwrapped or refused (open
    point: the fence's whitespace rules)."""
    ref = ok(_parse_reflection(a))
    if _canonical_fence(a["raw"]):
        return Judged([ref])
    return Judged([ref, ok(None)] if ref["ok"] is not None else [ref])


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
    ]


def _redact(a: Args) -> JSON:
    return redact_secrets(a["text"])


def _redact_judge(a: Args) -> Judged:
    """The marker and the exact span are the engine's (open point); every listed secret must be
    gone and the listed ordinary words kept."""
    ref = ok(_redact(a))
    secrets = [s for s in a.get("secrets", []) if s in a["text"]]
    kept = list(a.get("kept", []))
    return Judged([ref], {"name": "redacted", "secrets": secrets, "kept": kept})


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


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "shouldReflect",
        MEMORY,
        ("MEM-REFLECT.1",),
        "is a finished run distilled",
        _should_reflect,
        st.fixed_dictionaries(
            {"toolCalls": st.integers(0, 3), "historyTurns": st.integers(0, 6)},
            optional={"agentName": st.sampled_from(("review", "coder"))},
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
    ),
)
