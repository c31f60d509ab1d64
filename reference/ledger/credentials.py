"""Credential-shaped bodies: the detectors a ledger write is checked against.

A body that any detector matches is refused on save, supersede, propose, merge and correct
(LED-CRED.1, LED-CRED.2); a body no detector matches is stored (LED-CRED.3).  The detector
list is the one CLARIFICATIONS enumerates; where it gives no length, the thresholds below are
the spec's own choice (LED-CRED.4) and are written into ``specs/ledger.md``.

"Token characters" are the URL-safe base64 alphabet ``[A-Za-z0-9_-]``; a ``Bearer`` token may
also use the RFC 6750 ``b64token`` characters ``. ~ + /`` and trailing ``=``.

``DETECTORS`` is ordered: ``detect_credential`` reports the first detector (in this order) that
matches, so a ``sk-ant-…`` key is named ``anthropic_key`` rather than ``openai_key``.  Other
modules (transcript redaction) import ``DETECTORS`` directly; keep the names stable.
"""

from __future__ import annotations

import re

# A run of token characters may not start in the middle of a longer word: "task-…" must not
# read as "sk-…", "my_secret_…" is not a Notion secret.
_START = r"(?<![A-Za-z0-9_-])"

_NAME_WORDS = r"(?:api[_-]?key|apikey|access[_-]?key|token|secret|passw(?:or)?d|pwd|credentials?)"

DETECTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "pem_private_key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ),
    (
        "github_pat",
        re.compile(_START + r"github_pat_[A-Za-z0-9_]{20,}"),
    ),
    (
        "github_token",
        re.compile(_START + r"gh[pousr]_[A-Za-z0-9]{20,}"),
    ),
    (
        "slack_token",
        re.compile(_START + r"xox[baprs]-[A-Za-z0-9-]{10,}"),
    ),
    (
        "anthropic_key",
        re.compile(_START + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ),
    (
        "openai_key",
        re.compile(_START + r"sk-(?:proj-)?[A-Za-z0-9_-]{20,}"),
    ),
    (
        "notion_secret",
        re.compile(_START + r"secret_[A-Za-z0-9]{20,}"),
    ),
    (
        "aws_access_key_id",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}"),
    ),
    (
        "bearer_token",
        re.compile(r"(?<![A-Za-z0-9_-])Bearer[ \t]+[A-Za-z0-9._~+/-]{16,}"),
    ),
    (
        "jwt",
        re.compile(_START + r"[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    (
        "secret_assignment",
        # NAME=value / NAME: value, NAME naming a key, token, secret, password or credential,
        # optionally quoted; value 12+ token characters, optionally quoted, that is not the
        # start of a call or a dotted expression (``getTokenFromStore()``, ``config.secret``).
        re.compile(
            r"(?ai)(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*?"
            + _NAME_WORDS
            + r")[A-Za-z0-9_.-]++[\"']?[ \t]*+[:=][ \t]*+[\"']?"
            + r"[A-Za-z0-9_-]{12,}+(?!\()(?!\.[A-Za-z0-9_])"
        ),
    ),
)
"""(name, compiled pattern) pairs, in reporting order (LED-CRED.1, LED-CRED.4)."""

CREDENTIAL_MESSAGE = "Memory pins cannot store credentials. Nothing was saved."
"""The exact refusal message for a credential-shaped body (LED-CRED.2)."""


def detect_credential(body: str) -> str | None:
    """Return the name of the first detector matching ``body``, or None (LED-CRED.1, .3, .4)."""
    for name, pattern in DETECTORS:
        if pattern.search(body) is not None:
            return name
    return None


#: Stricter forms of the two detectors whose threshold the seed does not fix (LED-CRED.4): a
#: real GitHub token has 36 characters after ``gh?_``, and a PEM block has its END line.  A body
#: that only the broad form matches is an open point: a store may store it or refuse it.
STRICT_DETECTORS: dict[str, re.Pattern[str]] = {
    "pem_private_key": re.compile(
        r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----", re.DOTALL
    ),
    "github_token": re.compile(_START + r"gh[pousr]_[A-Za-z0-9]{36,}"),
}


#: What every credential detector reads as a credential, whatever else it does: a whole PEM
#: private-key block (LED-CRED.6).  Every other shape of :data:`DETECTORS` is the reference's
#: list (LED-CRED.1): a store whose detector leaves one out deviates from it.
CORE_DETECTORS: dict[str, re.Pattern[str]] = {
    "pem_private_key": STRICT_DETECTORS["pem_private_key"],
}


def matching_detectors(body: str) -> frozenset[str]:
    """The names of every detector ``body`` matches (LED-CRED.1)."""
    return frozenset(name for name, pattern in DETECTORS if pattern.search(body) is not None)


def exemptible(body: str, exempt: frozenset[str] = frozenset()) -> frozenset[str]:
    """The detectors matching ``body`` that a narrower detector may leave out (LED-CRED.6):
    every one but a core shape the body holds whole, and none already left out."""
    core = frozenset(n for n, p in CORE_DETECTORS.items() if p.search(body) is not None)
    if core:
        return frozenset()
    return matching_detectors(body) - exempt


def credential_verdict(body: str, exempt: frozenset[str] = frozenset()) -> str | None:
    """``"refuse"`` when a store must refuse ``body``, ``"either"`` when it may store or refuse
    it (only a broad form of a detector in :data:`STRICT_DETECTORS` matches: a ``gh?_`` token of
    20-35 characters, a PEM header without its END line), None when it must store it
    (LED-CRED.1, LED-CRED.3, LED-CRED.4).  ``exempt``: detectors a narrower detector leaves out
    (a ledger departing from LED-CRED.1); a core shape held whole is refused all the same
    (LED-CRED.6)."""
    open_point = False
    for name, pattern in DETECTORS:
        if pattern.search(body) is None:
            continue
        if name in exempt:
            core = CORE_DETECTORS.get(name)
            if core is None or core.search(body) is None:
                continue
            return "refuse"
        strict = STRICT_DETECTORS.get(name)
        if strict is None or strict.search(body) is not None:
            return "refuse"
        open_point = True
    return "either" if open_point else None
