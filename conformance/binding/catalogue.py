"""Altered engines: the reference host with one realistic mistake (a mutant) or another allowed
choice (a variant) in one function.

``python -m conformance.engine_host --mutant NAME`` (or ``--variant NAME``) serves the
reference with :data:`ENTRIES` ``[NAME].patch`` applied.  ``memspec selftest --kind engine`` and
``tests/engine/test_engine_catalogue.py`` check that every mutant is judged not conformant by a
failure naming one of its clauses and every variant is judged conformant.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.binding.codec import memory_record, memory_records
from conformance.binding.functions import BY_NAME, Args, Refused
from conformance.binding.functions.memory.reflection import cand_out
from conformance.binding.open_variants import ALL_TOGETHER, OPEN_VARIANTS
from reference.ledger.credentials import DETECTORS
from reference.memory.containment import flatten_field, render_bullet
from reference.memory.engine import Insert, normalize_text, plan_write
from reference.memory.scoring import ALPHA, BETA, TAU_MS, keyword_match, tokenize

JSON = Any
Impl = Callable[[Args], JSON]


@dataclass(frozen=True)
class EngineEntry:
    name: str
    kind: str  # "mutant" | "variant"
    function: str
    clauses: tuple[str, ...]
    summary: str
    impl: Impl
    #: further functions the entry alters, each with its implementation
    also: tuple[tuple[str, Impl], ...] = ()

    def patches(self) -> dict[str, Impl]:
        """Every function the entry alters, its own first."""
        return {self.function: self.impl, **dict(self.also)}


# --------------------------------------------------------------------------- mutants


def _substring_match(a: Args) -> JSON:
    rec = memory_record(a["record"])
    q = tokenize(a["query"])
    if not q:
        return 0.0
    hay = " ".join([rec.text.lower(), *(k.lower() for k in rec.keywords)])
    return sum(1 for t in q if t in hay) / len(q)


def _recency_created(a: Args) -> JSON:
    rec = memory_record(a["record"])
    return math.exp(-max(0, int(a["now"]) - rec.created_at) / TAU_MS)


def _score_no_clamp(a: Args) -> JSON:
    rec = memory_record(a["record"])
    ref = rec.last_used_at if rec.last_used_at is not None else rec.created_at
    recency = math.exp(-(int(a["now"]) - ref) / TAU_MS)
    return ALPHA * keyword_match(a["query"], rec) + BETA * recency


def _rank_no_gate(a: Args) -> JSON:
    recs = memory_records(a["records"])
    limit = int(a["limit"])
    from reference.memory.scoring import score_record

    scored = sorted(recs, key=lambda r: -score_record(a["query"], r, int(a["now"])))
    return [r.id for r in scored[: max(limit, 0)]] if tokenize(a["query"]) else []


def _evict_ties_newest(a: Args) -> JSON:
    live = [r for r in memory_records(a["active"]) if r.status == "active"]
    excess = len(live) - max(int(a["cap"]), 0)
    if excess <= 0:
        return []

    def key(r: Any) -> tuple[int, int]:
        used = r.last_used_at if r.last_used_at is not None else r.created_at
        return (used, -r.created_at)

    return [r.id for r in sorted(live, key=key)[:excess]]


def _evict_most_recent(a: Args) -> JSON:
    live = [r for r in memory_records(a["active"]) if r.status == "active"]
    excess = len(live) - max(int(a["cap"]), 0)
    if excess <= 0:
        return []
    return [r.id for r in sorted(live, key=lambda r: -(r.last_used_at or r.created_at))[:excess]]


def _dedup_raw(a: Args) -> JSON:
    from conformance.binding.codec import candidate

    cand = candidate(a["candidate"])
    active = [r for r in memory_records(a["active"]) if r.status == "active"]
    if cand.supersedes:
        return BY_NAME["planWrite"].call(a)
    for r in active:
        if r.text == cand.text:
            return {"action": "dedup", "id": r.id}
    return {"action": "insert", "supersedes": None}


def _normalize_no_collapse(a: Args) -> JSON:
    return str(a["text"]).lower().strip()


def _budget_bytes(a: Args) -> JSON:
    return -(-len(str(a["text"]).encode("utf-8")) // 4)


def _budget_code_points(a: Args) -> JSON:
    return -(-len(str(a["text"])) // 4)


def _apply_budget_skips(a: Args) -> JSON:
    recs = memory_records(a["records"])
    kept: list[str] = []
    used = 0
    for r in recs:
        if len(kept) >= int(a["limit"]):
            break
        cost = -(-len(render_bullet(r).encode("utf-16-le", "surrogatepass")) // 8)
        if kept and used + cost > int(a["maxTokens"]):
            continue
        kept.append(r.id)
        used += cost
    return kept


def _sanitize_lt_first(a: Args) -> JSON:
    s = flatten_field(a["text"])
    return s.replace("<", "&lt;").replace(">", "&gt;").replace("&", "&amp;")


def _sanitize_no_controls(a: Args) -> JSON:
    s = str(a["text"]).strip()
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _tokenize_unicode(a: Args) -> JSON:
    return re.findall(r"\w+", str(a["text"]).lower())


def _mint_used_now(a: Args) -> JSON:
    out = dict(BY_NAME["mintRecord"].call(a))
    out["lastUsedAt"] = a["now"]
    return out


def _scope_keys_alpha(a: Args) -> JSON:
    keys = list(a["keys"])
    if any(k.split(":", 1)[0] not in ("org", "repo", "channel", "user") for k in keys):
        raise Refused("not a memory scope key")
    return sorted(keys)


def _reflection_bool_confidence(a: Args) -> JSON:
    raw = a["raw"].replace("true", "0.9")
    return BY_NAME["parseReflection"].call({**a, "raw": raw})


def _reflection_six(a: Args) -> JSON:
    import json

    from reference.memory.reflection import parse_reflection

    out = BY_NAME["parseReflection"].call(a)
    if out is None:
        return None
    try:
        facts = json.loads(a["raw"])["facts"]
    except (ValueError, KeyError, TypeError):
        return out
    extra = [f for f in facts if isinstance(f, dict)][len(out["facts"]) : len(out["facts"]) + 1]
    if len(out["facts"]) == 5 and extra:
        res = parse_reflection(json.dumps({"facts": extra}), [], a["threadKey"], a.get("runId"))
        if res is not None and res.facts:
            out["facts"].append(cand_out(res.facts[0]))
    return out


def _reflect_never_triage(a: Args) -> JSON:
    if a.get("agentName") in ("review", "triage"):
        return False
    return int(a["toolCalls"]) >= 1 or int(a["historyTurns"]) >= 4


def _reflect_review(a: Args) -> JSON:
    return int(a["toolCalls"]) >= 1 or int(a["historyTurns"]) >= 4


def _as_of_closed(a: Args) -> JSON:
    from conformance.binding.codec import ledger_records

    recs = ledger_records(a["records"])
    at = int(a["at"])
    hits = [
        r
        for r in recs
        if r.scope_key == a["scopeKey"]
        and r.valid_from <= at
        and (r.valid_to is None or at <= r.valid_to)
    ]
    return [r.id for r in hits]


def _packet_stops_at_cap(a: Args) -> JSON:
    from conformance.binding.codec import ledger_records
    from reference.ledger.packet import packet_order_key, render_line

    recs = sorted(
        (r for r in ledger_records(a["records"]) if r.scope_key == a["scopeKey"]),
        key=packet_order_key,
    )
    ids: list[str] = []
    lines: list[str] = []
    groups: set[str] = set()
    for r in recs:
        if r.status != "active" or (r.conflict_group and r.conflict_group in groups):
            continue
        line = render_line(r)
        if len("\n".join([*lines, line])) > 4000:
            break
        ids.append(r.id)
        lines.append(line)
        if r.conflict_group:
            groups.add(r.conflict_group)
    return {"ids": ids, "text": "\n".join(lines)}


def _cred_no_bearer(a: Args) -> JSON:
    body = a["body"]
    for name, pattern in DETECTORS:
        if name != "bearer_token" and pattern.search(body):
            return BY_NAME["credentialVerdict"].call(a)
    return "store"


def _prefix_hyphen(a: Args) -> JSON:
    return f"Background memory for {a['resource']} (may be outdated - verify before acting):"


def _supersede_empty_target(a: Args) -> JSON:
    from conformance.binding.codec import candidate

    cand = candidate(a["candidate"])
    if cand.supersedes == "":
        norm = normalize_text(cand.text)
        if any(normalize_text(r.text) == norm for r in memory_records(a["active"])):
            return {"action": "insert", "supersedes": None}
    plan = plan_write(memory_records(a["active"]), cand)
    if isinstance(plan, Insert):
        return {"action": "insert", "supersedes": plan.supersede_id}
    return {"action": "dedup", "id": plan.target_id}


# --------------------------------------------------------------------------- variants


def _rank_ties_reversed(a: Args) -> JSON:
    from reference.memory.scoring import score_record

    recs = list(reversed(memory_records(a["records"])))
    q, now, limit = a["query"], int(a["now"]), int(a["limit"])
    if not tokenize(q) or limit <= 0:
        return []
    hits = [r for r in recs if keyword_match(q, r) > 0]
    hits.sort(key=lambda r: -score_record(q, r, now))
    return [r.id for r in hits[:limit]]


def _evict_reversed_answer(a: Args) -> JSON:
    return list(reversed(BY_NAME["planEviction"].call(a)))


def _mint_supersedes_kept(a: Args) -> JSON:
    out = dict(BY_NAME["mintRecord"].call(a))
    if a["candidate"].get("supersedes") == "":
        out["supersedes"] = ""
    if a["candidate"].get("keywords") is None:
        out["keywords"] = []
    return out


def _derive_js_blank(a: Args) -> JSON:
    """Blank by JavaScript's ``trim`` (U+FEFF is blank, U+001C is not)."""
    from reference.jsonvalues import js_trim

    kind, value = a["kind"], a.get("value")
    if kind not in ("org", "repo", "channel", "user") or value is None or not js_trim(value):
        raise Refused("no value")
    return f"{kind}:{value}"


