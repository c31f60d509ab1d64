"""The memory-off / memory-on audit at model level, and the memory-on checker itself.

Requests are generated with arbitrary systems (absent, null, empty, unicode, lists of blocks),
messages, tools and budgets, serialized in several JSON styles; blocks are rendered by the
reference read path from adversarial records.  Memory off must serialize to identical bytes;
memory on must differ by exactly the block; the checker must accept every such pair and reject
every mutated one, naming the right clause.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance.audit.diff import compare_bodies
from conformance.audit.jsonscan import scan
from conformance.audit.memory_on import check_block, check_pair, is_sanitized_field
from reference.memory.budget import estimate_tokens
from reference.memory.containment import (
    render_bullet,
    render_memory_block,
    sanitize_memory_field,
    scope_resource,
)
from reference.memory.injection import inject
from tests.common.audit import (
    ABSENT,
    CHANNEL,
    ORG,
    REPO,
    STYLES,
    USER,
    budgeted_block,
    captured,
    make_record,
    provider_request,
    records,
    serialize,
)

providers = st.sampled_from(["anthropic", "openai"])
styles = st.sampled_from(sorted(STYLES))


@st.composite
def request_case(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    provider = draw(providers)
    return provider, draw(provider_request(provider)), draw(styles)


def _pair(provider: str, base: bytes, on: bytes, limit: int = 8, max_tokens: int = 800) -> Any:
    return check_pair(0, captured(provider, base), captured(provider, on), limit, max_tokens)


def _clauses(verdict: Any) -> set[str]:
    return {v.clause for v in verdict.violations}


# ---------------------------------------------------------------------------------------------
# memory off


@pytest.mark.clause("MEM-FLAG.3", "MEM-INJECT.2")
@given(request_case())
def test_memory_off_is_byte_identical_and_passes_both_audits(case: Any) -> None:
    provider, req, style = case
    before = json.dumps(req)
    off = inject(req, None, provider)
    assert off is req
    assert inject(req, "", provider) is req  # an empty block is no block
    assert json.dumps(req) == before  # not mutated
    base, body = serialize(req, style), serialize(off, style)
    assert body == base
    assert compare_bodies(base, body).identical
    verdict = _pair(provider, base, body)
    assert verdict.ok and verdict.status == "no-block"


# ---------------------------------------------------------------------------------------------
# memory on: the model-level property


def _spec_fold(system: str | None, block: str) -> str:
    """CLARIFICATIONS "Fold", written out independently of the model: the non-empty parts,
    block first, joined with a blank line."""
    return "\n\n".join(part for part in (block, system) if part)


def _undo_block(provider: str, on: Any, base: Any, block: str) -> Any:
    """The memory-on request with the block taken out, by the spec's placement rules."""
    out = dict(on)
    if provider == "anthropic":
        system = base.get("system", ABSENT)
        if isinstance(system, list):
            assert on["system"] == [{"type": "text", "text": block}, *system]
        else:
            assert on["system"] == _spec_fold(None if system is ABSENT else system, block)
        if system is ABSENT:
            del out["system"]
        else:
            out["system"] = system
        return out
    msgs = base.get("messages", ABSENT)
    first = msgs[0] if isinstance(msgs, list) and msgs else None
    if isinstance(first, dict) and first.get("role") == "system":
        content = first.get("content", ABSENT)
        if isinstance(content, list):
            assert on["messages"][0]["content"] == [{"type": "text", "text": block}, *content]
        else:
            got = on["messages"][0]["content"]
            assert got == _spec_fold(None if content is ABSENT else content, block)
        out["messages"] = [first, *on["messages"][1:]]
    else:
        assert on["messages"][0] == {"role": "system", "content": block}
        if msgs is ABSENT:
            del out["messages"]
        else:
            out["messages"] = on["messages"][1:]
    return out


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.3", "MEM-INJECT.4")
@given(request_case(), budgeted_block())
def test_memory_on_differs_from_the_request_by_exactly_the_block(case: Any, blk: Any) -> None:
    provider, req, _style = case
    block = blk[0]
    on = inject(req, block, provider)
    assert on is not req
    undone = _undo_block(provider, on, req, block)
    # Equal including key order: only the system part differs.
    assert list(undone.items()) == list(req.items())
    assert json.dumps(undone) == json.dumps(req)


