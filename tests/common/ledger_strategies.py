"""Shared Hypothesis strategies and helpers for the ledger model tests."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

from reference.ledger.expiry import set_expiry
from reference.ledger.lifecycle import propose
from reference.ledger.outcome import Ok, Refused
from reference.ledger.records import SCOPE_LOCAL, LedgerState, empty_state
from reference.ledger.timefmt import parse_rfc3339
from reference.ledger.wire import handle
from reference.ledger.wire.methods import record_outcome

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z
DAY = 86_400_000

ALNUM = string.ascii_letters + string.digits
TOKEN = ALNUM + "_-"
UPPER_ALNUM = string.ascii_uppercase + string.digits

WORDS = (
    "tea coffee prefers dark mode deploy friday token secret password key bearer credential "
    "uses vim python rust meeting notes always never the a of in on with for project review "
    "api access review sha commit branch main release"
).split()


def text_of(alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=lo, max_size=hi)


# --- secrets, one strategy per detector -----------------------------------------------------

_PEM = st.builds(
    lambda kind, body: (
        f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    ),
    st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "DSA ", "ENCRYPTED "]),
    text_of(string.ascii_letters + string.digits + "+/=", 0, 64),
)
_GITHUB_PAT = text_of(ALNUM + "_", 20, 82).map(lambda s: "github_pat_" + s)
_GITHUB_TOKEN = st.builds(
    lambda c, s: f"gh{c}_{s}", st.sampled_from("pousr"), text_of(ALNUM, 20, 40)
)
_SLACK = st.builds(
    lambda c, s: f"xox{c}-{s}", st.sampled_from("baprs"), text_of(ALNUM + "-", 10, 60)
)
_ANTHROPIC = text_of(TOKEN, 20, 100).map(lambda s: "sk-ant-" + s)
_OPENAI = st.builds(
    lambda p, s: p + s,
    st.sampled_from(["sk-", "sk-proj-"]),
    text_of(TOKEN, 20, 80).filter(lambda s: not s.startswith("ant-")),
)
_NOTION = text_of(ALNUM, 20, 50).map(lambda s: "secret_" + s)
_AWS = st.builds(
    lambda p, s: p + s, st.sampled_from(["AKIA", "ASIA"]), text_of(UPPER_ALNUM, 16, 16)
)
_BEARER = st.builds(
    lambda sep, s: f"Bearer{sep}{s}",
    st.sampled_from([" ", "  ", "\t"]),
    text_of(ALNUM + "._~+/-", 16, 80),
)
_JWT = st.tuples(text_of(TOKEN, 10, 40), text_of(TOKEN, 10, 80), text_of(TOKEN, 10, 60)).map(
    ".".join
)
_NAME_WORD = st.sampled_from(
    ["api_key", "apikey", "api-key", "access_key", "token", "secret", "password", "passwd",
     "pwd", "credential", "credentials"]
)  # fmt: skip
_ASSIGN = st.builds(
    lambda pre, word, upper, post, q1, sep, q2, value: (
        f"{q1}{pre}{word.upper() if upper else word}{post}{q1}{sep}{q2}{value}{q2}"
    ),
    st.sampled_from(["", "MY_", "client_", "db.", "OPENAI_", "x-"]),
    _NAME_WORD,
    st.booleans(),
    st.sampled_from(["", "_value", "s", "_1"]),
    st.sampled_from(["", '"', "'"]),
    st.sampled_from(["=", ": ", " = ", ":", " : "]),
    st.sampled_from(["", '"', "'"]),
    text_of(TOKEN, 12, 60),
)

SECRETS: dict[str, st.SearchStrategy[str]] = {
    "pem_private_key": _PEM,
    "github_pat": _GITHUB_PAT,
    "github_token": _GITHUB_TOKEN,
    "slack_token": _SLACK,
    "anthropic_key": _ANTHROPIC,
    "openai_key": _OPENAI,
    "notion_secret": _NOTION,
    "aws_access_key_id": _AWS,
    "bearer_token": _BEARER,
    "jwt": _JWT,
    "secret_assignment": _ASSIGN,
}
"""A generator of bodies each detector must flag (keyed by detector name)."""

sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


def embedded(secret: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """The secret with benign words around it (separated by spaces)."""
    return st.builds(
        lambda a, s, b: " ".join(x for x in (a, s, b) if x),
        st.one_of(st.just(""), sentence),
        secret,
        st.one_of(st.just(""), sentence),
    )


# --- benign look-alikes ---------------------------------------------------------------------

hex_sha = text_of("0123456789abcdef", 40, 40)
uuid_text = st.uuids().map(str)
_label = text_of(string.ascii_lowercase + string.digits, 1, 9)
_QUERY_KEYS = ["q", "page", "sort", "lang", "ref", "id", "limit", "offset", "utm_source"]
url_with_query = st.builds(
    lambda host, tld, path, query: (
        f"https://{'.'.join(host)}.{tld}/{'/'.join(path)}?" + "&".join(f"{k}={v}" for k, v in query)
    ),
    st.lists(_label, min_size=1, max_size=2),
    st.sampled_from(["com", "org", "io", "dev"]),
    st.lists(text_of(string.ascii_lowercase + string.digits + "-_", 1, 14), max_size=3),
    st.lists(
        st.tuples(
            st.sampled_from(_QUERY_KEYS), text_of(string.ascii_lowercase + string.digits, 0, 30)
        ),
        min_size=1,
        max_size=4,
    ),
)
_ident = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(string.ascii_lowercase),
    text_of(string.ascii_letters + string.digits, 0, 30),
)
call_assignment = st.builds(
    lambda decl, name, fn: f"{decl} {name} = {fn}();",
    st.sampled_from(["const", "let", "var"]),
    st.sampled_from(["token", "secret", "password", "apiKey", "credential"]),
    _ident,
)
dotted_assignment = st.builds(
    lambda decl, name, obj, attr: f"{decl} {name} = {obj}.{attr};",
    st.sampled_from(["const", "let", "var"]),
    st.sampled_from(["secret_name", "token", "password", "api_key"]),
    _ident,
    _ident,
)
short_assignment = st.builds(
    lambda name, value: f"{name}={value}",
    st.sampled_from(["TOKEN", "SECRET", "PASSWORD", "API_KEY"]),
    text_of(TOKEN, 0, 11),
)
BENIGN: dict[str, st.SearchStrategy[str]] = {
    "hex_sha": hex_sha,
    "uuid": uuid_text,
    "url_with_query": url_with_query,
    "call_assignment": call_assignment,
    "dotted_assignment": dotted_assignment,
    "short_assignment": short_assignment,
    "sentence": sentence,
}

LOOK_ALIKES = (
    "0123456789abcdef0123456789abcdef01234567",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4",
    "123e4567-e89b-12d3-a456-426614174000",
    "https://example.com/search?q=memory&page=2",
    "TOKEN=development",
    "const token = getTokenFromStore();",
    "let secret_name = config.secret_name;",
)

# --- driving the wire ----------------------------------------------------------------------


#: The model's own builders of two states the wire reaches only through consolidation: an
#: expiry at a chosen instant (``expire`` counts whole days from the run) and a proposal in a
#: conflict group (a real proposal never carries one; ``group`` makes members of active
#: records).  Model tests name them as calls for brevity; no store serves them.
MODEL_EXPIRY = "model/set_expiry"
MODEL_GROUPED_PROPOSAL = "model/propose_in_group"


def model_handle(
    state: LedgerState, method: str, params: Any, now: int
) -> tuple[LedgerState, Ok | Refused]:
    """:func:`reference.ledger.wire.handle`, plus the two model builders above."""
    if method == MODEL_EXPIRY:
        at = parse_rfc3339(params["expiresAt"])
        assert at is not None
        answer = set_expiry(state, SCOPE_LOCAL, params["recordId"], at, now)
        return record_outcome(state, answer)
    if method == MODEL_GROUPED_PROPOSAL:
        fields = {k: v for k, v in params.items() if k not in ("body", "conflictGroup")}
        answer = propose(
            state,
            SCOPE_LOCAL,
            params["body"],
            now,
            kind=fields.get("kind"),
            session_id=fields.get("sessionId"),
            confidence_bps=fields.get("confidenceBps"),
            rationale=fields.get("rationale"),
            conflict_group=params["conflictGroup"],
        )
        return record_outcome(state, answer)
    return handle(state, method, params, now)


def call(
    state: LedgerState, method: str, params: Any, now: int
) -> tuple[LedgerState, Ok | Refused]:
    return model_handle(state, method, params, now)


def ok(state: LedgerState, method: str, params: Any, now: int) -> tuple[LedgerState, Any]:
    """Call and insist on success; return the new state and the JSON result."""
    new, outcome = model_handle(state, method, params, now)
    assert isinstance(outcome, Ok), (method, params, outcome)
    return new, outcome.result


def result_of(outcome: Ok | Refused) -> Any:
    """The JSON result of an answer that must be a success (``Ok.result`` is typed ``object``:
    the model's own calls carry model values there)."""
    assert isinstance(outcome, Ok), outcome
    return outcome.result


def refused(state: LedgerState, method: str, params: Any, now: int) -> Refused:
    """Call, insist on a refusal, and insist the state did not change (LED-WIRE.8)."""
    new, outcome = model_handle(state, method, params, now)
    assert isinstance(outcome, Refused), (method, params, outcome)
    assert new == state
    return outcome


def saved(
    bodies: list[str], now: int = T0, state: LedgerState | None = None
) -> tuple[LedgerState, list[str]]:
    """Save each body one millisecond apart; return the state and the ids."""
    s = state if state is not None else empty_state()
    ids = []
    for i, b in enumerate(bodies):
        s, rec = ok(s, "memory/save_memory_record", {"body": b}, now + i)
        ids.append(rec["id"])
    return s, ids
