"""The pytest plugin's ``--memspec-expect-update FILE`` / ``--memspec-expect-prune``: the same
baseline maintenance as the CLI, from an inner pytest session against the bundled store with two
mutants of the catalogue (``/forget`` lies and ``/list`` answers oldest first), then the first
alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# See tests/plugin/test_pytest_plugin.py: what the plugin imports lazily is imported once here.
import httpcore  # noqa: F401
import pytest

import conformance.drivers.memory.driver  # noqa: F401
import conformance.report  # noqa: F401
from conformance.embedded.catalogue import Quirks
from conformance.embedded.server import start_server
from conformance.report.expect import load_expectations

pytest_plugins = ["pytester"]

TOKEN = "memspec-scale-plugin-token-5d2a"
FORGET = "forget_soft_deletes_one_active_record"
LIST = "list_is_newest_first_filtered_and_never_bumps"
CLEAN = "bodies_over_512_kib_are_413"
SELECT = ("-k", f"{FORGET} or {LIST} or {CLEAN}", "--memspec-spec", "memory")


FORGET_LIES = "mem-forget-always-true"
OLDEST_FIRST = "mem-list-oldest-first"


@contextmanager
def _store(*mutants: str) -> Iterator[str]:
    with start_server(token=TOKEN, test_control=True, quirks=Quirks(frozenset(mutants))) as handle:
        yield handle.url


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSPEC_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def _run(pytester: pytest.Pytester, url: str, *args: str) -> pytest.RunResult:
    result = pytester.runpytest("-p", "no:cacheprovider", "--memspec-target", url, *SELECT, *args)
    assert TOKEN not in result.stdout.str() + result.stderr.str()
    return result


@pytest.mark.clause("MEM-STORE.7", "MEM-STORE.8")
def test_plugin_update_then_prune_round_trip(pytester: pytest.Pytester, session: None) -> None:
    baseline = pytester.path / "expect.yaml"
    with _store(FORGET_LIES, OLDEST_FIRST) as broken:
        first_run = _run(pytester, broken, f"--memspec-expect-update={baseline}")
        first_run.assert_outcomes(passed=1, failed=2)
        entries = load_expectations(baseline)
        assert sorted((e.scenario, e.clause, e.op) for e in entries) == [
            (FORGET, "MEM-STORE.8", "forget"),
            (LIST, "MEM-STORE.7", "list"),
        ]
        first = baseline.read_bytes()
        again = _run(pytester, broken, f"--memspec-expect-update={baseline}")
        again.assert_outcomes(passed=1, xfailed=2)
        assert baseline.read_bytes() == first
        again.stdout.fnmatch_lines(["*still say 'reason: TODO'*", "*already accepts every*"])
    with _store(FORGET_LIES) as half:
        pruned = _run(pytester, half, f"--memspec-expect={baseline}", "--memspec-expect-prune")
    pruned.assert_outcomes(passed=1, xfailed=1, xpassed=1)
    pruned.stdout.fnmatch_lines([f"*expect-prune: dropped scenario {LIST} on clause MEM-STORE.7*"])
    assert [(e.scenario, e.clause) for e in load_expectations(baseline)] == [
        (FORGET, "MEM-STORE.8")
    ]
