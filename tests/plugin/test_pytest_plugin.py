"""The pytest plugin: ``pytest --memspec-target URL`` runs the corpus and the state machines as
test items inside someone else's pytest session.

Every test runs an inner pytest session (``pytester``) against a bundled store started here —
the plugin itself reaches it over HTTP only.  Inner sessions run in-process (fast) except the
pytest-xdist one, which needs real worker processes.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# httpcore and the conformance.drivers/report imports: everything the plugin imports lazily is
# imported here, once.  pytester restores sys.modules after each in-process inner session, so a
# module imported afresh in every session (httpcore) would meet exception classes of an earlier
# import (httpx keeps a map of them) and a refused connection would escape as an INTERNALERROR.
import httpcore  # noqa: F401
import pytest

import conformance.drivers.ledger.driver  # noqa: F401
import conformance.drivers.memory.driver  # noqa: F401
import conformance.report  # noqa: F401
from conformance import pytest_plugin
from conformance.embedded.memory import store as memory_store
from conformance.embedded.server import start_server
from conformance.machines.ledger import MACHINE_CLAUSES as LEDGER_MACHINE_CLAUSES
from conformance.machines.memory import MACHINE_CLAUSES as MEMORY_MACHINE_CLAUSES
from conformance.machines.profiles import PROFILES
from conformance.scenario import load_scenario

pytest_plugins = ["pytester"]

TOKEN = "memspec-plugin-test-token-7c1e90"
CORPUS = Path(pytest_plugin.__file__).resolve().parents[1] / "corpus"
EXAMPLES = ("--memspec-examples", "2")  # a couple of machine runs: the plugin, not the machine


def corpus(protocol: str) -> dict[str, list[str]]:
    """Scenario name → clause ids (top-level first, then the steps'), read straight from JSON."""
    out: dict[str, list[str]] = {}
    for path in sorted((CORPUS / protocol).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        ids = list(data["clauses"])
        for step in data["steps"]:
            ids += step.get("clauses", [])
        out[data["name"]] = list(dict.fromkeys(ids))
    return out


MEMORY = corpus("memory")
LEDGER = corpus("ledger")
TOTAL = len(MEMORY) + len(LEDGER) + 2  # + one item per state machine


@pytest.fixture(autouse=True)
def _inner_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSPEC_TOKEN", TOKEN)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


@pytest.fixture
def store() -> Iterator[str]:
    """A fresh bundled store with test controls (a clean ledger for every test)."""
    with start_server(token=TOKEN, test_control=True) as handle:
        yield handle.url


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert TOKEN not in result.stdout.str() + result.stderr.str(), "the token must never print"
    return result


def failure_text(result: pytest.RunResult, title: str) -> str:
    """The failure section of one item (between its ``___ title ___`` header and the next)."""
    out = result.stdout.str()
    match = re.search(
        rf"_{{3,}} {re.escape(title)} _{{3,}}\n(.*?)(?=\n_{{3,}} |\n-{{3,}} |\n={{3,}} )", out, re.S
    )
    assert match, f"no failure section {title!r} in:\n{out}"
    return match.group(1)


def marker(item: pytest.Item, name: str) -> pytest.Mark:
    """The ``name`` marker closest to ``item``, which the item must carry."""
    mark = item.get_closest_marker(name)
    assert mark is not None, (item.nodeid, name)
    return mark


# --------------------------------------------------------------------------- collection


@pytest.mark.clause("MEM-WIRE.1", "LED-WIRE.1")
def test_one_item_per_scenario_and_machine_with_clause_markers(
    pytester: pytest.Pytester, store: str
) -> None:
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--memspec-target", store)
    by_id = {item.nodeid: item for item in items}
    expected = {f"memspec::memory::{n}" for n in MEMORY} | {f"memspec::ledger::{n}" for n in LEDGER}
    expected |= {"memspec::memory::memory-machine", "memspec::ledger::ledger-machine"}
    assert set(by_id) == expected and len(items) == TOTAL
    for protocol, scenarios in (("memory", MEMORY), ("ledger", LEDGER)):
        for name, clauses in scenarios.items():
            item = by_id[f"memspec::{protocol}::{name}"]
            assert marker(item, "clause").args == tuple(clauses), name
            assert marker(item, "memspec").kwargs == {
                "protocol": protocol,
                "kind": "scenario",
            }
    memory_machine = by_id["memspec::memory::memory-machine"]
    ledger_machine = by_id["memspec::ledger::ledger-machine"]
    assert marker(memory_machine, "clause").args == tuple(MEMORY_MACHINE_CLAUSES)
    assert marker(ledger_machine, "clause").args == tuple(LEDGER_MACHINE_CLAUSES)
    assert MEMORY_MACHINE_CLAUSES and LEDGER_MACHINE_CLAUSES
    for item in items:  # the ledger has one account scope: its items form one xdist group
        group = item.get_closest_marker("xdist_group")
        if "::ledger::" in item.nodeid:
            assert group is not None and group.args == ("memspec-ledger",)
        else:
            assert group is None

    memory_only, _ = pytester.inline_genitems(
        "-p", "no:cacheprovider", "--memspec-target", store, "--memspec-spec", "memory"
    )
    assert {i.nodeid for i in memory_only} == {
        n for n in expected if n.startswith("memspec::memory::")
    }


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.8")
def test_extra_corpus_adds_items_and_refuses_a_duplicate_name(
    pytester: pytest.Pytester, store: str
) -> None:
    data = json.loads((CORPUS / "memory" / "healthz_is_open_and_says_ok.json").read_text())
    data["name"] = "our healthz stays open"
    data["clauses"] = ["MEM-WIRE.8"]
    data["steps"][1]["clauses"] = ["MEM-WIRE.4", "MEM-WIRE.8"]  # a step's own clause counts too
    pytester.mkdir("ours")
    pytester.mkdir("ours/memory")
    (pytester.path / "ours" / "memory" / "healthz_copy.json").write_text(json.dumps(data))
    items, _ = pytester.inline_genitems(
        "-p", "no:cacheprovider", "--memspec-target", store, "--memspec-corpus", "ours"
    )
    extra = [i for i in items if i.nodeid == "memspec::memory::our_healthz_stays_open"]
    assert len(extra) == 1 and len(items) == TOTAL + 1
    assert marker(extra[0], "clause").args == ("MEM-WIRE.8", "MEM-WIRE.4")

    data["name"] = "healthz_is_open_and_says_ok"
    (pytester.path / "ours" / "memory" / "healthz_copy.json").write_text(json.dumps(data))
    result = run(pytester, "--memspec-target", store, "--memspec-corpus", "ours")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: memspec: corpus: *healthz_copy.json*already used*"])


@pytest.mark.clause()
def test_the_options_are_one_run_config_read_through_the_option_schema(
    pytester: pytest.Pytester,
) -> None:
    """Every ``--memspec-*`` twin of a ``memspec run`` option that fills a RunConfig field
    fills it on ``MemspecRun.config``; the rest of the run's state sits in a few small parts."""
    from conformance.engine.config import RunConfig
    from conformance.engine.options import RUN, TARGET
    from conformance.pytest_plugin.state import RUN as RUN_KEY

    pytester.makefile(".yaml", known="- clause: MEM-WIRE.3\n  reason: known\n")
    asked = {"spec": "memory", "profile": "ci", "seed": 7, "examples": 3, "level": "reference",
             "allow_dirty": True, "expect_prune": True}  # fmt: skip
    twins = {o.field for o in (*TARGET, *RUN) if o.plugin is not None and o.field}
    assert twins == set(asked), "a twin fills a field this test does not set"
    config = pytester.parseconfigure(
        "-p", "no:cacheprovider", "--memspec-target", "http://127.0.0.1:9",
        "--memspec-spec", "memory", "--memspec-profile", "ci", "--memspec-seed", "7",
        "--memspec-examples", "3", "--memspec-level", "reference", "--memspec-allow-dirty",
        "--memspec-expect", "known.yaml", "--memspec-expect-prune",
    )  # fmt: skip
    run = config.stash[RUN_KEY]
    assert isinstance(run.config, RunConfig)
    assert {field: getattr(run.config, field) for field in asked} == asked
    assert run.config.target is not None and run.config.target.url == "http://127.0.0.1:9"
    assert run.config.expect_file == "known.yaml" and len(run.config.expectations) == 1
    assert run.profile.name == "ci" and run.profile.max_examples == 3
    assert run.results.run_ids == {run.run_id: None} and run.run_id == run.config.run_id
    assert len(vars(run)) <= 15, sorted(vars(run))


# --------------------------------------------------------------------------- running


@pytest.mark.clause("MEM-WIRE.3", "MEM-WIRE.11", "MEM-WIRE.13", "LED-WIRE.1", "LED-WIRE.7")
def test_healthy_store_passes_and_junit_xml_names_every_item(
    pytester: pytest.Pytester, store: str
) -> None:
    xml = pytester.path / "out" / "junit.xml"
    result = run(
        pytester, "--strict-markers", "--memspec-target", store, *EXAMPLES, f"--junitxml={xml}"
    )
    result.assert_outcomes(passed=TOTAL)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            f"memspec: target {store} (token: $MEMSPEC_TOKEN), spec all, profile quick, 2 runs,"
            " seed *, run id memspec-*",
            "*- memspec -*",
            "memory: wrote into * scope key(s) (* of run memspec-*)*",
            "ledger: wrote into 1 scope key(s): account:local",
        ]
    )
    cases = ET.parse(xml).getroot().iter("testcase")
    seen: dict[str, dict[str, str]] = {}
    for case in cases:
        assert case.find("failure") is None and case.find("skipped") is None
        props = {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        seen[f"{case.get('classname')}::{case.get('name')}"] = props
    assert set(seen) == {f"memspec.memory::{n}" for n in [*MEMORY, "memory-machine"]} | {
        f"memspec.ledger::{n}" for n in [*LEDGER, "ledger-machine"]
    }
    assert seen["memspec.memory::healthz_is_open_and_says_ok"]["clauses"] == " ".join(
        MEMORY["healthz_is_open_and_says_ok"]
    )
    seed = re.search(r"profile quick, 2 runs, seed (\d+),", result.stdout.str())
    assert seed is not None
    for machine in ("memspec.memory::memory-machine", "memspec.ledger::ledger-machine"):
        assert seen[machine]["seed"] == seed.group(1) and seen[machine]["profile"] == "quick"
        assert int(seen[machine]["examples"]) >= 2 and int(seen[machine]["steps"]) > 0


@pytest.mark.clause("LED-WIRE.7", "MEM-WIRE.1")
def test_a_missing_capability_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    needs_control = "test_controls_answer_their_shapes"
    assert "ledger.test_control" in _requires("ledger", needs_control)
    with start_server(token=TOKEN, test_control=False) as handle:
        result = run(
            pytester,
            "--memspec-target",
            handle.url,
            "-k",
            f"{needs_control} or healthz_is_open_and_says_ok",
            "-rs",
        )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * *corpus/ledger/test_controls_answer_their_shapes.json:1:"
            " target lacks *ledger.test_control*"
        ]
    )
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.clause("LED-WIRE.1", "MEM-WIRE.1")
def test_a_protocol_the_target_does_not_serve_is_skipped_not_fatal(
    pytester: pytest.Pytester,
) -> None:
    with start_server(token=TOKEN, with_ledger=False) as handle:
        result = run(
            pytester,
            "--memspec-target",
            handle.url,
            "-k",
            "healthz_is_open_and_says_ok or save_writes_an_active_pin_open_from_now",
            "-rs",
        )
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines(
            ["SKIPPED * *save_writes_an_active_pin_open_from_now.json:1: ledger not checked: *"]
        )
        # asked for the ledger alone, a store without it is a usage error
        alone = run(pytester, "--memspec-target", handle.url, "--memspec-spec", "ledger")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines([f"ERROR: memspec: cannot check {handle.url}: *ledger*"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.3")
def test_an_unusable_target_is_one_usage_error_before_any_item(
    pytester: pytest.Pytester, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"
    cases: list[tuple[list[str], str]] = [
        (["--memspec-target", dead], f"cannot check {dead}: cannot connect*"),
        (["--memspec-target", dead, "--memspec-spec", "memory"], "cannot check*cannot connect*"),
        (["--memspec-target", "ftp://example.org"], "not an http(s) URL*"),
        (["--memspec-target", store, "--memspec-token-env", "MEMSPEC_NO_SUCH_VAR"],
         "*MEMSPEC_NO_SUCH_VAR is not set*"),
        (["--memspec-target", store, "--memspec-examples", "0"],
         "*--memspec-examples must be at least 1"),
    ]  # fmt: skip
    for args, message in cases:
        result = run(pytester, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        errors = [ln for ln in result.stderr.lines if ln.startswith("ERROR:")]
        assert len(errors) == 1 and re.fullmatch(
            "ERROR: memspec: " + re.escape(message).replace(r"\*", ".*"), errors[0]
        ), (args, errors)
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
        assert not re.search(r"\d+ (passed|failed|skipped)", result.stdout.str())
    monkeypatch.setenv("MEMSPEC_TOKEN", "not-the-token")
    refused = run(pytester, "--memspec-target", store)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: memspec: cannot check *the token was refused*"])


# --------------------------------------------------------------------------- divergences


@dataclasses.dataclass
class BrokenStore:
    url: str
    patch: pytest.MonkeyPatch

    def heal(self) -> None:
        self.patch.undo()


@pytest.fixture
def overcounting_store() -> Iterator[BrokenStore]:
    """A store whose ``/write`` answer claims one more insert than it made (MEM-WIRE.13)."""
    original = memory_store.MemoryStore.write

    def write(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts = original(self, *args, **kwargs)
        return (
            dataclasses.replace(counts, inserted=counts.inserted + 1) if counts.inserted else counts
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory_store.MemoryStore, "write", write)
        with start_server(token=TOKEN, test_control=True) as handle:
            yield BrokenStore(handle.url, patch)


def _inserted(line: str) -> int:
    found = re.findall(r'"inserted": (\d+)', line)
    assert len(found) == 1, line
    return int(found[0])


@pytest.mark.clause("MEM-WIRE.13", "MEM-WRITE.1")
def test_a_divergence_fails_with_step_clauses_allowed_said_and_replay(
    pytester: pytest.Pytester, overcounting_store: BrokenStore
) -> None:
    url = overcounting_store.url
    xml = pytester.path / "junit.xml"
    result = run(
        pytester,
        "--memspec-target",
        url,
        "--memspec-spec",
        "memory",
        "--memspec-examples",
        "20",
        "--memspec-seed",
        "2",  # a seed whose counterexample shrinks in well under a second
        "-k",
        "write_counts_add_up or memory-machine",
        f"--junitxml={xml}",
    )
    result.assert_outcomes(failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    props = {
        c.attrib["name"]: {p.attrib["name"]: p.attrib["value"] for p in c.iter("property")}
        for c in ET.parse(xml).getroot().iter("testcase")
    }

    text = failure_text(result, "memspec memory scenario write_counts_add_up")
    lines = {ln.split(":", 1)[0].strip(): ln for ln in text.splitlines()}
    assert text.startswith("memspec memory scenario write_counts_add_up diverges at step ")
    assert "conformance/corpus/memory/write_counts_add_up.json" in lines["scenario"]
    failed = props["write_counts_add_up"]["failed_clauses"].split()
    assert failed and lines["clauses"].split(":", 1)[1].strip() == ", ".join(failed)
    assert lines["request"].split(":", 1)[1].strip().startswith("POST /write ")
    assert _inserted(lines["target said"]) == _inserted(lines["model allowed"]) + 1
    replay = pytester.path / props["write_counts_add_up"]["replay"]
    assert lines["replay file"].endswith(props["write_counts_add_up"]["replay"])
    assert (
        f"memspec replay {props['write_counts_add_up']['replay']} --target {url}"
        " --token-env MEMSPEC_TOKEN" in lines["rerun"]
    )
    recorded = load_scenario(replay)
    assert recorded.name == "write_counts_add_up"
    assert any(s.recorded is not None and s.recorded.status == 200 for s in recorded.steps)

    machine = failure_text(result, "memspec memory state machine")
    mlines = {ln.split(":", 1)[0].strip(): ln for ln in machine.splitlines()}
    assert machine.startswith("memspec memory state machine found a divergence")
    assert "seed 2" in mlines["exploration"]
    assert "reproduced on a fresh run: yes" in mlines["shrunk run"]
    assert _inserted(mlines["target said"]) == _inserted(mlines["model allowed"]) + 1
    shrunk_path = props["memory-machine"]["replay"]
    assert mlines["replay file"].endswith(shrunk_path)
    assert "--memspec-examples 20 --memspec-seed 2 -k memory-machine" in mlines["explore again"]
    shrunk = load_scenario(pytester.path / shrunk_path)
    assert shrunk.protocol == "memory" and "shrunk" in (shrunk.origin or "")
    assert 1 <= len(shrunk.steps) <= 3
    assert re.search(rf"shrunk run:\s+{len(shrunk.steps)} step", mlines["shrunk run"])
    # the replay file reproduces the divergence through the CLI, and passes on a healthy store
    cli = [sys.executable, "-m", "conformance.cli", "replay", str(pytester.path / shrunk_path)]
    broken = subprocess.run(
        [*cli, "--target", url, "--token-env", "MEMSPEC_TOKEN"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert broken.returncode == 1, broken.stdout + broken.stderr
    overcounting_store.heal()
    with start_server(token=TOKEN) as healthy:
        fine = subprocess.run(
            [*cli, "--target", healthy.url, "--token-env", "MEMSPEC_TOKEN"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert fine.returncode == 0, fine.stdout + fine.stderr


@pytest.mark.clause("MEM-WIRE.13")
def test_known_divergences_xfail_and_stale_entries_are_named(
    pytester: pytest.Pytester, overcounting_store: BrokenStore
) -> None:
    url = overcounting_store.url
    select = (
        "write_counts_add_up or dedup_bumps_instead_of_inserting or healthz_is_open_and_says_ok"
    )
    xml = pytester.path / "first.xml"
    first = run(
        pytester,
        "--memspec-target",
        url,
        "--memspec-spec",
        "memory",
        "-k",
        select,
        f"--junitxml={xml}",
    )
    first.assert_outcomes(passed=1, failed=2)
    failed = {
        c.attrib["name"]: p.attrib["value"]
        for c in ET.parse(xml).getroot().iter("testcase")
        for p in c.iter("property")
        if p.get("name") == "failed_clauses"
    }
    clause = failed["write_counts_add_up"].split()[0]
    pytester.makefile(
        ".yaml",
        known=f"""
        - clause: {clause}
          reason: our counter is off by one (OPS-1)
        - scenario: dedup_bumps_instead_of_inserting
          reason: dedup lands in v2
        - scenario: healthz_is_open_and_says_ok
          reason: fixed long ago
        - clause: LED-CRED.1
          reason: not this run
        """,
    )
    second = run(
        pytester, "--memspec-target", url, "--memspec-spec", "memory", "-k", select,
        "--memspec-expect", "known.yaml", "-rxX",
    )  # fmt: skip
    second.assert_outcomes(xfailed=2, xpassed=1)
    assert second.ret == pytest.ExitCode.OK
    second.stdout.fnmatch_lines(
        [
            f"XFAIL *write_counts_add_up* - expected divergence (clause {clause}):"
            " our counter is off by one (OPS-1)",
            "XPASS *healthz_is_open_and_says_ok* expected: fixed long ago",
        ],
        consecutive=False,
    )
    out = second.stdout.str()
    assert "expectation scenario healthz_is_open_and_says_ok matched no failure" in out
    assert "expectation clause LED-CRED.1 matched no failure" in out
    assert "expectation scenario dedup_bumps_instead_of_inserting matched no failure" not in out
    assert f"expectation clause {clause} matched no failure" not in out


# --------------------------------------------------------------------------- xdist


@pytest.mark.clause("MEM-WIRE.9", "LED-REC.5", "LED-WIRE.7")
def test_xdist_workers_write_their_own_scopes_and_the_ledger_stays_on_one(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytest.importorskip("xdist")
    log_path = tmp_path / "access.log"
    with (
        log_path.open("w", encoding="utf-8") as log,
        start_server(token=TOKEN, test_control=True, access_log=log) as handle,
    ):
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:schemathesis", "-n", "2", "-v",
            "--memspec-target", handle.url, *EXAMPLES,
            timeout=120,
        )  # fmt: skip
    assert TOKEN not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=TOTAL)
    out = result.stdout.str()
    ran = re.findall(r"\[(gw\d+)\] \[ *\d+%\] PASSED memspec::(\w+)::(\S+)", out)
    assert len(ran) == TOTAL
    ledger_workers = {w for w, proto, _ in ran if proto == "ledger"}
    assert len(ledger_workers) == 1, ledger_workers
    assert all(name.endswith("@memspec-ledger") for _, proto, name in ran if proto == "ledger")
    base = re.search(r"run id (memspec-[0-9a-f]{8})<worker id>", out)
    assert base, out
    run_ids = re.search(r"run id\(s\): (.*)", out)
    assert run_ids and set(run_ids.group(1).split(", ")) == {
        base.group(1),  # the controller (it only probes)
        f"{base.group(1)}gw0",
        f"{base.group(1)}gw1",
    }
    # the store's own log: every memory scope key carries the run id of the process that sent
    # it — a worker's own, except the controller's probe before the workers start
    entries = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    keys = {e["scopeKey"] for e in entries if e.get("path") == "/write" and "scopeKey" in e}
    owners: dict[str | None, int] = {}
    for key in keys:
        # any suffix after the run id and the scenario's number: some keys differ in one
        # character (a trailing ':', another letter case, another normalization)
        m = re.fullmatch(rf"org:{base.group(1)}(gw[01])?-(\d+)-\S+", key)
        assert m, key
        assert m.group(1) or m.group(2) == "0", key
        owners[m.group(1)] = owners.get(m.group(1), 0) + 1
    memory_workers = {w for w, proto, _ in ran if proto == "memory"}
    assert {w for w in owners if w} == memory_workers
    assert sum(owners.values()) > len(MEMORY) // 2


@pytest.mark.clause("LED-WIRE.7")
def test_xdist_modes_that_would_split_the_ledger_are_refused(
    pytester: pytest.Pytester, store: str
) -> None:
    pytest.importorskip("xdist")
    for dist in ("each", "worksteal"):
        result = run(pytester, "-n", "2", "--dist", dist, "--memspec-target", store)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [f"ERROR: memspec: --dist {dist} would run the ledger checks on several workers*"]
        )
    # without the ledger, every worker may run every memory item under its own run id
    fine = run(
        pytester, "-n", "2", "--dist", "each", "--memspec-target", store,
        "--memspec-spec", "memory", "--collect-only", "-q",
    )  # fmt: skip
    assert fine.ret == pytest.ExitCode.OK


# --------------------------------------------------------------------------- inert


@pytest.mark.clause("MEM-WIRE.1")
def test_without_a_target_the_plugin_adds_nothing_and_imports_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_alone():\n    pass\n")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    assert not re.search(r"^memspec|memspec::", result.stdout.str(), re.M)
    probe = (
        "import sys, conformance.pytest_plugin as p\n"
        "heavy = {'conformance', 'reference', 'httpx', 'pydantic', 'hypothesis', 'yaml'}\n"
        "parts = 'conformance.pytest_plugin.'  # the plugin's own modules\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " and not m.startswith(parts)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert loaded.stdout.strip() == "['conformance', 'conformance.pytest_plugin']", loaded.stderr
    assert pytest_plugin.PROFILES == tuple(PROFILES), "the --memspec-profile choices drift"
    helped = run(pytester, "--help")
    helped.stdout.fnmatch_lines(["*--memspec-target=URL*", "*--memspec-spec=*"])


def _requires(protocol: str, name: str) -> set[str]:
    ledger_requires = conformance.drivers.ledger.steps.infer_requires
    memory_requires = conformance.drivers.memory.steps.infer_requires
    scenario = load_scenario(CORPUS / protocol / f"{name}.json")
    return (ledger_requires if protocol == "ledger" else memory_requires)(scenario)


@pytest.mark.clause("MEM-WIRE.4")
def test_a_deviation_passes_with_a_property_unless_the_level_is_reference(
    pytester: pytest.Pytester,
) -> None:
    """A store answering another applicable fence first (the order is the reference Worker's,
    MEM-WIRE.4): the item passes and carries a ``deviation`` property; at ``--memspec-level
    reference`` it fails."""
    from conformance.embedded.catalogue import Quirks

    xml = pytester.path / "junit.xml"
    with start_server(token=TOKEN, quirks=Quirks(frozenset({"mem-auth-before-method"}))) as h:
        args = ("--memspec-target", h.url, "--memspec-spec", "memory", "-k",
                "checks_run_in_a_fixed_order")  # fmt: skip
        result = run(pytester, *args, f"--junitxml={xml}")
        result.assert_outcomes(passed=1)
        case = next(ET.parse(xml).getroot().iter("testcase"))
        props = {p.get("name"): p.get("value") or "" for p in case.iter("property")}
        assert "MEM-WIRE.4" in props["deviation"] and props["memspec_verdict"] == "deviate"
        result = run(pytester, *args, "--memspec-level", "reference")
        result.assert_outcomes(failed=1)
    text = failure_text(result, "memspec memory scenario checks_run_in_a_fixed_order")
    assert "differs from the reference implementation" in text
