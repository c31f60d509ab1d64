"""The ledger machine's alphabet: the scope, words, kinds and groups its calls are made of, the
credential-shaped bodies and their look-alikes, the invalid calls and boundary bodies, the
``records`` bundle, and the read that checks each kind of write (:data:`CHECK_AFTER`).

Everything here is data (and two small clause helpers); the rules that use it live in the
sibling modules and are combined into :class:`~conformance.machines.ledger.LedgerMachine`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle

SCOPE = "account:local"
WORDS = ("tea", "vim", "berlin", "utc", "decaf", "tabs", "café", "Straße", "東京", "🚀 launch")
KINDS = ("preference", "fact", "decision", "constraint")
GROUPS = ("editor", "timezone")

#: Bodies the credential detector must refuse (LED-CRED.1), one per family, and look-alikes it
#: must store (LED-CRED.3).
CREDENTIALS = (
    "my key is AKIAIOSFODNN7EXAMPLE ok",
    "token ghp_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ",  # 36: real length (LED-CRED.4)
    "use sk-ant-" + "api03-abcdefghijklmnopqrst",
    "Authorization: Bearer abcdefghijklmnop1234",
    "API_KEY=abcdef123456abcdef",
    "xoxb-" + "1234567890-abcdefghij",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----",
)
LOOKALIKES = (
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "TOKEN=development",
    "const token = getTokenFromStore();",
    "see https://example.com/a?b=c&d=e",
)

body_styles = st.sampled_from(["plain", "plain", "plain", "padded", "multiline"])
kinds = st.none() | st.sampled_from(KINDS)
records = Bundle("records")

#: Calls that are wrong in one way each; the model says which error codes are allowed.
INVALID_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("save", {"body": "scoped", "scopeKey": SCOPE}),
    ("save", {"body": "scoped", "scopeKey": "account:other"}),
    ("save", {"body": "tagged", "tags": ["x"]}),
    ("save", {"body": "odd kind", "kind": "opinion"}),
    ("save", {"body": "null kind", "kind": None}),
    ("save", {"body": 42}),
    ("save", {}),
    ("save", {"body": "   \n\t "}),
    ("save", {"body": "session", "sessionId": ""}),
    ("list", {}),
    ("list", {"scopeKey": SCOPE, "status": "deleted"}),
    ("list", {"scopeKey": "account:nobody"}),
    ("list", {"scopeKey": ""}),
    ("list_as_of", {"scopeKey": SCOPE, "at": "yesterday"}),
    ("list_as_of", {"scopeKey": SCOPE}),
    ("delete", {"recordId": "no-such-record"}),
    ("delete", {"recordId": 7}),
    ("supersede", {"recordId": "no-such-record", "body": "x"}),
    ("approve", {"recordId": "no-such-record"}),
    ("update_settings", {"maxRecords": 3}),
    ("update_settings", {"mode": "on"}),
    ("update_settings", {"mode": "off", "maxRecords": 0}),
    ("update_settings", {"mode": "off", "maxRecords": 10001}),
    ("update_settings", {"mode": "off", "maxRecords": 2.5}),
    ("update_settings", {"mode": "off", "maxRecords": "3"}),
    ("update_settings", {"mode": "off", "debounceSeconds": 29}),
    ("update_settings", {"mode": "off", "allowRemoval": "yes"}),
    ("get_settings", {"scopeKey": SCOPE}),
    ("propose", {"body": "p", "confidenceBps": 10001}),
    ("propose", {"body": "p", "conflictGroup": "g"}),  # an extractor proposal has no group
    ("propose", {"body": "p", "status": "active"}),
    ("consolidate", {"operations": "merge"}),
    ("consolidate", {}),
    ("packet", {"limit": 3}),
]
#: Bodies at the 4000-character bound (LED-SAVE.3, LED-REC.6): the limit is on the trimmed body,
#: so whitespace around a 4000-character body (ASCII or Unicode) must not tip it over.
BOUNDARY_BODIES: tuple[Any, ...] = (
    {"$repeat": "b", "times": 4000},
    {"$repeat": "b", "times": 4001},
    {"$concat": ["  ", {"$repeat": "y", "times": 4000}, "  "]},
    {"$concat": ["\t\n ", {"$repeat": "y", "times": 4000}, "\r\n"]},
    {"$concat": ["\u3000", {"$repeat": "z", "times": 3999}, "\u00a0 "]},
    {"$concat": [" ", {"$repeat": "z", "times": 4001}, " "]},
)
#: What a consolidation batch's operations promise about the records it leaves (the read after
#: it checks them; LED-GATE.8: every stamp of the batch is its one run instant).
VOCAB_CLAUSES: dict[str, str] = {
    "merge": "LED-VOCAB.2",
    "correct": "LED-VOCAB.3",
    "expire": "LED-VOCAB.4",
    "group": "LED-VOCAB.5",
    "retire": "LED-VOCAB.6",
    "keep": "LED-VOCAB.7",
}
#: Statuses of a record a consolidation element may not target (LED-GATE.3).
DEAD = ("superseded", "deleted", "expired", "rejected", "proposed")
#: The packet's line for a record of kind ``fact`` written by the user, without its body:
#: ``[<8>] fact (user_explicit): `` (LED-PACKET.5).
FACT_LINE_OVERHEAD = len("[12345678] fact (user_explicit): ")
#: How many records the crowded start saves: one more than a listing holds (LED-LIST.2).
CROWD = 51

#: After a call that changed the ledger, the one read that shows what the call changed.
CHECK_AFTER: dict[str, tuple[str, dict[str, Any]]] = {
    "save": ("list", {"scopeKey": SCOPE}),
    "supersede": ("list", {"scopeKey": SCOPE}),
    "delete": ("list", {"scopeKey": SCOPE}),
    "approve": ("list", {"scopeKey": SCOPE}),
    "reject": ("list", {"scopeKey": SCOPE, "status": "proposed"}),
    "propose": ("list", {"scopeKey": SCOPE, "status": "proposed"}),
    "sweep": ("list", {"scopeKey": SCOPE}),
    "update_settings": ("get_settings", {}),
    "consolidate": ("list", {"scopeKey": SCOPE}),
}


def _uniq(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _batch_clauses(elements: list[Any]) -> tuple[str, ...]:
    """What the read after a batch checks: every stamp it wrote is its one run instant
    (LED-GATE.8), and what each operation of the vocabulary it carries leaves behind."""
    ops = [e.get("operation") for e in elements if isinstance(e, dict)]
    return ("LED-GATE.8",) + _uniq(tuple(VOCAB_CLAUSES[o] for o in ops if o in VOCAB_CLAUSES))