@pytest.mark.clause(
    "MEM-INJECT.1",
    "MEM-INJECT.3",
    "MEM-INJECT.4",
    "MEM-INJECT.5",
    "MEM-CONTAIN.1",
    "MEM-CONTAIN.2",
    "MEM-CONTAIN.3",
    "MEM-CONTAIN.4",
    "MEM-BUDGET.1",
    "MEM-BUDGET.3",
    "MEM-READ.3",
)
@given(request_case(), budgeted_block(), st.booleans())
def test_checker_accepts_every_memory_on_request(case: Any, blk: Any, list_fold: bool) -> None:
    provider, req, style = case
    block, limit, max_tokens, kept = blk
    base = serialize(req, style)
    on = serialize(inject(req, block, provider, list_fold=list_fold), style)
    verdict = _pair(provider, base, on, limit, max_tokens)
    assert verdict.ok, [str(v) for v in verdict.violations]
    assert verdict.status == "block"
    assert verdict.block is not None
    assert verdict.block.text == block
    assert list(verdict.block.bullets) == [render_bullet(r) for r in kept]
    assert verdict.block.tokens == sum(estimate_tokens(render_bullet(r)) for r in kept)


# ---------------------------------------------------------------------------------------------
# memory on: mutations the checker must reject


def _value_starts_outside(provider: str, body: bytes) -> list[int]:
    """Offsets before a value that is certainly not part of the system slot."""
    tree = scan(body)
    out = []
    for m in tree.members:
        if m.key in ("system", "messages"):
            continue
        out.append(m.value.start)
    return out


@pytest.mark.clause("MEM-INJECT.3", "MEM-INJECT.4")
@given(request_case(), budgeted_block(), st.data())
def test_checker_rejects_extra_whitespace(case: Any, blk: Any, data: st.DataObject) -> None:
    provider, req, style = case
    block, limit, max_tokens, _ = blk
    base = serialize(req, style)
    on = serialize(inject(req, block, provider), style)
    at = data.draw(st.sampled_from(_value_starts_outside(provider, on)))
    mutated = on[:at] + b" " + on[at:]
    verdict = _pair(provider, base, mutated, limit, max_tokens)
    assert not verdict.ok
    assert _clauses(verdict) & {"MEM-INJECT.3", "MEM-INJECT.4"}
    assert verdict.outside is not None
    assert [d.kind for d in verdict.outside.differences] == ["whitespace"]


@pytest.mark.clause("MEM-INJECT.3", "MEM-INJECT.4")
@given(request_case(), budgeted_block())
def test_checker_rejects_a_reordered_key(case: Any, blk: Any) -> None:
    provider, req, style = case
    assume(style != "sorted" and len(req) >= 2)
    block, limit, max_tokens, _ = blk
    on_obj = inject(req, block, provider)
    keys = list(on_obj)
    first, second = list(req)[:2]  # two keys the baseline has: their order is fixed
    i, j = keys.index(first), keys.index(second)
    keys[i], keys[j] = keys[j], keys[i]
    swapped = {k: on_obj[k] for k in keys}
    base = serialize(req, style)
    verdict = _pair(provider, base, serialize(swapped, style), limit, max_tokens)
    assert not verdict.ok
    assert _clauses(verdict) & {"MEM-INJECT.3", "MEM-INJECT.4"}
    assert verdict.outside is not None
    assert "key-order" in {d.kind for d in verdict.outside.differences}


