"""The Memory Worker state machine: random valid and invalid requests, model and target in step.

The alphabet is chosen so that the interesting rules fire often in short runs:

* texts are one to three words from a small vocabulary, with case, whitespace and punctuation
  variants — so dedup (MEM-WRITE.1/2), the collision guard (MEM-WRITE.5) and whole token
  matching (MEM-SCORE.2) are hit constantly;
* the vocabulary mixes in non-ASCII words — accented Latin precomposed and combining, ß,
  Cyrillic, Greek, CJK, emoji, a Kelvin sign that lower-cases to ASCII ``k``, a letter of a
  newer Unicode than the harness's with its lowercase (MEM-WRITE.2) — in texts,
  keywords and queries: the tokenizer is ASCII ``[a-z0-9]+`` after lower-casing, so these are
  separators (or vanish), and a store that tokenizes or prefilters otherwise shows it;
* two scopes (``{scope:a}``, ``{scope:b}``) and ids used across them (MEM-SCOPE.5);
* ``supersedes`` and ``forget`` take ids from a bundle filled by ``/list`` and ``/retrieve``
  answers (the machine never guesses an id), plus empty and unresolvable ids
  (MEM-WRITE.3/4/7, MEM-STORE.8);
* small caps (1–5) so eviction and its ties happen (MEM-CAP.1, MEM-CAP.2, MEM-CAP.3), and a run may
start with
  scope ``a`` already holding a few records (:meth:`MemoryMachine.prefill`) so the cap bites
  at once;
* invalid bodies mixed in (MEM-WIRE.*), among them each bound one past its limit (cap 10001,
  a query of 4001 UTF-16 units — also one of 4000 code points whose last is astral), and valid
  requests exactly at each bound (``AT_THE_BOUNDS``);
* a valid batch whose last candidate is invalid: refused whole (MEM-WIRE.12);
* queries of 25 distinct tokens, one past the prefilter's 24 (MEM-STORE.5);
* twins: two active records with one text, which only the collision guard makes
  (MEM-WRITE.5), then a restatement of that text (the earliest twin is bumped, MEM-WRITE.2) or
  of the superseded one (no dedup target, MEM-WRITE.8).

A rule whose every request needs a capability the target lacks (``list``, ``forget``, ``cap``)
is preconditioned out; case lists are drawn from the cases the target can take.

**Blame the cause.**  After every step that may change a scope, one ``/list`` of that scope
(limit 50) shows what the target now holds, under the clauses of the step that changed it: a
wrong state is caught where it was made, not steps later under an unrelated clause.

Transport probes (auth, methods, paths, bodies that are not JSON, Content-Length fences) are
not rules here: they are one-step cases that need no state, run once each as their own small,
separately reported set (:mod:`conformance.machines.probes`).

Every request goes through :class:`~conformance.drivers.memory.MemoryDriver`, so the oracle's
rules (ties, ids, times) are exactly the scenario runner's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, initialize, multiple, precondition, rule

from conformance.drivers.memory import DEFAULT_CLAUSES, MemoryDriver, step_requires
from conformance.machines import DifferentialMachine, live
from conformance.machines.checks import checks, machine_clauses
from conformance.scenario import Step
from conformance.targets.memory import CAP, FORGET, LIST
from reference.memory.engine import normalize_text

VOCAB = ("deploy", "staging", "alpha", "beta", "gamma", "prod")
#: Words outside ASCII: each is a tokenizer trap (ASCII ``[a-z0-9]+`` after lower-casing).
UNICODE_WORDS = (
    "café",  # precomposed é: token "caf"
    "cafe\u0301",  # e + combining acute: token "cafe"
    "straße",  # ß: tokens "stra", "e"
    "Москва",  # Cyrillic: no token at all
    "αλφα",  # Greek: no token
    "東京",  # CJK: no token
    "deploy🚀staging",  # an emoji between two words: tokens "deploy", "staging"
    "\u212aelvin",  # KELVIN SIGN lower-cases to ASCII k: token "kelvin"
    "\ua7dc",  # a capital of Unicode 16.0: lower-cases to U+019B only on a newer Unicode
    "\u019b",  # its lowercase: one dedup key with it there, two on an older Unicode
)
SCOPES = ("a", "b")

scopes = st.sampled_from(SCOPES)
# ASCII words twice: the shared vocabulary (dedup, matching) stays frequent; shrinking leans
# to the ASCII words (the start of the list).
words = st.lists(st.sampled_from(VOCAB + VOCAB + UNICODE_WORDS), min_size=1, max_size=3)


# The strategies the composite draws below use are built once, here: a strategy built inside a
# draw is built (and validated) again on every draw.  The draws, and so the runs a seed gives,
# are the same either way.
_text_styles = st.sampled_from(["plain", "plain", "upper", "spaces", "punct"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    ws = draw(words)
    style = draw(_text_styles)
    if style == "upper":
        ws = [w.upper() if i == 0 else w for i, w in enumerate(ws)]
    text = " ".join(ws)
    if style == "spaces":
        text = "  " + "   ".join(ws) + " "
    if style == "punct":
        text += "!"
    return text


_plain_queries = st.lists(
    st.sampled_from(
        (*VOCAB, "zeta", "a", "cafe", "kelvin", "CAFÉ", "Straße", "東京", "\u212aelvin", "deploy🚀")
    ),
    min_size=0,
    max_size=3,
).map(" ".join)
# One query in four repeats a word: a repeated query token counts each time (MEM-SCORE.2), so
# "deploy deploy alpha" ranks a deploy record above an alpha one.


def _first_twice(pair: tuple[str, str]) -> str:
    """``"a a b"`` for ``(a, b)`` (a named function: see ``machine.stopped``)."""
    return f"{pair[0]} {pair[0]} {pair[1]}"


_repeating_queries = st.tuples(st.sampled_from(VOCAB), st.sampled_from(VOCAB)).map(_first_twice)
queries = st.one_of(_plain_queries, _plain_queries, _plain_queries, _repeating_queries)
# Ids that can name no record of the scopes the machine writes: another (never written) scope
# of this run, a non-id string, a key of no run at all.  Guessing an id *inside* a written
# scope would assume the target's numbering, which is implementation-defined.
foreign_ids = st.sampled_from(["mem:{scope:z}:1", "nope", "mem:org:elsewhere:1"])

#: Long queries: ``deploy`` then spaces, 3999 (and 3998) UTF-16 units in all.
PAD_3999: dict[str, Any] = {"$concat": ["deploy", {"$repeat": " ", "times": 3993}]}
PAD_3998: dict[str, Any] = {"$concat": ["deploy", {"$repeat": " ", "times": 3992}]}
#: 24 distinct two-letter tokens no text of the machine contains: with one longer word they make
#: a query of 25 distinct tokens, one past the prefilter's 24 (the longest are kept).
FILLER_TOKENS = tuple(f"q{c}" for c in "abcdefghijklmnopqrstuvwx")


_kinds = st.sampled_from(["fact", "summary"])
_any_text = texts()
_threads = st.sampled_from(["thread:1", "thread:2"])
_keywords = st.lists(
    st.sampled_from((*VOCAB, "zeta", "Deploy-Staging", "Café", "東京", "prod🚀")),
    max_size=2,
)
_one_in_four = st.integers(0, 3)
_confidences = st.sampled_from([0, 0.5, 1])


def candidate(draw: st.DrawFn) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "kind": draw(_kinds),
        "text": draw(_any_text),
        "sourceThreadKey": draw(_threads),
    }
    if draw(st.booleans()):
        rec["keywords"] = draw(_keywords)
    # optional fields appear one time in four; "absent" is the simplest value, so shrinking
    # removes them
    if draw(_one_in_four) == 3:
        rec["sourceRunId"] = "run-1"
    if draw(_one_in_four) == 3:
        rec["confidence"] = draw(_confidences)
    return rec


@st.composite
def batches(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [candidate(draw) for _ in range(draw(st.integers(1, 4)))]


INVALID_BODIES: list[tuple[str, dict[str, Any]]] = [
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [{"kind": "opinion", "text": "x", "sourceThreadKey": "t"}],
        },
    ),
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [{"kind": "fact", "text": "   ", "sourceThreadKey": "t"}],
        },
    ),
    ("write", {"scopeKey": "{scope:a}", "records": [{"kind": "fact", "text": "deploy"}]}),
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [
                {"kind": "fact", "text": "deploy", "sourceThreadKey": "t", "confidence": 1.5}
            ],
        },
    ),
    (
        "write",
        {
            "scopeKey": "{scope:a}",
            "records": [
                {"kind": "fact", "text": "deploy", "sourceThreadKey": "t", "keywords": [""]}
            ],
        },
    ),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 0}),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 2.5}),
    ("write", {"scopeKey": "{scope:a}", "records": "deploy"}),
    ("write", {"scopeKey": "{scope:a} x", "records": []}),
    ("write", {"scopeKey": "", "records": []}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": 0}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": 51}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": True}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": 7, "limit": 5}),
    ("retrieve", {"scopeKey": "{scope:a}", "limit": 5}),
    ("list", {"scopeKey": "{scope:a}", "limit": 0}),
    ("list", {"scopeKey": "{scope:a}", "limit": 5, "query": ["deploy"]}),
    ("forget", {"scopeKey": "{scope:a}", "id": ""}),
    ("forget", {"scopeKey": "{scope:a}", "id": "mem:x 1"}),
    # implementation-defined: null for an optional field (absent, or 400 naming it)
    ("list", {"scopeKey": "{scope:a}", "limit": 5, "query": None}),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": None}),
    # JavaScript integers: 5.0 is 5
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy", "limit": 5.0}),
    # one past a bound (the bound itself: ``AT_THE_BOUNDS``)
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 10_001}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": {"$repeat": "x", "times": 4001}, "limit": 5}),
    # lengths are UTF-16 code units: 4000 code points, 4001 units (the last one astral) ...
    (
        "retrieve",
        {"scopeKey": "{scope:a}", "query": {"$concat": [PAD_3999, "🚀"]}, "limit": 5},
    ),
    # ... and 2001 astral characters, 4002 units
    ("retrieve", {"scopeKey": "{scope:a}", "query": {"$repeat": "🚀", "times": 2001}, "limit": 5}),
]

#: Valid requests exactly at a bound: limit 50, a query of 4000 UTF-16 units (ASCII, or ending
#: in an astral character), cap 10000.
AT_THE_BOUNDS: list[tuple[str, dict[str, Any]]] = [
    ("retrieve", {"scopeKey": "{scope:a}", "query": "deploy alpha", "limit": 50}),
    ("list", {"scopeKey": "{scope:a}", "limit": 50, "query": "deploy"}),
    ("retrieve", {"scopeKey": "{scope:a}", "query": {"$concat": [PAD_3999, "x"]}, "limit": 5}),
    (
        "retrieve",
        {"scopeKey": "{scope:a}", "query": {"$concat": [PAD_3998, "🚀"]}, "limit": 5},
    ),
    ("write", {"scopeKey": "{scope:a}", "records": [], "cap": 10_000}),
]


#: Candidates a write must refuse (400), put last in an otherwise valid batch.
INVALID_CANDIDATES: list[dict[str, Any]] = [
    {"kind": "opinion", "text": "deploy", "sourceThreadKey": "thread:1"},
    {"kind": "fact", "text": "   ", "sourceThreadKey": "thread:1"},
    {"kind": "fact", "text": "deploy"},
    {"kind": "fact", "text": "deploy", "sourceThreadKey": "thread:1", "confidence": 1.5},
]


#: The case lists :meth:`MemoryMachine._sendable` filters, by name.
CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "invalid": INVALID_BODIES,
    "bounds": AT_THE_BOUNDS,
}


@functools.cache
def _sendable_cases(which: str, have: frozenset[str]) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The cases of ``CASES[which]`` a target with capabilities ``have`` can take, in their
    order — worked out once per capability set, as the rules' preconditions ask on every rule
    draw."""
    return tuple((op, a) for op, a in CASES[which] if step_requires(Step(op=op, args=a)) <= have)