def _request_blank_dropped(a: Args) -> JSON:
    keys = [BY_NAME["deriveScopeKey"].call({"kind": "org", "value": a.get("org")})]
    for kind, name in (("repo", "repo"), ("channel", "channelId"), ("user", "userId")):
        v = a.get(name)
        if v and v.strip():
            keys.append(f"{kind}:{v}")
    return keys


def _redact_other_marker(a: Args) -> JSON:
    from reference.memory.reflection.contract import REDACTION_MARKER

    return BY_NAME["redactSecrets"].call(a).replace(REDACTION_MARKER, "***")


def _as_of_no_tombstones(a: Args) -> JSON:
    from conformance.binding.codec import ledger_records

    status = {r.id: r.status for r in ledger_records(a["records"])}
    return [i for i in reversed(BY_NAME["listAsOf"].call(a)) if status[i] != "deleted"]


def _packet_ties_first_written(a: Args) -> JSON:
    from conformance.binding.codec import ledger_records
    from reference.ledger.packet import build_packet
    from reference.ledger.records import LedgerState

    recs = ledger_records(a["records"])
    n = len(recs)
    from dataclasses import replace

    state = LedgerState(records=tuple(replace(r, seq=n - 1 - r.seq) for r in recs))
    p = build_packet(state, a["scopeKey"])
    return {"ids": [r.id for r in p.records], "text": p.text}


