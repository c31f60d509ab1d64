"""``report.html``: one self-contained page (inline CSS, no scripts, no external assets).

Sections: the verdict and run facts; the clause matrix (passed / failed / deviates / skipped
per clause, with each clause's source); every divergence with its minimal replay shown step by
step, then apart every difference from the reference implementation (a deviation: only
reference clauses differ) shown the same way, the model's allowed answers and
the target's answer side by side; the concurrent check (``--clients N``), with the timeline of
a non-linearizable counterexample (clients as lanes, operations as bars); the scenarios and
machine runs; the scopes the run wrote.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from conformance.report.console import said_line
from conformance.report.timeline import timeline_html
from conformance.report.verdict import verdict_text
from conformance.scrub import REASON_LIMIT, shown

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2em;color:#1d1d1f;
max-width:1400px}
h1{font-size:1.5em;margin:0 0 .3em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
.ok{color:#0a7d32}.bad{color:#b3261e}.warn{color:#8a5a00}.muted{color:#666}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{border:1px solid #ddd;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f5f5f7}td.n{text-align:right;width:4em}
tr.pass td.v{background:#e6f4ea}tr.fail td.v{background:#fce8e6}tr.skip td.v{background:#f1f3f4}
tr.expected td.v{background:#fef7e0}tr.deviate td.v{background:#e8f0fe}
.div.deviate{border-color:#aecbfa;background:#f8fbff}tr.step-deviate td{background:#e8f0fe}
pre{margin:0;white-space:pre-wrap;word-break:break-word;
font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.div{border:1px solid #e0c0bd;border-radius:6px;padding:1em;margin:1em 0;background:#fffafa}
.div.expected{border-color:#e8d9a8;background:#fffdf5}
tr.step-diverge td{background:#fce8e6}tr.step-indeterminate td{background:#fef7e0}
details{margin:.5em 0}code{font:12px ui-monospace,Menlo,Consolas,monospace}
"""


