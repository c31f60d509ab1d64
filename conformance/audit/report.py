"""Reports an auditor can file: one JSON document and a short Markdown rendering of it.

Both ``memspec audit diff`` and ``memspec audit memory-on`` write the same envelope: the
tool and its version, when it ran, every input's path, sha256, size and request count, the
parameters, the checks that were run, one verdict per request, and the overall verdict with
the exit code the command returned.
"""

from __future__ import annotations

import json
import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from conformance.audit.capture import Capture, CapturedRequest
from conformance.audit.diff import BodyComparison, CaptureDiff
from conformance.audit.memory_on import NOT_CHECKED, MemoryOnResult, PairVerdict
from conformance.audit.store_proxy import StoreRecord

REPORT_FORMAT = "memspec.audit.report/1"


def tool_version() -> str:
    """The installed memspec version (``unknown`` when run from a bare checkout)."""
    try:
        return metadata.version("memspec")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed in practice
        return "unknown"


def _now() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _input(role: str, cap: Capture) -> dict[str, Any]:
    return {
        "role": role,
        "path": str(cap.path),
        "sha256": cap.sha256,
        "size_bytes": cap.size,
        "requests": len(cap.requests),
    }


def _req(req: CapturedRequest | None) -> dict[str, Any] | None:
    if req is None:
        return None
    return {
        "method": req.method,
        "path": req.path,
        "body_bytes": len(req.body),
        "body_sha256": req.body_sha256,
    }


def _body(body: BodyComparison | None) -> dict[str, Any] | None:
    if body is None or body.identical:
        return None
    assert body.context_a is not None and body.context_b is not None
    return {
        "first_differing_byte": body.offset,
        "length_a": body.len_a,
        "length_b": body.len_b,
        "context_a": {"text": body.context_a.text, "hex": body.context_a.hex},
        "context_b": {"text": body.context_b.text, "hex": body.context_b.hex},
        "json_differences": [
            {"path": d.path, "kind": d.kind, "detail": d.detail} for d in body.differences
        ],
        "json_differences_truncated": body.truncated,
    }


def _envelope(command: str, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "report": REPORT_FORMAT,
        "command": command,
        "tool": {
            "name": "memspec",
            "version": tool_version(),
            "python": platform.python_version(),
        },
        "generated_at": _now(),
        "inputs": inputs,
    }


def diff_report(a: Capture, b: Capture, result: CaptureDiff) -> dict[str, Any]:
    """The report of ``memspec audit diff``."""
    checks = [
        "request counts are equal",
        "request i of A and request i of B have the same method and path",
        "request i of A and request i of B have byte-identical bodies",
    ]
    if result.headers_compared:
        checks.append(
            "request headers are equal (credentials by fingerprint; ignoring "
            + ", ".join(result.ignored_headers)
            + ")"
        )
    rep = _envelope("diff", [_input("A", a), _input("B", b)])
    rep["clauses"] = ["MEM-FLAG.3", "MEM-INJECT.2"]
    rep["parameters"] = {
        "compare_headers": result.headers_compared,
        "ignored_headers": list(result.ignored_headers),
    }
    rep["checks"] = checks
    rep["requests"] = [
        {
            "index": r.index,
            "verdict": "identical" if r.identical else "different",
            "a": _req(r.a),
            "b": _req(r.b),
            "problems": list(r.problems),
            "body_difference": _body(r.body),
        }
        for r in result.requests
    ]
    rep["summary"] = {
        "requests_a": result.count_a,
        "requests_b": result.count_b,
        "differing_requests": [r.index for r in result.differing],
    }
    rep["verdict"] = "IDENTICAL" if result.identical else "DIFFERENT"
    rep["exit_code"] = 0 if result.identical else 1
    return rep