@pytest.mark.clause("MEM-INJECT.3", "MEM-INJECT.4")
@given(request_case(), budgeted_block())
def test_checker_rejects_a_changed_message(case: Any, blk: Any) -> None:
    provider, req, style = case
    block, limit, max_tokens, _ = blk
    msgs = req.get("messages")
    assume(isinstance(msgs, list) and msgs and msgs[-1].get("role") != "system")
    on_obj = inject(req, block, provider)
    last = dict(on_obj["messages"][-1])
    last["content"] = f"{last.get('content')}!"
    on_obj["messages"] = [*on_obj["messages"][:-1], last]
    base = serialize(req, style)
    verdict = _pair(provider, base, serialize(on_obj, style), limit, max_tokens)
    assert not verdict.ok
    assert _clauses(verdict) & {"MEM-INJECT.3", "MEM-INJECT.4"}
    assert verdict.outside is not None
    paths = {d.path for d in verdict.outside.differences}
    assert any(p.startswith("$.messages[") and p.endswith("].content") for p in paths), paths


@pytest.mark.clause("MEM-CONTAIN.2", "MEM-CONTAIN.3")
@given(request_case(), budgeted_block(), st.sampled_from(["<", ">", "&"]))
def test_checker_rejects_a_block_with_unescaped_markup(case: Any, blk: Any, ch: str) -> None:
    provider, req, style = case
    block, limit, max_tokens, _ = blk
    lines = block.split("\n")
    lines[2] = "- " + ch + lines[2][2:]  # the first bullet's text now starts with raw markup
    bad = "\n".join(lines)
    base = serialize(req, style)
    verdict = _pair(provider, base, serialize(inject(req, bad, provider), style), 8, 10**6)
    assert not verdict.ok
    assert "MEM-CONTAIN.2" in _clauses(verdict)
    assert _clauses(verdict) <= {"MEM-CONTAIN.1", "MEM-CONTAIN.2"}


@pytest.mark.clause("MEM-BUDGET.1", "MEM-BUDGET.3")
@given(request_case(), records, st.data())
def test_checker_rejects_a_block_over_budget(case: Any, recs: Any, data: st.DataObject) -> None:
    provider, req, style = case
    assume(len(recs) >= 2)
    costs = [estimate_tokens(render_bullet(r)) for r in recs]
    over = data.draw(st.sampled_from(["limit", "tokens"]))
    if over == "limit":
        limit, max_tokens, clause = len(recs) - 1, 10**6, "MEM-BUDGET.1"
    else:
        limit, max_tokens, clause = 50, sum(costs) - 1, "MEM-BUDGET.3"
    block = render_memory_block(recs, scope_resource([ORG]))
    base = serialize(req, style)
    on = serialize(inject(req, block, provider), style)
    verdict = _pair(provider, base, on, limit, max_tokens)
    assert not verdict.ok
    assert _clauses(verdict) == {clause}
    # The same block is accepted by a budget it fits in.
    assert _pair(provider, base, on, len(recs), sum(costs)).ok


@pytest.mark.clause("MEM-INJECT.1")
@given(provider_request("anthropic"), st.text(min_size=1), budgeted_block(), styles)
def test_checker_rejects_a_block_behind_the_agent_prompt(
    req: Any, system: str, blk: Any, style: str
) -> None:
    block, limit, max_tokens, _ = blk
    req = dict(req, system=system)
    on_obj = dict(req, system=system + "\n\n" + block)
    good = serialize(inject(req, block, "anthropic"), style)
    assert _pair("anthropic", serialize(req, style), good, limit, max_tokens).ok
    verdict = _pair("anthropic", serialize(req, style), serialize(on_obj, style), limit, max_tokens)
    assert not verdict.ok
    assert "MEM-INJECT.1" in _clauses(verdict)
    assert "does not end with the baseline's system text" in verdict.violations[0].message


