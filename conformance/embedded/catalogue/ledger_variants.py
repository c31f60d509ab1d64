"""Allowed variants of the ledger binding (see the package doc).

Each makes one other choice ``specs/ledger.md`` allows on a point the seed and CLARIFICATIONS
leave open; the clause named lists the choice among its accepted answers.
"""

from conformance.embedded.catalogue import Entry


def _v(name: str, clauses: tuple[str, ...], summary: str, conflicts: tuple[str, ...] = ()) -> Entry:
    return Entry(name, "variant", "ledger", clauses, summary, conflicts=conflicts)


ENTRIES: tuple[Entry, ...] = (
    _v("ledger-times-offset", ("LED-WIRE.5",), "times end in +00:00 instead of Z"),
    _v(
        "ledger-times-isoformat",
        ("LED-WIRE.5",),
        "times as datetime.isoformat(): +00:00, microseconds, no fraction when it is zero",
        ("ledger-times-offset",),  # one time format per store
    ),
    _v(
        "ledger-times-seconds",
        ("LED-WIRE.5",),
        "times without a fraction (whole seconds shown)",
        ("ledger-times-offset", "ledger-times-isoformat"),  # one time format per store
    ),
    _v(
        "ledger-settings-without-held",
        ("LED-CONS.2",),
        "the settings answer leaves heldRecords out (the bundled store reports it)",
    ),
    _v(
        "ledger-delete-returns-body",
        ("LED-FORGET.3",),
        "the delete answer carries the body it forgot (later reads never do)",
    ),
    _v(
        "ledger-groups-casefolded",
        ("LED-GROUP.5",),
        "conflict group labels are the trimmed, case-folded subject",
    ),
    _v(
        "ledger-groups-opaque",
        ("LED-GROUP.5",),
        "conflict group labels are opaque keys (grp- and a hash of the subject), never the subject",
        ("ledger-groups-casefolded",),  # one labelling per store
    ),
    _v(
        "ledger-history-shows-tombstones",
        ("LED-ASOF.2",),
        "history reads include tombstones, bodiless, instead of leaving them out",
    ),
    _v(
        "ledger-bad-value-1000",
        ("LED-WIRE.3",),
        "a well-typed value out of its domain is refused with 1000 instead of -32602",
    ),
    _v(
        "ledger-shape-refused",
        ("LED-GATE.1", "LED-VOCAB.8"),
        "a consolidation element with a shape problem is counted refused, not invalid",
    ),
    _v(
        "ledger-past-20-uncounted",
        ("LED-GATE.6",),
        "elements past the 20th are not counted at all (never applied)",
    ),
    _v(
        "ledger-past-20-refused",
        ("LED-GATE.6",),
        "elements past the 20th are counted refused (never applied)",
        ("ledger-past-20-uncounted",),  # one answer to the 21st element
    ),
    _v(
        "ledger-refusal-wording",
        ("LED-STATUS.3", "LED-WIRE.3"),
        "lifecycle and unknown-record refusals use another wording",
    ),
    _v(
        "ledger-propose-needs-model",
        ("LED-CONS.2",),
        "mode propose without a harness or a model is refused (1000)",
    ),
    _v(
        "ledger-foreign-scope-refused",
        ("LED-LIST.3", "LED-ASOF.3"),
        "listing or reading history of any scope but account:local is refused",
    ),
    _v(
        "ledger-successor-keeps-session",
        ("LED-EDIT.1", "LED-VOCAB.2", "LED-VOCAB.3"),
        "edit, correct and merge results keep the (first) predecessor's sourceSessionId",
    ),
    _v(
        "ledger-credential-strict-thresholds",
        ("LED-CRED.4",),
        "gh?_ tokens shorter than 36 characters and PEM headers without END are stored",
    ),
    _v(
        "ledger-settings-clear-omitted",
        ("LED-CONS.2",),
        "a settings update without harness/model clears them",
    ),
    _v(
        "ledger-blank-harness-unsets",
        ("LED-CONS.2",),
        'harness or model "" in a settings update unsets it instead of being refused',
    ),
    _v(
        "ledger-null-is-absent",
        ("LED-WIRE.2",),
        "a JSON null for a param is read as the param being absent",
    ),
    _v(
        "ledger-integral-floats-refused",
        ("LED-WIRE.2", "LED-VOCAB.8"),
        "7.0 is not an integer: refused as a param, invalid as afterDays",
    ),
    _v(
        "ledger-merge-keeps-a-group",
        ("LED-GROUP.4", "LED-VOCAB.2"),
        "a merge result joins the first grouped target's conflict group",
    ),
    _v(
        "ledger-test-controls-unchecked",
        ("LED-WIRE.7", "LED-EXP.5"),
        "_test/propose skips the rationale range",
    ),
    _v(
        "ledger-packet-real-labels",
        ("LED-PACKET.5", "LED-PACKET.6"),
        "packet lines labelled as the real ledger does: explicit pin, approved suggestion (N%)",
    ),
    _v(
        "ledger-credential-narrow",
        ("LED-CRED.6", "LED-CRED.1"),
        "a narrower credential detector: no Bearer, JWT, Notion or NAME=value shapes",
        ("ledger-credential-strict-thresholds",),  # one detector per store
    ),
    _v(
        "ledger-known-sessions-only",
        ("LED-WIRE.14",),
        "a save naming a session is refused (1000): the store knows no session",
    ),
    _v(
        "ledger-one-harness",
        ("LED-WIRE.15",),
        "consolidation settings accept only the harness claude; another is refused (1000)",
    ),
    _v(
        "ledger-params-by-position",
        ("LED-WIRE.11",),
        "params given as a JSON array are filled by position, as JSON-RPC allows",
    ),
    _v(
        "ledger-paramless-refuses-empty-object",
        ("LED-WIRE.12",),
        "a method without params takes absent or null params and refuses {} with -32602",
    ),
)
