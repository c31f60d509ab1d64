"""The closing summary printed at the end of a run: the clause table, then what went wrong."""

from __future__ import annotations

from typing import Any, TextIO

from conformance.jsonutil import head_json
from conformance.report.verdict import EXIT_INDETERMINATE, verdict_text
from conformance.scrub import clean, escape_unsafe
from conformance.scrub import shown as shown_text


def _trim(s: str, n: int) -> str:
    """What a line shows of ``s`` (it may quote a target): scrubbed, made visible (line ends,
    tabs, runs of spaces, format characters escaped -- never collapsed, so two texts that
    differ never print alike), then cut (:func:`conformance.scrub.shown`)."""
    return shown_text(s, n)


def _title(s: str, n: int) -> str:
    """A clause title (our own text, from ``specs/``) cut to a column of ``n`` characters."""
    s = escape_unsafe(" ".join(s.split()))
    return s if len(s) <= n else s[: n - 1] + "…"


def sent_line(ex: dict[str, Any]) -> str:
    """``POST /write Content-Length: 0x8, Authorization: Bearer [token] {"scopeKey": …}`` —
    the request line, the headers that matter (the token elided) and the body."""
    hdrs = _trim(", ".join(f"{k}: {v}" for k, v in ex.get("request_headers") or ()), 300)
    body = ex.get("request")
    shown = "" if body is None else " " + _trim(head_json(body, 200), 200)
    return f"{ex.get('method')} {ex.get('path')}" + (f" [{hdrs}]" if hdrs else "") + shown


def said_line(ex: dict[str, Any]) -> str:
    """The target's answer as it came: its status, and its body — JSON as JSON, anything else
    as the bytes it sent (never a parser's message in place of the body)."""
    if ex.get("transport_error"):
        return f"no answer: {_trim(ex['transport_error'], 300)}"
    status = ex.get("status")
    ctype = _trim(ex.get("content_type") or "", 100)
    if ex.get("body") is not None or not ex.get("body_error"):
        if ex.get("body") is None and ex.get("body_excerpt"):
            return f"{status} {_trim(ex['body_excerpt'], 200)}"
        return f"{status} " + _trim(head_json(ex.get("body"), 200), 200)
    raw = ex.get("raw_excerpt") or ""
    kind = f" ({ctype})" if ctype else ""
    text = repr(raw) if raw else "(empty body)"
    note = _trim(ex["body_error"], 200)
    return f"{status}{kind} {_trim(text, 200)} — {note}"


def print_summary(
    data: dict[str, Any], out: TextIO, *, report_dir: str | None = None, verbose: bool = False
) -> None:
    """Print the clause table and the divergences of a report (``RunReport.to_json()``).

    Everything printed comes from the cleaned report (the token blanked in every form)."""
    data = clean(data)
    _write_clause_table(out, data["clauses"])
    _write_counts(out, data)
    _write_divergences(out, data, verbose)
    for stale in data["expectations"]["stale"]:
        e = stale["entry"]
        name = f"clause {e['clause']}" if "clause" in e else f"scenario {e['scenario']}"
        out.write(
            f"  STALE expectation {name}: {stale['status']}"
            " — remove it from the expectations file\n"
        )
    scopes = sum(len(v) for v in data["scopes_written"].values())
    out.write(f"\nrun {data['run_id']} wrote into {scopes} scope key(s), all listed in the report")
    out.write(f"; report in {report_dir}/\n" if report_dir else "\n")
    devs = data.get("deviations") or []
    verdict = verdict_text(data["exit_code"])
    if data["exit_code"] == EXIT_INDETERMINATE:
        verdict += (
            f": {data['summary'].get('indeterminate', 0)} result(s) got no answer from the"
            " target (a transport verdict, not the store's failure; run again)"
        )
    if data["exit_code"] == 0 and data["divergences"]:
        verdict += " (only expected divergences)"
    if devs:
        level = data.get("level", "seed")
        verdict += f" at level {level}, {len(devs)} deviation(s) from the reference implementation"
    out.write(f"{verdict}\n")


def _write_clause_table(out: TextIO, rows: list[dict[str, Any]]) -> None:
    """The clause table: counts per clause, a mark for failed, expected, deviating and
    unanswered ones, and the first skip reasons."""
    out.write("\n")
    if rows:
        out.write(
            f"{'clause':<16} {'passed':>6} {'failed':>6} {'deviates':>8} {'skipped':>7}  title\n"
        )
        for r in rows:
            failed = r["failed"]
            # No answer from the target (a lost connection, a timeout) is a transport verdict:
            # shown apart, never as a failed clause.
            unanswered = r["indeterminate"]
            mark = ""
            if (failed or unanswered) and r["expected"]:
                mark = " (expected)"
            elif failed:
                mark = " ✗"
            elif r.get("deviates"):
                mark = " ≠ differs from the reference implementation"
            if unanswered:
                mark += f" ({unanswered} not judged: no answer)"
            skip = f"{r['skipped']}" if r["skipped"] else "0"
            out.write(
                f"{r['id']:<16} {r['passed']:>6} {failed:>6} {r.get('deviates', 0):>8} {skip:>7}"
                f"  {_title(r['title'], 60)}{mark}\n"
            )
            if r["skipped"] and not failed:
                for reason in r["skip_reasons"][:2]:
                    pad = f"{'':<16} {'':>6} {'':>6} {'':>8} {'':>7}"
                    out.write(f"{pad}    skipped: {_trim(reason, 70)}\n")


