"""Run reports: live progress, the closing clause table, ``report.json``, ``junit.xml``,
``report.html`` and the replay files of every divergence (see :mod:`conformance.report.model`
for the JSON schema)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conformance.report.html import report_html
from conformance.report.junit import junit_xml
from conformance.report.model import SCHEMA, RunReport
from conformance.scenario import RecordedAnswer, Scenario
from conformance.scrub import clean, dumps, scrub_text, xml_safe

__all__ = ["SCHEMA", "RunReport", "write_report", "replay_file_name", "with_transcript"]


def replay_file_name(kind: str, name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "replay"
    return f"replays/{kind}-{safe}.json"


def with_transcript(scenario: Scenario, steps: list[dict[str, Any]]) -> Scenario:
    """The scenario with each step's ``recorded`` answer from a run's step outcomes."""
    by_index = {o["index"]: o for o in steps}
    new_steps = []
    for i, step in enumerate(scenario.steps):
        o = by_index.get(i)
        ex = o.get("exchange") if o else None
        if ex is not None:
            rec = RecordedAnswer(
                status=ex.get("status"), body=ex.get("body"), error=ex.get("transport_error")
            )
            step = step.model_copy(update={"recorded": rec})
        new_steps.append(step)
    return scenario.model_copy(update={"steps": new_steps})


def write_report(report: RunReport, out_dir: Path, replays: dict[str, Scenario]) -> dict[str, Any]:
    """Write ``report.json``, ``junit.xml``, ``report.html`` and ``replays/*.json`` into
    ``out_dir``; ``replays`` maps a result key (``scenario:<name>``/``machine:<name>``) to the
    scenario to save.  Returns the report's JSON data (cleaned).

    Every file is written from cleaned data (:func:`conformance.scrub.clean`: the token blanked
    in every escaped form, lone surrogates replaced, non-finite numbers as strings) and
    scrubbed once more as text, so no output holds the token and ``report.json`` is strict
    JSON whatever the target sent.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    for key, scenario in replays.items():
        kind, _, name = key.partition(":")
        rel = replay_file_name(kind, name)
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = dumps(scenario.model_dump(mode="json", exclude_none=True), indent=2)
        path.write_text(text + "\n", encoding="utf-8")
        report.replays[key] = str(out_dir / rel)
    data: dict[str, Any] = clean(report.to_json())
    (out_dir / "report.json").write_text(dumps(data, indent=2) + "\n", encoding="utf-8")
    (out_dir / "junit.xml").write_text(xml_safe(scrub_text(junit_xml(data))), encoding="utf-8")
    (out_dir / "report.html").write_text(scrub_text(report_html(data)), encoding="utf-8")
    return data