def _j(v: Any, limit: int = 4000) -> str:
    """``v`` as indented JSON, scrubbed, escaped, then cut (:func:`conformance.scrub.shown`)."""
    try:
        s = json.dumps(v, indent=1, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        s = repr(v)
    return shown(s, limit, keep_lines=True)


def _reason(text: str) -> str:
    """A reason as a paragraph shows it: runs of spaces and hidden characters escaped (a page
    would collapse the one and hide the other), then HTML-escaped."""
    return escape(shown(text, REASON_LIMIT))


def _said(ex: dict[str, Any] | None) -> str:
    if ex is None:
        return "(no request sent)"
    if ex.get("transport_error"):
        return f"no answer: {shown(ex['transport_error'])}"
    body = ex.get("body")
    if body is None and (ex.get("body_error") or ex.get("body_excerpt")):
        return said_line(ex)
    return f"{ex.get('status')} {_j(body)}"


def _steps_table(steps: list[dict[str, Any]]) -> str:
    rows = []
    for o in steps:
        ex = o.get("exchange")
        req = (
            ""
            if ex is None
            else f"{ex.get('method')} {ex.get('path')}\n"
            + "".join(f"{k}: {v}\n" for k, v in ex.get("request_headers") or ())
            + _j(ex.get("request"), 1500)
        )
        cls = (
            f"step-{o['verdict']}"
            if o["verdict"] in ("diverge", "deviate", "indeterminate")
            else ""
        )
        not_reached = (o.get("details") or {}).get("not_reached")
        state = "not reached" if not_reached else o["verdict"]
        rows.append(
            f"<tr class='{cls}'><td class='n'>{o['index']}</td><td>{escape(o['op'])}<br>"
            f"<span class='muted'>{escape(state)}</span></td>"
            f"<td><pre>{escape(req)}</pre></td><td><pre>{escape(o.get('expected') or '')}</pre>"
            "</td>"
            f"<td><pre>{escape(_said(ex))}</pre>"
            + (f"<p class='bad'>{_reason(o['reason'])}</p>" if o.get("reason") else "")
            + "</td></tr>"
        )
    return (
        "<table><tr><th>#</th><th>op</th><th>request (target ids)</th><th>the model allows</th>"
        "<th>the target said</th></tr>" + "".join(rows) + "</table>"
    )


def _divergence_blocks(data: dict[str, Any], divs: list[dict[str, Any]], kind: str) -> list[str]:
    """Each divergence (or, ``kind`` `` deviate``, each deviation) as a block: where, which
    clauses, why, its replay and the steps side by side."""
    parts: list[str] = []
    scen = {x["name"]: x for x in data["scenarios"]}
    mach = {x["name"]: x for x in data["machines"]}
    for d in divs:
        exp = d.get("expected_by")
        parts.append(f"<div class='div{kind}{' expected' if exp else ''}'>")
        parts.append(
            f"<h3>{escape(d['source'])} <code>{escape(d['name'])}"
            f"</code> — step {d['step']} ({escape(d['op'])})</h3>"
            f"<p>clauses: {', '.join('<code>' + escape(c) + '</code>' for c in d['clauses'])}</p>"
            f"<p class='bad'>{_reason(d['reason'])}</p>"
        )
        if exp:
            parts.append(f"<p class='warn'>expected divergence: {escape(exp['reason'])}</p>")
        if d.get("replay"):
            parts.append(f"<p>replay: <code>memspec replay {escape(d['replay'])}</code></p>")
        steps: list[dict[str, Any]] = []
        if d["source"] == "scenario" and d["name"] in scen:
            steps = scen[d["name"]]["steps"]
        elif d["source"] == "machine" and d["name"] in mach:
            steps = mach[d["name"]]["details"].get("replay_steps") or []
            if not steps:
                steps = [
                    {
                        "index": d["step"],
                        "op": d["op"],
                        "verdict": d["verdict"],
                        "expected": d["expected"],
                        "exchange": d["exchange"],
                        "reason": d["reason"],
                    }
                ]
        parts.append(_steps_table(steps))
        parts.append("</div>")
    return parts


def report_html(data: dict[str, Any]) -> str:
    """``report.html``: one self-contained page of a ``report.json``."""
    parts = [
        *_head_html(data),
        *_clauses_html(data),
        *_divergences_html(data),
        *_scenarios_html(data),
        *_machines_html(data),
        *_expectations_html(data),
        *_scopes_html(data),
    ]
    return "".join(parts)


def _head_html(data: dict[str, Any]) -> list[str]:
    """The page's head and the run's verdict, target, counts, options and capabilities."""
    ok = data["exit_code"] == 0
    verdict = verdict_text(data["exit_code"]).capitalize()
    s = data["summary"]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>memspec report {escape(data['run_id'])}</title><style>{CSS}</style></head><body>",
        f"<h1 class='{'ok' if ok else 'bad'}'>{verdict}</h1>",
        "<p>",
        f"target <code>{escape(str(data['target'].get('label') or data['target'].get('url')))}"
        "</code> · ",
        f"run <code>{escape(data['run_id'])}"
        f"</code> · {escape(data['started_at'])} · {data['duration_s']:.1f}s · ",
        f"{s['steps']} steps · {s['divergences']} divergence(s), {s['unexpected']} unexpected",
        f" · {s.get('deviations', 0)} deviation(s) from the reference implementation"
        f" · level {escape(str(data.get('level', 'seed')))}",
        "</p>",
        f"<p class='muted'>judged by memspec {escape(str(data.get('memspec_version')))} · spec"
        f" {escape(str(data.get('spec_revision')))}"
        f" · corpus {escape(str(data.get('corpus_revision')))}</p>",
    ]
    opts = data["options"]
    parts.append(
        "<p class='muted'>"
        + " · ".join(f"{escape(k)}: {escape(str(v))}" for k, v in opts.items() if v is not None)
        + "</p>"
    )
    caps = data["capabilities"]
    if caps:
        parts.append(
            "<p class='muted'>capabilities: "
            + "; ".join(f"{escape(p)}: {escape(', '.join(c) or '—')}" for p, c in caps.items())
            + "</p>"
        )
    return parts


