"""The ledger's two forms give one verdict: the whole ledger corpus, the transport probes and
the ledger state machine, run against the bundled store over ``POST /ledger/<method>``, over
JSON-RPC on a WebSocket (127.0.0.1) and over JSON-RPC on a Unix socket, judge every scenario
and the machine alike -- for the honest store (CONFORMANT) and for altered stores (the same
scenarios fail, on the same clauses)."""

from __future__ import annotations

import io
import secrets
from pathlib import Path
from typing import Any

import pytest

from conformance.commands.target import start_bundled_store
from conformance.vocabulary import Secret, TargetConfig
from tests.common.engine import run_engine

SEED = 20_261_206
EXAMPLES = 4
#: Altered stores whose defects the corpus and the machine find through ordinary calls.
MUTANTS = ("led-list-51", "led-credential-on-edit", "led-approve-keeps-valid-from")


def verdicts(quirks: frozenset[str], tmp: Path) -> dict[str, dict[str, Any]]:
    """Per form: the exit code, each scenario's verdict and failed clauses, each machine's
    verdict and the clauses of its findings."""
    token = secrets.token_urlsafe(24)
    handle = start_bundled_store(token, quirks=quirks)
    out: dict[str, dict[str, Any]] = {}
    try:
        forms = {
            "http": handle.url,
            "ws": handle.serve_ledger_socket(),
            "unix": handle.serve_ledger_socket(unix_path=str(tmp / "ledger.sock")),
        }
        for form, url in forms.items():
            outcome = run_engine(
                TargetConfig(url, Secret(token), 10.0),
                spec="ledger",
                profile="quick",
                seed=SEED,
                examples=EXAMPLES,
                quiet=True,
                out=io.StringIO(),
                allow_dirty=True,  # the form before left its last scenario's records
            )
            data = outcome.data
            out[form] = {
                "exit": outcome.exit_code,
                "scenarios": {
                    s["name"]: (s["verdict"], sorted(s.get("failed_clauses") or []))
                    for s in data["scenarios"]
                },
                "machines": {
                    m["name"]: (
                        m["verdict"],
                        sorted(m["failed_clauses"]) if m["verdict"] == "fail" else [],
                    )
                    for m in data["machines"]
                },  # fmt: skip
            }
    finally:
        handle.stop()
    return out


@pytest.mark.slow
@pytest.mark.clause("LED-WIRE.20", "LED-WIRE.21")
@pytest.mark.parametrize("quirk", [None, *MUTANTS])
def test_every_form_of_the_binding_gets_the_same_verdict(quirk: str | None, tmp_path: Path) -> None:
    got = verdicts(frozenset({quirk}) if quirk else frozenset(), tmp_path)
    http = got["http"]
    assert len(http["scenarios"]) >= 84 and http["machines"]
    assert http["exit"] == (1 if quirk else 0)
    for form in ("ws", "unix"):
        assert got[form]["exit"] == http["exit"], form
        assert got[form]["scenarios"] == http["scenarios"], form
        assert got[form]["machines"] == http["machines"], form
