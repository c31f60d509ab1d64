"""The bot-side ``WorkerMemoryStore`` and the start-up store selection (MEM-CLIENT).

A read degrades to no records and one warning (MEM-CLIENT.1); a write, list or forget that fails
throws (MEM-CLIENT.2, MEM-CLIENT.3); the store is chosen once at start-up, with the cap validated
(MEM-CLIENT.4, MEM-CLIENT.5).  The HTTP exchange itself is I/O and stays outside: these functions
take the status and body the exchange gave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from reference.jsonvalues import js_integer, parse_json
from reference.memory.engine import DEFAULT_SCOPE_CAP
from reference.memory.records import MemoryCandidate, MemoryRecord
from reference.memory.wire.codec import record_from_wire
from reference.memory.wire.request import MAX_CAP, MIN_CAP

CLIENT_TIMEOUT_MS: Final = 5000
DEFAULT_TOKEN_ENV: Final = "MEMORY_TOKEN"


@dataclass(frozen=True)
class ClientRead:
    """What ``WorkerMemoryStore.retrieve`` hands the read path (MEM-CLIENT.1).

    ``warning`` is the one ``[memory]`` line of a degraded read (``None`` when it was fine).
    """

    records: tuple[MemoryRecord, ...]
    warning: str | None = None


@dataclass(frozen=True)
class ClientFailure:
    """A write, list or forget that throws (MEM-CLIENT.2, MEM-CLIENT.3)."""

    message: str


def _records_of(status: int | None, body: bytes | None) -> tuple[MemoryRecord, ...] | str:
    """The well-formed records of a 2xx JSON records answer, or why there are none (MEM-CLIENT.1,
    MEM-CLIENT.3)."""
    if status is None:
        return "transport error or timeout"
    if not 200 <= status <= 299:
        return f"HTTP {status}"
    try:
        obj = parse_json((body or b"").decode("utf-8"))
    except (ValueError, RecursionError):
        return f"HTTP {status} with a body that is not JSON"
    if not isinstance(obj, dict) or not isinstance(obj.get("records"), list):
        return f"HTTP {status} without a records array"
    parsed = (record_from_wire(x) for x in obj["records"])
    return tuple(r for r in parsed if isinstance(r, MemoryRecord))


def client_retrieve(status: int | None, body: bytes | None) -> ClientRead:
    """The bot's reading of a ``/retrieve`` answer (MEM-CLIENT.1).

    ``status`` ``None`` stands for a transport error or the 5 s timeout.  Anything but a 2xx
    JSON object with a ``records`` array degrades to no records and one warning; malformed
    records (``record_from_wire`` fails) are dropped one by one without failing the rest.
    """
    got = _records_of(status, body)
    if isinstance(got, str):
        return ClientRead((), f"[memory] retrieve degraded to no records: {got}")
    return ClientRead(got)


def client_list(status: int | None, body: bytes | None) -> tuple[MemoryRecord, ...] | ClientFailure:
    """The bot's reading of a ``/list`` answer: a failure throws, never an empty list
    (MEM-CLIENT.3)."""
    got = _records_of(status, body)
    if isinstance(got, str):
        return ClientFailure(f"memory list failed: {got}")
    return got


def client_forget(status: int | None, body: bytes | None) -> bool | ClientFailure:
    """The bot's reading of a ``/forget`` answer (MEM-CLIENT.3)."""
    if status is None or not 200 <= status <= 299:
        return ClientFailure(f"memory forget failed: {status or 'transport error'}")
    try:
        obj = parse_json((body or b"").decode("utf-8"))
    except (ValueError, RecursionError):
        return ClientFailure("memory forget failed: body is not JSON")
    if not isinstance(obj, dict) or not isinstance(obj.get("forgotten"), bool):
        return ClientFailure("memory forget failed: no forgotten flag")
    return bool(obj["forgotten"])


