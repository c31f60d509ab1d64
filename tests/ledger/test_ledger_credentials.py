"""Credential-shaped bodies: every detector fires on its shape, look-alikes never do."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.ledger.consolidation import apply_batch
from reference.ledger.credentials import CREDENTIAL_MESSAGE, DETECTORS, detect_credential
from reference.ledger.records import empty_state
from tests.common.ledger_strategies import (
    BENIGN,
    LOOK_ALIKES,
    SECRETS,
    T0,
    embedded,
    ok,
    refused,
    saved,
)

DETECTOR = dict(DETECTORS)


@pytest.mark.clause("LED-CRED.1", "LED-CRED.4")
def test_detector_table_shape_and_names() -> None:
    names = [name for name, _ in DETECTORS]
    assert names == [
        "pem_private_key",
        "github_pat",
        "github_token",
        "slack_token",
        "anthropic_key",
        "openai_key",
        "notion_secret",
        "aws_access_key_id",
        "bearer_token",
        "jwt",
        "secret_assignment",
    ]
    assert all(isinstance(p, re.Pattern) for _, p in DETECTORS)
    assert set(SECRETS) == set(names)


@pytest.mark.clause("LED-CRED.1")
@pytest.mark.parametrize("name", list(SECRETS))
@given(data=st.data())
def test_each_detector_flags_its_shape(name: str, data: st.DataObject) -> None:
    body = data.draw(embedded(SECRETS[name]))
    assert DETECTOR[name].search(body) is not None
    assert detect_credential(body) is not None


@pytest.mark.clause("LED-CRED.1", "LED-CRED.4")
@pytest.mark.parametrize(
    "body, name",
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "pem_private_key"),
        ("-----BEGIN PRIVATE KEY-----", "pem_private_key"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat"),
        ("ghp_" + "a1" * 18, "github_token"),
        ("ghs_" + "Z" * 20, "github_token"),
        ("xoxb-1234567890-abcdef", "slack_token"),
        ("sk-ant-api03-" + "x" * 20, "anthropic_key"),
        ("sk-" + "a" * 20, "openai_key"),
        ("sk-proj-" + "B" * 20, "openai_key"),
        ("secret_" + "q" * 20, "notion_secret"),
        ("AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"),
        ("ASIA1234567890ABCDEF", "aws_access_key_id"),
        ("Authorization: Bearer abcdef0123456789", "bearer_token"),
        ("aaaaaaaaaa.bbbbbbbbbb.cccccccccc", "jwt"),
        ("API_KEY=abcdef123456", "secret_assignment"),
        ("password: hunter2hunter2", "secret_assignment"),
        ('"github_token": "abcdefghijkl"', "secret_assignment"),
        ("export OPENAI_API_KEY=abc123def456ghi", "secret_assignment"),
        ("db_password=Sup3rS3cretValue.", "secret_assignment"),
    ],
)
def test_exact_examples_named(body: str, name: str) -> None:
    assert detect_credential(body) == name


@pytest.mark.clause("LED-CRED.4")
@pytest.mark.parametrize(
    "body",
    [
        "ghp_" + "a" * 19,  # one short of the threshold
        "github_pat_" + "a" * 19,
        "xoxb-" + "1" * 9,
        "sk-" + "a" * 19,
        "sk-ant-" + "a" * 12,  # 16 token chars after "sk-": still short for openai_key too
        "secret_" + "a" * 19,
        "AKIA" + "ABCDEFGHIJKLMNO",  # 15
        "Bearer " + "a" * 15,
        "aaaaaaaaa.bbbbbbbbbb.cccccccccc",  # first segment 9
        "API_KEY=abcdef12345",  # 11
        "task-1234567890abcdefghijkl",  # "sk-" inside a word
        "my_secret_abcdefghijklmnopqrstuv",  # "secret_" inside a word ... and no [:=]
        "bearer abcdefghijklmnopqrstuvwxyz",  # the scheme word is case-sensitive
    ],
)
def test_thresholds_and_boundaries(body: str) -> None:
    assert detect_credential(body) is None


@pytest.mark.clause("LED-CRED.3")
@pytest.mark.parametrize("body", LOOK_ALIKES)
def test_listed_look_alikes_pass(body: str) -> None:
    assert detect_credential(body) is None
    state, rec = ok(empty_state(), "memory/save_memory_record", {"body": body}, T0)
    assert rec["body"] == body and rec["status"] == "active"


@pytest.mark.clause("LED-CRED.3")
@pytest.mark.parametrize("kind", list(BENIGN))
@given(data=st.data())
def test_generated_benign_text_never_flagged(kind: str, data: st.DataObject) -> None:
    body = data.draw(BENIGN[kind])
    assert detect_credential(body) is None, body


@pytest.mark.clause("LED-CRED.2")
@given(name=st.sampled_from(list(SECRETS)), data=st.data())
def test_secret_refused_on_save_supersede_and_propose(name: str, data: st.DataObject) -> None:
    body = data.draw(embedded(SECRETS[name]))
    state, (rid,) = saved(["I prefer tea"])
    for method, params in (
        ("memory/save_memory_record", {"body": body}),
        ("memory/supersede_memory_record", {"recordId": rid, "body": body}),
        ("_test/propose", {"body": body}),
    ):
        r = refused(state, method, params, T0 + 10)
        assert r.code == 1000 and r.message == CREDENTIAL_MESSAGE
        assert r.admits(1000, CREDENTIAL_MESSAGE)
        assert not r.admits(-32602)
        assert not r.admits(1000, "Something else.")


@pytest.mark.clause("LED-CRED.2", "LED-GATE.1")
@given(name=st.sampled_from(list(SECRETS)), data=st.data())
def test_secret_refused_in_merge_and_correct(name: str, data: st.DataObject) -> None:
    body = data.draw(SECRETS[name])
    state, (a, b) = saved(["I prefer tea", "I prefer green tea"])
    new, report = apply_batch(
        state,
        "account:local",
        [
            {"operation": "merge", "targets": [a, b], "body": body},
            {"operation": "correct", "targets": [a], "body": body},
        ],
        T0 + 10,
    )
    assert (report.counts.refused, report.counts.applied) == (2, 0)
    assert new == state


@pytest.mark.clause("LED-CRED.2")
def test_exact_credential_message() -> None:
    assert CREDENTIAL_MESSAGE == "Memory pins cannot store credentials. Nothing was saved."
    r = refused(
        empty_state(), "memory/save_memory_record", {"body": "key AKIAIOSFODNN7EXAMPLE"}, T0
    )
    assert r.message == CREDENTIAL_MESSAGE


@pytest.mark.clause("LED-CRED.1")
@pytest.mark.parametrize(
    "body",
    [
        "token" * 800,
        "a" * 4000,
        "secret_" * 500,
        "x-" * 2000,
        ("a" * 9 + ".") * 400,
        "token: " * 500,
    ],
)
def test_detection_terminates_on_adversarial_bodies(body: str) -> None:
    # Not a timing assertion: a catastrophic-backtracking pattern would hang this test.
    assert detect_credential(body) is None
