"""Small JSON helpers shared by the drivers, oracles and reports."""

from __future__ import annotations

import json
from typing import Any

from conformance.scrub import shown, window


def head_json(v: Any, n: int, *, sort_keys: bool = False) -> str:
    """The first characters of ``v`` as one line of JSON (``repr`` if it is not JSON): enough
    of them for :func:`conformance.scrub.shown` to cut ``n`` characters from safely, without
    writing out the whole of a large value."""
    want = window(n)
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=sort_keys)
    parts: list[str] = []
    size = 0
    try:
        for part in encoder.iterencode(v):
            parts.append(part)
            size += len(part)
            if size > want:
                break
    except (TypeError, ValueError, RecursionError):
        return repr(v)[:want]
    return "".join(parts)


def short_json(v: Any, n: int = 160, *, sort_keys: bool = False) -> str:
    """``v`` as one line of JSON (``repr`` if it is not JSON) as a message may show it: the
    token blanked, controls escaped, *then* cut to about ``n`` characters."""
    return shown(head_json(v, n, sort_keys=sort_keys), n)


def json_subset(want: Any, got: Any) -> bool:
    """Whether ``got`` holds ``want``: every key of a ``want`` object (recursively), lists
    element by element with equal length, and ``true``/``false`` never equal to ``1``/``0``.
    This is what a scenario step's hand-written ``expect`` body means."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and json_subset(v, got[k]) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(json_subset(a, b) for a, b in zip(want, got, strict=True))
        )
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    return bool(want == got)
