"""The extractor's one input message (``build_reflection_input`` of
``reference/memory/reflection/extractor.py``): buildReflectionInput.

The seed fixes what the message holds, not its layout (MEM-REFLECT.5): the shown records with
their ids and their text verbatim, then the transcript -- history, request, answer, in order --
with images dropped and only its end kept past "24k chars" (a unit and a k the seed leaves open:
the last 23 900 characters kept, nothing from before the last 24 576).  The vector's ``rule``
checker holds exactly that; the reference's exact message (MEM-REFLECT.15, redacted with
the shapes of MEM-REFLECT.14) is the reference level.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.binding.codec import ArgError, memory_records
from conformance.binding.functions.base import JSON, MEMORY, Args, Fn, fn
from conformance.binding.functions.common import SECRETS, rec
from conformance.binding.judge import Judged, Narrowed, ok
from reference.memory.reflection import (
    ImagePart,
    TextPart,
    TranscriptTurn,
    build_reflection_input,
)

#: the transcript's last characters every reading of "24k chars" keeps (a cap of 24 000 less a
#: marker of the cut counted in it), and the span past which no reading keeps anything (24 576).
#: A vector of a transcript near the cap names the fragments that must be kept (``mustKeep``,
#: in order) and cut (``mustCut``), placed against these edges; any other vector keeps its
#: transcript short, and every text of it must be there.
KEPT_TAIL = 23_900
CUT_BEYOND = 24_576
IMAGE_DATA = "iVBORw0KGgoAAAANSUhEUgIMAGEBYTES"


def transcript(obj: JSON) -> list[TranscriptTurn]:
    """``[{"role", "parts": [{"type": "text", "text"} | {"type": "image", …}]}]``."""
    if not isinstance(obj, list):
        raise ArgError("transcript must be an array")
    turns = []
    for t in obj:
        if not isinstance(t, dict) or not isinstance(t.get("parts"), list):
            raise ArgError("a turn is an object with parts")
        parts: list[TextPart | ImagePart] = []
        for p in t["parts"]:
            if not isinstance(p, dict) or p.get("type") not in ("text", "image"):
                raise ArgError("a part is {type: text|image, …}")
            if p["type"] == "text":
                parts.append(TextPart(str(p.get("text", ""))))
            else:
                parts.append(
                    ImagePart(str(p.get("mediaType", "image/png")), str(p.get("data", "")))
                )
        turns.append(TranscriptTurn(str(t.get("role", "")), tuple(parts)))
    return turns


def _build(a: Args) -> JSON:
    return build_reflection_input(memory_records(a["existing"]), transcript(a["transcript"]))


def seed_rule(a: Args) -> dict[str, JSON]:
    """What the seed allows (MEM-REFLECT.5): every shown record's id and text, then the
    transcript's texts in order -- of a long one only ``mustKeep``, and none of ``mustCut`` --
    and no image's data."""
    before: list[str] = []
    for r in a["existing"]:
        before += [r["id"], r["text"]]
    texts = [
        p["text"] for t in a["transcript"] for p in t["parts"] if p["type"] == "text" and p["text"]
    ]
    absent = [p["data"] for t in a["transcript"] for p in t["parts"] if p["type"] == "image"]
    if "mustKeep" in a or "mustCut" in a:
        in_order = list(a.get("mustKeep", ()))
        absent += list(a.get("mustCut", ()))
    else:
        in_order = texts
    return {"text": {"before": before, "inOrder": in_order, "absent": [x for x in absent if x]}}


def _build_judge(a: Args) -> Judged:
    """The seed's content rule (MEM-REFLECT.5) beside the reference's exact message
    (MEM-REFLECT.15)."""
    ref = [ok(_build(a))]
    rule = {"name": "rule", "rule": seed_rule(a)}
    texts = [p.get("text", "") for t in a["transcript"] for p in t["parts"]]
    shapes = ("MEM-REFLECT.14",) if any(s in x for s in SECRETS for x in texts) else ()
    return Judged(ref, rule, reference=Narrowed(("MEM-REFLECT.15", *shapes), ref))


def _turn(role: str, *texts: str, image: bool = False) -> JSON:
    parts: list[JSON] = [{"type": "text", "text": t} for t in texts]
    if image:
        parts.append({"type": "image", "mediaType": "image/png", "data": IMAGE_DATA})
    return {"role": role, "parts": parts}