def _cred_strict_only(a: Args) -> JSON:
    from reference.ledger.credentials import credential_verdict

    return "refuse" if credential_verdict(a["body"]) == "refuse" else "store"


def _fence_strict(a: Args) -> JSON:
    raw = a["raw"].strip()
    if raw.startswith("```") and not (raw.startswith("```json\n") and raw.endswith("\n```")):
        return None
    return BY_NAME["parseReflection"].call(a)


# --------------------------------------------------------------------------- the scorer's
# parameters, the cap, routing and the extractor input


def _tau_one_day(a: Args) -> JSON:
    return {"alpha": ALPHA, "beta": BETA, "tauMs": 86_400_000}


def _tau_six_days(a: Args) -> JSON:
    return {"alpha": ALPHA, "beta": BETA, "tauMs": 6 * 86_400_000}


def _cap_truncates(a: Args) -> JSON:
    """``parseInt``-like: a number is cut to its integer part before the range check."""
    v = a.get("value")
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
        n = int(v)
        if 1 <= n <= 10_000:
            return {"cap": n, "warning": None}
    return BY_NAME["resolveScopeCap"].call(a)


def _cap_warns_unset(a: Args) -> JSON:
    """Warns of an unset value too, in its own words, and reads a string of digits."""
    v = a.get("value")
    warn = "memory: maxRecordsPerScope is unset or invalid, the default 500 applies"
    if v is None:
        return {"cap": 500, "warning": warn}
    if isinstance(v, str) and v.strip().isdigit() and 1 <= int(v) <= 10_000:
        return {"cap": int(v), "warning": None}
    out = BY_NAME["resolveScopeCap"].call(a)
    return {**out, "warning": warn} if out["warning"] else out


