"""The one judge of the Memory Worker's answers: every allowed answer, as pure functions.

Where the seed and CLARIFICATIONS leave a store a choice, these functions accept every choice
the spec clause lists and nothing else.  They are the only place the rules live: the reference
wire model (``wire.Allowed``) and the conformance oracle (``conformance.oracle.memory``) both
ask them; the oracle only maps the target's ids and times onto the model's first.

* ``retrieval_problem`` -- a ``/retrieve`` answer (MEM-SCORE.4, MEM-SCORE.5, MEM-STORE.2,
  MEM-STORE.5, MEM-STORE.6): ties in any order and any tied survivors at the limit, both
  prefilter freedoms (the 24-longest-token trim applied or not), misses caused by a full-text
  tokenizer that glues ASCII tokens to adjacent non-ASCII characters, and bm25's choice of
  candidates when more records match than the candidate cap.
* ``listing_problem`` -- a ``/list`` answer (MEM-STORE.7, MEM-STORE.5, MEM-WIRE.14).
* ``eviction_picks`` / ``eviction_allowed`` -- which records an over-cap write may evict
  (MEM-CAP.1, MEM-CAP.2).
* ``record_problems`` -- one record object against the model record it shows (MEM-RECORD.1,
  MEM-RECORD.4, MEM-RECORD.5, MEM-STORE.3, MEM-WIRE.16), ids, ``supersedes`` and time values
  excepted (those are the caller's id and time maps).

Each returns ``None`` / ``[]`` for an allowed answer, else ``Problem``s naming clause ids.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from reference.memory.engine import candidate_cap, eviction_key, fts_match_tokens
from reference.memory.records import ACTIVE, MemoryRecord
from reference.memory.scoring import keyword_match, score_record, tokenize


@dataclass(frozen=True)
class Problem:
    """Why an answer is not allowed: the clauses it breaks and a sentence for a person."""

    clauses: tuple[str, ...]
    reason: str


# --------------------------------------------------------------------------- the prefilter

_ASCII_WORD: Final = re.compile(r"[A-Za-z0-9]+")


@lru_cache(maxsize=2048)
def robust_tokens(text: str) -> frozenset[str]:
    """The tokens of ``text`` every full-text tokenizer sees as words (MEM-STORE.5).

    A run of ASCII letters and digits counts only when neither neighbour is a non-ASCII
    character: ``ascii`` and ``unicode61`` tokenizers both keep such a run as one token, but
    glue a run touching a non-ASCII letter, mark or symbol into a longer word (``café`` is
    ``cafe`` or ``café``, never ``caf``).  The engine's own tokens (MEM-SCORE.2) are a
    superset; the difference is what a prefilter may miss.  Memoized per text (pure).
    """
    out: set[str] = set()
    for m in _ASCII_WORD.finditer(text):
        before = text[m.start() - 1] if m.start() > 0 else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if (before and not before.isascii()) or (after and not after.isascii()):
            continue
        out.add(m.group().lower())
    return frozenset(out)


@lru_cache(maxsize=2048)
def folded_tokens(text: str) -> frozenset[str]:
    """The words a case- and diacritic-folding full-text tokenizer sees (MEM-STORE.7).

    Compatibility-decomposed, combining marks dropped, lower-cased, split at every character
    that is not a letter or digit of any script -- what FTS5's ``unicode61`` tokenizer indexes
    (``résumé`` is ``resume``).  Memoized per text (pure).
    """
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()
    return frozenset(t for t in re.split(r"[\W_]+", stripped) if t)


def prefilter_must_pass(record: MemoryRecord, query: str) -> bool:
    """Whether every conforming prefilter hands ``record`` on for ``query`` (MEM-STORE.5).

    True when one of the query tokens the prefilter must use -- all distinct tokens with 24 or
    fewer, else the 24 longest (``fts_match_tokens``) -- is a robust token of the record's
    text or of one of its keywords.  A matching record for which this is false may be missing
    (a dropped shorter token, or a token glued to non-ASCII text); a store that trims nothing
    or tokenizes like the engine hands it on too, and both are fine.
    """
    kept = set(fts_match_tokens(query))
    if not kept:
        return False
    if kept & robust_tokens(record.text):
        return True
    return any(kept & robust_tokens(k) for k in record.keywords)


def _term_views(record: MemoryRecord) -> tuple[list[str], ...] | None:
    """The token lists a full-text index may hold for ``record``, one per way of indexing it:
    the text alone; the text and its keywords; the text and its distinct tokens (the keywords
    a store derives).  ``None`` when text or a keyword is not ASCII (a tokenizer may then see
    other words than the engine)."""
    if not record.text.isascii() or not all(k.isascii() for k in record.keywords):
        return None
    text = tokenize(record.text)
    return (
        text,
        text + [t for k in record.keywords for t in tokenize(k)],
        text + list(dict.fromkeys(text)),
    )


#: Per view of a record: its length and how often it holds each kept query token.
TermCounts = tuple[tuple[int, tuple[int, ...]], ...]


def _term_counts(views: tuple[list[str], ...], kept: Sequence[str]) -> TermCounts:
    """``views`` reduced to what bm25 orders them by for the query tokens ``kept``."""
    return tuple((len(v), tuple(v.count(t) for t in kept)) for v in views)


def _more_relevant(r: TermCounts, s: TermCounts) -> bool:
    """Whether every bm25 ranks ``r`` strictly above ``s`` for the kept query tokens: in
    every view ``r`` is no longer, holds each kept token at least as often, and holds some
    kept token ``s`` lacks.  (A bm25 term's weight grows with its count, shrinks with the
    document's length, and is positive: FTS5 clamps the IDF above 0.)"""
    for (r_len, r_counts), (s_len, s_counts) in zip(r, s, strict=True):
        if r_len > s_len:
            return False
        extra = False
        for rc, sc in zip(r_counts, s_counts, strict=True):
            if rc < sc:
                return False
            extra = extra or (rc > 0 and sc == 0)
        if not extra:
            return False
    return True


def relevance_forced(
    matching: Sequence[MemoryRecord], query: str, cap_n: int
) -> list[MemoryRecord]:
    """The matching records every relevance-ordered prefilter must hand the engine when more
    than ``cap_n`` match (MEM-STORE.6: "ordered by bm25 ... NOT recency, which starved
    relevant-but-old records"): a full-text hit that fewer than ``cap_n`` other matching
    records can outrank, because it is strictly more relevant than all the rest
    (``_more_relevant``): it beats at least ``len(matching) - cap_n`` of them.  Records with
    non-ASCII text are never forced."""
    kept = sorted(frozenset(fts_match_tokens(query)))
    counts: dict[str, TermCounts | None] = {}
    for r in matching:
        views = _term_views(r)
        counts[r.id] = None if views is None else _term_counts(views, kept)
    # records with the same counts are ranked alike: each such group is compared once
    alike = Counter(c for c in counts.values() if c is not None)
    must_beat = len(matching) - cap_n
    forced = {
        rc
        for rc in alike
        if sum(n for sc, n in alike.items() if _more_relevant(rc, sc)) >= must_beat
    }
    return [r for r in matching if counts[r.id] in forced and prefilter_must_pass(r, query)]


# --------------------------------------------------------------------------- retrieval


def rank_allowed(
    records: Sequence[MemoryRecord], query: str, limit: int, now: int
) -> list[frozenset[str]]:
    """The tie groups of an un-prefiltered ranked retrieval, best first (MEM-SCORE.5).

    The ids of equal-score matching records, stopping at the group that reaches ``limit``.
    """
    if limit <= 0 or not tokenize(query):
        return []
    scored = sorted(
        ((score_record(query, r, now), r.id) for r in records if keyword_match(query, r) > 0),
        key=lambda s: -s[0],
    )
    groups: list[frozenset[str]] = []
    taken = 0
    for _, grp in itertools.groupby(scored, key=lambda s: s[0]):
        if taken >= limit:
            break
        ids = frozenset(i for _, i in grp)
        groups.append(ids)
        taken += len(ids)
    return groups


def _order_problem(
    query: str, above: MemoryRecord, below: MemoryRecord, where: str, distinct: bool = False
) -> Problem:
    ka = keyword_match(query, above, distinct=distinct)
    kb = keyword_match(query, below, distinct=distinct)
    if ka != kb:
        return Problem(
            ("MEM-SCORE.1", "MEM-SCORE.2", "MEM-SCORE.5"),
            f"{below.id} (keyword match {kb:.3f}) {where} {above.id} (keyword match {ka:.3f});"
            " keyword match dominates the score",
        )
    return Problem(
        ("MEM-SCORE.1", "MEM-SCORE.3", "MEM-SCORE.5"),
        f"{below.id} {where} {above.id}: equal keyword match, but {below.id} was touched later"
        " (more recent last use or creation ranks first)",
    )


def retrieval_problem(
    active: Sequence[MemoryRecord],
    query: str,
    limit: int,
    now: int,
    answer: Sequence[str],
    *,
    prefiltered: bool = True,
    distinct: bool = False,
) -> Problem | None:
    """``None`` when the ids ``answer`` are an allowed ``/retrieve`` answer, else why not.

    ``active`` is the scope's active records before the retrieve, scored at ``now``.  Allowed
    answers are exactly those a store can give by (1) prefiltering a candidate set ``P`` with
    *must* ⊆ ``P`` ⊆ *matching* (MEM-STORE.5: *must* = ``prefilter_must_pass``), (2) when
    ``P`` has more than ``candidate_cap(limit)`` = max(50, 5·limit) records, handing the
    engine any ``candidate_cap(limit)`` of them -- bm25's choice (MEM-STORE.6), and (3)
    ranking those with the engine, ties in any order and cut anywhere (MEM-SCORE.5).  So what
    still holds whatever the store chose: every returned record matches the full query
    (MEM-SCORE.4), no record twice, at most ``limit`` records, non-increasing score; and
    either fewer than ``limit`` come back and every *must* record is among them, or ``limit``
    come back and (no *must* record scores above the last one returned and *must* ∪ answer
    fits the cap) or (more than the cap match, and at least cap − limit matching records not
    returned score no higher than the last one returned).  ``prefiltered=False`` judges a
    store without a prefilter (the in-process store): every matching record reaches the
    engine, so only the tie freedom remains.  ``distinct``: scored by the other reading of
    keyword match, a repeated query token counting once (MEM-SCORE.7; see
    ``scoring.keyword_match``).
    """
    by_id = {r.id: r for r in active}
    if not tokenize(query):
        if answer:
            return Problem(
                ("MEM-SCORE.4", "MEM-WIRE.11"),
                f"a query without tokens returned {len(answer)} record(s)",
            )
        return None
    problem = _returned_records_problem(by_id, query, limit, answer)
    if problem is not None:
        return problem
    score = {r.id: score_record(query, r, now, distinct=distinct) for r in active}
    for i in range(1, len(answer)):
        if score[answer[i]] > score[answer[i - 1]]:
            return _order_problem(
                query,
                by_id[answer[i - 1]],
                by_id[answer[i]],
                f"is at position {i}, below",
                distinct,
            )
    return _left_out_problem(active, by_id, score, query, limit, answer, prefiltered, distinct)


def _returned_records_problem(
    by_id: dict[str, MemoryRecord], query: str, limit: int, answer: Sequence[str]
) -> Problem | None:
    """``None`` when every id of ``answer`` is an active record (MEM-STORE.4) matching the
    query by whole tokens (MEM-SCORE.4), none twice (MEM-WIRE.16) and at most ``limit`` of
    them (MEM-SCORE.5), else the first of these that fails."""
    for i, rid in enumerate(answer):
        rec = by_id.get(rid)
        if rec is None:
            return Problem(
                ("MEM-STORE.4", "MEM-STORE.2"), f"position {i}: {rid} is not an active record"
            )
        if keyword_match(query, rec) <= 0:
            return Problem(
                ("MEM-SCORE.4", "MEM-SCORE.2"),
                f"position {i}: {rid} does not match the query {query!r} by whole tokens",
            )
    if len(set(answer)) != len(answer):
        return Problem(("MEM-WIRE.16",), "a record appears twice")
    if len(answer) > limit:
        return Problem(
            ("MEM-SCORE.5", "MEM-WIRE.11"), f"{len(answer)} records over the limit {limit}"
        )
    return None


def _left_out_problem(
    active: Sequence[MemoryRecord],
    by_id: dict[str, MemoryRecord],
    score: dict[str, float],
    query: str,
    limit: int,
    answer: Sequence[str],
    prefiltered: bool,
    distinct: bool = False,
) -> Problem | None:
    """``None`` when the matching records an ordered ``answer`` leaves out can be explained by
    the prefilter (MEM-STORE.5), bm25's choice of candidates (MEM-STORE.6) and the cut at
    ``limit`` (MEM-SCORE.5), else why not; see :func:`retrieval_problem`."""
    matching = [r for r in active if keyword_match(query, r) > 0]
    must = [r for r in matching if not prefiltered or prefilter_must_pass(r, query)]
    chosen = set(answer)
    left_out = [r for r in must if r.id not in chosen]
    if len(answer) < limit:
        if left_out:
            return Problem(
                ("MEM-SCORE.5", "MEM-STORE.2", "MEM-STORE.5"),
                f"returned {len(answer)} record(s) with limit {limit}, but {left_out[0].id}"
                " matches the query and every prefilter must hand it to the engine",
            )
        return None
    if not answer:  # limit 0
        return None
    cap_n = candidate_cap(limit)
    worst = score[answer[-1]]
    if prefiltered and len(matching) > cap_n:
        for r in relevance_forced(matching, query, cap_n):
            if r.id not in chosen and score[r.id] > worst:
                return Problem(
                    ("MEM-STORE.6",),
                    f"{len(matching)} records match; {r.id} is a more relevant full-text hit"
                    f" than all but fewer than {cap_n} of them, so any relevance order (bm25)"
                    " hands it to the engine, and it outscores the last record returned:"
                    " candidates chosen by recency, not relevance",
                )
    better = [r for r in left_out if score[r.id] > worst]
    if not better and (not prefiltered or len(chosen | {r.id for r in must}) <= cap_n):
        return None
    if prefiltered and len(matching) > cap_n:
        harmless = sum(1 for r in matching if r.id not in chosen and score[r.id] <= worst)
        if harmless >= cap_n - len(answer):
            return None
        return Problem(
            ("MEM-STORE.6", "MEM-SCORE.5"),
            f"{len(matching)} records match; no choice of {cap_n} candidates explains this"
            " answer: better-scoring records were left out",
        )
    assert better, "a fitting answer was accepted above"
    return _order_problem(query, by_id[answer[-1]], better[0], "was left out while", distinct)


def is_allowed_ranking(
    records: Sequence[MemoryRecord],
    query: str,
    limit: int,
    now: int,
    answer_ids: Sequence[str],
) -> bool:
    """True iff ``answer_ids`` is an allowed answer of a store without a prefilter (MEM-SCORE.5)."""
    return retrieval_problem(records, query, limit, now, answer_ids, prefiltered=False) is None


# --------------------------------------------------------------------------- listing


def listing_problem(
    active: Sequence[MemoryRecord], query: str | None, limit: int, answer: Sequence[str]
) -> Problem | None:
    """``None`` when the ids ``answer`` are an allowed ``/list`` answer (MEM-STORE.7, MEM-WIRE.14).

    Newest first (insertion order reversed), only records the filter matches (MEM-SCORE.4's
    whole-token test over the full query), at most ``limit``, the limit applied after the
    filter, nothing skipped -- except that with a query a matching record that a prefilter may
    miss (``prefilter_must_pass`` false: MEM-STORE.5, "/list shares the same builder") may be
    skipped, and a record a case- and diacritic-folding full-text index hits on a kept query
    token (``folded_tokens``: the seed's Worker filters /list by its FTS5 index alone, so
    ``resume`` lists ``résumé``) may be listed.  Without a query the answer is exact.
    """
    newest = list(reversed(active))
    if query is None:
        matching = newest
    elif not tokenize(query):
        matching = []
    else:
        kept = set(fts_match_tokens(query))
        matching = [
            r
            for r in newest
            if keyword_match(query, r) > 0
            or any(kept & folded_tokens(t) for t in (r.text, *r.keywords))
        ]
    order = {r.id: i for i, r in enumerate(matching)}
    for i, rid in enumerate(answer):
        if rid not in order:
            what = "is not an active record" if query is None else f"does not match {query!r}"
            return Problem(("MEM-STORE.7", "MEM-SCORE.4"), f"position {i}: {rid} {what}")
    if len(set(answer)) != len(answer):
        return Problem(("MEM-WIRE.16",), "a record appears twice")
    if any(order[answer[i]] <= order[answer[i - 1]] for i in range(1, len(answer))):
        return Problem(("MEM-STORE.7", "MEM-WIRE.14"), "records are not newest first")
    if len(answer) > limit:
        return Problem(
            ("MEM-STORE.7", "MEM-WIRE.14"), f"{len(answer)} records over the limit {limit}"
        )
    upto = order[answer[-1]] if len(answer) == limit and answer else len(matching) - 1
    chosen = set(answer)
    for r in matching[: upto + 1]:
        if r.id in chosen or (query is not None and not prefilter_must_pass(r, query)):
            continue  # listed, or a record a prefilter may miss (or only a folding one hits)
        return Problem(
            ("MEM-STORE.7", "MEM-WIRE.14"),
            f"{r.id} is missing: {len(matching)} active record(s) match, newest first,"
            f" limit {limit}",
        )
    return None


# --------------------------------------------------------------------------- eviction


def eviction_picks(active: Sequence[MemoryRecord], k: int) -> list[frozenset[str]]:
    """Every set of ``k`` active records an over-cap write may evict (MEM-CAP.2).

    All records with a smaller (last-use-or-creation, creation) key than the ``k``-th go;
    among records equal to it on both -- such as the never-used records of one batch -- any
    choice of the rest is allowed.
    """
    live = sorted((r for r in active if r.status == ACTIVE), key=eviction_key)
    if k <= 0:
        return [frozenset()]
    if k > len(live):
        return []
    boundary = eviction_key(live[k - 1])
    must = [r.id for r in live if eviction_key(r) < boundary]
    tied = [r.id for r in live if eviction_key(r) == boundary]
    return [
        frozenset(must) | frozenset(combo) for combo in itertools.combinations(tied, k - len(must))
    ]


def eviction_allowed(active: Sequence[MemoryRecord], cap: int, evicted_ids: Sequence[str]) -> bool:
    """True iff evicting exactly ``evicted_ids`` is allowed (MEM-CAP.1, MEM-CAP.2).

    Exactly ``max(0, active - cap)`` distinct active records, and none of them with a larger
    eviction key than a kept one (``eviction_picks``).
    """
    live = [r for r in active if r.status == ACTIVE]
    chosen = frozenset(evicted_ids)
    if len(chosen) != len(evicted_ids):
        return False
    excess = max(0, len(live) - max(cap, 0))
    return chosen in eviction_picks(live, excess)


# --------------------------------------------------------------------------- one record

_ABSENT: Final = object()


def keywords_problem(
    record: MemoryRecord, keywords: object, *, given: bool | None
) -> Problem | None:
    """Whether wire ``keywords`` may show ``record``'s keywords (MEM-RECORD.4, MEM-RECORD.5).

    Written with keywords (``given`` True): exactly those, in order.  Written without
    (``given`` False): any array of strings whose tokens are all tokens of the text -- the
    text's tokens (derived), ``[]`` (as given), or any other such list; a keyword adding a
    token the text lacks would change matching, which the choice must not.  ``given`` None
    (not known): either reading, when the model's keywords are the text's derived tokens.
    """
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        return Problem(("MEM-WIRE.16", "MEM-RECORD.1"), f"keywords is {keywords!r}, not strings")
    if keywords == list(record.keywords):
        return None
    if given is True or (
        given is None and record.keywords != tuple(dict.fromkeys(tokenize(record.text)))
    ):
        return Problem(
            ("MEM-RECORD.4", "MEM-RECORD.3"),
            f"keywords are {keywords!r}; the record was written with {list(record.keywords)!r}",
        )
    text_tokens = set(tokenize(record.text))
    extra = {t for k in keywords for t in tokenize(k)} - text_tokens
    if extra:
        return Problem(
            ("MEM-RECORD.5", "MEM-SCORE.2"),
            f"keywords {keywords!r} of a record written without keywords add tokens"
            f" {sorted(extra)} its text does not have, so matching would depend on them",
        )
    return None


def _field(item: Mapping[str, object], name: str) -> object:
    return item.get(name, _ABSENT)


def _js_int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def record_problems(
    record: MemoryRecord,
    item: Mapping[str, object],
    *,
    keywords_given: bool | None,
    bumped: bool,
) -> list[Problem]:
    """Differences between wire record ``item`` and the model ``record`` it would show.

    ``content_problems`` and then ``usage_problems``.
    """
    out = content_problems(record, item, keywords_given=keywords_given)
    out.extend(usage_problems(record, item, bumped=bumped))
    return out


def content_problems(
    record: MemoryRecord, item: Mapping[str, object], *, keywords_given: bool | None
) -> list[Problem]:
    """Differences in content between wire record ``item`` and the model ``record``.

    Compared exactly: ``scopeKey``, ``kind``, ``text``, ``sourceThreadKey``, ``sourceRunId``
    and ``confidence`` (absent when the model has none), ``status`` (``active``: only active
    records are ever returned); ``keywords`` per ``keywords_problem``; usage per
    ``bumped`` -- True: after this retrieval's bump (``useCount`` + 1, ``lastUsedAt``
    present), False: as the model holds it (MEM-STORE.3).  A record never used may show no
    ``lastUsedAt`` or one equal to its own ``createdAt`` (MEM-RECORD.4: the recency and
    eviction reference ``lastUsedAt ?? createdAt`` is the same either way).  Not compared:
    ``id``, ``supersedes`` and the values of ``createdAt``/``lastUsedAt`` beyond that --
    target ids and the store's clock are the caller's to map (MEM-STORE.9, MEM-STORE.11).
    """
    out: list[Problem] = []
    exact: tuple[tuple[str, object, tuple[str, ...]], ...] = (
        ("scopeKey", record.scope_key, ("MEM-SCOPE.5", "MEM-RECORD.1")),
        ("kind", record.kind, ("MEM-RECORD.4", "MEM-RECORD.3")),
        ("text", record.text, ("MEM-RECORD.4", "MEM-RECORD.3")),
        ("sourceThreadKey", record.source_thread_key, ("MEM-RECORD.4", "MEM-RECORD.3")),
        (
            "sourceRunId",
            _ABSENT if record.source_run_id is None else record.source_run_id,
            ("MEM-RECORD.4", "MEM-RECORD.1"),
        ),
        ("status", ACTIVE, ("MEM-RECORD.2", "MEM-STORE.4")),
    )
    for name, want, clauses in exact:
        got = _field(item, name)
        if got is _ABSENT and want is not _ABSENT:
            out.append(Problem(clauses, f"{name} is absent; the model has {want!r}"))
        elif want is _ABSENT and got is not _ABSENT:
            out.append(Problem(clauses, f"{name} is {got!r}; the model has no {name} (absent)"))
        elif got is not _ABSENT and (type(got) is not type(want) or got != want):
            out.append(Problem(clauses, f"{name} is {got!r}; the model has {want!r}"))
    conf = _field(item, "confidence")
    if record.confidence is None:
        if conf is not _ABSENT:
            out.append(
                Problem(
                    ("MEM-RECORD.4", "MEM-RECORD.1"), f"confidence is {conf!r}; the model has none"
                )
            )
    elif (
        conf is _ABSENT
        or isinstance(conf, bool)
        or not isinstance(conf, int | float)
        or float(conf) != record.confidence
    ):
        out.append(
            Problem(
                ("MEM-RECORD.4",), f"confidence is {conf!r}; the model has {record.confidence!r}"
            )
        )
    kw = keywords_problem(record, item.get("keywords"), given=keywords_given)
    if kw is not None:
        out.append(kw)
    return out


def usage_problems(
    record: MemoryRecord, item: Mapping[str, object], *, bumped: bool, route: str = "/retrieve"
) -> list[Problem]:
    """``useCount`` and the presence of ``lastUsedAt`` (MEM-STORE.3, MEM-RECORD.4).

    See ``record_problems``; ``route`` only picks the clauses named.
    """
    out: list[Problem] = []
    want_uses = record.use_count + 1 if bumped else record.use_count
    uses = _js_int(_field(item, "useCount"))
    if uses != want_uses:
        clauses: tuple[str, ...] = ("MEM-STORE.3", "MEM-WRITE.1")
        if route == "/list":
            clauses = ("MEM-STORE.3", "MEM-STORE.7", "MEM-WRITE.1")
        out.append(
            Problem(clauses, f"useCount is {item.get('useCount')!r}; the model has {want_uses}")
        )
    last = _field(item, "lastUsedAt")
    if bumped or record.last_used_at is not None:
        if last is _ABSENT:
            out.append(Problem(("MEM-STORE.3",), "lastUsedAt is absent; the record was retrieved"))
    elif last is not _ABSENT and (
        _js_int(last) is None or _js_int(last) != _js_int(_field(item, "createdAt"))
    ):
        out.append(
            Problem(
                ("MEM-STORE.3", "MEM-RECORD.4"),
                f"lastUsedAt is {last!r}; the record was never retrieved (absent, or equal to"
                " its createdAt)",
            )
        )
    return out
