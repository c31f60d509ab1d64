"""Mutants of the ledger binding (see the package doc).

Each entry is one small, realistic mistake, switched on by ``quirks("name")`` at the one place
in the bundled ledger (``ledger/service.py``) where a careful engineer could make it.
``clauses`` are the clauses it breaks: a verdict that kills it must name at least one of them.
"""

from conformance.embedded.catalogue import Entry


def _m(name: str, clauses: tuple[str, ...], summary: str) -> Entry:
    return Entry(name, "mutant", "ledger", clauses, summary)


ENTRIES: tuple[Entry, ...] = (
    _m(
        "led-settings-model-untyped",
        ("LED-WIRE.2",),
        "update_consolidation_settings reads model as a string before checking its type, so"
        " a number, boolean, array or object there is a 500 instead of invalid params",
    ),
    # ---- intervals and history
    _m(
        "led-supersede-leaves-gap",
        ("LED-INT.3", "LED-EDIT.1", "LED-ASOF.1"),
        "an edit's successor opens 1 ms after its predecessor closes",
    ),
    _m(
        "led-supersede-overlaps",
        ("LED-INT.3", "LED-EDIT.1", "LED-ASOF.1"),
        "an edited record closes 1 ms after its successor opens",
    ),
    _m(
        "led-asof-includes-valid-to",
        ("LED-ASOF.1", "LED-INT.1"),
        "as-of reads treat the interval as closed: a record is still shown at its validTo",
    ),
    _m(
        "led-tombstone-empty-interval",
        ("LED-INT.4", "LED-FORGET.1"),
        "a tombstone closes the interval at its validFrom instead of at the deletion",
    ),
    _m(
        "led-tombstone-body-in-history",
        ("LED-FORGET.3", "LED-ASOF.2"),
        "a deleted record keeps its body and history reads hand it back",
    ),
    _m(
        "led-reject-closes-at-now",
        ("LED-REVIEW.3", "LED-INT.2"),
        "rejecting a proposal closes its interval at the rejection (it never held)",
    ),
    _m(
        "led-approve-keeps-valid-from",
        ("LED-REVIEW.2", "LED-INT.1"),
        "an approved proposal keeps the proposal instant as validFrom",
    ),
    # ---- expiry
    _m(
        "led-sweep-closes-at-sweep",
        ("LED-EXP.2",),
        "the sweep closes an expired record at the sweep instant instead of at expiresAt",
    ),
    _m(
        "led-sweep-strict-boundary",
        ("LED-EXP.2",),
        "the sweep expires expiresAt < at, missing a record due exactly at the sweep instant",
    ),
    _m(
        "led-expiry-deletes",
        ("LED-EXP.3", "LED-STATUS.2"),
        "an expired record becomes a tombstone (deleted) instead of expired history",
    ),
    _m(
        "led-expire-from-created",
        ("LED-VOCAB.4",),
        "`expire` counts afterDays from the record's createdAt instead of the run instant",
    ),
    # ---- budget
    _m(
        "led-budget-counts-only-active",
        ("LED-BUDGET.1", "LED-BUDGET.2", "LED-REVIEW.4"),
        "the budget counts active records only, not proposals awaiting review",
    ),
    _m(
        "led-budget-evicts-oldest",
        ("LED-BUDGET.5", "LED-BUDGET.2"),
        "at the budget the oldest active record is deleted to make room instead of refusing",
    ),
    _m(
        "led-budget-off-by-one",
        ("LED-BUDGET.2", "LED-BUDGET.1"),
        "growth is refused only past the budget (held > maxRecords), one record too late",
    ),
    _m(
        "led-replacement-refused-at-budget",
        ("LED-BUDGET.3", "LED-EDIT.3"),
        "an edit at the budget is refused as if it were growth",
    ),
    _m(
        "led-approve-refused-at-budget",
        ("LED-BUDGET.3", "LED-REVIEW.2"),
        "approving a proposal at the budget is refused as if it were growth",
    ),
    _m(
        "led-settings-omitted-reset",
        ("LED-CONS.2", "LED-BUDGET.4"),
        "a settings update resets every omitted field to its default instead of keeping it",
    ),
    # ---- groups
    _m(
        "led-group-closes-loser-late",
        ("LED-GROUP.2", "LED-INT.3"),
        "`group` closes the other members 1 ms after the run instant, so two members overlap",
    ),
    _m(
        "led-replacement-drops-group",
        ("LED-GROUP.4", "LED-EDIT.1"),
        "an edit's successor loses the conflict group",
    ),
    _m(
        "led-group-keeps-oldest",
        ("LED-VOCAB.5",),
        "`group` keeps the least recently updated member instead of the latest",
    ),
    # ---- bodies, provenance, listing
    _m(
        "led-body-stored-untrimmed",
        ("LED-REC.6", "LED-SAVE.1"),
        "a saved body is validated trimmed but stored as sent",
    ),
    _m(
        "led-body-length-before-trim",
        ("LED-SAVE.3", "LED-REC.6"),
        "the 4000-character limit is applied before trimming",
    ),
    _m(
        "led-edit-keeps-provenance",
        ("LED-PROV.1", "LED-EDIT.1"),
        "an edit keeps the edited record's provenance instead of user_explicit",
    ),
    _m(
        "led-list-oldest-first",
        ("LED-LIST.2",),
        "listing is oldest update first",
    ),
    _m(
        "led-list-51",
        ("LED-LIST.2",),
        "a listing holds up to 51 records",
    ),
    # ---- credentials
    _m(
        "led-credential-on-edit",
        ("LED-CRED.2", "LED-EDIT.2"),
        "an edit stores a credential-shaped body (the detector runs on save only)",
    ),
    _m(
        "led-credential-on-propose",
        ("LED-CRED.2", "LED-REVIEW.4"),
        "a proposal stores a credential-shaped body",
    ),
    _m(
        "led-credential-on-merge",
        ("LED-CRED.2", "LED-VOCAB.2"),
        "consolidation `merge` stores a credential-shaped body",
    ),
    _m(
        "led-credential-on-correct",
        ("LED-CRED.2", "LED-VOCAB.3"),
        "consolidation `correct` stores a credential-shaped body",
    ),
    # ---- the consolidation gate
    _m(
        "led-retire-ignores-removal",
        ("LED-VOCAB.6", "LED-GATE.4"),
        "`retire` is applied with allowRemoval off",
    ),
    _m(
        "led-21st-element-applied",
        ("LED-GATE.6",),
        "the 21st element of a batch is applied (the bound is off by one)",
    ),
    _m(
        "led-expire-dead-target",
        ("LED-GATE.3", "LED-EXP.5"),
        "`expire` accepts a target that is no longer active",
    ),
    _m(
        "led-unknown-operation-invalid",
        ("LED-GATE.2", "LED-GATE.1"),
        "an operation outside the vocabulary is counted invalid instead of refused",
    ),
    _m(
        "led-keep-counted-applied",
        ("LED-VOCAB.7", "LED-GATE.9"),
        "`keep` is counted applied instead of declined",
    ),
    _m(
        "led-gate-reads-mode",
        ("LED-GATE.7",),
        "with consolidation mode off the gate refuses every element",
    ),
    _m(
        "led-one-instant-per-element",
        ("LED-GATE.8",),
        "each applied element of a batch is stamped one millisecond later than the one before",
    ),
    # ---- the packet
    _m(
        "led-packet-oldest-first",
        ("LED-PACKET.3",),
        "within equal provenance and confidence the packet puts the oldest update first",
    ),
    _m(
        "led-packet-unscored-first",
        ("LED-PACKET.3",),
        "a record without confidence is put before the records that have one",
    ),
    _m(
        "led-packet-uncounted-newlines",
        ("LED-PACKET.4",),
        "the 4000-character cap forgets the newlines between lines, so the text runs over",
    ),
    _m(
        "led-packet-cuts-entry",
        ("LED-PACKET.4", "LED-PACKET.5"),  # a cut line no longer carries the record's body
        "the line that would cross 4000 characters is cut to fit instead of dropped whole",
    ),
    _m(
        "led-packet-keeps-carriage-returns",
        ("LED-PACKET.5",),
        "only \\n is collapsed in a packet line; a \\r survives and splits the line",
    ),
)

#: Mutants dropped because no check can see them (name -> why).
REMOVED: dict[str, str] = {
    "led-foreign-target-accepted": (
        "equivalent on this binding: it writes only account:local and no method creates a"
        " record of another scope, so a target of a foreign scope cannot exist to be accepted"
        " (a missing scope check changes nothing an answer can show)"
    ),
    "led-debounce-queueing": (
        "not wire-observable: the binding has no run scheduler (LED-RUN.2 is model-only);"
        " debounce is checked on the reference model's scheduler"
    ),
    "led-two-active-in-group-by-group-op": (
        "unreachable in this store: the schema's partial unique index refuses a second active"
        " member of a group, so the mistake is a 500, not a ledger state"
    ),
    "led-approve-keeps-rival": (
        "unreachable through the seed's protocol: a proposal never carries a conflict group (the"
        " extractor's element refuses any other field), so no approval can meet an active rival;"
        " a record joins a group only through `group` (led-group-closes-loser-late,"
        " led-group-keeps-oldest)"
    ),
}
