"""Run reports: live progress, the closing clause table, ``report.json``, ``junit.xml``,
``report.html`` and the replay files of every divergence (see :mod:`conformance.report.model`
for the JSON schema)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conformance.jsonutil import short_json
from conformance.report.html import report_html
from conformance.report.junit import junit_xml
from conformance.report.model import SCHEMA, RunReport
from conformance.scenario import RecordedAnswer, Scenario
from conformance.scrub import clean, dumps, page_safe, scrub_text, xml_safe

__all__ = [
    "SCHEMA",
    "RunReport",
    "replay_file_name",
    "replay_name",
    "with_transcript",
    "write_replay",
    "write_report",
]

#: The most ``report.json``, ``report.html`` and ``junit.xml`` may hold together.  A step keeps
#: at most a bounded part of its answer (:data:`conformance.vocabulary.KEEP_PASSED`), so a
#: report stays far below this; if it would not, every step's answer is shown as an excerpt
#: and the report's notes say so.
REPORT_CAP_BYTES = 40 * 1024 * 1024
#: Characters of an answer shown when the report is over its cap.
CAPPED_EXCERPT_CHARS = 300


def replay_name(kind: str, name: str) -> str:
    """The file name of the replay of result ``name`` (``kind``: ``scenario``/``machine``)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "replay"
    return f"{kind}-{safe}.json"


def replay_file_name(kind: str, name: str) -> str:
    """Where that replay goes in a report directory."""
    return f"replays/{replay_name(kind, name)}"


def write_replay(path: Path, scenario: Scenario) -> None:
    """Write ``scenario`` (its steps' recorded answers included) as a replay file, scrubbed like
    every other output (the token in any escaped form, lone surrogates)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps(scenario.model_dump(mode="json", exclude_none=True), indent=2)
    path.write_text(text + "\n", encoding="utf-8")


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
        write_replay(out_dir / rel, scenario)
        report.replays[key] = str(out_dir / rel)
    data: dict[str, Any] = clean(report.to_json())
    files = _render(data)
    if sum(len(t) for t in files.values()) > REPORT_CAP_BYTES:
        _excerpts_only(data)
        files = _render(data)
    for name, text in files.items():
        (out_dir / name).write_text(text, encoding="utf-8")
    return data


def _render(data: dict[str, Any]) -> dict[str, str]:
    return {
        "report.json": dumps(data, indent=2) + "\n",
        "junit.xml": page_safe(xml_safe(scrub_text(junit_xml(data)))),
        "report.html": page_safe(scrub_text(report_html(data))),
    }


def _excerpts_only(data: dict[str, Any]) -> None:
    """Over :data:`REPORT_CAP_BYTES`: every answer in the report as an excerpt, and a note."""
    exchanges = [d.get("exchange") for d in data.get("divergences", [])]
    for s in data.get("scenarios", []):
        exchanges += [o.get("exchange") for o in s.get("steps", [])]
    for ex in exchanges:
        if isinstance(ex, dict) and ex.get("body") is not None:
            ex["body_excerpt"] = short_json(ex.pop("body"), CAPPED_EXCERPT_CHARS)
            ex["body"] = None
            ex.setdefault("body_cut", {"why": "the report is over its cap"})
    data.setdefault("notes", []).append(
        f"the report would be larger than its cap of {REPORT_CAP_BYTES // (1024 * 1024)} MiB:"
        f" every answer is shown as an excerpt of {CAPPED_EXCERPT_CHARS} characters"
    )