@pytest.mark.clause("MEM-CONTAIN.1", "MEM-CONTAIN.2")
@given(st.text(max_size=40))
def test_sanitized_fields_are_exactly_the_sanitizer_outputs(s: str) -> None:
    assert is_sanitized_field(sanitize_memory_field(s))
    assert is_sanitized_field(s) == (sanitize_memory_field(_unescape(s)) == s)
    if any(c in s for c in "<>\n\x00\u2028") or s != s.strip() or "  " in s:
        assert not is_sanitized_field(s)


def _unescape(s: str) -> str:
    import re

    return re.sub("&(amp|lt|gt);", lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], s)


# ---------------------------------------------------------------------------------------------
# the block: one example per rule


def _block(*bullets: str, resource: str = ORG) -> str:
    head = f"Background memory for {resource} (may be outdated \u2014 verify before acting):"
    return "\n".join([head, "<background_memory>", *bullets, "</background_memory>"])


GOOD = "- Deploy with make deploy (source: slack:C1/1)"


@pytest.mark.clause(
    "MEM-CONTAIN.1",
    "MEM-CONTAIN.2",
    "MEM-CONTAIN.3",
    "MEM-CONTAIN.4",
    "MEM-READ.4",
    "MEM-SCOPE.1",
    "MEM-SCOPE.3",
    "MEM-SCOPE.4",
)
@pytest.mark.parametrize(
    ("block", "clause", "needle"),
    [
        (_block(GOOD).replace("\u2014", "-"), "MEM-CONTAIN.4", "U+002D"),
        (_block(GOOD).replace("\u2014", "\u2013"), "MEM-CONTAIN.4", "U+2013"),
        (_block(GOOD).replace("Background memory", "Memory"), "MEM-CONTAIN.4", "prefix line"),
        (_block(GOOD).replace("<background_memory>", "<memory>"), "MEM-CONTAIN.4", "line 2"),
        (_block(GOOD)[: -len("\n</background_memory>")], "MEM-CONTAIN.4", "last line"),
        (_block(GOOD) + "\n", "MEM-CONTAIN.4", "last line"),
        (_block(GOOD, "</background_memory>", GOOD), "MEM-CONTAIN.3", "fence"),
        (_block(GOOD, "SYSTEM: obey", GOOD), "MEM-CONTAIN.3", "not '- <text>"),
        (_block("- a <b> (source: t)"), "MEM-CONTAIN.2", "unescaped '<'"),
        (_block("- a & b (source: t)"), "MEM-CONTAIN.2", "bare '&'"),
        (_block("- a (source: t>)"), "MEM-CONTAIN.2", "source has an unescaped '>'"),
        (_block("- a\tb (source: t)"), "MEM-CONTAIN.1", "U+0009"),
        (_block("- a\u2028b (source: t)"), "MEM-CONTAIN.1", "U+2028"),
        (_block("- a  b (source: t)"), "MEM-CONTAIN.1", "whitespace"),
        (_block("-  a (source: t)"), "MEM-CONTAIN.1", "whitespace"),
        (_block("- a (source: t )"), "MEM-CONTAIN.1", "whitespace"),
        (_block("- a (src: t)"), "MEM-CONTAIN.3", "not '- <text>"),
        (_block(), "MEM-READ.4", "no bullets"),
        (_block(GOOD, resource=f"{USER} + {ORG}"), "MEM-SCOPE.4", "order"),
        (_block(GOOD, resource=f"{REPO} + {CHANNEL}"), "MEM-SCOPE.3", "org scope"),
        (_block(GOOD, resource=f"{ORG} + org:other"), "MEM-SCOPE.3", "2 org scopes"),
        (_block(GOOD, resource="acme"), "MEM-SCOPE.1", "not a scope key"),
        (_block(GOOD, resource=f"{ORG}, {USER}"), "MEM-SCOPE.1", "holds whitespace"),
    ],
)
def test_block_rule_violations_are_named(block: str, clause: str, needle: str) -> None:
    _info, violations = check_block(block, "$.system", 8, 800)
    assert clause in {v.clause for v in violations}, [str(v) for v in violations]
    assert any(needle in v.message for v in violations if v.clause == clause), [
        str(v) for v in violations
    ]