def _route_private_to_repo(a: Args) -> JSON:
    """Narrows an org write from a private, unknown or unstamped origin to the repo scope."""
    route = BY_NAME["routeCandidate"].call
    ungated = route({**a, "origin": "public"})
    origin, scopes = a.get("origin"), a["scopes"]
    gated = origin not in ("public", "machine", "dm", "group_dm")
    if gated and ungated["scopeKey"] == scopes["org"] and scopes.get("repo"):
        return {"scopeKey": scopes["repo"], "keepsSupersedes": False}
    return route(a)


def _input_parts(a: Args) -> tuple[str, str]:
    from conformance.binding.functions.memory.extractor import transcript
    from reference.memory.reflection import render_transcript

    recs = memory_records(a["existing"])
    head = "\n".join(f"{r.text} (id {r.id})" for r in recs) or "(no records)"
    return head, render_transcript(transcript(a["transcript"]))


def _input_head_cap(a: Args) -> JSON:
    """Keeps the first 24 000 units of a long transcript instead of its end."""
    from conformance.binding.functions.memory.extractor import transcript
    from reference.memory.reflection import build_reflection_input, render_transcript

    turns = transcript(a["transcript"])
    text = render_transcript(turns)
    if len(text) <= 24_000:
        return BY_NAME["buildReflectionInput"].call(a)
    out = build_reflection_input(memory_records(a["existing"]), [])
    return f"{out}\n{text[:24_000]}"


def _input_other_layout(a: Args) -> JSON:
    """Its own layout: records as ``<text> (id <id>)``, the transcript under ``## Thread``,
    cut to its last 24 576 code points without a marker."""
    head, text = _input_parts(a)
    return f"## Known records\n{head}\n## Thread\n{text[-24_576:]}"


def _command_scope_only_first(a: Args) -> JSON:
    """A bare scope word is taken only as the very first word after ``list``."""
    out = BY_NAME["parseMemoryCommand"].call(a)
    words = str(a["text"]).split()
    if not (out and out.get("verb") == "list" and out["scope"] != "all" and len(words) > 2):
        return out
    first = words[2].lower()
    if first.startswith("-") and "--scope" not in " ".join(words).lower():
        query = [out["scope"], *([out["query"]] if out["query"] else [])]
        return {**out, "scope": "all", "query": " ".join(query)}
    return out


def _forget_channel_open(a: Args) -> JSON:
    """Only org and repo records are admin-gated; anyone may forget a channel record."""
    rid = str(a["id"])
    if rid.startswith("mem:channel:"):
        return BY_NAME["forgetGate"].call({**a, "isAdmin": True})
    return BY_NAME["forgetGate"].call(a)


def _listing_repo_falls_to_org(a: Args) -> JSON:
    """``memory list repo`` without a repo lists the org scope instead of saying so."""
    if a.get("scope") == "repo" and not (a.get("repo") or a.get("boundRepo")):
        return [f"org:{a['org']}"]
    return BY_NAME["listingScopeKeys"].call(a)


