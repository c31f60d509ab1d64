"""The memory machine's reads, invalid requests and bounds: retrieves, listings, a query past
the prefilter's 24 tokens, a crowd past the candidate cap, invalid bodies and batches, and
valid requests exactly at each bound."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import multiple, precondition, rule

from conformance.machines import live
from conformance.machines.checks import checks
from conformance.machines.memory.alphabet import (
    FILLER_TOKENS,
    INVALID_CANDIDATES,
    VOCAB,
    _sendable_strategy,
    batches,
    ids,
    queries,
    scopes,
)
from conformance.machines.memory.base import MemoryMachineBase, able
from conformance.scenario import Step
from conformance.targets.memory import CAP, LIST


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


class ReadRules(MemoryMachineBase):
    """The read, invalid-request and bound rules (a mixin of :class:`MemoryMachine`)."""

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

    # -- invalid requests -----------------------------------------------------------------

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
