"""The memory commands (``reference/memory/commands.py``): parseMemoryCommand, renderListLine,
forgetGate.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import memory_record
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import REC, rec
from reference.memory.commands import Allowed as GateAllowed
from reference.memory.commands import (
    ForgetCommand,
    ListCommand,
    UsageError,
    forget_gate,
    parse_memory_command,
    render_list_line,
)


def _parse_command(a: Args) -> JSON:
    cmd = parse_memory_command(a["text"])
    if cmd is None:
        return None
    if isinstance(cmd, UsageError):
        return {"verb": "usage"}
    if isinstance(cmd, ForgetCommand):
        return {"verb": "forget", "id": cmd.record_id}
    assert isinstance(cmd, ListCommand)
    return {
        "verb": "list",
        "scope": cmd.scope,
        "limit": cmd.limit,
        "query": cmd.query,
        "repo": cmd.repo,
    }


def _command_boundaries() -> list[tuple[str, Args]]:
    return [
        ("prose is not a command", {"text": "remember to deploy"}),
        ("bare memory", {"text": "memory"}),
        ("list defaults", {"text": "memory list"}),
        ("scope word consumed", {"text": "memory list me deploy"}),
        ("limit 50 edge", {"text": "memory list --limit 50"}),
        ("limit 51 refused", {"text": "memory list --limit=51"}),
        ("limit 0 refused", {"text": "memory list --limit 0"}),
        ("repeated option refused", {"text": "memory list --scope org --scope me"}),
        ("forget one id", {"text": "memory forget mem:user:slack:U1:3"}),
        ("forget without id", {"text": "memory forget"}),
        ("forget with extra words", {"text": "memory forget a b"}),
        ("case-insensitive verbs", {"text": "MEMORY LIST --SCOPE ORG"}),
        ("unknown verb", {"text": "memory purge"}),
        *_seed_command_rows(),
    ]


def _seed_command_rows() -> list[tuple[str, Args]]:
    """Every case §24 and its validation-table row name, one vector each: the scope words,
    ``--limit`` anywhere and with ``=``, the other words as the filter, the bad limits, an
    unknown option, prose."""
    rows = [
        ("seed row: scope word org", "memory list org"),
        (
            "seed row: scope word first, --limit anywhere, words the filter",
            "memory list me --limit 5 deploy",
        ),
        ("seed row: --limit=5 after the filter", "memory list deploy --limit=5"),
        ("seed row: a scope word first after an option", "memory list --limit 5 org deploy"),
        ("seed row: scope word repo", "memory list repo"),
        ("seed row: scope word channel, then the filter", "memory list channel deploy"),
        ("seed row: scope word all", "memory list all"),
        ("seed row: with --scope every word stays filter text", "memory list --scope org me"),
        ("seed row: a first word naming no scope is never consumed", "memory list deploy org"),
        ("seed row: --repo owner/name", "memory list --scope repo --repo acme/api"),
        ("seed row: --repo beside a filter", "memory list --repo acme/api deploy"),
        ("seed row: --limit 1, the lower edge", "memory list --limit 1"),
        ("seed row: --limit without its value", "memory list --limit"),
        ("seed row: a non-integer --limit", "memory list --limit 2.5"),
        ("seed row: a --limit that is no number", "memory list --limit abc"),
        ("seed row: an unknown option", "memory list --verbose"),
        ("seed row: a filter without tokens is still the filter", "memory list !!!"),
        ("seed row: prose that mentions memory list", "please show memory list"),
        ("seed row: forget a shared record's id", "memory forget mem:org:acme:7"),
    ]
    return [(comment, {"text": text}) for comment, text in rows]


def _list_line(a: Args) -> JSON:
    return render_list_line(memory_record(a["record"]))


def _forget_gate(a: Args) -> JSON:
    res = forget_gate(a["id"], a.get("callerUserId"), bool(a.get("isAdmin", False)))
    if isinstance(res, GateAllowed):
        return {"allowed": True, "scopeKey": res.scope_key}
    return {"allowed": False, "code": res.code}


def _gate_boundaries() -> list[tuple[str, Args]]:
    return [
        (
            "own user scope",
            {"id": "mem:user:slack:U1:3", "callerUserId": "slack:U1", "isAdmin": False},
        ),
        (
            "another person's scope, even for an admin",
            {"id": "mem:user:slack:U2:3", "callerUserId": "slack:U1", "isAdmin": True},
        ),
        (
            "shared scope needs an admin",
            {"id": "mem:org:acme:3", "callerUserId": "slack:U1", "isAdmin": False},
        ),
        (
            "shared scope, admin",
            {"id": "mem:repo:acme/api:3", "callerUserId": "slack:U1", "isAdmin": True},
        ),
        ("not a memory id", {"id": "123", "callerUserId": "slack:U1", "isAdmin": True}),
        ("no identity", {"id": "mem:user:slack:U1:3", "callerUserId": None, "isAdmin": False}),
        *_seed_gate_rows(),
    ]


def _seed_gate_rows() -> list[tuple[str, Args]]:
    """Every case §25 and its validation-table rows name: the own scope for an admin too,
    org/repo/channel behind the admin gate both ways, another person's scope for a non-admin,
    strings that are no memory id."""
    rows: list[tuple[str, str, str | None, bool]] = [
        ("seed row: own scope, also for an admin", "mem:user:slack:U1:3", "slack:U1", True),
        ("seed row: org scope, admin", "mem:org:acme:3", "slack:U1", True),
        ("seed row: repo scope is admin-gated like org", "mem:repo:acme/api:3", "slack:U1", False),
        (
            "seed row: channel scope is admin-gated like org",
            "mem:channel:slack:C1:3",
            "slack:U1",
            False,
        ),
        ("seed row: channel scope, admin", "mem:channel:slack:C1:3", "slack:U1", True),
        ("seed row: another person's scope, no admin", "mem:user:slack:U2:3", "slack:U1", False),
        ("seed row: an id without its number", "mem:org:acme", "slack:U1", True),
        ("seed row: an id whose number is not digits", "mem:org:acme:x", "slack:U1", True),
        ("seed row: an empty id", "", "slack:U1", True),
        ("seed row: a shared scope for an admin without identity", "mem:org:acme:3", None, True),
    ]
    return [
        (comment, {"id": rid, "callerUserId": caller, "isAdmin": admin})
        for comment, rid, caller, admin in rows
    ]


def _command_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """A command where prose is due or prose taken for one: MEM-CMD.1; a usage error on one
    side only: MEM-CMD.3; a forget read otherwise: MEM-CMD.5; else the list grammar:
    MEM-CMD.2."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if (value is None) != (want is None):
        return ("MEM-CMD.1",)
    verbs = {x.get("verb") for x in (value, want) if isinstance(x, dict)}
    if "usage" in verbs:
        return ("MEM-CMD.3",)
    if "forget" in verbs:
        return ("MEM-CMD.5",)
    return ("MEM-CMD.2",)


