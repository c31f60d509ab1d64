"""Target clients: raw requests go out byte for byte, answers are bounded, the token only ever
travels in the Authorization header, capabilities are probed or declared, and a scenario that
needs a missing capability is skipped with the reason."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.errors import TargetError
from conformance.runner import CORPUS_DIR, run_scenario
from conformance.scenario import Scenario, load_scenario
from conformance.scrub import clean
from conformance.targets.base import HttpTarget, load_target_profile, load_token
from conformance.vocabulary import Secret, TargetConfig
from tests.common.memory_harness import TOKEN, bundled_store, make_driver


class RawCapture:
    """A socket server that records the raw request bytes and answers a fixed 200."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.seen: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                self.seen.append(data)
                echo = b'{"echo": "' + TOKEN.encode() + b'"}'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: "
                    + str(len(echo)).encode()
                    + b"\r\nConnection: close\r\n\r\n"
                    + echo
                )

    def close(self) -> None:
        self.sock.close()


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.3")
def test_raw_requests_go_out_byte_for_byte_and_echoes_of_the_token_are_blanked_when_shown() -> None:
    cap = RawCapture()
    try:
        t = HttpTarget(TargetConfig(cap.url, Secret(TOKEN)))
        ex = t.raw("POST", "/write", headers=[("Content-Length", "0x10")], body=b"{}", auth="wrong")
        ex2 = t.raw("POST", "/list", headers=[], body=b"", auth=False)
        t.close()
    finally:
        cap.close()
    head = cap.seen[0].decode()
    assert head.startswith("POST /write HTTP/1.1\r\n")
    assert "\r\nContent-Length: 0x10\r\n" in head
    wrong = next(line for line in head.split("\r\n") if line.startswith("Authorization: Bearer "))
    assert len(wrong) == len("Authorization: Bearer " + TOKEN) and TOKEN not in wrong
    assert (
        "Content-Length" not in cap.seen[1].decode() and "Authorization" not in cap.seen[1].decode()
    )
    # Judged raw (the echo is kept as sent), blanked wherever it is shown.
    assert ex.status == 200 and ex.body == {"echo": TOKEN}
    assert TOKEN not in str(clean(ex.to_json())), "an echoed token is blanked when shown"
    assert ex2.status == 200


@pytest.mark.clause("MEM-WIRE.1")
def test_target_profiles_and_tokens_load_strictly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prof = tmp_path / "t.toml"
    prof.write_text('[target]\nurl = "https://m.example"\ntoken_env = "X_TOKEN"\ntimeout_s = 3\n'
                    '[capabilities]\nraw_http = false\n"memory.cap" = true\n')  # fmt: skip
    p = load_target_profile(prof)
    assert (p.url, p.token_env, p.timeout_s) == ("https://m.example", "X_TOKEN", 3.0)
    assert p.declared == {"memory.cap"} and p.denied == {"raw_http"}
    for bad in (
        '[target]\ntoken = "inline"\n',
        "[capabilities]\nraw_http = 1\n",
        "[other]\n",
        "not toml [",
    ):
        prof.write_text(bad)
        with pytest.raises(TargetError):
            load_target_profile(prof)
    monkeypatch.setenv("X_TOKEN", " abcdefgh \n")
    assert load_token("X_TOKEN").reveal() == "abcdefgh"  # type: ignore[union-attr]
    for short_or_unsendable in ("ft", "abcdefg", "abc defgh", "abcdéfgh"):
        monkeypatch.setenv("X_TOKEN", short_or_unsendable)
        with pytest.raises(TargetError, match=r"\$X_TOKEN"):
            load_token("X_TOKEN")
    monkeypatch.setenv("X_TOKEN", "")
    with pytest.raises(TargetError):
        load_token("X_TOKEN")
    with pytest.raises(TargetError):
        load_token(token_file=tmp_path / "missing")
    assert load_token() is None


