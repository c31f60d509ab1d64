"""Strategies and record builders the families share: words and texts with every hard
character, memory records, secrets, the fixed clock (``NOW``).
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.functions.base import JSON, Args
from conformance.binding.judge import Judged, widened
from reference.memory.records import ACTIVE

# --------------------------------------------------------------------------- strategies

NOW = 1_760_000_000_000
DAY = 86_400_000
WORDS = (
    "deploy",
    "deploys",
    "friday",
    "staging",
    "db",
    "a",
    "alpha",
    "Alpha",
    "CI",
    "x1",
    "2fa",
    "caf\u00e9",
    "na\u00efve",
    "cafe\u0301",
    "\u043a\u043b\u044e\u0447",
    "\u03a9mega",
    "\u65e5\u672c",
    "\U0001f600",
    "\U0001d400bc",
    "a&b",
    "<tag>",
    "&amp;",
    "x>y",
)
SEPARATORS = (" ", " ", "  ", "\t", "\n", "-", ".", ", ", "\u00a0", "\u2028", "\x00", "\x7f")

words = st.sampled_from(WORDS)
texts = st.builds(
    lambda ws, seps: "".join(w + s for w, s in zip(ws, seps, strict=False)).strip(" "),
    st.lists(words, min_size=1, max_size=6),
    st.lists(st.sampled_from(SEPARATORS), min_size=6, max_size=6),
)
any_text = st.one_of(texts, st.text(max_size=12), st.sampled_from(("", " ", "\t\n", "   ")))
ages = st.one_of(
    st.integers(min_value=-2, max_value=30), st.integers(min_value=0, max_value=3)
).map(lambda d: NOW - d * DAY)
long_texts = st.builds(lambda w, n: " ".join([w] * n), words, st.integers(8, 60))


@st.composite
def memory_record_strategy(draw: st.DrawFn, rid: str, scope: str = "org:acme") -> JSON:
    created = draw(ages)
    rec: dict[str, JSON] = {
        "id": rid,
        "scopeKey": scope,
        "kind": draw(st.sampled_from(("fact", "summary"))),
        "text": draw(st.one_of(texts, texts, long_texts)),
        "keywords": draw(st.lists(words, max_size=2)),
        "sourceThreadKey": draw(st.sampled_from(("t:1", "slack:C1/1700.1", "t<&>"))),
        "createdAt": created,
        "useCount": draw(st.integers(0, 3)),
        "status": ACTIVE,
    }
    if draw(st.booleans()):
        rec["lastUsedAt"] = created + draw(st.integers(0, 2)) * DAY
    return rec


@st.composite
def memory_list(draw: st.DrawFn, max_size: int = 6, scope: str = "org:acme") -> list[JSON]:
    n = draw(st.integers(0, max_size))
    return [draw(memory_record_strategy(f"mem:{scope}:{i + 1}", scope)) for i in range(n)]


queries = st.one_of(texts, st.sampled_from(("", "   ", "!!!", "deploy deploy friday")))
limits = st.integers(min_value=-1, max_value=8)


def record_args(record: JSON, **extra: JSON) -> Args:
    return {"record": record, **extra}


def rec(rid: str = "mem:org:acme:1", text: str = "deploy on friday", **kw: JSON) -> JSON:
    out: dict[str, JSON] = {
        "id": rid,
        "scopeKey": "org:acme",
        "kind": "fact",
        "text": text,
        "keywords": [],
        "sourceThreadKey": "t:1",
        "createdAt": NOW,
        "useCount": 0,
        "status": "active",
    }
    out.update(kw)
    return out


def text_boundaries() -> list[tuple[str, Args]]:
    return [
        ("empty text", {"text": ""}),
        ("whitespace only", {"text": " \t\n\u00a0\u3000"}),
        ("ASCII letters and digits, mixed case", {"text": "Deploy2Prod ON Friday"}),
        ("punctuation splits tokens", {"text": "a.b,c-d_e/f"}),
        ("non-ASCII letters are not token characters", {"text": "caf\u00e9 na\u00efve"}),
        ("combining mark after e", {"text": "cafe\u0301 ok"}),
        ("astral characters", {"text": "\U0001f600deploy\U0001d400x"}),
        ("controls inside a word", {"text": "de\x00ploy\x7f"}),
        ("escape metacharacters", {"text": "a&amp;<b>&lt;"}),
        ("repeats kept", {"text": "db db DB"}),
        ("fullwidth digits are not ASCII", {"text": "\uff11\uff12 12"}),
        (
            "Kelvin sign lower-cases to k (Unicode case mapping; letters outside ASCII "
            "never become tokens)",
            {"text": "\u212aelvin"},
        ),
        ("long text", {"text": "word " * 800}),
    ]


def with_now(cases: list[tuple[str, Args]]) -> list[tuple[str, Args]]:
    return [(c, {**a, "now": a.get("now", NOW)}) for c, a in cases]


SECRETS = (
    "Bearer " + "tok." * 5,
    "sk-ant-" + "a" * 30,
    "ghp_" + "B" * 36,
    "xoxb-" + "1234567890-abc",
    "AKIA" + "ABCDEFGHIJKLMNOP",
)

REC = memory_record_strategy("mem:org:acme:1")


# --------------------------------------------------------------------------- the seed's domain

#: the reference rule an input outside the seed's domain is judged by (``outside_domain``)
OUTSIDE_DOMAIN = ("MEM-SCOPE.8",)
#: the seed's read limit (§16, §24: an integer 1-50) and scope cap (§29: 1-10000)
LIMIT_RANGE = (1, 50)
CAP_RANGE = (1, 10_000)


def in_range(value: JSON, bounds: tuple[int, int]) -> bool:
    """Whether ``value`` is an integer within ``bounds`` (both ends included)."""
    return isinstance(value, int) and bounds[0] <= value <= bounds[1]


def outside_domain(ref: Judged, what: str) -> Judged:
    """An input the seed never gives (``what``): any outcome at the seed level, the reference's
    at the reference level (MEM-SCOPE.8)."""
    note = f"{what}: outside the seed's domain, any answer (MEM-SCOPE.8)"
    return widened(ref, OUTSIDE_DOMAIN, [], {"name": "any"}, note)
