"""Blame at the grain of the rule: a ledger answer is compared by its parts, and a part only a
reference rule fixes gives a deviation, never a seed failure.

A packet line's parts are its id prefix, kind, reason label and body; the reason label is
LED-PACKET.5's (reference).  A credential refusal's shape list is LED-CRED.1's (reference): the
seed names no shape, so a store whose detector is narrower stores such a body and the run
follows it (LED-CRED.6), while a shape the store has shown it applies must be applied
everywhere (LED-CRED.2, seed).  The store making both choices is the bundled store with the
catalogue variants ``ledger-packet-real-labels`` and ``ledger-credential-narrow``.
"""

from __future__ import annotations

import io
import secrets
from typing import Any

import pytest

from conformance.commands.target import start_bundled_store
from conformance.oracle import ledger as oracle
from conformance.oracle.ledger.worlds import packet_model
from conformance.vocabulary import Secret, TargetConfig
from reference.ledger.outcome import Ok, Refused
from reference.ledger.records import empty_state
from reference.ledger.wire import allowed, handle
from tests.common.engine import run_engine

T0 = 1_772_442_000_000  # 2026-03-02T09:00:00.000Z
BOTH = frozenset({"ledger-packet-real-labels", "ledger-credential-narrow"})


def _run(quirks: frozenset[str], level: str) -> tuple[int, dict[str, Any]]:
    token = secrets.token_urlsafe(24)
    handle_ = start_bundled_store(token, quirks=quirks)
    try:
        res = run_engine(
            TargetConfig(handle_.url, Secret(token), 10.0),
            spec="ledger",
            machines=False,
            quiet=True,
            out=io.StringIO(),
            level=level,
        )
    finally:
        handle_.stop()
    return res.exit_code, res.data


@pytest.fixture(scope="module")
def both_levels() -> dict[str, tuple[int, dict[str, Any]]]:
    return {level: _run(BOTH, level) for level in ("seed", "reference")}


@pytest.mark.clause("LED-PACKET.5", "LED-PACKET.6", "LED-CRED.1", "LED-CRED.6")
def test_other_labels_and_a_narrower_detector_are_conformant_at_seed_level(
    both_levels: dict[str, tuple[int, dict[str, Any]]],
) -> None:
    code, data = both_levels["seed"]
    assert code == 0 and data["divergences"] == [], data["divergences"]
    named = {c for d in data["deviations"] for c in d["clauses"]}
    # both differences are listed, each under its reference clause only
    assert named == {"LED-PACKET.5", "LED-CRED.1"}, named
    by_clause = {c: d for d in data["deviations"] for c in d["clauses"]}
    assert "explicit pin" in by_clause["LED-PACKET.5"]["reason"]
    assert "Memory pins cannot store credentials" in by_clause["LED-CRED.1"]["reason"]
    # the packet deviations did not stop their scenarios: a read changes neither side
    packet = next(
        s for s in data["scenarios"] if s["name"] == "the_packet_drops_a_line_whole_at_4000"
    )
    assert all(o["verdict"] in ("pass", "deviate") for o in packet["steps"])
    code, _ = both_levels["reference"]
    assert code == 1


def _labelled(lines: list[str], labels: dict[str, str]) -> dict[str, Any]:
    out = []
    for line in lines:
        for old, new in labels.items():
            line = line.replace(f"({old}):", f"({new}):", 1)
        out.append(line)
    return {"lines": out, "text": "\n".join(out)}


