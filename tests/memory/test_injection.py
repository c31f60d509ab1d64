"""MEM-INJECT and MEM-FLAG.3: folding the block into provider requests."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.memory.injection import Provider, fold_memory_block, inject

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=12))
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "tool", "system"]),
            "content": st.text(max_size=20),
        }
    ),
    max_size=4,
)
system_text = st.one_of(st.none(), st.just(""), st.text(max_size=30))


@st.composite
def anthropic_requests(draw: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": draw(st.integers(1, 4096)),
        "messages": draw(messages),
        "tools": draw(st.lists(st.fixed_dictionaries({"name": st.text(max_size=8)}), max_size=2)),
    }
    system = draw(system_text)
    if system is not None:
        req["system"] = system
    req.update(
        draw(
            st.dictionaries(
                st.sampled_from(["temperature", "metadata", "stop"]), json_value, max_size=2
            )
        )
    )
    return req


@st.composite
def openai_requests(draw: Any) -> dict[str, Any]:
    msgs = draw(messages)
    if draw(st.booleans()):
        msgs = [{"role": "system", "content": draw(st.text(max_size=30))}, *msgs]
    req: dict[str, Any] = {
        "model": "gpt-x",
        "messages": msgs,
        "max_tokens": draw(st.integers(1, 4096)),
    }
    req.update(
        draw(
            st.dictionaries(
                st.sampled_from(["tools", "temperature", "user"]), json_value, max_size=2
            )
        )
    )
    return req


blocks = st.text(min_size=1, max_size=60)


@pytest.mark.clause("MEM-INJECT.1")
def test_fold_examples() -> None:
    assert fold_memory_block("You are helpful.", "BLOCK") == "BLOCK\n\nYou are helpful."
    assert fold_memory_block("", "BLOCK") == "BLOCK"
    assert fold_memory_block(None, "BLOCK") == "BLOCK"
    assert fold_memory_block("You are helpful.", None) == "You are helpful."
    assert fold_memory_block(None, None) is None


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.2")
@given(system_text, st.one_of(st.none(), st.just(""), blocks))
def test_fold_joins_the_non_empty_parts_block_first(system: str | None, block: str | None) -> None:
    out = fold_memory_block(system, block)
    if not block:
        assert out is system
    else:
        assert out == "\n\n".join(p for p in (block, system) if p)
        assert out.startswith(block)
        if system:
            assert out.endswith("\n\n" + system)


@pytest.mark.clause("MEM-FLAG.3", "MEM-INJECT.2")
@given(st.one_of(anthropic_requests(), openai_requests()), st.sampled_from(["anthropic", "openai"]))
def test_no_block_means_the_very_same_request(req: dict[str, Any], provider: Provider) -> None:
    before = json.dumps(req)
    for block in (None, ""):
        out = inject(req, block, provider)
        assert out is req
        assert json.dumps(out) == before


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.3")
@given(anthropic_requests(), blocks)
def test_anthropic_only_the_system_string_changes(req: dict[str, Any], block: str) -> None:
    snapshot = copy.deepcopy(req)
    out = inject(req, block, "anthropic")
    assert req == snapshot  # input untouched
    assert out is not req
    assert out["system"] == fold_memory_block(req.get("system"), block)
    assert set(out) == set(req) | {"system"}
    for k, v in req.items():
        if k != "system":
            assert out[k] is v  # messages, tools, budgets: the same objects
    # the serialized request differs exactly in the system value
    rest_in = {k: v for k, v in req.items() if k != "system"}
    rest_out = {k: v for k, v in out.items() if k != "system"}
    assert json.dumps(rest_in) == json.dumps(rest_out)


@pytest.mark.clause("MEM-INJECT.3")
def test_anthropic_system_block_list() -> None:
    req = {"system": [{"type": "text", "text": "agent"}], "messages": []}
    out = inject(req, "B", "anthropic")
    assert out["system"] == [{"type": "text", "text": "B"}, {"type": "text", "text": "agent"}]
    assert req["system"] == [{"type": "text", "text": "agent"}]


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.3", "MEM-INJECT.4")
@given(openai_requests(), blocks)
def test_openai_block_lives_in_the_leading_system_message(req: dict[str, Any], block: str) -> None:
    snapshot = copy.deepcopy(req)
    out = inject(req, block, "openai")
    assert req == snapshot
    for k, v in req.items():
        if k != "messages":
            assert out[k] is v
    msgs_in, msgs_out = req["messages"], out["messages"]
    if msgs_in and msgs_in[0]["role"] == "system":
        assert len(msgs_out) == len(msgs_in)
        assert msgs_out[0] == {
            "role": "system",
            "content": fold_memory_block(msgs_in[0]["content"], block),
        }
        assert all(a is b for a, b in zip(msgs_out[1:], msgs_in[1:], strict=True))
    else:
        assert msgs_out[0] == {"role": "system", "content": block}
        assert len(msgs_out) == len(msgs_in) + 1
        assert all(a is b for a, b in zip(msgs_out[1:], msgs_in, strict=True))


@pytest.mark.clause("MEM-INJECT.4")
def test_openai_examples() -> None:
    req = {"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]}
    out = inject(req, "B", "openai")
    # a system message that is not first is left alone; the block gets its own leading message
    assert out["messages"] == [
        {"role": "system", "content": "B"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "late"},
    ]
    req2 = {"messages": [{"role": "system", "content": "agent"}, {"role": "user", "content": "hi"}]}
    assert inject(req2, "B", "openai")["messages"][0]["content"] == "B\n\nagent"