def _recency_tau(days: float) -> Impl:
    def impl(a: Args) -> JSON:
        rec = memory_record(a["record"])
        used = rec.last_used_at if rec.last_used_at is not None else rec.created_at
        return math.exp(-max(0, int(a["now"]) - used) / (days * 86_400_000))

    return impl


def _rank_tau_six_days(a: Args) -> JSON:
    from reference.memory.engine import rank_records

    recs = memory_records(a["records"])
    ranked = rank_records(recs, a["query"], int(a["limit"]), int(a["now"]), tau_ms=6 * 86_400_000)
    return [r.id for r in ranked]


def _m(name: str, fn: str, clauses: tuple[str, ...], summary: str, impl: Impl) -> EngineEntry:
    return EngineEntry(name, "mutant", fn, clauses, summary, impl)


def _v(name: str, fn: str, clauses: tuple[str, ...], summary: str, impl: Impl) -> EngineEntry:
    return EngineEntry(name, "variant", fn, clauses, summary, impl)


ENTRIES_LIST: tuple[EngineEntry, ...] = (
    _m(
        "eng-substring-match",
        "keywordMatch",
        ("MEM-SCORE.2",),
        "a query token hits any substring of the text",
        _substring_match,
    ),
    _m(
        "eng-recency-created-only",
        "recencyScore",
        ("MEM-SCORE.3",),
        "recency from createdAt, lastUsedAt ignored",
        _recency_created,
    ),
    _m(
        "eng-score-future-unclamped",
        "scoreRecord",
        ("MEM-SCORE.1",),
        "a timestamp after now gives recency above 1",
        _score_no_clamp,
    ),
    _m(
        "eng-rank-no-gate",
        "rankRecords",
        ("MEM-SCORE.4",),
        "records the query does not hit are ranked too",
        _rank_no_gate,
    ),
    _m(
        "eng-evict-ties-newest-first",
        "planEviction",
        ("MEM-CAP.2",),
        "equal last use broken newest-created first",
        _evict_ties_newest,
    ),
    _m(
        "eng-evict-most-recent",
        "planEviction",
        ("MEM-CAP.2",),
        "evicts the most recently used",
        _evict_most_recent,
    ),
    _m(
        "eng-dedup-raw-text",
        "planWrite",
        ("MEM-WRITE.2",),
        "dedup compares the raw text",
        _dedup_raw,
    ),
    _m(
        "eng-supersede-empty-as-unresolved",
        "planWrite",
        ("MEM-WRITE.1",),
        'supersedes "" read as an unresolved pointer: no dedup',
        _supersede_empty_target,
    ),
    _m(
        "eng-normalize-no-collapse",
        "normalizeText",
        ("MEM-WRITE.2",),
        "inner whitespace runs not collapsed",
        _normalize_no_collapse,
    ),
    _m(
        "eng-tokens-unicode-words",
        "tokenize",
        ("MEM-SCORE.2",),
        "tokens are Unicode \\w runs",
        _tokenize_unicode,
    ),
    _m(
        "eng-budget-counts-bytes",
        "estimateTokens",
        ("MEM-BUDGET.2",),
        "the estimate counts UTF-8 bytes",
        _budget_bytes,
    ),
    _m(
        "eng-budget-counts-code-points",
        "estimateTokens",
        ("MEM-BUDGET.2",),
        "the estimate counts code points, not UTF-16 units",
        _budget_code_points,
    ),
    _m(
        "eng-budget-skips-over",
        "applyBudget",
        ("MEM-BUDGET.1",),
        "a record that does not fit is skipped, later ones still taken",
        _apply_budget_skips,
    ),
    _m(
        "eng-sanitize-lt-before-amp",
        "sanitizeMemoryField",
        ("MEM-CONTAIN.2",),
        "escapes < and > before &",
        _sanitize_lt_first,
    ),
    _m(
        "eng-sanitize-keeps-controls",
        "sanitizeMemoryField",
        ("MEM-CONTAIN.1",),
        "controls and inner newlines kept",
        _sanitize_no_controls,
    ),
    _m(
        "eng-prefix-hyphen",
        "memoryPrefixLine",
        ("MEM-CONTAIN.4",),
        "a hyphen for the em dash",
        _prefix_hyphen,
    ),
    _m(
        "eng-mint-used-now",
        "mintRecord",
        ("MEM-RECORD.4",),
        "a fresh record has lastUsedAt = now",
        _mint_used_now,
    ),
    _m(
        "eng-scope-order-alphabetical",
        "listScopeKeys",
        ("MEM-SCOPE.4",),
        "scope keys sorted alphabetically",
        _scope_keys_alpha,
    ),
    _m(
        "eng-no-reflect-second-agent",
        "shouldReflect",
        ("MEM-REFLECT.1",),
        "a second agent (triage) in the no-reflect set",
        _reflect_never_triage,
    ),
    _m(
        "eng-reflect-reviews",
        "shouldReflect",
        ("MEM-REFLECT.1",),
        "a review run is distilled too",
        _reflect_review,
    ),
    _m(
        "eng-reflection-boolean-confidence",
        "parseReflection",
        ("MEM-REFLECT.8",),
        "a boolean confidence is read as a number",
        _reflection_bool_confidence,
    ),
    _m(
        "eng-reflection-six-facts",
        "parseReflection",
        ("MEM-REFLECT.8",),
        "six facts survive",
        _reflection_six,
    ),
    _m(
        "eng-asof-closed-interval",
        "listAsOf",
        ("LED-ASOF.1",),
        "the interval includes validTo",
        _as_of_closed,
    ),
    _m(
        "eng-packet-stops-at-cap",
        "buildPacket",
        ("LED-PACKET.4",),
        "the first record over the cap ends the packet",
        _packet_stops_at_cap,
    ),
    _m(
        "eng-credential-misses-bearer",
        "credentialVerdict",
        ("LED-CRED.1",),
        "a Bearer token is stored",
        _cred_no_bearer,
    ),
    _v(
        "eng-rank-ties-reversed",
        "rankRecords",
        ("MEM-SCORE.5",),
        "equal scores in reverse input order",
        _rank_ties_reversed,
    ),
    _v(
        "eng-evict-answer-reversed",
        "planEviction",
        ("MEM-CAP.2",),
        "the eviction list in another order",
        _evict_reversed_answer,
    ),
    _v(
        "eng-mint-supersedes-empty-kept",
        "mintRecord",
        ("MEM-RECORD.4", "MEM-RECORD.5"),
        'supersedes "" stored as ""; no keywords given: none stored',
        _mint_supersedes_kept,
    ),
    _v(
        "eng-scope-js-blank",
        "deriveScopeKey",
        ("MEM-SCOPE.2",),
        "blank judged by JavaScript's trim",
        _derive_js_blank,
    ),
    _v(
        "eng-request-blank-dropped",
        "requestScopeKeys",
        ("MEM-SCOPE.3",),
        "a whitespace-only optional input is no input",
        _request_blank_dropped,
    ),
    _v(
        "eng-redaction-other-marker",
        "redactSecrets",
        ("MEM-REFLECT.6",),
        "another redaction marker",
        _redact_other_marker,
    ),
    _v(
        "eng-asof-tombstones-omitted",
        "listAsOf",
        ("LED-ASOF.2", "LED-ASOF.3"),
        "tombstones left out, another order",
        _as_of_no_tombstones,
    ),
    _v(
        "eng-packet-ties-first-written",
        "buildPacket",
        ("LED-PACKET.3",),
        "full ties: the record written first first",
        _packet_ties_first_written,
    ),
    _v(
        "eng-credential-strict-only",
        "credentialVerdict",
        ("LED-CRED.4",),
        "only the strict detector forms refuse",
        _cred_strict_only,
    ),
    _v(
        "eng-reflection-strict-fence",
        "parseReflection",
        ("MEM-REFLECT.7",),
        "only the canonical ```json fence is unwrapped",
        _fence_strict,
    ),
    _m(
        "eng-score-tau-one-day",
        "scoreParameters",
        ("MEM-SCORE.9",),
        "a recency time constant of one day",
        _tau_one_day,
    ),
    _m(
        "eng-cap-truncates-fraction",
        "resolveScopeCap",
        ("MEM-CAP.5",),
        "a fractional cap cut to its integer part (parseInt) instead of the default",
        _cap_truncates,
    ),
    _m(
        "eng-route-private-to-repo",
        "routeCandidate",
        ("MEM-ROUTE.5",),
        "an org write from a private or unstamped origin narrowed to the repo scope",
        _route_private_to_repo,
    ),
    _m(
        "eng-reflection-input-head-cap",
        "buildReflectionInput",
        ("MEM-REFLECT.5",),
        "a long transcript keeps its first 24 000 characters, not its end",
        _input_head_cap,
    ),
    _m(
        "eng-command-scope-word-only-first",
        "parseMemoryCommand",
        ("MEM-CMD.2",),
        "a bare scope word is consumed only right after list, not after an option",
        _command_scope_only_first,
    ),
    _m(
        "eng-forget-channel-open",
        "forgetGate",
        ("MEM-CMD.7",),
        "a channel record may be forgotten without an admin",
        _forget_channel_open,
    ),
    _m(
        "eng-listing-repo-falls-to-org",
        "listingScopeKeys",
        ("MEM-CMD.4",),
        "memory list repo without a repo lists the org scope instead of saying so",
        _listing_repo_falls_to_org,
    ),
    _m(
        "eng-recency-tau-one-day",
        "recencyScore",
        ("MEM-SCORE.3", "MEM-SCORE.9"),
        "recency decays with a time constant of one day",
        _recency_tau(1),
    ),
    _v(
        "eng-recency-tau-six-days",
        "recencyScore",
        ("MEM-SCORE.3", "MEM-SCORE.9", "MEM-SCORE.10"),
        "recency decays with a time constant of six days: about a week",
        _recency_tau(6),
    ),
    _v(
        "eng-rank-tau-six-days",
        "rankRecords",
        ("MEM-SCORE.5", "MEM-SCORE.9", "MEM-SCORE.10"),
        "ranks with a recency time constant of six days: about a week",
        _rank_tau_six_days,
    ),
    _v(
        "eng-score-tau-six-days",
        "scoreParameters",
        ("MEM-SCORE.9", "MEM-SCORE.10"),
        "tau of six days: about a week, not the reference's seven",
        _tau_six_days,
    ),
    _v(
        "eng-cap-warns-unset",
        "resolveScopeCap",
        ("MEM-CAP.5", "MEM-CAP.6"),
        "warns of an unset cap too, in its own words; a string of digits is its number",
        _cap_warns_unset,
    ),
    _v(
        "eng-reflection-input-other-layout",
        "buildReflectionInput",
        ("MEM-REFLECT.5", "MEM-REFLECT.15"),
        "its own layout, the transcript cut to its last 24 576 code points",
        _input_other_layout,
    ),
)


def _open_entries() -> tuple[EngineEntry, ...]:
    """The variants of :mod:`conformance.binding.open_variants`: one per kind of open point the
    seed leaves, and one engine taking all of them at once."""
    out = []
    for name, clause, summary, patches in OPEN_VARIANTS:
        (first, impl), *rest = patches.items()
        out.append(EngineEntry(name, "variant", first, (clause,), summary, impl, tuple(rest)))
    (first, impl), *rest = ALL_TOGETHER.items()
    clauses = tuple(dict.fromkeys(clause for _, clause, _, _ in OPEN_VARIANTS))
    out.append(
        EngineEntry(
            "eng-every-open-point",
            "variant",
            first,
            clauses,
            "every open point above taken at once",
            impl,
            tuple(rest),
        )
    )
    return tuple(out)


ENTRIES_LIST = ENTRIES_LIST + _open_entries()
ENTRIES: dict[str, EngineEntry] = {e.name: e for e in ENTRIES_LIST}
