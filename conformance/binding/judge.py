"""Judging one answer of an engine: the allowed outcomes of a call and the named checkers.

An *outcome* is ``{"ok": value}`` (the function returned ``value``) or ``{"throws": true}``
(the function refused its input).  A call's :class:`Judged` lists every outcome the *seed*
allows and, where the set is too large to list, names a checker
(``specs/engine-vectors.schema.json`` documents each): ``unordered``, ``tie_groups``,
``mint_keywords``, ``redacted``, ``any``, ``case_open``, ``rule`` (a small grammar of what the
seed allows of a value: :func:`rule_holds`).  Where a ``reference`` rule (a clause
whose source is ``reference``) fixes the answer further, :attr:`Judged.reference` holds that
narrower set and the clauses that fix it: an answer the seed allows but the reference set does
not is a *deviation* charged to those clauses (:func:`verdict_of`).  Numbers are equal within
:data:`FLOAT_ULPS` units in the last place (engines differ in ``exp`` by an ulp); strings are
equal when their UTF-16 code units are (a decoded JSON string in Python is its sequence of code
points, surrogate pairs joined, which is the same test).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from conformance.jsonutil import short_json
from reference.memory.scoring import tokenize

JSON = Any
FLOAT_ULPS = 4


@dataclass(frozen=True)
class Narrowed:
    """The reference level of a call: the outcomes the reference rules ``clauses`` allow (a
    subset of the seed's)."""

    clauses: tuple[str, ...]
    allowed: list[JSON]
    checker: dict[str, JSON] | None = None


@dataclass(frozen=True)
class Judged:
    """The outcomes the seed allows (``allowed``, or ``checker``), the open points named
    (``notes``), and where a reference rule fixes more, the narrower ``reference`` level."""

    allowed: list[JSON]
    checker: dict[str, JSON] | None = None
    notes: list[str] = field(default_factory=list)
    reference: Narrowed | None = None

    def at_reference(self) -> Judged:
        """The reference level as a judgement of its own (the seed's when nothing narrows)."""
        if self.reference is None:
            return self
        return Judged(self.reference.allowed, self.reference.checker)


def widened(
    ref: Judged,
    clauses: tuple[str, ...],
    allowed: list[JSON],
    checker: dict[str, JSON] | None,
    note: str,
) -> Judged:
    """``ref`` (what the reference allows) kept as the reference level of ``clauses``, and the
    seed level widened to ``allowed``/``checker`` (``ref``'s outcomes kept in it)."""
    seed = list(ref.allowed)
    for a in allowed:
        if a not in seed:
            seed.append(a)
    narrowed = ref.reference
    if narrowed is not None:  # widened twice: both rules charge a deviation
        clauses = tuple(dict.fromkeys((*narrowed.clauses, *clauses)))
        base = Narrowed(clauses, narrowed.allowed, narrowed.checker)
    else:
        base = Narrowed(clauses, list(ref.allowed), ref.checker)
    return Judged(seed, checker, [*ref.notes, note], base)


def ok(value: JSON) -> dict[str, JSON]:
    return {"ok": value}


THROWS: dict[str, JSON] = {"throws": True}


def _ordered(x: float) -> int:
    """The float's position on the number line, as an integer (for ulp distances)."""
    n: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return n if n >= 0 else -(n & 0x7FFFFFFFFFFFFFFF)


def numbers_close(a: float, b: float, ulps: int = FLOAT_ULPS) -> bool:
    if a == b:
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(_ordered(float(a)) - _ordered(float(b))) <= ulps


def _is_num(v: JSON) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def json_close(a: JSON, b: JSON) -> bool:
    """Structural JSON equality with numbers within ``FLOAT_ULPS`` and booleans only booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_num(a) and _is_num(b):
        return numbers_close(float(a), float(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_close(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _canon(v: JSON) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=True)


def _tie_groups_ok(got: JSON, params: dict[str, JSON]) -> bool:
    groups: list[list[str]] = params["groups"]
    length: int = params["length"]
    if not isinstance(got, list) or len(got) != length or len(set(map(_canon, got))) != length:
        return False
    where = {g: i for i, grp in enumerate(groups) for g in grp}
    if any(not isinstance(x, str) or x not in where for x in got):
        return False
    seq = got if params.get("ordered", True) else sorted(got, key=lambda x: where[x])
    left = [len(g) for g in groups]
    current = 0
    for x in seq:
        gi = where[x]
        while current < gi:
            if left[current] != 0:
                return False
            current += 1
        if gi != current:
            return False
        left[gi] -= 1
    return True


def _mint_keywords_ok(got: JSON, allowed: list[JSON]) -> bool:
    if not isinstance(got, dict):
        return False
    kws = got.get("keywords")
    if not isinstance(kws, list) or not all(isinstance(k, str) for k in kws):
        return False
    text = got.get("text")
    if not isinstance(text, str):
        return False
    text_tokens = set(tokenize(text))
    if any(t not in text_tokens for k in kws for t in tokenize(k)):
        return False
    rest = {k: v for k, v in got.items() if k != "keywords"}
    for a in allowed:
        if "ok" in a and isinstance(a["ok"], dict):
            want = {k: v for k, v in a["ok"].items() if k != "keywords"}
            if json_close(rest, want):
                return True
    return False


def _redacted_ok(got: JSON, params: dict[str, JSON]) -> bool:
    if not isinstance(got, str):
        return False
    return all(s not in got for s in params.get("secrets", ())) and all(
        k in got for k in params.get("kept", ())
    )


def _case_open_ok(got: JSON, allowed: list[JSON], params: dict[str, JSON]) -> bool:
    """Equal to an allowed string but at ``positions`` (indices of characters the reference's
    Unicode does not know), where any character other than ASCII may stand."""
    if not isinstance(got, str):
        return False
    free = set(params.get("positions", ()))
    for a in allowed:
        want = a.get("ok") if isinstance(a, dict) else None
        if not isinstance(want, str) or len(want) != len(got):
            continue
        pairs = enumerate(zip(want, got, strict=True))
        if all(x == y or (i in free and not y.isascii()) for i, (x, y) in pairs):
            return True
    return False


def _text_holds(got: JSON, spec: dict[str, JSON]) -> bool:
    """``got`` is a string holding every ``before`` fragment, then -- after the last of them
    ends -- every ``inOrder`` fragment in that order (no overlaps), and no ``absent`` one."""
    if not isinstance(got, str):
        return False
    if any(f in got for f in spec.get("absent", ())):
        return False
    pos = 0
    for frag in spec.get("before", ()):
        at = got.find(frag)
        if at < 0:
            return False
        pos = max(pos, at + len(frag))
    for frag in spec.get("inOrder", ()):
        at = got.find(frag, pos)
        if at < 0:
            return False
        pos = at + len(frag)
    return True


def rule_holds(got: JSON, rule: dict[str, JSON]) -> bool:
    """Whether a value meets a ``rule`` (the ``rule`` checker; the schema documents it):
    ``{"const": v}`` equals ``v`` (as answers compare); ``{"anyOf": [r, …]}`` meets one;
    ``{"object": {name: r, …}}`` is an object with exactly those members, each meeting its
    rule; ``{"range": {"min": a, "below": b}}`` is a number, ``a <= x < b``; ``{"text": {…}}``
    is a string holding fragments (:func:`_text_holds`); ``{"tieGroups": {groups, length,
    ordered?}}`` meets the ``tie_groups`` checker of those parameters."""
    if "const" in rule:
        return json_close(got, rule["const"])
    if "anyOf" in rule:
        return any(rule_holds(got, r) for r in rule["anyOf"])
    if "object" in rule:
        members: dict[str, JSON] = rule["object"]
        return (
            isinstance(got, dict)
            and got.keys() == members.keys()
            and all(rule_holds(got[k], r) for k, r in members.items())
        )
    if "tieGroups" in rule:
        return _tie_groups_ok(got, rule["tieGroups"])
    if "range" in rule:
        lo, below = rule["range"]["min"], rule["range"]["below"]
        return _is_num(got) and bool(lo <= got < below)
    if "text" in rule:
        return _text_holds(got, rule["text"])
    raise ValueError(f"unknown rule {sorted(rule)!r}")


def verdict_of(got: JSON, judged: Judged) -> str:
    """``pass`` (the reference level allows it), ``deviate`` (only the seed level does: it
    differs from the reference implementation on ``judged.reference.clauses``) or ``diverge``."""
    if not outcome_allowed(got, judged):
        return "diverge"
    if judged.reference is not None and not outcome_allowed(got, judged.at_reference()):
        return "deviate"
    return "pass"


def outcome_allowed(got: JSON, judged: Judged) -> bool:
    """True when ``got`` (an outcome) is one the call allows at the seed level."""
    if not isinstance(got, dict):
        return False
    checker = judged.checker
    if checker is not None and checker["name"] == "any":
        return "throws" in got or "ok" in got
    if "throws" in got:
        return any("throws" in a for a in judged.allowed)
    if "ok" not in got:
        return False
    value = got["ok"]
    if checker is None:
        return any("ok" in a and json_close(value, a["ok"]) for a in judged.allowed)
    name = checker["name"]
    if name == "unordered":
        if not isinstance(value, list):
            return False
        mine = sorted(map(_canon, value))
        return any(
            "ok" in a and isinstance(a["ok"], list) and sorted(map(_canon, a["ok"])) == mine
            for a in judged.allowed
        )
    if name == "tie_groups":
        return _tie_groups_ok(value, checker)
    if name == "mint_keywords":
        return _mint_keywords_ok(value, judged.allowed)
    if name == "redacted":
        return _redacted_ok(value, checker)
    if name == "case_open":
        return _case_open_ok(value, judged.allowed, checker)
    if name == "rule":
        return rule_holds(value, checker["rule"])
    raise ValueError(f"unknown checker {name!r}")


def describe(judged: Judged) -> str:
    """The allowed set in words, for a report."""
    shown = " | ".join(short_json(a, 300, sort_keys=True) for a in judged.allowed[:4])
    if len(judged.allowed) > 4:
        shown += f" | … ({len(judged.allowed)} in all)"
    if judged.checker is not None:
        return (
            f"checker {short_json(judged.checker, 300, sort_keys=True)}; reference answer {shown}"
        )
    return shown