@pytest.mark.clause("LED-PACKET.5", "LED-PACKET.6", "LED-PACKET.4", "LED-PACKET.1", "LED-REC.2")
def test_a_packet_line_is_blamed_by_the_part_that_differs() -> None:
    """Only the label differs: LED-PACKET.5 alone, with the cap judged under the store's
    labels; a kind or a body that differs names its seed clause."""
    state = empty_state()
    # two pins; the second's line fits the cap only with labels no longer than the reference's
    short = "explicit pin"
    first = "a" * 2000
    state, a = handle(state, "memory/save_memory_record", {"body": first}, T0)
    room = 4000 - len(f"[00000001] preference (user_explicit): {first}") - 1
    second = "b" * (room - len("[00000002] preference (user_explicit): "))
    state, b = handle(state, "memory/save_memory_record", {"body": second}, T0 + 1000)
    _, packet = handle(state, "_test/packet", {}, T0 + 2000)
    assert isinstance(packet, Ok) and isinstance(packet.result, dict)
    model = packet_model(state)
    c = oracle.Context(oracle.Ids(), oracle.Times(exact=True))
    for out in (a, b):
        assert isinstance(out, Ok) and isinstance(out.result, dict)
        c.ids.link(str(out.result["id"]), str(out.result["id"]))
    lines = list(packet.result["lines"])
    assert len(lines) == 2
    j = oracle.judge("_test/packet", packet, 200, _labelled(lines, {}), c.copy(), packet=model)
    assert j.verdict == "pass"
    # a shorter label: both lines still fit -> the label alone differs
    j = oracle.judge(
        "_test/packet", packet, 200, _labelled(lines, {"user_explicit": "pin"}), c.copy(),
        packet=model,
    )  # fmt: skip
    assert j.verdict == "diverge" and j.clauses == ("LED-PACKET.5",), j.reason
    # a longer label: the older line (second: newest first) no longer fits; the store
    # dropping it whole is right
    longer = "explicit pin, saved by you on purpose"
    store = _labelled(lines, {"user_explicit": longer})
    store = {"lines": store["lines"][:1], "text": store["lines"][0]}
    j = oracle.judge("_test/packet", packet, 200, store, c.copy(), packet=model)
    assert j.verdict == "diverge" and j.clauses == ("LED-PACKET.5",), j.reason
    both = _labelled(lines, {"user_explicit": short})
    both["lines"][0] = both["lines"][0].replace("preference", "fact", 1)
    both["text"] = "\n".join(both["lines"])
    j = oracle.judge("_test/packet", packet, 200, both, c.copy(), packet=model)
    assert j.verdict == "diverge" and "LED-REC.2" in j.clauses  # a kind that differs
    body = _labelled(lines, {})
    body["lines"][1] = body["lines"][1][:-3] + "ccc"
    body["text"] = "\n".join(body["lines"])
    j = oracle.judge("_test/packet", packet, 200, body, c.copy(), packet=model)
    assert j.verdict == "diverge" and "LED-PACKET.1" in j.clauses  # a body that differs


@pytest.mark.clause("LED-CRED.1", "LED-CRED.2", "LED-CRED.6")
def test_a_narrower_detector_is_a_departure_unless_the_store_showed_the_shape() -> None:
    bearer = {"body": "Bearer abcdefghijklmnopqrstuvwxyz"}
    state = empty_state()
    answers = allowed(state, "memory/save_memory_record", bearer, T0)
    refused = [st for st, o in answers if isinstance(o, Refused)]
    stored = [st for st, o in answers if isinstance(o, Ok)]
    assert refused and stored  # refused (the reference) or stored by a narrower detector
    assert all(st.departures == frozenset({"LED-CRED.1"}) for st in stored)
    assert all("bearer_token" in st.credential_shown for st in refused)
    # once the store refused it on save, an edit storing it is no longer allowed
    shown, _ = handle(refused[0], "memory/save_memory_record", {"body": "x"}, T0 + 1000)
    shown = type(shown)(**{**shown.__dict__, "credential_shown": frozenset({"bearer_token"})})
    rid = next(r.id for r in shown.records if r.body == "x")
    edit = allowed(shown, "memory/supersede_memory_record", {"recordId": rid, **bearer}, T0 + 2000)
    assert all(isinstance(o, Refused) for _st, o in edit)
    # a whole PEM private-key block is a credential under any reading
    pem = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"
    answers = allowed(state, "memory/save_memory_record", {"body": pem}, T0)
    assert all(isinstance(o, Refused) for _st, o in answers)
