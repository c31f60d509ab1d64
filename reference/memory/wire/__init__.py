"""The Memory Worker wire protocol as a pure function (MEM-WIRE), and the client's rules
(MEM-CLIENT).

``handle(state, request, now, token)`` answers "what may a conforming Memory Worker
answer to this HTTP request, and what does its store hold afterwards?".  The answer is an
``Allowed``: one or more ``Option``s, each a status, a description of the legal bodies and the
store state that follows when the target chose that option.  Several options exist exactly
where the spec leaves a choice to the implementation (a JSON ``null`` for an optional field,
a body that is not valid UTF-8 or starts with a byte-order mark, exotic characters in a key);
a ``/retrieve`` option admits every legal order of equal-score records.

Records in a response are matched to model records by content: every field except ``id``,
``createdAt`` and ``lastUsedAt`` is compared exactly (``useCount`` and ``lastUsedAt`` before or
after the retrieval's own bump; ``keywords`` of a record written without keywords is
implementation-defined); ids are checked for their promised shape and uniqueness, and against
an optional model-id -> target-id map.

The client part models the bot-side ``WorkerMemoryStore`` (degrade on read, throw on write)
and the start-up store selection.

The parts: :mod:`.request` (the request, the limits, the checks before the body),
:mod:`.codec` (records on the wire), :mod:`.validation` (request bodies), :mod:`.allowed` (the
allowed answers and matching an answer), :mod:`.handle` (``handle``) and
:mod:`.client` (the bot side).  JSON as JavaScript reads it is ``reference.jsonvalues``.
"""

from __future__ import annotations

from reference.jsonvalues import (
    is_number,
    js_integer,
    json_equal,
    parse_json,
)
from reference.memory.wire.allowed import (
    REFERENCE_CAPS,
    Allowed,
    BodySpec,
    ErrorBody,
    ExactBody,
    HealthBody,
    IdMap,
    Option,
    RecordsBody,
    _parse_records_body,
    _shows,
    is_success,
    match_records,
    members_differ,
    names_field,
    status_admits,
    tighter_cap,
)
from reference.memory.wire.client import (
    CLIENT_TIMEOUT_MS,
    DEFAULT_TOKEN_ENV,
    ClientFailure,
    ClientRead,
    StoreChoice,
    StoreKind,
    client_forget,
    client_list,
    client_list_request,
    client_retrieve,
    client_write,
    client_write_request,
    select_store,
    validate_cap_config,
)
from reference.memory.wire.codec import (
    RECORD_FIELDS,
    RECORD_FIELDS_WHEN_SET,
    WireError,
    record_from_wire,
    record_to_wire,
)
from reference.memory.wire.handle import (
    fence_statuses,
    handle,
    write_response,
)
from reference.memory.wire.request import (
    DATA_ROUTES,
    HEALTH_ROUTE,
    MAX_BODY_BYTES,
    MAX_CAP,
    MAX_FORGET_ID,
    MAX_KEYWORD,
    MAX_KEYWORDS,
    MAX_LIMIT,
    MAX_QUERY,
    MAX_RECORDS,
    MAX_RUN_ID,
    MAX_SCOPE_KEY,
    MAX_SUPERSEDES,
    MAX_TEXT,
    MAX_THREAD_KEY,
    MIN_CAP,
    MIN_LIMIT,
    WireRequest,
    authorized,
    content_length_fault,
    make_request,
)
from reference.memory.wire.validation import (
    CAP_FLOORS,
    LENIENT,
    STRICT,
    ForgetBody,
    ListBody,
    Policy,
    RetrieveBody,
    WriteBody,
    over_cap_floor,
    validate_forget,
    validate_list,
    validate_retrieve,
    validate_write,
)

__all__ = [
    "is_success",
    "status_admits",
    "Allowed",
    "BodySpec",
    "CAP_FLOORS",
    "CLIENT_TIMEOUT_MS",
    "ClientFailure",
    "ClientRead",
    "DATA_ROUTES",
    "DEFAULT_TOKEN_ENV",
    "ErrorBody",
    "ExactBody",
    "ForgetBody",
    "HEALTH_ROUTE",
    "HealthBody",
    "IdMap",
    "LENIENT",
    "ListBody",
    "MAX_BODY_BYTES",
    "MAX_CAP",
    "MAX_FORGET_ID",
    "MAX_KEYWORD",
    "MAX_KEYWORDS",
    "MAX_LIMIT",
    "MAX_QUERY",
    "MAX_RECORDS",
    "MAX_RUN_ID",
    "MAX_SCOPE_KEY",
    "MAX_SUPERSEDES",
    "MAX_TEXT",
    "MAX_THREAD_KEY",
    "MIN_CAP",
    "MIN_LIMIT",
    "Option",
    "Policy",
    "RECORD_FIELDS",
    "REFERENCE_CAPS",
    "RECORD_FIELDS_WHEN_SET",
    "RecordsBody",
    "RetrieveBody",
    "STRICT",
    "StoreChoice",
    "StoreKind",
    "WireError",
    "WireRequest",
    "WriteBody",
    "authorized",
    "client_forget",
    "client_list",
    "client_list_request",
    "client_retrieve",
    "client_write",
    "client_write_request",
    "content_length_fault",
    "is_number",
    "js_integer",
    "json_equal",
    "make_request",
    "over_cap_floor",
    "tighter_cap",
    "match_records",
    "members_differ",
    "names_field",
    "parse_json",
    "_parse_records_body",
    "record_from_wire",
    "record_to_wire",
    "select_store",
    "_shows",
    "validate_cap_config",
    "validate_forget",
    "validate_list",
    "validate_retrieve",
    "validate_write",
    "handle",
    "fence_statuses",
    "write_response",
]