def _write_counts(out: TextIO, data: dict[str, Any]) -> None:
    """The verdict counts of the scenarios, probes and contract, and a line per machine."""
    s = data["summary"]

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{n} {k}" for k, n in sorted(d.items())) or "none"

    out.write(f"\nscenarios: {counts(s['scenarios'])}\n")
    if s.get("probes"):
        out.write(f"transport probes: {counts(s['probes'])}\n")
    if s.get("contract"):
        out.write(f"contract (OpenAPI fuzzing): {counts(s['contract'])}\n")
    for m in data["machines"]:
        out.write(
            f"{m['name']}: {m['verdict']} — {m['examples']} runs, {m['steps']} steps,"
            f" profile {m['profile']}, seed {m['seed']} ({m['elapsed_s']:.1f}s)\n"
        )
        explored = (m.get("details") or {}).get("explored") or {}
        first, after = explored.get("first_divergence"), explored.get("after_first")
        if first and after:
            found = len(m.get("divergences") or [])
            out.write(
                f"    {found} distinct divergence(s); the first after {first['examples']} runs,"
                f" {first['steps']} steps ({first['elapsed_s']:.1f}s); then {after['examples']}"
                f" runs, {after['steps']} steps more with each one set aside\n"
            )


def _write_divergences(out: TextIO, data: dict[str, Any], verbose: bool) -> None:
    """The divergences, then the deviations from the reference implementation."""
    s = data["summary"]
    divs = data["divergences"]
    if divs:
        out.write(f"\n{len(divs)} divergence(s), {s['unexpected']} unexpected:\n")
        engine = [d for d in divs if d["name"].startswith(ENGINE_PREFIXES)]
        for d in divs:
            if d not in engine:
                _write_divergence(out, d, _tag(d), verbose)
        _write_root_causes(out, engine, verbose)
    devs = data.get("deviations") or []
    level = data.get("level", "seed")
    if devs:
        fails = (
            "they fail this run" if level == "reference" else "they fail only at --level reference"
        )
        out.write(
            f"\n{len(devs)} difference(s) from the reference implementation (only reference"
            f" clauses differ; {fails}):\n"
        )
        for d in devs:
            tag = "EXPECTED" if d["expected_by"] else "DIFFERS FROM THE REFERENCE"
            _write_divergence(out, d, tag, verbose)


#: the results of ``memspec engine``: every diverging vector is listed, grouped by root cause
ENGINE_PREFIXES = ("engine-vectors:", "engine-property:")
#: diverging vectors shown in full per root cause; the rest one line each
SHOWN_PER_CAUSE = 3


def _tag(d: dict[str, Any]) -> str:
    if d["expected_by"]:
        return "EXPECTED"
    return "INDETERMINATE" if d["verdict"] == "indeterminate" else "DIVERGES"


def _write_root_causes(out: TextIO, divs: list[dict[str, Any]], verbose: bool) -> None:
    """The engine's divergences grouped by the clauses they are charged to (one root cause
    each): a heading per cause, its first few in full, the others one line each."""
    causes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for d in divs:
        causes.setdefault(tuple(d["clauses"]), []).append(d)
    for clauses, group in causes.items():
        where = sorted({d["name"].split(":", 1)[1] for d in group})
        out.write(
            f"  root cause [{', '.join(clauses)}]: {len(group)} diverging"
            f" vector(s)/example(s) in {', '.join(where)}\n"
        )
        for i, d in enumerate(group):
            if i < SHOWN_PER_CAUSE or verbose:
                _write_divergence(out, d, _tag(d), verbose)
            else:
                out.write(
                    f"    {_tag(d)} {d['name']} — step {d['step']}: {_trim(d['reason'], 200)}\n"
                )


def _write_divergence(out: TextIO, d: dict[str, Any], tag: str, verbose: bool) -> None:
    """One divergence or deviation: where, which clauses, why; the allowed answers, what was
    sent and what came back (unless an expectation accepts it); its replay."""
    out.write(
        f"  {tag} {d['source']} {d['name']} — step {d['step']} ({d['op']})"
        f" [{', '.join(d['clauses'])}]\n      {_trim(d['reason'], 300)}\n"
    )
    if verbose or not d["expected_by"]:
        exp = d["expected"].splitlines()
        for line in exp[:3]:
            out.write(f"      model allows: {_trim(line, 200)}\n")
        ex = d["exchange"]
        if ex is not None:
            out.write(f"      sent:         {sent_line(ex)}\n")
            out.write(f"      target said:  {said_line(ex)}\n")
    if d["replay"]:
        out.write(f"      replay: memspec replay {d['replay']}\n")
    if d["expected_by"]:
        out.write(f"      expected: {d['expected_by']['reason']}\n")
