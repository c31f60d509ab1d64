"""Ledger record builders the ledger families share."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON


def lrec(rid: str, **kw: JSON) -> JSON:
    out: dict[str, JSON] = {
        "id": rid,
        "scopeKey": "account:local",
        "kind": "preference",
        "body": f"body of {rid}",
        "provenance": "user_explicit",
        "status": "active",
        "validFrom": 1000,
        "createdAt": 1000,
        "updatedAt": 1000,
    }
    out.update(kw)
    return out


def ledger_list() -> st.SearchStrategy[list[JSON]]:
    @st.composite
    def build(draw: st.DrawFn) -> list[JSON]:
        n = draw(st.integers(0, 5))
        out = []
        for i in range(n):
            vf = draw(st.integers(0, 5)) * 1000
            rec = lrec(
                f"{i + 1:08x}",
                status=draw(
                    st.sampled_from(("active", "active", "superseded", "deleted", "expired"))
                ),
                provenance=draw(st.sampled_from(("user_explicit", "model_proposal"))),
                validFrom=vf,
                updatedAt=draw(st.integers(1, 3)) * 1000,
                body=draw(st.sampled_from(("a", "b\nc", "x" * 900, "y" * 1900, "z" * 2100))),
            )
            if draw(st.booleans()):
                rec["validTo"] = vf + draw(st.integers(0, 3)) * 1000
            if draw(st.booleans()):
                rec["confidenceBps"] = draw(st.sampled_from((5000, 9000)))
            if draw(st.booleans()):
                rec["conflictGroup"] = "g"
            out.append(rec)
        return out

    return build()