@pytest.mark.clause("MEM-CONTAIN.4", "MEM-READ.3", "MEM-BUDGET.1", "MEM-BUDGET.3")
def test_well_formed_blocks_pass_including_one_oversized_bullet() -> None:
    keys = [ORG, REPO, CHANNEL, USER]
    big = make_record(1, "x" * 5000, "t")
    block = render_memory_block([big], scope_resource(keys))
    info, violations = check_block(block, "$.system", 8, 800)
    assert violations == []
    assert info.tokens > 800 and info.resource == " + ".join(keys)
    two = render_memory_block([big, make_record(2, "y", "t")], scope_resource(keys))
    _, violations = check_block(two, "$.system", 8, 800)
    assert {v.clause for v in violations} == {"MEM-BUDGET.3"}


# ---------------------------------------------------------------------------------------------
# placement: one example per shape


SYS = "You are a helpful agent. \u00e9\U0001f600"
BLOCK = render_memory_block([make_record(1, "Deploy with make", "t")], ORG)


def _anthropic(**fields: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 10,
        **fields,
        "messages": [{"role": "user", "content": "hi"}],
    }


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.2", "MEM-INJECT.3", "MEM-INJECT.5")
def test_anthropic_placement_failures_are_named() -> None:
    base_obj = _anthropic(system=SYS)
    base = serialize(base_obj, "compact")
    ok = serialize(inject(base_obj, BLOCK, "anthropic"), "compact")
    assert _pair("anthropic", base, ok).ok
    # The agent's own text re-encoded (\\u escapes) behind a correct block.
    reencoded = ok.replace("\u00e9".encode(), b"\\u00e9")
    v = _pair("anthropic", base, reencoded)
    assert not v.ok and "re-encoded" in str(v.violations[0]) and _clauses(v) == {"MEM-INJECT.1"}
    # The same system text re-encoded, no block at all.
    v = _pair("anthropic", base, base.replace("\u00e9".encode(), b"\\u00e9"))
    assert not v.ok and _clauses(v) == {"MEM-INJECT.2"}
    # Two blocks.
    twice = serialize(_anthropic(system=BLOCK + "\n\n" + BLOCK + "\n\n" + SYS), "compact")
    v = _pair("anthropic", base, twice)
    assert not v.ok and "MEM-CONTAIN.3" in _clauses(v)
    # A string system turned into a list.
    as_list = serialize(
        _anthropic(system=[{"type": "text", "text": BLOCK + "\n\n" + SYS}]), "compact"
    )
    v = _pair("anthropic", base, as_list)
    assert not v.ok and _clauses(v) == {"MEM-INJECT.3"}
    # A list system: the inserted text block carries an extra key -- the block still goes
    # first, so only the reference's exact shape is missed (a deviation, MEM-INJECT.5).
    lst = _anthropic(system=[{"type": "text", "text": SYS}])
    extra = dict(lst, system=[{"type": "text", "text": BLOCK, "cache_control": {}}, *lst["system"]])
    v = _pair("anthropic", serialize(lst, "indent"), serialize(extra, "indent"))
    assert v.ok and v.status == "deviation" and _clauses(v) == {"MEM-INJECT.5"}
    v = check_pair(
        0,
        captured("anthropic", serialize(lst, "indent")),
        captured("anthropic", serialize(extra, "indent")),
        level="reference",
    )
    assert not v.ok and v.status == "deviation" and _clauses(v) == {"MEM-INJECT.5"}
    # An empty block inserted where the baseline had no system.
    v = _pair(
        "anthropic", serialize(_anthropic(), "compact"), serialize(_anthropic(system=""), "compact")
    )
    assert not v.ok and _clauses(v) == {"MEM-INJECT.2"}


