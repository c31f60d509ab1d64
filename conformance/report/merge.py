"""``memspec report merge DIR... --out DIR``: one report from the reports of N shards.

A sharded run (``memspec run --shard K/N``, see :mod:`conformance.shard`) writes one report
directory per shard.  Each shard directory also holds ``shard.json``: written ``"running"``
when the shard starts and ``"complete"`` after its report is written — a shard killed half-way
leaves ``"running"`` (or nothing), and the merge refuses it by name instead of producing a
smaller green report.

The merge refuses reports that do not belong together: different base run ids, seeds, memspec
versions, spec or corpus revisions, options or shard counts, a shard given twice, a shard
missing.  It then rebuilds one report — the same ``memspec-report/1`` schema, the same
``report.json``, ``report.html``, ``junit.xml`` and clause table as the unsharded run with the
same seed (ordering aside):

* scenarios: each ran in exactly one shard — concatenated, in corpus order;
* a machine ran a disjoint share of its batches in each shard — one result: examples and steps
  summed, the verdict the worst (fail, indeterminate, pass, skip), the failure, replay and
  reason those of the first shard (in K order) that failed;
* the clause table, the divergences, the stale expectations, the summary and the exit code are
  recomputed from the merged results, exactly as :class:`~conformance.report.model.RunReport`
  computes them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.report.expect import Expectation, match
from conformance.report.html import report_html
from conformance.report.junit import junit_xml
from conformance.report.model import SCHEMA, Tally, clause_table
from conformance.report.verdict import run_exit_code
from conformance.shard import Shard
from conformance.vocabulary import ResultVerdict

MARKER = "shard.json"
#: Report fields that must be equal in every shard of one run.
SAME = ("schema", "memspec_version", "spec_revision", "corpus_revision")
_RANK = {"fail": 4, "indeterminate": 3, "deviate": 2, "pass": 1, "skip": 0}


class MergeError(Exception):
    """The shard reports cannot be merged (the message names the shard and the reason)."""


# --------------------------------------------------------------------------- shard side


#: Options that may differ between the shards of one run: which shard it is, and how many
#: scenarios each ran side by side and in how many processes (``--jobs``, ``--procs``: no result
#: depends on them).
_PER_SHARD = frozenset({"shard", "jobs", "procs"})


def shard_report_options(shard: Shard, base: str | None, examples: int) -> dict[str, Any]:
    """What a shard adds to its report's ``options`` (nothing for an unsharded run)."""
    if shard.count == 1:
        return {}
    return {"shard": shard.label, "run_base": base, "examples": examples}


def _mark(report_dir: Path, shard: Shard, base: str, status: str) -> None:
    report_dir.mkdir(parents=True, exist_ok=True)
    data = {"shard": shard.label, "run_base": base, "status": status}
    # Written aside and renamed over: a shard killed as it writes leaves the old marker or the
    # new one, never half of one (which a merge could not read to name the shard).
    part = report_dir / (MARKER + ".part")
    part.write_text(json.dumps(data) + "\n", encoding="utf-8")
    os.replace(part, report_dir / MARKER)


def mark_shard_started(report_dir: Path, shard: Shard, base: str) -> None:
    stale = report_dir / "report.json"
    if stale.exists():  # a report left by an earlier run must not pass for this shard's
        stale.unlink()
    _mark(report_dir, shard, base, "running")


def mark_shard_finished(report_dir: Path, shard: Shard, base: str) -> None:
    _mark(report_dir, shard, base, "complete")


# --------------------------------------------------------------------------- loading


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MergeError(f"{path}: cannot read: {exc}") from exc


