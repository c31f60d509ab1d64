"""Every allowed variant of the bundled Memory Worker is judged CONFORMANT.

A variant makes one other choice the spec allows (``conformance/embedded/catalogue/
memory_variants.py``); a harness that fails one raises a false alarm on a correct store.  Each
variant runs the whole memory corpus and the memory state machine through the harness API.

The default run (about 12 s on two workers) plays the corpus scenarios that cite one of the
variant's clauses and explores with a small fixed-seed profile; ``make variants`` sets
``MEMSPEC_VARIANTS_PROFILE=ci``, which plays the whole corpus and explores each variant with the
``ci`` profile.
"""

from __future__ import annotations

import http.client
import os
from collections.abc import Iterator

import pytest

from conformance.drivers.memory.driver import MemoryDriver
from conformance.embedded import catalogue
from conformance.embedded.server import start_server
from conformance.machines import run_machine
from conformance.machines.profiles import Profile, get_profile
from conformance.runner import load_corpus, run_scenario
from conformance.scenario import Scenario
from conformance.vocabulary import RunContext, Secret, TargetConfig

VARIANTS = catalogue.variants("memory")
TOKEN = "memspec-variants-token-7c1d"


def make_driver(url: str, run_id: str) -> MemoryDriver:
    return MemoryDriver(RunContext(run_id=run_id, target=TargetConfig(url, Secret(TOKEN), 10.0)))


FAST = Profile("variants-fast", max_examples=6, step_count=15, budget_s=30.0, fixed_seed=11)


def _profile() -> Profile:
    name = os.environ.get("MEMSPEC_VARIANTS_PROFILE")
    return get_profile(name) if name else FAST


def _scenarios(entry: catalogue.Entry) -> list[tuple[Scenario, str]]:
    corpus = load_corpus(["memory"])
    if os.environ.get("MEMSPEC_VARIANTS_PROFILE"):
        return corpus
    return [(s, p) for s, p in corpus if set(s.all_clauses()) & set(entry.clauses)]


@pytest.fixture(params=VARIANTS, ids=[v.name for v in VARIANTS])
def variant_url(request: pytest.FixtureRequest) -> Iterator[tuple[catalogue.Entry, str]]:
    entry: catalogue.Entry = request.param
    quirks = catalogue.Quirks(frozenset({entry.name}))
    with start_server(token=TOKEN, quirks=quirks, test_control=True) as handle:
        yield entry, handle.url


def test_there_is_a_variant_per_memory_open_point() -> None:
    assert len(VARIANTS) >= 9
    covered = {c for v in VARIANTS for c in v.clauses}
    for clause in ("MEM-STORE.9", "MEM-RECORD.5", "MEM-SCORE.5", "MEM-STORE.11", "MEM-RECORD.4",
                   "MEM-CAP.2", "MEM-WIRE.8", "MEM-STORE.5", "MEM-STORE.6",
                   "MEM-WIRE.2", "MEM-WIRE.7", "MEM-WRITE.2"):  # fmt: skip
        assert clause in covered, clause


@pytest.mark.clause(*sorted({c for v in VARIANTS for c in v.clauses}))
def test_every_memory_variant_is_judged_conformant(
    variant_url: tuple[catalogue.Entry, str],
) -> None:
    entry, url = variant_url
    driver = make_driver(url, f"memspec-var-{entry.name}"[:40])
    try:
        failures = []
        scenarios = _scenarios(entry)
        assert scenarios, f"no corpus scenario exercises {entry.clauses}"
        for scenario, path in scenarios:
            result = run_scenario(driver, scenario, path=path)
            if result.verdict != "pass":
                failures.append(f"{scenario.name}: {result.verdict}: {result.reason}")
        assert failures == [], f"{entry.name} judged not conformant:\n" + "\n".join(failures)
        machine = run_machine("memory", driver, _profile())
        assert machine.verdict == "pass", f"{entry.name}: machine {machine.reason}"
        assert machine.steps > 0
    finally:
        driver.close()


def _post_with_bom(url: str) -> int:
    """Status of a ``/list`` whose otherwise valid body starts with a UTF-8 byte-order mark."""
    host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
    body = b'\xef\xbb\xbf{"scopeKey": "org:memspec-bom-probe", "limit": 5}'
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        conn.request("POST", "/list", body=body, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.clause("MEM-WIRE.7")
def test_bom_refused_takes_the_other_answer_to_a_leading_byte_order_mark() -> None:
    """The variant is not a no-op: the unaltered store reads past the mark, the variant refuses
    it — the two answers MEM-WIRE.7 accepts, and the corpus scenario
    ``a_leading_byte_order_mark_is_refused_or_skipped_once`` must judge both conformant."""
    with start_server(token=TOKEN, test_control=True) as plain:
        assert _post_with_bom(plain.url) == 200
    quirks = catalogue.Quirks(frozenset({"bom-refused"}))
    with start_server(token=TOKEN, quirks=quirks, test_control=True) as variant:
        assert _post_with_bom(variant.url) == 400


def _write_twice(url: str, first: str, second: str) -> dict[str, object]:
    """The answer to writing ``second`` after ``first`` into a fresh scope."""
    import json

    host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    answer: dict[str, object] = {}
    for text in (first, second):
        rec = {"kind": "fact", "text": text, "sourceThreadKey": "t:1"}
        body = json.dumps({"scopeKey": "org:memspec-unicode-probe", "records": [rec]})
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("POST", "/write", body=body.encode(), headers=headers)
            answer = json.loads(conn.getresponse().read())
        finally:
            conn.close()
    return answer


@pytest.mark.clause("MEM-WRITE.2")
def test_unicode_newer_lowercase_dedups_what_an_older_unicode_keeps_apart() -> None:
    """U+A7DC is unknown to this Python (Unicode 14) and lower-cases to U+019B in Unicode
    16.0: the unaltered store keeps the two texts apart, the variant dedups them -- the two
    readings MEM-WRITE.2 accepts, and ``dedup_keys_may_follow_a_newer_unicode`` judges both."""
    import unicodedata

    if unicodedata.category("\ua7dc") != "Cn":
        pytest.skip("this Python already knows U+A7DC: the variant is the unaltered store")
    first, second = "route \ua7dc first", "route \u019b first"
    with start_server(token=TOKEN, test_control=True) as plain:
        assert _write_twice(plain.url, first, second)["inserted"] == 1
    quirks = catalogue.Quirks(frozenset({"unicode-newer-lowercase"}))
    with start_server(token=TOKEN, quirks=quirks, test_control=True) as variant:
        answer = _write_twice(variant.url, first, second)
        assert (answer["inserted"], answer["deduped"]) == (0, 1)