def _long_answer() -> tuple[str, str, str, str]:
    """An answer of 30 000 characters: a head, a word that lies past any reading's cut, a word
    every reading keeps, and the end."""
    head, cut, keep, end = "HEADWORD", "CUTWORD", "KEEPWORD", "final decision ship it"
    filler = "lorem ipsum "
    body_len = 30_000
    cut_at = body_len - 24_700  # the cut word starts 24 700 characters before the end
    keep_at = body_len - KEPT_TAIL  # the keep word starts 23 900 characters before the end
    text = head + (filler * 3000)[: cut_at - len(head)] + cut
    text += (filler * 3000)[: keep_at - len(text)] + keep
    text += (filler * 3000)[: body_len - len(end) - len(text)] + end
    assert len(text) == body_len and text.index(keep) == keep_at and text.index(cut) == cut_at
    return text, cut, keep, end


def _build_boundaries() -> list[tuple[str, Args]]:  # long: a data table of boundary cases
    r1 = rec("mem:org:acme:1", "deploys go out on fridays", kind="fact")
    r2 = {**rec("mem:user:slack:U1:4", "this user prefers tabs"), "scopeKey": "user:slack:U1"}
    chat = [
        _turn("user", "how do we deploy"),
        _turn("assistant", "with the deploy script"),
        _turn("user", "and on fridays"),
        _turn("assistant", "never on fridays"),
    ]
    long_text, cut, keep, end = _long_answer()
    return [
        ("records with their ids, then the transcript", {"existing": [r1, r2], "transcript": chat}),
        ("no existing records", {"existing": [], "transcript": chat}),
        ("empty transcript", {"existing": [r1], "transcript": []}),
        (
            "images dropped, the turn's text kept",
            {"existing": [], "transcript": [_turn("user", "see the chart", image=True)]},
        ),
        (
            "a turn of only an image",
            {"existing": [r1], "transcript": [_turn("user", image=True), *chat[1:]]},
        ),
        (
            "several text parts of one turn, in order",
            {"existing": [], "transcript": [_turn("user", "first part", "second part")]},
        ),
        (
            "record text verbatim: markup and punctuation",
            {"existing": [rec(text="a <b> & c; 'quoted' \"too\"")], "transcript": chat[:1]},
        ),
        (
            "eight records, the most one scope shows",
            {
                "existing": [rec(f"mem:org:acme:{i}", f"fact number {i}") for i in range(1, 9)],
                "transcript": chat,
            },
        ),
        (
            "a long answer: its end kept, its head cut (the cap's unit and k are open)",
            {
                "existing": [r1],
                "transcript": [*chat[:3], _turn("assistant", long_text)],
                "mustKeep": [keep, end],
                "mustCut": ["HEADWORD", cut],
            },
        ),
        (
            "a transcript just within 23 900 characters is kept whole",
            {
                "existing": [],
                "transcript": [_turn("assistant", "w" * 23_000 + " done")],
                "mustKeep": ["w" * 23_000 + " done"],
            },
        ),
        (
            "astral characters in the transcript",
            {"existing": [], "transcript": [_turn("user", "\U0001f600 deploy \U0001d400")]},
        ),
        (
            "a credential in the transcript (redacted by the reference's patterns: MEM-REFLECT.6)",
            {
                "existing": [r1],
                "transcript": [_turn("user", f"use {SECRETS[1]} for prod"), *chat[1:2]],
                "mustKeep": ["use ", " for prod", "with the deploy script"],
            },
        ),
    ]


_PLAIN = st.sampled_from(("deploy", "friday", "staging", "db", "alpha", "ci", "tabs", "x1"))
_plain_text = st.lists(_PLAIN, min_size=1, max_size=5).map(" ".join)


@st.composite
def _build_args(draw: st.DrawFn) -> Args:
    n = draw(st.integers(0, 3))
    existing = [rec(f"mem:org:acme:{i + 1}", draw(_plain_text) + f" r{i + 1}") for i in range(n)]
    turns = []
    for i in range(draw(st.integers(0, 4))):
        texts = [draw(_plain_text) + f" t{i}p{j}" for j in range(draw(st.integers(0, 2)))]
        turns.append(_turn(("user", "assistant")[i % 2], *texts, image=draw(st.booleans())))
    return {"existing": existing, "transcript": turns}


FUNCTIONS: tuple[Fn, ...] = (
    fn(
        "buildReflectionInput",
        MEMORY,
        ("MEM-REFLECT.5", "MEM-REFLECT.6"),
        "existing records with ids, then the transcript's tail, images dropped",
        _build,
        _build_args(),
        _build_boundaries,
        _build_judge,
        references=("MEM-REFLECT.15", "MEM-REFLECT.14"),
    ),
)
