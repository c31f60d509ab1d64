"""The memory machine's setup and write rules: a scope prefilled at the start, writes,
supersedes, forgets, and the collision guard's twins."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, precondition, rule

from conformance.machines import live
from conformance.machines.checks import checks
from conformance.machines.memory.alphabet import (
    VOCAB,
    batches,
    foreign_ids,
    ids,
    scopes,
    texts,
)
from conformance.machines.memory.base import MemoryMachineBase, able
from conformance.targets.memory import CAP, FORGET, LIST
from reference.memory.engine import normalize_text


class LifecycleRules(MemoryMachineBase):
    """The setup, write and forget rules (a mixin of :class:`MemoryMachine`)."""

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
