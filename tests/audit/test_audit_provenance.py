"""Provenance: ``audit memory-on --store`` proves every bullet came from the store's answers by
the read rule.  End to end against the bundled store (capture + recording proxy + the sample
client in every mode), and the read rule's conditions one by one on hand-made store records."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.audit import sample_client
from conformance.audit.capture import CaptureServer, read_capture, start_capture
from conformance.audit.memory_on_block import BlockInfo
from conformance.audit.provenance import check_provenance, reads_by_window, reads_for
from conformance.audit.store_proxy import StoreCall, StoreProxy, StoreRecord, read_store_record
from conformance.cli import main
from conformance.embedded.server import start_server
from reference.memory.containment import render_bullet
from reference.memory.records import MemoryRecord
from reference.memory.wire.codec import record_to_wire

TOKEN = "memspec-provenance-token-0123456789"
STORE_MODES = ("baseline", "off", "on", "on-folded", "leaky-cross-scope", "leaky-late-escape")


def _counter(cap: CaptureServer) -> Callable[[], int]:
    return lambda: cap.count


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, Path]]]:
    """Each mode through a capture and its store proxy, in front of one bundled store."""
    root = tmp_path_factory.mktemp("provenance")
    out: dict[str, tuple[Path, Path]] = {}
    with start_server(token=TOKEN) as store, httpx.Client(timeout=10) as http:
        sample_client.seed_store(http, store.url, TOKEN)
        for mode in STORE_MODES:
            cap_path, store_path = root / f"{mode}.jsonl", root / f"{mode}.store.jsonl"
            with (
                start_capture(cap_path) as cap,
                StoreProxy(store_path, store.url, _counter(cap)) as proxy,
            ):
                statuses = sample_client.send(cap.url, mode, http, store=(proxy.url, TOKEN))
            assert statuses == [200] * len(sample_client.conversation())
            out[mode] = (cap_path, store_path)
        yield out


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["audit", *argv])
    return code, capsys.readouterr().out


@pytest.mark.clause("MEM-FLAG.3", "MEM-INJECT.2")
def test_memory_off_stays_identical_with_its_store_traffic_recorded(
    recorded: dict[str, tuple[Path, Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    (base, _), (off, off_store) = recorded["baseline"], recorded["off"]
    code, out = _run(capsys, "diff", str(base), str(off))
    assert code == 0 and "verdict: IDENTICAL (7 requests, byte for byte)" in out
    assert read_store_record(off_store).calls == ()  # memory off never reaches the store
    code, out = _run(capsys, "memory-on", str(base), str(off), "--store", str(off_store))
    assert code == 0 and "0 with one advisory block, 7 unchanged" in out


@pytest.mark.clause("MEM-READ.1", "MEM-READ.2", "MEM-READ.5", "MEM-INJECT.5", "MEM-BUDGET.3")
@pytest.mark.parametrize("mode", ["on", "on-folded"])
def test_memory_on_passes_with_every_bullet_traced(
    recorded: dict[str, tuple[Path, Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    mode: str,
) -> None:
    base, (on, on_store) = recorded["baseline"][0], recorded[mode]
    report = tmp_path / "r.json"
    code, out = _run(
        capsys, "memory-on", str(base), str(on), "--store", str(on_store), "--report", str(report)
    )
    assert code == 0, out
    assert "verdict: PASS (7 requests: 6 with one advisory block, 1 unchanged)" in out
    assert out.count("every bullet traced to the store's answers") == 6
    assert f"provenance: checked against {on_store}" in out
    rep = json.loads(report.read_text())
    assert [i["role"] for i in rep["inputs"]] == ["baseline", "with-memory", "store"]
    assert "MEM-READ.5" in rep["clauses"]
    calls = read_store_record(on_store).calls
    assert {c.route for c in calls} == {"retrieve"} and len(calls) == 14  # org + user, 7 turns
    if mode == "on-folded":
        assert "folded onto the front of $.system[0].text" in out


@pytest.mark.clause("MEM-READ.5", "MEM-READ.3", "MEM-CONTAIN.2")
@pytest.mark.parametrize(
    ("mode", "clause", "needle"),
    [
        ("leaky-cross-scope", "MEM-READ.5", "of scope 'user:slack:U0999', not one of"),
        (
            "leaky-late-escape",
            "MEM-CONTAIN.2",
            "text sanitized wrongly: from character 13 it shows 'eploy note &amp;lt;",
        ),
    ],
)
def test_the_two_well_formed_leaks_fail_only_with_the_store_record(
    recorded: dict[str, tuple[Path, Path]],
    capsys: pytest.CaptureFixture[str],
    mode: str,
    clause: str,
    needle: str,
) -> None:
    base, (leaky, leaky_store) = recorded["baseline"][0], recorded[mode]
    code, out = _run(capsys, "memory-on", str(base), str(leaky))
    assert code == 0, out  # the form alone cannot tell
    assert "provenance: not checked: no store record was given" in out
    code, out = _run(capsys, "memory-on", str(base), str(leaky), "--store", str(leaky_store))
    assert code == 1 and "verdict: FAIL" in out
    assert f"{clause}: bullet " in out and needle in out


@pytest.mark.clause("MEM-READ.2")
def test_the_cli_capture_runs_the_store_proxy(tmp_path: Path) -> None:
    out = tmp_path / "on.jsonl"
    with start_server(token=TOKEN) as store:
        proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "audit", "capture", "--listen",
             "127.0.0.1:0", "--out", str(out), "--max-requests", "1", "--quiet",
             "--store-upstream", store.url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            lines = [proc.stdout.readline() for _ in range(4)]
            url = lines[0].split("listening on ", 1)[1].split(" ", 1)[0]
            proxy = lines[3].split("base URL ", 1)[1].split(" ", 1)[0]
            with httpx.Client() as http:
                r = http.post(
                    proxy + "/retrieve",
                    json={"scopeKey": "org:acme", "query": "deploy", "limit": 8},
                    headers={"authorization": f"Bearer {TOKEN}"},
                )
                assert r.status_code == 200 and r.json() == {"records": []}
                http.post(url + "/v1/messages", json={"model": "m"})
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
        rest = proc.stdout.read()
    assert "1 store call(s) in" in rest
    calls = read_store_record(tmp_path / "on.store.jsonl").calls
    assert [(c.route, c.after_request, c.status) for c in calls] == [("retrieve", 0, 200)]
    assert len(read_capture(out).requests) == 1


# ---------------------------------------------------------------------------------------------
# the read rule, condition by condition, on hand-made store records

ORG, USER = "org:acme", "user:slack:U0123"
T0 = 1_764_000_000_000
STAMP = "2025-11-24T16:00:00.000Z"  # T0 as the proxy writes it


def _rec(scope: str, n: int, text: str, used: int = T0) -> MemoryRecord:
    return MemoryRecord(
        id=f"mem:{scope}:{n}",
        scope_key=scope,
        kind="fact",
        text=text,
        keywords=(),
        source_thread_key=f"t/{n}",
        source_run_id=None,
        created_at=used - 1000,
        last_used_at=used,
        use_count=1,
        confidence=None,
        supersedes=None,
        status="active",
    )


def _store(answers: dict[str, list[MemoryRecord]], query: str = "deploy", limit: int = 8) -> Any:
    calls = []
    for i, (scope, recs) in enumerate(answers.items()):
        body = {"scopeKey": scope, "query": query, "limit": limit}
        calls.append(
            StoreCall(
                i,
                0,
                STAMP,
                "POST",
                "/retrieve",
                "retrieve",
                (),
                json.dumps(body),
                200,
                json.dumps({"records": [record_to_wire(r) for r in recs]}),
                "upstream",
                None,
                1,
            )  # fmt: skip
        )
    return reads_for(0, reads_by_window(StoreRecord(Path("s"), "0" * 64, 0, tuple(calls))))


def _block(records: list[MemoryRecord], resource: str = f"{ORG} + {USER}") -> BlockInfo:
    bullets = tuple(render_bullet(r) for r in records)
    return BlockInfo("$.system", resource, bullets, 0, "")


def _judge(info: BlockInfo | None, reads: Any, limit: int = 8, max_tokens: int = 800) -> set[str]:
    return {v.clause for v in check_provenance(info, reads, T0 + 500, limit, max_tokens)}


@pytest.mark.clause("MEM-READ.1", "MEM-BUDGET.1", "MEM-BUDGET.3", "MEM-READ.4")
def test_the_pool_is_the_read_rules_selection() -> None:
    strong = _rec(ORG, 1, "deploy staging now")
    weak = _rec(USER, 2, "deploy")
    none_ = _rec(ORG, 3, "unrelated words")
    reads = _store({ORG: [strong, none_], USER: [weak]}, query="deploy staging")
    assert _judge(_block([strong, weak, none_]), reads) == set()
    assert _judge(_block([weak, strong, none_]), reads) == {"MEM-READ.1"}  # out of order
    assert _judge(_block([strong, none_]), reads) == {"MEM-BUDGET.1"}  # weak skipped
    assert _judge(_block([strong]), reads) == {"MEM-BUDGET.3"}  # stopped although all fit
    assert _judge(_block([strong]), reads, limit=1) == {"MEM-READ.1"}  # asked with limit 8
    cost = len(render_bullet(strong)) // 4 + 1
    assert _judge(_block([strong]), reads, max_tokens=cost + 2) == set()  # weak does not fit
    assert _judge(None, reads) == {"MEM-BUDGET.1"}  # a pool, no block
    assert _judge(None, _store({ORG: [], USER: []})) == set()  # no pool, no block
    assert _judge(_block([strong]), []) == {"MEM-READ.2"}  # a block, no read at all


@pytest.mark.clause("MEM-READ.1")
def test_org_first_on_exact_ties_other_ties_any_order() -> None:
    org_a, user_b = _rec(ORG, 1, "deploy a"), _rec(USER, 2, "deploy b")
    reads = _store({ORG: [org_a], USER: [user_b]})
    assert _judge(_block([org_a, user_b]), reads) == set()
    assert _judge(_block([user_b, org_a]), reads) == {"MEM-READ.1"}
    org_c = _rec(ORG, 3, "deploy c")
    reads = _store({ORG: [org_a, org_c], USER: []})
    assert _judge(_block([org_c, org_a]), reads) == set()
    assert _judge(_block([org_a, org_c]), reads) == set()
    # a later use by a few ms may flip inside the read's unknown "now": either order passes
    user_late = _rec(USER, 4, "deploy d", used=T0 + 3)
    reads = _store({ORG: [org_a], USER: [user_late]})
    assert _judge(_block([org_a, user_late]), reads) == set()
    assert _judge(_block([user_late, org_a]), reads) == set()


@pytest.mark.clause("MEM-READ.2", "MEM-READ.3", "MEM-READ.5", "MEM-CONTAIN.1", "MEM-CONTAIN.2")
def test_every_bullet_is_an_own_scope_record_sanitized() -> None:
    mine = _rec(ORG, 1, "deploy <b>now</b> & then")
    theirs = _rec("user:slack:U0999", 2, "deploy secret")
    reads = _store({ORG: [mine], "user:slack:U0999": [theirs]})
    got = _judge(_block([mine, theirs], resource=ORG), reads)
    assert got == {"MEM-READ.5", "MEM-READ.3"}
    reads = _store({ORG: [mine], USER: []})
    late = "- deploy &amp;lt;b&amp;gt;now&amp;lt;/b&amp;gt; &amp; then (source: t/1)"
    info = BlockInfo("$.system", f"{ORG} + {USER}", (late,), 0, "")
    assert _judge(info, reads) == {"MEM-CONTAIN.2"}
    flat = "- deploy  &lt;b&gt;now&lt;/b&gt; &amp; then (source: t/1)"
    info = BlockInfo("$.system", f"{ORG} + {USER}", (flat,), 0, "")
    assert _judge(info, reads) == {"MEM-CONTAIN.1"}
    made_up = BlockInfo("$.system", f"{ORG} + {USER}", ("- deploy (source: t/9)",), 0, "")
    assert _judge(made_up, reads) == {"MEM-READ.2"}
    assert _judge(_block([mine], resource=ORG), reads) == {"MEM-READ.3"}  # user read, unnamed


@pytest.mark.clause("MEM-READ.5")
def test_the_sample_client_seeds_a_store_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with start_server(token=TOKEN) as store:
        monkeypatch.delenv("MEMORY_TOKEN", raising=False)
        assert sample_client.main(["-", "--store", store.url, "--seed-only"]) == 2
        monkeypatch.setenv("MEMORY_TOKEN", TOKEN)
        assert sample_client.main(["-", "--store", store.url, "--seed-only"]) == 0
        with httpx.Client() as http:
            got = http.post(
                store.url + "/list",
                json={"scopeKey": sample_client.OTHER_USER, "limit": 5},
                headers={"authorization": f"Bearer {TOKEN}"},
            ).json()
    assert [r["text"] for r in got["records"]] == [
        "Private: U0999 is on a staging deploy performance plan."
    ]
    assert "seeded 3 scopes" in capsys.readouterr().out