def load_shards(dirs: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Every shard's report, checked to belong to one complete sharded run, in shard order."""
    if not dirs:
        raise MergeError("no shard directories given")
    found: list[tuple[Path, dict[str, Any]]] = []
    incomplete: list[str] = []
    for d in dirs:
        marker = _read_json(d / MARKER) if (d / MARKER).is_file() else None
        label = f"shard {marker['shard']}" if isinstance(marker, dict) else "shard"
        if not d.is_dir():
            raise MergeError(f"{d}: no such directory")
        if marker is not None and marker.get("status") != "complete":
            incomplete.append(f"{label} in {d} is incomplete (it stopped before its report)")
            continue
        if not (d / "report.json").is_file():
            incomplete.append(f"{label} in {d} has no report.json (killed, or never ran?)")
            continue
        data = _read_json(d / "report.json")
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise MergeError(f"{d}/report.json: not a {SCHEMA} report")
        if not (data.get("options") or {}).get("shard"):
            raise MergeError(f"{d}/report.json: not a shard's report (run with --shard K/N)")
        found.append((d, data))
    if incomplete:
        raise MergeError("; ".join(incomplete))
    first_dir, first = found[0]
    count = int(first["options"]["shard"].split("/")[1])
    seen: dict[int, Path] = {}
    for d, data in found:
        k, n = (int(x) for x in data["options"]["shard"].split("/"))
        if n != count:
            raise MergeError(
                f"conflicting shard counts: {first_dir} is one of {count}, {d} one of {n}"
            )
        if k in seen:
            raise MergeError(f"shard {k}/{n} given twice: {seen[k]} and {d}")
        seen[k] = d
        for key in (*SAME, "level"):
            if data.get(key) != first.get(key):
                raise MergeError(
                    f"conflicting {key}: {first.get(key)!r} ({first_dir}) and"
                    f" {data.get(key)!r} ({d})"
                )
        a = {k2: v for k2, v in first["options"].items() if k2 not in _PER_SHARD}
        b = {k2: v for k2, v in data["options"].items() if k2 not in _PER_SHARD}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                what = {"run_base": "run ids"}.get(key, f"option {key}")
                raise MergeError(
                    f"conflicting {what}: {a.get(key)!r} ({first_dir}) and {b.get(key)!r} ({d})"
                )
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise MergeError(
            f"shard(s) {', '.join(missing)} missing: a merge of {len(seen)} of {count} shards"
            " would be a smaller report, not the run's"
        )
    return sorted(found, key=lambda x: int(x[1]["options"]["shard"].split("/")[0]))


# --------------------------------------------------------------------------- merging


def _merge_machines(
    shards: list[tuple[Path, dict[str, Any]]],
) -> list[tuple[dict[str, Any], int]]:
    """One result per machine, with the index of the shard its verdict comes from."""
    by_name: dict[str, list[tuple[dict[str, Any], int]]] = {}
    for i, (_, data) in enumerate(shards):
        for m in data["machines"]:
            by_name.setdefault(m["name"], []).append((m, i))
    out = []
    for found in by_name.values():
        parts = [m for m, _ in found]
        worst, source = max(found, key=lambda x: (_RANK.get(x[0]["verdict"], 0), -x[1]))
        merged = dict(worst)
        merged["examples"] = sum(m["examples"] for m in parts)
        merged["steps"] = sum(m["steps"] for m in parts)
        merged["elapsed_s"] = round(sum(m["elapsed_s"] for m in parts), 3)
        if merged["verdict"] == "skip" and any(m["verdict"] == "skip" for m in parts):
            merged["reason"] = next(
                (m["reason"] for m in parts if "falls in shard" not in m["reason"]),
                merged["reason"],
            )
        details = dict(worst.get("details") or {})
        skipped: dict[str, int] = {}
        for m in parts:
            for reason, n in ((m.get("details") or {}).get("skipped_steps") or {}).items():
                skipped[reason] = skipped.get(reason, 0) + n
        details["skipped_steps"] = skipped
        merged["details"] = details
        out.append((merged, source))
    return out


def clause_rows(scenarios: list[dict[str, Any]], machines: list[dict[str, Any]]) -> list[Any]:
    """The clause table from report JSON, counted as ``RunReport.clause_rows`` counts it
    (:func:`conformance.report.model.clause_table`): per-step skips of probes the target could
    not carry, and one failure per distinct divergence of a machine."""
    items: list[Tally] = []

    def expected(r: dict[str, Any]) -> str | None:
        return (r.get("expected_by") or {}).get("reason")

    for r in scenarios:
        dev = r.get("deviation_clauses") or []
        if r["verdict"] == "deviate":  # its clauses pass but those it deviated on
            passed = [c for c in r["clauses"] if c not in dev]
            items.append(Tally(passed, [], "pass", r["reason"], expected(r)))
        else:
            items.append(
                Tally(r["clauses"], r["failed_clauses"], r["verdict"], r["reason"], expected(r))
            )
        if dev:
            items.append(Tally(dev, dev, "deviate", r["reason"], expected(r)))
        for o in r.get("steps") or []:
            if (
                o.get("verdict") == "skip"
                and (o.get("details") or {}).get("unobservable")
                and r["verdict"] != "skip"
            ):
                declared = r.get("declared_clauses", r["clauses"])
                cids = list(dict.fromkeys((*declared, *o.get("clauses", []))))
                items.append(Tally(cids, [], "skip", f"step {o['index']}: {o.get('reason', '')}"))
    for m in machines:
        found = m.get("divergences") or []
        if found:
            for f in found:
                kind: ResultVerdict = "deviate" if f.get("deviation") else "fail"
                items.append(Tally(m["clauses"], f["clauses"], kind, f["reason"], expected(f)))
        else:
            items.append(
                Tally(m["clauses"], m["failed_clauses"], m["verdict"], m["reason"], expected(m))
            )
    return clause_table(items)


def _stale(
    entries: list[dict[str, Any]], results: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Stale expectations of the merged run (as ``RunReport.stale_expectations``)."""
    failing = [r for r in results if r["verdict"] in ("fail", "indeterminate")]
    ran = {r["name"]: r["verdict"] for r in results}
    by_id = {r["id"]: r for r in rows}
    out = []
    for raw in entries:
        e = Expectation(
            raw.get("clause"),
            raw.get("scenario"),
            raw["reason"],
            raw.get("op"),
            raw.get("divergence"),
        )
        if any(match([e], r["name"], r["failed_clauses"]) for r in failing):
            continue
        if e.scenario is not None:
            status = "passes now" if ran.get(e.scenario) == "pass" else "not run"
        else:
            x = by_id.get(e.clause or "")
            status = "passes now" if x and x["passed"] and not x["failed"] else "not exercised"
        out.append({"entry": raw, "status": status})
    return out


def merge_reports(shards: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """One report from the (checked) shard reports."""
    first = shards[0][1]
    order = _protocol_order(shards)
    scenarios = sorted(
        (s for _, data in shards for s in data["scenarios"]),
        key=lambda s: (order.get(s["protocol"], 99), s.get("path") or "", s["name"]),
    )
    merged_machines = sorted(_merge_machines(shards), key=lambda x: order.get(x[0]["protocol"], 99))
    machines = [m for m, _ in merged_machines]
    by_scenario = {s["name"]: i for i, s in enumerate(scenarios)}
    divergences = _merged_found(shards, merged_machines, by_scenario, lambda d: d["divergences"])
    deviations = _merged_found(
        shards, merged_machines, by_scenario, lambda data: data.get("deviations") or []
    )
    level = first.get("level", "seed")
    results = [*scenarios, *machines]
    failing = [r for r in results if r["verdict"] in ("fail", "indeterminate")]
    unexpected = _unexpected(failing, deviations, level)
    rows = clause_rows(scenarios, machines)
    capabilities, scopes, targets = _shard_targets(shards)
    options = {k: v for k, v in first["options"].items() if k != "shard"}
    options["shards"] = len(shards)
    expectations = first["expectations"]
    return {
        **{key: first[key] for key in SAME},
        "run_id": options.get("run_base") or first["run_id"],
        "started_at": min(data["started_at"] for _, data in shards),
        "finished_at": max(data["finished_at"] for _, data in shards),
        "duration_s": max(data["duration_s"] for _, data in shards),
        "exit_code": run_exit_code([str(r.get("verdict")) for r in unexpected]),
        "level": level,
        "target": _merged_target(first, targets, len(shards)),
        "options": options,
        "capabilities": capabilities,
        "scopes_written": {p: sorted(set(k)) for p, k in scopes.items()},
        "scenarios": scenarios,
        "machines": machines,
        "clauses": rows,
        "divergences": divergences,
        "deviations": deviations,
        "expectations": {
            "file": expectations.get("file"),
            "entries": expectations.get("entries", []),
            "stale": _stale(expectations.get("entries", []), results, rows),
        },
        "summary": {
            **_verdict_counts(scenarios, machines),
            "divergences": len(divergences),
            "deviations": len(deviations),
            "unexpected": len(unexpected),
            "indeterminate": sum(1 for r in failing if r["verdict"] == "indeterminate"),
            "steps": sum(len(s["steps"]) for s in scenarios) + sum(m["steps"] for m in machines),
        },
        "notes": _merged_notes(shards),
        "shards": targets,
    }


def _protocol_order(shards: list[tuple[Path, dict[str, Any]]]) -> dict[str, int]:
    """The order of protocols in the merged report: memory, ledger, then any other as met."""
    protocols: list[str] = []
    for _, data in shards:
        for p in [*data["capabilities"], *(s["protocol"] for s in data["scenarios"])]:
            if p not in protocols:
                protocols.append(p)
    return {p: i for i, p in enumerate(["memory", "ledger", *protocols])}


def _unexpected(
    failing: list[dict[str, Any]], deviations: list[dict[str, Any]], level: str
) -> list[dict[str, Any]]:
    """The failing results no expectation accepts, and at level ``reference`` the deviations
    none accepts (each with the verdict ``deviate``: a deviation fails the run too)."""
    out = [r for r in failing if not r.get("expected_by")]
    if level == "reference":
        out += [{**d, "verdict": "deviate"} for d in deviations if not d.get("expected_by")]
    return out


def _merged_found(
    shards: list[tuple[Path, dict[str, Any]]],
    merged_machines: list[tuple[dict[str, Any], int]],
    by_scenario: dict[str, int],
    read: Callable[[dict[str, Any]], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The divergences (or deviations: what ``read`` takes from a report) of every shard's
    scenarios in scenario order, then each machine's, from the shard its verdict is from."""
    found = sorted(
        (d for _, data in shards for d in read(data) if d["source"] == "scenario"),
        key=lambda d: by_scenario.get(d["name"], 0),
    )
    for m, source in merged_machines:
        found += [
            d
            for d in read(shards[source][1])
            if d["source"] == "machine" and d["name"] == m["name"]
        ]
    return found


def _shard_targets(
    shards: list[tuple[Path, dict[str, Any]]],
) -> tuple[dict[str, list[str]], dict[str, list[str]], list[dict[str, Any]]]:
    """The capabilities (joined), the scope keys written (all) and one entry per shard: its
    shard, run id, target, duration and directory."""
    capabilities: dict[str, list[str]] = {}
    scopes: dict[str, list[str]] = {}
    targets = []
    for d, data in shards:
        for p, caps in data["capabilities"].items():
            capabilities[p] = sorted(set(capabilities.get(p, [])) | set(caps))
        for p, keys in data["scopes_written"].items():
            scopes.setdefault(p, []).extend(keys)
        targets.append(
            {
                "shard": data["options"]["shard"],
                "run_id": data["run_id"],
                "target": data["target"],
                "duration_s": data["duration_s"],
                "dir": str(d),
            }
        )
    return capabilities, scopes, targets


def _merged_notes(shards: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    """The shards' notes, each once, and one for shards that checked one ledger store."""
    notes = list(dict.fromkeys(n for _, data in shards for n in data.get("notes", [])))
    ledger_urls: dict[str, list[str]] = {}
    for _, data in shards:
        if "ledger" in data["capabilities"]:
            ledger_urls.setdefault(str(data["target"].get("url")), []).append(
                data["options"]["shard"]
            )
    for url, which in ledger_urls.items():
        if len(which) > 1:
            notes.append(
                f"shards {', '.join(which)} checked the ledger at the same URL {url}: they shared"
                " one store instance, whose single account scope each shard resets — give every"
                " ledger shard a fresh store"
            )
    return notes


def _verdict_counts(scenarios: list[Any], machines: list[Any]) -> dict[str, dict[str, int]]:
    """The summary's verdict counts of scenarios, probes, contract checks and machines."""
    counts: dict[str, dict[str, int]] = {
        "scenarios": {},
        "probes": {},
        "contract": {},
        "machines": {},
    }
    for s in scenarios:
        group = {"probe": "probes", "contract": "contract"}.get(s.get("kind"), "scenarios")
        counts[group][s["verdict"]] = counts[group].get(s["verdict"], 0) + 1
    for m in machines:
        counts["machines"][m["verdict"]] = counts["machines"].get(m["verdict"], 0) + 1
    return counts


def _merged_target(first: dict[str, Any], targets: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """The first shard's target, labelled with every shard's when they differ."""
    labels = {str(first["target"].get("label") or first["target"].get("url"))}
    labels |= {str(t["target"].get("label") or t["target"].get("url")) for t in targets}
    target = dict(first["target"])
    if len(labels) > 1:
        target["label"] = f"{n} shards: " + ", ".join(sorted(labels))
    return target


def write_merged(
    shards: list[tuple[Path, dict[str, Any]]], data: dict[str, Any], out_dir: Path
) -> None:
    """Write report.json, junit.xml, report.html and the shards' replay files into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    moved: dict[str, str] = {}
    for d, _ in shards:
        for f in sorted((d / "replays").glob("*.json")) if (d / "replays").is_dir() else []:
            dest = out_dir / "replays" / f.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
            moved[f.name] = str(dest)
    found = [*data["divergences"], *data.get("deviations", [])]
    for item in [*data["scenarios"], *data["machines"], *found]:
        if item.get("replay"):
            item["replay"] = moved.get(Path(item["replay"]).name, item["replay"])
    (out_dir / "report.json").write_text(
        json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out_dir / "junit.xml").write_text(junit_xml(data), encoding="utf-8")
    (out_dir / "report.html").write_text(report_html(data), encoding="utf-8")
