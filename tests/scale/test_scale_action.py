"""The reusable action: ``action.yml`` maps its inputs to environment variables (the token by
environment only) and ``conformance/commands/action.py`` does the rest — run locally here end
to end against the bundled store, with a token that must appear in no output: not stdout, not
stderr, not the GITHUB_OUTPUT file, not the step summary, not the report."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.commands import action
from conformance.commands.target import start_bundled_store

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-SECRET-5a9c1e7b3f0d42-memspec"


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.mark.clause("MEM-WIRE.1", "MEM-WIRE.2")
def test_the_action_script_end_to_end_never_shows_the_token(tmp_path: Path) -> None:
    handle = start_bundled_store(TOKEN)
    gh_out, summary = tmp_path / "gh_output", tmp_path / "summary.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSPEC_", "GITHUB_"))}
    env.update(
        MEMSPEC_TARGET=handle.url,
        MEMSPEC_TOKEN=TOKEN,
        MEMSPEC_SPEC="memory",
        MEMSPEC_PROFILE="quick",
        MEMSPEC_SEED="3",
        MEMSPEC_EXAMPLES="5",
        MEMSPEC_SHARD="",
        MEMSPEC_REPORT_DIR="out/report",
        GITHUB_OUTPUT=str(gh_out),
        GITHUB_STEP_SUMMARY=str(summary),
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "conformance.commands.action"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        handle.stop()
    assert proc.returncode == 0, proc.stderr
    outputs = _outputs(gh_out)
    assert outputs["verdict"] == "conformant" and outputs["exit-code"] == "0"
    assert outputs["report-path"] == "out/report" and outputs["artifact-name"] == "memspec-report"
    report = tmp_path / "out" / "report"
    assert (report / "report.json").is_file() and (report / "junit.xml").is_file()
    assert "verdict conformant" in proc.stdout and "## memspec: conformant" in summary.read_text()
    everything = [proc.stdout, proc.stderr, gh_out.read_text(), summary.read_text()]
    everything += [p.read_text(errors="replace") for p in report.rglob("*") if p.is_file()]
    assert all(TOKEN not in text for text in everything)
    assert "token" in (report / "report.json").read_text()  # the report does say one was set


@pytest.mark.clause()
def test_verdicts_outputs_and_the_leak_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    gh_out = tmp_path / "gh_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(gh_out))
    monkeypatch.setenv("MEMSPEC_TARGET", "http://127.0.0.1:9")
    monkeypatch.setenv("MEMSPEC_TOKEN", TOKEN)
    monkeypatch.setenv("MEMSPEC_SHARD", "2/4")
    monkeypatch.setenv("MEMSPEC_REPORT_DIR", "rep")
    argv = action.build_argv()
    assert TOKEN not in " ".join(argv)  # never on a command line: by environment only
    assert argv[argv.index("--token-env") + 1] == "MEMSPEC_TOKEN"
    assert argv[argv.index("--shard") + 1] == "2/4"
    assert argv[argv.index("--level") + 1] == "seed"  # deviations pass unless asked otherwise
    monkeypatch.setenv("MEMSPEC_LEVEL", "reference")
    argv = action.build_argv()
    assert argv[argv.index("--level") + 1] == "reference"

    def fake(code: int, leak: bool = False) -> Any:
        def run(argv: list[str]) -> int:
            Path("rep").mkdir(exist_ok=True)
            (Path("rep") / "report.json").write_text('{"x": 1}')
            if leak:
                (Path("rep") / "junit.xml").write_text(f"<x>{TOKEN}</x>")
                print(f"oops {TOKEN}")
            return code

        return run

    for code, verdict in (
        (0, "conformant"),
        (1, "not-conformant"),
        (2, "error"),
        (3, "indeterminate"),
    ):
        gh_out.unlink(missing_ok=True)
        monkeypatch.setattr(action, "memspec_main", fake(code))
        assert action.main([]) == 0 and action.main(["--strict"]) == code
        assert _outputs(gh_out)["verdict"] == verdict
        assert _outputs(gh_out)["artifact-name"] == "memspec-report-shard-2-of-4"
    gh_out.unlink()
    capsys.readouterr()
    monkeypatch.setattr(action, "memspec_main", fake(0, leak=True))
    assert action.main(["--strict"]) == 2
    out, err = capsys.readouterr()
    assert TOKEN not in out + err and "withheld" in err
    assert _outputs(gh_out)["verdict"] == "error"
    assert not (tmp_path / "rep" / "junit.xml").exists()


@pytest.mark.clause()
def test_action_yml_passes_every_input_to_the_script_and_the_token_by_environment_only() -> None:
    spec = yaml.safe_load((ROOT / "action.yml").read_text())
    assert spec["runs"]["using"] == "composite"
    assert set(spec["outputs"]) == {"verdict", "report-path"}
    steps = spec["runs"]["steps"]
    run = next(s for s in steps if s.get("id") == "run")
    assert run["run"].strip() == "python -m conformance.commands.action"
    script = (ROOT / "conformance" / "commands" / "action.py").read_text()
    names = (
        "target",
        "token",
        "spec",
        "profile",
        "level",
        "expect",
        "shard",
        "seed",
        "examples",
        "report-dir",
    )
    assert set(spec["inputs"]) == {*names, "fail-on-divergence", "python-version"}
    for name in names:
        assert name in spec["inputs"]
        var = next(k for k, v in run["env"].items() if v == f"${{{{ inputs.{name} }}}}")
        assert var in script, f"input {name} -> ${var} is never read by the script"
    for step in steps:  # no command line ever sees the token
        assert "inputs.token" not in str(step.get("run", "")) + str(step.get("with", ""))
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert re.search(r"always\(\)", upload["if"])
    assert upload["with"]["path"] == "${{ steps.run.outputs.report-path }}"
