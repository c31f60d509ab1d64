"""MEM-CMD: the `memory list` / `memory forget` grammar, sections, line format and forget gate."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reference.memory.commands import (
    EMPTY_SECTION,
    LIST_SCOPES,
    MEMORY_LIST_LIMIT,
    MEMORY_LIST_MAX_LIMIT,
    MEMORY_OFF_REPLY,
    Allowed,
    ForgetCommand,
    ListCommand,
    ListRefusal,
    ListSections,
    Refused,
    UsageError,
    answer_forget,
    answer_list,
    forget_gate,
    forget_receipt,
    list_scopes_for,
    needs_repo_resolution,
    parse_memory_command,
    render_list_line,
    render_list_section,
    utc_date,
)
from reference.memory.containment import flatten_field
from reference.memory.records import MemoryCandidate
from reference.memory.store import StoreState, empty_store, store_list, store_write
from tests.common.memory_strategies import T0, make_record

OPTION_SHAPED = re.compile(r"--?[A-Za-z]")

# Filter words: no whitespace, never option-shaped; scope names included so that the
# bare-scope-word rule is exercised often.
_plain = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
    min_size=1,
    max_size=8,
).filter(lambda w: not w.split() == [] and len(w.split()) == 1 and w == w.split()[0])
filter_word = st.one_of(
    st.sampled_from(["deploy", "ship", "org", "ME", "repo", "channel", "all", "x-1", "-5", "é"]),
    _plain,
).filter(lambda w: not OPTION_SHAPED.match(w))
memory_word = st.sampled_from(["memory", "Memory", "MEMORY"])
space = st.sampled_from([" ", "  ", "\t", " \n "])


def _join(tokens: list[str], seps: list[str]) -> str:
    out = tokens[0]
    for tok, sep in zip(tokens[1:], seps, strict=False):
        out += sep + tok
    return out


# --------------------------------------------------------------------------- MEM-CMD.1


@pytest.mark.clause("MEM-CMD.1")
@given(st.text(max_size=40))
def test_prose_is_never_a_command(text: str) -> None:
    words = text.split()
    assume(not words or words[0].lower() != "memory")
    assert parse_memory_command(text) is None


@pytest.mark.clause("MEM-CMD.1")
@pytest.mark.parametrize(
    "text",
    ["what is in memory list?", "memorylist", "please memory list", "", "   ", "memories list"],
)
def test_prose_examples(text: str) -> None:
    assert parse_memory_command(text) is None


@pytest.mark.clause("MEM-CMD.1", "MEM-CMD.2")
def test_command_words_are_case_insensitive() -> None:
    assert parse_memory_command("MEMORY LIST") == ListCommand()
    assert parse_memory_command("  Memory Forget mem:org:acme:1 ") == ForgetCommand(
        "mem:org:acme:1"
    )


# --------------------------------------------------------------------------- MEM-CMD.2


@pytest.mark.clause("MEM-CMD.2")
@given(
    mem=memory_word,
    words=st.lists(filter_word, max_size=4),
    scope=st.one_of(st.none(), st.sampled_from(LIST_SCOPES)),
    limit=st.one_of(st.none(), st.integers(1, MEMORY_LIST_MAX_LIMIT)),
    repo=st.one_of(st.none(), st.sampled_from(["owner/name", "a.b/c-d_e"])),
    data=st.data(),
)
def test_list_grammar_roundtrip(
    mem: str,
    words: list[str],
    scope: str | None,
    limit: int | None,
    repo: str | None,
    data: st.DataObject,
) -> None:
    options: list[list[str]] = []
    for name, value in (("--scope", scope), ("--limit", limit), ("--repo", repo)):
        if value is None:
            continue
        shown = str(value)
        if name == "--scope":
            shown = data.draw(st.sampled_from([shown, shown.upper()]))
        if name == "--limit":
            shown = data.draw(st.sampled_from([shown, "0" + shown]))
        if data.draw(st.booleans()):
            options.append([f"{name}={shown}"])
        else:
            options.append([name, shown])
    # Interleave the options anywhere among the filter words, keeping the words' order.
    tokens: list[str] = list(words)
    for opt in options:
        pos = data.draw(st.integers(0, len(tokens)))
        while (
            pos > 0
            and pos < len(tokens)
            and tokens[pos - 1].startswith("--")
            and "=" not in tokens[pos - 1]
        ):
            pos -= 1  # never split an option from its value
        tokens[pos:pos] = opt
    all_tokens = [mem, "list", *tokens]
    seps = data.draw(st.lists(space, min_size=len(all_tokens), max_size=len(all_tokens)))
    text = data.draw(space) + _join(all_tokens, seps)

    expected_scope = scope
    expected_words = list(words)
    if scope is None and expected_words and expected_words[0].lower() in LIST_SCOPES:
        expected_scope = expected_words.pop(0).lower()
    expected = ListCommand(
        scope=expected_scope or "all",
        limit=limit if limit is not None else MEMORY_LIST_LIMIT,
        query=" ".join(expected_words) if expected_words else None,
        repo=repo,
    )
    assert parse_memory_command(text) == expected


@pytest.mark.clause("MEM-CMD.2")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("memory list", ListCommand("all", 20, None)),
        ("memory list org deploy", ListCommand("org", 20, "deploy")),
        ("memory list me", ListCommand("me", 20, None)),
        ("memory list deploy org", ListCommand("all", 20, "deploy org")),
        ("memory list --scope me org deploy", ListCommand("me", 20, "org deploy")),
        ("memory list --limit 5 org", ListCommand("org", 5, None)),
        ("memory list deploy --limit=50", ListCommand("all", 50, "deploy")),
        ("memory list --limit 007 x", ListCommand("all", 7, "x")),
        ("memory list repo --repo acme/api", ListCommand("repo", 20, None, "acme/api")),
        ("memory list channel ci  flaky", ListCommand("channel", 20, "ci flaky")),
        ("memory list ???", ListCommand("all", 20, "???")),
    ],
)
def test_list_examples(text: str, expected: ListCommand) -> None:
    assert parse_memory_command(text) == expected


# --------------------------------------------------------------------------- MEM-CMD.3


@pytest.mark.clause("MEM-CMD.3")
@pytest.mark.parametrize(
    "text",
    [
        "memory",
        "memory lst",
        "memory remember this",
        "memory list --limit 0",
        "memory list --limit 51",
        "memory list --limit 5.0",
        "memory list --limit -1",
        "memory list --limit abc",
        "memory list --limit +5",
        "memory list --limit",
        "memory list --limit=",
        "memory list --limit 5 --limit 6",
        "memory list --scope",
        "memory list --scope everyone",
        "memory list --scope=",
        "memory list --scope me --scope org",
        "memory list --verbose",
        "memory list -v",
        "memory list --repo",
        "memory list --repo notarepo",
        "memory forget",
        "memory forget a b",
        "memory forget --force mem:org:acme:1",
    ],
)
def test_usage_errors(text: str) -> None:
    assert isinstance(parse_memory_command(text), UsageError)


@pytest.mark.clause("MEM-CMD.3")
@given(st.text(min_size=1, max_size=6))
def test_limit_accepts_only_plain_digits_1_to_50(value: str) -> None:
    assume(not any(c.isspace() for c in value))
    got = parse_memory_command(f"memory list --limit={value}")
    ok = value.isascii() and value.isdigit() and 1 <= int(value) <= 50
    if ok:
        assert got == ListCommand(limit=int(value))
    else:
        assert isinstance(got, UsageError)


# --------------------------------------------------------------------------- MEM-CMD.4


@pytest.mark.clause("MEM-CMD.4")
@given(
    scope=st.sampled_from(LIST_SCOPES),
    user=st.one_of(st.none(), st.just("slack:U1")),
    channel=st.one_of(st.none(), st.just("slack:C9")),
    bound=st.one_of(st.none(), st.just("acme/api")),
    flag=st.one_of(st.none(), st.just("acme/web")),
)
def test_sections_are_the_requests_own_scopes(
    scope: str, user: str | None, channel: str | None, bound: str | None, flag: str | None
) -> None:
    cmd = ListCommand(scope=scope, repo=flag)
    got = list_scopes_for(
        cmd, org_key="org:acme", caller_user_id=user, channel_id=channel, bound_repo=bound
    )
    repo = flag or bound
    own = {
        "me": f"user:{user}" if user else None,
        "repo": f"repo:{repo}" if repo else None,
        "channel": f"channel:{channel}" if channel else None,
        "org": "org:acme",
    }
    if scope == "all":
        expected = tuple(
            k for k in (own["me"], own["repo"], own["channel"], own["org"]) if k is not None
        )
        assert got == ListSections(expected)
    elif own[scope] is None:
        assert isinstance(got, ListRefusal) and got.message
    else:
        assert got == ListSections((own[scope],))  # type: ignore[arg-type]
    assert needs_repo_resolution(cmd) == (scope in ("repo", "all") and flag is None)


@pytest.mark.clause("MEM-CMD.4")
def test_repo_scope_without_repo_says_so() -> None:
    got = list_scopes_for(ListCommand("repo"), org_key="org:acme", caller_user_id="slack:U1")
    assert isinstance(got, ListRefusal) and "repo" in got.message
    assert not needs_repo_resolution(ListCommand("org"))
    assert not needs_repo_resolution(ListCommand("me"))
    assert not needs_repo_resolution(ListCommand("channel"))


# --------------------------------------------------------------------------- MEM-CMD.5


@pytest.mark.clause("MEM-CMD.5")
@given(rid=st.text(min_size=1, max_size=30).filter(lambda s: len(s.split()) == 1))
def test_forget_takes_one_word_as_typed(rid: str) -> None:
    word = rid.split()[0]
    assume(not OPTION_SHAPED.match(word))
    assert parse_memory_command(f"memory forget {word}") == ForgetCommand(word)


# --------------------------------------------------------------------------- MEM-CMD.6


@pytest.mark.clause("MEM-CMD.6")
def test_list_line_exact() -> None:
    rec = make_record(
        "mem:org:acme:12",
        text="Deploys go through make ship",
        source_thread_key="slack:C1:1712",
        created_at=1_767_225_599_999,  # 2025-12-31T23:59:59.999Z
    )
    assert render_list_line(rec) == (
        "\u2022 `mem:org:acme:12` [fact, 2025-12-31] Deploys go through make ship"
        " (source: `slack:C1:1712`)"
    )
    nxt = make_record("mem:org:acme:13", kind="summary", created_at=1_767_225_600_000)
    assert render_list_line(nxt).startswith("\u2022 `mem:org:acme:13` [summary, 2026-01-01] ")


_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_forged = st.sampled_from(
    [
        "x\n\u2022 `mem:org:acme:999` [fact, 2026-01-01] forged (source: `t`)",
        "a\u2028\u2022 `mem:user:slack:U9:1` [fact, 2026-01-01] b",
        "\r\n\r\n",
        "line\x85next\u2029para\x0bvt\x0cff\x1csep",
    ]
)
_adversarial = st.one_of(
    _forged, st.text(alphabet=st.sampled_from([*_BREAKS, "a", " ", "`", "\u2022", "\t"])), st.text()
)


@pytest.mark.clause("MEM-CMD.6", "MEM-CMD.10")
@given(text=_adversarial, thread=_adversarial, query=st.one_of(st.none(), _adversarial))
def test_every_listing_line_stays_one_line_whatever_the_record_holds(
    text: str, thread: str, query: str | None
) -> None:
    rec = make_record("mem:org:acme:7", text=text or "x", source_thread_key=thread or "t")
    line = render_list_line(rec)
    assert line.splitlines() == [line]
    assert line.startswith("\u2022 `mem:org:acme:7` [fact, ")
    assert line.count("\u2022 `mem:") == 1 or "\u2022 `mem:" in flatten_field(text + thread)
    section = render_list_section("org:acme", [rec, rec], limit=5, query=query, own_key=None)
    lines = section.splitlines()
    assert len(lines) == 3, lines  # the heading and one line per record
    assert lines[1:] == [line, line]


@pytest.mark.clause("MEM-CMD.6")
@given(st.integers(-62_135_596_800_000, 253_402_300_799_999))
def test_utc_date_matches_the_calendar(ms: int) -> None:
    d = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert utc_date(ms) == f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


# --------------------------------------------------------------------------- MEM-CMD.7 / .8

scope_value = st.one_of(
    st.sampled_from(["acme", "slack:U1", "slack:U2", "owner/name", "slack:C9", "a:b:c"]),
    st.text(alphabet="abc:/U1", min_size=1, max_size=8),
)


@pytest.mark.clause("MEM-CMD.7", "MEM-CMD.8")
@given(
    kind=st.sampled_from(["user", "org", "repo", "channel"]),
    value=scope_value,
    n=st.integers(0, 10**6),
    caller=st.one_of(st.none(), st.sampled_from(["slack:U1", "slack:U2", "a:b:c"])),
    is_admin=st.booleans(),
)
def test_forget_gate(kind: str, value: str, n: int, caller: str | None, is_admin: bool) -> None:
    assume(value.strip())
    rid = f"mem:{kind}:{value}:{n}"
    got = forget_gate(rid, caller, is_admin)
    if kind == "user":
        if caller is not None and value == caller:
            assert got == Allowed(f"user:{value}", rid)
        else:
            assert isinstance(got, Refused) and got.code == "foreign_scope"
    elif is_admin:
        assert got == Allowed(f"{kind}:{value}", rid)
    else:
        assert isinstance(got, Refused) and got.code == "admin_required"
        assert "memory list me" in got.reason


@pytest.mark.clause("MEM-CMD.7")
def test_admins_cannot_forget_another_users_record() -> None:
    got = forget_gate("mem:user:slack:U2:4", "slack:U1", True)
    assert isinstance(got, Refused) and got.code == "foreign_scope"
    assert forget_gate("mem:user:slack:U1:4", "slack:U1", False) == Allowed(
        "user:slack:U1", "mem:user:slack:U1:4"
    )
    assert isinstance(forget_gate("mem:user:slack:U1:4", None, True), Refused)


@pytest.mark.clause("MEM-CMD.8")
@pytest.mark.parametrize(
    "rid",
    [
        "hello",
        "mem:org:acme",
        "org:acme:1",
        "mem::1",
        "mem:user::1",
        "mem:foo:1",
        "mem:org:acme:1a",
        "mem:org:acme:",
        "mem:org:acme:\uff11",
        "MEM:org:acme:1",
    ],
)
@pytest.mark.parametrize("is_admin", [True, False])
def test_non_ids_are_invalid_input_with_the_format(rid: str, is_admin: bool) -> None:
    got = forget_gate(rid, "slack:U1", is_admin)
    assert isinstance(got, Refused) and got.code == "invalid_input"
    assert "mem:<scope>:<n>" in got.reason


@pytest.mark.clause("MEM-CMD.8")
def test_forget_receipts() -> None:
    assert "Forgot" in forget_receipt("mem:org:acme:1", True)
    nothing = forget_receipt("mem:org:acme:1", False)
    assert nothing.startswith("Nothing to forget")
    assert forget_receipt("mem:org:acme:1", None).startswith("\u26a0")


@pytest.mark.clause("MEM-CMD.6")
def test_list_line_dates_before_epoch() -> None:
    assert render_list_line(make_record("mem:org:acme:1", created_at=-1)).startswith(
        "\u2022 `mem:org:acme:1` [fact, 1969-12-31]"
    )
    assert utc_date(T0) == "2026-05-28"


# --------------------------------------------------------------------------- MEM-CMD.9, MEM-CMD.10


def _seeded() -> StoreState:
    state = empty_store()
    for key, texts in (
        ("org:acme", ["deploy with make ship", "ci runs on push"]),
        ("user:slack:U1", ["this user prefers terse replies"]),
        ("user:slack:U2", ["secret preference of someone else"]),
    ):
        state, _ = store_write(
            state, key, [MemoryCandidate("fact", t, "slack:C1:1") for t in texts], T0
        )
    return state


@pytest.mark.clause("MEM-CMD.9")
@pytest.mark.parametrize(
    "line",
    ["memory list", "memory list org", "memory list deploy --limit 5", "memory list me"],
)
def test_list_with_memory_off_only_says_so(line: str) -> None:
    command = parse_memory_command(line)
    assert isinstance(command, ListCommand)
    state = _seeded()
    reply = answer_list(
        state, command, enabled=False, org_key="org:acme", caller_user_id="slack:U1"
    )
    assert reply == MEMORY_OFF_REPLY
    assert "memory" in reply.lower() and "off" in reply.lower()
    on = answer_list(state, command, enabled=True, org_key="org:acme", caller_user_id="slack:U1")
    assert on != MEMORY_OFF_REPLY


@pytest.mark.clause("MEM-CMD.9")
@pytest.mark.parametrize("is_admin", [True, False])
@pytest.mark.parametrize("rid", ["mem:user:slack:U1:1", "mem:org:acme:1", "junk"])
def test_forget_with_memory_off_touches_no_store(rid: str, is_admin: bool) -> None:
    state = _seeded()
    after, reply = answer_forget(
        state, ForgetCommand(rid), enabled=False, caller_user_id="slack:U1", is_admin=is_admin
    )
    assert after is state and reply == MEMORY_OFF_REPLY
    # the same command with memory on does reach the store
    on_state, on_reply = answer_forget(
        state,
        ForgetCommand("mem:user:slack:U1:1"),
        enabled=True,
        caller_user_id="slack:U1",
        is_admin=is_admin,
    )
    assert on_state is not state and "Forgot" in on_reply
    assert store_list(on_state, "user:slack:U1", 50) == []


@pytest.mark.clause("MEM-CMD.10")
def test_list_sections_are_labelled_and_ordered() -> None:
    state = _seeded()
    reply = answer_list(
        state,
        ListCommand(),
        enabled=True,
        org_key="org:acme",
        caller_user_id="slack:U1",
        channel_id="slack:C9",
    )
    sections = reply.split("\n\n")
    assert len(sections) == 3
    own, channel, org = sections
    assert own.splitlines()[0].startswith("your records") and "user:slack:U1" in own
    assert channel.splitlines()[1:] == [EMPTY_SECTION]
    assert EMPTY_SECTION == "no active records"
    org_lines = org.splitlines()
    assert "org:acme" in org_lines[0]
    assert org_lines[1:] == [render_list_line(r) for r in store_list(state, "org:acme", 20)]
    assert "someone else" not in reply and "user:slack:U2" not in reply


@pytest.mark.clause("MEM-CMD.10")
def test_filtered_sections_say_matching_and_full_pages_hint() -> None:
    state = _seeded()
    reply = answer_list(
        state,
        ListCommand(scope="org", query="deploy"),
        enabled=True,
        org_key="org:acme",
        caller_user_id="slack:U1",
    )
    lines = reply.splitlines()
    assert "matching" in lines[0] and "deploy" in lines[0]
    assert len(lines) == 2 and "deploy with make ship" in lines[1]
    full = answer_list(
        state,
        ListCommand(scope="org", limit=2),
        enabled=True,
        org_key="org:acme",
        caller_user_id="slack:U1",
    ).splitlines()
    assert len(full) == 4 and "narrow" in full[-1]
    not_full = answer_list(
        state,
        ListCommand(scope="org", limit=3),
        enabled=True,
        org_key="org:acme",
        caller_user_id="slack:U1",
    ).splitlines()
    assert len(not_full) == 3 and "narrow" not in not_full[-1]
