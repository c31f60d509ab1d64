"""The concurrent phase of a run (``--clients N``): N clients at once per protocol, each
history checked for linearizability; a counterexample's replay file and timeline go into the
report directory, and a ``concurrent`` section into ``report.json`` (drawn in ``report.html``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.concurrent.run import PROTOCOLS, ConcurrentResult, run_concurrent, save_replay
from conformance.engine.drivers import protocols_for
from conformance.report.html import report_html
from conformance.report.timeline import timeline_page
from conformance.scrub import clean, dumps, scrub_text
from conformance.vocabulary import TargetConfig

if TYPE_CHECKING:
    from conformance.engine.config import RunConfig
    from conformance.engine.observer import Observer
    from conformance.engine.pipeline import RunResult


def concurrent_checks(
    config: TargetConfig,
    *,
    protocols: list[str],
    clients: int,
    seed: int,
    profile: str,
    run_id: str,
    report_dir: Path | None,
) -> list[ConcurrentResult]:
    out: list[ConcurrentResult] = []
    for protocol in protocols:
        if protocol not in PROTOCOLS:
            continue
        result = run_concurrent(
            config, run_id=run_id, protocol=protocol, clients=clients, seed=seed, profile=profile
        )
        if report_dir is not None:
            report_dir.mkdir(parents=True, exist_ok=True)
            if result.counterexample is not None:
                save_replay(result, report_dir / "replays" / f"concurrent-{protocol}.json")
                events = result.counterexample.to_json()["events"]
                title = f"{protocol}: smallest non-linearizable sub-history found"
                note = (
                    f"{len(events)} operations of scope {result.counterexample.partition}"
                    f" (from {result.counterexample.full_ops}); faded bars: answer not needed."
                )
            elif result.history is not None:
                events = result.history.to_json()
                title, note = f"{protocol}: last concurrent history ({result.verdict})", ""
            else:  # pragma: no cover
                continue
            path = report_dir / f"concurrent-{protocol}.html"
            page = timeline_page(events, title=title, note=note)
            path.write_text(scrub_text(page), encoding="utf-8")
            result.timeline_path = str(path)
        out.append(result)
    return out


def attach_concurrent(result: RunResult, config: RunConfig, observer: Observer) -> None:
    """The concurrent check after a run's other phases, against the same target: its section
    joins ``result`` (and the report on disk); a history that is not linearizable fails it."""
    assert config.target is not None and config.clients is not None
    results = concurrent_checks(
        config.target,
        protocols=protocols_for(config.spec),
        clients=config.clients,
        seed=config.seed if config.seed is not None else 0,
        profile=config.profile,
        run_id=str(result.data.get("run_id") or result.report.run_id),
        report_dir=result.report_dir,
    )
    section = [r.to_json() for r in results]
    result.data["concurrent"] = section
    for r in results:
        observer.say(_verdict_line(r))
        if r.verdict == "not linearizable":
            result.exit_code = 1
            result.data["exit_code"] = 1
    if result.report_dir is not None:
        _rewrite_report(result, section)


def _verdict_line(r: ConcurrentResult) -> str:
    line = (
        f"concurrent {r.protocol}: {r.clients} clients, {r.ops} operations in {r.rounds_run}"
        f" round(s): {r.verdict.upper()}"
    )
    if r.counterexample is not None:
        ce = r.counterexample
        line += f" — counterexample of {len(ce.events)} operations ({', '.join(ce.clauses)})"
        if r.replay_path:
            line += f", replay {r.replay_path}"
    return line


def _rewrite_report(result: RunResult, section: list[Any]) -> None:
    """``report.json`` and ``report.html`` with the concurrent section (and the exit code)."""
    assert result.report_dir is not None
    path = Path(result.report_dir) / "report.json"
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        data["concurrent"] = clean(section)
        if result.exit_code == 1:
            data["exit_code"] = 1
        path.write_text(dumps(data, indent=2) + "\n", encoding="utf-8")
        # report.html draws the section (and a counterexample's timeline) too.
        html_path = Path(result.report_dir) / "report.html"
        html_path.write_text(scrub_text(report_html(data)), encoding="utf-8")
