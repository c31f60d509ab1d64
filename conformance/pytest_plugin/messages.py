"""The text of a failing item: the step, its clauses, the request, what the model allowed and
what the target said, each trimmed to one readable line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.vocabulary import Exchange, StepOutcome

#: How much of a JSON body or a model description one line of a failure message shows.
LINE = 400


def option_names(message: str, url: str) -> str:
    """A driver's message without its leading URL, naming the plugin's options, not the CLI's."""
    return message.removeprefix(f"{url}: ").replace("--allow-dirty", "--memspec-allow-dirty")


def trim(text: str, limit: int = LINE) -> str:
    """One line of at most ``limit`` characters: scrubbed, made visible (line ends and runs
    of spaces escaped, never collapsed), *then* cut."""
    from conformance.scrub import shown  # noqa: PLC0415 - the plugin loads lazily

    return shown(text, limit)


def as_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def said(ex: Exchange | None) -> str:
    if ex is None:
        return "(no request was sent)"
    if ex.status is None:
        return f"no HTTP answer: {ex.transport_error}"
    if ex.body is not None:
        body = as_json(ex.body)
    elif ex.raw_excerpt:
        body = f"{ex.body_error or ''} {ex.raw_excerpt!r}"
    else:
        body = ex.body_error or ""
    return trim(f"{ex.status} {body}".strip())


def step_lines(step: StepOutcome | None, clauses: list[str]) -> list[str]:
    """The failing step: where, which clauses, the request, what was allowed, what came back."""
    if step is None:
        return [f"  clauses:       {', '.join(clauses) or '(none named)'}"]
    lines = [
        f"  step:          {step.index} ({step.op}) — {step.verdict}: {trim(step.reason)}",
        f"  clauses:       {', '.join(step.clauses or tuple(clauses)) or '(none named)'}",
    ]
    ex = step.exchange
    if ex is not None:
        request = f"{ex.method} {ex.path}"
        if ex.request_body is not None:
            request += " " + as_json(ex.request_body)
        lines.append(f"  request:       {trim(request)}")
    allowed = [ln for ln in step.expected.splitlines() if ln.strip()] or ["(not stated)"]
    lines.append(f"  model allowed: {trim(allowed[0])}")
    lines += [f"                 {trim(ln)}" for ln in allowed[1:8]]
    if len(allowed) > 8:
        lines.append(f"                 … {len(allowed) - 8} more line(s) in the replay file")
    lines.append(f"  target said:   {said(ex)}")
    return lines
