"""Credential-shaped bodies (``reference/ledger/credentials.py``): credentialVerdict."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, LEDGER, Args, Fn, fn
from conformance.binding.functions.common import SECRETS, texts
from conformance.binding.judge import Judged, ok
from reference.ledger.credentials import credential_verdict


def _cred(a: Args) -> JSON:
    return "refuse" if credential_verdict(a["body"]) is not None else "store"


def _cred_judge(a: Args) -> Judged:
    """A body only a broad detector matches may be stored or refused (LED-CRED.4)."""
    v = credential_verdict(a["body"])
    if v == "either":
        return Judged([ok("refuse"), ok("store")])
    return Judged([ok("refuse" if v else "store")])


def _cred_boundaries() -> list[tuple[str, Args]]:
    return [
        ("openai key", {"body": "key sk-" + "a" * 20}),
        ("19 characters: a look-alike", {"body": "key sk-" + "a" * 19}),
        ("inside a word: not a key", {"body": "task-" + "a" * 30}),
        ("github token of 36", {"body": "ghp_" + "A" * 36}),
        ("github token of 20 (open point)", {"body": "ghp_" + "A" * 20}),
        ("aws key id", {"body": "AKIA" + "B" * 16}),
        ("bearer", {"body": "Authorization: Bearer " + "c" * 16}),
        ("assignment", {"body": "api_key = " + "d" * 12}),
        ("a call is not an assignment", {"body": "token = getTokenFromStore()"}),
        ("PEM header without END (open point)", {"body": "-----BEGIN PRIVATE KEY-----"}),
        ("prose", {"body": "prefers tabs over spaces"}),
    ]


def _cred_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """A credential stored: LED-CRED.1; a look-alike refused: LED-CRED.3."""
    value = got.get("ok") if isinstance(got, dict) else None
    return ("LED-CRED.1",) if value == "store" else ("LED-CRED.3",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "credentialVerdict",
        LEDGER,
        ("LED-CRED.1", "LED-CRED.3", "LED-CRED.4"),
        "refuse or store a body",
        _cred,
        st.fixed_dictionaries(
            {
                "body": st.one_of(
                    texts,
                    st.sampled_from(SECRETS),
                    st.builds(lambda n: "ghp_" + "A" * n, st.integers(18, 38)),
                )
            }
        ),
        _cred_boundaries,
        _cred_judge,
        blame=_cred_blame,
    ),
)