@pytest.mark.clause("MEM-WIRE.5", "MEM-WIRE.6")
def test_a_scenario_needing_a_missing_capability_is_skipped_with_the_reason() -> None:
    fence = load_scenario(CORPUS_DIR / "memory" / "content_length_must_be_a_digit_string.json")
    with bundled_store() as url:
        driver = make_driver(url, denied=("raw_http",))
        try:
            assert "raw_http" not in driver.capabilities()
            result = run_scenario(driver, fence)
        finally:
            driver.close()
    assert result.verdict == "skip"
    assert result.reason == "target lacks raw_http"
    assert result.outcomes == []


@pytest.mark.clause("MEM-WIRE.3")
def test_probing_finds_the_capabilities_and_refuses_a_wrong_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with bundled_store() as url:
        driver = make_driver(url)
        assert {
            "raw_http",
            "auth",
            "memory.list",
            "memory.forget",
            "memory.cap",
        } <= driver.capabilities()
        driver.close()
        with pytest.raises(TargetError, match="was refused"):
            make_driver(url, token="not-the-token")
        monkeypatch.setenv("WRONG_TOKEN", "not-the-token")
        code = main(
            [
                "run",
                "--target",
                url,
                "--token-env",
                "WRONG_TOKEN",
                "--spec",
                "memory",
                "--quiet",
                "--report",
                str(tmp_path),
            ]
        )
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "the token in $WRONG_TOKEN was refused (401" in err and "unreachable" not in err


@pytest.mark.clause("MEM-WIRE.13", "MEM-CAP.1")
def test_caps_are_probed_with_a_valid_cap_so_accepting_cap_zero_is_no_missing_feature() -> None:
    """A store that wrongly accepts ``cap: 0`` still has caps: the probe sends a valid cap, and
    the cap scenarios run (and kill it on the bound) instead of being skipped."""
    with bundled_store(quirks=("mem-cap-0-accepted",)) as url:
        driver = make_driver(url)
        try:
            assert "memory.cap" in driver.capabilities()
            bounded = load_scenario(
                CORPUS_DIR / "memory" / "write_cap_is_bounded_and_the_answer_is_exact.json"
            )
            result = run_scenario(driver, bounded)
        finally:
            driver.close()
    assert result.verdict == "fail"
    assert any("MEM-WIRE.13" in o.clauses for o in result.outcomes if o.verdict == "diverge")


@pytest.mark.clause("MEM-CAP.2")
def test_more_equally_legal_evictions_than_the_oracle_follows_is_indeterminate_not_a_failure() -> (
    None
):
    """50 records written in one batch are equally old; a write with ``cap: 4`` then evicts 47
    of them, and which 47 is the store's choice (MEM-CAP.2): C(50, 3) = 19600 legal states,
    past what the oracle follows.  The conforming store is not judged broken: the step is
    indeterminate, its reason says why."""
    records = [
        {"kind": "fact", "text": f"crowd {i}", "sourceThreadKey": "thread:1"} for i in range(50)
    ]
    one = [{"kind": "fact", "text": "newest", "sourceThreadKey": "thread:1"}]
    scenario = Scenario.model_validate(
        {
            "format": "memspec-scenario/1",
            "protocol": "memory",
            "name": "ties-past-the-worlds",
            "clauses": ["MEM-CAP.2"],
            "steps": [
                {"op": "write", "args": {"scopeKey": "{scope:a}", "records": records}},
                {"op": "write", "args": {"scopeKey": "{scope:a}", "records": one, "cap": 4}},
            ],
        }
    )
    with bundled_store() as url:
        driver = make_driver(url)
        try:
            result = run_scenario(driver, scenario)
        finally:
            driver.close()
    assert [o.verdict for o in result.outcomes] == ["pass", "indeterminate"]
    assert result.verdict == "indeterminate"
    assert "19600 equally legal eviction choices" in result.outcomes[1].reason
    assert "MEM-CAP.2" in result.outcomes[1].clauses
