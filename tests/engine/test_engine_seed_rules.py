"""The bindings whose vectors carry the seed's rule beside the reference's exact answer --
``scoreParameters``, ``resolveScopeCap``, ``buildReflectionInput`` -- and the exact
``routeCandidate``: the ``rule`` checker, what each seed rule accepts and refuses, a deviation
(an answer the seed allows but the reference does not give) reported apart from a failure, and
the routing vectors drawing the whole domain the seed's sentences quantify over."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.binding.check import judge_answer
from conformance.binding.functions import BY_NAME, outcome_of
from conformance.binding.functions.memory import extractor, routing, scope_cap
from conformance.binding.host import Answer
from conformance.binding.judge import Judged, ok, outcome_allowed, rule_holds, verdict_of
from conformance.binding.vectors import function_vectors, load_dir, vector_file
from reference.memory.records import MemoryCandidate
from reference.memory.reflection import (
    ReflectionCandidate,
    ReflectionResult,
    RunScopes,
    route_candidates,
    route_decision,
)
from reference.memory.scoring import TAU_MS, score_parameters, tau_meets_seed

WEEK = TAU_MS


def deviates(got: object, judged: Judged) -> bool:
    """The seed allows ``got``, the reference level does not."""
    return verdict_of(got, judged) == "deviate"


def _allowed(name: str, args: dict[str, object], value: object) -> bool:
    return outcome_allowed(ok(value), BY_NAME[name].judge(args))


# --------------------------------------------------------------------------- the rule checker


@pytest.mark.clause("MEM-SCORE.9", "MEM-CAP.5", "MEM-REFLECT.5")
@pytest.mark.parametrize(
    ("value", "rule", "holds"),
    [
        (0.7, {"const": 0.7}, True),
        (0.7000000000000001, {"const": 0.7}, True),  # within 4 ulps
        (0.71, {"const": 0.7}, False),
        (True, {"const": 1}, False),
        (5, {"range": {"min": 1, "below": 10}}, True),
        (10, {"range": {"min": 1, "below": 10}}, False),
        (False, {"range": {"min": 0, "below": 10}}, False),
        ({"a": 1}, {"object": {"a": {"const": 1}}}, True),
        ({"a": 1, "b": 2}, {"object": {"a": {"const": 1}}}, False),
        (None, {"anyOf": [{"const": 1}, {"const": None}]}, True),
        ("ab cd ef", {"text": {"before": ["ab"], "inOrder": ["cd", "ef"]}}, True),
        ("ab ef cd", {"text": {"before": ["ab"], "inOrder": ["cd", "ef"]}}, False),
        ("cd ab ef", {"text": {"before": ["ab"], "inOrder": ["cd", "ef"]}}, False),
        ("ab cd x", {"text": {"inOrder": ["cd"], "absent": ["x"]}}, False),
        (3, {"text": {}}, False),
    ],
)
def test_the_rule_checker(value: object, rule: dict[str, object], holds: bool) -> None:
    assert rule_holds(value, rule) is holds


# --------------------------------------------------------------------------- scoreParameters


@pytest.mark.clause("MEM-SCORE.9", "MEM-SCORE.10")
def test_score_parameters_are_the_seeds_weights_and_about_a_week() -> None:
    p = score_parameters()
    assert (p.alpha, p.beta, p.tau_ms) == (0.7, 0.3, 604_800_000)
    assert tau_meets_seed(p.tau_ms)
    # "≈ 1 week" to the week: half a week in, a week and a half out
    assert tau_meets_seed(WEEK // 2) and not tau_meets_seed(WEEK // 2 - 1)
    assert tau_meets_seed(WEEK * 3 // 2 - 1) and not tau_meets_seed(WEEK * 3 // 2)


@pytest.mark.clause("MEM-SCORE.9", "MEM-SCORE.10")
@pytest.mark.parametrize(
    ("answer", "allowed", "deviation"),
    [
        ({"alpha": 0.7, "beta": 0.3, "tauMs": 604_800_000}, True, False),
        ({"alpha": 0.7, "beta": 0.3, "tauMs": 6 * 86_400_000}, True, True),  # ≈ a week
        ({"alpha": 0.7, "beta": 0.3, "tauMs": 168 * 3_600_000.0}, True, False),
        ({"alpha": 0.7, "beta": 0.3, "tauMs": 86_400_000}, False, False),  # a day
        ({"alpha": 0.6, "beta": 0.4, "tauMs": 604_800_000}, False, False),
        ({"alpha": 0.7, "beta": 0.3}, False, False),
    ],
)
def test_tau_is_judged_as_strictly_as_the_seed(
    answer: dict[str, object], allowed: bool, deviation: bool
) -> None:
    judged = BY_NAME["scoreParameters"].judge({})
    assert outcome_allowed(ok(answer), judged) is allowed
    assert (allowed and deviates(ok(answer), judged)) is deviation


# --------------------------------------------------------------------------- resolveScopeCap


@pytest.mark.clause("MEM-CAP.5", "MEM-CAP.6")
@pytest.mark.parametrize(
    ("value", "answer", "allowed"),
    [
        (1, {"cap": 1, "warning": None}, True),
        (10_000, {"cap": 10_000, "warning": None}, True),
        (250.0, {"cap": 250, "warning": None}, True),
        (250, {"cap": 250, "warning": "[memory] maxRecordsPerScope 250"}, False),
        (0, {"cap": 500, "warning": "maxRecordsPerScope is out of range; using 500"}, True),
        (0, {"cap": 500, "warning": "the cap is out of range; using 500"}, False),  # no key
        (0, {"cap": 500, "warning": "maxRecordsPerScope is out of range"}, False),  # no default
        (0, {"cap": 500, "warning": None}, False),  # silent
        (0, {"cap": 0, "warning": None}, False),
        (12.5, {"cap": 12, "warning": None}, False),
        (10_001, {"cap": 10_000, "warning": None}, False),
        (True, {"cap": 1, "warning": None}, False),
        (None, {"cap": 500, "warning": None}, True),
        (None, {"cap": 500, "warning": "no maxRecordsPerScope set"}, True),  # open point
        (None, {"cap": 200, "warning": None}, False),
        ("300", {"cap": 300, "warning": None}, True),  # open point: its number
        ("300", {"cap": 500, "warning": "maxRecordsPerScope: 500"}, True),  # or the default
        ("300", {"cap": 500, "warning": None}, False),
        ("lots", {"cap": 500, "warning": "maxRecordsPerScope? 500"}, True),
    ],
)
def test_the_cap_rule_is_the_seeds(value: object, answer: dict[str, object], allowed: bool) -> None:
    args = {} if value is None else {"value": value}
    assert _allowed("resolveScopeCap", args, answer) is allowed
    assert rule_holds(answer, scope_cap.seed_rule(value)) is allowed


@pytest.mark.clause("MEM-CAP.6")
def test_the_reference_cap_warning_and_silence() -> None:
    call = BY_NAME["resolveScopeCap"].call
    assert call({}) == {"cap": 500, "warning": None}
    assert call({"value": "300"})["cap"] == 500
    warning = call({"value": 0})["warning"]
    assert warning == (
        "[memory] memory.maxRecordsPerScope must be an integer 1-10000; using the default 500"
    )


# --------------------------------------------------------------------------- buildReflectionInput


def _long_vector() -> Any:
    return next(
        v.args for v in function_vectors(BY_NAME["buildReflectionInput"]) if "mustCut" in v.args
    )


@pytest.mark.clause("MEM-REFLECT.5", "MEM-REFLECT.15")
def test_the_reference_input_keeps_the_tail_and_drops_images() -> None:
    args = _long_vector()
    out = BY_NAME["buildReflectionInput"].call(args)
    assert "KEEPWORD" in out and out.endswith("final decision ship it")
    assert "CUTWORD" not in out and "HEADWORD" not in out
    assert "\u2026(earlier turns omitted)\u2026\n" in out
    chart = {"existing": [], "transcript": [extractor._turn("user", "see", image=True)]}
    assert extractor.IMAGE_DATA not in BY_NAME["buildReflectionInput"].call(chart)


@pytest.mark.clause("MEM-REFLECT.5", "MEM-REFLECT.15")
def test_the_seed_rule_takes_any_layout_and_any_reading_of_24k() -> None:
    args = _long_vector()
    transcript = "\n\n".join(p["text"] for t in args["transcript"] for p in t["parts"])
    records = "\n".join(f"{r['text']} (id {r['id']})" for r in args["existing"])
    for keep in (23_900, 24_000, 24_576):
        other = f"## Known\n{records}\n## Thread\n{transcript[-keep:]}"
        assert _allowed("buildReflectionInput", args, other), keep
        assert deviates(ok(other), BY_NAME["buildReflectionInput"].judge(args))


@pytest.mark.clause("MEM-REFLECT.5")
@pytest.mark.parametrize(
    "broken",
    [
        "head cap",  # the first 24 000 characters kept
        "tail too short",  # only the last 20 000
        "transcript first",  # records after the transcript
        "no ids",  # records without their ids
        "image kept",
    ],
)
def test_the_seed_rule_refuses_what_the_seed_forbids(broken: str) -> None:
    cases = function_vectors(BY_NAME["buildReflectionInput"])
    long_args = _long_vector()
    chart = next(v.args for v in cases if v.comment.startswith("images dropped"))
    plain = cases[0].args
    ref = BY_NAME["buildReflectionInput"].call
    if broken == "head cap":
        text = "\n\n".join(p["text"] for t in long_args["transcript"] for p in t["parts"])
        args, answer = long_args, ref({**long_args, "transcript": []}) + text[:24_000]
    elif broken == "tail too short":
        text = ref(long_args)
        args, answer = long_args, text[:200] + text[-20_000:]
    elif broken == "transcript first":
        out = ref(plain)
        head, _, tail = out.partition("\n\nTranscript:\n")
        args, answer = plain, tail + "\n" + head
    elif broken == "no ids":
        args, answer = plain, ref(plain).replace("mem:", "record ")
    else:
        args, answer = chart, ref(chart) + f"\n[image {extractor.IMAGE_DATA}]"
    assert not _allowed("buildReflectionInput", args, answer)


# --------------------------------------------------------------------------- routeCandidate


def _route_domain() -> list[tuple[str, tuple[str, ...], str | None, str | None]]:
    sets = [c for n in range(4) for c in itertools.combinations(tuple(routing.OPTIONAL), n)]
    out = []
    for kinds in sets:
        keys = [routing.ORG, *(routing.OPTIONAL[k] for k in kinds)]
        for audience, origin, sup in itertools.product(
            routing.AUDIENCES, routing.ORIGINS, [None, *keys]
        ):
            out.append((audience, kinds, origin, sup))
    return out


@pytest.mark.clause("MEM-ROUTE.3", "MEM-ROUTE.4", "MEM-ROUTE.5", "MEM-ROUTE.6")
def test_the_routing_vectors_draw_the_whole_domain_without_a_pointer() -> None:
    vectors = function_vectors(BY_NAME["routeCandidate"])
    seen = {json.dumps(v.args, sort_keys=True) for v in vectors}
    for audience, kinds, origin, sup in _route_domain():
        if sup is None:
            args = routing._args(audience, kinds, origin, None)
            assert json.dumps(args, sort_keys=True) in seen, args
    assert len(vectors) >= 4 * 8 * 7 + 4 * 2 * 7


@pytest.mark.clause("MEM-ROUTE.3", "MEM-ROUTE.4", "MEM-ROUTE.5", "MEM-ROUTE.6")
def test_one_decision_is_what_the_whole_routing_does_with_that_candidate() -> None:
    for audience, kinds, origin, sup in _route_domain():
        scopes = RunScopes(routing.ORG, **{k: routing.OPTIONAL[k] for k in kinds})
        cand = MemoryCandidate("fact", "t", "th", supersedes="mem:x:1" if sup else None)
        result = ReflectionResult((ReflectionCandidate(cand, audience),), None)
        plan = route_candidates(result, scopes, {"mem:x:1": sup} if sup else {}, origin)
        target, _reason, keeps = route_decision(audience, sup, scopes, origin)
        written = [(w.scope_key, c) for w in plan.writes for c in w.candidates]
        assert [k for k, _ in written] == ([target] if target else [])
        if written:
            assert (written[0][1].supersedes is not None) is keeps


@pytest.mark.clause("MEM-ROUTE.3", "MEM-ROUTE.4", "MEM-ROUTE.5", "MEM-ROUTE.6")
@pytest.mark.parametrize(
    ("args", "want"),
    [
        (routing._args("user", ("user",), "public", None), ("user:slack:U1", False)),
        (routing._args("user", (), "public", None), (routing.ORG, False)),
        (routing._args("org", ("user", "channel"), "dm", None), ("user:slack:U1", False)),
        (routing._args("org", ("channel",), "group_dm", None), ("channel:slack:C1", False)),
        (
            routing._args("org", ("user", "channel", "repo"), None, None),
            ("channel:slack:C1", False),
        ),
        (routing._args("org", ("repo",), "private", None), (None, False)),
        (routing._args("repo", ("repo",), "private", None), ("repo:acme/api", False)),
        (routing._args("user", ("user",), "machine", routing.ORG), (routing.ORG, True)),
        (routing._args("org", ("user",), "dm", routing.ORG), ("user:slack:U1", False)),
        (routing._args("org", ("user",), "dm", "user:slack:U1"), ("user:slack:U1", True)),
    ],
)
def test_routing_decisions_the_seed_spells_out(
    args: dict[str, object], want: tuple[str | None, bool]
) -> None:
    assert BY_NAME["routeCandidate"].call(args) == {"scopeKey": want[0], "keepsSupersedes": want[1]}


# --------------------------------------------------------------------------- deviations


@pytest.mark.clause("MEM-SCORE.10", "MEM-CAP.6", "MEM-REFLECT.15")
def test_an_answer_only_the_reference_rules_out_is_a_deviation_naming_them() -> None:
    judged = BY_NAME["scoreParameters"].judge({})
    six = Answer("ok", {"alpha": 0.7, "beta": 0.3, "tauMs": 6 * 86_400_000})
    step = judge_answer(0, "scoreParameters", ("MEM-SCORE.9", "MEM-SCORE.10"), "v", six, judged)
    assert step.verdict == "deviate" and step.clauses == ("MEM-SCORE.10",)
    day = Answer("ok", {"alpha": 0.7, "beta": 0.3, "tauMs": 86_400_000})
    step = judge_answer(0, "scoreParameters", ("MEM-SCORE.9", "MEM-SCORE.10"), "v", day, judged)
    assert step.verdict == "diverge"
    plain = Judged([ok(1)])
    assert verdict_of(ok(2), plain) == "diverge"


@pytest.mark.clause("MEM-CAP.5", "MEM-CAP.6")
def test_an_exported_vector_keeps_its_reference_answers(tmp_path: Path) -> None:
    fn = BY_NAME["resolveScopeCap"]
    vectors = function_vectors(fn)
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "resolveScopeCap.json").write_text(json.dumps(vector_file(fn, vectors)))
    index = {"files": [{"function": fn.name, "file": "memory/resolveScopeCap.json"}]}
    (tmp_path / "index.json").write_text(json.dumps(index))
    back = load_dir(tmp_path)[0].vectors
    assert [v.judged for v in back] == [
        Judged(v.judged.allowed, v.judged.checker, [], v.judged.reference) for v in vectors
    ]
    assert all(v.judged.reference and v.judged.reference.clauses == ("MEM-CAP.6",) for v in back)
    assert all(outcome_allowed(outcome_of(fn.call, v.args), v.judged) for v in back)


# --------------------------------------------------------------------------- listingScopeKeys


@pytest.mark.clause("MEM-CMD.4")
def test_the_listing_vectors_draw_every_scope_word_with_every_request() -> None:
    vectors = function_vectors(BY_NAME["listingScopeKeys"])
    assert len({json.dumps(v.args, sort_keys=True) for v in vectors}) == 5 * 2**4


@pytest.mark.clause("MEM-CMD.4")
@pytest.mark.parametrize(
    ("args", "want"),
    [
        ({"scope": "all", "org": "acme"}, ["org:acme"]),
        (
            {"scope": "all", "org": "acme", "userId": "slack:U1", "channelId": "slack:C1",
             "boundRepo": "acme/web"},
            ["user:slack:U1", "repo:acme/web", "channel:slack:C1", "org:acme"],
        ),
        ({"scope": "repo", "org": "acme", "repo": "acme/api", "boundRepo": "acme/web"},
         ["repo:acme/api"]),
        ({"scope": "repo", "org": "acme"}, None),  # says so without a repo
        ({"scope": "channel", "org": "acme", "userId": "slack:U1"}, None),
        ({"scope": "me", "org": "acme", "channelId": "slack:C1"}, None),
        ({"scope": "org", "org": "acme"}, ["org:acme"]),
    ],
)  # fmt: skip
def test_listing_scopes_the_seed_spells_out(args: dict[str, object], want: object) -> None:
    got = outcome_of(BY_NAME["listingScopeKeys"].call, args)
    assert got == ({"throws": True} if want is None else ok(want))


# --------------------------------------------------------------------------- recency under τ


def _recency_with(tau_days: float, args: dict[str, Any]) -> float:
    from conformance.binding.catalogue import _recency_tau

    return float(_recency_tau(tau_days)(args))


@pytest.mark.clause("MEM-SCORE.3", "MEM-SCORE.9", "MEM-SCORE.10")
@pytest.mark.parametrize(
    ("tau_days", "verdict"),
    [
        (7, "pass"),
        (3.5, "deviate"),
        (6, "deviate"),
        (10.4, "deviate"),
        (3.4, "fail"),
        (10.6, "fail"),
    ],
)
def test_recency_is_judged_for_every_tau_of_about_a_week(tau_days: float, verdict: str) -> None:
    fn = BY_NAME["recencyScore"]
    seen = set()
    for v in function_vectors(fn):
        got = ok(_recency_with(tau_days, v.args))
        if not outcome_allowed(got, v.judged):
            seen.add("fail")
        elif deviates(got, v.judged):
            seen.add("deviate")
    assert max(seen or {"pass"}, key=["pass", "deviate", "fail"].index) == verdict


@pytest.mark.clause("MEM-SCORE.9", "MEM-SCORE.10")
def test_seed_taus_find_every_order_a_tau_of_the_range_gives() -> None:
    from conformance.binding.codec import memory_records
    from conformance.binding.functions.common import DAY, NOW, rec
    from reference.memory.engine import rank_records
    from reference.memory.scoring import TAU_SEED_MAX_MS, TAU_SEED_MIN_MS, seed_taus

    # 9 of 10 tokens used 6.3 days ago against 10 of 10 used 12.1 days ago: the second comes
    # first at both ends of the range, at seven days and at the range's middle; the first only
    # between two crossings near nine days -- found only by the crossings
    query = " ".join(f"w{i}" for i in range(10))
    nine = " ".join(f"w{i}" for i in range(9))
    recs = memory_records(
        [
            rec("mem:org:acme:1", nine, createdAt=NOW - 63 * DAY // 10),
            rec("mem:org:acme:2", query, createdAt=NOW - 121 * DAY // 10),
        ]
    )
    now = NOW
    taus = seed_taus(query, recs, now)
    assert taus[0] == TAU_MS and all(TAU_SEED_MIN_MS <= t < TAU_SEED_MAX_MS for t in taus)

    def order(tau: float) -> list[str]:
        return [r.id for r in rank_records(recs, query, 2, now, tau_ms=tau)]

    grid = {tuple(order(TAU_SEED_MIN_MS + i * (TAU_SEED_MAX_MS - TAU_SEED_MIN_MS) / 400))
            for i in range(400)}  # fmt: skip
    assert grid == {tuple(order(t)) for t in taus} and len(grid) == 2
    ends = {tuple(order(TAU_SEED_MIN_MS)), tuple(order(TAU_SEED_MAX_MS - 1))}
    assert len(ends) == 1  # the other order lies strictly inside: only the crossings find it


@pytest.mark.clause("MEM-SCORE.5", "MEM-SCORE.9", "MEM-SCORE.10")
def test_a_ranking_only_another_tau_gives_deviates_and_a_wrong_one_fails() -> None:
    vector = next(
        v for v in function_vectors(BY_NAME["rankRecords"]) if "depends on tau" in v.comment
    )
    assert outcome_allowed(ok(["mem:org:acme:7"]), vector.judged)
    assert not deviates(ok(["mem:org:acme:7"]), vector.judged)
    assert outcome_allowed(ok(["mem:org:acme:6"]), vector.judged)  # a τ below 6.65 days
    assert deviates(ok(["mem:org:acme:6"]), vector.judged)
    assert not outcome_allowed(ok(["mem:org:acme:6", "mem:org:acme:7"]), vector.judged)