#: The clauses ``audit memory-on`` checks.
_MEMORY_ON_CLAUSES = frozenset(
    {
        "MEM-INJECT.1",
        "MEM-INJECT.2",
        "MEM-INJECT.3",
        "MEM-INJECT.4",
        "MEM-INJECT.5",
        "MEM-CONTAIN.1",
        "MEM-CONTAIN.2",
        "MEM-CONTAIN.3",
        "MEM-CONTAIN.4",
        "MEM-BUDGET.1",
        "MEM-BUDGET.3",
        "MEM-READ.3",
        "MEM-READ.4",
        "MEM-SCOPE.1",
        "MEM-SCOPE.3",
        "MEM-SCOPE.4",
    }
)
#: What ``audit memory-on`` checks, as its report lists it.
_MEMORY_ON_CHECKS = (
    "request counts are equal; request i of each capture has the same method and path",
    "a memory-on request byte-identical to its baseline carries no block (allowed unless "
    "--require-block)",
    "every byte outside the system prompt's span is identical to the baseline (MEM-INJECT.3)",
    "a list-form system prompt: a text block inserted first, or the block folded into the "
    "first text block's text (MEM-INJECT.5); a shape only the reference rules out (extra keys "
    "on an inserted block or message, a message of its own ahead of the system message) is a "
    "deviation (MEM-INJECT.4, MEM-INJECT.5), a failure only at --level reference",
    "the system prompt is the block, then '\\n\\n' and the baseline's system text in the "
    "baseline's own bytes (MEM-INJECT.1); an added key, message or text part removes "
    "cleanly to the baseline bytes",
    "the block: exact prefix line with U+2014, fences, n+3 lines (MEM-CONTAIN.4); bullets "
    "'- <text> (source: <thread>)' with sanitized fields (MEM-CONTAIN.1, MEM-CONTAIN.2, "
    "MEM-CONTAIN.3)",
    "the prefix's scopes: namespaced keys, org present, each kind once, in org, repo, "
    "channel, user order (MEM-READ.3, MEM-SCOPE.1, MEM-SCOPE.3, MEM-SCOPE.4)",
    "the budget: bullets <= limit, estimated tokens <= max_tokens unless exactly one bullet "
    "(MEM-BUDGET.1, MEM-BUDGET.3)",
)
#: What ``audit memory-on --store`` checks besides, from the store record.
_PROVENANCE_CLAUSES = frozenset({"MEM-READ.1", "MEM-READ.2", "MEM-READ.5"})
_PROVENANCE_CHECKS = (
    "each request's reads: the /retrieve calls recorded between the previous provider request "
    "and this one, grouped by query (a window without one inherits the previous window's)",
    "the prefix names exactly the scopes the read retrieved; no read of two user scopes "
    "(MEM-READ.3, MEM-SCOPE.3)",
    "every bullet is render_bullet of a record the read's answers held, from a scope the "
    "prefix names (MEM-READ.2, MEM-READ.5); a wrongly sanitized record names MEM-CONTAIN.1/2",
    "the bullets are the pool the read rule selects: re-scored union, org first on exact ties, "
    "other ties any order, limit, token budget with the first record always kept "
    "(MEM-READ.1, MEM-BUDGET.1, MEM-BUDGET.3); a non-empty pool has a block, an empty one none "
    "(MEM-READ.4)",
)


def memory_on_report(
    baseline: Capture,
    memory: Capture,
    result: MemoryOnResult,
    store: StoreRecord | None = None,
) -> dict[str, Any]:
    """The report of ``memspec audit memory-on`` (``store``: the store record it read)."""
    inputs = [_input("baseline", baseline), _input("with-memory", memory)]
    if store is not None:
        inputs.append(
            {
                "role": "store",
                "path": str(store.path),
                "sha256": store.sha256,
                "size_bytes": store.size,
                "requests": len(store.calls),
            }
        )
    rep = _envelope("memory-on", inputs)
    checked = result.provenance != NOT_CHECKED
    rep["clauses"] = sorted(_MEMORY_ON_CLAUSES | (_PROVENANCE_CLAUSES if checked else set()))
    rep["parameters"] = {
        "limit": result.limit,
        "max_tokens": result.max_tokens,
        "require_block": result.require_block,
        "level": result.level,
        "provenance": result.provenance,
    }
    rep["checks"] = list(_MEMORY_ON_CHECKS) + (list(_PROVENANCE_CHECKS) if checked else [])
    rep["requests"] = [_pair_entry(p, baseline, memory) for p in result.pairs]
    rep["problems"] = [{"clause": v.clause, "message": v.message} for v in result.problems]
    rep["summary"] = {
        "requests_baseline": result.count_baseline,
        "requests_with_memory": result.count_memory,
        "with_block": sum(1 for p in result.pairs if p.status in ("block", "deviation")),
        "deviations": sum(1 for p in result.pairs if p.status == "deviation"),
        "without_block": sum(1 for p in result.pairs if p.status == "no-block"),
        "failing_requests": [p.index for p in result.pairs if not p.ok],
    }
    rep["verdict"] = "PASS" if result.ok else "FAIL"
    rep["exit_code"] = 0 if result.ok else 1
    return rep


