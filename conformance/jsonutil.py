"""Small JSON helpers shared by the drivers, oracles and reports."""

from __future__ import annotations

import json
from typing import Any


def short_json(v: Any, n: int = 160, *, sort_keys: bool = False) -> str:
    """``v`` as one line of JSON (``repr`` if it is not JSON), cut to ``n`` characters."""
    try:
        s = json.dumps(v, ensure_ascii=False, sort_keys=sort_keys)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= n else s[: n - 1] + "…"


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
