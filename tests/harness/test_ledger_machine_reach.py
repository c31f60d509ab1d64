"""The ledger state machine alone reaches the mistakes its alphabet was widened for, and names
the rule each one breaks: gate probes (one element built to meet one gate rule), bodies at the
4000-character bound, packets at the 4000-character cap, a history read after a sweep.

Each run is the machine alone (no corpus) against the bundled store with one mutant of the
catalogue, a fixed seed and a few examples, stopping at the first divergence: fast, and
deterministic for a given machine.  ``memspec selftest --machines-only`` is the full measure.
"""

from __future__ import annotations

import inspect
import secrets

import pytest

from conformance.commands.target import start_bundled_store
from conformance.drivers.ledger.driver import LedgerDriver
from conformance.machines import MachineResult, run_machine
from conformance.machines.checks import machine_clauses
from conformance.machines.ledger import MACHINE_CLAUSES, LedgerMachine
from conformance.machines.profiles import Profile
from conformance.vocabulary import RunContext, Secret, TargetConfig

PROFILE = Profile("ledger-reach", max_examples=20, step_count=8, budget_s=20.0, shrink_budget_s=0.5)


def focused(*keep: str) -> type[LedgerMachine]:
    """The ledger machine with only the rules ``keep`` (and its setup): a short run reaches
    what those rules are for.  The rules themselves are the machine's, unchanged."""
    names = {
        name
        for name, f in inspect.getmembers(LedgerMachine)
        if hasattr(f, "hypothesis_stateful_rule") and name != "stopped_run"
    }
    assert set(keep) <= names, set(keep) - names
    return type("FocusedLedgerMachine", (LedgerMachine,), dict.fromkeys(names - set(keep)))


def explore(quirks: frozenset[str], machine: type[LedgerMachine], seed: int = 1) -> MachineResult:
    """``machine`` alone against the bundled store altered by ``quirks``, up to the first
    divergence."""
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token, quirks=quirks)
    try:
        target = TargetConfig(handle.url, Secret(token), 10.0, label="+".join(quirks))
        driver = LedgerDriver(RunContext(run_id="memspec-reach", target=target))
        try:
            return run_machine(
                "ledger", driver, PROFILE, seed=seed, machine=machine, max_findings=1
            )
        finally:
            driver.close()
    finally:
        handle.stop()


def named(result: MachineResult) -> set[str]:
    return {c for f in result.findings for c in f.clauses}


def killed(
    mutant: str, machine: type[LedgerMachine], *clauses: str, seed: int = 1
) -> MachineResult:
    """Run ``machine`` against ``mutant``: it must diverge, naming every one of ``clauses``."""
    result = explore(frozenset({mutant}), machine, seed)
    assert result.verdict == "fail", f"{mutant} survived: {result.reason}"
    assert set(clauses) <= named(result), f"{mutant}: {result.reason}"
    return result


GATE = focused("save", "update_settings", "gate_probe")


@pytest.mark.clause("LED-GATE.7", "LED-GATE.9", "LED-VOCAB.6", "LED-GATE.4")
def test_gate_probes_name_the_gate_rule_a_wrong_count_breaks() -> None:
    """One element built to meet one rule of the gate: consolidation off must not refuse it
    (LED-GATE.7), ``retire`` with removal off must be refused (LED-GATE.4)."""
    killed("led-gate-reads-mode", GATE, "LED-GATE.7")
    killed("led-retire-ignores-removal", GATE, "LED-VOCAB.6", "LED-GATE.4")


@pytest.mark.clause("LED-CRED.2", "LED-VOCAB.2", "LED-VOCAB.3")
@pytest.mark.xfail(
    strict=True,
    reason="a narrower detector is now followed (LED-CRED.6): the machine kills this mutant only"
    " after the store has shown it refuses the shape, and in this short run the showing save"
    " is refused at the budget as well, which does not show the detector; the corpus kills it",
)
def test_a_credential_body_merged_is_blamed_on_the_credential_rule() -> None:
    # Seed 2: since Hypothesis draws no constants harvested from our own modules
    # (conformance.machines.constants), 9 of the seeds 1-10 reach it in this short run; seed 1
    # does not.
    killed("led-credential-on-merge", GATE, "LED-CRED.2", "LED-VOCAB.2", seed=5)


@pytest.mark.clause("LED-PACKET.4")
def test_a_packet_that_forgets_its_newlines_runs_over_the_cap() -> None:
    result = killed(
        "led-packet-uncounted-newlines", focused("save", "packet_near_cap"), "LED-PACKET.4"
    )
    assert "4001" in result.reason  # one newline over


@pytest.mark.clause("LED-SAVE.3", "LED-REC.6")
def test_a_length_bound_applied_before_trimming_is_blamed_on_the_bound() -> None:
    killed("led-body-length-before-trim", focused("boundary_body"), "LED-SAVE.3", "LED-REC.6")


@pytest.mark.clause("LED-EXP.3", "LED-EXP.2")
def test_an_expiry_that_deletes_shows_in_the_history_read_after_the_sweep() -> None:
    killed("led-expiry-deletes", focused("save", "expire_live"), "LED-EXP.3")


@pytest.mark.clause(
    "LED-GATE.1",
    "LED-GATE.3",
    "LED-GATE.4",
    "LED-GATE.6",
    "LED-GATE.7",
    "LED-VOCAB.5",
    "LED-VOCAB.6",
    "LED-CRED.2",
    "LED-SAVE.3",
    "LED-REC.6",
    "LED-PACKET.4",
    "LED-EXP.3",
    "LED-GROUP.2",
)
def test_the_new_rules_raise_no_false_alarm_on_the_unaltered_store() -> None:
    machine = focused(
        "save",
        "delete_live",
        "update_settings",
        "gate_probe",
        "boundary_body",
        "packet_near_cap",
        "expire_live",
        "credential_body",
    )
    result = explore(frozenset(), machine, seed=3)
    assert result.verdict == "pass", result.reason
    assert result.steps > 150


@pytest.mark.clause()
def test_the_machine_lists_the_clauses_its_rules_declare() -> None:
    assert MACHINE_CLAUSES == machine_clauses(LedgerMachine)
    assert len(set(MACHINE_CLAUSES)) == len(MACHINE_CLAUSES)