def _gate_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """Allowed where refused (or the other way, or another scope): MEM-CMD.7; the refusal's
    code: MEM-CMD.8."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if isinstance(value, dict) and isinstance(want, dict):
        if value.get("allowed") is False and want.get("allowed") is False:
            return ("MEM-CMD.8",)
    return ("MEM-CMD.7",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "parseMemoryCommand",
        MEMORY,
        ("MEM-CMD.1", "MEM-CMD.2", "MEM-CMD.3", "MEM-CMD.5"),
        "one chat line: list, forget, usage error or not a command",
        _parse_command,
        st.fixed_dictionaries(
            {
                "text": st.lists(
                    st.sampled_from(
                        (
                            "memory",
                            "list",
                            "forget",
                            "me",
                            "org",
                            "--limit",
                            "5",
                            "--scope=all",
                            "deploy",
                            "--repo",
                            "a/b",
                            "x",
                        )
                    ),
                    max_size=5,
                ).map(" ".join)
            }
        ),
        _command_boundaries,
        blame=_command_blame,
    ),
    fn(
        "renderListLine",
        MEMORY,
        ("MEM-CMD.6",),
        "one line per listed record",
        _list_line,
        st.fixed_dictionaries({"record": REC}),
        lambda: [("flattened, not escaped", {"record": rec(text="a <b>\nc", confidence=0.8)})],
    ),
    fn(
        "forgetGate",
        MEMORY,
        ("MEM-CMD.7", "MEM-CMD.8"),
        "may this caller forget this id",
        _forget_gate,
        st.fixed_dictionaries(
            {
                "id": st.sampled_from(
                    ("mem:user:slack:U1:1", "mem:org:acme:2", "x", "mem:user::3")
                ),
                "callerUserId": st.one_of(st.none(), st.just("slack:U1")),
                "isAdmin": st.booleans(),
            }
        ),
        _gate_boundaries,
        blame=_gate_blame,
    ),
)
