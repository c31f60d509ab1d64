"""Writing (``plan_write`` and ``mint_record`` of ``reference/memory/engine.py``): planWrite,
mintRecord.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import candidate, memory_record_json, memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import NOW, memory_list, rec, texts, words
from conformance.binding.judge import Judged, ok
from reference.memory.engine import Dedup, WritePlan, mint_record, plan_write
from reference.memory.records import ACTIVE


def _plan_json(plan: WritePlan) -> JSON:
    if isinstance(plan, Dedup):
        return {"action": "dedup", "id": plan.target_id}
    return {"action": "insert", "supersedes": plan.supersede_id}


def _plan_write(a: Args) -> JSON:
    return _plan_json(plan_write(memory_records(a["active"]), candidate(a["candidate"])))


def _mint(a: Args) -> JSON:
    rec = mint_record(candidate(a["candidate"]), a["scopeKey"], a["id"], int(a["now"]))
    return memory_record_json(rec)


def _mint_judge(a: Args) -> Judged:
    """``supersedes: ""`` is stored absent or as ``""`` (open point); a candidate without
    keywords may be stored with any keywords whose tokens are the text's (MEM-RECORD.5)."""
    ref = _mint(a)
    allowed = [ok(ref)]
    notes = []
    if a["candidate"].get("supersedes") == "":
        allowed.append(ok({**ref, "supersedes": ""}))
        notes.append('supersedes "" stored absent or as ""')
    if a["candidate"].get("keywords") is None:
        return Judged(allowed, {"name": "mint_keywords"}, notes)
    return Judged(allowed, None, notes)


def _cand(text: str, **kw: JSON) -> JSON:
    return {"kind": "fact", "text": text, "sourceThreadKey": "t:9", **kw}


def _plan_boundaries() -> list[tuple[str, Args]]:
    r1 = rec("mem:org:acme:1", "Deploys go out on Fridays")
    r2 = rec("mem:org:acme:2", "db is postgres")
    dead = rec("mem:org:acme:3", "old news", status="superseded")
    return [
        ("empty scope inserts", {"active": [], "candidate": _cand("x")}),
        (
            "dedup ignores case and whitespace runs",
            {"active": [r1], "candidate": _cand("  deploys   GO out on\tfridays ")},
        ),
        (
            "punctuation is kept: no dedup",
            {"active": [r1], "candidate": _cand("Deploys go out on Fridays.")},
        ),
        (
            "supersede of an active record inserts the correction",
            {"active": [r1, r2], "candidate": _cand("db is mysql", supersedes="mem:org:acme:2")},
        ),
        (
            "collision guard: restating another record's text still inserts",
            {
                "active": [r1, r2],
                "candidate": _cand("Deploys go out on Fridays", supersedes="mem:org:acme:2"),
            },
        ),
        (
            "restating the target dedups onto it",
            {"active": [r1, r2], "candidate": _cand("DB IS POSTGRES", supersedes="mem:org:acme:2")},
        ),
        (
            "unresolved supersede inserts without dedup",
            {"active": [r1], "candidate": _cand("Deploys go out on Fridays", supersedes="nope")},
        ),
        (
            "dead target is unresolved",
            {"active": [r1, dead], "candidate": _cand("new", supersedes="mem:org:acme:3")},
        ),
        (
            'supersedes "" is no supersede: dedup applies',
            {"active": [r1], "candidate": _cand("deploys go out on fridays", supersedes="")},
        ),
        ("a dead record is no dedup target", {"active": [dead], "candidate": _cand("old news")}),
        (
            "earliest of two twins",
            {
                "active": [rec("mem:org:acme:7", "twin"), rec("mem:org:acme:8", "TWIN")],
                "candidate": _cand("twin"),
            },
        ),
        (
            "JS whitespace U+FEFF collapses in the key",
            {"active": [rec(text="a b")], "candidate": _cand("a\ufeffb")},
        ),
    ]


def _mint_boundaries() -> list[tuple[str, Args]]:
    base = {"scopeKey": "org:acme", "id": "mem:org:acme:1", "now": NOW}
    return [
        ("fresh record, given keywords", {**base, "candidate": _cand("x y", keywords=["k"])}),
        ("no keywords: any from the text's tokens", {**base, "candidate": _cand("Deploy Fri")}),
        (
            "provenance and confidence verbatim",
            {
                **base,
                "candidate": _cand(" raw\ttext ", keywords=[], sourceRunId="r1", confidence=0.75),
            },
        ),
        (
            'supersedes "" stored absent or "" (open point)',
            {**base, "candidate": _cand("x", keywords=[], supersedes="")},
        ),
        (
            "supersedes kept",
            {**base, "candidate": _cand("x", keywords=[], supersedes="mem:org:acme:0")},
        ),
        ("summary kind", {**base, "candidate": {**_cand("s", keywords=[]), "kind": "summary"}}),
    ]


