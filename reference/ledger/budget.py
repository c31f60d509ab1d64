"""A bounded scope refuses rather than evicts (LED-BUDGET.*)."""

from __future__ import annotations

from reference.ledger.outcome import Refused, refusal
from reference.ledger.records import LedgerState, held, settings_for


def budget_message(scope_key: str, held_: int, budget: int) -> str:
    """The exact budget refusal text (LED-BUDGET.2)."""
    return (
        f"Memory scope '{scope_key}' holds {held_} of {budget} records and nothing was written. "
        "Forget or consolidate a record to make room."
    )


def has_room(state: LedgerState, scope_key: str) -> bool:
    """True while the scope holds fewer records than its budget (LED-BUDGET.2, LED-RUN.5)."""
    return held(state, scope_key) < settings_for(state, scope_key).max_records


def check_growth(state: LedgerState, scope_key: str) -> Refused | None:
    """Refuse a write that would add a held record at or above the budget (LED-BUDGET.2).

    Only growth (a save, a proposal) is checked; a replacement never is (LED-BUDGET.3).
    """
    h = held(state, scope_key)
    budget = settings_for(state, scope_key).max_records
    if h >= budget:
        return refusal(budget_message(scope_key, h, budget), exact=True)
    return None
