"""A list-form system prompt takes the block either way (MEM-INJECT.5), on the exact bytes the
official SDKs send.

``SDK_ANTHROPIC`` and ``SDK_OPENAI`` were recorded with ``memspec audit capture`` from the
official Python SDKs (``anthropic`` 2.17.0 ``messages.create``, ``openai`` 3.63.0
``chat.completions.create`` with ``stream_options``): compact JSON, UTF-8, the SDK's own key
order.  A bot that hands the SDK a memory-on system list gets the same serialization, so the
memory-on bytes here are the baseline re-serialized the SDK's way after ``inject``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.audit.capture import encode_record
from conformance.audit.memory_on import check_pair
from conformance.cli import main
from reference.memory.containment import render_memory_block
from reference.memory.injection import inject
from tests.common.audit import ORG, captured, make_record

SDK_ANTHROPIC = (
    b'{"max_tokens":256,"messages":[{"role":"user","content":"Who approves?"}],'
    b'"model":"claude-sonnet-4-5","system":[{"type":"text","text":"You are Deployer. \xc3\xa9",'
    b'"cache_control":{"type":"ephemeral"}}]}'
)
SDK_OPENAI = (
    b'{"model":"gpt-4.1-mini","stream":true,"messages":[{"role":"system","content":'
    b'[{"type":"text","text":"sys"}]},{"role":"user","content":"hi"}],'
    b'"stream_options":{"include_usage":true}}'
)
BLOCK = render_memory_block(
    [make_record(1, "Staging deploys need <b>two</b> approvals & a ticket", "slack:C1/2")], ORG
)


def sdk_bytes(obj: Any) -> bytes:
    """How both SDKs serialize a request body (checked against the recorded bytes below)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _verdict(provider: str, base: bytes, on: bytes, level: str = "seed") -> Any:
    return check_pair(0, captured(provider, base), captured(provider, on), level=level)


def _clauses(v: Any) -> set[str]:
    return {x.clause for x in v.violations}


@pytest.mark.clause("MEM-INJECT.5")
def test_the_recorded_sdk_bytes_are_the_sdk_serialization() -> None:
    assert sdk_bytes(json.loads(SDK_ANTHROPIC)) == SDK_ANTHROPIC
    assert sdk_bytes(json.loads(SDK_OPENAI)) == SDK_OPENAI


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.5")
@pytest.mark.parametrize(
    ("provider", "base"), [("anthropic", SDK_ANTHROPIC), ("openai", SDK_OPENAI)]
)
@pytest.mark.parametrize("list_fold", [False, True], ids=["inserted-first", "folded"])
def test_both_folds_pass_on_sdk_requests(provider: str, base: bytes, list_fold: bool) -> None:
    on = sdk_bytes(inject(json.loads(base), BLOCK, provider, list_fold=list_fold))  # type: ignore[arg-type]
    v = _verdict(provider, base, on)
    assert v.ok and v.status == "block", [str(x) for x in v.violations]
    assert v.block is not None and v.block.text == BLOCK
    where = "[0].text" if list_fold else "[0]"
    assert where in v.block.location
    if list_fold and provider == "anthropic":  # one cached block: cache_control kept
        sent = json.loads(on)["system"]
        assert len(sent) == 1 and sent[0]["cache_control"] == {"type": "ephemeral"}
        assert sent[0]["text"] == BLOCK + "\n\nYou are Deployer. é"


def _folded(**changes: Any) -> bytes:
    req = json.loads(SDK_ANTHROPIC)
    first = dict(req["system"][0], text=BLOCK + "\n\n" + req["system"][0]["text"])
    first.update(changes)
    return sdk_bytes(dict(req, system=[{k: v for k, v in first.items() if v is not None}]))


