"""The human memory controls: ``memory list`` and ``memory forget`` (MEM-CMD).

Parsing a chat line into a command, choosing which scopes a listing shows, rendering one
listed record, and the scope gate of ``memory forget``.  Everything here is pure: the caller
passes the request's identity, its channel, its resolved repo and whether the caller is an
admin; the store calls themselves are ``store.store_list`` / ``store.store_forget``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from reference.memory.containment import flatten_field
from reference.memory.records import MemoryRecord
from reference.memory.scopes import derive_scope_key
from reference.memory.store import StoreState, parse_record_id, store_forget, store_list

MEMORY_LIST_LIMIT: Final = 20
MEMORY_LIST_MAX_LIMIT: Final = 50

ListScope = Literal["me", "org", "repo", "channel", "all"]
LIST_SCOPES: Final[tuple[str, ...]] = ("me", "org", "repo", "channel", "all")

COMMAND_WORD: Final = "memory"
LIST_USAGE: Final = (
    "usage: memory list [<words>…] [--scope me|org|repo|channel|all] [--limit <1-50>]"
    " [--repo owner/name]"
)
FORGET_USAGE: Final = "usage: memory forget <id>   (ids look like mem:<scope>:<n>)"
MEMORY_USAGE: Final = "usage: memory list … | memory forget <id>"

_DIGITS: Final = re.compile(r"[0-9]+")
_REPO: Final = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_OPTION: Final = re.compile(r"--?[A-Za-z]")
_MS_PER_DAY: Final = 86_400_000


@dataclass(frozen=True)
class ListCommand:
    """``memory list`` (MEM-CMD.1, MEM-CMD.2).

    ``scope`` is ``"all"`` unless narrowed; ``query`` is the filter text (``None`` when the
    line had no filter words -- a filter whose words carry no tokens is still a filter and lists
    nothing); ``repo`` is an explicit ``--repo owner/name``.
    """

    scope: str = "all"
    limit: int = MEMORY_LIST_LIMIT
    query: str | None = None
    repo: str | None = None


@dataclass(frozen=True)
class ForgetCommand:
    """``memory forget <id>``; the id is checked by ``forget_gate``, not here (MEM-CMD.5)."""

    record_id: str


@dataclass(frozen=True)
class UsageError:
    """A line addressed to the memory command that does not follow its grammar (MEM-CMD.3)."""

    message: str


MemoryCommand = ListCommand | ForgetCommand


def _split(text: str) -> list[str]:
    return text.split()


def _key(kind: str, value: str | None) -> str | None:
    """The scope key for ``value``, or ``None`` when the request lacks that input."""
    return derive_scope_key(kind, value) if value is not None and value.strip() else None


def _parse_limit(value: str | None) -> int | UsageError:
    if value is None or value == "":
        return UsageError(f"--limit needs a value. {LIST_USAGE}")
    if not _DIGITS.fullmatch(value):
        return UsageError(f"--limit must be a whole number from 1 to {MEMORY_LIST_MAX_LIMIT}.")
    n = int(value)
    if not 1 <= n <= MEMORY_LIST_MAX_LIMIT:
        return UsageError(f"--limit must be a whole number from 1 to {MEMORY_LIST_MAX_LIMIT}.")
    return n


def _parse_scope(value: str | None) -> str | UsageError:
    if value is None or value == "":
        return UsageError(f"--scope needs a value. {LIST_USAGE}")
    if value.lower() not in LIST_SCOPES:
        return UsageError(f"--scope must be one of {', '.join(LIST_SCOPES)}.")
    return value.lower()


def _parse_repo(value: str | None) -> str | UsageError:
    if value is None or value == "":
        return UsageError(f"--repo needs a value. {LIST_USAGE}")
    if not _REPO.fullmatch(value):
        return UsageError("--repo must look like owner/name.")
    return value


def _parse_list(args: list[str]) -> ListCommand | UsageError:
    scope: str | None = None
    limit: int | None = None
    repo: str | None = None
    words: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not _OPTION.match(tok):
            words.append(tok)
            continue
        name, eq, inline = tok.partition("=")
        name = name.lower()
        if name not in ("--scope", "--limit", "--repo"):
            return UsageError(f"unknown option {name}. {LIST_USAGE}")
        if eq:
            value: str | None = inline
        elif i < len(args):
            value = args[i]
            i += 1
        else:
            value = None
        if name == "--limit":
            if limit is not None:
                return UsageError(f"--limit given twice. {LIST_USAGE}")
            parsed_limit = _parse_limit(value)
            if isinstance(parsed_limit, UsageError):
                return parsed_limit
            limit = parsed_limit
        elif name == "--scope":
            if scope is not None:
                return UsageError(f"--scope given twice. {LIST_USAGE}")
            parsed_scope = _parse_scope(value)
            if isinstance(parsed_scope, UsageError):
                return parsed_scope
            scope = parsed_scope
        else:
            if repo is not None:
                return UsageError(f"--repo given twice. {LIST_USAGE}")
            parsed_repo = _parse_repo(value)
            if isinstance(parsed_repo, UsageError):
                return parsed_repo
            repo = parsed_repo
    if scope is None and words and words[0].lower() in LIST_SCOPES:
        scope = words.pop(0).lower()
    return ListCommand(
        scope=scope if scope is not None else "all",
        limit=limit if limit is not None else MEMORY_LIST_LIMIT,
        query=" ".join(words) if words else None,
        repo=repo,
    )


def _parse_forget(args: list[str]) -> ForgetCommand | UsageError:
    if not args:
        return UsageError(f"memory forget needs a record id. {FORGET_USAGE}")
    if _OPTION.match(args[0]):
        return UsageError(f"unknown option {args[0].partition('=')[0]}. {FORGET_USAGE}")
    if len(args) > 1:
        return UsageError(f"memory forget takes exactly one id. {FORGET_USAGE}")
    return ForgetCommand(args[0])


def parse_memory_command(text: str) -> MemoryCommand | UsageError | None:
    """Parse one chat line (MEM-CMD.1, MEM-CMD.2, MEM-CMD.3).

    ``None`` when the line is not addressed to the memory command at all (its first word is
    not ``memory``): prose is never a command.  Otherwise the grammar is::

        memory list [<words>…] [--scope me|org|repo|channel|all] [--limit N | --limit=N]
                    [--repo owner/name]
        memory forget <id>

    Options may sit anywhere and take their value as the next word or after ``=``.  Without
    ``--scope``, a first filter word naming a scope is consumed as the scope; with it every
    word stays filter text.  ``--limit`` is a plain digit string 1-50 (default 20).  A missing
    or bad option value, a repeated or unknown option, a missing verb or id, an unknown verb
    and extra words after a forget id are usage errors.  Command words, option names and
    scope words are case-insensitive; filter words and ids are kept as typed.
    """
    words = _split(text)
    if not words or words[0].lower() != COMMAND_WORD:
        return None
    if len(words) == 1:
        return UsageError(f"memory needs a verb. {MEMORY_USAGE}")
    verb = words[1].lower()
    if verb == "list":
        return _parse_list(words[2:])
    if verb == "forget":
        return _parse_forget(words[2:])
    return UsageError(f"unknown memory verb {words[1]!r}. {MEMORY_USAGE}")


# --------------------------------------------------------------------------- listing


@dataclass(frozen=True)
class ListSections:
    """The scope keys one ``memory list`` shows, in display order (MEM-CMD.4)."""

    scope_keys: tuple[str, ...]


@dataclass(frozen=True)
class ListRefusal:
    """The listing asked for a scope the request does not have; nothing is read (MEM-CMD.4)."""

    message: str


def needs_repo_resolution(command: ListCommand) -> bool:
    """True when answering ``command`` needs the thread's bound repo resolved (MEM-CMD.4).

    Only a listing that shows the repo scope (``repo`` or ``all``) and names no ``--repo``
    asks for it; ``me``, ``org`` and ``channel`` never trigger the resolution.
    """
    return command.scope in ("repo", "all") and command.repo is None


def list_scopes_for(
    command: ListCommand,
    *,
    org_key: str,
    caller_user_id: str | None,
    channel_id: str | None = None,
    bound_repo: str | None = None,
) -> ListSections | ListRefusal:
    """Which scopes a listing shows (MEM-CMD.4).

    ``all`` shows the caller's own scope, the repo's (``--repo`` or the bound repo) and the
    channel's when the request has them, then the org's -- in that order.  ``me``, ``repo``
    and ``channel`` name exactly one scope and are refused (with a sentence saying what is
    missing) when the request lacks it; ``org`` always works.  Another person's scope can
    never be listed: the user scope is derived from the caller alone.
    """
    user_key = _key("user", caller_user_id)
    repo_key = _key("repo", command.repo if command.repo is not None else bound_repo)
    channel_key = _key("channel", channel_id)
    if command.scope == "me":
        if user_key is None:
            return ListRefusal("This request carries no user identity, so it has no own scope.")
        return ListSections((user_key,))
    if command.scope == "org":
        return ListSections((org_key,))
    if command.scope == "repo":
        if repo_key is None:
            return ListRefusal("No repo is bound to this thread; pass --repo owner/name.")
        return ListSections((repo_key,))
    if command.scope == "channel":
        if channel_key is None:
            return ListRefusal(
                "This request did not come from a channel, so it has no channel scope."
            )
        return ListSections((channel_key,))
    keys = [k for k in (user_key, repo_key, channel_key) if k is not None]
    keys.append(org_key)
    return ListSections(tuple(keys))


def utc_date(ms: int) -> str:
    """``YYYY-MM-DD`` of a millisecond Unix timestamp, in UTC, by calendar arithmetic (MEM-CMD.6).

    Days are counted with floor division (so times before 1970 land on the right day) and
    converted with the proleptic Gregorian civil-from-days algorithm.
    """
    z = ms // _MS_PER_DAY + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    if m <= 2:
        y += 1
    return f"{y:04d}-{m:02d}-{d:02d}"


def render_list_line(record: MemoryRecord) -> str:
    """``• `<id>` [<kind>, <YYYY-MM-DD>] <text> (source: `<thread>`)`` (MEM-CMD.6).

    The date is the UTC calendar date of ``created_at``; the source thread is a code span.
    Every field is flattened first (``flatten_field``: control characters, line and paragraph
    separators become spaces, whitespace runs collapse, ends trimmed), so whatever a record
    holds it is exactly one line and can never forge another record's line.  No escaping: the
    listing is for a person, not a prompt.
    """
    date = utc_date(record.created_at)
    return (
        f"\u2022 `{flatten_field(record.id)}` [{flatten_field(record.kind)}, {date}]"
        f" {flatten_field(record.text)} (source: `{flatten_field(record.source_thread_key)}`)"
    )


# --------------------------------------------------------------------------- forget gate

RefusalCode = Literal["invalid_input", "admin_required", "foreign_scope"]
SHARED_KINDS: Final[tuple[str, ...]] = ("org", "repo", "channel")


@dataclass(frozen=True)
class Allowed:
    """The caller may forget ``record_id``; the store call goes to ``scope_key`` (MEM-CMD.7)."""

    scope_key: str
    record_id: str


@dataclass(frozen=True)
class Refused:
    """The forget is refused before any store call (MEM-CMD.7, MEM-CMD.8).

    ``code`` is ``invalid_input`` (not a memory id), ``admin_required`` (a shared scope and
    the caller is no admin) or ``foreign_scope`` (another person's scope, refused for all).
    """

    code: RefusalCode
    reason: str


def forget_gate(record_id: str, caller_user_id: str | None, is_admin: bool) -> Allowed | Refused:
    """Decide whether the caller may forget ``record_id`` (MEM-CMD.7, MEM-CMD.8).

    The scope is read from the id (``mem:<scopeKey>:<n>``, the scope key being everything
    between ``mem:`` and the last ``:``, and having a known kind and a non-empty value).
    Anything else is ``invalid_input`` and the reason shows the id format.  The caller's own
    ``user:`` scope is always allowed; ``org:``, ``repo:`` and ``channel:`` scopes need an admin
    and the refusal points at ``memory list me``; any other ``user:`` scope is refused for
    everyone, admins included.  ``caller_user_id`` is the caller's namespaced id (``slack:U…``)
    or ``None`` for a request without identity.
    """
    parsed = parse_record_id(record_id)
    kind, sep, value = parsed[0].partition(":") if parsed else ("", "", "")
    if parsed is None or not sep or not value or kind not in ("user", *SHARED_KINDS):
        return Refused(
            "invalid_input",
            f"`{record_id}` is not a memory id; ids look like `mem:<scope>:<n>`"
            " (see `memory list`).",
        )
    scope_key = parsed[0]
    if kind == "user":
        own = _key("user", caller_user_id)
        if own is not None and scope_key == own:
            return Allowed(scope_key, record_id)
        return Refused(
            "foreign_scope",
            "That record is in another person's scope; nobody can forget it from here."
            " `memory list me` shows the records you can forget.",
        )
    if is_admin:
        return Allowed(scope_key, record_id)
    return Refused(
        "admin_required",
        f"Forgetting a shared {kind} record needs an admin."
        " `memory list me` shows your own records, which you can always forget.",
    )


def forget_receipt(record_id: str, forgotten: bool | None) -> str:
    """The reply to an allowed forget (MEM-CMD.8, MEM-CLIENT.3).

    ``True``: the record was forgotten.  ``False``: the id named no active record of its scope
    -- nothing to forget, nothing changed.  ``None``: the store call failed -- a warning line,
    never an exception.
    """
    if forgotten is None:
        return f"\u26a0\ufe0f Could not forget `{record_id}`: the memory store failed."
    if forgotten:
        return f"\U0001f9f9 Forgot `{record_id}`."
    return f"Nothing to forget: `{record_id}` names no active record."


# --------------------------------------------------------------------------- answering

MEMORY_OFF_REPLY: Final = (
    "Memory is switched off for this installation (memory.enabled is false);"
    " nothing was read or changed."
)
EMPTY_SECTION: Final = "no active records"


def render_list_section(
    scope_key: str,
    records: Sequence[MemoryRecord],
    *,
    limit: int,
    query: str | None,
    own_key: str | None,
) -> str:
    """One scope's section of a ``memory list`` reply (MEM-CMD.10).

    A heading naming the scope (the caller's own scope is labelled "your records"; a filtered
    listing adds "matching" and the filter), then one ``render_list_line`` per record in the
    order given.  An empty section says it holds no active records; a section that filled its
    page (as many records as ``limit``) ends with a hint on how to narrow the listing.
    """
    key = flatten_field(scope_key)
    label = f"your records (`{key}`)" if scope_key == own_key else f"`{key}`"
    heading = (
        f"{label} matching \u201c{flatten_field(query)}\u201d:"
        if query is not None
        else f"{label}:"
    )
    if not records:
        return f"{heading}\n{EMPTY_SECTION}"
    lines = [heading, *(render_list_line(r) for r in records)]
    if len(records) >= limit:
        lines.append(
            f"(showing the newest {limit}; add words to filter, or narrow with --scope or --limit)"
        )
    return "\n".join(lines)


def answer_list(
    state: StoreState,
    command: ListCommand,
    *,
    enabled: bool,
    org_key: str,
    caller_user_id: str | None,
    channel_id: str | None = None,
    bound_repo: str | None = None,
) -> str:
    """The whole reply to ``memory list`` (MEM-CMD.4, MEM-CMD.9, MEM-CMD.10).

    Memory off: ``MEMORY_OFF_REPLY`` and no store read.  A refused scope: its sentence.
    Otherwise every shown scope's section, read with ``store_list`` (no usage bump), joined by
    a blank line.
    """
    if not enabled:
        return MEMORY_OFF_REPLY
    sections = list_scopes_for(
        command,
        org_key=org_key,
        caller_user_id=caller_user_id,
        channel_id=channel_id,
        bound_repo=bound_repo,
    )
    if isinstance(sections, ListRefusal):
        return sections.message
    own_key = _key("user", caller_user_id)
    return "\n\n".join(
        render_list_section(
            key,
            store_list(state, key, command.limit, command.query),
            limit=command.limit,
            query=command.query,
            own_key=own_key,
        )
        for key in sections.scope_keys
    )


def answer_forget(
    state: StoreState,
    command: ForgetCommand,
    *,
    enabled: bool,
    caller_user_id: str | None,
    is_admin: bool,
) -> tuple[StoreState, str]:
    """The state after ``memory forget`` and its reply (MEM-CMD.7, MEM-CMD.8, MEM-CMD.9).

    Memory off: the state unchanged and ``MEMORY_OFF_REPLY``.  A refused id: the state
    unchanged and the refusal's reason.  An allowed id: ``store_forget`` on the scope parsed
    from the id, and its receipt.
    """
    if not enabled:
        return state, MEMORY_OFF_REPLY
    gate = forget_gate(command.record_id, caller_user_id, is_admin)
    if isinstance(gate, Refused):
        return state, gate.reason
    new_state, forgotten = store_forget(state, gate.scope_key, gate.record_id)
    return new_state, forget_receipt(gate.record_id, forgotten)
