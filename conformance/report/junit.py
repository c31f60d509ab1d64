"""``junit.xml``: one test suite per protocol, one test case per scenario and per machine run.

A divergence is a ``<failure>``, an indeterminate result an ``<error>``, a skipped scenario a
``<skipped>`` with the reason; a divergence the expectations file lists is reported as skipped
("expected: …") so CI stays green while the report still shows it.  A deviation from the
reference implementation (only reference clauses differ) is a ``deviation`` property of its test
case, naming the clauses and the reason; it is a ``<failure type="deviation">`` only at
``--level reference``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from conformance.report.console import said_line, sent_line
from conformance.scrub import REASON_LIMIT, shown


def _failure_text(step: dict[str, Any] | None, reason: str) -> str:
    lines = [shown(reason, REASON_LIMIT)]
    if step:
        lines.append(f"clauses: {', '.join(step.get('clauses', []))}")
        lines.append("model allows:")
        lines.extend("  " + ln for ln in (step.get("expected") or "").splitlines())
        ex = step.get("exchange")
        if ex:
            lines.append(f"sent: {sent_line(ex)}")
            lines.append(f"target said: {said_line(ex)}")
    return "\n".join(lines)


def junit_xml(data: dict[str, Any]) -> str:
    suites = ET.Element("testsuites", name="memspec", time=f"{data['duration_s']:.3f}")
    by_protocol: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for s in data["scenarios"]:
        by_protocol.setdefault(s["protocol"], []).append(("scenario", s))
    for m in data["machines"]:
        by_protocol.setdefault(m["protocol"], []).append(("machine", m))
    for protocol, items in sorted(by_protocol.items()):
        suite = ET.SubElement(suites, "testsuite", name=f"memspec.{protocol}")
        suite_props = ET.SubElement(suite, "properties")  # what judged the run
        for key in ("memspec_version", "spec_revision", "corpus_revision", "run_id", "level"):
            ET.SubElement(suite_props, "property", name=key, value=str(data.get(key, "")))
        n = failures = errors = skipped = 0
        total = 0.0
        for kind, item in items:
            n += 1
            total += item["elapsed_s"]
            counted = _testcase(suite, data, protocol, kind, item)
            failures += counted == "failure"
            errors += counted == "error"
            skipped += counted == "skipped"
        suite.set("tests", str(n))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", str(skipped))
        suite.set("time", f"{total:.3f}")
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def _testcase(
    suite: ET.Element, data: dict[str, Any], protocol: str, kind: str, item: dict[str, Any]
) -> str:
    """Add one scenario's or machine's ``testcase`` to ``suite``: its clauses and deviations
    as properties, and its failure, error or skip; which of ``failure``, ``error``, ``skipped``
    it counts as (``""``: none)."""
    counted = ""
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"memspec.{protocol}.{'corpus' if kind == 'scenario' else 'machines'}",
        name=item["name"],
        time=f"{item['elapsed_s']:.3f}",
    )
    props = ET.SubElement(case, "properties")
    for cid in item["clauses"]:
        ET.SubElement(props, "property", name="clause", value=cid)
    deviations = [
        d for d in data.get("deviations") or [] if d["source"] == kind and d["name"] == item["name"]
    ]
    for d in deviations:
        text = f"[{', '.join(d['clauses'])}] step {d['step']} ({d['op']}): {d['reason']}"
        ET.SubElement(props, "property", name="deviation", value=shown(text, 500))
    verdict = item["verdict"]
    step = None
    if kind == "scenario":
        step = next(
            (o for o in item["steps"] if o["verdict"] in ("diverge", "indeterminate")), None
        )
    else:
        step = next(
            (
                d
                for d in data["divergences"]
                if d["source"] == "machine" and d["name"] == item["name"]
            ),
            None,
        )
    if verdict in ("fail", "indeterminate") and item.get("expected_by"):
        counted = "skipped"
        ET.SubElement(
            case, "skipped", message=f"expected: {item['expected_by']['reason']}"
        ).text = _failure_text(step, item["reason"])
    elif verdict == "fail":
        counted = "failure"
        el = ET.SubElement(case, "failure", message=shown(item["reason"], 500), type="divergence")
        el.text = _failure_text(step, item["reason"])
    elif verdict == "indeterminate":
        counted = "error"
        el = ET.SubElement(case, "error", message=shown(item["reason"], 500), type="indeterminate")
        el.text = _failure_text(step, item["reason"])
    elif verdict == "skip":
        counted = "skipped"
        ET.SubElement(case, "skipped", message=shown(item["reason"], 500))
    elif verdict == "deviate" and data.get("level") == "reference":
        counted = "failure"
        el = ET.SubElement(case, "failure", message=shown(item["reason"], 500), type="deviation")
        el.text = _failure_text(deviations[0] if deviations else None, item["reason"])
    return counted