@pytest.mark.clause("MEM-INJECT.1", "MEM-INJECT.3")
def test_a_fold_that_breaks_the_seed_fails() -> None:
    # cache_control dropped from the folded block: a byte outside the block changed
    v = _verdict("anthropic", SDK_ANTHROPIC, _folded(cache_control=None))
    assert not v.ok and _clauses(v) == {"MEM-INJECT.3"}
    # the block behind the agent's text
    req = json.loads(SDK_ANTHROPIC)
    behind = dict(req["system"][0], text=req["system"][0]["text"] + "\n\n" + BLOCK)
    v = _verdict("anthropic", SDK_ANTHROPIC, sdk_bytes(dict(req, system=[behind])))
    assert not v.ok and "MEM-INJECT.1" in _clauses(v)
    # a single newline instead of the blank line
    req = json.loads(SDK_ANTHROPIC)
    tight = dict(req["system"][0], text=BLOCK + "\n" + req["system"][0]["text"])
    v = _verdict("anthropic", SDK_ANTHROPIC, sdk_bytes(dict(req, system=[tight])))
    assert not v.ok and "MEM-INJECT.1" in _clauses(v)
    # folded into the second text block, the first left alone
    two = dict(req, system=[{"type": "text", "text": "A"}, {"type": "text", "text": "B"}])
    on = dict(two, system=[two["system"][0], {"type": "text", "text": BLOCK + "\n\nB"}])
    v = _verdict("anthropic", sdk_bytes(two), sdk_bytes(on))
    assert not v.ok and _clauses(v) <= {"MEM-INJECT.2", "MEM-INJECT.3"}
    # two blocks inserted
    on = dict(two, system=[{"type": "text", "text": BLOCK}, *two["system"], two["system"][0]])
    v = _verdict("anthropic", sdk_bytes(two), sdk_bytes(on))
    assert not v.ok and _clauses(v) == {"MEM-INJECT.3"}


@pytest.mark.clause("MEM-INJECT.5")
def test_an_inserted_block_with_its_own_cache_control_is_a_deviation() -> None:
    req = json.loads(SDK_ANTHROPIC)
    cached = {"type": "text", "text": BLOCK, "cache_control": {"type": "ephemeral"}}
    on = sdk_bytes(dict(req, system=[cached, *req["system"]]))
    v = _verdict("anthropic", SDK_ANTHROPIC, on)
    assert v.ok and v.status == "deviation" and _clauses(v) == {"MEM-INJECT.5"}
    v = _verdict("anthropic", SDK_ANTHROPIC, on, level="reference")
    assert not v.ok and v.status == "deviation"


@pytest.mark.clause("MEM-INJECT.4")
def test_openai_shapes_the_reference_does_not_choose_are_deviations() -> None:
    req = json.loads(SDK_OPENAI)
    # the block in a system message of its own ahead of the leading system message
    ahead = dict(req, messages=[{"role": "system", "content": BLOCK}, *req["messages"]])
    v = _verdict("openai", SDK_OPENAI, sdk_bytes(ahead))
    assert v.ok and v.status == "deviation" and _clauses(v) == {"MEM-INJECT.4"}
    assert not _verdict("openai", SDK_OPENAI, sdk_bytes(ahead), level="reference").ok
    # ... and a user message carrying it fails at every level
    mixed = dict(req, messages=[{"role": "user", "content": BLOCK}, *req["messages"]])
    v = _verdict("openai", SDK_OPENAI, sdk_bytes(mixed))
    assert not v.ok and v.status == "fail"


@pytest.mark.clause("MEM-INJECT.5")
def test_the_cli_reports_a_deviation_and_fails_it_only_at_level_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = json.loads(SDK_ANTHROPIC)
    cached = {"type": "text", "text": BLOCK, "cache_control": {"type": "ephemeral"}}
    files = []
    for name, body in (
        ("base", SDK_ANTHROPIC),
        ("on", sdk_bytes(dict(req, system=[cached, *req["system"]]))),
    ):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(encode_record(captured("anthropic", body)) + "\n")
        files.append(str(path))
    report = tmp_path / "r.json"
    assert main(["audit", "memory-on", *files, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert (
        "request 0 (anthropic): DEVIATION" in out and "MEM-INJECT.5: the inserted text block" in out
    )
    assert "1 deviating from the reference" in out
    rep = json.loads(report.read_text())
    assert rep["requests"][0]["verdict"] == "deviation" and rep["parameters"]["level"] == "seed"
    assert main(["audit", "memory-on", *files, "--level", "reference"]) == 1
    assert "FAIL (deviation, --level reference)" in capsys.readouterr().out
