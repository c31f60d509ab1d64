"""MEM-REFLECT: the reflection gate, the one extractor call, its input, and parsing its reply."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reference.ledger.credentials import detect_credential
from reference.memory.budget import utf16_length
from reference.memory.engine import rank_records
from reference.memory.reflection import (
    MAX_REFLECTION_FACTS,
    NO_REFLECT_AGENTS,
    OMITTED_MARKER,
    REDACTION_MARKER,
    REFLECT_MIN_TURNS,
    REFLECTION_MAX_TOKENS,
    REFLECTION_SYSTEM,
    ImagePart,
    ProviderFailure,
    ReflectionCall,
    RunScopes,
    SkipReflection,
    TextPart,
    TranscriptTurn,
    build_reflection_input,
    finish_reflection,
    parse_reflection,
    plan_reflection,
    records_to_show,
    redact_secrets,
    reflection_model,
    route_candidates,
    should_reflect,
    tail_cap,
    utf16_tail,
)
from reference.memory.store import empty_store, with_scope_records
from tests.common.memory_strategies import T0, make_record, query_text, vocab_text

SECRETS = [
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "xoxb-123456789012-abcdefghijkl",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
    "AKIAIOSFODNN7EXAMPLE",
    "Bearer abcdefghijklmnop0123456789",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "API_KEY=abcdef0123456789xyz",
    "password: hunter2hunter2hunter2",
    "secret_abcdefghijklmnopqrstuvwxyz0123",
]
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxyzSECRETBODYLINE\n"
    "-----END RSA PRIVATE KEY-----"
)
# Filler that cannot form a credential: lower-case words, spaces, punctuation without the
# characters detectors key on, and some non-ASCII / astral characters.
SAFE_ALPHABET = "abcdefghij klmnop,;!?\n\u00e9\u4e2d\U0001f600\U00010348"
safe_text = st.text(alphabet=SAFE_ALPHABET, max_size=60)


def turn(role: str, *texts: str) -> TranscriptTurn:
    return TranscriptTurn(role, tuple(TextPart(t) for t in texts))


# --------------------------------------------------------------------------- MEM-REFLECT.1


@pytest.mark.clause("MEM-REFLECT.1")
@given(
    tools=st.integers(0, 5),
    turns=st.integers(0, 8),
    agent=st.one_of(st.none(), st.sampled_from(["review", "coding", "general", "Review"])),
)
def test_gate(tools: int, turns: int, agent: str | None) -> None:
    expected = (agent not in NO_REFLECT_AGENTS) and (tools >= 1 or turns >= REFLECT_MIN_TURNS)
    assert should_reflect(tools, turns, agent) is expected


@pytest.mark.clause("MEM-REFLECT.1")
def test_gate_examples() -> None:
    assert not should_reflect(0, 3)  # short toolless chat
    assert should_reflect(0, 4)
    assert should_reflect(1, 0)
    assert not should_reflect(50, 50, "review")  # a review never reflects
    assert should_reflect(1, 0, "coding")


# --------------------------------------------------------------------------- MEM-REFLECT.2-4


def _plan(**over: Any) -> ReflectionCall | SkipReflection:
    args: dict[str, Any] = {
        "enabled": True,
        "tool_calls": 1,
        "history_turns": 0,
        "agent_name": "coding",
        "memory_model": None,
        "run_model": "anthropic/claude-x",
        "existing_records": [make_record("mem:org:acme:1", text="uses make ship")],
        "transcript": [turn("user", "how do we deploy?"), turn("assistant", "make ship")],
    }
    args.update(over)
    return plan_reflection(**args)


@pytest.mark.clause("MEM-REFLECT.2")
def test_disabled_means_nothing_at_all() -> None:
    assert _plan(enabled=False) == SkipReflection("disabled", None)
    assert _plan(tool_calls=0, history_turns=0) == SkipReflection("not_qualifying", None)
    assert _plan(agent_name="review") == SkipReflection("not_qualifying", None)


@pytest.mark.clause("MEM-REFLECT.2")
def test_failures_write_nothing_and_warn_once() -> None:
    kwargs: dict[str, Any] = {
        "shown_records": [],
        "thread_key": "slack:C1:1",
        "run_id": "run-1",
        "scopes": RunScopes("org:acme", user="user:slack:U1"),
        "origin_visibility": "public",
    }
    for reply in (ProviderFailure("boom"), "not json", '{"facts": 3}', "[]"):
        out = finish_reflection(reply, **kwargs)
        assert out.writes == ()
        assert len(out.warnings) == 1 and out.warnings[0].startswith("[memory]")
    # nothing durable: no write, and no warning either
    out = finish_reflection('{"facts": [], "summary": "  "}', **kwargs)
    assert out.writes == () and out.warnings == ()
    out = finish_reflection('{"facts": [{"text": "CI uses make", "confidence": 0.9}]}', **kwargs)
    assert [w.scope_key for w in out.writes] == ["org:acme"]


@pytest.mark.clause("MEM-REFLECT.3")
@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        (None, "openai/gpt-run"),
        ("anthropic/claude-memory", "anthropic/claude-memory"),
        ("gpt-4o", None),
        ("/model", None),
        ("provider/", None),
        ("anthropic/ claude", None),
        ("", None),
    ],
)
def test_model_selection(configured: str | None, expected: str | None) -> None:
    assert reflection_model(configured, "openai/gpt-run") == expected
    plan = _plan(memory_model=configured, run_model="openai/gpt-run")
    if expected is None:
        assert isinstance(plan, SkipReflection) and plan.reason == "bad_model_ref"
        assert plan.warning is not None and plan.warning.startswith("[memory]")
    else:
        assert isinstance(plan, ReflectionCall) and plan.model == expected


@pytest.mark.clause("MEM-REFLECT.4")
def test_one_call_contract() -> None:
    plan = _plan()
    assert isinstance(plan, ReflectionCall)
    assert plan.tools == ()
    assert plan.max_tokens == REFLECTION_MAX_TOKENS == 1024
    assert plan.system == REFLECTION_SYSTEM
    assert plan.user_message == build_reflection_input(
        [make_record("mem:org:acme:1", text="uses make ship")],
        [turn("user", "how do we deploy?"), turn("assistant", "make ship")],
    )


@pytest.mark.clause("MEM-REFLECT.4")
def test_system_prompt_names_ephemera_and_audiences() -> None:
    low = REFLECTION_SYSTEM.lower()
    for needle in ("pr numbers", "shas", "test counts", "ci results", "verdicts", "approved at"):
        assert needle in low
    assert "ephemeral" in low and "never a fact" in low
    for audience in ('"user"', '"repo"', '"channel"', '"org"'):
        assert audience in REFLECTION_SYSTEM
    assert "impersonal" in low
    assert "at most 5 facts" in low


# --------------------------------------------------------------------------- MEM-REFLECT.5


@pytest.mark.clause("MEM-REFLECT.5")
def test_input_layout_exact() -> None:
    records = [
        make_record("mem:org:acme:1", text="Deploy with make ship"),
        make_record("mem:user:slack:U1:2", kind="summary", text="likes tabs"),
    ]
    turns = [
        turn("user", "how do we deploy?"),
        TranscriptTurn("user", (ImagePart("image/png", "IMAGEDATA"),)),
        TranscriptTurn(
            "assistant", (TextPart("use"), ImagePart("image/png", "IMG2"), TextPart("make"))
        ),
    ]
    assert build_reflection_input(records, turns) == (
        "Existing records (use an id in supersedes to replace that record):\n"
        "- mem:org:acme:1 [fact]: Deploy with make ship\n"
        "- mem:user:slack:U1:2 [summary]: likes tabs\n"
        "\n"
        "Transcript:\n"
        "user: how do we deploy?\n"
        "\n"
        "assistant: use\nmake"
    )
    assert build_reflection_input([], [turn("user", "hi")]).startswith("Existing records: (none)")


@pytest.mark.clause("MEM-REFLECT.5")
@given(
    texts=st.lists(safe_text, min_size=1, max_size=6),
    cap=st.integers(1, 80),
)
def test_tail_cap_keeps_exactly_the_last_units(texts: list[str], cap: int) -> None:
    turns = [turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    transcript = "\n\n".join(f"{t.role}: {t.parts[0].text}" for t in turns)  # type: ignore[union-attr]
    out = build_reflection_input([], turns, max_transcript_units=cap)
    body = out.split("Transcript:\n", 1)[1]
    if utf16_length(transcript) <= cap:
        assert body == transcript
        assert OMITTED_MARKER not in out
    else:
        assert body.startswith(OMITTED_MARKER + "\n")
        kept = body[len(OMITTED_MARKER) + 1 :]
        assert transcript.endswith(kept)
        units = utf16_length(kept)
        # exactly the cap, or one less when the cut would split a surrogate pair
        assert units == cap or (units == cap - 1 and ord(transcript[-len(kept) - 1]) > 0xFFFF)


@pytest.mark.clause("MEM-REFLECT.5")
def test_tail_cap_at_the_real_limit() -> None:
    transcript = "a" * 10 + "\U0001f600" + "b" * 23_999
    assert tail_cap(transcript) == OMITTED_MARKER + "\n" + "b" * 23_999  # the pair is not split
    transcript = "x" * 100 + "y" * 24_000
    assert tail_cap(transcript) == OMITTED_MARKER + "\n" + "y" * 24_000
    assert tail_cap("z" * 24_000) == "z" * 24_000
    assert utf16_tail("ab\U0001f600", 2) == "\U0001f600"


# --------------------------------------------------------------------------- MEM-REFLECT.6


@pytest.mark.clause("MEM-REFLECT.6")
@given(
    parts=st.lists(st.one_of(safe_text, st.sampled_from(SECRETS + [PEM])), max_size=6),
    glue=st.sampled_from(["", " ", "\n", "x", "_"]),
)
def test_redaction_leaves_nothing_detectable(parts: list[str], glue: str) -> None:
    text = glue.join(parts)
    out = redact_secrets(text)
    assert detect_credential(out) is None
    assert redact_secrets(out) == out
    if glue in (" ", "\n"):  # separated keys are whole detector matches, so none survives
        for s in [*SECRETS, PEM]:
            if s in parts:
                assert s not in out


@pytest.mark.clause("MEM-REFLECT.6")
@given(safe_text)
def test_redaction_is_identity_on_clean_text(text: str) -> None:
    assume(detect_credential(text) is None)
    assert redact_secrets(text) == text


@pytest.mark.clause("MEM-REFLECT.6")
def test_redaction_examples() -> None:
    assert redact_secrets("token ghp_" + "a" * 36 + " here") == f"token {REDACTION_MARKER} here"
    assert redact_secrets(f"key:\n{PEM}\nafter") == f"key:\n{REDACTION_MARKER}\nafter"
    assert "SECRETBODY" not in redact_secrets("-----BEGIN PRIVATE KEY-----\nSECRETBODY")
    # a key glued after another only becomes visible once the first is gone
    glued = "AKIAIOSFODNN7EXAMPLEsk-" + "a" * 24
    assert detect_credential(redact_secrets(glued)) is None
    clean = "commit 3f2a9c1e4b5d6f708192a3b4c5d6e7f809102132 TOKEN=development"
    assert redact_secrets(clean) == clean


@pytest.mark.clause("MEM-REFLECT.6")
@given(secret=st.sampled_from(SECRETS + [PEM]), where=st.sampled_from(["record", "turn"]))
def test_input_never_carries_a_secret(secret: str, where: str) -> None:
    rec_text = f"note {secret} end" if where == "record" else "plain"
    turn_text = f"said {secret} done" if where == "turn" else "plain"
    out = build_reflection_input(
        [make_record("mem:org:acme:1", text=rec_text)], [turn("user", turn_text)]
    )
    assert detect_credential(out) is None
    assert REDACTION_MARKER in out


@pytest.mark.clause("MEM-REFLECT.5", "MEM-REFLECT.6")
def test_cut_cannot_expose_a_fragment() -> None:
    # The tail cut falls inside a key; the kept fragment would still look like a key.
    key = "sk-" + "a" * 60
    transcript_text = "intro " + key
    out = build_reflection_input([], [turn("user", transcript_text)], max_transcript_units=40)
    assert detect_credential(out) is None


# --------------------------------------------------------------------------- MEM-REFLECT.7


def _fact(
    text: object = "CI runs make test", confidence: object = 0.9, **kw: object
) -> dict[str, object]:
    return {"text": text, "confidence": confidence, **kw}


@pytest.mark.clause("MEM-REFLECT.7")
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
        max_leaves=8,
    )
)
def test_envelope_rejections(value: object) -> None:
    ok = isinstance(value, dict) and isinstance(value.get("facts"), list)
    got = parse_reflection(json.dumps(value), [], "t", None)
    assert (got is not None) is ok


@pytest.mark.clause("MEM-REFLECT.7")
@pytest.mark.parametrize(
    "raw",
    [
        "",
        "Here are the facts: {}",
        '{"facts": [}',
        '{"facts": NaN}',
        '{"facts": [], "summary": Infinity}',
        "[]",
        '"facts"',
        '{"summary": "only a summary"}',
        '{"facts": {"0": {}}}',
        '```json\n{"facts": 1}\n```',
    ],
)
def test_envelope_examples_rejected(raw: str) -> None:
    assert parse_reflection(raw, [], "t", None) is None


@pytest.mark.clause("MEM-REFLECT.7")
@given(
    facts=st.lists(
        st.fixed_dictionaries(
            {"text": st.sampled_from(["a fact", "b"]), "confidence": st.just(0.8)}
        ),
        max_size=3,
    ),
    fence=st.sampled_from(["```json\n{}\n```", "```\n{}\n```", "```JSON {} ```", "  {}  ", "{}"]),
)
def test_fence_is_tolerated(facts: list[dict[str, object]], fence: str) -> None:
    body = json.dumps({"facts": facts, "summary": "s"})
    assert parse_reflection(fence.replace("{}", body), [], "t", "r") == parse_reflection(
        body, [], "t", "r"
    )


# --------------------------------------------------------------------------- MEM-REFLECT.8

confidence_value = st.one_of(
    st.sampled_from([0.6, 1, 1.0, 0.59999, 1.00001, 0, -1, True, False, 0.75, "0.9", None]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-2, 2),
)
text_value = st.one_of(
    st.sampled_from(["fact one", "  fact two  ", "", "   ", "\n\t", 7, None, ["x"]]),
    safe_text,
)


def _valid_confidence(c: object) -> bool:
    return (
        isinstance(c, int | float)
        and not isinstance(c, bool)
        and not (isinstance(c, float) and math.isnan(c))
        and 0.6 <= c <= 1
    )


@pytest.mark.clause("MEM-REFLECT.8", "MEM-REFLECT.12")
@given(
    facts=st.lists(
        st.one_of(
            st.builds(_fact, text_value, confidence_value),
            st.sampled_from([None, 3, "fact", ["x"]]),
            st.builds(lambda t: {"text": t}, text_value),
        ),
        max_size=9,
    ),
    summary=st.one_of(st.none(), text_value),
)
def test_each_fact_stands_alone(facts: list[object], summary: object) -> None:
    raw = json.dumps({"facts": facts, "summary": summary})
    got = parse_reflection(raw, [], "slack:C1:5", "run-7")
    assert got is not None
    valid = [
        f
        for f in facts
        if isinstance(f, dict)
        and isinstance(f.get("text"), str)
        and f["text"].strip()
        and _valid_confidence(f.get("confidence"))
    ][:MAX_REFLECTION_FACTS]
    assert len(got.facts) == len(valid) <= MAX_REFLECTION_FACTS
    for g, f in zip(got.facts, valid, strict=True):
        assert g.candidate.kind == "fact"
        # the alphabet's only whitespace is " " and "\n", so ``split`` is JavaScript's here
        assert g.candidate.text == " ".join(str(f["text"]).split())
        assert g.candidate.confidence == float(f["confidence"])
        assert 0.6 <= g.candidate.confidence <= 1
    if isinstance(summary, str) and summary.strip():
        assert got.summary is not None
        assert got.summary.candidate.kind == "summary"
        assert got.summary.candidate.text == " ".join(summary.split())
    else:
        assert got.summary is None
    assert len(got.candidates) <= MAX_REFLECTION_FACTS + 1


@pytest.mark.clause("MEM-REFLECT.8")
def test_confidence_bounds_inclusive_and_numeric() -> None:
    raw = json.dumps(
        {
            "facts": [
                _fact("low edge", 0.6),
                _fact("high edge", 1),
                _fact("too low", 0.5999999),
                _fact("too high", 1.0000001),
                _fact("bool", True),
                _fact("string", "0.9"),
                _fact("missing", None),
            ]
        }
    )
    got = parse_reflection(raw, [], "t", None)
    assert got is not None
    assert [f.candidate.text for f in got.facts] == ["low edge", "high edge"]
    # 1e400 is valid JSON (it overflows to infinity): the fact is dropped, the reply is not
    huge = parse_reflection('{"facts": [{"text": "x", "confidence": 1e400}]}', [], "t", None)
    assert huge is not None and huge.facts == ()
    assert [f.candidate.confidence for f in got.facts] == [0.6, 1.0]


@pytest.mark.clause("MEM-REFLECT.8")
def test_first_five_valid_facts_survive() -> None:
    facts = [_fact("bad", 0.1)] + [_fact(f"fact {i}") for i in range(7)]
    got = parse_reflection(json.dumps({"facts": facts}), [], "t", None)
    assert got is not None
    assert [f.candidate.text for f in got.facts] == [f"fact {i}" for i in range(5)]


# --------------------------------------------------------------------------- MEM-REFLECT.9


@pytest.mark.clause("MEM-REFLECT.9")
@given(
    keywords=st.one_of(
        st.lists(
            st.one_of(
                st.sampled_from(["Deploy", " deploy ", "CI", "ci", "", "  ", "Make", "x"]),
                st.text(alphabet="abcXYZ ", max_size=5),
                st.integers(),
                st.none(),
            ),
            max_size=16,
        ),
        st.sampled_from(["deploy", 3, None, {"a": 1}]),
    )
)
def test_keywords_normalized(keywords: object) -> None:
    raw = json.dumps({"facts": [_fact(keywords=keywords)]})
    got = parse_reflection(raw, [], "t", None)
    assert got is not None
    kws = got.facts[0].candidate.keywords
    if not isinstance(keywords, list):
        assert kws is None
        return
    expected: list[str] = []
    for k in keywords:
        if isinstance(k, str) and k.strip().lower() and k.strip().lower() not in expected:
            expected.append(k.strip().lower())
    expected = expected[:10]
    assert kws == (tuple(expected) if expected else None)


@pytest.mark.clause("MEM-REFLECT.9", "MEM-REFLECT.10")
def test_keywords_are_redacted() -> None:
    raw = json.dumps({"facts": [_fact(keywords=["deploy", SECRETS[0], "deploy"])]})
    got = parse_reflection(raw, [], "t", None)
    assert got is not None
    assert got.facts[0].candidate.keywords == ("deploy", REDACTION_MARKER.lower())


# --------------------------------------------------------------------------- MEM-REFLECT.10


@pytest.mark.clause("MEM-REFLECT.10")
@given(
    shown=st.lists(
        st.sampled_from(["mem:org:acme:1", "mem:user:slack:U1:2", "mem:repo:a/b:3"]), unique=True
    ),
    pointer=st.one_of(
        st.sampled_from(
            ["mem:org:acme:1", "mem:user:slack:U1:2", "mem:repo:a/b:3", "mem:org:acme:99", ""]
        ),
        st.integers(),
        st.none(),
    ),
    run_id=st.one_of(st.none(), st.just("run-3")),
)
def test_supersedes_only_for_shown_ids_and_provenance(
    shown: list[str], pointer: object, run_id: str | None
) -> None:
    raw = json.dumps({"facts": [_fact(supersedes=pointer)], "summary": "the thread"})
    got = parse_reflection(raw, shown, "slack:C1:9", run_id)
    assert got is not None
    expected = pointer if isinstance(pointer, str) and pointer in shown else None
    assert got.facts[0].candidate.supersedes == expected
    for c in got.candidates:
        assert c.candidate.source_thread_key == "slack:C1:9"
        assert c.candidate.source_run_id == run_id
    assert got.summary is not None and got.summary.candidate.supersedes is None


@pytest.mark.clause("MEM-REFLECT.10")
@given(secret=st.sampled_from(SECRETS + [PEM]))
def test_outputs_are_redacted(secret: str) -> None:
    raw = json.dumps({"facts": [_fact(f"the key is {secret}")], "summary": f"used {secret}"})
    got = parse_reflection(raw, [], "t", None)
    assert got is not None
    for c in got.candidates:
        assert detect_credential(c.candidate.text) is None
        assert REDACTION_MARKER in c.candidate.text


# Every JavaScript whitespace character (ECMA-262 WhiteSpace + LineTerminator), written out
# here rather than imported, plus characters JavaScript does not count as whitespace.
JS_SPACES = "\t\n\v\f\r \u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NOT_JS_SPACES = "\x1c\x1f\x85\u200b"
space_run = st.text(alphabet=JS_SPACES, min_size=1, max_size=4)
word = st.text(alphabet="abcdefghij,;!\u00e9\U0001f600" + NOT_JS_SPACES, min_size=1, max_size=8)


@pytest.mark.clause("MEM-REFLECT.12")
@given(
    words=st.lists(st.tuples(word, space_run), min_size=1, max_size=6),
    lead=st.one_of(st.just(""), space_run),
    summary_words=st.lists(st.tuples(word, space_run), min_size=1, max_size=4),
)
def test_reflected_texts_keep_no_whitespace_run(
    words: list[tuple[str, str]], lead: str, summary_words: list[tuple[str, str]]
) -> None:
    text = lead + "".join(w + s for w, s in words)
    summary = "".join(s + w for w, s in summary_words) + lead
    got = parse_reflection(json.dumps({"facts": [_fact(text)], "summary": summary}), [], "t", None)
    assert got is not None and got.summary is not None and len(got.facts) == 1
    for c, drawn in ((got.facts[0], words), (got.summary, summary_words)):
        out = c.candidate.text
        assert not any(ch in out for ch in JS_SPACES.replace(" ", "")), out
        assert "  " not in out and out == out.strip(" "), out
        assert out.split(" ") == [w for w, _ in drawn]


@pytest.mark.clause("MEM-REFLECT.10", "MEM-REFLECT.12")
@pytest.mark.parametrize(
    "text",
    [
        "auth Bearer\n" + "a1b2c3d4e5f6g7h8i9j0",
        "use password:\n\u3000hunter2hunter2hunter2",
        "-----BEGIN RSA\tPRIVATE KEY-----\nMIIEowIBAAKCAQEAxyz",
    ],
)
def test_collapsing_cannot_expose_a_secret(text: str) -> None:
    """A span only collapsing makes credential-shaped is redacted too."""
    got = parse_reflection(json.dumps({"facts": [_fact(text)], "summary": text}), [], "t", None)
    assert got is not None and len(got.candidates) == 2
    for c in got.candidates:
        assert detect_credential(c.candidate.text) is None
        assert REDACTION_MARKER in c.candidate.text


@pytest.mark.clause("MEM-REFLECT.2", "MEM-ROUTE.1")
def test_finish_routes_what_parse_returns() -> None:
    shown = [
        make_record("mem:org:acme:1", text="old"),
        make_record("mem:user:slack:U1:1", scope_key="user:slack:U1"),
    ]
    reply = json.dumps(
        {
            "facts": [
                _fact("user likes tabs", audience="user"),
                _fact("deploy is make ship", supersedes="mem:org:acme:1"),
            ],
            "summary": "a thread",
        }
    )
    scopes = RunScopes("org:acme", user="user:slack:U1")
    out = finish_reflection(
        reply,
        shown_records=shown,
        thread_key="t",
        run_id="r",
        scopes=scopes,
        origin_visibility="public",
    )
    parsed = parse_reflection(reply, [r.id for r in shown], "t", "r")
    assert parsed is not None
    plan = route_candidates(parsed, scopes, {r.id: r.scope_key for r in shown}, "public")
    assert out.writes == plan.writes
    assert [w.scope_key for w in out.writes] == ["org:acme", "user:slack:U1"]


# --------------------------------------------------------------------------- MEM-REFLECT.11

_SHOW_KEYS = ["org:acme", "repo:o/n", "channel:slack:C1", "user:slack:U1", "user:slack:U2"]


@pytest.mark.clause("MEM-REFLECT.11")
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(_SHOW_KEYS),
            vocab_text,
            st.sampled_from(["active", "active", "superseded", "forgotten", "evicted"]),
        ),
        max_size=40,
    ),
    query=query_text,
    has=st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_shown_records_come_per_scope_from_the_runs_scopes(
    rows: list[tuple[str, str, str]], query: str, has: tuple[bool, bool, bool]
) -> None:
    per_scope: dict[str, list[Any]] = {}
    for i, (key, text, status) in enumerate(rows):
        rec = make_record(f"mem:{key}:{i + 1}", scope_key=key, text=text, status=status)
        per_scope.setdefault(key, []).append(rec)
    state = empty_store()
    for key, recs in per_scope.items():
        state = with_scope_records(state, key, recs)
    scopes = RunScopes(
        "org:acme",
        repo="repo:o/n" if has[0] else None,
        channel="channel:slack:C1" if has[1] else None,
        user="user:slack:U1" if has[2] else None,
    )
    now = T0 + 1000
    shown = records_to_show(state, scopes, query, now)
    expected: list[Any] = []
    for key in scopes.keys():
        active = [r for r in per_scope.get(key, []) if r.status == "active"]
        expected.extend(rank_records(active, query, 8, now))
    assert shown == expected
    assert all(r.scope_key in scopes.keys() and r.status == "active" for r in shown)
    for key in scopes.keys():
        assert sum(r.scope_key == key for r in shown) <= 8


@pytest.mark.clause("MEM-REFLECT.11")
def test_each_scope_contributes_up_to_eight() -> None:
    scopes = RunScopes("org:acme", user="user:slack:U1")
    state = empty_store()
    for key in ("org:acme", "user:slack:U1", "user:slack:U2"):
        recs = [
            make_record(f"mem:{key}:{i}", scope_key=key, text=f"deploy step {i}")
            for i in range(1, 12)
        ]
        state = with_scope_records(state, key, recs)
    shown = records_to_show(state, scopes, "deploy", T0)
    assert [r.scope_key for r in shown] == ["org:acme"] * 8 + ["user:slack:U1"] * 8
    assert records_to_show(state, scopes, "unrelated", T0) == []
