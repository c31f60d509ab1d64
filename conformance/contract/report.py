"""The contract's report: ``contract.json``, replay files, the printed summary, and the
findings as ``memspec run`` records and results."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from conformance.contract.client import answer_headers, framing, sent_headers, unanswered
from conformance.contract.model import (
    FORMAT,
    REPLAY_DIR,
    REPLAY_FORMAT,
    REPORT_FILE,
    FindingRecord,
    Run,
)
from conformance.errors import UsageError
from conformance.vocabulary import TargetConfig


def build_report(
    run: Run,
    config: TargetConfig,
    protocols: list[str],
    profile: str,
    per_op: int,
    seed: int | None,
    duration: float,
) -> dict[str, Any]:
    by_clause: dict[str, int] = {}
    for f in run.findings:
        by_clause[f.clause] = by_clause.get(f.clause, 0) + 1
    data = {
        "format": FORMAT,
        "target": config.public(),
        "options": {
            "protocols": protocols,
            "profile": profile,
            "examples_per_operation": per_op,
            "seed": seed,
        },
        "requests": run.http.sent,
        "duration_s": round(duration, 3),
        "operations": run.operations,
        "findings": [asdict(f) for f in run.findings],
        "by_clause": dict(sorted(by_clause.items())),
        "notes": run.notes,
        "exit_code": 1 if run.findings else 0,
    }
    clean: dict[str, Any] = run.scrub.deep(data)
    return clean


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def write_report(run: Run, data: dict[str, Any], report_dir: Path) -> None:
    """``contract.json`` and one replay file per finding (strict JSON, the token scrubbed)."""
    if report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"--report {report_dir}: exists and is not a directory")
    replays = report_dir / REPLAY_DIR
    replays.mkdir(parents=True, exist_ok=True)
    for old in replays.glob("*.json"):
        old.unlink()
    for i, (finding, entry) in enumerate(zip(run.findings, data["findings"], strict=True), 1):
        ex = run.exchanges[id(finding)]
        name = f"{i:03d}-{finding.clause}-{_slug(finding.check)}.json"
        body = ex.request_bytes
        how, declared_length = framing(ex)
        try:
            body_text: str | None = body.decode("utf-8")
        except UnicodeDecodeError:
            body_text = None
        replay = {
            "format": REPLAY_FORMAT,
            "clause": finding.clause,
            "title": finding.title,
            "detail": finding.detail,
            "curl": finding.curl,
            "request": {
                "method": ex.method,
                "path": ex.path,
                "headers": sent_headers(ex),
                "framing": how,
                "declared_length": declared_length,
                "body": body_text if body_text is not None and len(body) <= 65536 else None,
                "body_base64": None
                if body_text is not None and len(body) <= 65536
                else base64.b64encode(body[:65536]).decode(),
                "body_length": len(body),
            },
            "answer": {
                "status": ex.status,
                "error": unanswered(ex),
                "headers": answer_headers(ex),
                "body_excerpt": ex.answer[:2048].decode("utf-8", "replace"),
            },
        }
        _write_json(replays / name, run.scrub.deep(replay))
        entry["replay"] = f"{REPLAY_DIR}/{name}"
    _write_json(report_dir / REPORT_FILE, data)


def _write_json(path: Path, value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=True, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def print_summary(data: dict[str, Any], out: Any, report_dir: Path | None) -> None:
    findings = data["findings"]
    label = data["target"].get("label", "")
    print(f"memspec contract — {label} — {', '.join(data['options']['protocols'])}", file=out)
    print(
        f"{data['requests']} requests, {len(data['operations'])} operations,"
        f" profile {data['options']['profile']}, {data['duration_s']:.1f} s",
        file=out,
    )
    for note in data["notes"]:
        print(f"note: {note}", file=out)
    if not findings:
        print("no findings: every answer matched the contract", file=out)
    for f in findings:
        times = f" (×{f['count']})" if f["count"] > 1 else ""
        print(f"FINDING {f['clause']:<12} {f['title']}{times}", file=out)
        print(f"    {f['detail'][:300]}", file=out)
        print(f"    {f['curl'][:1000]}", file=out)
    if report_dir is not None:
        print(f"report: {report_dir / REPORT_FILE}", file=out)
    verdict = "PASS" if not findings else f"FAIL: {len(findings)} finding(s)"
    print(f"contract: {verdict}", file=out)


# --------------------------------------------------------------------------- for the run report


def finding_records(report: dict[str, Any] | str | Path) -> list[FindingRecord]:
    """The findings of a contract report (its JSON, or its directory / ``contract.json`` path)
    as ``(clause, title, detail, curl)`` records, for joining into the ``memspec run`` report."""
    if isinstance(report, dict):
        data = report
    else:
        path = Path(report)
        if path.is_dir():
            path = path / REPORT_FILE
        data = json.loads(path.read_text(encoding="utf-8"))
    return [
        FindingRecord(f["clause"], f["title"], f["detail"], f["curl"])
        for f in data.get("findings", [])
    ]


def iter_replays(report_dir: Path) -> Iterator[dict[str, Any]]:
    for path in sorted((report_dir / REPLAY_DIR).glob("*.json")):
        yield json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the run report

#: The clauses the contract checks, per protocol: a protocol it checked with no finding passes
#: them in the ``memspec run`` report (size fence, auth, routing, validation, answer shapes).
CONTRACT_CLAUSES: dict[str, tuple[str, ...]] = {
    "memory": (
        "MEM-WIRE.1", "MEM-WIRE.3", "MEM-WIRE.4", "MEM-WIRE.5", "MEM-WIRE.6", "MEM-WIRE.8",
        "MEM-WIRE.11", "MEM-WIRE.12", "MEM-WIRE.13", "MEM-WIRE.14", "MEM-WIRE.15",
        "MEM-WIRE.16",
    ),
    "ledger": ("LED-WIRE.1", "LED-WIRE.2", "LED-WIRE.4", "LED-WIRE.6"),
}  # fmt: skip


def as_results(data: dict[str, Any]) -> list[Any]:
    """A contract report as ``memspec run`` results of kind ``contract``: one failing result
    per finding (its clause, the finding's title and detail, and the ``curl`` line that
    reproduces it, token elided), and one passing result per checked protocol without one."""
    from conformance.runner import ScenarioResult
    from conformance.scenario import Scenario, Step
    from conformance.vocabulary import StepOutcome

    out: list[Any] = []
    for protocol in data.get("options", {}).get("protocols", []):
        found = [f for f in data.get("findings", []) if f.get("protocol") == protocol]
        if not found:
            scenario = Scenario(
                protocol=protocol,
                name=f"contract-{protocol}",
                clauses=list(CONTRACT_CLAUSES[protocol]),
                steps=[Step(op="contract", args={})],
                origin="memspec contract",
            )
            result = ScenarioResult(scenario, "pass", kind="contract")
            result.details["requests"] = data.get("requests")
            out.append(result)
            continue
        for n, f in enumerate(found, 1):
            scenario = Scenario(
                protocol=protocol,
                name=f"contract-{protocol}-{n:03d}-{_slug(f['check'])}",
                clauses=[f["clause"]],
                steps=[Step(op="contract", args={"route": f["route"], "check": f["check"]})],
                origin="memspec contract",
            )
            reason = f"{f['title']}: {f['detail']} — reproduce: {f['curl']}"
            outcome = StepOutcome(
                index=0, op="contract", verdict="diverge", clauses=(f["clause"],), reason=reason
            )
            result = ScenarioResult(
                scenario, "fail", [outcome], reason=reason, kind="contract", path=f.get("replay")
            )
            result.details["curl"] = f["curl"]  # the token is elided in every curl line
            out.append(result)
    return out