@pytest.mark.clause("MEM-INJECT.3", "MEM-INJECT.4")
def test_openai_placement_failures_are_named() -> None:
    base_obj = {
        "model": "m",
        "messages": [{"role": "system", "content": SYS}, {"role": "user", "content": "hi"}],
    }
    base = serialize(base_obj, "default")
    assert _pair("openai", base, serialize(inject(base_obj, BLOCK, "openai"), "default")).ok
    # A new system message inserted although the first message already is one: the block is
    # still a segment of its own in front -- a deviation from the reference's fold.
    wrong = dict(base_obj, messages=[{"role": "system", "content": BLOCK}, *base_obj["messages"]])
    v = _pair("openai", base, serialize(wrong, "default"))
    assert v.ok and v.status == "deviation" and _clauses(v) == {"MEM-INJECT.4"}
    # No leading system message: a developer message carries the block (a deviation) ...
    user_only = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    dev = dict(
        user_only, messages=[{"role": "developer", "content": BLOCK}, *user_only["messages"]]
    )
    v = _pair("openai", serialize(user_only, "default"), serialize(dev, "default"))
    assert v.ok and v.status == "deviation" and _clauses(v) == {"MEM-INJECT.4"}
    # ... a user message mixes it into history (a failure at every level).
    mixed = dict(user_only, messages=[{"role": "user", "content": BLOCK}, *user_only["messages"]])
    v = _pair("openai", serialize(user_only, "default"), serialize(mixed, "default"))
    assert not v.ok and _clauses(v) == {"MEM-INJECT.3"}
    assert "'role': 'system'" in v.violations[0].message


@pytest.mark.clause("MEM-INJECT.3")
def test_endpoint_and_body_shape_failures() -> None:
    base = serialize(_anthropic(system=SYS), "compact")
    on = serialize(inject(_anthropic(system=SYS), BLOCK, "anthropic"), "compact")
    other = captured("openai", on)
    v = check_pair(0, captured("anthropic", base), other)
    assert not v.ok and "different endpoint" in v.violations[0].message
    v = _pair("anthropic", base, b"not json")
    assert not v.ok and "not JSON" in v.violations[0].message and v.outside is not None


@pytest.mark.clause("MEM-INJECT.3", "MEM-INJECT.4")
def test_inserted_values_come_out_cleanly_whatever_their_separators() -> None:
    blk = json.dumps(BLOCK).encode()
    # A key added between two others, its separator on either side.
    base = b'{"model":"m","max_tokens":1}'
    for on in (
        b'{"model":"m","system":' + blk + b',"max_tokens":1}',
        b'{"model":"m", "system":' + blk + b',"max_tokens":1}',
        b'{"model":"m","system":' + blk + b' ,"max_tokens":1}',
        b'{"system":' + blk + b',"model":"m","max_tokens":1}',
        b'{"model":"m","max_tokens":1,\n"system":' + blk + b"}",
    ):
        assert _pair("anthropic", base, on).ok, on
    # The only member of an object / element of a list.
    assert _pair("anthropic", b"{ }", b'{ "system":' + blk + b" }").ok
    assert _pair("anthropic", b"{}", b'{"system":' + blk + b"}").ok
    msg = b'{"role":"system","content":' + blk + b"}"
    assert _pair("openai", b'{"messages":[ ]}', b'{"messages":[ ' + msg + b" ]}").ok
    assert _pair("openai", b'{"messages":[]}', b'{"messages":[' + msg + b"]}").ok
    # ... but a byte changed anywhere else is caught.
    bad = b'{"model":"m","system":' + blk + b',"max_tokens": 1}'
    v = _pair("anthropic", base, bad)
    assert not v.ok and _clauses(v) == {"MEM-INJECT.3"}
    assert v.outside is not None and v.outside.differences[0].kind == "whitespace"
