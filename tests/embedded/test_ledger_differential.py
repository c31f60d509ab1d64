"""The bundled ledger against the reference model, in lockstep, under random call sequences.

A Hypothesis state machine sends the same calls (well-formed and malformed) to
``LedgerService`` and to ``reference.ledger.wire.handle`` at the same instants and requires
the store's answer to be one the model allows: the same result (ids matched through a
bijection built as records appear; history reads compared as sets, a tombstone optionally
omitted) or, for a refusal, an allowed code and, where the spec fixes it, the exact message.
After every step it also checks the store's own tables: the FTS index holds exactly the active
bodies, at most one active member per conflict group, intervals never run backwards, and open
intervals are exactly the active records.

The store never imports the model; only this test puts them side by side.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from conformance.embedded.ledger.service import LedgerService
from reference.ledger.outcome import Ok, Refused
from reference.ledger.records import LedgerState, empty_state
from reference.ledger.timefmt import format_rfc3339
from reference.ledger.wire import handle as model_handle

T0 = 1_767_225_600_000
DAY = 86_400_000
SCOPE = "account:local"

# The clause ids TestLedgerAgainstModel covers (a marker cannot sit on a generated TestCase class).
CLAUSES_TestLedgerAgainstModel = (
    "LED-WIRE.1",
    "LED-WIRE.2",
    "LED-WIRE.3",
    "LED-WIRE.4",
    "LED-WIRE.6",
    "LED-WIRE.8",
    "LED-REC.3",
    "LED-REC.4",
    "LED-STATUS.2",
    "LED-STATUS.3",
    "LED-LIST.2",
    "LED-ASOF.1",
    "LED-ASOF.2",
    "LED-INT.3",
    "LED-INT.5",
    "LED-GROUP.1",
    "LED-GROUP.2",
    "LED-BUDGET.2",
    "LED-BUDGET.3",
    "LED-BUDGET.4",
    "LED-EXP.2",
    "LED-GATE.1",
    "LED-GATE.3",
    "LED-VOCAB.2",
    "LED-VOCAB.5",
    "LED-PACKET.3",
    "LED-PACKET.4",
    "LED-FTS.1",
)

WORDS = ["tea", "coffee", "dark mode", "vim", "deploys friday", "uses rust", "a", "B c"]
BODIES = st.one_of(
    st.sampled_from(WORDS),
    st.builds(
        lambda w, pad: f"{pad}{w}{pad}", st.sampled_from(WORDS), st.sampled_from([" ", "\n"])
    ),
    st.sampled_from(WORDS),
    st.sampled_from(["", "   ", "x" * 4001, "ghp_" + "a" * 30, "line\r\nbreak", "é" * 700]),
)
KINDS = st.one_of(st.none(), st.sampled_from(["preference", "fact", "decision", "constraint"]))
GROUPS = st.one_of(st.none(), st.sampled_from(["g1", "g2", " ", "g" * 81]))
_SHORT = re.compile(r"^\[([^\]]{8})\]")


def _put(params: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        params[name] = value


class LedgerAgainstModel(RuleBasedStateMachine):
    """Drive the store and the model with the same calls; compare every answer."""

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.service = LedgerService(":memory:", clock=lambda: self.now, test_control=True)
        self.model: LedgerState = empty_state()
        self.m2s: dict[str, str] = {}
        self.s2m: dict[str, str] = {}

    def teardown(self) -> None:
        self.service.close()

    # ---- lockstep ------------------------------------------------------------------------

    def to_store(self, value: Any) -> Any:
        """Model ids in a request become the store's ids (unknown ids pass through)."""
        if isinstance(value, str):
            return self.m2s.get(value, value)
        if isinstance(value, list):
            return [self.to_store(v) for v in value]
        if isinstance(value, dict):
            return {k: self.to_store(v) for k, v in value.items()}
        return value

    def bind(self, model_id: str, store_id: str) -> None:
        if model_id in self.m2s or store_id in self.s2m:
            assert self.m2s.get(model_id) == store_id, (model_id, store_id, self.m2s)
            assert self.s2m.get(store_id) == model_id
            return
        self.m2s[model_id] = store_id
        self.s2m[store_id] = model_id

    def same_record(self, mine: dict[str, Any], theirs: dict[str, Any]) -> None:
        self.bind(str(theirs["id"]), mine["id"])
        if "supersedes" in theirs:
            assert "supersedes" in mine, (mine, theirs)
            self.bind(str(theirs["supersedes"]), mine["supersedes"])
        strip = {"id", "supersedes"}
        mine_rest = {k: v for k, v in mine.items() if k not in strip}
        theirs_rest = {k: v for k, v in theirs.items() if k not in strip}
        assert mine_rest == theirs_rest, (mine, theirs)

    def call(self, method: str, params: dict[str, Any]) -> tuple[Any, Any]:
        new_model, outcome = model_handle(self.model, method, params, self.now)
        raw = json.dumps(self.to_store(params)).encode()
        if method.startswith("_test/"):
            status, body = self.service.handle_test(method.removeprefix("_test/"), raw)
        else:
            status, body = self.service.handle(method, raw)
        if isinstance(outcome, Refused):
            assert status in (400, 409), (method, params, status, body, outcome)
            code, message = body["error"]["code"], body["error"]["message"]
            assert outcome.admits(code, message), (method, params, body, outcome)
            assert status == (400 if code == -32602 else 409)
            return outcome, body
        assert isinstance(outcome, Ok)
        assert status == 200, (method, params, status, body, outcome)
        self.model = new_model
        self.compare(method, outcome, body)
        return outcome, body

    def compare(self, method: str, outcome: Ok, body: Any) -> None:
        want = outcome.result
        if method == "memory/list_memory_records":
            assert isinstance(want, dict)
            assert body["scopeKey"] == want["scopeKey"]
            assert len(body["records"]) == len(want["records"]), (body, want)
            for mine, theirs in zip(body["records"], want["records"], strict=True):
                self.same_record(mine, theirs)
        elif method == "memory/list_memory_records_as_of":
            assert isinstance(want, dict)
            theirs_by_id = {str(r["id"]): r for r in want["records"]}
            mine_model_ids = set()
            for mine in body["records"]:
                model_id = self.s2m.get(mine["id"])
                assert model_id is not None and model_id in theirs_by_id, (mine, want)
                self.same_record(mine, theirs_by_id[model_id])
                mine_model_ids.add(model_id)
            assert set(theirs_by_id) - mine_model_ids <= outcome.may_omit
        elif method == "_test/sweep":
            assert isinstance(want, dict)
            assert {self.s2m[i] for i in body["expired"]} == set(want["expired"])
        elif method == "_test/packet":
            assert isinstance(want, dict)
            short = {self.m2s[m][:8]: m[:8] for m in self.m2s}
            lines = [_SHORT.sub(lambda m: f"[{short[m.group(1)]}]", line) for line in body["lines"]]
            assert lines == want["lines"]
            assert body["text"] == "\n".join(body["lines"])
            assert len(body["text"]) == len(want["text"])
        elif isinstance(want, dict) and "id" in want:
            self.same_record(body, want)
        elif isinstance(want, dict) and isinstance(outcome, Ok) and outcome.extra_fields:
            # heldRecords: optional, exact when shown (LED-CONS.2); the bundled store shows it
            assert body == {**want, **outcome.extra_fields}, (method, body, want)
        else:
            assert body == want, (method, body, want)

    def observe(self) -> None:
        """List both statuses, which binds records a batch created."""
        self.call("memory/list_memory_records", {"scopeKey": SCOPE})
        self.call("memory/list_memory_records", {"scopeKey": SCOPE, "status": "proposed"})

    def model_ids(self) -> list[str]:
        return [r.id for r in self.model.records]

    # ---- rules ---------------------------------------------------------------------------

    @initialize(budget=st.integers(1, 12))
    def configure(self, budget: int) -> None:
        self.call("memory/update_consolidation_settings", {"mode": "off", "maxRecords": budget})

    @rule(ms=st.sampled_from([0, 0, 1, 7, 1000, DAY]))
    def tick(self, ms: int) -> None:
        self.now += ms

    @rule(body=BODIES, kind=KINDS, session=st.sampled_from([None, "s1", " "]))
    def save(self, body: str, kind: str | None, session: str | None) -> None:
        params: dict[str, Any] = {"body": body}
        _put(params, "kind", kind)
        _put(params, "sessionId", session)
        self.call("memory/save_memory_record", params)

    @rule(
        body=BODIES,
        kind=KINDS,
        confidence=st.one_of(st.none(), st.sampled_from([0, 5000, 5000, 10000, 10001])),
    )
    def propose(self, body: str, kind: str | None, confidence: Any) -> None:
        params: dict[str, Any] = {"body": body}
        _put(params, "kind", kind)
        _put(params, "confidenceBps", confidence)
        self.call("_test/propose", params)

    def pick(self, data: st.DataObject, *prefer: str) -> str:
        """A known record id, usually one in a status from ``prefer``; sometimes unknown."""
        known = [r for r in self.model.records if r.id in self.m2s]
        preferred = [r.id for r in known if r.status in prefer]
        if preferred and data.draw(st.integers(0, 3)) > 0:
            return data.draw(st.sampled_from(preferred))
        return data.draw(st.sampled_from([*(r.id for r in known), "no-such-record"]))

    @precondition(lambda self: bool(self.m2s))
    @rule(
        data=st.data(),
        method=st.sampled_from(
            [
                "memory/delete_memory_record",
                "memory/approve_memory_record",
                "memory/approve_memory_record",
                "memory/reject_memory_record",
            ]
        ),
    )
    def by_id(self, data: st.DataObject, method: str) -> None:
        prefer = "active" if method == "memory/delete_memory_record" else "proposed"
        self.call(method, {"recordId": self.pick(data, prefer)})

    @precondition(lambda self: bool(self.m2s))
    @rule(data=st.data(), body=BODIES, kind=KINDS)
    def supersede(self, data: st.DataObject, body: str, kind: str | None) -> None:
        params: dict[str, Any] = {"recordId": self.pick(data, "active"), "body": body}
        _put(params, "kind", kind)
        self.call("memory/supersede_memory_record", params)

    @rule(status=st.sampled_from(["active", "proposed"]))
    def listing(self, status: str) -> None:
        self.call("memory/list_memory_records", {"scopeKey": SCOPE, "status": status})

    @rule(data=st.data())
    def as_of(self, data: st.DataObject) -> None:
        instants = {T0, self.now}
        for r in self.model.records:
            instants |= {r.valid_from, r.valid_from - 1}
            if r.valid_to is not None:
                instants |= {r.valid_to, r.valid_to - 1}
        at = data.draw(st.sampled_from(sorted(instants)))
        self.call("memory/list_memory_records_as_of", {"scopeKey": SCOPE, "at": format_rfc3339(at)})

    @precondition(lambda self: bool(self.m2s))
    @rule(data=st.data(), days=st.sampled_from([1, 2]))
    def expire(self, data: st.DataObject, days: int) -> None:
        """An expiry the seed's way: ``expire`` (the sweep later passes it)."""
        rid = self.pick(data, "active")
        element = {"operation": "expire", "targets": [rid], "afterDays": days}
        self.call("_test/consolidate", {"operations": [element]})

    @precondition(lambda self: len(self.m2s) >= 2)
    @rule(data=st.data(), subject=st.sampled_from(["g", "h"]))
    def group(self, data: st.DataObject, subject: str) -> None:
        """The one way into a conflict group: ``group`` over two records."""
        a, b = self.pick(data, "active"), self.pick(data, "active")
        element = {"operation": "group", "targets": [a, b], "subject": subject}
        self.call("_test/consolidate", {"operations": [element]})

    @rule(offset=st.sampled_from([0, 1, DAY, 3 * DAY]))
    def sweep(self, offset: int) -> None:
        self.call("_test/sweep", {"at": format_rfc3339(self.now + offset)})

    @rule(
        budget=st.integers(1, 12),
        allow=st.one_of(st.none(), st.booleans()),
        mode=st.sampled_from(["off", "propose", "on"]),
    )
    def update_settings(self, budget: int, allow: bool | None, mode: str) -> None:
        params: dict[str, Any] = {"mode": mode, "maxRecords": budget}
        _put(params, "allowRemoval", allow)
        self.call("memory/update_consolidation_settings", params)

    @rule()
    def get_settings(self) -> None:
        self.call("memory/get_consolidation_settings", {})

    @precondition(lambda self: bool(self.m2s))
    @rule(data=st.data(), n=st.integers(1, 4))
    def consolidate(self, data: st.DataObject, n: int) -> None:
        known = [i for i in self.model_ids() if i in self.m2s] or ["no-such-record"]
        ids = st.sampled_from([*known, "no-such-record"])
        element = st.one_of(
            st.builds(
                lambda t, b: {"operation": "merge", "targets": t, "body": b},
                st.lists(ids, min_size=2, max_size=3, unique=True),
                BODIES,
            ),
            st.builds(
                lambda t, b: {"operation": "correct", "targets": [t], "body": b}, ids, BODIES
            ),
            st.builds(
                lambda t, d: {"operation": "expire", "targets": [t], "afterDays": d},
                ids,
                st.sampled_from([1, 2, 0]),
            ),
            st.builds(
                lambda t, s: {"operation": "group", "targets": t, "subject": s},
                st.lists(ids, min_size=1, max_size=3, unique=True),
                st.sampled_from(["g1", "g2", ""]),
            ),
            st.builds(lambda t: {"operation": "retire", "targets": [t]}, ids),
            st.builds(lambda t: {"operation": "keep", "targets": [t]}, ids),
            st.builds(lambda t: {"operation": "forget", "targets": [t]}, ids),
            st.just({"operation": "keep", "targets": ["x"], "status": "active"}),
        )
        ops = data.draw(st.lists(element, min_size=n, max_size=n))
        self.call("_test/consolidate", {"operations": ops})
        self.observe()

    @rule()
    def packet(self) -> None:
        self.observe()
        self.call("_test/packet", {})

    # ---- the store's own tables ----------------------------------------------------------

    @invariant()
    def tables_are_consistent(self) -> None:
        with self.service.lock:
            conn = self.service.store.conn
            fts = sorted(conn.execute("SELECT record_id, body FROM memory_records_fts"))
            active = sorted(
                conn.execute("SELECT id, body FROM memory_records WHERE status = 'active'")
            )
            assert fts == active
            groups = list(
                conn.execute(
                    "SELECT conflict_group, count(*) FROM memory_records WHERE status = 'active'"
                    " AND conflict_group IS NOT NULL GROUP BY conflict_group HAVING count(*) > 1"
                )
            )
            assert groups == []
            bad = list(
                conn.execute(
                    "SELECT id FROM memory_records WHERE (valid_to IS NOT NULL AND"
                    " valid_to < valid_from) OR ((status = 'active') != (valid_to IS NULL))"
                    " OR (status = 'deleted' AND body != '')"
                )
            )
            assert bad == []
            count = conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
        assert count == len(self.model.records)  # nothing deletes a row; refusals add none


LedgerAgainstModel.TestCase.settings = settings(
    LedgerAgainstModel.TestCase.settings, stateful_step_count=40
)
TestLedgerAgainstModel = LedgerAgainstModel.TestCase