@functools.cache
def _sendable_strategy(
    which: str, have: frozenset[str]
) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """One of those cases (a strategy built once per case list and capability set)."""
    return st.sampled_from(_sendable_cases(which, have))


def not_crowded(machine: Any) -> bool:
    """:func:`live`, and the crowd rule has not run yet in this run (named functions, never
    lambdas: see ``machine.stopped``)."""
    return live(machine) and not machine._crowded


def has_invalid_cases(machine: Any) -> bool:
    """:func:`live`, and some invalid request is one the target can take."""
    return live(machine) and bool(machine._sendable("invalid"))


def has_bound_cases(machine: Any) -> bool:
    """:func:`live`, and some request exactly at a bound is one the target can take."""
    return live(machine) and bool(machine._sendable("bounds"))


def able(*capabilities: str) -> Callable[[Any], bool]:
    """Precondition: the run is live and the target has every one of ``capabilities`` (a rule
    whose every request needs one the target lacks is never drawn, rather than drawn to skip
    and stop the run)."""

    def ok(machine: Any) -> bool:
        return live(machine) and set(capabilities) <= machine.driver.capabilities()

    return ok


class MemoryMachine(DifferentialMachine):
    """Differential exploration of the Memory Worker protocol (see module docstring)."""

    protocol = "memory"
    READ_ONLY_OPS = frozenset({"list"})
    ids = Bundle("ids")

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self._symbols = 0
        self._crowded = False

    # -- helpers --------------------------------------------------------------------------

    def _step(self, op: str, args: dict[str, Any], clauses: tuple[str, ...] = ()) -> Any:
        return self.run_step(Step(op=op, args=args, clauses=list(clauses)))

    def _read(self, step: Step) -> list[tuple[str, dict[str, Any]]]:
        """Run a ``/list`` or ``/retrieve`` step and bind a symbol to each record it shows:
        ``[("$rN", record as answered), …]``."""
        outcome = self.run_step(step)
        if outcome.verdict != "pass" or outcome.exchange is None:
            return []
        records = outcome.exchange.body.get("records", [])
        bind: dict[str, Any] = {}
        for i in range(len(records)):
            self._symbols += 1
            bind[f"r{self._symbols}"] = {"index": i}
        if not bind:
            return []
        driver = self.driver
        assert isinstance(driver, MemoryDriver)  # the memory machine runs on the memory driver
        problem = driver.bind_from(outcome.exchange, bind)
        assert problem is None, problem
        self.recorded[-1] = step.model_copy(update={"bind": bind})
        return [(f"${name}", rec) for name, rec in zip(bind, records, strict=True)]

    def _read_and_bind(self, step: Step) -> Any:
        """Run a ``/list`` or ``/retrieve`` step and put the ids it shows into the bundle."""
        return multiple(*[name for name, _ in self._read(step)])

    def _mutate_and_read(self, op: str, args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """A step that may change ``args["scopeKey"]``, then one ``/list`` of that scope under
        the step's clauses, so a wrong state is blamed on the step that made it.  With a
        ``--window`` the ``/list`` goes out in the same write as the step
        (:meth:`MemoryDriver.follow_with`): one round trip for the two."""
        look = {"scopeKey": args["scopeKey"], "limit": 50}
        listed = LIST in self.driver.capabilities()
        if listed and self.session.window > 1 and isinstance(self.driver, MemoryDriver):
            self.driver.follow_with("/list", look)
        outcome = self._step(op, args)
        if outcome.verdict != "pass" or not listed:
            return []
        check = Step(
            op="list",
            args=look,
            clauses=list(DEFAULT_CLAUSES[op]),
            note=f"what the scope holds right after step {outcome.index} ({op})",
        )
        return self._read(check)

    def _mutate(self, op: str, args: dict[str, Any]) -> Any:
        """:meth:`_mutate_and_read`, the ids shown going into the bundle."""
        return multiple(*[name for name, _ in self._mutate_and_read(op, args)])

    # -- setup ----------------------------------------------------------------------------

    @checks("MEM-RECORD.4", "MEM-STORE.9", "MEM-CAP.1", "MEM-WIRE.12", "MEM-WIRE.13")
    @initialize(target=ids, fill=st.sampled_from([0, 0, 2, 3, 4]))
    def prefill(self, fill: int) -> Any:
        """Start with scope ``a`` holding ``fill`` distinct records (none: the simplest), so
        the small caps the write rule draws evict at once."""
        if fill == 0:
            return multiple()
        records = [
            {"kind": "fact", "text": f"{VOCAB[i]} {VOCAB[-1 - i]}", "sourceThreadKey": "thread:1"}
            for i in range(fill)
        ]
        return self._mutate("write", {"scopeKey": "{scope:a}", "records": records})

    # -- writes ---------------------------------------------------------------------------

    @checks(
        "MEM-SEAM.2", "MEM-RECORD.1", "MEM-RECORD.2", "MEM-RECORD.4", "MEM-RECORD.5",
        "MEM-SCOPE.5", "MEM-WRITE.1", "MEM-WRITE.2", "MEM-WRITE.6", "MEM-WRITE.7",
        "MEM-STORE.9", "MEM-STORE.11", "MEM-CAP.1", "MEM-CAP.2", "MEM-CAP.3",
        "MEM-WIRE.12", "MEM-WIRE.13", "MEM-WIRE.16",
    )  # fmt: skip
    @precondition(live)
    @rule(target=ids, scope=scopes, records=batches(), cap=st.none() | st.integers(1, 5))
    def write(self, scope: str, records: list[dict[str, Any]], cap: int | None) -> Any:
        args: dict[str, Any] = {"scopeKey": f"{{scope:{scope}}}", "records": records}
        if cap is not None and CAP in self.driver.capabilities():  # else the default cap
            args["cap"] = cap
        return self._mutate("write", args)

    @checks("MEM-RECORD.3", "MEM-WRITE.3", "MEM-WRITE.8", "MEM-SCOPE.5", "MEM-WIRE.12")
    @precondition(live)
    @rule(target=ids, scope=scopes, target_id=ids, text=texts())
    def supersede(self, scope: str, target_id: str, text: str) -> Any:
        rec = {"kind": "fact", "text": text, "sourceThreadKey": "thread:1", "supersedes": target_id}
        return self._mutate("write", {"scopeKey": f"{{scope:{scope}}}", "records": [rec]})

    @checks("MEM-WRITE.4", "MEM-WIRE.12")
    @precondition(live)
    @rule(scope=scopes, text=texts(), ptr=st.sampled_from(["", "mem:{scope:z}:1", "garbage"]))
    def supersede_nothing(self, scope: str, text: str, ptr: str) -> None:
        rec = {"kind": "summary", "text": text, "sourceThreadKey": "thread:2", "supersedes": ptr}
        self._mutate("write", {"scopeKey": f"{{scope:{scope}}}", "records": [rec]})

    @checks("MEM-STORE.8", "MEM-RECORD.2", "MEM-SCOPE.5", "MEM-WIRE.15")
    @precondition(able(FORGET))
    @rule(scope=scopes, target_id=ids)
    def forget(self, scope: str, target_id: str) -> None:
        self._mutate("forget", {"scopeKey": f"{{scope:{scope}}}", "id": target_id})

    @checks("MEM-STORE.8", "MEM-WIRE.15")
    @precondition(able(FORGET))
    @rule(scope=scopes, target_id=foreign_ids)
    def forget_unknown(self, scope: str, target_id: str) -> None:
        self._step("forget", {"scopeKey": f"{{scope:{scope}}}", "id": target_id})

    # -- reads ----------------------------------------------------------------------------

    @checks(
        "MEM-SEAM.2", "MEM-SCORE.1", "MEM-SCORE.2", "MEM-SCORE.4", "MEM-SCORE.5",
        "MEM-STORE.2", "MEM-STORE.3", "MEM-STORE.4", "MEM-WIRE.11", "MEM-WIRE.16",
    )  # fmt: skip
    @precondition(live)
    @rule(target=ids, scope=scopes, query=queries, limit=st.integers(1, 6))
    def retrieve(self, scope: str, query: str, limit: int) -> Any:
        args = {"scopeKey": f"{{scope:{scope}}}", "query": query, "limit": limit}
        return self._read_and_bind(Step(op="retrieve", args=args))

    @checks("MEM-STORE.7", "MEM-RECORD.1", "MEM-SCORE.2", "MEM-WIRE.14", "MEM-WIRE.16")
    @precondition(able(LIST))
    @rule(target=ids, scope=scopes, limit=st.integers(1, 8), query=st.none() | queries)
    def list_records(self, scope: str, limit: int, query: str | None) -> Any:
        args: dict[str, Any] = {"scopeKey": f"{{scope:{scope}}}", "limit": limit}
        if query is not None:
            args["query"] = query
        return self._read_and_bind(Step(op="list", args=args))

    @checks("MEM-STORE.5", "MEM-STORE.2")
    @precondition(live)
    @rule(
        target=ids,
        scope=scopes,
        word=st.sampled_from((*VOCAB, "kelvin", "cafe")),
        limit=st.integers(1, 6),
        first=st.booleans(),
    )
    def retrieve_past_24_tokens(self, scope: str, word: str, limit: int, first: bool) -> Any:
        """A query of 25 distinct tokens: 24 two-letter ones no record holds and one word.  The
        prefilter keeps the 24 longest (MEM-STORE.5), so the word is kept and the records it
        matches must be found."""
        fill = " ".join(FILLER_TOKENS)
        query = f"{word} {fill}" if first else f"{fill} {word}"
        args = {"scopeKey": f"{{scope:{scope}}}", "query": query, "limit": limit}
        return self._read_and_bind(Step(op="retrieve", args=args))

    @checks("MEM-STORE.6", "MEM-STORE.2", "MEM-STORE.4", "MEM-CAP.3")
    @precondition(not_crowded)
    @rule(
        target=ids,
        scope=scopes,
        word=st.sampled_from(VOCAB),
        limit=st.integers(1, 6),
        used=st.booleans(),
        dead=st.booleans(),
    )
    def crowd_past_the_candidate_cap(
        self, scope: str, word: str, limit: int, used: bool, dead: bool
    ) -> Any:
        """More matching records than the candidate cap max(50, 5 x limit) (MEM-STORE.6): one
        record ``<word> quokka``, then 50 newer ``<word> crowd N``, then a retrieve of
        ``quokka <word>``.  The first is a strictly better full-text hit than every crowd
        record, so any relevance (bm25) prefilter hands it to the engine, which ranks it
        first; a prefilter by recency (seed §17's red-verified bug) starves it.  ``used``
        retrieves the crowd once first, so it is also the more recently *used*.  Once a
        run: a 50-record batch and its listing are the machine's costliest step.

        ``dead`` first writes 50 short records ``quokka <word> dN``, which every bm25 ranks
        above the (then long) relevant record, and evicts them with the crowd's write (cap
        51): a dead row must never take a candidate slot (seed §15's red-verified row)."""
        self._crowded = True
        # A scope of its own, which no other rule writes to: a later small-cap write into 50
        # equally old records would leave more equally legal evictions (MEM-CAP.2) than the
        # oracle follows.
        key = f"{{scope:crowd-{scope}}}"
        base = {"kind": "fact", "sourceThreadKey": "thread:1"}
        dead = dead and CAP in self.driver.capabilities()
        pad = " and a long tail of words to pad it out" if dead else ""
        if dead:
            doomed = [{**base, "text": f"quokka {word} d{i}"} for i in range(50)]
            self._step("write", {"scopeKey": key, "records": doomed})
        first = {**base, "text": f"{word} quokka{pad}"}
        names = [
            n for n, _ in self._mutate_and_read("write", {"scopeKey": key, "records": [first]})
        ]
        crowd = [{**base, "text": f"{word} crowd {i}{pad}"} for i in range(50)]
        write: dict[str, Any] = {"scopeKey": key, "records": crowd}
        if dead:
            write["cap"] = 51  # every record older than the relevant one goes
        self._step("write", write)
        if used:
            self._step("retrieve", {"scopeKey": key, "query": f"{word} crowd", "limit": 50})
        step = Step(
            op="retrieve",
            args={"scopeKey": key, "query": f"quokka {word}", "limit": limit},
            clauses=["MEM-STORE.6", "MEM-STORE.2"],
        )
        names += [n for n, _ in self._read(step)]
        return multiple(*names)

    # -- the collision guard's twins ------------------------------------------------------

    @checks("MEM-WRITE.5", "MEM-WRITE.2", "MEM-WRITE.3", "MEM-WRITE.8")
    @precondition(able(LIST))  # the corrected record's id is read from a list
    @rule(
        target=ids,
        scope=scopes,
        text=texts(),
        other=texts(),
        restate=st.sampled_from(["text", "text", "other", "nothing"]),
        style=st.sampled_from(["same", "upper", "spaces"]),
    )
    def correct_into_a_twin(
        self, scope: str, text: str, other: str, restate: str, style: str
    ) -> Any:
        """Two active records with one text, which only the collision guard makes
        (MEM-WRITE.5): write ``text`` and ``other``, correct ``other`` into ``text`` — a new
        record beside the old one, not a dedup — then restate (in another case or spacing)
        ``text``: the dedup bumps the earliest of the twins (MEM-WRITE.2); or ``other``: the
        superseded record is no dedup target, so it is a new record (MEM-WRITE.8)."""
        key = f"{{scope:{scope}}}"
        if normalize_text(other) == normalize_text(text):
            other = f"{other} zeta"
        base = {"kind": "fact", "sourceThreadKey": "thread:1"}
        seen = self._mutate_and_read(
            "write", {"scopeKey": key, "records": [{**base, "text": text}, {**base, "text": other}]}
        )
        names = [name for name, _ in seen]
        old = next((n for n, r in seen if normalize_text(r["text"]) == normalize_text(other)), None)
        if old is None:
            return multiple(*names)
        fix = {**base, "text": text, "sourceThreadKey": "thread:2", "supersedes": old}
        names += [n for n, _ in self._mutate_and_read("write", {"scopeKey": key, "records": [fix]})]
        if restate != "nothing":
            said = text if restate == "text" else other
            again = {
                "same": said,
                "upper": said.upper(),
                "spaces": "  " + "   ".join(said.split()) + " ",  # inner whitespace too
            }[style]
            rec = {**base, "text": again}
            names += [
                n for n, _ in self._mutate_and_read("write", {"scopeKey": key, "records": [rec]})
            ]
        return multiple(*names)

    # -- invalid requests -----------------------------------------------------------------

    def _sendable(self, which: str) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The ``(op, args)`` cases of ``CASES[which]`` whose request the target can take (its
        capabilities)."""
        return _sendable_cases(which, self.driver.capabilities())

    @checks(
        "MEM-WIRE.8", "MEM-WIRE.9", "MEM-WIRE.10", "MEM-WIRE.11", "MEM-WIRE.12",
        "MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.15",
    )  # fmt: skip
    @precondition(has_invalid_cases)
    @rule(data=st.data())
    def invalid_request(self, data: st.DataObject) -> None:
        op, args = data.draw(
            _sendable_strategy("invalid", self.driver.capabilities()), label="case"
        )
        self._step(op, args)

    @checks("MEM-WIRE.12", "MEM-WIRE.8")
    @precondition(live)
    @rule(target=ids, scope=scopes, records=batches(), bad=st.sampled_from(INVALID_CANDIDATES))
    def write_with_an_invalid_last(
        self, scope: str, records: list[dict[str, Any]], bad: dict[str, Any]
    ) -> Any:
        """A batch whose last candidate is invalid: 400, and nothing of it written (the list
        after it shows the scope unchanged; MEM-WIRE.12)."""
        return self._mutate("write", {"scopeKey": f"{{scope:{scope}}}", "records": [*records, bad]})

    # -- bounds ---------------------------------------------------------------------------

    @checks("MEM-WIRE.11", "MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.10")
    @precondition(has_bound_cases)
    @rule(target=ids, data=st.data())
    def at_a_bound(self, data: st.DataObject) -> Any:
        """A valid request exactly at a bound (limit 50, a query of 4000 UTF-16 units, cap
        10000); one past each is in ``INVALID_BODIES``."""
        op, args = data.draw(_sendable_strategy("bounds", self.driver.capabilities()), label="case")
        if op == "write":
            return self._mutate(op, args)
        return self._read_and_bind(Step(op=op, args=args))


#: Every clause a rule of the memory machine declares (``@checks``), in spec order.  The
#: routing, auth and fence clauses (MEM-WIRE.1, MEM-WIRE.2, MEM-WIRE.3, MEM-WIRE.4, MEM-WIRE.5,
#: MEM-WIRE.6, MEM-WIRE.7) are the transport probes' (probes.py).
MACHINE_CLAUSES: tuple[str, ...] = machine_clauses(MemoryMachine)
