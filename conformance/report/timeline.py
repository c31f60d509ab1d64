"""An HTML timeline of a concurrent history: clients as lanes, operations as bars.

:func:`timeline_html` returns a self-contained HTML fragment (inline styles only, no script,
every text escaped) that any report page can embed; :func:`timeline_page` wraps it in a page.
A bar spans an operation's invocation to its completion on the harness's monotonic clock; an
indeterminate operation (no answer) runs to the right edge, hatched.  Blurred operations
(kept in a counterexample, answer not needed) are drawn faded.  Hovering a bar shows the
request and the answer.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.jsonutil import short_json

_COLORS = {
    "/ledger/memory/save_memory_record": "#4c78a8",
    "/ledger/memory/list_memory_records": "#b07aa1",
    "/ledger/memory/supersede_memory_record": "#f28e2b",
    "/ledger/memory/delete_memory_record": "#e15759",
    "/ledger/_test/consolidate": "#76b7b2",
    "/write": "#4c78a8",
    "/retrieve": "#59a14f",
    "/list": "#b07aa1",
    "/forget": "#e15759",
}


def _short(value: Any, limit: int = 600) -> str:
    return short_json(value, limit, sort_keys=True)


def _label(ev: Mapping[str, Any]) -> str:
    route = str(ev.get("route", "?"))
    raw = ev.get("request")
    req: dict[str, Any] = raw if isinstance(raw, dict) else {}
    ans = ev.get("answer")
    if route.startswith("/ledger/"):
        method = route.rsplit("/", 1)[-1].replace("_memory_record", "")
        head = method + (f" {req['body']}" if isinstance(req.get("body"), str) else "")
        for o in req.get("operations") or []:
            if isinstance(o, dict):
                targets = " ".join(str(t)[:8] for t in o.get("targets") or [])
                head += f" {o.get('operation')} {targets} → {o.get('body')}"
        if isinstance(req.get("recordId"), str):
            head += f" {req['recordId'][:8]}"
        if isinstance(ans, dict) and isinstance(ans.get("records"), list):
            head += (
                " → ["
                + ", ".join(str(r.get("body")) for r in ans["records"] if isinstance(r, dict))
                + "]"
            )
        elif isinstance(ans, dict) and "applied" in ans:
            head += f" → applied {ans.get('applied')} refused {ans.get('refused')}"
        elif isinstance(ans, dict) and isinstance(ans.get("error"), dict):
            head += f" → refused {ans['error'].get('code')}"
        elif isinstance(ans, dict) and "id" in ans:
            head += f" → {str(ans['id'])[:8]}"
        return head
    if route == "/write":
        texts = [r.get("text", "") for r in req.get("records", []) if isinstance(r, dict)]
        head = "write " + ", ".join(str(t) for t in texts)
        if isinstance(ans, dict) and "inserted" in ans:
            head += (
                f" → ins {ans.get('inserted')} dup {ans.get('deduped')} sup {ans.get('superseded')}"
            )
        return head
    if route in ("/list", "/retrieve"):
        q = req.get("query")
        head = route[1:] + (f" {q!s}" if q is not None else "")
        if isinstance(ans, dict) and isinstance(ans.get("records"), list):
            shown = [
                f"{r.get('text')}·{r.get('useCount')}"
                for r in ans["records"]
                if isinstance(r, dict)
            ]
            head += " → [" + ", ".join(shown) + "]"
        return head
    if route == "/forget":
        head = f"forget {req.get('id', '')}"
        if isinstance(ans, dict) and "forgotten" in ans:
            head += f" → {ans.get('forgotten')}"
        return head
    return route


#: The height of an operation's bar, in pixels.
_BAR_H = 20


def timeline_html(events: Iterable[Mapping[str, Any]], *, title: str = "", note: str = "") -> str:
    """An HTML fragment drawing ``events`` (history events as in ``report.json``)."""
    evs = list(events)
    if not evs:
        return '<div class="memspec-timeline"><p>No operations.</p></div>'
    start = min(float(e["invoke"]) for e in evs)
    end = max(float(e["complete"] if e.get("complete") is not None else e["invoke"]) for e in evs)
    span = max(end - start, 1e-6) * 1.08
    clients = sorted({int(e["client"]) for e in evs})
    lane = {c: i for i, c in enumerate(clients)}
    # Stack overlapping bars of one client (a client is sequential, but be safe) in sub-rows.
    row_h, bar_h = 26, _BAR_H
    out = ['<div class="memspec-timeline" style="font:12px sans-serif;margin:8px 0">']
    if title:
        out.append(f"<h3 style='margin:4px 0'>{html.escape(title)}</h3>")
    if note:
        out.append(f"<p style='margin:4px 0'>{html.escape(note)}</p>")
    height = row_h * len(clients) + 24
    out.append(
        f'<div style="position:relative;height:{height}px;border:1px solid #ccc;'
        'background:#fafafa;overflow:hidden">'
    )
    for c in clients:
        top = lane[c] * row_h
        out.append(
            f'<div style="position:absolute;left:0;top:{top}px;width:72px;height:{row_h}px;'
            f'line-height:{row_h}px;padding-left:4px;color:#555">client {c}</div>'
        )
    for e in sorted(evs, key=lambda x: (float(x["invoke"]), int(x["id"]))):
        out.append(_bar(e, start, span, lane[int(e["client"])] * row_h + (row_h - bar_h) // 2))
    axis_top = row_h * len(clients) + 4
    for k in range(5):
        frac = k / 4
        out.append(
            f'<div style="position:absolute;left:{80 + frac * 900:.0f}px;top:{axis_top}px;'
            f'color:#888">{frac * span * 1000:.1f} ms</div>'
        )
    out.append("</div></div>")
    return "".join(out)


def _bar(e: Mapping[str, Any], start: float, span: float, top: int) -> str:
    """One operation's bar, ``top`` pixels down: from its invocation to its answer (hatched
    to the end when none came), its label, and a tooltip with the request and answer."""
    bar_h = _BAR_H
    t0 = float(e["invoke"]) - start
    done = e.get("complete")
    t1 = (float(done) - start) if done is not None else span
    left = 80 + t0 / span * 900
    width = max((t1 - t0) / span * 900, 3)
    color = _COLORS.get(str(e.get("route")), "#999")
    style = [
        f"position:absolute;left:{left:.1f}px;top:{top}px;width:{width:.1f}px;height:{bar_h}px",
        f"background:{color}",
        "color:#fff;overflow:hidden;white-space:nowrap;border-radius:3px;padding:0 3px",
        f"line-height:{bar_h}px;box-sizing:border-box",
    ]
    if done is None:
        style.append(
            "background-image:repeating-linear-gradient(45deg,transparent 0 6px,"
            "rgba(255,255,255,.35) 6px 12px)"
        )
    if e.get("blurred"):
        style.append("opacity:.45")
    tip = (
        f"#{e['id']} client {e['client']} {e.get('route')} "
        f"[{float(e['invoke']):.4f}s → "
        f"{'∞ (no answer)' if done is None else f'{float(done):.4f}s'}]"
        f"\nrequest: {_short(e.get('request'))}"
        f"\nanswer: {e.get('status')} {_short(e.get('answer'))}"
        + ("\n(answer not needed by the counterexample)" if e.get("blurred") else "")
        + (f"\nerror: {e.get('error')}" if e.get("error") else "")
    )
    return (
        f'<div title="{html.escape(tip, quote=True)}" style="{";".join(style)}">'
        f"{html.escape(_label(e))}</div>"
    )


def timeline_page(events: Iterable[Mapping[str, Any]], *, title: str, note: str = "") -> str:
    """A whole HTML page around :func:`timeline_html`."""
    body = timeline_html(events, title=title, note=note)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>{body}</body></html>\n"
    )
