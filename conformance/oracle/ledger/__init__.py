"""The ledger oracle: is this answer one the model allows?

The oracle has no rules of its own.  ``reference.ledger.wire.allowed`` lists every answer a
store may give to a call (the model's own first, each with the ledger it leaves), and every
open point of ``specs/ledger.md`` is one of those alternatives or one of the value-level choices
an answer declares: ``Refused.allowed_codes`` / ``allowed_messages`` (LED-WIRE.3),
``Ok.may_omit`` (tombstones a history read may leave out, LED-ASOF.2), ``Ok.one_of`` (a batch's
open counts, LED-GATE.1/.6), ``Ok.extra_fields`` (``heldRecords``, LED-CONS.2).  This module
compares a target's answer with one allowed answer, field by field (:func:`judge`; the driver
asks it for each alternative, :func:`judge_any` reports the closest when none passes), under
four correspondences built as the run goes:

**Ids** are the target's own (LED-REC.3).  A bijection model id ↔ target id is fixed the first
time a record appears in an answer: a single-record answer pairs its ``id`` (and its
``supersedes``) directly; a listing pairs the records whose ids are already known by id and the
rest by content (every field but ``id``, under the time correspondence).  A target id that shows
up for a second model record, or a model record under a second target id, is a divergence.

**Group labels** are paired the same way (LED-GROUP.5): a store may show the subject as given,
a derived label (trimmed, case-folded) or an opaque key.

**Times.**  Any RFC 3339 UTC form is accepted (``Z`` or a zero offset, no fraction or up to 9
digits) and compared as an instant, to the precision the answer keeps
(``reference.ledger.wire.answer_instant`` / ``same_instant``; LED-WIRE.5).  With the
``ledger.clock`` capability the driver pins the target's clock to the model's ``now`` before
every mutating step, so every time must denote the model's instant (``exact`` mode).  Without it
the target stamps with its own clock; a monotone correspondence model instant ↔ target instant
is kept instead: one model instant always shows as one target instant (a batch's one run
instant, a supersession's shared boundary — LED-INT.3, LED-GATE.8), and distinct model instants
keep their order (strictly when both sides keep milliseconds).

**Unnamed fields** a store adds to a result are allowed and not judged (LED-WIRE.4, .6); a
field the spec names is never ``null``.

**Order.**  Where the spec fixes an order it is checked; where it leaves one open the answer is
compared as a set: a listing is newest ``updatedAt`` first with equal-``updatedAt`` runs
unordered (and, at the 50 cut, any members of the tie that straddles the cut may survive); a
history read, a sweep's ``expired`` and a packet's equal-rank runs are unordered.

Every judgement names the clause ids the difference touches, what the model allowed and what
the target said; a target answering garbage is judged, never a crash.

The parts: :mod:`.clauses` (which clauses a method, a refusal or a field speaks for),
:mod:`.correspondences` (ids, group labels, instants), :mod:`.records` (one record, a set of
records), :mod:`.results` (one comparer per kind of result), :mod:`.judge` (one answer
against one or every allowed answer) and :mod:`.worlds` (the ledgers kept in step while answers
have not told open choices apart).
"""

from conformance.oracle.ledger.clauses import (
    CODE_STATUS,
    LIST_LIMIT,
    METHOD_CLAUSES,
    OPTIONAL_FIELDS,
    REQUIRED_FIELDS,
    method_clauses,
    refusal_clauses,
)
from conformance.oracle.ledger.correspondences import Context, Ids, Times
from conformance.oracle.ledger.judge import Judgement, describe_outcome, judge, judge_any
from conformance.oracle.ledger.records import Diff, compare_record, pair_records
from conformance.oracle.ledger.results import SETTINGS_FIELDS

__all__ = [
    "CODE_STATUS",
    "LIST_LIMIT",
    "METHOD_CLAUSES",
    "OPTIONAL_FIELDS",
    "REQUIRED_FIELDS",
    "SETTINGS_FIELDS",
    "Context",
    "Diff",
    "Ids",
    "Judgement",
    "Times",
    "compare_record",
    "describe_outcome",
    "judge",
    "judge_any",
    "method_clauses",
    "pair_records",
    "refusal_clauses",
]