def _pair_entry(p: PairVerdict, baseline: Capture, memory: Capture) -> dict[str, Any]:
    """One pair's entry of the ``memory-on`` report: its verdict, both requests, its violations,
    the block found and where the bodies first differ outside it."""
    entry: dict[str, Any] = {
        "index": p.index,
        "provider": p.provider,
        "verdict": ("deviation" if p.status == "deviation" else "pass") if p.ok else "fail",
        "status": p.status,
        "summary": p.summary,
        "baseline": _req(baseline.requests[p.index]),
        "with_memory": _req(memory.requests[p.index]),
        "violations": [{"clause": v.clause, "message": v.message} for v in p.violations],
    }
    if p.block is not None:
        entry["block"] = {
            "location": p.block.location,
            "resource": p.block.resource,
            "bullets": len(p.block.bullets),
            "estimated_tokens": p.block.tokens,
            "text": p.block.text,
        }
    if p.outside is not None:
        entry["outside_difference"] = _body(p.outside)
    return entry


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(rep: dict[str, Any]) -> str:
    """A short human rendering of a report."""
    lines = [
        f"# memspec audit {rep['command']} — {rep['verdict']}",
        "",
        f"- tool: memspec {rep['tool']['version']} (Python {rep['tool']['python']})",
        f"- generated: {rep['generated_at']}",
        f"- exit code: {rep['exit_code']}",
    ]
    for key, value in rep.get("parameters", {}).items():
        lines.append(f"- {key}: {value}")
    lines += [
        "",
        "## Inputs",
        "",
        "| role | file | sha256 | bytes | requests |",
        "|---|---|---|---|---|",
    ]
    for i in rep["inputs"]:
        lines.append(
            f"| {i['role']} | `{_md_cell(i['path'])}` | `{i['sha256']}` | {i['size_bytes']} "
            f"| {i['requests']} |"
        )
    lines += ["", "## Checks", ""]
    lines += [f"- {c}" for c in rep["checks"]]
    lines += ["", "## Requests", "", "| # | verdict | detail |", "|---|---|---|"]
    for r in rep["requests"]:
        detail = _request_detail(r) if rep["command"] == "diff" else r["summary"]
        lines.append(f"| {r['index']} | {r['verdict']} | {_md_cell(detail)} |")
    problems = rep.get("problems") or []
    if problems:
        lines += ["", "## Problems", ""]
        lines += [f"- {p['clause']}: {p['message']}" for p in problems]
    failing = [r for r in rep["requests"] if r["verdict"] in ("different", "fail")]
    if failing:
        lines += ["", "## Details", ""]
        for r in failing:
            lines += _request_details(r)
    lines += ["", f"**Verdict: {rep['verdict']}**", ""]
    return "\n".join(lines)


def _request_detail(r: dict[str, Any]) -> str:
    """The table cell of one request of ``audit diff``: its problems and where its body first
    differs."""
    detail = "; ".join(r["problems"])
    body = r.get("body_difference")
    if body:
        first = body["json_differences"][0] if body["json_differences"] else None
        detail = "; ".join(
            x
            for x in (
                detail,
                f"first differing byte {body['first_differing_byte']}",
                f"{first['path']}: {first['detail']}" if first else "",
            )
            if x
        )
    return str(detail)


def _request_details(r: dict[str, Any]) -> list[str]:
    """The Markdown section of one failing request: its violations or problems, and the bytes
    around its first difference."""
    out: list[str] = []
    out.append(f"### request {r['index']}")
    out.append("")
    for v in r.get("violations", []):
        out.append(f"- {v['clause']}: {v['message']}")
    for p in r.get("problems", []):
        out.append(f"- {p}")
    body = r.get("body_difference") or r.get("outside_difference")
    if body:
        out.append(f"- first differing byte: {body['first_differing_byte']}")
        out.append("")
        out.append("```")
        out.append(f"A text: {body['context_a']['text']}")
        out.append(f"B text: {body['context_b']['text']}")
        out.append(f"A hex:  {body['context_a']['hex']}")
        out.append(f"B hex:  {body['context_b']['hex']}")
        out.extend(f"{d['path']}: {d['detail']}" for d in body["json_differences"])
        out.append("```")
    out.append("")
    return out


def report_paths(path: Path) -> tuple[Path, Path]:
    """The JSON report path as given, and its Markdown sibling (``.md``)."""
    md = path.with_suffix(".md") if path.suffix.lower() == ".json" else Path(str(path) + ".md")
    return path, md


def write_report(path: Path, rep: dict[str, Any]) -> tuple[Path, Path]:
    """Write the JSON report and its Markdown rendering; return both paths."""
    json_path, md_path = report_paths(path)
    json_path.write_text(json.dumps(rep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(to_markdown(rep), encoding="utf-8")
    return json_path, md_path