def _clauses_html(data: dict[str, Any]) -> list[str]:
    """The clause matrix."""
    parts: list[str] = []
    parts.append(
        "<h2>Clauses</h2><table><tr><th>clause</th><th>title</th><th>source</th><th>passed</th>"
        "<th>failed</th><th>deviates</th><th>skipped</th><th>notes</th></tr>"
    )
    for r in data["clauses"]:
        failed = r["failed"]  # no answer (indeterminate) is a transport verdict, shown apart
        cls = (
            "expected"
            if (failed or r["indeterminate"]) and r["expected"]
            else "fail"
            if failed
            else "deviate"
            if r.get("deviates")
            else "pass"
            if r["passed"]
            else "skip"
        )
        notes = "; ".join(
            ["expected: " + e for e in r["expected"]]
            + ["skipped: " + x for x in r["skip_reasons"]]
            + ([f"{r['indeterminate']} not judged: no answer"] if r["indeterminate"] else [])
        )
        parts.append(
            f"<tr class='{cls}'><td class='v'><code>{escape(r['id'])}</code></td>"
            f"<td>{escape(r['title'])}</td><td>{escape(str(r.get('source', '')))}</td>"
            f"<td class='n'>{r['passed']}</td><td class='n'>{failed}</td>"
            f"<td class='n'>{r.get('deviates', 0)}</td><td class='n'>{r['skipped']}</td>"
            f"<td>{escape(notes)}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _divergences_html(data: dict[str, Any]) -> list[str]:
    """The divergences, then the deviations from the reference implementation."""
    parts: list[str] = []
    parts.append(f"<h2>Divergences ({len(data['divergences'])})</h2>")
    if not data["divergences"]:
        parts.append("<p class='ok'>None: every answer was one the model allows.</p>")
    parts += _divergence_blocks(data, data["divergences"], "")
    devs = data.get("deviations") or []
    parts.append(f"<h2>Differs from the reference implementation ({len(devs)})</h2>")
    parts.append(
        "<p class='muted'>Only reference clauses differ: choices the reference implementation"
        " makes that the seed does not state. "
        + (
            "At level reference they fail the run.</p>"
            if data.get("level") == "reference"
            else "They fail the run only at <code>--level reference</code>.</p>"
        )
    )
    parts += _divergence_blocks(data, devs, " deviate")
    if data.get("concurrent"):
        parts.append(concurrent_html(data["concurrent"]))
    return parts


def _scenarios_html(data: dict[str, Any]) -> list[str]:
    """The scenarios table."""
    parts: list[str] = []
    parts.append(
        f"<h2>Scenarios ({len(data['scenarios'])})</h2><table><tr><th>scenario</th><th>verdict</th>"
        "<th>clauses</th><th>reason</th></tr>"
    )
    for x in data["scenarios"]:
        cls = {"pass": "pass", "skip": "skip", "deviate": "deviate"}.get(
            x["verdict"], "expected" if x.get("expected_by") else "fail"
        )
        parts.append(
            f"<tr class='{cls}'><td>{escape(x['name'])}<br>"
            f"<span class='muted'>{escape(x.get('path') or '')}</span></td>"
            f"<td class='v'>{escape(x['verdict'])}</td><td>{escape(', '.join(x['clauses']))}</td>"
            f"<td>{_reason(x['reason'])}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _machines_html(data: dict[str, Any]) -> list[str]:
    """The state machines table (none when no machine ran)."""
    parts: list[str] = []
    if data["machines"]:
        parts.append(
            "<h2>State machines</h2><table><tr><th>machine</th><th>verdict</th><th>runs</th>"
            "<th>steps</th><th>profile / seed</th><th>reason</th></tr>"
        )
        for m in data["machines"]:
            cls = {"pass": "pass", "skip": "skip", "deviate": "deviate"}.get(
                m["verdict"], "expected" if m.get("expected_by") else "fail"
            )
            parts.append(
                f"<tr class='{cls}'><td>{escape(m['name'])}</td>"
                f"<td class='v'>{escape(m['verdict'])}</td>"
                f"<td class='n'>{m['examples']}</td><td class='n'>{m['steps']}</td>"
                f"<td>{escape(m['profile'])} / {m['seed']}</td><td>{_reason(m['reason'])}</td></tr>"
            )
        parts.append("</table>")
    return parts


def _expectations_html(data: dict[str, Any]) -> list[str]:
    """The ``--expect`` entries and the stale ones."""
    parts: list[str] = []
    stale = data["expectations"]["stale"]
    if data["expectations"]["entries"]:
        parts.append(
            f"<h2>Expectations</h2><p>file <code>{escape(str(data['expectations']['file']))}</code>"
            "</p><ul>"
        )
        for e in data["expectations"]["entries"]:
            parts.append(f"<li>{escape(json.dumps(e, ensure_ascii=False))}</li>")
        parts.append("</ul>")
        for st in stale:
            parts.append(
                f"<p class='warn'>stale: {escape(json.dumps(st['entry']))} — {escape(st['status'])}"
                "</p>"
            )
    return parts


def _scopes_html(data: dict[str, Any]) -> list[str]:
    """The scope keys written, the notes and the page's end."""
    parts: list[str] = []
    scopes = data["scopes_written"]
    total = sum(len(v) for v in scopes.values())
    parts.append(
        f"<h2>Scopes written</h2><p>Run <code>{escape(data['run_id'])}"
        f"</code> sent data requests only to these {total} key(s): memory keys are unique to the"
        " run; the ledger has one account scope, reset before each scenario or cleaned up after"
        " the run.</p>"
    )
    for p, keys in scopes.items():
        parts.append(
            f"<details><summary>{escape(p)}: {len(keys)} key(s)</summary>"
            f"<pre>{escape(chr(10).join(keys))}</pre></details>"
        )
    for note in data.get("notes", []):
        parts.append(f"<p class='muted'>{escape(note)}</p>")
    parts.append(
        f"<p class='muted'>schema {escape(data['schema'])}"
        f" · memspec {escape(data['memspec_version'])}</p></body></html>\n"
    )
    return parts


def concurrent_html(sections: list[dict[str, Any]]) -> str:
    """The ``concurrent`` section of ``report.json`` (one entry per protocol): verdict, search
    sizes per scope and, for a history that is not linearizable, the counterexample drawn as
    a timeline (:func:`conformance.report.timeline.timeline_html`) with its replay command."""
    parts = ["<h2>Concurrent clients (linearizability)</h2>"]
    for c in sections:
        verdict = str(c.get("verdict"))
        cls = {"linearizable": "ok", "not linearizable": "bad"}.get(verdict, "warn")
        parts.append(
            f"<h3>{escape(str(c.get('protocol')))}: <span class='{cls}'>{escape(verdict)}</span>"
            "</h3>"
            f"<p>{c.get('clients')} clients · {c.get('operations')} operations in"
            f" {c.get('rounds')} round(s) · {c.get('indeterminate', 0)} without an answer ·"
            f" driven in {c.get('wall_s')} s, checked in {c.get('check_s')} s</p>"
        )
        unknown = [p for p in c.get("partitions") or [] if p.get("verdict") == "unknown"]
        for p in unknown:
            parts.append(
                f"<p class='warn'>scope <code>{escape(str(p.get('scope')))}</code>: unknown"
                f" ({escape(str(p.get('reason')))})</p>"
            )
        ce = c.get("counterexample")
        if not ce:
            continue
        parts.append("<div class='div'>")
        parts.append(
            f"<p>clauses: {', '.join('<code>' + escape(x) + '</code>' for x in ce['clauses'])}</p>"
        )
        note = (
            f"{ce['operations']} operations of scope {ce['partition']} (from"
            f" {ce['from_operations']}); no order of them admits every answer. Faded bars:"
            " answers the counterexample does not need; hatched: no answer. Hover a bar for"
            " the request and the answer."
        )
        parts.append(
            timeline_html(
                ce["events"], title="smallest non-linearizable sub-history found", note=note
            )
        )
        if c.get("replay"):
            parts.append(
                "<p>replay: <code>memspec replay-concurrent"
                f" {escape(str(c['replay']))} --target URL</code></p>"
            )
        rows = "".join(
            f"<tr><td class='n'>{e['id']}</td><td class='n'>{e['client']}</td>"
            f"<td>{escape(str(e['route']))}{' (answer not needed)' if e.get('blurred') else ''}"
            f"</td><td><pre>{escape(_j(e.get('request'), 800))}</pre></td>"
            f"<td><pre>{escape(str(e.get('status')))} "
            f"{escape(_j(e.get('answer'), 1500))}</pre></td>"
            f"<td class='n'>{e['invoke']}</td><td class='n'>{e.get('complete')}</td></tr>"
            for e in ce["events"]
        )
        parts.append(
            "<details><summary>the operations</summary><table><tr><th>#</th><th>client</th>"
            "<th>route</th><th>request</th><th>answer</th><th>invoked (s)</th>"
            f"<th>completed (s)</th></tr>{rows}</table></details>"
        )
        parts.append("</div>")
    return "".join(parts)
