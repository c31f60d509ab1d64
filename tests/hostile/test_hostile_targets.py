"""memspec against hostile targets: whatever a target does, the run ends in time, within a memory
bound, with exit 1 or 2, no traceback, a complete strict-JSON report, and the token nowhere.

All modes run in one subprocess (``run_modes.py``: one interpreter start for all of them, its
peak RSS its own); each mode is then checked by its own test.  The hostile servers and the real
bundled store behind them run here, in the test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hostile_server import MODES, HostileServer, token_leaks

from conformance.commands.run import start_bundled_store

HERE = Path(__file__).resolve().parent
#: A token with a '/' (PHP's json_encode writes it "\/") and mixed case.
TOKEN = "hostile/Tok3n-Zq9/xYw2"
TIMEOUT_S = 0.6
#: What one mode may take: the probe, three deadlines before the target counts as gone, the
#: corpus and two short machine runs.  Each run must end within twice this.
TIME_BOUND_S = 15.0
PEAK_RSS_MB = 256
EXPECTED_EXIT = {"never-answers": {2}, "dies-after-probe": {1}}


def _strict(text: str) -> Any:
    def bad(name: str) -> Any:
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=bad)


def run_all(
    base: Path,
    modes: list[str] | None = None,
    timeout_s: float = TIMEOUT_S,
    examples: int | None = 1,
    profile: str = "quick",
    one_process_each: bool = False,
) -> dict[str, dict[str, Any]]:
    """Every mode against its hostile server, all in one subprocess; results by mode."""
    store = start_bundled_store(TOKEN)
    servers = []
    plan = []
    try:
        for mode in modes or list(MODES):
            port = int(store.url.rsplit(":", 1)[1])
            srv = HostileServer(mode, port, TOKEN)
            servers.append(srv)
            plan.append(
                {
                    "mode": mode,
                    "report": str(base / mode),
                    "argv": [
                        "run",
                        "--target",
                        srv.url,
                        "--token-env",
                        "HOSTILE_TOKEN",
                        "--spec",
                        "memory",
                        "--profile",
                        profile,
                        *(["--examples", str(examples)] if examples else []),
                        "--timeout",
                        str(timeout_s),
                        "--report",
                        str(base / mode),
                        "--quiet",
                    ],
                }
            )
        # Two interpreters at a time (each one's peak RSS is its own): half the modes each,
        # or (``one_process_each``, the benchmark) one interpreter per mode.
        groups = [[p] for p in plan] if one_process_each else [plan[0::2], plan[1::2]]
        env = {**os.environ, "HOSTILE_TOKEN": TOKEN}
        env.pop("MEMSPEC_DEBUG", None)
        results: list[dict[str, Any]] = []
        stderrs: list[str] = []
        for pair in range(0, len(groups), 2):
            procs = []
            for i in range(pair, min(pair + 2, len(groups))):
                (base / f"plan{i}.json").write_text(json.dumps(groups[i]))
                cmd = [sys.executable, str(HERE / "run_modes.py")]
                cmd += [str(base / f"plan{i}.json"), str(base / f"r{i}.json")]
                procs.append((i, subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)))
            for i, proc in procs:
                limit = 2 * TIME_BOUND_S * len(groups[i]) + 60
                _, err = proc.communicate(timeout=limit if not one_process_each else 1800)
                assert proc.returncode == 0, err[-2000:]
                stderrs.append(err)
                results += json.loads((base / f"r{i}.json").read_text())
        plan = [p for g in groups for p in g]
    finally:
        for srv in servers:
            srv.stop()
        store.stop()
    out = {}
    for item, r in zip(plan, results, strict=True):
        r["report_dir"] = item["report"]
        r["process_stderr"] = "\n".join(stderrs)
        out[r["mode"]] = r
    return out


def _every_output(r: dict[str, Any]) -> dict[str, str]:
    texts = {"stdout": r["stdout"], "stderr": r["stderr"], "process stderr": r["process_stderr"]}
    report_dir = Path(r["report_dir"])
    if report_dir.is_dir():
        for f in sorted(report_dir.rglob("*")):
            if f.is_file():
                texts[str(f.relative_to(report_dir))] = f.read_text(encoding="utf-8")
    return texts


def check_mode(mode: str, r: dict[str, Any]) -> list[str]:
    """Everything wrong with one mode's run (empty: it behaved)."""
    problems = []
    if r["crashed"]:
        problems.append(f"raised out of the CLI: {r['crashed'][-800:]}")
    if r["exit"] not in EXPECTED_EXIT.get(mode, {1}):
        problems.append(f"exit {r['exit']}: {r['stderr'][-300:]}")
    if r["wall_s"] > 2 * TIME_BOUND_S:
        problems.append(f"took {r['wall_s']}s (bound {TIME_BOUND_S}s)")
    if r["peak_rss_mb"] > PEAK_RSS_MB:
        problems.append(f"peak RSS {r['peak_rss_mb']} MB")
    outputs = _every_output(r)
    for name, text in outputs.items():
        if "Traceback" in text:
            problems.append(f"a traceback in {name}: {text[-600:]}")
        if token_leaks(TOKEN, text):
            problems.append(f"the token in {name} ({', '.join(token_leaks(TOKEN, text))})")
    if r["exit"] == 2:
        if len(r["stderr"].strip().splitlines()) != 1:
            problems.append(f"exit 2 without a one-line message: {r['stderr'][-300:]}")
        return problems
    if not {"report.json", "junit.xml", "report.html"} <= set(outputs):
        return [*problems, f"report files missing: {sorted(outputs)}"]
    try:
        data = _strict(outputs["report.json"])
        for name, text in outputs.items():
            if name.endswith(".json"):
                _strict(text)
    except ValueError as exc:
        return [*problems, f"not strict JSON: {exc}"]
    if data["exit_code"] != 1 or data["summary"]["unexpected"] < 1:
        problems.append("report does not say NOT CONFORMANT")
    if "NOT CONFORMANT" not in r["stdout"]:
        problems.append("stdout does not end with the verdict")
    ET.fromstring(outputs["junit.xml"])  # well-formed XML
    if mode == "html" and "target said:  200 (text/html) '<html>" not in r["stdout"]:
        problems.append("the HTML answer is not shown as it came")
    return problems


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.8", "MEM-WIRE.3")
def test_hostile_targets_get_a_verdict_in_time_and_never_the_token(tmp_path: Path) -> None:
    """Every mode of the hostile server: exit 1 (2 when nothing answers), within twice its
    time bound, peak RSS <= 256 MB, no traceback, the token in no stream and no file, a
    complete strict-JSON report and well-formed junit.xml."""
    runs = run_all(tmp_path)
    problems = {m: p for m, r in runs.items() if (p := check_mode(m, r))}
    assert not problems, json.dumps(problems, indent=1)[:6000]


def test_the_hostile_checks_fail_on_a_leak() -> None:
    """The search the tests above rely on finds the token in each form a target echoes."""
    assert token_leaks(TOKEN, f"x {TOKEN} y")
    assert token_leaks(TOKEN, json.dumps({"a": TOKEN}).replace("/", "\\/"))
    assert token_leaks(TOKEN, "".join(f"\\u{ord(c):04X}" for c in TOKEN))
    assert not token_leaks(TOKEN, "[token] and nothing else")