_CANDIDATES = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(("fact", "summary")),
        "text": texts,
        "sourceThreadKey": st.just("t:1"),
    },
    optional={
        "keywords": st.lists(words, max_size=3),
        "supersedes": st.sampled_from(("", "mem:org:acme:1", "mem:org:acme:2", "nope")),
        "confidence": st.sampled_from((0.6, 0.75, 1.0)),
    },
)


def _restated(text: str, how: int) -> str:
    """``text`` said again: the same, upper-cased, or with its spaces doubled and padded."""
    return [text, text.upper(), "  " + text.replace(" ", "  \t") + " "][how]


def _plan_write_args() -> st.SearchStrategy[Args]:
    """Active records and a candidate that is often one of them restated (MEM-WRITE.2)."""

    @st.composite
    def build(draw: st.DrawFn) -> Args:
        restate: bool = draw(st.booleans())
        active: list[JSON] = draw(memory_list(4))
        cand: dict[str, JSON] = dict(draw(_CANDIDATES))
        if active and restate:
            target = draw(st.sampled_from(active))
            cand["text"] = _restated(target["text"], draw(st.sampled_from((0, 1, 1, 2, 2))))
            if draw(st.booleans()):
                cand["supersedes"] = draw(st.sampled_from(("", target["id"])))
        return {"active": active, "candidate": cand}

    return build()


def _plan_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """The rule the candidate's pointer puts in charge: none -- dedup on the normalized text
    (MEM-WRITE.2); ``""`` -- no supersede (MEM-WRITE.1), or both where one answer cannot tell
    them apart; an active target -- supersede
    (MEM-WRITE.3) or, for a dedup onto another record, the collision guard (MEM-WRITE.5);
    any other -- unresolved (MEM-WRITE.4)."""
    target = a["candidate"].get("supersedes")
    value = got.get("ok") if isinstance(got, dict) else None
    if target is None:
        return ("MEM-WRITE.2",)
    if target == "":
        if value != {"action": "insert", "supersedes": None}:
            return ("MEM-WRITE.2",)  # it deduped, onto the wrong record
        # an insert: "" read as a pointer (MEM-WRITE.1) -- or, unless a record holds the very
        # same text, the texts compared without normalizing (MEM-WRITE.2)
        text = a["candidate"].get("text")
        if any(r.text == text for r in memory_records(a["active"]) if r.status == ACTIVE):
            return ("MEM-WRITE.1",)
        return ("MEM-WRITE.1", "MEM-WRITE.2")
    live = {r.id for r in memory_records(a["active"]) if r.status == ACTIVE}
    if target not in live:
        return ("MEM-WRITE.4",)
    if isinstance(value, dict) and value.get("action") == "dedup" and value.get("id") != target:
        return ("MEM-WRITE.5",)
    return ("MEM-WRITE.3",)


def _mint_blame(a: Args, got: JSON, ref: JSON) -> tuple[str, ...]:
    """Only the keywords differ: MEM-RECORD.5; anything else: MEM-RECORD.4."""
    value, want = (o.get("ok") if isinstance(o, dict) else None for o in (got, ref))
    if isinstance(value, dict) and isinstance(want, dict):
        rest = {k: v for k, v in value.items() if k != "keywords"}
        if rest == {k: v for k, v in want.items() if k != "keywords"}:
            return ("MEM-RECORD.5",)
    return ("MEM-RECORD.4",)


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "planWrite",
        MEMORY,
        ("MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.3", "MEM-WRITE.4", "MEM-WRITE.5"),
        "dedup, supersede or insert one candidate",
        _plan_write,
        _plan_write_args(),
        _plan_boundaries,
        blame=_plan_blame,
    ),
    fn(
        "mintRecord",
        MEMORY,
        ("MEM-RECORD.4", "MEM-RECORD.5"),
        "the stored form of a candidate",
        _mint,
        st.fixed_dictionaries(
            {
                "candidate": _CANDIDATES,
                "scopeKey": st.just("org:acme"),
                "id": st.just("mem:org:acme:1"),
                "now": st.just(NOW),
            }
        ),
        _mint_boundaries,
        _mint_judge,
        blame=_mint_blame,
    ),
)