def client_write_request(
    scope_key: str, candidates: Sequence[MemoryCandidate], cap: int | None
) -> dict[str, object] | None:
    """The ``/write`` body the bot sends, or ``None``: an empty batch skips the round trip.

    ``cap`` is sent when configured and omitted otherwise (MEM-CLIENT.2, MEM-CLIENT.5).
    Candidate optional fields that are unset are omitted, never ``null``.
    """
    if not candidates:
        return None
    records: list[dict[str, object]] = []
    for c in candidates:
        rec: dict[str, object] = {
            "kind": c.kind,
            "text": c.text,
            "sourceThreadKey": c.source_thread_key,
        }
        if c.keywords is not None:
            rec["keywords"] = list(c.keywords)
        if c.source_run_id is not None:
            rec["sourceRunId"] = c.source_run_id
        if c.confidence is not None:
            rec["confidence"] = c.confidence
        if c.supersedes is not None:
            rec["supersedes"] = c.supersedes
        records.append(rec)
    out: dict[str, object] = {"scopeKey": scope_key, "records": records}
    if cap is not None:
        out["cap"] = cap
    return out


def client_write(status: int | None, body: bytes | None) -> None | ClientFailure:
    """A write's outcome: ``None`` on a 2xx, else a failure naming status and error
    (MEM-CLIENT.2)."""
    if status is not None and 200 <= status <= 299:
        return None
    reason = ""
    try:
        obj = parse_json((body or b"").decode("utf-8"))
        if isinstance(obj, dict) and isinstance(obj.get("error"), str):
            reason = f": {obj['error']}"
    except (ValueError, RecursionError):
        pass
    return ClientFailure(f"memory write failed: {status or 'transport error'}{reason}")


def client_list_request(scope_key: str, limit: int, query: str | None) -> dict[str, object]:
    """The ``/list`` body: ``query`` only when a filter was given (MEM-CLIENT.3)."""
    out: dict[str, object] = {"scopeKey": scope_key, "limit": limit}
    if query is not None:
        out["query"] = query
    return out


StoreKind = Literal["none", "worker", "in_process"]


@dataclass(frozen=True)
class StoreChoice:
    """Which store the bot runs on, and the start-up warning if any (MEM-CLIENT.4)."""

    kind: StoreKind
    cap: int
    warnings: tuple[str, ...] = ()


def validate_cap_config(value: object) -> tuple[int, str | None]:
    """``memory.maxRecordsPerScope``: an integer 1-10000, else the default and a warning.

    Absent (``None``) is the default without a warning; 0, negatives, fractions, NaN,
    booleans, strings and values over 10000 warn naming the key and the default (MEM-CLIENT.5).
    """
    if value is None:
        return DEFAULT_SCOPE_CAP, None
    n = js_integer(value)
    if n is None or not MIN_CAP <= n <= MAX_CAP:
        return DEFAULT_SCOPE_CAP, (
            f"[memory] memory.maxRecordsPerScope must be an integer {MIN_CAP}-{MAX_CAP};"
            f" using the default {DEFAULT_SCOPE_CAP}"
        )
    return n, None


def select_store(
    *,
    enabled: bool,
    worker_base_url: str | None,
    token_env: str | None,
    env: Mapping[str, str],
    max_records_per_scope: object = None,
) -> StoreChoice:
    """Start-up store selection (MEM-CLIENT.4, MEM-CLIENT.5).

    Disabled: no store (the null store serves).  A worker URL and a non-empty bearer in
    ``env[token_env or MEMORY_TOKEN]``: the Worker client.  Otherwise the in-process store and
    a warning that names the restart loss and what is missing.  The cap is validated once and
    handed to whichever store is built.
    """
    if not enabled:
        return StoreChoice("none", DEFAULT_SCOPE_CAP)
    cap, cap_warning = validate_cap_config(max_records_per_scope)
    warnings = [cap_warning] if cap_warning else []
    var = token_env or DEFAULT_TOKEN_ENV
    if worker_base_url and env.get(var):
        return StoreChoice("worker", cap, tuple(warnings))
    missing = "memory.worker.baseUrl" if not worker_base_url else f"the {var} environment variable"
    warnings.append(
        f"[memory] using the in-process store: records are lost on restart ({missing} is not set)"
    )
    return StoreChoice("in_process", cap, tuple(warnings))
