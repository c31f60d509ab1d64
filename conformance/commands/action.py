"""The logic of the reusable GitHub Action (``action.yml`` at the repo root), runnable anywhere.

``python -m conformance.commands.action`` reads the action's inputs from the environment —
the composite action maps each input to one variable, and the token travels *only* that way,
never on a command line::

    MEMSPEC_TARGET     base URL of the store (empty: the bundled store, for a dry run)
    MEMSPEC_TOKEN      bearer token (from a secret); handed to memspec as --token-env MEMSPEC_TOKEN
    MEMSPEC_SPEC       memory | ledger | all            (default all)
    MEMSPEC_PROFILE    quick | ci | deep                (default ci)
    MEMSPEC_EXPECT     expectations file                (optional)
    MEMSPEC_LEVEL      seed | reference                 (default seed: deviations pass)
    MEMSPEC_SHARD      K/N                              (optional)
    MEMSPEC_SEED       machine seed                     (optional)
    MEMSPEC_EXAMPLES   number of state-machine runs     (optional; default: the profile's)
    MEMSPEC_REPORT_DIR report directory                 (default memspec-report)
    GITHUB_OUTPUT      file the outputs are appended to (verdict, report-path, exit-code,
                       artifact-name); GITHUB_STEP_SUMMARY gets a short markdown summary

It runs ``memspec run`` in this process and always exits 0 once the outputs are written — the
action's last step turns the verdict into the job's result, after the report was uploaded.
``--strict`` exits with memspec's own code instead (for local use).

The token never reaches any output: memspec itself never prints or stores it, and this script
checks that — if the token's text appears in the report directory or in what memspec printed,
that output is withheld and the verdict is ``error``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

from conformance.cli import main as memspec_main

VERDICTS = {0: "conformant", 1: "not-conformant", 3: "indeterminate"}
TOKEN_VAR = "MEMSPEC_TOKEN"


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def build_argv() -> list[str]:
    argv = ["run", "--quiet", "--spec", _env("MEMSPEC_SPEC", "all")]
    argv += ["--profile", _env("MEMSPEC_PROFILE", "ci")]
    argv += ["--level", _env("MEMSPEC_LEVEL", "seed")]
    argv += ["--report", _env("MEMSPEC_REPORT_DIR", "memspec-report")]
    target = _env("MEMSPEC_TARGET")
    if target:
        argv += ["--target", target]
        if _env(TOKEN_VAR):
            argv += ["--token-env", TOKEN_VAR]
    for var, flag in (
        ("MEMSPEC_EXPECT", "--expect"),
        ("MEMSPEC_SHARD", "--shard"),
        ("MEMSPEC_SEED", "--seed"),
        ("MEMSPEC_EXAMPLES", "--examples"),
    ):
        if _env(var):
            argv += [flag, _env(var)]
    return argv


def _leaks(token: str, texts: list[str], report_dir: Path) -> list[str]:
    if len(token) < 4:  # too short to search for meaningfully; memspec never prints it anyway
        return []
    where = [f"output {i}" for i, t in enumerate(texts) if token in t]
    if report_dir.is_dir():
        for p in sorted(report_dir.rglob("*")):
            if p.is_file() and token.encode() in p.read_bytes():
                where.append(str(p))
    return where


def _write_outputs(outputs: dict[str, str]) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            for k, v in outputs.items():
                f.write(f"{k}={v}\n")


def _write_summary(verdict: str, report_dir: Path) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    import json

    lines = [f"## memspec: {verdict}", ""]
    report = report_dir / "report.json"
    if report.is_file():
        data = json.loads(report.read_text(encoding="utf-8"))
        s = data["summary"]
        lines.append(
            f"memspec {data['memspec_version']} (spec {data['spec_revision']}, corpus"
            f" {data['corpus_revision']}) · run `{data['run_id']}` · {s['steps']} steps ·"
            f" {s['divergences']} divergence(s), {s['unexpected']} unexpected"
        )
        for d in data["divergences"][:20]:
            lines.append(f"- `{d['name']}` step {d['step']} ({d['op']}): {', '.join(d['clauses'])}")
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    strict = "--strict" in (argv if argv is not None else sys.argv[1:])
    token = os.environ.get(TOKEN_VAR, "").strip()
    report_dir = Path(_env("MEMSPEC_REPORT_DIR", "memspec-report"))
    shard = _env("MEMSPEC_SHARD")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = memspec_main(build_argv())
        except SystemExit as exc:  # argparse: a bad input value
            code = exc.code if isinstance(exc.code, int) else 2
    leaks = _leaks(token, [out.getvalue(), err.getvalue()], report_dir)
    if leaks:
        code = 2
        print(
            "memspec action: the token appeared in memspec's output or report; withheld"
            f" ({len(leaks)} place(s))",
            file=sys.stderr,
        )
        for p in leaks:
            if Path(p).is_file():
                Path(p).unlink()
    else:
        sys.stdout.write(out.getvalue())
        sys.stderr.write(err.getvalue())
    verdict = VERDICTS.get(code, "error")
    artifact = "memspec-report" + (
        "-shard-" + re.sub(r"[^0-9]+", "-of-", shard, count=1) if shard else ""
    )
    outputs = {
        "verdict": verdict,
        "exit-code": str(code),
        "report-path": str(report_dir) if (report_dir / "report.json").is_file() else "",
        "artifact-name": artifact,
    }
    _write_outputs(outputs)
    _write_summary(verdict, report_dir)
    print(
        f"memspec action: verdict {verdict} (exit {code}); report: {outputs['report-path'] or '-'}"
    )
    return code if strict else 0


if __name__ == "__main__":
    sys.exit(main())
